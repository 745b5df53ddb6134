package proxy

import (
	"fmt"
	"time"

	"github.com/panjf2000/gnet/v2"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/valyala/bytebufferpool"
	"golang.org/x/sys/unix"

	"github.com/kafka-iggy/kafka-iggy/bridge"
)

// encode writes the framed response: size, header, body. The response
// matches rq (Dispatcher.Dispatch checked its key and version). A
// bridge.VectoredResponse keeps its large blocks out of the buffer; they
// are spliced in when the reply is written.
func (s *Server) encode(rq *bridge.Request, resp kmsg.Response) (reply, error) {
	vr, vectored := resp.(bridge.VectoredResponse)
	out := s.outPool.Get()
	b := appendResponseHeader(out.B[:0], rq.CorrID, rq.Msg.IsFlexible(), rq.Key)
	rep := reply{buf: out}
	if vectored {
		b = vr.AppendVectored(b, maxCuts)
		rep.vr = vr
	} else {
		b = resp.AppendTo(b)
	}
	out.B = b
	extra := 0
	for _, c := range rep.cuts() {
		extra += len(c.Data)
	}
	if !finishFrameSized(b, extra) {
		rep.release(s)
		return reply{}, fmt.Errorf("response of %d bytes exceeds the int32 frame size", len(b)+extra)
	}
	return rep, nil
}

func (s *Server) getBatch(cs *conn) *writeBatch {
	wb, _ := s.batchPool.Get().(*writeBatch)
	if wb == nil {
		wb = &writeBatch{s: s}
		wb.cb = wb.written
	}
	wb.cs = cs
	return wb
}

// reply is one encoded response: the reply buffer (nil: the request has
// no reply) and, for a bridge.VectoredResponse, the response whose blocks
// (vr.Cuts) are spliced into it (released once written). Kept small: every
// connection has a ring of max_in_flight of them.
type reply struct {
	buf  *bytebufferpool.ByteBuffer
	vr   bridge.VectoredResponse
	held int64 // memory budget of the request, returned once written
}

// cuts returns the blocks to splice into the reply buffer.
func (r *reply) cuts() []bridge.Cut {
	if r.vr == nil {
		return nil
	}
	return r.vr.Cuts()
}

// release returns the reply's memory: the buffer to the pool, the blocks
// to their response.
func (r *reply) release(s *Server) {
	if r.buf != nil {
		s.putOut(r.buf)
	}
	if r.vr != nil {
		r.vr.Release()
	}
	s.budget.Release(r.held)
	*r = reply{}
}

// iovs is how many writev pieces the reply takes.
func (r *reply) iovs() int { return 1 + 2*len(r.cuts()) }

// maxIovs bounds the pieces of one AsyncWritev (Linux refuses a writev of
// more than IOV_MAX = 1024, and gnet would close the connection).
const maxIovs = 1024

// maxCuts bounds the blocks one vectored response leaves out of its reply
// buffer (the rest is copied), so that a reply always fits one writev.
const maxCuts = 64

// slot is one entry of a connection's reorder ring.
type slot struct {
	ready bool
	rep   reply
}

// complete hands the reply of request seq (nil: no reply) to the reorder
// ring and writes every reply that is now next in order with one
// AsyncWritev. Safe off the loop; called once per request.
func (cs *conn) complete(seq uint64, rep reply) {
	s := cs.s
	cs.mu.Lock()
	if cs.flags.isSet(flagClosed) {
		cs.mu.Unlock()
		rep.release(s)
		s.finish(1)
		return
	}
	sl := &cs.ring[seq%uint64(len(cs.ring))]
	sl.ready, sl.rep = true, rep
	if seq != cs.nextOut || cs.stream != nil {
		cs.mu.Unlock()
		return
	}
	done := cs.flushLocked()
	cs.mu.Unlock()
	if done > 0 {
		s.finish(done)
	}
}

