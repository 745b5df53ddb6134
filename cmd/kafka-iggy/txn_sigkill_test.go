package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestTransactionsSurviveCoordinatorSIGKILL: a transactional producer
// commits transactions of one record in each of 16 partitions (so EndTxn
// writes 16 markers) through a sidecar that is also their coordinator; the
// sidecar is SIGKILLed at a random moment, 8 times, and started again on
// the same Iggy. Afterwards a read_committed consumer sees every
// transaction whole or not at all, and every transaction the producer saw
// committed whole. A kill that fell between a decision and its last
// marker shows in the restarted sidecar's log ("finished a decided
// transaction"); how many did is logged.
func TestTransactionsSurviveCoordinatorSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("starts sidecar processes")
	}
	const topic, parts, rounds = "txn-kill", 16, 8
	iggyAddr := freeAddr(t)
	startIggyProc(t, iggyAddr, t.TempDir())
	start := func() *sidecarProc {
		return startServeProc(t, "KAFKA_IGGY_EMBEDDED__MODE=off", "KAFKA_IGGY_IGGY__ADDRESS="+iggyAddr,
			"KAFKA_IGGY_TRANSACTIONS__CHECK_INTERVAL=500ms")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	p := start()
	admin, err := kgo.NewClient(kgo.SeedBrokers(p.kafka))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kadm.NewClient(admin).CreateTopic(ctx, parts, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	admin.Close()

	var (
		mu        sync.Mutex
		committed = map[string]bool{} // transactions whose EndTxn answered success
	)
	finished := 0
	for round := range rounds {
		cl, err := kgo.NewClient(kgo.SeedBrokers(p.kafka), kgo.TransactionalID("tx-kill"), kgo.DefaultProduceTopic(topic),
			kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.TransactionTimeout(10*time.Second), kgo.RetryTimeout(5*time.Second),
			kgo.RecordDeliveryTimeout(10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		rctx, stopRound := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			for i := 0; rctx.Err() == nil; i++ {
				id := fmt.Sprintf("r%d-t%d", round, i)
				if cl.BeginTransaction() != nil {
					return
				}
				var rs []*kgo.Record
				for j := range parts {
					rs = append(rs, &kgo.Record{Partition: int32(j), Value: []byte(id)})
				}
				if cl.ProduceSync(rctx, rs...).FirstErr() != nil {
					return
				}
				if cl.EndTransaction(rctx, kgo.TryCommit) != nil {
					return
				}
				mu.Lock()
				committed[id] = true
				mu.Unlock()
			}
		}()
		time.Sleep(time.Duration(300+rand.IntN(700)) * time.Millisecond) // a random moment of the run to kill at
		if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-p.done
		stopRound()
		cl.Close() // fails the records still buffered for the dead sidecar
		<-done
		p = start()
		// The restarted coordinator's first sweep runs at start.
		waitFor(t, 10*time.Second, "the first sweep of the restarted sidecar", func() error {
			if strings.Contains(p.logText(), "transactions: finished a decided transaction") {
				finished++
				return nil
			}
			return nil
		})
	}

	t.Cleanup(func() {
		if t.Failed() {
			for _, l := range strings.Split(p.logText(), "\n") {
				if strings.Contains(l, "transaction") {
					t.Logf("sidecar: %s", l)
				}
			}
		}
	})
	// A new producer instance: its InitProducerId aborts whatever the last
	// one left open; then read everything read_committed.
	ctx, cancel2 := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel2()
	last, err := kgo.NewClient(kgo.SeedBrokers(p.kafka), kgo.TransactionalID("tx-kill"), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer last.Close()
	if err := last.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := last.ProduceSync(ctx, &kgo.Record{Value: []byte("final")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := last.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(p.kafka), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	seen := map[string]int{}
	quiet := 0
	waitFor(t, 90*time.Second, "every partition read to its end (the final transaction seen, then 2 empty polls)", func() error {
		pctx, pcancel := context.WithTimeout(ctx, time.Second)
		defer pcancel()
		n := 0
		cons.PollRecords(pctx, 1000).EachRecord(func(r *kgo.Record) { seen[string(r.Value)]++; n++ })
		if n > 0 || seen["final"] == 0 {
			quiet = 0
			return fmt.Errorf("%d transactions read so far", len(seen))
		}
		if quiet++; quiet < 2 {
			return fmt.Errorf("one empty poll")
		}
		return nil
	})
	delete(seen, "final")
	for id, n := range seen {
		if n != parts {
			t.Errorf("transaction %s: %d of %d records visible to read_committed", id, n, parts)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for id := range committed {
		if seen[id] != parts {
			t.Errorf("transaction %s committed to the producer, %d of %d records visible", id, seen[id], parts)
		}
	}
	t.Logf("%d transactions committed to the producer, %d visible whole, %d SIGKILLs, %d restarts finished a decided transaction",
		len(committed), len(seen), rounds, finished)
}
