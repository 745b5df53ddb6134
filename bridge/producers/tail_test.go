package producers

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
	"github.com/kafka-iggy/kafka-iggy/codec/wire"
)

func TestPIDMessageIDRoundTrip(t *testing.T) {
	for _, c := range []struct {
		pid   int64
		epoch int16
		seq   int32
	}{{0, 0, 0}, {1, 2, 3}, {math.MaxInt64, math.MaxInt16, math.MaxInt32}, {1 << 62, 0, 7}, {0x5a5a<<47 | 12345, 9, 1 << 30}} {
		id := MessageID(c.pid, c.epoch, c.seq)
		// UUID version 8, variant 10 (wire bytes 6 and 8).
		if v := id.Lo >> 52 & 0xf; v != 8 {
			t.Fatalf("%+v: version nibble %x", c, v)
		}
		if v := id.Hi >> 6 & 3; v != 2 {
			t.Fatalf("%+v: variant %b", c, v)
		}
		pid, epoch, seq, ok := parsePIDMessageID(id)
		if !ok || pid != c.pid || epoch != c.epoch || seq != c.seq {
			t.Fatalf("%+v: read back %d %d %d %v", c, pid, epoch, seq, ok)
		}
	}
	// Random v4 ids (those of other records) are never taken for one.
	for range 1000 {
		if _, _, _, ok := parsePIDMessageID(randomV4ID()); ok {
			t.Fatal("a random id parsed as a producer id")
		}
	}
	if _, _, _, ok := parsePIDMessageID(wire.U128{}); ok {
		t.Fatal("id 0 parsed as a producer id")
	}
	if got := SeqAdd(math.MaxInt32, 2); got != 1 {
		t.Fatalf("SeqAdd wraps to %d, want 1", got)
	}
}

// tailIter is a message iterator over one Iggy batch of messages with ids
// (offsets 0, 1, ...).
func tailIter(t *testing.T, ids ...wire.U128) *icodec.MessageIter {
	t.Helper()
	var b icodec.BatchBuilder
	for _, id := range ids {
		if err := b.Add(id, 1, []byte("x"), nil); err != nil {
			t.Fatal(err)
		}
	}
	out, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	it := icodec.NewMessageIter(out)
	return &it
}

func TestScanProducerTail(t *testing.T) {
	ids := []wire.U128{
		MessageID(7, 0, 0), MessageID(7, 0, 1), // epoch 0: superseded
		randomV4ID(),
		MessageID(7, 1, 0), MessageID(7, 1, 1), // run 0-1 at 3
		MessageID(8, 1, 2),                     // another producer
		MessageID(7, 1, 2), MessageID(7, 1, 3), // run 2-3 at 6
		MessageID(7, 1, 4), // continues the run
	}
	tl := scanProducerTail(tailIter(t, ids...), 7)
	want := []pidBatch{{first: 0, last: 1, base: 3, run: true}, {first: 2, last: 4, base: 6, run: true}}
	if !tl.found || tl.epoch != 1 || len(tl.runs) != len(want) {
		t.Fatalf("tail %+v", tl)
	}
	for i := range want {
		if tl.runs[i] != want[i] {
			t.Fatalf("run %d: %+v, want %+v", i, tl.runs[i], want[i])
		}
	}
	// Only the last pidBatches runs are kept.
	ids = ids[:0]
	for s := int32(0); s < 20; s += 2 {
		ids = append(ids, MessageID(7, 0, s), randomV4ID())
	}
	if tl := scanProducerTail(tailIter(t, ids...), 7); len(tl.runs) != pidBatches || tl.runs[pidBatches-1].first != 18 || tl.runs[0].first != 10 {
		t.Fatalf("tail %+v", tl)
	}
	if tl := scanProducerTail(tailIter(t, ids...), 9); tl.found {
		t.Fatalf("producer 9 found: %+v", tl)
	}
}

// tailProducers is a tracker reading tails from tail, counting the reads.
func tailProducers(tail *pidTail, err *error, reads *int) *State {
	ps := newTestProducers(10)
	ps.tail = func(context.Context, string, int32, int64) (pidTail, error) {
		*reads++
		return *tail, *err
	}
	return ps
}

func TestAdmitReadsStateBackFromTail(t *testing.T) {
	tail := pidTail{found: true, epoch: 3, runs: []pidBatch{{first: 0, last: 9, base: 100, run: true}, {first: 10, last: 19, base: 200, run: true}}}
	var terr error
	reads := 0
	ps := tailProducers(&tail, &terr, &reads)
	const pid = 5 // not handed out by this tracker's allocator
	// A retry inside a run is a duplicate, answered at its record's offset.
	admitDup(t, ps, pid, 3, 0, 12, 3, 202)
	admitDup(t, ps, pid, 3, 0, 0, 10, 100)
	if reads != 1 {
		t.Fatalf("%d tail reads, want 1", reads)
	}
	// The next sequence is written; a gap is out of order; an older epoch fenced.
	admitCode(t, ps, pid, 3, 0, 25, 1, kerr.OutOfOrderSequenceNumber.Code)
	admitCode(t, ps, pid, 2, 0, 20, 1, kerr.InvalidProducerEpoch.Code)
	admitOK(t, ps, pid, 3, "t", 0, 20, 5, 300)
	admitDup(t, ps, pid, 3, 0, 20, 5, 300)

	// A failed (or unknown-outcome) write makes the next batch read the
	// tail again: here the write had landed, so its retry is a duplicate.
	_, code, done := ps.Admit(context.Background(), pid, 3, "t", 0, 25, 5)
	if code != 0 {
		t.Fatal(code)
	}
	done(0, false)
	tail.runs = append(tail.runs, pidBatch{first: 20, last: 29, base: 300, run: true})
	admitDup(t, ps, pid, 3, 0, 25, 5, 305)
	if reads != 2 {
		t.Fatalf("%d tail reads, want 2", reads)
	}

	// A producer the tail does not know: sequence 0 starts it, anything
	// else is UNKNOWN_PRODUCER_ID, never a silent new start.
	tail = pidTail{}
	admitCode(t, ps, pid+1, 0, 0, 7, 1, kerr.UnknownProducerID.Code)
	admitOK(t, ps, pid+2, 0, "t", 0, 0, 1, 400)
	admitOK(t, ps, pid+2, 0, "t", 0, 1, 1, 401)

	// A failed tail read refuses the batch with a retriable error.
	terr = errors.New("iggy down")
	admitCode(t, ps, pid+3, 0, 0, 4, 1, kerr.NotLeaderForPartition.Code)
}

