package iggy

import (
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/valyala/bytebufferpool"

	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
	"github.com/kafka-iggy/kafka-iggy/codec/wire"
)

// transientPause is how long a session waits before resending a request
// answered with 57/58 (§1.6 step 7).
const transientPause = 50 * time.Millisecond

// advances reports whether a request with operation op consumes a request
// number (§1.8.3): metadata operations, DeleteSegments and Logout.
func advances(op icodec.Operation) bool {
	switch op.Plane() {
	case icodec.PlaneMetadata, icodec.PlaneSpecial:
		return true
	}
	return op == icodec.OperationLogout
}

// header writes the request header for the next request into the first
// 256 bytes of dst (whose body follows, bodyLen bytes) and returns the
// request number used, advancing the counter when the operation does.
// fence is the partition route's context (0.12; zero: none).
func (s *session) header(dst []byte, op icodec.Operation, code uint32, bodyLen int, fence icodec.PartitionContext) uint64 {
	h := icodec.RequestHeader{Client: s.clientID, Request: s.reqNo, Operation: op, Session: s.epoch,
		PartitionIncarnation: fence.Incarnation, OwnerGeneration: fence.OwnerGeneration, MinimumMetadataOp: fence.MetadataOp}
	if op == icodec.OperationNonReplicated {
		h.Code = code
	}
	h.AppendTo(dst[:0], bodyLen)
	n := s.reqNo
	if advances(op) {
		s.reqNo++
	}
	return n
}

// ping sends the keep-alive PING and waits at most wait (and the request
// timeout) for its answer.
func (s *session) ping(wait time.Duration) {
	s.wb = append(s.wb[:0], zeroHeader[:]...)
	n := s.header(s.wb, icodec.OperationNonReplicated, icodec.CodePing, 0, icodec.PartitionContext{})
	rb, _, _, err := s.exchange(time.Now().Add(min(wait, s.c.cfg.RequestTimeout)), [][]byte{s.wb}, n, "system.ping")
	if rb != nil {
		s.c.replyPool.Put(rb)
	}
	if err != nil && s.broken == nil {
		s.log.Debug().Err(err).Msg("iggy keep-alive ping failed")
	}
}

// runCall executes one encoded request and answers its caller.
func (s *session) runCall(cl *call) {
	b := cl.frame.B
	n := s.header(b, cl.operation, cl.code, len(b)-icodec.HeaderSize, cl.fence)
	rb, rep, sent, err := s.exchange(time.Now().Add(s.c.cfg.RequestTimeout), [][]byte{b}, n, cl.op)
	cl.releaseRequest(s.c)
	cl.complete(s.c, rb, rep.Payload, -1, sent, err)
}

// exchange writes one request (segs, written with one writev) and reads
// its reply within deadline, resending the identical frame on the
// transient codes 57/58 while time remains. It returns the reply buffer
// (which the caller puts back) and the decoded reply; sent reports whether
// any byte was written. Errors that leave the connection unusable or out of
// step (I/O errors, timeouts, evictions, a wrong request echo, a malformed
// frame, 40 Unauthenticated, an empty send reply) break the session.
func (s *session) exchange(deadline time.Time, segs [][]byte, reqNo uint64, op string) (*bytebufferpool.ByteBuffer, icodec.Reply, bool, error) {
	if s.broken != nil {
		return nil, icodec.Reply{}, false, s.broken
	}
	if err := s.conn.SetDeadline(deadline); err != nil {
		return nil, icodec.Reply{}, false, s.fail(s.ioError(err))
	}
	s.c.metrics.InFlight(int(s.c.inFlight.Add(1)))
	start := time.Now()
	rb, rep, sent, err := s.exchangeLoop(deadline, segs, reqNo)
	s.c.metrics.Request(op, time.Since(start), err)
	s.c.metrics.InFlight(int(s.c.inFlight.Add(-1)))
	if err != nil && s.broken == nil && (IsNotFound(err) || IsUnauthorized(err)) {
		s.log.Debug().Str("op", op).Uint32("iggy_code", statusCode(err)).Msg("iggy request refused")
	}
	return rb, rep, sent, err
}

func (s *session) exchangeLoop(deadline time.Time, segs [][]byte, reqNo uint64) (*bytebufferpool.ByteBuffer, icodec.Reply, bool, error) {
	var rep icodec.Reply
	sent := false
	for {
		n, err := s.write(segs)
		sent = sent || n > 0
		if err != nil {
			return nil, rep, sent, s.fail(s.ioError(err))
		}
		rb := s.c.replyPool.Get()
		s.c.replyPool.sizeFor(rb, s.br)
		frame, err := icodec.ReadFrame(s.br, rb.B, icodec.MaxFrameSize)
		if err != nil {
			s.c.replyPool.Put(rb)
			var de *wire.DecodeError
			if errors.As(err, &de) {
				return nil, rep, sent, s.fail(errors.Join(ErrProtocol, err))
			}
			return nil, rep, sent, s.fail(s.ioError(err))
		}
		rb.B = frame
		rep, err = icodec.DecodeReply(frame)
		var ev *icodec.EvictionError
		var de *wire.DecodeError
		switch {
		case errors.As(err, &ev):
			s.c.replyPool.Put(rb)
			lv := s.log.Warn()
			if s.negotiating(ev) {
				lv = s.log.Debug() // connect picks the generation and says so at info
			}
			lv.Uint8("reason", uint8(ev.Header.Reason)).Uint32("iggy_code", uint32(ev.Status())).Msg("iggy session evicted")
			return nil, rep, sent, s.fail(errors.Join(ErrSessionLost, err))
		case errors.As(err, &de):
			s.c.replyPool.Put(rb)
			return nil, rep, sent, s.fail(errors.Join(ErrProtocol, err))
		case rep.Header.Request != reqNo:
			s.c.replyPool.Put(rb)
			return nil, rep, sent, s.fail(fmt.Errorf("%w: reply to request %d while %d is in flight", ErrProtocol, rep.Header.Request, reqNo))
		case errors.Is(err, icodec.StatusTransientNotCommitted) || errors.Is(err, icodec.StatusTransientNotAccepted):
			s.c.replyPool.Put(rb)
			if time.Until(deadline) > 2*transientPause && s.c.sleep(transientPause) {
				continue
			}
			return nil, rep, sent, err
		case errors.Is(err, icodec.ErrEmptySendReply) || errors.Is(err, icodec.StatusUnauthenticated):
			s.c.replyPool.Put(rb)
			return nil, rep, sent, s.fail(errors.Join(ErrSessionLost, err))
		}
		if err != nil {
			s.c.replyPool.Put(rb)
			return nil, rep, sent, err
		}
		return rb, rep, sent, nil
	}
}

// statusCode extracts the Iggy code of err, or 0.
func statusCode(err error) uint32 {
	var st icodec.Status
	if errors.As(err, &st) {
		return uint32(st)
	}
	return 0
}

// write sends segs with one writev (one Write for a single piece).
func (s *session) write(segs [][]byte) (int64, error) {
	if len(segs) == 1 {
		n, err := s.conn.Write(segs[0])
		return int64(n), err
	}
	s.wsegs = append(s.wsegs[:0], segs...)
	bufs := net.Buffers(s.wsegs)
	n, err := bufs.WriteTo(s.conn)
	clear(s.wsegs)
	return n, err
}

// ioError classifies a connection error.
func (s *session) ioError(err error) error {
	if s.c.isClosed() {
		return ErrClosed
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return errors.Join(ErrTimeout, ErrSessionLost, err)
	}
	return errors.Join(ErrSessionLost, err)
}
