package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kversion"
)

// Consume-transform-produce in transactions (issue 25), the scenario every
// client runs on every target (txnCTP): an input topic of one partition
// holds ctpInputs plain records v00..v19 (franz-go, not transactional). The
// client, a member of a fresh consumer group reading the input at
// read_committed, runs two transactions, each consuming 10 input records,
// producing "out-" + value to an output topic of 2 partitions (both
// partitions in each transaction) and adding the group's offsets to the
// transaction (AddOffsetsToTxn, TxnOffsetCommit): the first commits (the
// group's offset 10), the second aborts (offset 20 dropped with it).
// Checked afterwards: a read_committed consumer of the output reads
// out-v00..out-v09 once each and none of the aborted transaction's records
// (the client's own consumer where the test has one, and franz-go's), a
// read_uncommitted one reads all 20, and the group's committed offset of
// the input is 10 (OffsetFetch with require_stable).

const (
	ctpInputs = 20
	ctpPerTxn = 10
)

// ctpTopics are one run's topics and group.
type ctpTopics struct {
	in, out, group, txid string
}

// ctpSetup creates the input (filled) and output topics of one run.
func ctpSetup(t *testing.T, tg Target, prefix string) ctpTopics {
	t.Helper()
	c := ctpTopics{in: uniqueTopic(prefix + "-in"), out: uniqueTopic(prefix + "-out"), group: uniqueTopic(prefix + "-group"), txid: uniqueTopic(prefix + "-txid")}
	createTopic(t, tg, c.in, 1)
	createTopic(t, tg, c.out, 2)
	ctx := testCtx(t, 30*time.Second)
	pr := newKgo(t, tg, kgo.DefaultProduceTopic(c.in))
	var recs []*kgo.Record
	for i := range ctpInputs {
		recs = append(recs, &kgo.Record{Value: fmt.Appendf(nil, "v%02d", i)})
	}
	if err := pr.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("%s: fill %s: %v", tg.Name, c.in, err)
	}
	return c
}

// ctpWantCommitted is what a read_committed reader of the output must read:
// the first transaction's records, once each.
func ctpWantCommitted() []string {
	var out []string
	for i := range ctpPerTxn {
		out = append(out, fmt.Sprintf("out-v%02d", i))
	}
	return out
}

// ctpCheck checks the output with franz-go at both isolation levels and the
// group's committed offset.
func ctpCheck(t *testing.T, tg Target, c ctpTopics) {
	t.Helper()
	got := kgoReadValues(t, tg, c.out, kgo.ReadCommitted(), ctpPerTxn)
	slices.Sort(got)
	if want := ctpWantCommitted(); !slices.Equal(got, want) {
		t.Errorf("%s: franz-go read_committed read %v, want %v once each", tg.Name, got, want)
	}
	if all := kgoReadValues(t, tg, c.out, kgo.ReadUncommitted(), ctpInputs); len(all) != ctpInputs {
		t.Errorf("%s: franz-go read_uncommitted read %d records (%v), want the %d of both transactions", tg.Name, len(all), all, ctpInputs)
	}
	ctx := testCtx(t, 30*time.Second)
	adm := kadm.NewClient(newKgo(t, tg))
	offs, err := adm.FetchOffsets(kadm.RequireStable(ctx), c.group)
	if err != nil {
		t.Fatalf("%s: OffsetFetch %s: %v", tg.Name, c.group, err)
	}
	if o, ok := offs.Lookup(c.in, 0); !ok || o.At != ctpPerTxn || o.Err != nil {
		t.Errorf("%s: group %s committed %+v (found %v) for %s/0, want offset %d (the committed transaction's)", tg.Name, c.group, o, ok, c.in, ctpPerTxn)
	}
}

// kgoReadValues reads every partition of topic from the start at the given
// isolation level until it has n values, then for one more second (to see
// anything it must not read).
func kgoReadValues(t *testing.T, tg Target, topic string, iso kgo.IsolationLevel, n int) []string {
	t.Helper()
	cl := newKgo(t, tg, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(iso), kgo.FetchMaxWait(200*time.Millisecond))
	var got []string
	deadline := time.Now().Add(30 * time.Second)
	var extra time.Time
	for time.Now().Before(deadline) && (extra.IsZero() || time.Now().Before(extra)) {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		fs := cl.PollFetches(ctx)
		fs.EachError(func(_ string, _ int32, err error) {
			if ctx.Err() == nil {
				t.Errorf("%s: read %s: %v", tg.Name, topic, err)
			}
		})
		cancel()
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
		if len(got) >= n && extra.IsZero() {
			extra = time.Now().Add(time.Second)
		}
	}
	return got
}

// TestTxnGroupTransactSession: the scenario with franz-go's
// GroupTransactSession (transaction protocol v1 on every target: what the
// sidecar serves), on every target, kfake included.
func TestTxnGroupTransactSession(t *testing.T) {
	for _, tg := range targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			c := ctpSetup(t, tg, "ctp-kgo")
			ctx := testCtx(t, 90*time.Second)
			sess, err := kgo.NewGroupTransactSession(kgo.SeedBrokers(tg.Bootstrap), kgo.MaxVersions(txnV1Versions()),
				kgo.TransactionalID(c.txid), kgo.ConsumerGroup(c.group), kgo.ConsumeTopics(c.in),
				kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
				kgo.DefaultProduceTopic(c.out), kgo.RecordPartitioner(kgo.ManualPartitioner()),
				kgo.FetchMaxWait(200*time.Millisecond), kgo.RequestTimeoutOverhead(5*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			defer sess.Close()
			for i, try := range []kgo.TransactionEndTry{kgo.TryCommit, kgo.TryAbort} {
				if err := sess.Begin(); err != nil {
					t.Fatalf("%s: begin %d: %v", tg.Name, i, err)
				}
				got := 0
				for got < ctpPerTxn && ctx.Err() == nil {
					fs := sess.PollRecords(ctx, ctpPerTxn-got)
					fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("%s: poll: %v", tg.Name, err) })
					fs.EachRecord(func(r *kgo.Record) {
						sess.Produce(ctx, &kgo.Record{Partition: int32(got % 2), Value: append([]byte("out-"), r.Value...)}, func(_ *kgo.Record, err error) {
							if err != nil {
								t.Errorf("%s: produce: %v", tg.Name, err)
							}
						})
						got++
					})
				}
				if got != ctpPerTxn {
					t.Fatalf("%s: transaction %d consumed %d records, want %d", tg.Name, i, got, ctpPerTxn)
				}
				// Flushed before End: the aborted transaction's records reach
				// the broker (End aborts what is still buffered).
				if err := sess.Client().Flush(ctx); err != nil {
					t.Fatalf("%s: flush %d: %v", tg.Name, i, err)
				}
				committed, err := sess.End(ctx, try)
				if err != nil {
					t.Fatalf("%s: end %d (%v): %v", tg.Name, i, try, err)
				}
				if committed != bool(try) {
					t.Fatalf("%s: transaction %d: committed %v, asked %v", tg.Name, i, committed, try)
				}
			}
			sess.Close()
			ctpCheck(t, tg, c)
		})
	}
}

// txnV1Versions caps franz-go at transaction protocol v1 (Produce v11,
// AddPartitionsToTxn v3, EndTxn v4): what the sidecar serves; Kafka 4.x
// switches a transaction to v2 from Produce v12 / EndTxn v5 on.
func txnV1Versions() *kversion.Versions {
	vs := kversion.Stable()
	vs.SetMaxKeyVersion(0, 11)
	vs.SetMaxKeyVersion(24, 3)
	vs.SetMaxKeyVersion(26, 4)
	return vs
}
