package budget_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kafka-iggy/kafka-iggy/budget"
)

// TestBudgetFIFO: takers are served in order, a large one is not overtaken
// by smaller ones arriving after it, and one larger than the whole budget
// runs as the whole budget once everything else is released.
func TestBudgetFIFO(t *testing.T) {
	b := budget.New(100)
	if got := b.TryUpTo(60); got != 60 {
		t.Fatalf("TryUpTo(60) = %d", got)
	}
	var bigDone atomic.Bool
	big := b.Queue(500, 0, func() { bigDone.Store(true) }) // clamped to 100
	if big == nil || big.Bytes() != 100 {
		t.Fatalf("a request above the total is queued as the total: %+v", big)
	}
	if b.TryUpTo(10) != 0 || b.Queue(10, 0, func() {}) == nil {
		t.Fatal("a small taker overtook the queued large one")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if n, err := b.Acquire(ctx, 1); n != 0 || err == nil {
		t.Fatalf("Acquire behind the queue: %d %v", n, err)
	}
	b.Release(60)
	if !bigDone.Load() || !big.Granted() || b.InUse() != 100 {
		t.Fatalf("after release: granted %v, in use %d", big.Granted(), b.InUse())
	}
	b.Release(100) // the big one finishes; the small queued one gets in
	if b.InUse() != 10 {
		t.Fatalf("in use %d, want the queued 10", b.InUse())
	}
	if b.Waits() != 3 || b.Peak() != 100 {
		t.Fatalf("waits %d peak %d", b.Waits(), b.Peak())
	}
}

// TestBudgetCancelAndCharge: a cancelled head of the queue lets the next
// in; Charge may pass the total and makes new takers wait.
func TestBudgetCancelAndCharge(t *testing.T) {
	b := budget.New(100)
	b.Charge(90)
	head := b.Queue(50, 0, func() {})
	var next atomic.Bool
	if b.Queue(5, 0, func() { next.Store(true) }) == nil {
		t.Fatal("queued behind the head")
	}
	if b.Cancel(head) {
		t.Fatal("cancelled ticket reported granted")
	}
	if !next.Load() || b.InUse() != 95 {
		t.Fatalf("after cancelling the head: next %v, in use %d", next.Load(), b.InUse())
	}
	b.Charge(50)
	if b.InUse() != 145 || b.TryUpTo(1) != 0 {
		t.Fatalf("charge past the total: in use %d", b.InUse())
	}
	var nilB *budget.Budget
	if nilB.TryUpTo(7) != 7 || nilB.Queue(7, 0, nil) != nil {
		t.Fatal("a nil budget is unlimited")
	}
}

// TestBudgetOutside: fetches leave Outside free; a frame leaves free what
// is outside besides its own bytes, but still runs on an empty budget
// however much waits outside (no starvation).
func TestBudgetOutside(t *testing.T) {
	b := budget.New(100)
	b.Outside(60)
	if got := b.TryUpTo(100); got != 40 {
		t.Fatalf("fetch beside 60 outside took %d, want 40", got)
	}
	b.Release(40)
	b.Charge(20)
	var granted atomic.Bool
	if b.Queue(50, 0, func() { granted.Store(true) }) == nil {
		t.Fatal("a 50-byte frame fit in 80 free beside 60 others' bytes outside")
	}
	b.Outside(-60) // those requests were read
	if !granted.Load() {
		t.Fatal("the frame was not granted once the bytes outside went")
	}
	b2 := budget.New(100)
	b2.Outside(1000) // far more waiting in gnet than the whole budget
	if b2.Queue(80, 0, func() {}) != nil {
		t.Fatal("a frame on an empty budget must run whatever waits outside")
	}
}
