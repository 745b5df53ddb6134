package main

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafka-iggy/kafka-iggy/bridge/cluster"
)

// TestTransactionsAcrossSidecars: a transactional producer talks to sidecar
// A only; its transactional id's coordinator is sidecar B (the owner of the
// id's shard). Commit and abort go through A to B; both sidecars describe
// the id alike and list it. Then B is SIGKILLed: A takes the shard over,
// reads the decision log and coordinates the producer's next transaction
// with the same producer id. A read_committed consumer reads the committed
// records once each and no aborted one.
func TestTransactionsAcrossSidecars(t *testing.T) {
	if testing.Short() {
		t.Skip("starts sidecar processes")
	}
	iggyAddr := freeAddr(t)
	startIggyProc(t, iggyAddr, t.TempDir())
	ps := []*sidecarProc{startClusterSidecar(t, iggyAddr), startClusterSidecar(t, iggyAddr)}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	t.Cleanup(func() {
		if t.Failed() {
			for i, p := range ps {
				if p == nil {
					continue
				}
				for _, l := range strings.Split(p.logText(), "\n") {
					if strings.Contains(l, "coordination") || strings.Contains(l, "transaction") {
						t.Logf("sidecar %d: %s", i, l)
					}
				}
			}
		}
	})

	// An id whose shard sidecar 1 owns.
	var id string
	waitFor(t, 60*time.Second, "a transactional id coordinated by sidecar 1", func() error {
		for i := range 64 {
			cand := fmt.Sprintf("tx-%d", i)
			if shardOwner(ps, cluster.Shard(cand, cluster.DefaultShards)) == 1 {
				id = cand
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
	const topic = "txn-across"
	prod := client(0, kgo.TransactionalID(id), kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation(),
		kgo.TransactionTimeout(30*time.Second))
	txn := func(prefix string, n int, end kgo.TransactionEndTry) {
		t.Helper()
		if err := prod.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i := range n {
			if err := prod.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "%s-%d", prefix, i)}).FirstErr(); err != nil {
				t.Fatalf("produce %s-%d: %v", prefix, i, err)
			}
		}
		if err := prod.EndTransaction(ctx, end); err != nil {
			t.Fatalf("end %s: %v", prefix, err)
		}
	}
	txn("c", 5, kgo.TryCommit)
	txn("a", 3, kgo.TryAbort)
	pid, _, err := prod.ProducerID(ctx)
	if err != nil {
		t.Fatal(err)
	}

	describe := func(i int) kmsg.DescribeTransactionsResponseTransactionState {
		req := kmsg.NewPtrDescribeTransactionsRequest()
		req.TransactionalIDs = []string{id}
		resp, err := req.RequestWith(ctx, client(i))
		if err != nil || len(resp.TransactionStates) != 1 {
			t.Fatalf("describe via sidecar %d: %+v %v", i, resp, err)
		}
		return resp.TransactionStates[0]
	}
	for i := range ps {
		if d := describe(i); d.ErrorCode != 0 || d.State != "CompleteAbort" || d.ProducerID != pid {
			t.Errorf("describe via sidecar %d: %+v", i, d)
		}
		lresp, err := kmsg.NewPtrListTransactionsRequest().RequestWith(ctx, client(i))
		if err != nil || len(lresp.TransactionStates) != 1 || lresp.TransactionStates[0].TransactionalID != id {
			t.Errorf("list via sidecar %d: %+v %v", i, lresp, err)
		}
	}

	// SIGKILL of the coordinator.
	if err := ps[1].cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	ps[1] = nil
	start := time.Now()
	txn("k", 2, kgo.TryCommit)
	t.Logf("coordinator SIGKILL -> next transaction committed through the new owner in %v", time.Since(start))
	if d := describe(0); d.ErrorCode != 0 || d.State != "CompleteCommit" || d.ProducerID != pid {
		t.Errorf("after the takeover: %+v", d)
	}
	if owner := shardOwner(ps, cluster.Shard(id, cluster.DefaultShards)); owner != 0 {
		t.Errorf("the id's shard is owned by %d", owner)
	}

	// read_committed through the survivor: the committed
	// records once each, the aborted ones never.
	cons := client(0, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	seen := map[string]int{}
	waitFor(t, 30*time.Second, "the 7 committed records read back", func() error {
		fs := cons.PollRecords(ctx, 100)
		fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)]++ })
		if len(seen) < 7 {
			return fmt.Errorf("%d of 7: %v", len(seen), seen)
		}
		return nil
	})
	for v, n := range seen {
		if n != 1 || strings.HasPrefix(v, "a-") {
			t.Errorf("read_committed read %s %d times", v, n)
		}
	}
}
