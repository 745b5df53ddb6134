package proxy

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/panjf2000/gnet/v2"
)

// loopPingEvery is how often OnTick sends each event loop a no-op task and
// how often the loop must answer one for liveness to see it working.
const loopPingEvery = time.Second

// liveness tracks whether the front door makes progress, for the admin
// listener's /healthz. Three things are watched, all sampled by OnTick
// (gnet's ticker goroutine), which costs the hot path one atomic add per
// request taken by a worker:
//
//   - the ticker itself: OnTick stamps tickAt; an OnTick stuck (e.g. on a
//     connection's mutex) leaves it old;
//   - the worker pool: while requests wait for a worker (queued, or parked
//     by a connection for want of queue space), some worker must take one;
//     the pool is stalled when requests have waited throughout the window
//     with no request taken;
//   - the event loops: each loop that serves a connection is sent a no-op
//     task (EventLoop.Execute) every loopPingEvery once it ran the last
//     one; a loop stuck in a callback never runs it.
//
// Methods other than stalled run on the ticker goroutine (under tickMu).
type liveness struct {
	taken atomic.Uint64 // requests taken off the pool's queue by a worker

	tickAt        atomic.Int64 // unix nanos of the last OnTick
	poolSeen      uint64       // taken at the last sample (ticker only)
	poolWasMoving bool         // the last sample saw progress or nothing waiting (ticker only)
	poolMoving    atomic.Int64 // unix nanos: start of the current window without progress
	scannedAt     int64        // unix nanos of the last loop scan (ticker only)

	mu    sync.Mutex
	loops map[gnet.EventLoop]*loopPing
}

// loopPing is the outstanding no-op task of one event loop.
type loopPing struct {
	sentAt     int64        // unix nanos; 0 when none is outstanding (ticker only)
	answeredAt atomic.Int64 // set by the loop when it runs the task
	seen       int64        // unix nanos of the last OnTick that saw the loop serve a connection
}

// counting wraps a worker's run function so every request a worker takes
// is counted.
func (l *liveness) counting(run func(*job)) func(*job) {
	return func(j *job) {
		l.taken.Add(1)
		run(j)
	}
}

// observe samples progress; OnTick calls it with the open connections
// before it walks them.
func (l *liveness) observe(s *Server, conns []*conn, now int64) {
	l.tickAt.Store(now)
	taken := l.taken.Load()
	waiting := len(s.pool.jobs) + int(s.pool.nwait.Load())
	moving := taken != l.poolSeen || waiting == 0
	// The window starts at the first sample that sees requests waiting
	// with no progress (not at the last moving one, up to a tick before
	// the requests began to wait): a stall is never reported early.
	if moving || l.poolWasMoving {
		l.poolMoving.Store(now)
	}
	l.poolSeen, l.poolWasMoving = taken, moving
	if now-l.scannedAt < int64(loopPingEvery) {
		return
	}
	// Once a second: find the loops that serve connections (EventLoop is
	// an immutable field of the gnet connection, safe to read off the
	// loop even once closed) and ping each that answered its last ping.
	l.scannedAt = now
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.loops == nil {
		l.loops = make(map[gnet.EventLoop]*loopPing)
	}
	for _, cs := range conns {
		el := cs.gc.EventLoop()
		if el == nil {
			continue
		}
		p := l.loops[el]
		if p == nil {
			p = &loopPing{}
			l.loops[el] = p
		}
		p.seen = now
	}
	for el, p := range l.loops {
		if p.sentAt != 0 && p.answeredAt.Load() >= p.sentAt {
			p.sentAt = 0
		}
		if p.sentAt != 0 {
			continue // outstanding: stalled reports it once it is old
		}
		if p.seen != now {
			delete(l.loops, el) // serves no connection any more
			continue
		}
		p.sentAt = now
		if err := el.Execute(context.Background(), gnet.RunnableFunc(p.answer)); err != nil {
			p.sentAt = 0 // the engine is stopping
		}
	}
}

// answer runs on the pinged event loop.
func (p *loopPing) answer(context.Context) error {
	p.answeredAt.Store(time.Now().UnixNano())
	return nil
}

// stalled reports what has made no progress for longer than window, or ""
// when everything is moving. Safe for concurrent use.
func (l *liveness) stalled(now time.Time, window time.Duration) string {
	t := now.UnixNano()
	if at := l.tickAt.Load(); at != 0 && t-at > int64(window) {
		return fmt.Sprintf("the connection ticker has not run for %s", time.Duration(t-at).Round(time.Millisecond))
	}
	if at := l.poolMoving.Load(); at != 0 && t-at > int64(window) {
		return fmt.Sprintf("requests have waited %s for a worker and no worker took one", time.Duration(t-at).Round(time.Millisecond))
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, p := range l.loops {
		if p.sentAt != 0 && p.answeredAt.Load() < p.sentAt && t-p.sentAt > int64(window) {
			return fmt.Sprintf("an event loop has not run a task for %s", time.Duration(t-p.sentAt).Round(time.Millisecond))
		}
	}
	return ""
}

// Stalled reports what part of the front door has made no progress for
// longer than window (the event-loop ticker, the worker pool, an event
// loop), or "" when it is alive. The admin listener's /healthz fails with
// the reason. Before Start and once Shutdown began it reports "" (stopped
// loops are not a fault then). Safe for concurrent use.
func (s *Server) Stalled(window time.Duration) string {
	if !s.started.Load() || s.stopping.Load() {
		return ""
	}
	return s.live.stalled(time.Now(), window)
}
