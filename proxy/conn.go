package proxy

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/panjf2000/gnet/v2"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/valyala/bytebufferpool"

	"github.com/kafka-iggy/kafka-iggy/auth"
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
	sasl   *auth.Session // nil: the listener does not authenticate

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
	// drainState is the connection's drain pass (drainNone, drainWoken,
	// drainPassed; drain.go).
	drainState atomic.Int32

	// guarded by s.pool.mu
	waitingPool bool

	lastActive atomic.Int64 // unix nanoseconds of the last traffic
	mutedUntil atomic.Int64 // unix nanoseconds: a client-quota throttle (muteFor)
	// software is the client software name and version of the
	// connection's last ApiVersions (v3+), for bridge.Request.Software.
	software atomic.Pointer[[2]string]
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
	// stream is a huge reply being written in chunks (reply.go); the
	// replies behind it wait in ring.
	stream *replyStream
	// async counts the AsyncWritev calls whose callback has not run: while
	// any is with gnet, replies go through gnet too (writeLocked).
	async int
	// fd is the connection's socket (-1: unknown), written directly by
	// writeLocked; set at OnOpen, never changed.
	fd int
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

// muteFor stops reading the connection for the throttle time a response
// carries (client quotas, bridge/quotas), as Kafka mutes a throttled
// client's channel; a timer wakes it when the throttle ends.
func (cs *conn) muteFor(resp kmsg.Response) {
	t, ok := resp.(interface{ Throttle() (int32, bool) })
	if !ok {
		return
	}
	if ms, _ := t.Throttle(); ms > 0 {
		d := time.Duration(ms) * time.Millisecond
		until := time.Now().Add(d).UnixNano()
		for old := cs.mutedUntil.Load(); old < until && !cs.mutedUntil.CompareAndSwap(old, until); old = cs.mutedUntil.Load() {
		}
		time.AfterFunc(d, cs.wake)
	}
}

// isClosed reports whether OnClose ran.
func (cs *conn) isClosed() bool {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.flags.isSet(flagClosed)
}

// touch records traffic for the idle timeout.
func (cs *conn) touch(now time.Time) { cs.lastActive.Store(now.UnixNano()) }
