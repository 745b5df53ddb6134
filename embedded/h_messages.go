package embedded

import (
	"encoding/binary"
	"errors"
	"math"
	"strings"

	"github.com/kafka-iggy/kafka-iggy/codec/iggy"
	"github.com/kafka-iggy/kafka-iggy/codec/wire"
	"github.com/kafka-iggy/kafka-iggy/embedded/plog"
)

// pollChunk is how many messages one plog read asks for; polls are read in
// chunks so that a reply is bounded by bytes, not only by count.
const pollChunk = 1024

// sendMessages serves SEND_MESSAGES (§3.6, §4.5). The partition is resolved
// before the batch is checked; a malformed batch is dropped without a reply
// (Config.ReplyToMalformed: status 3, 4027 or 4039).
func (s *Server) sendMessages(c *conn, r *request) outcome {
	var req iggy.SendMessagesRequest
	err := decodeBody(&req, r.body)
	if err != nil && !decodeField(err, "batch") {
		return s.malformed(iggy.StatusInvalidCommand, "malformed send metadata: "+err.Error())
	}
	// The decoder fills fields in order, so when only the batch failed the
	// metadata fields are set and the target can be resolved first.
	s.mu.Lock()
	t, status := s.resolveTopic(&req.StreamID, &req.TopicID)
	var p *partition
	if status == 0 {
		p = s.routePartition(t, &req.Partitioning)
	}
	if p == nil {
		s.mu.Unlock()
		return statusOf(iggy.StatusResourceNotFound)
	}
	if !s.accessOf(r.sess).sendMessages(t.stream.id, t.id) {
		s.mu.Unlock()
		return statusOf(iggy.StatusUnauthorized)
	}
	if s.notPrimary(t, p.id) {
		s.mu.Unlock()
		return statusOf(iggy.StatusNotPrimary)
	}
	streamID, topicID := t.stream.id, t.id
	s.mu.Unlock()
	if err != nil {
		return s.malformed(batchStatus(err), "malformed batch: "+err.Error())
	}
	base, err := s.appendBatch(c, r, p, req.Batch)
	if err != nil {
		if errors.Is(err, plog.ErrClosed) { // deleted meanwhile
			return statusOf(iggy.StatusResourceNotFound)
		}
		s.log.Error().Err(err).Uint32("partition_id", p.id).Msg("append failed")
		return statusOf(iggy.StatusCannotAppendMessage)
	}
	s.wrBytes.Add(uint64(len(req.Batch)))
	return c.okBody(&iggy.SendMessagesResponse{Confirmations: []iggy.SendConfirmation{{
		StreamID: streamID, TopicID: topicID, PartitionID: p.id, BaseOffset: base,
	}}})
}

// appendBatch appends a checked batch to p's log. The batch is the tail of
// the frame being served: when that frame's buffer holds nothing more (an
// exact-size read buffer, see conn.readLoop), the log stamps it in place and
// a memory-only log keeps it, sparing a copy of the batch; c.took then
// tells the connection not to reuse the buffer. Otherwise the log copies.
func (s *Server) appendBatch(c *conn, r *request, p *partition, batch []byte) (uint64, error) {
	// The batch ends the body (it is decoded as the rest of it), so a body
	// filling its buffer means the batch does too.
	if cap(r.body) != len(r.body) || len(batch) == 0 || &batch[len(batch)-1] != &r.body[len(r.body)-1] {
		return p.log.Append(batch)
	}
	base, owned, err := p.log.AppendOwned(batch)
	c.took = owned
	return base, err
}

