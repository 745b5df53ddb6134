package producers

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// newTestProducers is a tracker whose gap wait is short: tests that need
// a batch to wait for an overtaken one set it longer.
func newTestProducers(maxProducers int) *State {
	ps := newProducerState(maxProducers)
	ps.gapWait = time.Millisecond
	return ps
}

func TestLastSeqAndInSequence(t *testing.T) {
	cases := []struct {
		first, count, last int32
	}{
		{0, 1, 0},
		{0, 5, 4},
		{10, 3, 12},
		{math.MaxInt32, 1, math.MaxInt32},
		{math.MaxInt32, 2, 0},
		{math.MaxInt32 - 1, 4, 1},
	}
	for _, c := range cases {
		if got := lastSeq(c.first, c.count); got != c.last {
			t.Errorf("lastSeq(%d, %d) = %d, want %d", c.first, c.count, got, c.last)
		}
	}
	if !inSequence(4, 5) || !inSequence(math.MaxInt32, 0) || inSequence(4, 6) || inSequence(4, 4) || inSequence(5, 0) {
		t.Error("inSequence rules broken")
	}
}

func TestPIDAllocator(t *testing.T) {
	now := pidClockEpoch.Add(1000 * time.Hour)
	clock := func() time.Time { return now }
	a := newPIDAllocator(0x1234, clock)
	seen := map[int64]bool{}
	var last int64 = -1
	for i := 0; i < 1000; i++ {
		id := a.next()
		if id < 0 || seen[id] || id <= last {
			t.Fatalf("id %d: negative, repeated or not increasing (last %d)", id, last)
		}
		if id>>pidCounterBits != 0x1234 {
			t.Fatalf("id %x does not carry instance 0x1234", id)
		}
		seen[id], last = true, id
	}
	// A restart one second later (same instance) starts past every id
	// handed out before, as long as fewer than 1000 ids were allocated.
	now = now.Add(time.Second)
	b := newPIDAllocator(0x1234, clock)
	if id := b.next(); id <= last {
		t.Fatalf("restarted allocator handed out %d, not above %d", id, last)
	}
	// Other instances never collide: different high bits.
	if c := newPIDAllocator(0x1235, clock).next(); c>>pidCounterBits != 0x1235 {
		t.Fatalf("instance bits wrong: %x", c)
	}
	// The largest instance id keeps ids positive.
	if id := newPIDAllocator(0xffff, clock).next(); id < 0 {
		t.Fatalf("instance 0xffff gave negative id %d", id)
	}
	// A clock before the epoch does not go negative.
	early := newPIDAllocator(1, func() time.Time { return pidClockEpoch.Add(-time.Hour) })
	if id := early.next(); id != 1<<pidCounterBits {
		t.Fatalf("early clock: id %d", id)
	}
}

func TestProducerInstanceID(t *testing.T) {
	if id, src := producerInstanceID(42); id != 42 || src != "config" {
		t.Fatalf("configured: %d %s", id, src)
	}
	t.Setenv("HOSTNAME", "kafka-iggy-0")
	id1, src := producerInstanceID(-1)
	if src != "hostname_env" || id1 < 0 || id1 > 0xffff {
		t.Fatalf("derived: %d %s", id1, src)
	}
	if id2, _ := producerInstanceID(-1); id2 != id1 {
		t.Fatal("derivation is not stable")
	}
	t.Setenv("HOSTNAME", "kafka-iggy-1")
	if id3, _ := producerInstanceID(-1); id3 == id1 {
		t.Log("two pod names hash to the same instance id (possible, unlikely)")
	}
}

// admitOK admits a batch that must be written and confirms it at base.
func admitOK(t *testing.T, ps *State, pid int64, epoch int16, topic string, part, seq, count int32, base int64) {
	t.Helper()
	dup, code, done := ps.Admit(context.Background(), pid, epoch, topic, part, seq, count)
	if dup != nil || code != 0 {
		t.Fatalf("admit pid %d epoch %d seq %d: dup %v code %d, want a write", pid, epoch, seq, dup, code)
	}
	done(base, true)
}

// admitCode admits a batch that must be refused with want.
func admitCode(t *testing.T, ps *State, pid int64, epoch int16, part, seq, count int32, want int16) {
	t.Helper()
	dup, code, done := ps.Admit(context.Background(), pid, epoch, "t", part, seq, count)
	done(0, true) // a no-op for refusals
	if dup != nil || code != want {
		t.Fatalf("admit pid %d epoch %d seq %d: dup %v code %d, want code %d", pid, epoch, seq, dup, code, want)
	}
}

