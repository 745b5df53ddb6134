package bridge_test

import (
	"context"
	"encoding/binary"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
	"github.com/kafka-iggy/kafka-iggy/codec/records"
	"github.com/kafka-iggy/kafka-iggy/codec/wire"
)

// txnMsg is one Iggy message of the transactions contract (codec/records/txn.go).
type txnMsg struct {
	value string
	mark  *records.TxnMark // nil: a plain record
	ctl   byte             // ControlCommit / ControlAbort: the mark's end marker
}

// sendTxnMsgs writes msgs, one Send each, in order, exactly as the contract
// says the writers and the coordinator do.
func sendTxnMsgs(t *testing.T, s *stack, topic string, msgs ...txnMsg) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i, m := range msgs {
		h := icodec.AppendHeader(nil, "kafka.v", icodec.HeaderKindRaw, []byte{1})
		payload := []byte(m.value)
		if m.ctl != 0 {
			payload = []byte{0}
			h = icodec.AppendHeader(h, records.HeaderControl, icodec.HeaderKindRaw, []byte{m.ctl})
			h = icodec.AppendHeader(h, records.HeaderTxn, icodec.HeaderKindRaw, records.AppendTxnMark(nil, *m.mark))
			h = icodec.AppendHeader(h, records.HeaderCoordEpoch, icodec.HeaderKindRaw, binary.LittleEndian.AppendUint32(nil, 3))
		} else {
			h = icodec.AppendHeader(h, "kafka.key", icodec.HeaderKindRaw, []byte("k"))
			if m.mark != nil {
				h = icodec.AppendHeader(h, records.HeaderTxn, icodec.HeaderKindRaw, records.AppendTxnMark(nil, *m.mark))
			}
		}
		ms := s.Client.NewMessages()
		if err := ms.Add(wire.U128{Lo: uint64(time.Now().UnixNano()), Hi: uint64(i)}, uint64(time.Now().UnixMicro()), payload, h); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Client.Send(ctx, iggy.TopicRef{Stream: "kafka", Topic: topic}, 0, ms); err != nil {
			t.Fatal(err)
		}
	}
}

// listLatest answers ListOffsets latest at isolation level iso.
func listLatest(t *testing.T, rk *rawKafka, topic string, iso int8) int64 {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID, req.IsolationLevel = -1, iso
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp = 0, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := rk.do(req, 7).(*kmsg.ListOffsetsResponse)
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 {
		t.Fatalf("list offsets: error %d", p.ErrorCode)
	}
	return p.Offset
}

// consumeValues reads n records with a franz-go consumer from offset 0 and
// returns their offsets and values.
func consumeValues(t *testing.T, cl *kgo.Client, n int) ([]int64, []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var offs []int64
	var vals []string
	for len(vals) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %v of %d records: %v", vals, n, ctx.Err())
		}
		fs.EachError(func(tp string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", tp, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			offs = append(offs, r.Offset)
			vals = append(vals, string(r.Value))
		})
	}
	return offs, vals
}