// batchStatus maps a batch check failure to the code a debugging reply
// carries: 4027 for a message checksum, 4039 for the batch checksum, else 3.
func batchStatus(err error) iggy.Status {
	var outer *wire.DecodeError
	if !errors.As(err, &outer) {
		return iggy.StatusInvalidCommand
	}
	var inner *wire.DecodeError
	if errors.As(outer.Err, &inner) && errors.Is(inner.Err, wire.ErrChecksum) {
		if inner.Field == "batch_checksum" {
			return iggy.StatusInvalidBatchChecksum
		}
		if strings.HasSuffix(inner.Field, ".checksum") {
			return iggy.StatusInvalidMessageChecksum
		}
	}
	return iggy.StatusInvalidCommand
}

// routePartition resolves SEND_MESSAGES partitioning (§2.5). Caller holds
// Server.mu.
func (s *Server) routePartition(t *topic, pt *iggy.Partitioning) *partition {
	n := len(t.partitions)
	if n == 0 {
		return nil
	}
	switch pt.Kind {
	case iggy.PartitioningKindBalanced:
		i := t.balanced % uint32(n)
		t.balanced++
		return t.partitions[i]
	case iggy.PartitioningKindPartitionID:
		if len(pt.Value) != 4 {
			return nil
		}
		return t.partitionByID(binary.LittleEndian.Uint32(pt.Value))
	case iggy.PartitioningKindMessagesKey:
		return t.partitions[iggy.XXH32(pt.Value, 0)%uint32(n)]
	}
	return nil
}

// pollTarget is a resolved POLL_MESSAGES request.
type pollTarget struct {
	p      *partition
	key    offsetKey
	fsync  bool
	group  *group
	member *member
}

// emptyPoll is a status-0 PolledMessages without records.
func (c *conn) emptyPoll(partitionID uint32, current uint64) outcome {
	return c.okBody(&iggy.PollMessagesResponse{PartitionID: partitionID, CurrentOffset: current})
}

// pollMessages serves POLL_MESSAGES (§3.7, §7.3).
func (s *Server) pollMessages(c *conn, r *request) outcome {
	var req iggy.PollMessagesRequest
	if err := decodeBody(&req, r.body); err != nil {
		return c.emptyPoll(0, 0) // undecodable body: empty poll, partition 0
	}
	return s.poll(c, r, &req, 0)
}

// pollMessagesDeferred serves POLL_MESSAGES_DEFERRED (0.12) as a poll that
// answers at once (the hold of wait_us is not served: see
// docs/iggy-protocol-0.12.md), within max_bytes of reply.
func (s *Server) pollMessagesDeferred(c *conn, r *request) outcome {
	var d iggy.PollMessagesDeferredRequest
	if err := decodeBody(&d, r.body); err != nil || d.MinCount > d.Count ||
		d.WaitUs > 0 && d.RequestTimeoutUs < d.WaitUs+1_000_000 {
		return statusOf(iggy.StatusInvalidCommand)
	}
	req := iggy.PollMessagesRequest{Consumer: d.Consumer, StreamID: d.StreamID, TopicID: d.TopicID, PartitionID: d.PartitionID,
		Strategy: d.Strategy, Count: d.Count, AutoCommit: d.AutoCommit}
	return s.poll(c, r, &req, int(d.MaxBytes))
}