// flushLocked writes every reply that is next in order, batching them
// into AsyncWritev calls, until one is not ready or a huge one starts to
// stream (streamLocked). It returns the replies done on the spot (no
// reply, or gnet refused the write), already taken out of inFlight; the
// caller passes them to s.finish once cs.mu is released.
func (cs *conn) flushLocked() int {
	s := cs.s
	var wb *writeBatch
	skipped, written := 0, 0
	for cs.stream == nil {
		sl := &cs.ring[cs.nextOut%uint64(len(cs.ring))]
		if !sl.ready {
			break
		}
		switch {
		case sl.rep.buf == nil:
			skipped++
			sl.rep.release(s)
		case sl.rep.vr == nil && len(sl.rep.buf.B) >= streamMin:
			if wb != nil {
				written += cs.writeLocked(wb)
				wb = nil
			}
			cs.stream = &replyStream{rep: sl.rep}
			written += cs.writeChunkLocked()
		default:
			if wb != nil && len(wb.iov)+sl.rep.iovs() > maxIovs {
				written += cs.writeLocked(wb)
				wb = nil
			}
			if wb == nil {
				wb = s.getBatch(cs)
			}
			wb.add(&sl.rep)
		}
		*sl = slot{}
		cs.nextOut++
	}
	if wb != nil {
		written += cs.writeLocked(wb)
	}
	done := skipped + written
	if done > 0 {
		cs.inFlight -= done
		cs.maybeResumeLocked()
	}
	return done
}

// A reply of at least streamMin bytes (a DescribeConfigs naming the broker
// 20,000 times encodes 55 MB) is handed to gnet in chunks of streamChunk
// as the socket takes them, instead of whole: gnet copies what the socket
// does not take at once into its outbound buffer, which would hold a
// second copy of the reply. The next chunk goes when gnet holds at most
// one chunk unsent (the write callback, or OnTraffic woken by the ticker
// while output is unsent); replies behind it wait in the ring. Vectored
// replies (Fetch) are written whole: their blocks are not copied.
const (
	streamMin   = 8 << 20
	streamChunk = 2 << 20
)

// replyStream is the reply being written in chunks. Guarded by conn.mu.
type replyStream struct {
	rep     reply
	off     int  // bytes handed to gnet
	inGnet  bool // a chunk is with gnet: its callback will run
	waiting bool // the next chunk waits for gnet's outbound buffer
	// poll is the wait before the next look at gnet's outbound buffer:
	// streamPoll after progress, doubled on each look that finds it full
	// (a client that stopped reading), up to streamPollMax.
	poll  time.Duration
	armed bool // a poll is scheduled
}

// writeChunkLocked hands the stream's next chunk to gnet; it returns 1 if
// gnet refused it (the stream is then over). cs.mu must be held.
func (cs *conn) writeChunkLocked() int {
	st := cs.stream
	b := st.rep.buf.B
	end := min(st.off+streamChunk, len(b))
	chunk := b[st.off:end]
	st.off, st.inGnet, st.waiting = end, true, false
	n := len(chunk)
	if err := cs.gc.AsyncWritev([][]byte{chunk}, func(c gnet.Conn, err error) error {
		return cs.chunkWritten(c, err, n)
	}); err != nil {
		st.inGnet = false
		st.rep.release(cs.s)
		cs.stream = nil
		return 1
	}
	cs.async++
	return 0
}

// chunkWritten is a chunk's write callback, on the connection's event
// loop: the next chunk goes now or once gnet drained, and after the last
// one the replies behind the stream.
func (cs *conn) chunkWritten(c gnet.Conn, err error, n int) error {
	s := cs.s
	if c != nil && err == nil && !cs.isClosed() {
		s.settleOutbound(c, cs)
	}
	if err == nil {
		s.metrics.BytesOut(n)
		cs.touch(time.Now())
	}
	cs.mu.Lock()
	cs.async--
	st := cs.stream
	st.inGnet = false
	done := 0
	switch {
	case err != nil || c == nil || cs.flags.isSet(flagClosed):
		done = cs.endStreamLocked()
	case st.off < len(st.rep.buf.B):
		if c.OutboundBuffered() <= streamChunk {
			done = cs.writeChunkLocked()
			if done > 0 {
				cs.inFlight -= done
			}
		} else {
			st.waiting, st.poll = true, streamPoll
			cs.pollStreamLocked(st)
		}
	default:
		done = cs.endStreamLocked()
		if !cs.flags.isSet(flagClosed) {
			done += cs.flushLocked()
		}
	}
	cs.maybeResumeLocked()
	cs.mu.Unlock()
	if done > 0 {
		s.finish(done)
	}
	return nil
}

