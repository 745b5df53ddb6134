package bridge_test

import (
	"context"
	"encoding/binary"
	"hash/crc32"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
	"github.com/kafka-iggy/kafka-iggy/codec/records"
)

// iggyTxnMsg is one Iggy message of a topic written by transactions: a record
// (value) or a marker (ctl 'C'/'A'), with its transaction mark.
type iggyTxnMsg struct {
	value string
	ctl   byte
	mark  records.TxnMark
	hasT  bool
}

// txnMessages reads an Iggy partition and classifies every message by its
// kafka.t and kafka.ctl headers.
func txnMessages(t *testing.T, s *stack, topic string, partition uint32) []iggyTxnMsg {
	t.Helper()
	var out []iggyTxnMsg
	for _, m := range iggyMessages(t, s.Client, iggy.TopicRef{Stream: "kafka", Topic: topic}, partition) {
		var tm iggyTxnMsg
		it := icodec.NewHeaderIter(m.Headers)
		for it.Next() {
			_, k := it.Key()
			_, v := it.Value()
			switch string(k) {
			case records.HeaderTxn:
				tm.mark, tm.hasT = records.ParseTxnMark(v)
			case records.HeaderControl:
				tm.ctl = v[0]
			}
		}
		if tm.ctl == 0 {
			tm.value = string(m.Payload)
		}
		out = append(out, tm)
	}
	return out
}

func txnCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// txnV1 caps a franz-go client at transaction protocol v1 (it then sends
// AddPartitionsToTxn and AddOffsetsToTxn, and EndTxn v4).
func txnV1() kgo.Opt {
	vs := kversion.Stable()
	vs.SetMaxKeyVersion(0, 11)
	vs.SetMaxKeyVersion(26, 4)
	vs.SetMaxKeyVersion(28, 4)
	return kgo.MaxVersions(vs)
}

// TestTxnCommitAbortKgo: a franz-go transactional producer commits one
// transaction and aborts the next; in Iggy every record carries kafka.t
// naming its transaction and each transaction ends with one marker;
// DescribeTransactions and ListTransactions show the id. Under transaction
// protocol v1 the epoch stays; under v2 (franz-go's choice once ApiVersions
// finalizes transaction.version 2) each EndTxn moves it on.
func TestTxnCommitAbortKgo(t *testing.T) {
	t.Run("v1", func(t *testing.T) { txnCommitAbort(t, 1) })
	t.Run("v2", func(t *testing.T) { txnCommitAbort(t, 2) })
}

func txnCommitAbort(t *testing.T, tv int) {
	s := startStack(t)
	s.Bridge.Start()
	t.Cleanup(s.Bridge.Close)
	ctx := txnCtx(t)
	opts := []kgo.Opt{kgo.TransactionalID("tx-a"), kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic("txa")}
	if tv == 1 {
		opts = append(opts, txnV1())
	}
	cl := s.kgoClient(t, opts...)

	run := func(values []string, commit kgo.TransactionEndTry) {
		t.Helper()
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for _, v := range values {
			if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
				t.Fatalf("produce %s: %v", v, err)
			}
		}
		if err := cl.EndTransaction(ctx, commit); err != nil {
			t.Fatalf("end: %v", err)
		}
	}
	run([]string{"c1", "c2", "c3"}, kgo.TryCommit)
	run([]string{"a1", "a2"}, kgo.TryAbort)
	pid, epoch, err := cl.ProducerID(ctx)
	if err != nil {
		t.Fatal(err)
	}

	e1, e2 := epoch, epoch // v1: one epoch
	if tv == 2 {
		e1, e2 = epoch-2, epoch-1
	}
	got := txnMessages(t, s, "txa", 0)
	want := []iggyTxnMsg{
		{value: "c1", mark: records.TxnMark{ProducerID: pid, Epoch: e1, Seq: 1}, hasT: true},
		{value: "c2", mark: records.TxnMark{ProducerID: pid, Epoch: e1, Seq: 1}, hasT: true},
		{value: "c3", mark: records.TxnMark{ProducerID: pid, Epoch: e1, Seq: 1}, hasT: true},
		{ctl: 'C', mark: records.TxnMark{ProducerID: pid, Epoch: e1, Seq: 1}, hasT: true},
		{value: "a1", mark: records.TxnMark{ProducerID: pid, Epoch: e2, Seq: 2}, hasT: true},
		{value: "a2", mark: records.TxnMark{ProducerID: pid, Epoch: e2, Seq: 2}, hasT: true},
		{ctl: 'A', mark: records.TxnMark{ProducerID: pid, Epoch: e2, Seq: 2}, hasT: true},
	}
	if len(got) != len(want) {
		t.Fatalf("iggy holds %d messages, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("message %d: %+v, want %+v", i, got[i], want[i])
		}
	}

	dreq := kmsg.NewPtrDescribeTransactionsRequest()
	dreq.TransactionalIDs = []string{"tx-a", "unknown"}
	dresp, err := dreq.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(dresp.TransactionStates) != 2 {
		t.Fatalf("describe: %+v", dresp)
	}
	if d := dresp.TransactionStates[0]; d.ErrorCode != 0 || d.State != "CompleteAbort" || d.ProducerID != pid || d.ProducerEpoch != epoch {
		t.Errorf("describe tx-a: %+v", d)
	}
	if d := dresp.TransactionStates[1]; d.ErrorCode != kerr.TransactionalIDNotFound.Code {
		t.Errorf("describe unknown: %+v", d)
	}
	lreq := kmsg.NewPtrListTransactionsRequest()
	lresp, err := lreq.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(lresp.TransactionStates) != 1 || lresp.TransactionStates[0].TransactionalID != "tx-a" || lresp.TransactionStates[0].TransactionState != "CompleteAbort" {
		t.Errorf("list: %+v", lresp)
	}
	lreq.StateFilters = []string{"Ongoing", "Bogus"}
	if lresp, err = lreq.RequestWith(ctx, cl); err != nil || len(lresp.TransactionStates) != 0 || len(lresp.UnknownStateFilters) != 1 {
		t.Errorf("list Ongoing: %+v %v", lresp, err)
	}
}

