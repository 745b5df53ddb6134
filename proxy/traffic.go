package proxy

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/panjf2000/gnet/v2"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/valyala/bytebufferpool"

	"github.com/kafka-iggy/kafka-iggy/bridge"
)

// OnTraffic takes every complete request frame off the connection and hands
// it on, until the input is exhausted or the connection must pause.
func (h *handler) OnTraffic(c gnet.Conn) gnet.Action {
	s := (*Server)(h)
	cs, ok := c.Context().(*conn)
	if !ok {
		return gnet.Close
	}
	now := time.Now()
	cs.touch(now)
	s.settleOutbound(c, cs)
	cs.resumeStream(c)
	defer s.settleInbound(c, cs)
	if cs.parked != nil {
		if !s.pool.submit(cs.parked, cs) {
			return s.paused(c, cs)
		}
		cs.parked = nil
	}
	if s.draining.Load() {
		// Take what completes once received (acks=0 produce included)
		// once; leave the rest unread: Shutdown closes us.
		s.takeForDrain(c, cs)
		return gnet.None
	}
	maxFrame := s.cfg.Limits.MaxFrameBytes
	maxOut := s.cfg.Limits.MaxOutboundBytes
	consumed := 0
	defer func() {
		if consumed > 0 {
			s.metrics.BytesIn(consumed)
		}
	}()
	for {
		if cs.mutedUntil.Load() > now.UnixNano() {
			return s.paused(c, cs) // client-quota throttle: muteFor wakes us
		}
		if maxOut > 0 && c.OutboundBuffered() > maxOut {
			cs.mu.Lock()
			cs.flags.set(flagPausedOutbound)
			cs.mu.Unlock()
			return s.paused(c, cs)
		}
		cs.mu.Lock()
		if cs.inFlight >= s.cfg.Limits.MaxInFlight {
			cs.flags.set(flagPausedInFlight)
			cs.mu.Unlock()
			return s.paused(c, cs)
		}
		cs.mu.Unlock()

		var buf *bytebufferpool.ByteBuffer
		var size int
		if cs.partial != nil {
			// Continue the frame being assembled.
			b, complete, err := fillPartial(c, cs.partial.B, cs.partialSize)
			cs.partial.B = b
			if err != nil {
				cs.fail(closeInfo{reason: CloseInternal, err: err})
				return gnet.Close
			}
			if !complete {
				return gnet.None
			}
			buf, size = cs.partial, cs.partialSize
			cs.partial, cs.partialSize = nil, 0
		} else {
			// The frame's budget comes first: nothing of it is taken off
			// gnet's buffer (or allocated) before it is granted.
			var complete bool
			var err error
			size, complete, err = pendingFrame(c, maxFrame)
			if err != nil {
				return s.refuseFrame(c, cs, err)
			}
			if size == 0 && !complete {
				return gnet.None // no size prefix yet
			}
			switch s.reserveFrame(c, cs, size) {
			case reserveWait:
				return s.paused(c, cs)
			case reserveMore:
				return gnet.None
			}
			if !complete {
				if size > 0 && c.InboundBuffered() > FrameHeaderSize {
					// The body has started to arrive: assemble it as
					// it comes (one copy per piece, out of gnet's read
					// buffer) rather than leave it to gnet's ring.
					if _, err := c.Discard(FrameHeaderSize); err != nil {
						cs.fail(closeInfo{reason: CloseInternal, err: ErrShortFrame})
						return gnet.Close
					}
					cs.partial, cs.partialSize = s.getFrame(size), size
					b, _, err := fillPartial(c, cs.partial.B[:0], size)
					cs.partial.B = b
					if err != nil {
						cs.fail(closeInfo{reason: CloseInternal, err: err})
						return gnet.Close
					}
				}
				return gnet.None
			}
			buf = s.getFrame(size)
			if cap(buf.B) < size {
				buf.B = make([]byte, size)
			} else {
				buf.B = buf.B[:size]
			}
			if err := takeFrame(c, buf.B); err != nil {
				s.putFrame(buf)
				cs.fail(closeInfo{reason: CloseInternal, err: err})
				return gnet.Close
			}
		}
		consumed += FrameHeaderSize + size
		held := cs.held
		cs.held = 0
		if a := s.accept(cs, buf, held, now); a != gnet.None {
			return a
		}
		if cs.parked != nil {
			return s.paused(c, cs)
		}
	}
}

// paused is where OnTraffic ends when it stops consuming input: gnet keeps
// reading the socket into its buffer regardless, so bound that buffer.
func (s *Server) paused(c gnet.Conn, cs *conn) gnet.Action {
	n := c.InboundBuffered()
	if cs.partial != nil {
		n += FrameHeaderSize + len(cs.partial.B) // taken off gnet's buffer already
	}
	if n > s.cfg.Limits.MaxInboundBytes {
		cs.fail(closeInfo{reason: CloseInboundOverflow, size: int64(n), limit: int64(s.cfg.Limits.MaxInboundBytes)})
		return gnet.Close
	}
	return gnet.None
}

// refuseFrame closes the connection over a bad size prefix.
func (s *Server) refuseFrame(c gnet.Conn, cs *conn, err error) gnet.Action {
	if !errors.Is(err, ErrFrameTooLarge) {
		cs.fail(closeInfo{reason: CloseInternal, err: err})
		return gnet.Close
	}
	ci := closeInfo{reason: CloseFrameTooLarge, limit: int64(s.cfg.Limits.MaxFrameBytes)}
	if hdr, perr := c.Peek(FrameHeaderSize); perr == nil {
		ci.size = int64(binary.BigEndian.Uint32(hdr))
	}
	cs.fail(ci)
	return gnet.Close
}

