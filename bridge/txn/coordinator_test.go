package txn

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
	"github.com/kafka-iggy/kafka-iggy/codec/records"
	"github.com/kafka-iggy/kafka-iggy/embedded/embedtest"
)

// iggyFor starts an embedded Iggy server and a client of it with topic
// kafka/<topic> of n partitions.
func iggyFor(t testing.TB, topic string, n uint32) *iggy.Client {
	t.Helper()
	srv := embedtest.Start(t, "127.0.0.1:0", nil)
	cfg := iggy.DefaultConfig()
	cfg.Address = srv.Addr().String()
	cfg.PoolSize = 1
	cl, err := iggy.New(cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := cl.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Close() })
	if _, err := cl.EnsureStream(ctx, "kafka"); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.CreateTopic(ctx, iggy.TopicRef{Stream: "kafka", Topic: topic}, n, nil); err != nil {
		t.Fatal(err)
	}
	return cl
}

// markers returns the end markers of a partition, in order.
func markers(t *testing.T, cl *iggy.Client, topic string, partition uint32) []string {
	t.Helper()
	p, err := cl.Poll(context.Background(), &icodec.PollMessagesRequest{
		Consumer:    logConsumer,
		StreamID:    iggy.TopicRef{Stream: "kafka", Topic: topic}.StreamID(),
		TopicID:     iggy.TopicRef{Stream: "kafka", Topic: topic}.TopicID(),
		PartitionID: icodec.OptionalPartition{Present: true, PartitionID: partition},
		Strategy:    icodec.PollingStrategy{Kind: icodec.PollingKindOffset},
		Count:       100,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Release()
	var out []string
	it := p.Messages()
	for it.Next() {
		h := icodec.NewHeaderIter(it.Message().Headers)
		var ctl byte
		var mark records.TxnMark
		for h.Next() {
			_, k := h.Key()
			_, v := h.Value()
			switch string(k) {
			case records.HeaderControl:
				ctl = v[0]
			case records.HeaderTxn:
				mark, _ = records.ParseTxnMark(v)
			}
		}
		out = append(out, string(ctl)+":"+string(rune('0'+mark.Seq)))
	}
	return out
}

type pids struct{ n atomic.Int64 }

func (p *pids) next(context.Context) (int64, error) { return p.n.Add(1) + 1000, nil }

type resolved struct{ calls atomic.Int32 }

func (r *resolved) ResolveTxnOffsets(context.Context, string, int64, int16, bool) error {
	r.calls.Add(1)
	return nil
}

// TestRecoveryRollsForward: the coordinator dies between its decision and
// its last marker (its context ends after the first marker); a new
// coordinator on the same Iggy (a new owner) reads the decision log, writes
// every marker again and completes the transaction; the producer's next
// InitProducerId sees it complete. Also: a transaction past its timeout is
// aborted by the sweep, fencing its producer.
func TestRecoveryRollsForward(t *testing.T) {
	cl := iggyFor(t, "rt", 2)
	ref := func(topic string) iggy.TopicRef { return iggy.TopicRef{Stream: "kafka", Topic: topic} }
	var ids pids
	groups := &resolved{}
	cfg := DefaultConfig()
	ctx := context.Background()

	dctx, die := context.WithCancel(ctx)
	c1 := New(cfg, Deps{Client: cl, Ref: ref, NewProducerID: ids.next, Offsets: groups, Wake: func(string, int32) { die() }}, zerolog.Nop())
	init := c1.InitProducerID(ctx, InitParams{ID: "r", TimeoutMs: 60000, ProducerID: -1, Epoch: -1})
	if init.Code != 0 {
		t.Fatalf("init: %+v", init)
	}
	add := c1.AddPartitions(ctx, "r", init.ProducerID, init.Epoch, []Partition{{"rt", 0}, {"rt", 1}})
	if add.Code != 0 || add.Seq != 1 {
		t.Fatalf("add: %+v", add)
	}
	if code := c1.AddOffsets(ctx, "r", init.ProducerID, init.Epoch, "g"); code != 0 {
		t.Fatalf("add offsets: %d", code)
	}
	// The decision is made, the first marker written, then the
	// coordinator's context ends: the answer is still success.
	if code := c1.EndTxn(dctx, "r", init.ProducerID, init.Epoch, true); code != 0 {
		t.Fatalf("end: %d", code)
	}
	if d := c1.Describe(ctx, "r"); d.State != PrepareCommit {
		t.Fatalf("after the crash: %+v", d)
	}
	if got := len(markers(t, cl, "rt", 0)) + len(markers(t, cl, "rt", 1)); got != 1 {
		t.Fatalf("%d markers before recovery", got)
	}

	// The new owner.
	c2 := New(cfg, Deps{Client: cl, Ref: ref, NewProducerID: ids.next, Offsets: groups}, zerolog.Nop())
	c2.Sweep(ctx)
	if d := c2.Describe(ctx, "r"); d.Code != 0 || d.State != CompleteCommit {
		t.Fatalf("after recovery: %+v", d)
	}
	for p := uint32(0); p < 2; p++ {
		ms := markers(t, cl, "rt", p)
		if len(ms) == 0 || len(ms) > 2 {
			t.Fatalf("partition %d markers %v", p, ms)
		}
		for _, m := range ms {
			if m != "C:1" {
				t.Errorf("partition %d markers %v", p, ms)
			}
		}
	}
	if groups.calls.Load() != 1 {
		t.Errorf("group offsets resolved %d times", groups.calls.Load())
	}
	// The client retries EndTxn: the same answer.
	if code := c2.EndTxn(ctx, "r", init.ProducerID, init.Epoch, true); code != 0 {
		t.Errorf("retried end: %d", code)
	}

	// A transaction past its timeout: the sweep aborts it and bumps the
	// epoch; the producer's EndTxn is fenced.
	now := time.Now()
	c2.now = func() time.Time { return now }
	if r := c2.AddPartitions(ctx, "r", init.ProducerID, init.Epoch, []Partition{{"rt", 0}}); r.Code != 0 || r.Seq != 2 {
		t.Fatalf("second add: %+v", r)
	}
	c2.now = func() time.Time { return now.Add(61 * time.Second) }
	c2.Sweep(ctx)
	if d := c2.Describe(ctx, "r"); d.State != CompleteAbort || d.Epoch != init.Epoch+1 {
		t.Fatalf("after the timeout: %+v", d)
	}
	if ms := markers(t, cl, "rt", 0); ms[len(ms)-1] != "A:2" {
		t.Errorf("markers %v", ms)
	}
	if code := c2.EndTxn(ctx, "r", init.ProducerID, init.Epoch, true); code != kerr.ProducerFenced.Code {
		t.Errorf("end after the timeout: %d", code)
	}
	if r := c2.InitProducerID(ctx, InitParams{ID: "r", TimeoutMs: 60000, ProducerID: -1, Epoch: -1}); r.Code != 0 || r.ProducerID != init.ProducerID || r.Epoch != init.Epoch+2 {
		t.Errorf("init after the timeout: %+v", r)
	}
}

// TestGateOrdersEndTxn: EndTxn waits for the producer's batches in flight;
// a batch arriving once EndTxn started is refused; after it, the partition
// must be added again.
func TestGateOrdersEndTxn(t *testing.T) {
	g := NewGate(10)
	p := Partition{"t", 0}
	g.Set("x", View{ProducerID: 7, Epoch: 2, Open: true, Seq: 3, MarkEpoch: 2, Parts: []Partition{p}})
	if _, _, code := g.Admit(7, 2, Partition{"t", 1}); code != kerr.InvalidTxnState.Code {
		t.Errorf("partition not added: %d", code)
	}
	if _, _, code := g.Admit(7, 3, p); code != kerr.ProducerFenced.Code {
		t.Errorf("newer epoch: %d", code)
	}
	mark, release, code := g.Admit(7, 2, p)
	if code != 0 || mark != (records.TxnMark{ProducerID: 7, Epoch: 2, Seq: 3}) {
		t.Fatalf("admit: %+v %d", mark, code)
	}
	ended := make(chan func())
	go func() {
		done, err := g.End(context.Background(), 7)
		if err != nil {
			t.Error(err)
		}
		ended <- done
	}()
	// End is waiting for the batch in flight: a new batch is refused
	// (ending is set before End waits).
	embedtest.WaitFor(t, 5*time.Second, "EndTxn started", func() bool {
		_, r, code := g.Admit(7, 2, p)
		if r != nil { // admitted before End started: written at once
			r()
		}
		return code == kerr.InvalidTxnState.Code
	})
	select {
	case <-ended:
		t.Fatal("End returned with a batch in flight")
	default:
	}
	release()
	done := <-ended
	done()
	if _, _, code := g.Admit(7, 2, p); code != kerr.InvalidTxnState.Code {
		t.Errorf("after EndTxn: %d", code)
	}
}

// TestGateRecheck: what the coordinator says later only ever closes what
// the gate admits: a newer epoch (a new instance initialised through
// another sidecar) or another producer id fences, a later transaction
// closes the open one, and a stale View (older than an AddPartitionsToTxn
// answered meanwhile) changes nothing. Due lets one caller revalidate per
// interval.
func TestGateRecheck(t *testing.T) {
	p := Partition{"t", 0}
	open := View{ProducerID: 7, Epoch: 2, Open: true, Seq: 3, MarkEpoch: 2, Parts: []Partition{p}}
	admit := func(g *Gate) int16 {
		_, r, code := g.Admit(7, 2, p)
		if r != nil {
			r()
		}
		return code
	}
	cases := []struct {
		name string
		v    View
		want int16
	}{
		{"same", open, 0},
		{"stale", View{ProducerID: 7, Epoch: 2, Open: false, Seq: 2, MarkEpoch: 2}, 0},
		{"fenced", View{ProducerID: 7, Epoch: 4, Seq: 3, MarkEpoch: 2}, kerr.InvalidProducerEpoch.Code},
		{"new producer id", View{ProducerID: 8, Epoch: 0}, kerr.InvalidProducerEpoch.Code},
		{"ended", View{ProducerID: 7, Epoch: 2, Open: false, Seq: 3, MarkEpoch: 2}, kerr.InvalidTxnState.Code},
		{"later", View{ProducerID: 7, Epoch: 2, Open: true, Seq: 4, MarkEpoch: 2}, kerr.InvalidTxnState.Code},
	}
	for _, c := range cases {
		g := NewGate(10)
		g.Set("x", open)
		g.Recheck(7, c.v)
		if got := admit(g); got != c.want {
			t.Errorf("%s: admit %d, want %d", c.name, got, c.want)
		}
	}
	g := NewGate(10)
	g.Set("x", open)
	if g.Due(7, time.Hour) || g.Due(7, 0) || g.Due(8, time.Nanosecond) {
		t.Fatal("due while fresh, off, or unknown")
	}
	embedtest.WaitFor(t, 5*time.Second, "the view ages", func() bool { return g.Due(7, time.Millisecond) })
	if g.Due(7, time.Hour) {
		t.Error("due again right after a caller took the check")
	}
}