// TestTxnFencingKgo: a second producer with the same transactional id
// fences the first: the first's open transaction is aborted (marker A), its
// next produce and its EndTxn are refused, and only the second's records
// are committed.
func TestTxnFencingKgo(t *testing.T) {
	s := startStack(t)
	ctx := txnCtx(t)
	p1 := s.kgoClient(t, kgo.TransactionalID("tx-f"), kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic("txf"))
	if err := p1.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := p1.ProduceSync(ctx, &kgo.Record{Value: []byte("zombie-1")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	pid1, epoch1, _ := p1.ProducerID(ctx)

	p2 := s.kgoClient(t, kgo.TransactionalID("tx-f"), kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic("txf"))
	if err := p2.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := p2.ProduceSync(ctx, &kgo.Record{Value: []byte("new-1")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	pid2, epoch2, _ := p2.ProducerID(ctx)
	if pid2 != pid1 || epoch2 <= epoch1 {
		t.Fatalf("second producer: id %d epoch %d, first %d/%d", pid2, epoch2, pid1, epoch1)
	}

	if err := p1.ProduceSync(ctx, &kgo.Record{Value: []byte("zombie-2")}).FirstErr(); err == nil {
		t.Error("the fenced producer's produce succeeded")
	}
	// The fenced producer's EndTxn, as it sends it.
	end := kmsg.NewPtrEndTxnRequest()
	end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = "tx-f", pid1, epoch1, true
	if resp, err := end.RequestWith(ctx, p2); err != nil || resp.ErrorCode != kerr.ProducerFenced.Code {
		t.Errorf("fenced EndTxn: %+v %v", resp, err)
	}
	if err := p2.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}

	got := txnMessages(t, s, "txf", 0)
	if len(got) != 4 {
		t.Fatalf("iggy holds %+v", got)
	}
	zm := records.TxnMark{ProducerID: pid1, Epoch: epoch1, Seq: 1}
	if got[0].value != "zombie-1" || got[0].mark != zm || got[1].ctl != 'A' || got[1].mark != zm {
		t.Errorf("the fenced transaction: %+v", got[:2])
	}
	nm := records.TxnMark{ProducerID: pid2, Epoch: epoch2, Seq: 2}
	if got[2].value != "new-1" || got[2].mark != nm || got[3].ctl != 'C' || got[3].mark != nm {
		t.Errorf("the new transaction: %+v", got[2:])
	}
}

// txnBatch is a transactional record batch of producer pid at epoch with
// base sequence seq.
func txnBatch(pid int64, epoch int16, seq int32, values ...string) []byte {
	var recs []testRecord
	for _, v := range values {
		recs = append(recs, testRecord{value: []byte(v)})
	}
	b := buildBatch(time.Now().UnixMilli(), 0x10, recs, nil, 0)
	binary.BigEndian.PutUint64(b[43:], uint64(pid))
	binary.BigEndian.PutUint16(b[51:], uint16(epoch))
	binary.BigEndian.PutUint32(b[53:], uint32(seq))
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], castagnoli))
	return b
}