// endStreamLocked releases the finished (or abandoned) stream and counts
// its reply out of inFlight; it returns 1 for s.finish.
func (cs *conn) endStreamLocked() int {
	cs.stream.rep.release(cs.s)
	cs.stream = nil
	cs.inFlight--
	return 1
}

// streamPoll and streamPollMax bound how often a waiting stream looks at
// gnet's outbound buffer: gnet tells nothing when it drains.
const (
	streamPoll    = time.Millisecond
	streamPollMax = 100 * time.Millisecond
)

// pollStreamLocked wakes the connection after st.poll, so OnTraffic looks
// whether the stream can go on (resumeStream); one poll at a time.
// cs.mu must be held.
func (cs *conn) pollStreamLocked(st *replyStream) {
	if st.armed {
		return
	}
	st.armed = true
	time.AfterFunc(st.poll, func() {
		cs.mu.Lock()
		st.armed = false
		cs.mu.Unlock()
		_ = cs.gc.Wake(nil)
	})
}

// resumeStream writes the stream's next chunk if it waits and gnet has
// drained its outbound buffer enough, else looks again after streamPoll.
// Event-loop only (OnTraffic).
func (cs *conn) resumeStream(c gnet.Conn) {
	cs.mu.Lock()
	st := cs.stream
	if st == nil || !st.waiting || cs.flags.isSet(flagClosed) {
		cs.mu.Unlock()
		return
	}
	if c.OutboundBuffered() > streamChunk {
		if !st.armed {
			st.poll = min(2*st.poll, streamPollMax)
			cs.pollStreamLocked(st)
		}
		cs.mu.Unlock()
		return
	}
	if cs.writeChunkLocked() > 0 {
		cs.inFlight--
		cs.mu.Unlock()
		cs.s.finish(1)
		return
	}
	cs.mu.Unlock()
}

// writeLocked writes wb and returns the number of replies released on the
// spot: written whole by the caller, or refused by gnet (the callback will
// not run). cs.mu must be held: writes issued in sequence order under the
// lock keep replies in order; and OnClose cannot run in between, so the
// socket is still open (gnet closes it after OnClose).
//
// When gnet holds nothing of the connection's output (no AsyncWritev
// awaiting its callback, no unsent bytes buffered), the caller writes to
// the socket itself: one writev, where handing the batch to the event loop
// costs a wake-up of the loop, its epoll return and its writev, and a
// second thread's turn on the CPU. Whatever the socket does not take (or
// an error, which gnet then meets and closes on) goes to gnet as before.
// Only batches up to directMax: the replies a client waits on one by one
// (a produce's acknowledgement, a long poll's few records); a large Fetch
// response is the loop's, which sends what the socket takes and buffers
// the rest.
func (cs *conn) writeLocked(wb *writeBatch) int {
	if cs.async == 0 && wb.bytes <= directMax && cs.outHeld.Load() == 0 && cs.fd >= 0 {
		n, err := unix.Writev(cs.fd, wb.iov)
		if err == nil && n == wb.bytes {
			bytes, replies := wb.bytes, wb.replies
			wb.release()
			cs.s.metrics.BytesOut(bytes)
			cs.touch(time.Now())
			return replies
		}
		if err == nil && n > 0 {
			wb.iov = skipWritten(wb.iov, n)
		}
	}
	if err := cs.gc.AsyncWritev(wb.iov, wb.cb); err != nil {
		n := wb.replies
		wb.release()
		return n
	}
	cs.async++
	return 0
}

// directMax is the largest batch writeLocked writes to the socket itself:
// what a loopback or LAN socket's send buffer takes at once.
const directMax = 64 << 10