// admitDup admits a batch that must be a retry of base.
func admitDup(t *testing.T, ps *State, pid int64, epoch int16, part, seq, count int32, base int64) {
	t.Helper()
	dup, code, _ := ps.Admit(context.Background(), pid, epoch, "t", part, seq, count)
	if code != 0 || dup == nil || dup.BaseOffset != base {
		t.Fatalf("admit pid %d seq %d: dup %v code %d, want dup at %d", pid, seq, dup, code, base)
	}
}

func TestAdmitSequenceRules(t *testing.T) {
	ps := newTestProducers(10)
	const pid = 7
	// Unknown producer: any sequence is accepted as new state.
	admitOK(t, ps, pid, 0, "t", 0, 100, 5, 1000) // seqs 100-104 at 1000
	// A retry returns the original offsets.
	admitDup(t, ps, pid, 0, 0, 100, 5, 1000)
	// The next batch continues.
	admitOK(t, ps, pid, 0, "t", 0, 105, 2, 1005)
	admitDup(t, ps, pid, 0, 0, 100, 5, 1000) // still remembered
	admitDup(t, ps, pid, 0, 0, 105, 2, 1005)
	// A gap, an overlap that is not a retry, and sequence 0 are out of order.
	oos := kerr.OutOfOrderSequenceNumber.Code
	admitCode(t, ps, pid, 0, 0, 108, 1, oos)
	admitCode(t, ps, pid, 0, 0, 106, 1, oos)
	admitCode(t, ps, pid, 0, 0, 0, 1, oos)
	// A lower epoch is fenced.
	admitOK(t, ps, pid, 1, "t", 0, 0, 1, 1007) // epoch bump, restarts at 0
	admitCode(t, ps, pid, 0, 0, 107, 1, kerr.InvalidProducerEpoch.Code)
	// A higher epoch must start at 0 once something of the epoch is known.
	admitCode(t, ps, pid, 2, 0, 5, 1, oos)
	admitOK(t, ps, pid, 1, "t", 0, 1, 1, 1008)
	// Other partitions and producers have their own state.
	admitOK(t, ps, pid, 1, "t", 1, 42, 1, 5)
	admitOK(t, ps, pid, 1, "u", 0, 9, 1, 6)
	admitOK(t, ps, pid+1, 0, "t", 0, 3, 1, 1009)
}

func TestAdmitRemembersFiveBatches(t *testing.T) {
	ps := newTestProducers(10)
	for i := int32(0); i < 6; i++ {
		admitOK(t, ps, 1, 0, "t", 0, i*10, 10, int64(i)*10)
	}
	for i := int32(1); i < 6; i++ {
		admitDup(t, ps, 1, 0, 0, i*10, 10, int64(i)*10)
	}
	// The sixth-newest batch is forgotten: a broker answers it out of order.
	admitCode(t, ps, 1, 0, 0, 0, 10, kerr.OutOfOrderSequenceNumber.Code)
}

func TestAdmitSequenceWraps(t *testing.T) {
	ps := newTestProducers(10)
	admitOK(t, ps, 1, 0, "t", 0, math.MaxInt32-1, 4, 0) // ends at 1
	admitOK(t, ps, 1, 0, "t", 0, 2, 1, 4)
	ps2 := newTestProducers(10)
	admitOK(t, ps2, 1, 0, "t", 0, math.MaxInt32, 1, 0)
	admitOK(t, ps2, 1, 0, "t", 0, 0, 1, 1)
}

func TestAdmitFailedWriteIsForgotten(t *testing.T) {
	ps := newTestProducers(10)
	admitOK(t, ps, 1, 0, "t", 0, 0, 5, 0)
	_, code, done := ps.Admit(context.Background(), 1, 0, "t", 0, 5, 5)
	if code != 0 {
		t.Fatal(code)
	}
	done(0, false) // the write failed
	done(99, true) // later calls do nothing
	// The retry is a new write, not a duplicate.
	admitOK(t, ps, 1, 0, "t", 0, 5, 5, 5)
	admitDup(t, ps, 1, 0, 0, 5, 5, 5)
}

