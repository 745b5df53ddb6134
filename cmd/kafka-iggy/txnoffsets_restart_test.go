package main

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafka-iggy/kafka-iggy/bridge/cluster"
)

// TestTxnOffsetsSurviveOwnerKill: the pending offsets of a transaction
// (TxnOffsetCommit answered by the group's owner, sidecar 1) are in Iggy
// before the answer, so when sidecar 1 is SIGKILLed before EndTxn the new
// owner of the group's shard (sidecar 0, which also coordinates the
// transactional id) recovers them: a commit makes them the group's
// committed offset, an abort never does.
func TestTxnOffsetsSurviveOwnerKill(t *testing.T) {
	if testing.Short() {
		t.Skip("starts sidecar processes")
	}
	t.Run("commit", func(t *testing.T) { testTxnOffsetsOwnerKill(t, true) })
	t.Run("abort", func(t *testing.T) { testTxnOffsetsOwnerKill(t, false) })
}

func testTxnOffsetsOwnerKill(t *testing.T, commit bool) {
	iggyAddr := freeAddr(t)
	startIggyProc(t, iggyAddr, t.TempDir())
	ps := []*sidecarProc{startClusterSidecar(t, iggyAddr), startClusterSidecar(t, iggyAddr)}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var group, id string
	waitFor(t, 60*time.Second, "a group owned by sidecar 1 and a transactional id owned by sidecar 0", func() error {
		group, id = "", ""
		for i := range 64 {
			switch cand := fmt.Sprintf("g-%d", i); shardOwner(ps, cluster.Shard(cand, cluster.DefaultShards)) {
			case 1:
				if group == "" {
					group = cand
				}
			case 0:
				if id == "" {
					id = cand
				}
			}
		}
		if group == "" || id == "" {
			return fmt.Errorf("group %q id %q", group, id)
		}
		return nil
	})
	client := func(i int, opts ...kgo.Opt) *kgo.Client {
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(ps[i].kafka)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	const topic = "txn-offsets-owner-kill"
	prod := client(0, kgo.TransactionalID(id), kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation(),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	reader := client(0)
	fetch := func(stable bool) (int64, int16, error) {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Group, req.RequireStable = group, stable
		rt := kmsg.NewOffsetFetchRequestTopic()
		rt.Topic, rt.Partitions = topic, []int32{0}
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, reader)
		if err != nil {
			return 0, 0, err
		}
		if len(resp.Groups) == 1 && len(resp.Groups[0].Topics) == 1 { // v8+
			p := resp.Groups[0].Topics[0].Partitions[0]
			return p.Offset, p.ErrorCode, nil
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			return 0, 0, fmt.Errorf("offset fetch answer: %+v", resp)
		}
		p := resp.Topics[0].Partitions[0]
		return p.Offset, p.ErrorCode, nil
	}

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
	rt := txnCommitTopic(ctx, t, reader, topic)
	rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	rp.Offset = 3
	rt.Partitions = append(rt.Partitions, rp)
	tc.Topics = append(tc.Topics, rt)
	if r, err := tc.RequestWith(ctx, reader); err != nil || r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("txn offset commit: %+v %v", r, err)
	}
	if off, code, err := fetch(true); err != nil || code != 88 {
		t.Fatalf("require_stable while pending: offset %d code %d (%v), want UNSTABLE_OFFSET_COMMIT (88)", off, code, err)
	}

	t.Log("killing sidecar 1 (owner of the group's shard) before EndTxn")
	if err := ps[1].cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-ps[1].done
	ps[1] = nil
	end := kgo.TryAbort
	if commit {
		end = kgo.TryCommit
	}
	if err := prod.EndTransaction(ctx, end); err != nil {
		t.Fatal(err)
	}
	// The transaction coordinator (sidecar 0) resolves the group's offsets
	// once the group's shard is active there.
	waitFor(t, 90*time.Second, "the transaction complete", func() error {
		req := kmsg.NewPtrDescribeTransactionsRequest()
		req.TransactionalIDs = []string{id}
		resp, err := req.RequestWith(ctx, reader)
		if err != nil {
			return err
		}
		want := "CompleteAbort"
		if commit {
			want = "CompleteCommit"
		}
		if s := resp.TransactionStates[0].State; s != want {
			return fmt.Errorf("state %s, want %s", s, want)
		}
		return nil
	})
	want := int64(-1)
	if commit {
		want = 3
	}
	waitFor(t, 30*time.Second, "the group's committed offset after the owner's kill", func() error {
		off, code, err := fetch(true)
		if err != nil {
			return err
		}
		if off != want || code != 0 {
			return fmt.Errorf("offset %d code %d, want %d code 0", off, code, want)
		}
		return nil
	})
	if off, code, err := fetch(false); err != nil || off != want || code != 0 {
		t.Fatalf("offset fetch: %d code %d (%v), want %d", off, code, err, want)
	}
}

