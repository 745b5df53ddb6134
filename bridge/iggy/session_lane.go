package iggy

import (
	"encoding/binary"
	"errors"
	"time"

	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

// runLane executes the next unit of the lane.
func (s *session) runLane() {
	lim := takeLimits{coalesce: s.c.cfg.Coalesce, bytes: s.c.cfg.MaxBatchBytes, messages: s.c.cfg.MaxBatchMessages}
	ok, depth := s.lane.take(&s.unit, lim)
	s.c.metrics.QueueDepth(s.lane.idx, depth)
	if !ok {
		return
	}
	if s.unit.op != nil {
		s.runCall(s.unit.op)
		s.unit.op = nil
	} else if len(s.unit.sends) == 1 && lim.oversized(s.unit.sends[0].msgs) {
		s.sendSplit(s.unit.sends[0], lim)
	} else {
		s.sendCoalesced()
	}
	clear(s.unit.sends)
	s.unit.sends = s.unit.sends[:0]
	if s.lane.hasWork() {
		s.lane.signal()
	}
}

// sendCoalesced sends the unit's calls as one batch and gives each caller
// its own base offset: the batch's base plus the messages before its own.
func (s *session) sendCoalesced() {
	u := &s.unit
	s.segs = append(s.segs[:0], nil)
	count, size := 0, 0
	var lo, hi uint64
	for i, cl := range u.sends {
		m := cl.msgs
		s.segs = append(s.segs, m.frames())
		if i == 0 {
			lo, hi = m.minTS, m.maxTS
		} else {
			lo, hi = min(lo, m.minTS), max(hi, m.maxTS)
		}
		count += m.Len()
		size += m.Size()
	}
	base, sent, err := s.sendBatch(s.segs, uint32(count), lo, size)
	clear(s.segs)
	s.c.metrics.Batch(count, size, len(u.sends))
	if err != nil {
		s.log.Debug().Err(err).Int("callers", len(u.sends)).Int("messages", count).Msg("iggy send failed")
	}
	for _, cl := range u.sends {
		n := cl.msgs.Len()
		if handBack(err, cl) {
			icodec.ReopenFrames(cl.msgs.frames(), lo)
		} else {
			cl.releaseRequest(s.c)
		}
		cl.complete(s.c, nil, nil, base, sent, err)
		if base >= 0 {
			base += int64(n)
		}
	}
}

// sendSplit sends one call's messages as several consecutive batches, each
// within the limits; the caller gets the first batch's base offset. A
// failure after the first batch leaves the earlier batches stored (the
// caller gets the error: at-least-once).
func (s *session) sendSplit(cl *call, lim takeLimits) {
	frames := cl.msgs.frames()
	first := int64(-1)
	expect := int64(-1)
	anySent := false
	kept := false
	var err error
	for off, chunk := 0, 0; off < len(frames); chunk++ {
		end, count := off, 0
		var lo, hi uint64
		for end < len(frames) {
			n := icodec.FrameLen(frames[end:])
			ts := icodec.OpenFrameOrigin(frames[end:])
			nlo, nhi := ts, ts
			if count > 0 {
				nlo, nhi = min(lo, ts), max(hi, ts)
				if end-off+n > lim.bytes || count+1 > lim.messages || nhi-nlo > icodec.MaxTimestampSpan {
					break
				}
			}
			lo, hi = nlo, nhi
			end += n
			count++
		}
		s.segs = append(s.segs[:0], nil, frames[off:end])
		var base int64
		var sent bool
		base, sent, err = s.sendBatch(s.segs, uint32(count), lo, end-off)
		clear(s.segs)
		anySent = anySent || sent
		s.c.metrics.Batch(count, end-off, 1)
		if err != nil {
			if chunk > 0 {
				s.log.Warn().Err(err).Int("chunk", chunk).Msg("iggy split send failed after earlier batches were stored")
			} else if kept = handBack(err, cl); kept {
				icodec.ReopenFrames(frames[off:end], lo)
			}
			break
		}
		if chunk == 0 {
			first = base
		} else if expect >= 0 && base != expect {
			s.log.Warn().Int64("expected_offset", expect).Int64("base_offset", base).Msg("iggy split send: batches not contiguous (another writer?)")
		}
		if base >= 0 {
			expect = base + int64(count)
		} else {
			expect = -1
		}
		off = end
	}
	if !kept {
		cl.releaseRequest(s.c)
	}
	if err != nil {
		cl.complete(s.c, nil, nil, -1, anySent, err)
		return
	}
	cl.complete(s.c, nil, nil, first, true, nil)
}

// handBack reports whether a send call's messages go back to its caller
// instead of the pool: a node refused them unadmitted (89 NotPrimary) and
// the caller still waits, so Send can resend them along a fresh partition
// route. Their frames are reopened first (icodec.ReopenFrames).
func handBack(err error, cl *call) bool {
	return err != nil && errors.Is(err, icodec.StatusNotPrimary) && cl.state.Load() == csPending
}

// sendBatch writes one SEND_MESSAGES whose frames are segs[1:] (count
// frames, blobLen bytes, smallest origin timestamp minTS): segs[0] becomes
// the request header, the metadata and the batch header, built in the
// session's scratch buffer; the frames go to the socket from the callers'
// buffers in the same writev. It returns the confirmed base offset (-1 when
// the server confirmed without one).
func (s *session) sendBatch(segs [][]byte, count uint32, minTS uint64, blobLen int) (int64, bool, error) {
	u := &s.unit
	binary.LittleEndian.PutUint32(s.pbuf[:], u.partition)
	req := icodec.SendMessagesRequest{
		StreamID:      u.stream,
		TopicID:       u.topic,
		Partitioning:  icodec.Partitioning{Kind: icodec.PartitioningKindPartitionID, Value: s.pbuf[:]},
		MessagesCount: count,
	}
	headLen := 4 + u.stream.EncodedSize() + u.topic.EncodedSize() + req.Partitioning.EncodedSize() + 4
	bodyLen := headLen + icodec.BatchHeaderSize + blobLen
	s.wb = append(s.wb[:0], zeroHeader[:]...)
	n := s.header(s.wb, icodec.OperationSendMessages, icodec.CodeSendMessages, bodyLen, u.fence)
	s.wb = req.AppendHeadTo(s.wb)
	at := len(s.wb)
	s.wb = append(s.wb, zeroHeader[:icodec.BatchHeaderSize]...)
	s.sealer.Seal(s.wb[at:], segs[1:], count, minTS)
	segs[0] = s.wb

	rb, rep, sent, err := s.exchange(time.Now().Add(s.c.cfg.RequestTimeout), segs, n, "message.send")
	if err != nil {
		return -1, sent, err
	}
	defer s.c.replyPool.Put(rb)
	var resp icodec.SendMessagesResponse
	used, err := resp.DecodeFrom(rep.Payload)
	if err == nil && used != len(rep.Payload) {
		err = errors.New("iggy: send confirmation has trailing bytes")
	}
	if err != nil {
		return -1, true, errors.Join(ErrProtocol, err)
	}
	if len(resp.Confirmations) == 0 {
		return -1, true, nil
	}
	conf := resp.Confirmations[0]
	if conf.PartitionID != u.partition {
		s.log.Warn().Uint32("partition_id", u.partition).Uint32("confirmed_partition_id", conf.PartitionID).Msg("iggy send confirmed for another partition")
	}
	return int64(conf.BaseOffset), true, nil
}
