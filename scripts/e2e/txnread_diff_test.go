package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// TestReadCommittedDiff (issue 25, the read side), on every target, compared
// with Apache Kafka 4.4 when it runs (KAFKA_IGGY_E2E_KAFKA=1): a franz-go
// transactional producer (protocol v1) writes a committed transaction of 3
// records, an aborted one of 2 and leaves a third of 2 open, one record per
// batch. Then, per offset, what Fetch shows (data or control, transactional
// or not), ListOffsets latest at both isolation levels, and the
// read_committed Fetch's high watermark, last stable offset, aborted
// transactions (first offsets) and the offsets it returns.
func TestReadCommittedDiff(t *testing.T) {
	got := map[string]string{}
	sidecars := map[string]bool{}
	ref := referenceTarget(t)
	for _, tg := range targets(t) {
		if tg.Reference && !tg.Kafka {
			continue // kfake's read_committed is not Kafka's reference here
		}
		t.Run(tg.Name, func(t *testing.T) {
			got[tg.Name], sidecars[tg.Name] = readCommittedShape(t, tg), tg.Sidecar
			t.Logf("%s:\n%s", tg.Name, got[tg.Name])
		})
	}
	want, ok := got[ref.Name]
	if !ok || !ref.Kafka {
		return
	}
	for name, g := range got {
		if sidecars[name] && g != want {
			t.Errorf("%s differs from %s:\n got\n%s\n want\n%s", name, ref.Name, g, want)
		}
	}
}

// txnTopic makes a one-partition topic holding, from a franz-go
// transactional producer (protocol v1, one record per batch): a committed
// transaction c0-c2 (offsets 0-2, marker 3), an aborted one a0-a1 (4-5,
// marker 6) and an open one o0-o1 (7-8); the producer stays open until the
// test ends.
func txnTopic(t *testing.T, tg Target) string {
	t.Helper()
	topic := uniqueTopic("txn-read")
	createTopic(t, tg, topic, 1)
	vs := kversion.Stable()
	vs.SetMaxKeyVersion(0, 11)
	vs.SetMaxKeyVersion(24, 3)
	vs.SetMaxKeyVersion(26, 4)
	ctx := testCtx(t, 90*time.Second)
	pr := newKgo(t, tg, kgo.MaxVersions(vs), kgo.TransactionalID(uniqueTopic("txid-read")), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	txn := func(values []string, end string) {
		if err := pr.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for _, v := range values {
			if err := pr.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
				t.Fatalf("%s: produce: %v", tg.Name, err)
			}
		}
		if end != "open" {
			if err := pr.EndTransaction(ctx, kgo.TransactionEndTry(end == "commit")); err != nil {
				t.Fatalf("%s: end transaction: %v", tg.Name, err)
			}
		}
	}
	txn([]string{"c0", "c1", "c2"}, "commit")
	txn([]string{"a0", "a1"}, "abort")
	txn([]string{"o0", "o1"}, "open")
	return topic
}

func readCommittedShape(t *testing.T, tg Target) string {
	t.Helper()
	topic := txnTopic(t, tg)
	ctx := testCtx(t, 60*time.Second)
	fv := kversion.Stable()
	fv.SetMaxKeyVersion(1, 11) // Fetch by topic name
	cl := newKgo(t, tg, kgo.MaxVersions(fv))
	var b strings.Builder
	for _, iso := range []int8{0, 1} {
		req := kmsg.NewPtrListOffsetsRequest()
		req.ReplicaID, req.IsolationLevel = -1, iso
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Timestamp = -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		p := resp.Topics[0].Partitions[0]
		fmt.Fprintf(&b, "list_offsets isolation=%d latest: code %d offset %d\n", iso, p.ErrorCode, p.Offset)
	}
	for _, iso := range []int8{0, 1} {
		req := kmsg.NewPtrFetchRequest()
		req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.IsolationLevel, req.SessionEpoch = 0, 1, 1<<20, iso, -1
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.PartitionMaxBytes, rp.LogStartOffset, rp.CurrentLeaderEpoch = 1<<20, -1, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		p := resp.Topics[0].Partitions[0]
		var aborted []int64
		for _, a := range p.AbortedTransactions {
			aborted = append(aborted, a.FirstOffset)
		}
		fmt.Fprintf(&b, "fetch isolation=%d: code %d hw %d lso %d aborted_first_offsets %v\n", iso, p.ErrorCode, p.HighWatermark, p.LastStableOffset, aborted)
		for raw := p.RecordBatches; len(raw) > 0; {
			var rb kmsg.RecordBatch
			if err := rb.ReadFrom(raw); err != nil {
				t.Fatalf("%s: batch: %v", tg.Name, err)
			}
			raw = raw[12+rb.Length:]
			kind := "data"
			if rb.Attributes&0x20 != 0 {
				kind = "control"
			}
			for o := rb.FirstOffset; o <= rb.FirstOffset+int64(rb.LastOffsetDelta); o++ {
				fmt.Fprintf(&b, "  offset %d: %s transactional=%v\n", o, kind, rb.Attributes&0x10 != 0)
			}
		}
	}
	dreq := kmsg.NewPtrDescribeProducersRequest()
	dt := kmsg.NewDescribeProducersRequestTopic()
	dt.Topic, dt.Partitions = topic, []int32{0}
	dreq.Topics = append(dreq.Topics, dt)
	dresp, err := dreq.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	for i, dt := range dresp.Topics {
		p := dt.Partitions[0]
		fmt.Fprintf(&b, "describe_producers %d: code %d producers %d", i, p.ErrorCode, len(p.ActiveProducers))
		for _, ap := range p.ActiveProducers {
			fmt.Fprintf(&b, " [last_sequence %d txn_start %d]", ap.LastSequence, ap.CurrentTxnStartOffset)
		}
		b.WriteString("\n")
	}
	return b.String()
}
