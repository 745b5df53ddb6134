package wire

import (
	"slices"
	"sync"
	"time"
)

// Keep is a bounded free list of large byte buffers (Fetch responses, Iggy
// poll replies) that, unlike a sync.Pool, survives garbage collections.
//
// Why: a sync.Pool is emptied by every second collection. A consumer's
// Fetch allocates a few MiB of record buffer and of Iggy reply; when the
// heap is small the collector runs every few Fetches, the pools come back
// empty, every Fetch allocates (and zeroes) fresh buffers, which makes the
// collector run more often still. The bench measured the two states of the
// same build at 0.6-0.8 and 1.7-2.5 core-s per GB fetched. A Keep holds
// the buffers of the last few requests across collections, so the
// steady state allocates nothing whatever the heap's size.
//
// Bounds: at most Limit bytes (a share of the memory budget, set by
// SetKeepBudget; the process's GOMEMLIMIT leaves room for it) in at most
// keepEntries buffers, each at least KeepMin; a buffer that no request took
// for keepIdle is dropped, and DropKept empties every Keep (after a burst,
// before the heap goes back to the OS). Kept buffers hold no data a reader
// can see: Get returns them empty.
type Keep struct {
	share int64 // Limit = the memory budget / share ...
	most  int   // ... at most this

	mu    sync.Mutex
	taken uint64 // buffers Get returned
	limit int
	bytes int
	bufs  []keptBuf // oldest first
	timer *time.Timer
}

type keptBuf struct {
	b  []byte
	at time.Time
}

const (
	// KeepMin is the smallest buffer a Keep takes: smaller ones are cheap
	// to allocate and belong in a sync.Pool.
	KeepMin = 64 << 10
	// keepEntries bounds the buffers one Keep holds.
	keepEntries = 32
	// keepIdle is how long a buffer no request took stays kept.
	keepIdle = 5 * time.Second
)

var (
	keepsMu sync.Mutex
	keeps   []*Keep
)

// NewKeep returns a Keep whose limit is the memory budget divided by share,
// at most most bytes (most until SetKeepBudget is called).
func NewKeep(share int64, most int) *Keep {
	k := &Keep{share: max(share, 1), most: most, limit: most}
	keepsMu.Lock()
	keeps = append(keeps, k)
	keepsMu.Unlock()
	return k
}

// SetKeepBudget sizes every Keep from the process's memory budget (bytes).
func SetKeepBudget(total int64) {
	keepsMu.Lock()
	defer keepsMu.Unlock()
	for _, k := range keeps {
		k.mu.Lock()
		k.limit = int(min(max(total/k.share, 0), int64(k.most)))
		k.shrinkLocked(0)
		k.mu.Unlock()
	}
}

// DropKept empties every Keep.
func DropKept() {
	keepsMu.Lock()
	defer keepsMu.Unlock()
	for _, k := range keeps {
		k.mu.Lock()
		k.dropLocked(len(k.bufs))
		k.mu.Unlock()
	}
}

// Limit is the most bytes k holds.
func (k *Keep) Limit() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.limit
}

// Held is the bytes k holds now.
func (k *Keep) Held() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.bytes
}

// Taken counts the buffers Get returned.
func (k *Keep) Taken() uint64 {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.taken
}

// Get takes the smallest kept buffer of at least need bytes of capacity,
// empty; nil when none is.
func (k *Keep) Get(need int) []byte {
	k.mu.Lock()
	defer k.mu.Unlock()
	best := -1
	for i, kb := range k.bufs {
		if cap(kb.b) >= need && (best < 0 || cap(kb.b) < cap(k.bufs[best].b)) {
			best = i
		}
	}
	if best < 0 {
		return nil
	}
	b := k.bufs[best].b
	k.taken++
	k.bytes -= cap(b)
	k.bufs = slices.Delete(k.bufs, best, best+1)
	return b[:0]
}

// Put offers b, which the caller no longer uses, to k; false means k did
// not take it (below KeepMin, above the limit). To make room, the buffers
// kept longest are dropped.
func (k *Keep) Put(b []byte) bool {
	c := cap(b)
	if c < KeepMin {
		return false
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if c > k.limit {
		return false
	}
	k.shrinkLocked(c)
	k.bufs = append(k.bufs, keptBuf{b: b[:0], at: time.Now()})
	k.bytes += c
	if k.timer == nil {
		k.timer = time.AfterFunc(keepIdle, k.trim)
	}
	return true
}

// Grow returns dst with room for n more bytes, like slices.Grow, taking the
// new buffer from k when one fits (dst's bytes copied into it).
func (k *Keep) Grow(dst []byte, n int) []byte {
	if n <= cap(dst)-len(dst) {
		return dst
	}
	need := len(dst) + n
	if need >= KeepMin {
		if b := k.Get(need); b != nil {
			return append(b, dst...)
		}
	}
	return slices.Grow(dst, n)
}

// shrinkLocked drops the oldest buffers until room more bytes fit within
// the limit and the entry bound.
func (k *Keep) shrinkLocked(room int) {
	n := 0
	bytes, entries := k.bytes, len(k.bufs)
	for n < len(k.bufs) && (bytes+room > k.limit || entries+min(room, 1) > keepEntries) {
		bytes -= cap(k.bufs[n].b)
		entries--
		n++
	}
	k.dropLocked(n)
}

// dropLocked drops the n oldest buffers (slices.Delete clears the slots
// they leave, so nothing keeps them alive).
func (k *Keep) dropLocked(n int) {
	for _, kb := range k.bufs[:n] {
		k.bytes -= cap(kb.b)
	}
	k.bufs = slices.Delete(k.bufs, 0, n)
}

// trim drops the buffers kept longer than keepIdle, and runs again while
// any are left.
func (k *Keep) trim() {
	k.mu.Lock()
	defer k.mu.Unlock()
	cut := time.Now().Add(-keepIdle)
	n := 0
	for n < len(k.bufs) && k.bufs[n].at.Before(cut) {
		n++
	}
	k.dropLocked(n)
	if len(k.bufs) == 0 {
		k.timer = nil
		return
	}
	k.timer.Reset(time.Until(k.bufs[0].at.Add(keepIdle)) + time.Millisecond)
}