func TestAdmitInvalidInput(t *testing.T) {
	ps := newTestProducers(10)
	for _, c := range []struct {
		pid        int64
		epoch      int16
		seq, count int32
	}{{-1, 0, 0, 1}, {1, -1, 0, 1}, {1, 0, -1, 1}, {1, 0, 0, 0}, {1, 0, 0, -5}} {
		dup, code, done := ps.Admit(context.Background(), c.pid, c.epoch, "t", 0, c.seq, c.count)
		if dup != nil || code != kerr.InvalidRecord.Code || done == nil {
			t.Fatalf("%+v: dup %v code %d", c, dup, code)
		}
		done(0, true)
	}
	if p, e := ps.tracked(); p != 0 || e != 0 {
		t.Fatalf("invalid batches created state: %d producers, %d entries", p, e)
	}
}

// TestAdmitWaitsForInFlightBatch: the next batch of a producer and
// partition is checked only once the previous write finished.
func TestAdmitWaitsForInFlightBatch(t *testing.T) {
	ctx := context.Background()

	t.Run("next batch after success", func(t *testing.T) {
		ps := newTestProducers(10)
		_, code, doneA := ps.Admit(ctx, 1, 0, "t", 0, 0, 5)
		if code != 0 {
			t.Fatal(code)
		}
		var confirmed atomic.Bool
		res := make(chan int16, 1)
		go func() {
			_, code, doneB := ps.Admit(ctx, 1, 0, "t", 0, 5, 5)
			if !confirmed.Load() {
				code = -100 // returned before A finished
			}
			doneB(5, true)
			res <- code
		}()
		confirmed.Store(true)
		doneA(0, true)
		if code := <-res; code != 0 {
			t.Fatalf("batch B: code %d", code)
		}
	})

	t.Run("next batch after failure is out of order", func(t *testing.T) {
		ps := newTestProducers(10)
		admitOK(t, ps, 1, 0, "t", 0, 0, 5, 0)
		_, _, doneA := ps.Admit(ctx, 1, 0, "t", 0, 5, 5)
		res := make(chan int16, 1)
		go func() {
			_, code, doneB := ps.Admit(ctx, 1, 0, "t", 0, 10, 5)
			doneB(0, false)
			res <- code
		}()
		doneA(0, false)
		if code := <-res; code != kerr.OutOfOrderSequenceNumber.Code {
			t.Fatalf("batch after a failed one: code %d", code)
		}
	})

	t.Run("retry of an in-flight batch gets its offsets", func(t *testing.T) {
		ps := newTestProducers(10)
		_, _, doneA := ps.Admit(ctx, 1, 0, "t", 0, 0, 5)
		res := make(chan *DupResult, 1)
		go func() {
			dup, _, done := ps.Admit(ctx, 1, 0, "t", 0, 0, 5)
			done(0, false)
			res <- dup
		}()
		doneA(77, true)
		if dup := <-res; dup == nil || dup.BaseOffset != 77 {
			t.Fatalf("retry: %+v", dup)
		}
	})

	t.Run("context ends while waiting", func(t *testing.T) {
		ps := newTestProducers(10)
		_, _, doneA := ps.Admit(ctx, 1, 0, "t", 0, 0, 5)
		defer doneA(0, true)
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		dup, code, _ := ps.Admit(cctx, 1, 0, "t", 0, 5, 5)
		if dup != nil || code != kerr.NotLeaderForPartition.Code {
			t.Fatalf("dup %v code %d", dup, code)
		}
	})
}