// TestTxnProduceRules: at the wire, a transactional batch is admitted only
// for a partition added to the open transaction, with the current epoch;
// a produce arriving after EndTxn is refused (INVALID_TXN_STATE) and never
// written.
func TestTxnProduceRules(t *testing.T) {
	s := startStack(t)
	r := dialRaw(t, s.Addr)
	createTopic(t, r, "txr")
	id := "tx-raw"
	ip := kmsg.NewPtrInitProducerIDRequest()
	ip.TransactionalID, ip.TransactionTimeoutMillis = &id, 60000
	iresp := r.do(ip, 4).(*kmsg.InitProducerIDResponse)
	if iresp.ErrorCode != 0 {
		t.Fatalf("init: %+v", iresp)
	}
	pid, epoch := iresp.ProducerID, iresp.ProducerEpoch
	ip.TransactionTimeoutMillis = int32((16 * time.Minute).Milliseconds())
	if resp := r.do(ip, 4).(*kmsg.InitProducerIDResponse); resp.ErrorCode != kerr.InvalidTransactionTimeout.Code {
		t.Errorf("timeout above the maximum: %+v", resp)
	}

	produce := func(seq int32, ep int16, v string) int16 {
		req := kmsg.NewPtrProduceRequest()
		req.TransactionID, req.Acks, req.TimeoutMillis = &id, -1, 10000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "txr"
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = txnBatch(pid, ep, seq, v)
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return r.do(req, 9).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
	}
	if code := produce(0, epoch, "not-added"); code != kerr.InvalidTxnState.Code {
		t.Errorf("produce before AddPartitionsToTxn: %d", code)
	}
	add := kmsg.NewPtrAddPartitionsToTxnRequest()
	add.TransactionalID, add.ProducerID, add.ProducerEpoch = id, pid, epoch
	at := kmsg.NewAddPartitionsToTxnRequestTopic()
	at.Topic, at.Partitions = "txr", []int32{0}
	add.Topics = append(add.Topics, at)
	if resp := r.do(add, 3).(*kmsg.AddPartitionsToTxnResponse); resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("add: %+v", resp)
	}
	bad := *add
	bt := kmsg.NewAddPartitionsToTxnRequestTopic()
	bt.Topic, bt.Partitions = "txr", []int32{7}
	bad.Topics = append([]kmsg.AddPartitionsToTxnRequestTopic{at}, bt)
	if resp := r.do(&bad, 3).(*kmsg.AddPartitionsToTxnResponse); resp.Topics[0].Partitions[0].ErrorCode != kerr.OperationNotAttempted.Code ||
		resp.Topics[1].Partitions[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("add with a missing partition: %+v", resp)
	}
	if code := produce(0, epoch-1, "old-epoch"); code != kerr.InvalidProducerEpoch.Code {
		t.Errorf("produce with an old epoch: %d", code)
	}
	if code := produce(0, epoch, "in-txn"); code != 0 {
		t.Fatalf("produce in the transaction: %d", code)
	}
	end := kmsg.NewPtrEndTxnRequest()
	end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = id, pid, epoch, true
	if resp := r.do(end, 3).(*kmsg.EndTxnResponse); resp.ErrorCode != 0 {
		t.Fatalf("end: %+v", resp)
	}
	if resp := r.do(end, 3).(*kmsg.EndTxnResponse); resp.ErrorCode != 0 {
		t.Errorf("retried end: %+v", resp)
	}
	end.Commit = false
	if resp := r.do(end, 3).(*kmsg.EndTxnResponse); resp.ErrorCode != kerr.InvalidTxnState.Code {
		t.Errorf("abort after commit: %+v", resp)
	}
	if code := produce(1, epoch, "late"); code != kerr.InvalidTxnState.Code {
		t.Errorf("produce after EndTxn: %d", code)
	}
	got := txnMessages(t, s, "txr", 0)
	if len(got) != 2 || got[0].value != "in-txn" || got[1].ctl != 'C' {
		t.Errorf("iggy holds %+v", got)
	}
}