func TestAdmitOwnProducerSkipsTail(t *testing.T) {
	var tail pidTail
	var terr error
	reads := 0
	ps := tailProducers(&tail, &terr, &reads)
	ps.alloc = newPIDAllocator(3, func() time.Time { return pidClockEpoch.Add(time.Hour) })
	pid := ps.alloc.next()
	admitOK(t, ps, pid, 0, "t", 0, 0, 2, 0)
	admitOK(t, ps, pid, 0, "t", 0, 2, 2, 2)
	if reads != 0 {
		t.Fatalf("%d tail reads for a new producer of this instance, want 0", reads)
	}
	// An id of the same instance from before a restart is read back.
	old := int64(3)<<pidCounterBits | 5
	if ps.alloc.own(old) {
		t.Fatal("an id from before the allocator counts as own")
	}
	admitOK(t, ps, old, 0, "t", 0, 0, 1, 4)
	if reads != 1 {
		t.Fatalf("%d tail reads, want 1", reads)
	}
}

func TestPIDLeaser(t *testing.T) {
	blocks := []int64{7, 9}
	var fail error
	l := newPIDLeaser(func(context.Context) (int64, error) {
		if fail != nil {
			return 0, fail
		}
		b := blocks[0]
		blocks = blocks[1:]
		return b, nil
	})
	ctx := context.Background()
	id, err := l.id(ctx)
	if err != nil || id != 7<<pidLeaseBits {
		t.Fatalf("first id %d %v", id, err)
	}
	if !l.own(id) || !l.own(7<<pidLeaseBits|5) || l.own(8<<pidLeaseBits) {
		t.Fatal("own")
	}
	// A block lasts 2^20 ids, then the next is leased.
	l.next = 1<<pidLeaseBits - 1
	if id, _ := l.id(ctx); id != 7<<pidLeaseBits|(1<<pidLeaseBits-1) {
		t.Fatalf("last id of the block: %d", id)
	}
	if id, _ := l.id(ctx); id != 9<<pidLeaseBits {
		t.Fatalf("first id of the next block: %d", id)
	}
	if !l.own(7<<pidLeaseBits) || !l.own(9<<pidLeaseBits|3) {
		t.Fatal("own after a new block")
	}
	// A failed lease answers an error; a block too large for an id too.
	l.next = 1 << pidLeaseBits
	fail = errors.New("iggy down")
	if _, err := l.id(ctx); err == nil {
		t.Fatal("no error from a failed lease")
	}
	fail, blocks = nil, []int64{pidLeaseMaxBlock + 1}
	if _, err := l.id(ctx); !errors.Is(err, errPIDLeaseExhausted) {
		t.Fatalf("block beyond the id range: %v", err)
	}
}

// polledOf is a polled chunk of messages with ids at offsets from base.
func polledOf(t *testing.T, base uint64, ids ...wire.U128) *iggy.Polled {
	t.Helper()
	var b icodec.BatchBuilder
	for _, id := range ids {
		if err := b.Add(id, 1, []byte("x"), nil); err != nil {
			t.Fatal(err)
		}
	}
	out, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	binary.LittleEndian.PutUint64(out[icodec.BatchHeaderBaseOffsetOffset:], base)
	return &iggy.Polled{Batches: out}
}

func TestRunStarts(t *testing.T) {
	o := randomV4ID()
	// Newer chunk (offsets 4-7): pid's seq 4 continues seq 3 at offset 3
	// only if the older chunk ends so.
	newerChunk := polledOf(t, 4, MessageID(7, 0, 4), o, MessageID(7, 0, 5), MessageID(7, 0, 6))
	var newer tailMsg
	first, starts, n := runStarts(newerChunk, 7, &newer)
	// Seq 5 at 6 starts a run (its predecessor is another producer's); seq
	// 6 continues it; seq 4 at 4 waits for the older chunk.
	if first != 4 || starts != 1 || n != 4 {
		t.Fatalf("newer chunk: first %d starts %d n %d", first, starts, n)
	}
	older := polledOf(t, 0, o, MessageID(7, 0, 1), MessageID(7, 0, 2), MessageID(7, 0, 3))
	first, starts, n = runStarts(older, 7, &newer)
	// Seq 1 at 1 starts a run; seq 4 at 4 continues seq 3 at 3: no start.
	if first != 0 || starts != 1 || n != 4 {
		t.Fatalf("older chunk: first %d starts %d n %d", first, starts, n)
	}
	gapped := polledOf(t, 0, o, MessageID(7, 0, 1), MessageID(7, 0, 2), o)
	newer = tailMsg{}
	runStarts(newerChunk, 7, &newer)
	if _, starts, _ := runStarts(gapped, 7, &newer); starts != 2 {
		t.Fatalf("older chunk ending with another producer: starts %d, want 2", starts)
	}
}
