package bridge_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func txnOffsetCommit(rk *rawKafka, group, topic string, pid int64, epoch int16, partition int32, offset int64) int16 {
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = "tx", group, pid, epoch
	req.Generation = -1
	rt := kmsg.NewTxnOffsetCommitRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset = partition, offset
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := rk.do(req, 3).(*kmsg.TxnOffsetCommitResponse)
	return resp.Topics[0].Partitions[0].ErrorCode
}

// offsetFetchStable reads a group's offset of partition 0 with OffsetFetch
// v7 (require_stable as given).
func offsetFetchStable(rk *rawKafka, group, topic string, stable bool) (int64, int16) {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group, req.RequireStable = group, stable
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic, rt.Partitions = topic, []int32{0}
	req.Topics = append(req.Topics, rt)
	resp := rk.do(req, 7).(*kmsg.OffsetFetchResponse)
	p := resp.Topics[0].Partitions[0]
	return p.Offset, p.ErrorCode
}

// TestTxnOffsetCommit: offsets a transaction commits for a group stay
// invisible (require_stable: UNSTABLE_OFFSET_COMMIT) until the coordinator
// resolves them; commit stores them, abort drops them, resolving twice
// changes nothing.
func TestTxnOffsetCommit(t *testing.T) {
	s := startStack(t)
	rk := dialRaw(t, s.Addr)
	const topic, group = "txn-offsets", "txn-group"
	createTopic(t, rk, topic)
	rk.produceValues(topic, 0, []byte("a"), []byte("b"), []byte("c"), []byte("d"), []byte("e"))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const pid = int64(1<<62 | 7)

	if code := txnOffsetCommit(rk, group, topic, pid, 1, 0, 3); code != 0 {
		t.Fatalf("txn offset commit: %d", code)
	}
	if off, code := offsetFetchStable(rk, group, topic, true); off != -1 || code != 88 {
		t.Fatalf("require_stable while pending: offset %d code %d, want -1 and UNSTABLE_OFFSET_COMMIT (88)", off, code)
	}
	if off, code := offsetFetchStable(rk, group, topic, false); off != -1 || code != 0 {
		t.Fatalf("pending offsets visible: offset %d code %d", off, code)
	}
	if err := s.Bridge.ResolveTxnOffsets(ctx, group, pid, 1, true); err != nil {
		t.Fatal(err)
	}
	if off, code := offsetFetchStable(rk, group, topic, true); off != 3 || code != 0 {
		t.Fatalf("after commit: offset %d code %d, want 3", off, code)
	}

	// The next transaction aborts: its offset never shows.
	if code := txnOffsetCommit(rk, group, topic, pid, 2, 0, 5); code != 0 {
		t.Fatalf("txn offset commit: %d", code)
	}
	if code := txnOffsetCommit(rk, group, topic, pid, 1, 0, 4); code != 47 {
		t.Fatalf("an older epoch: code %d, want INVALID_PRODUCER_EPOCH (47)", code)
	}
	for range 2 { // resolving again is harmless
		if err := s.Bridge.ResolveTxnOffsets(ctx, group, pid, 2, false); err != nil {
			t.Fatal(err)
		}
	}
	if off, code := offsetFetchStable(rk, group, topic, true); off != 3 || code != 0 {
		t.Fatalf("after abort: offset %d code %d, want 3", off, code)
	}
	if err := s.Bridge.ResolveTxnOffsets(ctx, group, pid, 2, true); err != nil {
		t.Fatal(err)
	}
	if off, _ := offsetFetchStable(rk, group, topic, false); off != 3 {
		t.Fatalf("a commit after the abort stored %d", off)
	}

	if code := txnOffsetCommit(rk, "", topic, pid, 3, 0, 1); code != 24 {
		t.Fatalf("empty group: %d, want INVALID_GROUP_ID (24)", code)
	}
	if code := txnOffsetCommit(rk, group, "no-such-topic", pid, 3, 0, 1); code != 3 {
		t.Fatalf("unknown topic: %d, want UNKNOWN_TOPIC_OR_PARTITION (3)", code)
	}
}