// TestAdmitReordered: batches of one producer that overtook each other on
// the way to admit are put back in sequence order.
func TestAdmitReordered(t *testing.T) {
	ctx := context.Background()

	t.Run("first batches of a new producer", func(t *testing.T) {
		ps := newTestProducers(10)
		ps.gapWait = time.Minute // only progress may release B
		waiting := make(chan struct{}, 1)
		ps.waitHook = func() {
			select {
			case waiting <- struct{}{}:
			default:
			}
		}
		var aDone atomic.Bool
		res := make(chan int16, 1)
		go func() {
			dup, code, doneB := ps.Admit(ctx, 1, 0, "t", 0, 5, 5) // B overtook A
			if dup != nil || !aDone.Load() {
				code = -100 // admitted before A was written
			}
			doneB(5, true)
			res <- code
		}()
		<-waiting // B waits for what comes before it
		_, code, doneA := ps.Admit(ctx, 1, 0, "t", 0, 0, 5)
		if code != 0 {
			t.Fatal(code)
		}
		aDone.Store(true)
		doneA(0, true)
		if code := <-res; code != 0 {
			t.Fatalf("B: %d", code)
		}
		admitDup(t, ps, 1, 0, 0, 0, 5, 0)
		admitDup(t, ps, 1, 0, 0, 5, 5, 5)
	})

	t.Run("new state starts at the lowest waiting batch", func(t *testing.T) {
		ps := newTestProducers(10)
		ps.gapWait = 100 * time.Millisecond // nothing fills the gap: both time out
		waiting := make(chan struct{}, 8)
		ps.waitHook = func() {
			select {
			case waiting <- struct{}{}:
			default:
			}
		}
		var order []int32
		var mu sync.Mutex
		res := make(chan int16, 2)
		run := func(first int32) {
			_, code, done := ps.Admit(ctx, 1, 0, "t", 0, first, 5)
			mu.Lock()
			order = append(order, first)
			mu.Unlock()
			done(int64(first), true)
			res <- code
		}
		go run(5) // C: lower
		<-waiting
		go run(10) // B: higher, may time out first
		<-waiting
		if c1, c2 := <-res, <-res; c1 != 0 || c2 != 0 {
			t.Fatalf("codes %d %d", c1, c2)
		}
		if len(order) != 2 || order[0] != 5 || order[1] != 10 {
			t.Fatalf("admitted in order %v, want [5 10]", order)
		}
	})

	t.Run("gap filled by a later arrival", func(t *testing.T) {
		ps := newTestProducers(10)
		admitOK(t, ps, 1, 0, "t", 0, 0, 5, 0)
		ps.gapWait = time.Minute
		res := make(chan int16, 1)
		go func() {
			_, code, doneC := ps.Admit(ctx, 1, 0, "t", 0, 10, 5) // C overtook B
			doneC(10, true)
			res <- code
		}()
		admitOK(t, ps, 1, 0, "t", 0, 5, 5, 5)
		if code := <-res; code != 0 {
			t.Fatalf("C: %d", code)
		}
	})

	t.Run("gap never filled", func(t *testing.T) {
		ps := newTestProducers(10)
		admitOK(t, ps, 1, 0, "t", 0, 0, 5, 0)
		admitCode(t, ps, 1, 0, 0, 10, 1, kerr.OutOfOrderSequenceNumber.Code)
		// Without state, a sequence above 0 becomes new state.
		admitOK(t, ps, 2, 0, "t", 0, 10, 1, 0)
	})
}

func TestProducerStateBounded(t *testing.T) {
	ps := newTestProducers(3)
	for pid := int64(0); pid < 10; pid++ {
		admitOK(t, ps, pid, 0, "t", 0, 10, 1, pid)
	}
	if p, e := ps.tracked(); p != 3 || e != 3 {
		t.Fatalf("tracked %d producers, %d entries; want 3, 3", p, e)
	}
	// The most recent producers are kept, the oldest forgotten (and then
	// accepted as new state).
	admitDup(t, ps, 9, 0, 0, 10, 1, 9)
	admitOK(t, ps, 0, 0, "t", 0, 500, 1, 100)

	// A producer with a write in flight is never forgotten.
	ps = newTestProducers(1)
	_, _, doneA := ps.Admit(context.Background(), 1, 0, "t", 0, 0, 1)
	admitOK(t, ps, 2, 0, "t", 0, 0, 1, 0)
	if p, _ := ps.tracked(); p != 2 {
		t.Fatalf("in-flight producer evicted: %d producers", p)
	}
	doneA(0, true)
	admitDup(t, ps, 1, 0, 0, 0, 1, 0)
	if p, _ := ps.tracked(); p != 1 {
		t.Fatalf("limit not restored: %d producers", p)
	}

	// Partitions per producer are bounded too.
	ps = newTestProducers(10)
	ps.maxParts = 4
	for part := int32(0); part < 10; part++ {
		admitOK(t, ps, 1, 0, "t", part, 0, 1, 0)
	}
	if _, e := ps.tracked(); e != 4 {
		t.Fatalf("entries %d, want 4", e)
	}
	admitDup(t, ps, 1, 0, 9, 0, 1, 0) // the newest partitions are kept
}

func TestProducerStateConcurrent(t *testing.T) {
	ps := newTestProducers(8)
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			pid := int64(w % 4) // two writers per producer, different partitions
			part := int32(w)
			for seq := int32(0); seq < 200; seq++ {
				dup, code, done := ps.Admit(context.Background(), pid, 0, "t", part, seq, 1)
				if dup != nil || code != 0 {
					t.Errorf("writer %d seq %d: dup %v code %d", w, seq, dup, code)
					return
				}
				done(int64(seq), true)
			}
		}(w)
	}
	wg.Wait()
}
