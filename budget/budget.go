package budget

import (
	"context"
	"sync"
	"sync/atomic"
)

// Budget is the process's one memory budget (limits.memory_bytes): request
// frames being assembled, produce batches on their way to Iggy, fetch
// buffers and unsent replies all draw from it. It is a byte-weighted
// semaphore served first come, first served, so a large request waiting
// for room is not overtaken forever by small ones; a request larger than
// the whole budget is served as one of exactly the whole budget (when
// nothing else is held), so every request makes progress once others
// release.
//
// Takers that must not block (the event loops) use Queue, whose callback
// runs when the bytes are granted; handlers use Acquire (blocking, bounded
// by their context) or TryUpTo (what is free now). Charge accounts memory
// that exists already and cannot wait (bytes gnet holds for a slow
// reader): it may take the budget past its total, which then makes the
// next takers wait.
//
// Outside is memory the budget does not grant but that exists all the
// same: request bytes gnet has read off a socket for a connection that is
// waiting for the budget (gnet cannot stop reading). Fetches, which can
// always yield, leave it all free (TryUpTo, Acquire). A frame leaves free
// what is outside besides its own bytes, but never so much that it could
// not run on an otherwise empty budget: the requests waiting in gnet must
// not starve the one at the head of the queue.
//
// A nil *Budget is unlimited: every method succeeds at once and counts
// nothing.
type Budget struct {
	total int64

	mu      sync.Mutex
	used    int64
	outside int64     // see Outside
	waiters []*Ticket // FIFO; granted ones are removed

	inUse atomic.Int64  // mirror of used for lock-free reads (metrics)
	peak  atomic.Int64  // highest used seen
	waits atomic.Uint64 // takers that had to wait
}

// Ticket is a queued request for budget bytes.
type Ticket struct {
	n       int64
	own     int64 // the taker's own bytes counted in Outside (Queue)
	granted atomic.Bool
	notify  func()        // Queue: called once granted (outside the lock)
	ch      chan struct{} // Acquire: closed once granted (leaves Outside free)
}

// roomLocked is what a taker of n bytes may take now: the free bytes less
// Outside for a fetch (yields), less Outside beyond its own bytes (and at
// most total-n) for a frame.
func (b *Budget) roomLocked(n, own int64, yields bool) int64 {
	if yields {
		return b.total - b.used - b.outside
	}
	return b.total - b.used - min(max(b.outside-own, 0), b.total-n)
}

// Granted reports whether the ticket's bytes are now held by its owner.
func (t *Ticket) Granted() bool { return t.granted.Load() }

// Bytes is what the ticket asked for (clamped to the budget's total).
func (t *Ticket) Bytes() int64 { return t.n }

// NewBudget returns a budget of total bytes (total <= 0: nil, unlimited).
func New(total int64) *Budget {
	if total <= 0 {
		return nil
	}
	return &Budget{total: total}
}

// Total is the budget's size in bytes (0 for a nil, unlimited budget).
func (b *Budget) Total() int64 {
	if b == nil {
		return 0
	}
	return b.total
}

// InUse is the bytes held now.
func (b *Budget) InUse() int64 {
	if b == nil {
		return 0
	}
	return b.inUse.Load()
}

// Peak is the most bytes held at once since the start.
func (b *Budget) Peak() int64 {
	if b == nil {
		return 0
	}
	return b.peak.Load()
}

// Waits counts the takers that found too little free and waited.
func (b *Budget) Waits() uint64 {
	if b == nil {
		return 0
	}
	return b.waits.Load()
}

// Clamp is what a request for n bytes actually takes: at most the total.
func (b *Budget) Clamp(n int64) int64 {
	if b == nil || n < 0 {
		return max(n, 0)
	}
	return min(n, b.total)
}

func (b *Budget) addLocked(n int64) {
	b.used += n
	b.inUse.Store(b.used)
	if b.used > b.peak.Load() {
		b.peak.Store(b.used)
	}
}

// fitsLocked: n more bytes fit, and nobody queued earlier is waiting.
func (b *Budget) fitsLocked(n, own int64, yields bool) bool {
	return len(b.waiters) == 0 && n <= b.roomLocked(n, own, yields)
}

// Outside moves the bytes held outside the budget's grants by delta (see
// the type's comment).
func (b *Budget) Outside(delta int64) {
	if b == nil || delta == 0 {
		return
	}
	b.mu.Lock()
	b.outside += delta
	var ready []*Ticket
	if delta < 0 {
		ready = b.grantLocked()
	}
	b.mu.Unlock()
	notifyAll(ready)
}

