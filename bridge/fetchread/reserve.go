package fetchread

import (
	"context"
	"time"

	"github.com/kafka-iggy/kafka-iggy/budget"
)

// The memory a Fetch holds (limits.memory_bytes, package budget): the Fetch
// room takes room for its response and one poll before each pass and
// keeps only the response's bytes until the reply is written.

// minGrant is the least budget a fetch waits for when none is free
// (up to its max_wait): room for a Kafka-default-sized record batch.
const minGrant = 1 << 20

// Reserve is the memory budget a fetch holds: before each pass, room
// for the response and for one poll's reply (up to MaxPollBytes);
// after it, the response bytes only, until the reply is written.
type Reserve struct {
	Budget   *budget.Budget
	Deadline time.Time
	held     int64
}

// Grow takes what the next pass may use, waiting up to the deadline (or
// until ctx ends) for at least minGrant when nothing is free, and
// returns the response limit within it; ok false: no budget, the pass
// reads offsets only (no record, not even KIP-74's first one).
func (r *Reserve) Grow(ctx context.Context, respMax int) (limit int, ok bool) {
	if r.Budget == nil {
		return respMax, true
	}
	// At least a byte: a response limit of 0 still carries the first
	// record (KIP-74), charged by Settle.
	want := max(int64(respMax)+int64(min(respMax, MaxPollBytes)), 1)
	if r.held < want {
		r.held += r.Budget.TryUpTo(want - r.held)
	}
	if need := r.Budget.Clamp(min(want, minGrant)); r.held < need && time.Until(r.Deadline) > 0 {
		wctx, cancel := context.WithDeadline(ctx, r.Deadline)
		n, _ := r.Budget.Acquire(wctx, need-r.held)
		cancel()
		r.held += n
	}
	if r.held <= 0 {
		return 0, false
	}
	pollRoom := min(r.held/2, MaxPollBytes)
	return int(min(int64(respMax), r.held-pollRoom)), true
}

// Settle keeps exactly the response's bytes: the rest goes back, and a
// first batch larger than the grant (KIP-74) is charged.
func (r *Reserve) Settle(used int) {
	if r.Budget == nil {
		return
	}
	switch u := int64(used); {
	case u > r.held:
		r.Budget.Charge(u - r.held)
	case u < r.held:
		r.Budget.Release(r.held - u)
	}
	r.held = int64(used)
}

// BufferReleased returns the response's bytes to the budget once its
// record buffer is written (records.BufferOwner).
func (r *Reserve) BufferReleased() {
	r.Budget.Release(r.held)
	r.held = 0
}