// poll serves a decoded poll; maxBytes > 0 caps the reply body.
func (s *Server) poll(c *conn, r *request, req *iggy.PollMessagesRequest, maxBytes int) outcome {
	switch req.Consumer.Kind {
	case iggy.ConsumerKindExternalGroup:
		if !s.cfg.ExternalGroups {
			return c.emptyPoll(0, 0) // a 0.11 server cannot decode kind 3
		}
		return statusOf(iggy.StatusInvalidCommand) // external groups cannot poll
	case iggy.ConsumerKindConsumerGroup:
		if !req.PartitionID.Present {
			return c.emptyPoll(0, 0)
		}
	}
	tg, out, ok := s.resolvePoll(r, req)
	if !ok {
		return out
	}
	// One snapshot for the whole reply, as the real server's build_poll_plan
	// loads the commit offset once: the messages are read below its
	// NextOffset and the reply reports its CurrentOffset, so an append
	// landing meanwhile can neither be half seen nor make "no messages"
	// look like an offset below retention.
	st := tg.p.stateOf()
	var start uint64
	fromTimestamp := false
	switch req.Strategy.Kind {
	case iggy.PollingKindOffset:
		start = req.Strategy.Value
	case iggy.PollingKindTimestamp:
		fromTimestamp = true
	case iggy.PollingKindFirst:
		start = st.FirstOffset
	case iggy.PollingKindLast:
		start = st.CurrentOffset - min(st.CurrentOffset, uint64(max(req.Count, 1))-1)
	case iggy.PollingKindNext:
		tg.p.omu.Lock()
		stored, ok := tg.p.offsets[tg.key]
		tg.p.omu.Unlock()
		if ok {
			if stored == math.MaxUint64 {
				return c.emptyPoll(tg.p.id, st.CurrentOffset)
			}
			start = stored + 1
		}
	default:
		return c.emptyPoll(0, 0)
	}
	body := s.proto.Outgoing(&iggy.PollMessagesResponse{}).AppendTo(c.out[:0]) // 16-byte prefix (40 at 0.12), patched below
	maxRecords := int(s.cfg.MaxFrameBytes) - iggy.HeaderSize - len(body)
	if maxBytes > 0 {
		maxRecords = min(maxRecords, max(maxBytes-len(body), 1))
	}
	body, n, last := pollInto(body, tg.p.log, st.NextOffset(), fromTimestamp, req.Strategy.Value, start, req.Count, maxRecords)
	c.out = body
	resp := iggy.PollMessagesResponse{PartitionID: tg.p.id, CurrentOffset: st.CurrentOffset, Count: n}
	s.proto.Outgoing(&resp).AppendTo(body[:0]) // rewrite the prefix in place
	s.readBytes.Add(uint64(len(body)))
	if n > 0 {
		if tg.member != nil {
			s.mu.Lock()
			tg.member.notePolled(tg.p.id, last)
			s.mu.Unlock()
		}
		if req.AutoCommit {
			if err := s.storeOffset(tg.p, tg.key, last, tg.fsync); err != nil {
				s.log.Error().Err(err).Msg("cannot persist a consumer offset")
			}
			if tg.group != nil {
				s.settleGroup(tg.group)
			}
		}
	}
	return outcome{body: body}
}

// resolvePoll applies the POLL_MESSAGES admission rules: a single consumer
// gets 1009/2010/3007 for an unknown target; a group poll on a partition
// the caller does not own (or an unknown group, stream or topic) gets the
// 0xFFFFFFFF re-sync sentinel; 41 without poll permission.
func (s *Server) resolvePoll(r *request, req *iggy.PollMessagesRequest) (pollTarget, outcome, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var tg pollTarget
	pid := uint32(0)
	if req.PartitionID.Present {
		pid = req.PartitionID.PartitionID
	}
	resync := outcome{body: s.proto.Outgoing(&iggy.PollMessagesResponse{PartitionID: iggy.LimitPollResyncPartitionID}).AppendTo(nil)}
	t, status := s.resolveTopic(&req.StreamID, &req.TopicID)
	if req.Consumer.Kind == iggy.ConsumerKindConsumerGroup {
		if status != 0 {
			return tg, resync, false
		}
		g := groupByID(t, &req.Consumer.ID)
		if g == nil {
			return tg, resync, false
		}
		m := g.memberByClient(r.h.Client)
		if m == nil || !m.owns(pid) {
			return tg, resync, false
		}
		tg.group, tg.member = g, m
		tg.key = offsetKey{Kind: iggy.ConsumerKindConsumerGroup, ID: g.id}
	} else {
		if status != 0 {
			return tg, statusOf(status), false
		}
		tg.key = offsetKeyOf(&req.Consumer)
	}
	tg.p = t.partitionByID(pid)
	if tg.p == nil {
		return tg, statusOf(iggy.StatusPartitionNotFound), false
	}
	if !s.accessOf(r.sess).pollMessages(t.stream.id, t.id) {
		return tg, statusOf(iggy.StatusUnauthorized), false
	}
	if s.notPrimary(t, tg.p.id) {
		return tg, statusOf(iggy.StatusNotPrimary), false
	}
	tg.fsync = t.cfg.offsetsFsync
	return tg, outcome{}, true
}