// TryUpTo takes as many bytes as are free, up to want, without waiting,
// and returns how many it took (0 when others are queued).
func (b *Budget) TryUpTo(want int64) int64 {
	if b == nil {
		return max(want, 0)
	}
	if want <= 0 {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.waiters) > 0 {
		return 0
	}
	n := min(want, b.roomLocked(0, 0, true))
	if n <= 0 {
		return 0
	}
	b.addLocked(n)
	return n
}

// Acquire takes n bytes (clamped to the total), waiting for them in turn
// until ctx ends; it returns the bytes taken, or 0 and ctx's error.
func (b *Budget) Acquire(ctx context.Context, n int64) (int64, error) {
	if b == nil {
		return max(n, 0), nil
	}
	n = b.Clamp(n)
	b.mu.Lock()
	if b.fitsLocked(n, 0, true) {
		b.addLocked(n)
		b.mu.Unlock()
		return n, nil
	}
	t := &Ticket{n: n, ch: make(chan struct{})}
	b.waiters = append(b.waiters, t)
	b.mu.Unlock()
	b.waits.Add(1)
	select {
	case <-t.ch:
		return n, nil
	case <-ctx.Done():
		if b.Cancel(t) {
			b.Release(n)
		}
		return 0, ctx.Err()
	}
}

// Queue takes n bytes (clamped to the total) for a taker that must not
// block. It returns nil when they were free at once; otherwise a ticket
// whose notify runs (on the goroutine that released the bytes, under no
// budget lock; it must not block) once the bytes are granted. A ticket
// given up before that must be Cancelled.
//
// own is how many of the taker's bytes are counted in Outside already (a
// frame's bytes gnet holds).
func (b *Budget) Queue(n, own int64, notify func()) *Ticket {
	if b == nil {
		return nil
	}
	n = b.Clamp(n)
	b.mu.Lock()
	own = min(max(own, 0), n)
	if b.fitsLocked(n, own, false) {
		b.addLocked(n)
		b.mu.Unlock()
		return nil
	}
	t := &Ticket{n: n, own: own, notify: notify}
	b.waiters = append(b.waiters, t)
	b.mu.Unlock()
	b.waits.Add(1)
	return t
}

// Cancel withdraws a ticket. It reports whether the ticket had been
// granted already: then its owner holds the bytes and must Release them.
func (b *Budget) Cancel(t *Ticket) (granted bool) {
	if b == nil || t == nil {
		return false
	}
	b.mu.Lock()
	if t.granted.Load() {
		b.mu.Unlock()
		return true
	}
	for i, w := range b.waiters {
		if w == t {
			b.waiters = append(b.waiters[:i], b.waiters[i+1:]...)
			break
		}
	}
	// Leaving the head of the queue may let the next ones in.
	ready := b.grantLocked()
	b.mu.Unlock()
	notifyAll(ready)
	return false
}

// Charge accounts n bytes that are held already and cannot wait; it may
// take the budget past its total.
func (b *Budget) Charge(n int64) {
	if b == nil || n <= 0 {
		return
	}
	b.mu.Lock()
	b.addLocked(n)
	b.mu.Unlock()
}

// Release returns n bytes and grants what then fits to the queued takers,
// in order.
func (b *Budget) Release(n int64) {
	if b == nil || n <= 0 {
		return
	}
	b.mu.Lock()
	b.addLocked(-n)
	ready := b.grantLocked()
	b.mu.Unlock()
	notifyAll(ready)
}

// grantLocked grants queued tickets from the head while they fit.
func (b *Budget) grantLocked() []*Ticket {
	var ready []*Ticket
	for len(b.waiters) > 0 {
		t := b.waiters[0]
		if t.n > b.roomLocked(t.n, t.own, t.ch != nil) {
			break
		}
		b.waiters[0] = nil
		b.waiters = b.waiters[1:]
		b.addLocked(t.n)
		t.granted.Store(true)
		ready = append(ready, t)
	}
	if len(b.waiters) == 0 {
		b.waiters = nil // let the backing array go
	}
	return ready
}

func notifyAll(ready []*Ticket) {
	for _, t := range ready {
		if t.ch != nil {
			close(t.ch)
		}
		if t.notify != nil {
			t.notify()
		}
	}
}
