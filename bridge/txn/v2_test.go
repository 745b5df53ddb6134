package txn

import (
	"context"
	"testing"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
)

// TestEndTxnV2EpochOverflow: under transaction protocol v2 the epoch moves
// on at every EndTxn; at 32766 the producer moves on to a new producer id
// at epoch 0, while the transaction's markers keep the producer id and
// epoch its records carry; a retry with the old producer id and epoch gets
// the same answer, the old producer id is refused afterwards, and a new
// owner replaying the decision log knows all of it.
func TestEndTxnV2EpochOverflow(t *testing.T) {
	cl := iggyFor(t, "ov", 1)
	ref := func(topic string) iggy.TopicRef { return iggy.TopicRef{Stream: "kafka", Topic: topic} }
	var ids pids
	ctx := context.Background()
	deps := Deps{Client: cl, Ref: ref, NewProducerID: ids.next, Offsets: &resolved{}}
	c := New(DefaultConfig(), deps, zerolog.Nop())
	init := c.InitProducerID(ctx, InitParams{ID: "o", TimeoutMs: 60000, ProducerID: -1, Epoch: -1})
	if init.Code != 0 {
		t.Fatalf("init: %+v", init)
	}
	old := init.ProducerID
	// The producer has run 32766 transactions.
	claim, err := c.hold(ctx, "o")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.put(ctx, claim, &Txn{ID: "o", ProducerID: old, Epoch: 32766, State: CompleteCommit, Seq: 5, TimeoutMs: 60000, StartMs: -1, MarkEpoch: 32765, Bumped: true}); err != nil {
		t.Fatal(err)
	}
	if r := c.AddPartitions(ctx, "o", old, 32766, []Partition{{"ov", 0}}); r.Code != 0 || r.Seq != 6 || r.MarkEpoch != 32766 {
		t.Fatalf("add: %+v", r)
	}
	r := c.EndTxnV2(ctx, "o", old, 32766, true)
	if r.Code != 0 || r.ProducerID == old || r.Epoch != 0 {
		t.Fatalf("end at epoch 32766: %+v", r)
	}
	if ms := markers(t, cl, "ov", 0); len(ms) != 1 || ms[0] != "C:6" {
		t.Errorf("markers %v", ms)
	}
	if again := c.EndTxnV2(ctx, "o", old, 32766, true); again != r {
		t.Errorf("retried end: %+v, want %+v", again, r)
	}
	if again := c.EndTxnV2(ctx, "o", old, 32766, false); again.Code != kerr.InvalidTxnState.Code {
		t.Errorf("abort after the commit, old producer id: %+v", again)
	}
	if a := c.AddPartitions(ctx, "o", old, 32766, []Partition{{"ov", 0}}); a.Code != kerr.InvalidProducerIDMapping.Code {
		t.Errorf("add with the old producer id: %+v", a)
	}
	if a := c.AddPartitions(ctx, "o", r.ProducerID, 0, []Partition{{"ov", 0}}); a.Code != 0 || a.Seq != 7 || a.MarkEpoch != 0 {
		t.Fatalf("add with the new producer id: %+v", a)
	}
	if e := c.EndTxnV2(ctx, "o", r.ProducerID, 0, false); e.Code != 0 || e.ProducerID != r.ProducerID || e.Epoch != 1 {
		t.Fatalf("abort: %+v", e)
	}
	// A new owner replays the log.
	c2 := New(DefaultConfig(), deps, zerolog.Nop())
	if d := c2.Describe(ctx, "o"); d.State != CompleteAbort || d.ProducerID != r.ProducerID || d.Epoch != 1 {
		t.Errorf("replayed: %+v", d)
	}
	if e := c2.EndTxnV2(ctx, "o", r.ProducerID, 0, false); e.Code != 0 || e.Epoch != 1 {
		t.Errorf("retried abort at the new owner: %+v", e)
	}
}

// TestDecisionLogV1Record: a record written before transaction protocol v2
// (no Bumped, no MarkPID) replays as a v1 transaction: its markers carry
// its producer id, and no EndTxn v5 retry is recognised for it.
func TestDecisionLogV1Record(t *testing.T) {
	rec := append([]byte{logVersion}, `{"id":"x","pid":5,"e":3,"s":4,"q":2,"to":60000,"st":-1,"u":1,"me":3}`...)
	tx, err := decodeTxn(rec)
	if err != nil {
		t.Fatal(err)
	}
	if tx.markPID() != 5 || tx.Bumped || tx.State != CompleteCommit || tx.retryOfBump(5, 3) || tx.retryOfBump(5, 2) {
		t.Errorf("v1 record: %+v", tx)
	}
}