// TestTxnOffsetsSurviveLoneSidecarKill: a sidecar without peers (embedded
// Iggy keeping its data) is SIGKILLed after TxnOffsetCommit answered and
// before EndTxn; restarted on the same data, it recovers the pending
// offsets from __kafka_iggy/txnoffsets: EndTxn commit makes them the
// group's committed offset, abort never does.
func TestTxnOffsetsSurviveLoneSidecarKill(t *testing.T) {
	if testing.Short() {
		t.Skip("starts sidecar processes")
	}
	for _, commit := range []bool{true, false} {
		t.Run(fmt.Sprintf("commit=%v", commit), func(t *testing.T) {
			dir := t.TempDir()
			p := startSidecarProc(t, dir, 5*time.Second)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			const topic, group, id = "txn-offsets-lone", "g-lone", "txo-lone"
			newClient := func(addr string, opts ...kgo.Opt) *kgo.Client {
				cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, opts...)...)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(cl.Close)
				return cl
			}
			prod := newClient(p.kafka, kgo.TransactionalID(id), kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation(),
				kgo.RecordPartitioner(kgo.ManualPartitioner()))
			if err := prod.BeginTransaction(); err != nil {
				t.Fatal(err)
			}
			if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
				t.Fatal(err)
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
			rt := txnCommitTopic(ctx, t, prod, topic)
			rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
			rp.Offset = 1
			rt.Partitions = append(rt.Partitions, rp)
			tc.Topics = append(tc.Topics, rt)
			if r, err := tc.RequestWith(ctx, prod); err != nil || r.Topics[0].Partitions[0].ErrorCode != 0 {
				t.Fatalf("txn offset commit: %+v %v", r, err)
			}

			if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			<-p.done
			p = startSidecarProc(t, dir, 5*time.Second)
			cl := newClient(p.kafka)
			waitFor(t, 60*time.Second, "EndTxn at the restarted sidecar", func() error {
				et := kmsg.NewPtrEndTxnRequest()
				et.TransactionalID, et.ProducerID, et.ProducerEpoch, et.Commit = id, pid, epoch, commit
				r, err := et.RequestWith(ctx, cl)
				if err != nil {
					return err
				}
				if r.ErrorCode != 0 {
					return fmt.Errorf("code %d", r.ErrorCode)
				}
				return nil
			})
			want := int64(-1)
			if commit {
				want = 1
			}
			waitFor(t, 30*time.Second, "the group's committed offset after the restart", func() error {
				req := kmsg.NewPtrOffsetFetchRequest()
				req.Group, req.RequireStable = group, true
				ft := kmsg.NewOffsetFetchRequestTopic()
				ft.Topic, ft.Partitions = topic, []int32{0}
				req.Topics = append(req.Topics, ft)
				resp, err := req.RequestWith(ctx, cl)
				if err != nil {
					return err
				}
				var off int64
				var code int16
				if len(resp.Groups) == 1 && len(resp.Groups[0].Topics) == 1 {
					off, code = resp.Groups[0].Topics[0].Partitions[0].Offset, resp.Groups[0].Topics[0].Partitions[0].ErrorCode
				} else {
					off, code = resp.Topics[0].Partitions[0].Offset, resp.Topics[0].Partitions[0].ErrorCode
				}
				if off != want || code != 0 {
					return fmt.Errorf("offset %d code %d, want %d code 0", off, code, want)
				}
				return nil
			})
		})
	}
}
