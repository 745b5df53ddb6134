package proxy

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/panjf2000/gnet/v2"
	"github.com/valyala/bytebufferpool"

	"github.com/kafka-iggy/kafka-iggy/bridge"
	"github.com/kafka-iggy/kafka-iggy/budget"
)

// connFlags is a small bitset of connection states (guarded by conn.mu).
type connFlags uint8

const (
	// flagClosed: OnClose ran; nothing may touch the gnet.Conn any more.
	flagClosed connFlags = 1 << iota
	// flagPausedInFlight: reading stopped at max_in_flight; the write
	// callback that drops below it wakes the connection.
	flagPausedInFlight
	// flagPausedOutbound: reading stopped because too many reply bytes are
	// unsent; the ticker wakes the connection.
	flagPausedOutbound
)

func (f *connFlags) set(x connFlags)       { *f |= x }
func (f *connFlags) clear(x connFlags)     { *f &^= x }
func (f connFlags) isSet(x connFlags) bool { return f&x != 0 }

// reply is one encoded response: the reply buffer (nil: the request has
// no reply) and, for a bridge.VectoredResponse, the response whose blocks
// (vr.Cuts) are spliced into it (released once written). Kept small: every
// connection has a ring of max_in_flight of them.
type reply struct {
	buf *bytebufferpool.ByteBuffer
	vr  bridge.VectoredResponse
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
		s.outPool.Put(r.buf)
	}
	if r.vr != nil {
		r.vr.Release()
	}
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

// conn is the front door's state for one client connection, stored in the
// gnet.Conn's context. Fields marked "loop" are touched only on the
// connection's event loop; the rest are guarded as noted.
type conn struct {
	s      *Server
	gc     gnet.Conn // only its concurrency-safe methods off the loop
	id     uint64
	remote string
	ctx    context.Context // cancelled when the connection closes
	cancel context.CancelFunc

	// loop
	nextSeq  uint64
	parked   *job // a request waiting for worker-queue space
	clientID *string
	// partial is a request frame being assembled (size prefix already
	// consumed), partialSize its body size: a frame larger than one socket
	// read is copied out of gnet's read buffer piece by piece as it
	// arrives, instead of gnet first copying every piece into its ring
	// buffer and the frame then being copied out of the ring (see
	// fillPartial).
	partial     *bytebufferpool.ByteBuffer
	partialSize int
	// held is the memory budget granted for the frame at the head of the
	// input (moved to its job once taken); ticket, while the connection
	// waits for it.
	held   int64
	ticket *budget.Ticket
	// inHeld is what gnet held of the input when OnTraffic last returned,
	// counted as the budget's Outside (settleInbound).
	inHeld int64
	// closing: the client closed the connection and takeLeftovers is
	// queueing the requests left in its input. Event-loop only.
	closing bool

	// guarded by s.pool.mu
	waitingPool bool

	lastActive atomic.Int64 // unix nanoseconds of the last traffic
	// outHeld is the budget charged for reply bytes gnet holds unsent
	// (written on the loop, read by OnTick).
	outHeld atomic.Int64

	mu       sync.Mutex
	why      closeInfo // first recorded close reason
	flags    connFlags
	inFlight int    // taken off the socket, reply not yet written
	nextOut  uint64 // sequence of the next reply to write
	ring     []slot // indexed by sequence % len(ring)
	// Requests of one connection run one at a time, in order, as a Kafka
	// broker serves them: running says a job of this connection is with
	// the pool, queue holds the ones read behind it (oldest first).
	running bool
	queue   []*job
}

// closeInfo is why a connection closed: the reason, and what OnClose logs
// beside it (the request at fault, an error, a size against its limit).
type closeInfo struct {
	reason       CloseReason
	hasReq       bool
	key, version int16
	corrID       int32
	err          error
	size, limit  int64
}

// reqClose describes a close caused by one request.
func reqClose(r CloseReason, key, version int16, corrID int32, err error) closeInfo {
	return closeInfo{reason: r, hasReq: true, key: key, version: version, corrID: corrID, err: err}
}

// fail records why the connection is closing unless a reason is already
// recorded (the first one wins). Safe off the loop.
func (cs *conn) fail(ci closeInfo) {
	cs.mu.Lock()
	if cs.why.reason == CloseUnknown {
		cs.why = ci
	}
	cs.mu.Unlock()
}

// closeWith records ci (unless a reason is already recorded) and asks gnet
// to close the connection. Safe off the loop.
func (cs *conn) closeWith(ci closeInfo) {
	cs.mu.Lock()
	if cs.why.reason == CloseUnknown {
		cs.why = ci
	}
	if !cs.flags.isSet(flagClosed) {
		_ = cs.gc.Close()
	}
	cs.mu.Unlock()
}

// wake makes gnet call OnTraffic again for this connection (to resume
// reading). Safe off the loop. Called under no lock of cs.
func (cs *conn) wake() {
	cs.mu.Lock()
	if !cs.flags.isSet(flagClosed) {
		_ = cs.gc.Wake(nil)
	}
	cs.mu.Unlock()
}

// isClosed reports whether OnClose ran.
func (cs *conn) isClosed() bool {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.flags.isSet(flagClosed)
}

// touch records traffic for the idle timeout.
func (cs *conn) touch(now time.Time) { cs.lastActive.Store(now.UnixNano()) }

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
	if seq != cs.nextOut {
		cs.mu.Unlock()
		return
	}
	var wb *writeBatch
	skipped, written := 0, 0
	for {
		sl := &cs.ring[cs.nextOut%uint64(len(cs.ring))]
		if !sl.ready {
			break
		}
		if sl.rep.buf == nil {
			skipped++
			sl.rep.release(s)
		} else {
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
	cs.mu.Unlock()
	if done > 0 {
		s.finish(done)
	}
}

// writeLocked hands wb to gnet and returns the number of replies released
// on the spot (gnet refused the write: the callback will not run). cs.mu
// must be held: AsyncWritev calls are queued FIFO, so issuing them in
// sequence order under the lock keeps replies in order; and OnClose cannot
// run in between, so the loop is still alive.
func (cs *conn) writeLocked(wb *writeBatch) int {
	if err := cs.gc.AsyncWritev(wb.iov, wb.cb); err != nil {
		n := wb.replies
		wb.release()
		return n
	}
	return 0
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
	*rep = reply{}
}

// release returns the buffers, the blocks and the batch to their pools.
func (wb *writeBatch) release() {
	for i, b := range wb.bufs {
		wb.s.outPool.Put(b)
		wb.bufs[i] = nil
	}
	for i, vr := range wb.vrs {
		vr.Release()
		wb.vrs[i] = nil
	}
	clear(wb.iov)
	wb.bufs, wb.vrs, wb.iov, wb.bytes, wb.replies, wb.cs = wb.bufs[:0], wb.vrs[:0], wb.iov[:0], 0, 0, nil
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
	cs.inFlight -= n
	cs.maybeResumeLocked()
	cs.mu.Unlock()
	s.finish(n)
	return nil
}

// job is one request on its way through a worker. Jobs are pooled.
type job struct {
	cs      *conn
	seq     uint64
	frame   *bytebufferpool.ByteBuffer // request frame, size prefix excluded
	held    int64                      // memory budget of the frame (and its produce copy)
	bodyOff int
	rq      bridge.Request
}
