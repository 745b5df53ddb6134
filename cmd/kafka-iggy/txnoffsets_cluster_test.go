package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafka-iggy/kafka-iggy/bridge/cluster"
)

// TestTxnOffsetsAcrossSidecars: a transactional producer talks to sidecar 0
// only; the group it commits offsets for is owned by sidecar 1, so
// TxnOffsetCommit holds them pending there (peer kinds 50-53). Through
// either sidecar OffsetFetch require_stable answers UNSTABLE_OFFSET_COMMIT
// while the transaction is open and the committed offset once it commits;
// an aborted transaction's offset never shows.
func TestTxnOffsetsAcrossSidecars(t *testing.T) {
	if testing.Short() {
		t.Skip("starts sidecar processes")
	}
	iggyAddr := freeAddr(t)
	startIggyProc(t, iggyAddr, t.TempDir())
	ps := []*sidecarProc{startClusterSidecar(t, iggyAddr), startClusterSidecar(t, iggyAddr)}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var group string
	waitFor(t, 60*time.Second, "a group owned by sidecar 1", func() error {
		for i := range 64 {
			if cand := fmt.Sprintf("g-%d", i); shardOwner(ps, cluster.Shard(cand, cluster.DefaultShards)) == 1 {
				group = cand
				return nil
			}
		}
		return fmt.Errorf("sidecar 1 owns no shard yet")
	})
	client := func(i int, opts ...kgo.Opt) *kgo.Client {
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(ps[i].kafka)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	const topic = "txn-offsets-across"
	id := "txo-" + group
	prod := client(0, kgo.TransactionalID(id), kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation(),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	stable := func(i int) (int64, int16) {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Group, req.RequireStable = group, true
		rt := kmsg.NewOffsetFetchRequestTopic()
		rt.Topic, rt.Partitions = topic, []int32{0}
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, client(i))
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Groups) == 1 && len(resp.Groups[0].Topics) == 1 { // v8+
			p := resp.Groups[0].Topics[0].Partitions[0]
			return p.Offset, p.ErrorCode
		}
		p := resp.Topics[0].Partitions[0]
		return p.Offset, p.ErrorCode
	}
	txn := func(offset int64, end kgo.TransactionEndTry) {
		t.Helper()
		if err := prod.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for range 3 {
			if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		pid, epoch, err := prod.ProducerID(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ao := kmsg.NewPtrAddOffsetsToTxnRequest()
		ao.TransactionalID, ao.ProducerID, ao.ProducerEpoch, ao.Group = id, pid, epoch, group
		if r, err := ao.RequestWith(ctx, prod); err != nil || r.ErrorCode != 0 {
			t.Fatalf("add offsets to txn: %+v %v", r, err)
		}
		tc := kmsg.NewPtrTxnOffsetCommitRequest()
		tc.TransactionalID, tc.Group, tc.ProducerID, tc.ProducerEpoch, tc.Generation = id, group, pid, epoch, -1
		rt := txnCommitTopic(ctx, t, client(0), topic)
		rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		rp.Offset = offset
		rt.Partitions = append(rt.Partitions, rp)
		tc.Topics = append(tc.Topics, rt)
		if r, err := tc.RequestWith(ctx, client(0)); err != nil || r.Topics[0].Partitions[0].ErrorCode != 0 {
			t.Fatalf("txn offset commit: %+v %v", r, err)
		}
		for i := range ps {
			if off, code := stable(i); code != 88 {
				t.Errorf("require_stable via sidecar %d while pending: offset %d code %d, want UNSTABLE_OFFSET_COMMIT (88)", i, off, code)
			}
		}
		if err := prod.EndTransaction(ctx, end); err != nil {
			t.Fatal(err)
		}
	}
	txn(2, kgo.TryCommit)
	for i := range ps {
		waitFor(t, 20*time.Second, fmt.Sprintf("the committed offset via sidecar %d", i), func() error {
			if off, code := stable(i); off != 2 || code != 0 {
				return fmt.Errorf("offset %d code %d", off, code)
			}
			return nil
		})
	}
	txn(3, kgo.TryAbort)
	for i := range ps {
		waitFor(t, 20*time.Second, fmt.Sprintf("the aborted offset dropped via sidecar %d", i), func() error {
			if off, code := stable(i); off != 2 || code != 0 {
				return fmt.Errorf("offset %d code %d", off, code)
			}
			return nil
		})
	}

	// A member's commit for a group its owner does not know (the owner
	// seeds it as adopting, as after a move): an answer Java's producer
	// aborts on (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION), never
	// REBALANCE_IN_PROGRESS or GROUP_ID_NOT_FOUND (fatal to it).
	var unknown string
	for i := 64; unknown == "" && i < 1024; i++ {
		if cand := fmt.Sprintf("g-%d", i); shardOwner(ps, cluster.Shard(cand, cluster.DefaultShards)) == 1 {
			unknown = cand
		}
	}
	tc := kmsg.NewPtrTxnOffsetCommitRequest()
	tc.TransactionalID, tc.Group, tc.ProducerID, tc.MemberID, tc.Generation = id, unknown, 1<<62|5, "ghost", 3
	rt := txnCommitTopic(ctx, t, client(0), topic)
	rt.Partitions = append(rt.Partitions, kmsg.NewTxnOffsetCommitRequestTopicPartition())
	tc.Topics = append(tc.Topics, rt)
	if r, err := tc.RequestWith(ctx, client(0)); err != nil || (r.Topics[0].Partitions[0].ErrorCode != 25 && r.Topics[0].Partitions[0].ErrorCode != 22) {
		t.Fatalf("a member's commit for unknown group %s: %+v %v, want UNKNOWN_MEMBER_ID (25) or ILLEGAL_GENERATION (22)", unknown, r, err)
	}
}

// txnCommitTopic is a TxnOffsetCommit topic as a client sends it: by name
// up to v5, by the topic id from Metadata from v6 (KIP-1319), whichever
// version the client negotiates.
func txnCommitTopic(ctx context.Context, t *testing.T, cl *kgo.Client, topic string) kmsg.TxnOffsetCommitRequestTopic {
	t.Helper()
	md := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(topic)
	md.Topics = append(md.Topics, mt)
	r, err := md.RequestWith(ctx, cl)
	if err != nil || len(r.Topics) != 1 || r.Topics[0].ErrorCode != 0 {
		t.Fatalf("metadata of %s: %+v %v", topic, r, err)
	}
	rt := kmsg.NewTxnOffsetCommitRequestTopic()
	rt.Topic, rt.TopicID = topic, r.Topics[0].TopicID
	return rt
}
