package bridge_test

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestTxnV2Raw: transaction protocol v2 (KIP-890 part 2) at the wire, as a
// Kafka 4.x client speaks it once ApiVersions finalizes transaction.version
// 2: Produce v12 with no AddPartitionsToTxn adds its partitions to the
// transaction; EndTxn v5 commits and answers the next epoch; a write of the
// committed transaction arriving late (the old epoch) is refused and never
// written; a retried EndTxn with the old epoch gets the same answer;
// TxnOffsetCommit v5 with no AddOffsetsToTxn (and v6, naming the topic by
// id) commits the group's offsets with the transaction; an abort, and an abort with nothing open, move the
// epoch on too. A read_committed consumer reads the committed records once
// and the aborted ones never.
func TestTxnV2Raw(t *testing.T) {
	s := startStack(t)
	ctx := txnCtx(t)
	const topic, group = "txv2", "g-txv2"
	if _, err := kadm.NewClient(s.kgoClient(t)).CreateTopic(ctx, 3, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	r := dialRaw(t, s.Addr)

	av := r.do(kmsg.NewPtrApiVersionsRequest(), 4).(*kmsg.ApiVersionsResponse)
	if len(av.FinalizedFeatures) != 1 || av.FinalizedFeatures[0].Name != "transaction.version" ||
		av.FinalizedFeatures[0].MinVersionLevel != 2 || av.FinalizedFeatures[0].MaxVersionLevel != 2 || av.FinalizedFeaturesEpoch < 0 ||
		len(av.SupportedFeatures) != 1 || av.SupportedFeatures[0].MinVersion != 0 || av.SupportedFeatures[0].MaxVersion != 2 {
		t.Fatalf("features: supported %+v finalized %+v epoch %d", av.SupportedFeatures, av.FinalizedFeatures, av.FinalizedFeaturesEpoch)
	}

	id := "tx-v2"
	ip := kmsg.NewPtrInitProducerIDRequest()
	ip.TransactionalID, ip.TransactionTimeoutMillis = &id, 60000
	iresp := r.do(ip, 5).(*kmsg.InitProducerIDResponse)
	if iresp.ErrorCode != 0 {
		t.Fatalf("init: %+v", iresp)
	}
	pid, e0 := iresp.ProducerID, iresp.ProducerEpoch
	produce := func(partition, seq int32, ep int16, v string) int16 {
		t.Helper()
		req := kmsg.NewPtrProduceRequest()
		req.TransactionID, req.Acks, req.TimeoutMillis = &id, -1, 10000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = partition, txnBatch(pid, ep, seq, v)
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return r.do(req, 12).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
	}
	end := func(ep int16, commit bool) *kmsg.EndTxnResponse {
		t.Helper()
		req := kmsg.NewPtrEndTxnRequest()
		req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = id, pid, ep, commit
		return r.do(req, 5).(*kmsg.EndTxnResponse)
	}
	describe := func() kmsg.DescribeTransactionsResponseTransactionState {
		t.Helper()
		req := kmsg.NewPtrDescribeTransactionsRequest()
		req.TransactionalIDs = []string{id}
		return r.do(req, 0).(*kmsg.DescribeTransactionsResponse).TransactionStates[0]
	}

	// Transaction 1, committed: two partitions, no AddPartitionsToTxn.
	if c := produce(0, 0, e0, "c1"); c != 0 {
		t.Fatalf("produce v12 c1: %s", kerr.ErrorForCode(c))
	}
	if c := produce(1, 0, e0, "c2"); c != 0 {
		t.Fatalf("produce v12 c2: %s", kerr.ErrorForCode(c))
	}
	if d := describe(); d.State != "Ongoing" || len(d.Topics) != 1 || !slices.Equal(d.Topics[0].Partitions, []int32{0, 1}) {
		t.Errorf("describe after the produces: %+v", d)
	}
	// AddPartitionsToTxn v4/v5 (the brokers' batched form), as Kafka 4.4
	// answers it: VerifyOnly, then an add.
	batch := func(v int16, ep int16, verify bool, partition int32) int16 {
		t.Helper()
		req := kmsg.NewPtrAddPartitionsToTxnRequest()
		tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
		tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch, tx.VerifyOnly = id, pid, ep, verify
		tt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
		tt.Topic, tt.Partitions = topic, []int32{partition}
		tx.Topics = append(tx.Topics, tt)
		req.Transactions = append(req.Transactions, tx)
		resp := r.do(req, v).(*kmsg.AddPartitionsToTxnResponse)
		if resp.ErrorCode != 0 || len(resp.Transactions) != 1 {
			t.Fatalf("add v%d: %+v", v, resp)
		}
		return resp.Transactions[0].Topics[0].Partitions[0].ErrorCode
	}
	if c := batch(4, e0, true, 0); c != 0 {
		t.Errorf("verify v4 of an added partition: %s", kerr.ErrorForCode(c))
	}
	if c := batch(4, e0, true, 2); c != kerr.TransactionAbortable.Code {
		t.Errorf("verify v4 of a partition not added: %s", kerr.ErrorForCode(c))
	}
	if c := batch(5, e0-1, true, 0); c != kerr.ProducerFenced.Code {
		t.Errorf("verify v5 with an older epoch: %s", kerr.ErrorForCode(c))
	}
	// TxnOffsetCommit v5 without AddOffsetsToTxn.
	tc := kmsg.NewPtrTxnOffsetCommitRequest()
	tc.TransactionalID, tc.Group, tc.ProducerID, tc.ProducerEpoch, tc.Generation = id, group, pid, e0, -1
	tct := kmsg.NewTxnOffsetCommitRequestTopic()
	tct.Topic = topic
	tp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	tp.Offset = 7
	tct.Partitions = append(tct.Partitions, tp)
	tc.Topics = append(tc.Topics, tct)
	if c := r.do(tc, 5).(*kmsg.TxnOffsetCommitResponse).Topics[0].Partitions[0].ErrorCode; c != 0 {
		t.Fatalf("txn offset commit v5: %s", kerr.ErrorForCode(c))
	}
	// TxnOffsetCommit v6 names topics by id: the topic's own, and one no
	// topic has (UNKNOWN_TOPIC_ID, as OffsetCommit v10).
	td, err := kadm.NewClient(s.kgoClient(t)).ListTopics(ctx, topic)
	if err != nil || td[topic].Err != nil {
		t.Fatalf("metadata: %v %v", err, td[topic].Err)
	}
	tc6 := kmsg.NewPtrTxnOffsetCommitRequest()
	tc6.TransactionalID, tc6.Group, tc6.ProducerID, tc6.ProducerEpoch, tc6.Generation = id, group, pid, e0, -1
	for _, tid := range [][16]byte{td[topic].ID, {0xde, 0xad}} {
		t6 := kmsg.NewTxnOffsetCommitRequestTopic()
		t6.TopicID = tid
		p6 := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		p6.Partition, p6.Offset = 1, 9
		t6.Partitions = append(t6.Partitions, p6)
		tc6.Topics = append(tc6.Topics, t6)
	}
	r6 := r.do(tc6, 6).(*kmsg.TxnOffsetCommitResponse)
	if len(r6.Topics) != 2 || r6.Topics[0].TopicID != td[topic].ID || r6.Topics[0].Partitions[0].ErrorCode != 0 ||
		r6.Topics[1].Partitions[0].ErrorCode != kerr.UnknownTopicID.Code {
		t.Fatalf("txn offset commit v6: %+v", r6.Topics)
	}
	if c := end(e0-1, true).ErrorCode; c != kerr.ProducerFenced.Code {
		t.Errorf("end with an older epoch: %s", kerr.ErrorForCode(c))
	}
	e1 := e0 + 1
	if er := end(e0, true); er.ErrorCode != 0 || er.ProducerID != pid || er.ProducerEpoch != e1 {
		t.Fatalf("end v5 commit: %+v, want producer %d epoch %d", er, pid, e1)
	}
	if er := end(e0, true); er.ErrorCode != 0 || er.ProducerID != pid || er.ProducerEpoch != e1 {
		t.Errorf("retried end v5 commit (old epoch): %+v", er)
	}
	if c := end(e0, false).ErrorCode; c != kerr.InvalidTxnState.Code {
		t.Errorf("abort after the commit (old epoch): %s", kerr.ErrorForCode(c))
	}
	// KIP-890's hanging transaction: the committed transaction's late write
	// carries the old epoch and is refused; it never joins the next one.
	if c := produce(0, 1, e0, "late"); c != kerr.InvalidProducerEpoch.Code {
		t.Errorf("late produce of the committed transaction: %s", kerr.ErrorForCode(c))
	}
	if c := end(e1, true).ErrorCode; c != kerr.InvalidTxnState.Code {
		t.Errorf("commit with nothing open: %s", kerr.ErrorForCode(c))
	}

	// Transaction 2, aborted.
	if c := produce(0, 0, e1, "a1"); c != 0 {
		t.Fatalf("produce v12 a1: %s", kerr.ErrorForCode(c))
	}
	e2 := e1 + 1
	if er := end(e1, false); er.ErrorCode != 0 || er.ProducerEpoch != e2 {
		t.Fatalf("end v5 abort: %+v", er)
	}
	if c := produce(0, 1, e1, "late-aborted"); c != kerr.InvalidProducerEpoch.Code {
		t.Errorf("late produce of the aborted transaction: %s", kerr.ErrorForCode(c))
	}
	// An abort with nothing open (the client cannot know whether a failed
	// produce added a partition): accepted, the epoch moves on.
	if er := end(e2, false); er.ErrorCode != 0 || er.ProducerID != pid || er.ProducerEpoch != e2+1 {
		t.Errorf("abort with nothing open: %+v", er)
	}
	if d := describe(); d.State != "CompleteAbort" || d.ProducerEpoch != e2+1 {
		t.Errorf("describe at the end: %+v", d)
	}

	// Transaction 3, committed at the newest epoch.
	e3 := e2 + 1
	if c := produce(1, 0, e3, "c3"); c != 0 {
		t.Fatalf("produce v12 c3: %s", kerr.ErrorForCode(c))
	}
	if er := end(e3, true); er.ErrorCode != 0 || er.ProducerEpoch != e3+1 {
		t.Fatalf("end v5 commit 3: %+v", er)
	}

	got := readAll(t, s, topic, kgo.ReadCommitted(), 3)
	slices.Sort(got)
	if !slices.Equal(got, []string{"c1", "c2", "c3"}) {
		t.Errorf("read_committed: %v", got)
	}
	var p0 []string
	for _, m := range txnMessages(t, s, topic, 0) {
		if m.ctl != 0 {
			m.value = string(rune(m.ctl))
		}
		p0 = append(p0, m.value)
	}
	if want := []string{"c1", "C", "a1", "A"}; !slices.Equal(p0, want) {
		t.Errorf("partition 0 in iggy: %q, want %q (no late write)", p0, want)
	}
	off, err := kadm.NewClient(s.kgoClient(t)).FetchOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := off.Lookup(topic, 0); !ok || o.At != 7 {
		t.Errorf("group offset committed with transaction 1: %+v %v", o, ok)
	}
	if o, ok := off.Lookup(topic, 1); !ok || o.At != 9 {
		t.Errorf("group offset committed by id (v6) with transaction 1: %+v %v", o, ok)
	}
}