// skipWritten drops the first n bytes of iov (a short writev), in place.
func skipWritten(iov [][]byte, n int) [][]byte {
	i := 0
	for i < len(iov) && n >= len(iov[i]) {
		n -= len(iov[i])
		iov[i] = nil
		i++
	}
	if i < len(iov) {
		iov[i] = iov[i][n:]
	}
	return iov[i:]
}

// maybeResumeLocked wakes a connection paused at max_in_flight once it is
// below the cap again. cs.mu must be held.
func (cs *conn) maybeResumeLocked() {
	if cs.flags.isSet(flagPausedInFlight) && cs.inFlight < cs.s.cfg.Limits.MaxInFlight && !cs.flags.isSet(flagClosed) {
		cs.flags.clear(flagPausedInFlight)
		_ = cs.gc.Wake(nil)
	}
}

// writeBatch is one AsyncWritev: the pooled reply buffers and their bytes.
// Batches are pooled with their callback bound once, so a write allocates
// nothing.
type writeBatch struct {
	s       *Server
	cs      *conn
	bufs    []*bytebufferpool.ByteBuffer
	vrs     []bridge.VectoredResponse // owners of spliced blocks
	iov     [][]byte
	bytes   int
	replies int
	held    int64 // the replies' memory budget (reply.held)
	cb      gnet.AsyncCallback
}

// add takes over rep: its buffer, with the response's blocks spliced in.
func (wb *writeBatch) add(rep *reply) {
	b := rep.buf.B
	wb.bufs = append(wb.bufs, rep.buf)
	wb.bytes += len(b)
	at := 0
	for _, c := range rep.cuts() {
		if c.At > at {
			wb.iov = append(wb.iov, b[at:c.At])
		}
		wb.iov = append(wb.iov, c.Data)
		wb.bytes += len(c.Data)
		at = c.At
	}
	if at < len(b) {
		wb.iov = append(wb.iov, b[at:])
	}
	if rep.vr != nil {
		wb.vrs = append(wb.vrs, rep.vr)
	}
	wb.replies++
	wb.held += rep.held
	*rep = reply{}
}

// release returns the buffers, the blocks and the batch to their pools.
func (wb *writeBatch) release() {
	for i, b := range wb.bufs {
		wb.s.putOut(b)
		wb.bufs[i] = nil
	}
	for i, vr := range wb.vrs {
		vr.Release()
		wb.vrs[i] = nil
	}
	clear(wb.iov)
	wb.s.budget.Release(wb.held)
	wb.bufs, wb.vrs, wb.iov, wb.bytes, wb.replies, wb.held, wb.cs = wb.bufs[:0], wb.vrs[:0], wb.iov[:0], 0, 0, 0, nil
	wb.s.batchPool.Put(wb)
}

// written is the AsyncWritev callback. It runs on the connection's event
// loop once the bytes are on the socket or in gnet's outbound buffer (or
// the connection is gone), and must not block.
func (wb *writeBatch) written(c gnet.Conn, err error) error {
	s, cs, n, bytes := wb.s, wb.cs, wb.replies, wb.bytes
	if c != nil && err == nil && !cs.isClosed() {
		// Charge what gnet kept of the bytes before their own budget
		// goes back with the batch (after OnClose nothing is charged:
		// it released the connection's account).
		s.settleOutbound(c, cs)
	}
	wb.release()
	if err == nil {
		s.metrics.BytesOut(bytes)
		cs.touch(time.Now())
	}
	cs.mu.Lock()
	cs.async--
	cs.inFlight -= n
	cs.maybeResumeLocked()
	cs.mu.Unlock()
	s.finish(n)
	return nil
}

// maxPooledReply is the largest reply buffer kept for reuse: a pool that
// kept the buffers of a few huge answers (a DescribeConfigs naming one
// resource 20,000 times encodes 55 MB) would hold memory outside the
// budget long after their replies were written; the collector takes those.
const maxPooledReply = 4 << 20

// putOut returns an encoded reply's buffer to the pool, unless it is huge.
func (s *Server) putOut(b *bytebufferpool.ByteBuffer) {
	if cap(b.B) > maxPooledReply {
		return
	}
	s.outPool.Put(b)
}
