package bridge_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// readAll reads topic from its start with a fresh franz-go consumer at
// isolation level iso until it has want records (or the deadline) and
// returns their values in order.
func readAll(t *testing.T, s *stack, topic string, iso kgo.IsolationLevel, want int) []string {
	t.Helper()
	cl := s.kgoClient(t, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(iso),
		kgo.FetchMaxWait(200*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out []string
	for len(out) < want && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) { out = append(out, string(r.Value)) })
	}
	// Anything beyond want would show in one more short poll.
	pctx, pcancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer pcancel()
	cl.PollFetches(pctx).EachRecord(func(r *kgo.Record) { out = append(out, string(r.Value)) })
	return out
}

// TestTxnReadCommittedKgo (the write side and the read side together): a
// franz-go transactional producer commits, aborts and commits; a
// read_committed consumer reads each committed record once and no aborted
// one, in order; an open transaction's records stay invisible to it until
// their commit, while a read_uncommitted consumer sees every record.
func TestTxnReadCommittedKgo(t *testing.T) {
	s := startStack(t)
	ctx := txnCtx(t)
	const topic = "txrc"
	p := s.kgoClient(t, kgo.TransactionalID("tx-rc"), kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic(topic))
	txn := func(end *kgo.TransactionEndTry, values ...string) {
		t.Helper()
		if err := p.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for _, v := range values {
			if err := p.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
				t.Fatalf("produce %s: %v", v, err)
			}
		}
		if end != nil {
			if err := p.EndTransaction(ctx, *end); err != nil {
				t.Fatal(err)
			}
		}
	}
	commit, abort := kgo.TryCommit, kgo.TryAbort
	txn(&commit, "c1", "c2", "c3")
	txn(&abort, "a1", "a2")
	txn(&commit, "c4")

	if got := readAll(t, s, topic, kgo.ReadCommitted(), 4); !slices.Equal(got, []string{"c1", "c2", "c3", "c4"}) {
		t.Errorf("read_committed: %v", got)
	}
	if got := readAll(t, s, topic, kgo.ReadUncommitted(), 6); !slices.Equal(got, []string{"c1", "c2", "c3", "a1", "a2", "c4"}) {
		t.Errorf("read_uncommitted: %v", got)
	}

	// An open transaction: invisible to read_committed until it commits.
	txn(nil, "o1")
	if got := readAll(t, s, topic, kgo.ReadCommitted(), 4); !slices.Equal(got, []string{"c1", "c2", "c3", "c4"}) {
		t.Errorf("read_committed with a transaction open: %v", got)
	}
	if err := p.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, s, topic, kgo.ReadCommitted(), 5); !slices.Equal(got, []string{"c1", "c2", "c3", "c4", "o1"}) {
		t.Errorf("read_committed after the commit: %v", got)
	}
}

// TestTxnGroupTransactSessionKgo: franz-go's GroupTransactSession consumes
// an input topic in a group and produces each record to an output topic in
// transactions that also commit the group's offsets (AddOffsetsToTxn,
// TxnOffsetCommit, resolved at EndTxn); one batch is aborted on purpose.
// Every input record reaches the output exactly once for a read_committed
// reader, and the group's committed offset is the input's end.
func TestTxnGroupTransactSessionKgo(t *testing.T) {
	s := startStack(t)
	ctx := txnCtx(t)
	const in, out, group, n = "gts-in", "gts-out", "gts-g", 30
	prod := s.kgoClient(t, kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic(in))
	for i := range n {
		if err := prod.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "v%02d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if err := prod.ProduceSync(ctx, &kgo.Record{Topic: out, Value: []byte("seed")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	sess, err := kgo.NewGroupTransactSession(kgo.SeedBrokers(s.Addr), kgo.TransactionalID("tx-gts"), kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(in), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.DefaultProduceTopic(out), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	aborted := false
	done := 0
	for done < n && ctx.Err() == nil {
		fs := sess.PollFetches(ctx)
		if err := sess.Begin(); err != nil {
			t.Fatal(err)
		}
		k := 0
		fs.EachRecord(func(r *kgo.Record) {
			k++
			sess.Produce(ctx, &kgo.Record{Value: append([]byte("out-"), r.Value...)}, nil)
		})
		try := kgo.TryCommit
		if k > 0 && !aborted { // the first batch is aborted: the group's offsets go back with it
			try, aborted = kgo.TryAbort, true
		}
		committed, err := sess.End(ctx, try)
		if err != nil {
			t.Fatalf("end: %v", err)
		}
		if committed {
			done += k
		}
	}
	got := readAll(t, s, out, kgo.ReadCommitted(), n+1)
	seen := map[string]int{}
	for _, v := range got {
		seen[v]++
	}
	for i := range n {
		if c := seen[fmt.Sprintf("out-v%02d", i)]; c != 1 {
			t.Errorf("out-v%02d read %d times (read_committed: %v)", i, c, got)
		}
	}
	adm := kadm.NewClient(s.kgoClient(t))
	offs, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := offs.Lookup(in, 0); !ok || o.At != n {
		t.Errorf("committed offset of the group: %+v %v", o, ok)
	}
}