// TestReadCommitted: a committed, an aborted and an open transaction written
// as Iggy messages per the contract. A franz-go read_committed consumer reads
// the committed records once, the aborted never, nothing past the open
// transaction until its marker; read_uncommitted reads every record (no
// markers); ListOffsets latest is the last stable offset at read_committed,
// the high watermark at read_uncommitted; Fetch answers Kafka's fields.
func TestReadCommitted(t *testing.T) {
	s := startStack(t)
	rk := dialRaw(t, s.Addr)
	const topic = "txn-read"
	createTopic(t, rk, topic)
	a := &records.TxnMark{ProducerID: 1<<62 | 11, Epoch: 2, Seq: 1}
	b := &records.TxnMark{ProducerID: 1<<62 | 12, Epoch: 0, Seq: 1}
	c := &records.TxnMark{ProducerID: 1<<62 | 13, Epoch: 5, Seq: 4}
	sendTxnMsgs(t, s, topic,
		txnMsg{value: "p0"},                         // 0
		txnMsg{value: "a0", mark: a},                // 1
		txnMsg{value: "b0", mark: b},                // 2
		txnMsg{value: "a1", mark: a},                // 3
		txnMsg{mark: a, ctl: records.ControlCommit}, // 4
		txnMsg{value: "b1", mark: b},                // 5
		txnMsg{mark: b, ctl: records.ControlAbort},  // 6
		txnMsg{value: "p1"},                         // 7
		txnMsg{value: "c0", mark: c},                // 8: c stays open
		txnMsg{value: "p2"},                         // 9
	)

	if got := listLatest(t, rk, topic, 1); got != 8 {
		t.Fatalf("read_committed latest %d, want the last stable offset 8", got)
	}
	if got := listLatest(t, rk, topic, 0); got != 10 {
		t.Fatalf("read_uncommitted latest %d, want 10", got)
	}

	// The raw Fetch answer at read_committed.
	req := fetchReq(0, 1, 1<<20, fetchPart{topic: topic, offset: 0, maxBytes: 1 << 20})
	req.IsolationLevel = 1
	rp := rk.fetch(11, req).Topics[0].Partitions[0]
	if rp.ErrorCode != 0 || rp.HighWatermark != 10 || rp.LastStableOffset != 8 {
		t.Fatalf("fetch: code %d hw %d lso %d", rp.ErrorCode, rp.HighWatermark, rp.LastStableOffset)
	}
	if len(rp.AbortedTransactions) != 1 || rp.AbortedTransactions[0].ProducerID != b.ProducerID || rp.AbortedTransactions[0].FirstOffset != 2 {
		t.Fatalf("aborted transactions %+v, want producer %d from 2", rp.AbortedTransactions, b.ProducerID)
	}
	req.IsolationLevel = 0 // Kafka answers the last stable offset at read_uncommitted too
	if up := rk.fetch(11, req).Topics[0].Partitions[0]; up.HighWatermark != 10 || up.LastStableOffset != 8 || len(up.AbortedTransactions) != 0 {
		t.Fatalf("read_uncommitted fetch: hw %d lso %d aborted %+v", up.HighWatermark, up.LastStableOffset, up.AbortedTransactions)
	}
	var last int64 = -1
	for raw := rp.RecordBatches; len(raw) > 0; {
		var rb kmsg.RecordBatch
		if err := rb.ReadFrom(raw); err != nil {
			t.Fatal(err)
		}
		raw = raw[rb.Length+12:]
		last = rb.FirstOffset + int64(rb.LastOffsetDelta)
	}
	if last != 7 {
		t.Fatalf("read_committed fetch returned up to offset %d, want 7 (nothing at or past the LSO)", last)
	}

	// DescribeProducers: the three producers, c's transaction open at 8.
	dreq := kmsg.NewPtrDescribeProducersRequest()
	for _, tp := range []string{topic, "no-such-topic"} {
		dt := kmsg.NewDescribeProducersRequestTopic()
		dt.Topic, dt.Partitions = tp, []int32{0}
		dreq.Topics = append(dreq.Topics, dt)
	}
	dresp := rk.do(dreq, 0).(*kmsg.DescribeProducersResponse)
	if code := dresp.Topics[1].Partitions[0].ErrorCode; code != 3 {
		t.Fatalf("describe producers of an unknown topic: %d, want UNKNOWN_TOPIC_OR_PARTITION (3)", code)
	}
	dp := dresp.Topics[0].Partitions[0]
	type prod struct {
		pid       int64
		epoch, ce int32
		txnStart  int64
	}
	var gotProds []prod
	for _, p := range dp.ActiveProducers {
		gotProds = append(gotProds, prod{p.ProducerID, p.ProducerEpoch, p.CoordinatorEpoch, p.CurrentTxnStartOffset})
	}
	wantProds := []prod{{a.ProducerID, 2, 3, -1}, {b.ProducerID, 0, 3, -1}, {c.ProducerID, 5, -1, 8}}
	if dp.ErrorCode != 0 || !slices.Equal(gotProds, wantProds) {
		t.Fatalf("describe producers: code %d %+v, want %+v", dp.ErrorCode, gotProds, wantProds)
	}

	committed := s.kgoClient(t, kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxWait(200*time.Millisecond),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(0)}}))
	offs, vals := consumeValues(t, committed, 4)
	if !slices.Equal(vals, []string{"p0", "a0", "a1", "p1"}) || !slices.Equal(offs, []int64{0, 1, 3, 7}) {
		t.Fatalf("read_committed read %v at %v, want p0 a0 a1 p1 at 0 1 3 7", vals, offs)
	}

	uncommitted := s.kgoClient(t, kgo.FetchMaxWait(200*time.Millisecond),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(0)}}))
	_, uvals := consumeValues(t, uncommitted, 8)
	if !slices.Equal(uvals, []string{"p0", "a0", "b0", "a1", "b1", "p1", "c0", "p2"}) {
		t.Fatalf("read_uncommitted read %v", uvals)
	}

	// c commits: the consumer moves on past it, and the LSO reaches the end.
	sendTxnMsgs(t, s, topic, txnMsg{mark: c, ctl: records.ControlCommit}, txnMsg{value: "p3"}) // 10, 11
	offs, vals = consumeValues(t, committed, 3)
	if !slices.Equal(vals, []string{"c0", "p2", "p3"}) || !slices.Equal(offs, []int64{8, 9, 11}) {
		t.Fatalf("after the commit read_committed read %v at %v", vals, offs)
	}
	if got := listLatest(t, rk, topic, 1); got != 12 {
		t.Fatalf("read_committed latest %d after the commit, want 12", got)
	}
}