// pollInto appends to dst up to count messages from l, starting at offset
// start (or at the first batch appended at or after ts) and below before,
// as stored batch records, keeping the records within maxBytes. It returns the number of
// messages appended and the offset of the last one.
func pollInto(dst []byte, l *plog.Log, before uint64, fromTimestamp bool, ts, start uint64, count uint32, maxBytes int) ([]byte, uint32, uint64) {
	base := len(dst)
	var total uint32
	var last uint64
	for total < count {
		want := min(count-total, pollChunk)
		mark := len(dst)
		var got uint32
		if fromTimestamp && total == 0 {
			dst, got = l.PollTimestampBefore(dst, ts, want, before)
		} else {
			dst, got = l.PollBefore(dst, start, want, before)
		}
		if got == 0 {
			break
		}
		// Keep whole records while they fit; cut the first one that does
		// not (frames are sliced only when not even one record fits).
		kept := mark
		var keptMsgs uint32
		var keptLast uint64
		for off := mark; off < len(dst); {
			rec := dst[off:]
			length := recordLen(rec)
			if length == 0 { // never from plog; stop rather than misread
				return dst[:kept], total + keptMsgs, keepLast(keptMsgs, keptLast, last)
			}
			recCount := iggy.BatchMessageCount(rec)
			recLast := lastOffsetOf(rec[:length])
			if off+length-base > maxBytes {
				if kept == base { // nothing at all fits: slice this record
					whole := append([]byte(nil), rec[:length]...) // the slice is rebuilt where rec lies
					dst, keptMsgs, keptLast = sliceToFit(dst[:off], whole, maxBytes-(off-base))
					return dst, keptMsgs, keptLast
				}
				return dst[:kept], total + keptMsgs, keepLast(keptMsgs, keptLast, last)
			}
			kept = off + length
			keptMsgs += recCount
			keptLast = recLast
			off += length
		}
		total += got
		last = keptLast
		start = last + 1
	}
	return dst, total, last
}

// recordLen returns the batch_length of the stored record at the start of
// rec, or 0 when rec does not hold a whole record.
func recordLen(rec []byte) int {
	if len(rec) < iggy.BatchHeaderSize {
		return 0
	}
	n := binary.LittleEndian.Uint64(rec[iggy.BatchHeaderBatchLengthOffset:])
	if n < iggy.BatchHeaderSize || n > uint64(len(rec)) {
		return 0
	}
	return int(n)
}

func keepLast(n uint32, chunkLast, prev uint64) uint64 {
	if n > 0 {
		return chunkLast
	}
	return prev
}

// lastOffsetOf returns the offset of the last message of a stored record.
func lastOffsetOf(rec []byte) uint64 {
	var last uint64
	it := iggy.NewMessageIter(rec)
	for it.Next() {
		last = it.Message().Offset
	}
	return last
}

// sliceToFit appends to dst the leading frames of rec that fit in maxBytes
// (at least one frame is never guaranteed: an oversized single message is
// skipped).
func sliceToFit(dst, rec []byte, maxBytes int) ([]byte, uint32, uint64) {
	size := iggy.BatchHeaderSize
	var k uint32
	var last uint64
	it := iggy.NewMessageIter(rec)
	for it.Next() {
		if size+len(it.Frame()) > maxBytes {
			break
		}
		size += len(it.Frame())
		last = it.Message().Offset
		k++
	}
	if k == 0 {
		return dst, 0, 0
	}
	return iggy.AppendBatchSlice(dst, rec, 0, k), k, last
}