// accept parses the header of one request frame (owned by buf from here on)
// and queues it for a worker, or answers/refuses it on the spot.
// held is the memory budget the frame drew; the job returns it.
func (s *Server) accept(cs *conn, buf *bytebufferpool.ByteBuffer, held int64, now time.Time) gnet.Action {
	frame := buf.B
	key, version, corrID, err := parseHeaderPrefix(frame)
	if err != nil {
		s.dropFrame(buf, held)
		cs.fail(closeInfo{reason: CloseBadHeader, err: err, size: int64(len(frame)), limit: headerPrefixSize})
		return gnet.Close
	}
	minV, maxV, known := s.d.Versions(key)
	if !known || version < minV || version > maxV {
		s.dropFrame(buf, held)
		if known && key == kmsg.ApiVersions.Int16() {
			s.answerUnsupportedApiVersions(cs, corrID, version, minV, maxV, now)
			return gnet.None
		}
		var detail error = errUnknownKey
		if known {
			detail = fmt.Errorf("version outside served range v%d-v%d", minV, maxV)
		}
		cs.fail(reqClose(CloseUnsupportedAPI, key, version, corrID, detail))
		return gnet.Close
	}
	req := s.newRequest(key)
	if req == nil {
		s.dropFrame(buf, held)
		cs.fail(reqClose(CloseUnsupportedAPI, key, version, corrID, errUnknownKey))
		return gnet.Close
	}
	req.SetVersion(version)
	clientID, null, bodyOff, err := parseHeaderRest(frame, req.IsFlexible())
	if err != nil {
		s.dropFrame(buf, held)
		cs.fail(reqClose(CloseBadHeader, key, version, corrID, err))
		return gnet.Close
	}
	// Clients send the same client id on every request: keep one string.
	var cid *string
	if !null {
		if cs.clientID == nil || *cs.clientID != string(clientID) {
			v := string(clientID)
			cs.clientID = &v
		}
		cid = cs.clientID
	}

	j := s.getJob()
	j.cs, j.seq, j.frame, j.bodyOff, j.held = cs, s.admit(cs), buf, bodyOff, held
	j.rq = bridge.Request{
		ConnID: cs.id, Remote: cs.remote, ClientID: cid, CorrID: corrID,
		Key: key, Version: version, Msg: req, Received: now,
	}
	// One request per connection at a time (Kafka's ordering guarantee:
	// pipelined produces must land in the order they were sent); the next
	// one runs on the same worker when this one completes.
	cs.mu.Lock()
	if cs.running {
		cs.queue = append(cs.queue, j)
		cs.mu.Unlock()
		return gnet.None
	}
	cs.running = true
	cs.mu.Unlock()
	if cs.closing {
		// Taken from the input of a closed connection (takeLeftovers)
		// or by a drain pass (takeForDrain): OnTraffic will not run
		// again to resume a parked job.
		s.serveWhenRoom(j)
		return gnet.None
	}
	if !s.pool.submit(j, cs) {
		cs.parked = j
	}
	return gnet.None
}

// serveWhenRoom runs j (and its connection's queue behind it) on the
// worker pool once the pool's queue has room, waiting for it off the
// event loop: for connections no OnTraffic will resume (closed by the
// client, or taken by a drain pass). Once the pool is closed it runs j on
// the waiting goroutine (the handlers' context is cancelled by then).
func (s *Server) serveWhenRoom(j *job) {
	go func() {
		if !s.pool.submitWait(j) {
			s.serve(j)
		}
	}()
}

// admit gives the next request of cs its sequence number and counts it in
// flight. Event-loop only.
func (s *Server) admit(cs *conn) uint64 {
	seq := cs.nextSeq
	cs.nextSeq++
	cs.mu.Lock()
	cs.inFlight++
	cs.mu.Unlock()
	s.inFlight.Add(1)
	return seq
}

// answerUnsupportedApiVersions sends the KIP-511 reply to an ApiVersions
// request at a version we do not serve, in its turn among the replies.
func (s *Server) answerUnsupportedApiVersions(cs *conn, corrID int32, version, minV, maxV int16, now time.Time) {
	seq := s.admit(cs)
	out := s.outPool.Get()
	b := appendResponseHeader(out.B[:0], corrID, false, kmsg.ApiVersions.Int16())
	b = bridge.UnsupportedApiVersionsResponse(minV, maxV).AppendTo(b)
	finishFrame(b, 0)
	out.B = b
	s.log.Debug().Uint64("conn_id", cs.id).Int16("api_key", kmsg.ApiVersions.Int16()).Int16("api_version", version).
		Int32("corr_id", corrID).Msg("api versions: unsupported version, answering v0 with UNSUPPORTED_VERSION")
	s.metrics.Request(kmsg.ApiVersions.Int16(), version, time.Since(now), OutcomeUnsupportedVersion)
	cs.complete(seq, reply{buf: out})
}

// bigFrame is the size from which request frames have a pool of their own
// (bigPool): large produce frames then get a buffer that has held one
// before instead of growing a small one (the pools size what they hand out
// from what comes back).
const bigFrame = 64 << 10

// getFrame returns a pooled buffer for a request frame of size bytes.
func (s *Server) getFrame(size int) *bytebufferpool.ByteBuffer {
	if size >= bigFrame {
		return s.bigPool.Get()
	}
	return s.inPool.Get()
}

// putFrame returns a request frame buffer to the pool of its size.
func (s *Server) putFrame(b *bytebufferpool.ByteBuffer) {
	if cap(b.B) >= bigFrame {
		s.bigPool.Put(b)
		return
	}
	s.inPool.Put(b)
}

// dropFrame returns a frame that will not be served, and its budget.
func (s *Server) dropFrame(buf *bytebufferpool.ByteBuffer, held int64) {
	s.putFrame(buf)
	s.budget.Release(held)
}
