package proxy

import (
	"sync"
	"sync/atomic"
	"time"
)

// workerPool runs handlers off the event loops. Goroutines are started on
// demand up to max and then kept until close; at most queue requests wait
// for one. submit never blocks: when the queue is full the caller parks its
// request and is woken (conn.wakeForPool) as soon as a worker takes a job
// off the queue, which is how pool overload turns into backpressure on the
// connection instead of a dropped request.
type workerPool struct {
	jobs chan *job
	run  func(*job)
	max  int32

	started atomic.Int32
	// avail is the number of workers free or about to be free, minus the
	// queued jobs none of them has claimed yet. submit claims one; when the
	// claim drives it negative a worker is started (below max) or the job
	// waits for a running worker to finish and pay the claim back.
	avail atomic.Int32

	// closeMu orders close after the sends of submitWait (held shared
	// while one waits for queue space); closed is set under it.
	closeMu sync.RWMutex
	closed  bool
	// blocked counts the submitWait calls waiting for queue space.
	blocked atomic.Int32

	mu      sync.Mutex
	waiters []*conn // connections with a parked job, oldest first
	nwait   atomic.Int32
	wg      sync.WaitGroup
}

func newWorkerPool(workers, queue int, run func(*job)) *workerPool {
	return &workerPool{
		jobs: make(chan *job, queue),
		run:  run,
		max:  int32(workers),
	}
}

// submit queues j; false means the queue is full and cs was registered to
// be woken when a slot frees (the caller keeps j parked and stops reading).
// Event-loop only (cs.waitingPool is guarded by p.mu).
func (p *workerPool) submit(j *job, cs *conn) bool {
	select {
	case p.jobs <- j:
		p.claim()
		return true
	default:
	}
	// Register first, then retry under the lock: a worker that takes a job
	// after our failed retry sees nwait > 0 and wakes us, so no wake-up is
	// lost between the two steps.
	p.mu.Lock()
	registered := false
	if !cs.waitingPool {
		cs.waitingPool = true
		p.waiters = append(p.waiters, cs)
		p.nwait.Store(int32(len(p.waiters)))
		registered = true
	}
	select {
	case p.jobs <- j:
		if registered {
			cs.waitingPool = false
			p.waiters = p.waiters[:len(p.waiters)-1]
			p.nwait.Store(int32(len(p.waiters)))
		}
		p.mu.Unlock()
		p.claim()
		return true
	default:
	}
	p.mu.Unlock()
	return false
}

// submitWait queues j, waiting for queue space: for the requests of a
// connection the client closed (takeLeftovers) or the drain took
// (takeForDrain), which no OnTraffic will resume once parked. Off the
// event loop (it blocks). It reports false once the pool is closed (the
// caller serves j itself: its context is cancelled by then).
func (p *workerPool) submitWait(j *job) bool {
	p.closeMu.RLock()
	defer p.closeMu.RUnlock()
	if p.closed {
		return false
	}
	select {
	case p.jobs <- j:
	default:
		p.blocked.Add(1)
		p.jobs <- j
		p.blocked.Add(-1)
	}
	p.claim()
	return true
}

// claim reserves a worker for a job just queued, starting one if none is
// free and the pool is below max.
func (p *workerPool) claim() {
	if p.avail.Add(-1) >= 0 {
		return
	}
	for {
		n := p.started.Load()
		if n >= p.max {
			return // all busy: a finishing worker pays the claim back
		}
		if p.started.CompareAndSwap(n, n+1) {
			break
		}
	}
	p.avail.Add(1) // the new worker is committed to this claim
	p.wg.Add(1)
	go p.worker()
}

func (p *workerPool) worker() {
	defer p.wg.Done()
	for j := range p.jobs {
		if p.nwait.Load() > 0 {
			p.wakeOne()
		}
		p.run(j)
		p.avail.Add(1)
	}
}

// wakeOne wakes the oldest connection waiting for queue space.
func (p *workerPool) wakeOne() {
	p.mu.Lock()
	if len(p.waiters) == 0 {
		p.mu.Unlock()
		return
	}
	cs := p.waiters[0]
	copy(p.waiters, p.waiters[1:])
	p.waiters[len(p.waiters)-1] = nil
	p.waiters = p.waiters[:len(p.waiters)-1]
	p.nwait.Store(int32(len(p.waiters)))
	cs.waitingPool = false
	p.mu.Unlock()
	cs.wake()
}

// close stops the workers once the queue is drained; call it only after
// the event loops have stopped (nothing submits any more).
func (p *workerPool) close() {
	p.closeMu.Lock()
	p.closed = true
	close(p.jobs)
	p.closeMu.Unlock()
}

// wait blocks until every worker has exited or done delivers.
func (p *workerPool) wait(done <-chan time.Time) bool {
	ch := make(chan struct{})
	go func() {
		p.wg.Wait()
		close(ch)
	}()
	select {
	case <-ch:
		return true
	case <-done:
		return false
	}
}