// TestTxnOffsetCommitConsumerProtocolGroup: a consumer-protocol (KIP-848)
// group's member commits transactional offsets with its member epoch as the
// generation (franz-go's GroupTransactSession does): accepted with the
// current epoch, STALE_MEMBER_EPOCH with another, UNKNOWN_MEMBER_ID for a
// stranger.
func TestTxnOffsetCommitConsumerProtocolGroup(t *testing.T) {
	s := startStack(t, func(o *stackOpts) { o.bridge.Groups.InitialRebalanceDelay = 0 })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl := s.kgoClient(t)
	rk := dialRaw(t, s.Addr)
	const topic, group = "txn-offsets-848", "txn-848"
	createTopic(t, rk, topic)
	rk.produceValues(topic, 0, []byte("a"), []byte("b"), []byte("c"))
	hb := cgJoin(ctx, t, cl, group, "m1", topic)
	if hb.ErrorCode != 0 || hb.MemberEpoch <= 0 {
		t.Fatalf("join: %+v", hb)
	}
	commit := func(member string, epoch int32) int16 {
		req := kmsg.NewPtrTxnOffsetCommitRequest()
		req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = "tx", group, 1<<62|9, 0
		req.MemberID, req.Generation = member, epoch
		rt := kmsg.NewTxnOffsetCommitRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		rp.Offset = 2
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return rk.do(req, 3).(*kmsg.TxnOffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
	}
	if code := commit("m1", hb.MemberEpoch); code != 0 {
		t.Fatalf("the member's commit: %d", code)
	}
	if code := commit("m1", hb.MemberEpoch+5); code != 113 {
		t.Fatalf("another epoch: %d, want STALE_MEMBER_EPOCH (113)", code)
	}
	if code := commit("stranger", hb.MemberEpoch); code != 25 {
		t.Fatalf("a stranger: %d, want UNKNOWN_MEMBER_ID (25)", code)
	}
}

// TestTxnOffsetCommitNeverRebalanceInProgress: Kafka never answers
// REBALANCE_IN_PROGRESS to a TxnOffsetCommit, and Java's producer takes it
// as fatal (a Kafka Streams exactly_once_v2 thread went to ERROR when its
// group moved between sidecars). Where the classic check says it (here a
// group in CompletingRebalance, whose member Kafka accepts) the sidecar
// answers UNKNOWN_MEMBER_ID, which clients abort the transaction on; once
// the group is Stable the same commit is accepted.
func TestTxnOffsetCommitNeverRebalanceInProgress(t *testing.T) {
	s := grpStack(t)
	rk := dialRaw(t, s.Addr)
	const topic, group = "txn-offsets-rebalance", "txn-rebalance"
	createTopic(t, rk, topic)
	rk.produceValues(topic, 0, []byte("a"), []byte("b"))
	jr := grpJoin(t, rk, 5, grpJoinReq(group, "", nil, 10*time.Second, "m"))
	if jr.ErrorCode != 0 {
		t.Fatalf("join: %+v", jr)
	}
	commit := func() int16 {
		req := kmsg.NewPtrTxnOffsetCommitRequest()
		req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = "tx", group, 1<<62|11, 0
		req.MemberID, req.Generation = jr.MemberID, jr.Generation
		rt := kmsg.NewTxnOffsetCommitRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		rp.Offset = 1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return rk.do(req, 3).(*kmsg.TxnOffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
	}
	if code := commit(); code != 25 {
		t.Fatalf("commit while CompletingRebalance: %d, want UNKNOWN_MEMBER_ID (25)", code)
	}
	if sr := grpSync(rk, 3, group, jr.MemberID, jr.Generation, map[string]string{jr.MemberID: "a"}); sr.ErrorCode != 0 {
		t.Fatalf("sync: %+v", sr)
	}
	if code := commit(); code != 0 {
		t.Fatalf("commit when Stable: %d", code)
	}
}
