package txn

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
	"github.com/kafka-iggy/kafka-iggy/codec/records"
)

// marks returns a partition's end markers as "ctl:seq@coordinator epoch".
func marks(t *testing.T, cl *iggy.Client, topic string, partition uint32) []string {
	t.Helper()
	ref := iggy.TopicRef{Stream: "kafka", Topic: topic}
	p, err := cl.Poll(context.Background(), &icodec.PollMessagesRequest{
		Consumer: logConsumer, StreamID: ref.StreamID(), TopicID: ref.TopicID(),
		PartitionID: icodec.OptionalPartition{Present: true, PartitionID: partition},
		Strategy:    icodec.PollingStrategy{Kind: icodec.PollingKindOffset}, Count: 100,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Release()
	var out []string
	it := p.Messages()
	for it.Next() {
		info, st := records.ReadTxnHeaders(it.Message().Headers)
		if st != records.TxnMarker {
			t.Fatalf("partition %d: a message that is not a well-formed marker (%d)", partition, st)
		}
		out = append(out, fmt.Sprintf("%c:%d@%d", info.Control, info.Mark.Seq, info.CoordEpoch))
	}
	return out
}

// replays returns a coordinator that read the whole decision log from 0
// and one that loaded the latest snapshot and read the log after it.
func replays(t *testing.T, cfg Config, deps Deps) (full, fromSnap *Coordinator) {
	t.Helper()
	ctx := context.Background()
	full = New(cfg, deps, zerolog.Nop())
	full.snap.loaded = true // no snapshot: the log from offset 0
	full.cfg.SnapshotEvery = 0
	fromSnap = New(cfg, deps, zerolog.Nop())
	fromSnap.cfg.SnapshotEvery = 0
	for _, c := range []*Coordinator{full, fromSnap} {
		if _, code := c.List(ctx); code != 0 {
			t.Fatal(code)
		}
	}
	if fromSnap.snap.covers == 0 || fromSnap.snap.read >= full.snap.read {
		t.Fatalf("no snapshot loaded (covers %d, read %d of %d)", fromSnap.snap.covers, fromSnap.snap.read, full.snap.read)
	}
	if !reflect.DeepEqual(full.txns, fromSnap.txns) || !reflect.DeepEqual(full.claims, fromSnap.claims) {
		t.Fatalf("the replay from the snapshot differs from the full replay:\n%v %v\n%v %v", fromSnap.txns, fromSnap.claims, full.txns, full.claims)
	}
	return full, fromSnap
}

// snapshotNow writes a snapshot of the decision log as it is.
func snapshotNow(t *testing.T, cfg Config, deps Deps) {
	t.Helper()
	cfg.SnapshotEvery = 1
	s := New(cfg, deps, zerolog.Nop())
	if _, code := s.List(context.Background()); code != 0 {
		t.Fatal(code)
	}
	s.Close() // waits for its snapshot writer
}

// TestFencingDeposedCoordinator: coordinators A and B both believe they
// own the transactional id's shard (a lease overlap). A has read the open
// transaction T and is about to append its commit decision when B claims
// the shard and aborts T (an InitProducerId fencing the producer, or T's
// timeout); A's decision lands after B's claim: it is void, A's EndTxn
// answers NOT_COORDINATOR and A writes no commit marker. Every replay, from
// the log's start and from a snapshot taken before A's record, holds B's
// outcome, and B's records after A's void one count. A asked again claims
// the shard again and answers as B's outcome says (the producer is fenced).
func TestFencingDeposedCoordinator(t *testing.T) {
	for _, how := range []string{"init", "timeout"} {
		t.Run(how, func(t *testing.T) {
			cl := iggyFor(t, "fd", 2)
			ref := func(topic string) iggy.TopicRef { return iggy.TopicRef{Stream: "kafka", Topic: topic} }
			var ids pids
			cfg := DefaultConfig()
			ctx := context.Background()
			deps := Deps{Client: cl, Ref: ref, NewProducerID: ids.next, Offsets: &resolved{}}
			a := New(cfg, deps, zerolog.Nop())
			b := New(cfg, deps, zerolog.Nop())
			init := a.InitProducerID(ctx, InitParams{ID: "x", TimeoutMs: 60000, ProducerID: -1, Epoch: -1})
			if init.Code != 0 {
				t.Fatalf("init: %+v", init)
			}
			if r := a.AddPartitions(ctx, "x", init.ProducerID, init.Epoch, []Partition{{"fd", 0}, {"fd", 1}}); r.Code != 0 {
				t.Fatalf("add: %+v", r)
			}
			bEpoch := init.Epoch + 2 // B's InitProducerId: the abort's bump, then its own
			fired := false
			a.hook = func(point string, d *Txn) {
				if point != "append" || d.State != PrepareCommit || fired {
					return
				}
				fired = true
				switch how {
				case "init":
					if r := b.InitProducerID(ctx, InitParams{ID: "x", TimeoutMs: 60000, ProducerID: -1, Epoch: -1}); r.Code != 0 || r.Epoch != bEpoch {
						t.Errorf("B's init: %+v", r)
					}
				case "timeout":
					now := time.Now()
					b.now = func() time.Time { return now.Add(61 * time.Second) }
					b.Sweep(ctx)
					b.now = time.Now
					bEpoch = init.Epoch + 1
				}
				if d := b.Describe(ctx, "x"); d.Epoch != bEpoch || (d.State != Empty && d.State != CompleteAbort) {
					t.Errorf("after B's abort: %+v", d)
				}
				snapshotNow(t, cfg, deps) // covers B's records, not A's
			}
			if code := a.EndTxn(ctx, "x", init.ProducerID, init.Epoch, true); code != kerr.NotCoordinator.Code {
				t.Errorf("A's EndTxn after B's claim: %d, want NOT_COORDINATOR", code)
			}
			if !fired {
				t.Fatal("A appended no decision")
			}
			for p := uint32(0); p < 2; p++ {
				// B's abort marker, with B's claim epoch (A claimed 1, B 2).
				if ms := marks(t, cl, "fd", p); !reflect.DeepEqual(ms, []string{"A:1@2"}) {
					t.Errorf("partition %d markers %v, want [A:1@2]", p, ms)
				}
			}
			// B goes on after A's void record.
			after := b.InitProducerID(ctx, InitParams{ID: "x", TimeoutMs: 60000, ProducerID: -1, Epoch: -1})
			if after.Code != 0 || after.ProducerID != init.ProducerID || after.Epoch != bEpoch+1 {
				t.Fatalf("B's next init: %+v, want epoch %d", after, bEpoch+1)
			}
			full, fromSnap := replays(t, cfg, deps)
			for _, c := range []*Coordinator{full, fromSnap} {
				if d := c.Describe(ctx, "x"); d.Code != 0 || d.State != Empty || d.Epoch != after.Epoch {
					t.Errorf("replayed: %+v, want Empty at epoch %d", d, after.Epoch)
				}
			}
			// The client asks A again: A claims the shard again (the router
			// still gives it A) and reads B's outcome.
			if code := a.EndTxn(ctx, "x", init.ProducerID, init.Epoch, true); code != kerr.ProducerFenced.Code {
				t.Errorf("A's EndTxn asked again: %d, want PRODUCER_FENCED", code)
			}
			for p := uint32(0); p < 2; p++ {
				if ms := marks(t, cl, "fd", p); !reflect.DeepEqual(ms, []string{"A:1@2"}) {
					t.Errorf("partition %d markers %v after A's retry", p, ms)
				}
			}
		})
	}
}

// TestFencingRollsForwardDecision: the other order. B's sweep has read
// the open transaction T past its timeout, and A's commit decision lands
// before B's claim of the shard (A stops after its first marker); B reads
// the log after its claim, so it finishes A's commit (every marker, with
// B's claim epoch) instead of aborting T, and A's EndTxn answered 0 (its
// decision counted). A's late Complete record, after B's claim, is void.
func TestFencingRollsForwardDecision(t *testing.T) {
	cl := iggyFor(t, "fr", 2)
	ref := func(topic string) iggy.TopicRef { return iggy.TopicRef{Stream: "kafka", Topic: topic} }
	var ids pids
	cfg := DefaultConfig()
	ctx := context.Background()
	groups := &resolved{}
	deps := Deps{Client: cl, Ref: ref, NewProducerID: ids.next, Offsets: groups}
	dctx, die := context.WithCancel(ctx)
	defer die()
	adeps := deps
	adeps.Wake = func(string, int32) { die() } // A stops after its first marker
	a := New(cfg, adeps, zerolog.Nop())
	b := New(cfg, deps, zerolog.Nop())
	init := a.InitProducerID(ctx, InitParams{ID: "y", TimeoutMs: 60000, ProducerID: -1, Epoch: -1})
	if init.Code != 0 {
		t.Fatalf("init: %+v", init)
	}
	if r := a.AddPartitions(ctx, "y", init.ProducerID, init.Epoch, []Partition{{"fr", 0}, {"fr", 1}}); r.Code != 0 {
		t.Fatalf("add: %+v", r)
	}
	if code := a.AddOffsets(ctx, "y", init.ProducerID, init.Epoch, "g"); code != 0 {
		t.Fatalf("add offsets: %d", code)
	}
	endCode := int16(-1)
	b.hook = func(point string, _ *Txn) {
		if point != "claim" || endCode != -1 {
			return
		}
		if d := b.Describe(ctx, "y"); d.State != Ongoing {
			t.Errorf("B's sweep read %+v before its claim, want Ongoing", d)
		}
		endCode = a.EndTxn(dctx, "y", init.ProducerID, init.Epoch, true)
		snapshotNow(t, cfg, deps) // covers A's decision, not B's claim
	}
	now := time.Now()
	b.now = func() time.Time { return now.Add(61 * time.Second) }
	b.Sweep(ctx)
	b.now = time.Now
	if endCode != 0 {
		t.Fatalf("A's EndTxn: %d, want 0", endCode)
	}
	all := append(marks(t, cl, "fr", 0), marks(t, cl, "fr", 1)...)
	want := map[string]int{"C:1@1": 1, "C:1@2": 2} // A's first marker, then B's two
	got := map[string]int{}
	for _, m := range all {
		got[m]++
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("markers %v, want A's first (C:1@1) and B's two (C:1@2)", all)
	}
	if groups.calls.Load() != 1 {
		t.Errorf("group offsets resolved %d times, want once (by B)", groups.calls.Load())
	}
	// A, its context alive again, finishes too: its Complete record is void.
	claimA, _ := a.current(0)
	d := &Txn{ID: "y", ProducerID: init.ProducerID, Epoch: init.Epoch, State: CompleteCommit, Seq: 1, TimeoutMs: 60000, StartMs: -1}
	if err := a.put(ctx, claimA, d); err != errDeposed {
		t.Errorf("A's late record under its superseded claim: %v, want deposed", err)
	}
	full, fromSnap := replays(t, cfg, deps)
	for _, c := range []*Coordinator{full, fromSnap, a, b} {
		if d := c.Describe(ctx, "y"); d.Code != 0 || d.State != CompleteCommit || d.Epoch != init.Epoch {
			t.Errorf("replayed: %+v, want CompleteCommit at epoch %d", d, init.Epoch)
		}
	}
	if r := b.InitProducerID(ctx, InitParams{ID: "y", TimeoutMs: 60000, ProducerID: -1, Epoch: -1}); r.Code != 0 || r.Epoch != init.Epoch+1 {
		t.Errorf("the producer's next init: %+v", r)
	}
}

// TestClaimReplayRule: the replay rule on its own. A claim counts when its
// epoch is above every earlier claim of its shard (a tie: the first); a
// record counts when its claim is its shard's current one; a record
// without a claim (written before claims) always counts; shards are
// independent.
func TestClaimReplayRule(t *testing.T) {
	c := New(DefaultConfig(), Deps{}, zerolog.Nop())
	claim := func(k int, e int32, tok uint64) ClaimRef {
		r := claimRecord{ClaimRef: ClaimRef{Shard: k, Epoch: e, Token: tok}, By: 9}
		c.applyRecordLocked(r.encode())
		return r.ClaimRef
	}
	rec := func(id string, epoch int16, cl *ClaimRef) {
		c.applyRecordLocked((&Txn{ID: id, Epoch: epoch, Claim: cl}).encode())
	}
	epoch := func(id string) int16 {
		if t := c.txns[id]; t != nil {
			return t.Epoch
		}
		return -1
	}
	rec("old", 1, nil)
	c1 := claim(0, 1, 11)
	tie := claim(0, 1, 12)
	rec("a", 1, &c1)
	rec("a", 2, &tie)
	if epoch("old") != 1 || epoch("a") != 1 {
		t.Fatalf("after a tie: old %d a %d", epoch("old"), epoch("a"))
	}
	c2 := claim(0, 2, 13)
	rec("a", 3, &c1) // under the superseded claim: void
	rec("old", 2, nil)
	if epoch("a") != 1 || epoch("old") != 2 {
		t.Fatalf("after a higher claim: a %d old %d", epoch("a"), epoch("old"))
	}
	claim(0, 2, 14) // not higher: c2 stays
	d1 := claim(1, 1, 15)
	rec("a", 4, &c2)
	rec("b", 1, &d1)
	if epoch("a") != 4 || epoch("b") != 1 {
		t.Fatalf("a %d b %d", epoch("a"), epoch("b"))
	}
	c.applyRecordLocked([]byte{claimVersion, '{'}) // malformed: skipped
	if c.claims[0] != c2 || c.claims[1] != d1 {
		t.Fatalf("claims %v", c.claims)
	}
}
