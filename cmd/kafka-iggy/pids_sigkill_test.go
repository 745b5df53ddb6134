package main

// Exactly-once per partition for an idempotent producer across SIGKILLs of
// its sidecar: producer state is read back from Iggy (bridge/pids_tail.go).

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestIdempotentProducerAcrossSIGKILL: an idempotent franz-go producer
// writes records to three partitions through a sidecar that is SIGKILLed
// (batches in flight) and restarted on the same port several times, on one
// `kafka-iggy embedded-iggy` process. Every record is acknowledged, and
// Iggy holds each exactly once.
func TestIdempotentProducerAcrossSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("starts sidecar processes")
	}
	iggyAddr := freeAddr(t)
	startIggyProc(t, iggyAddr, t.TempDir())
	kafkaAddr := freeAddr(t)
	start := func() *sidecarProc {
		return startServeProc(t,
			"KAFKA_IGGY_EMBEDDED__MODE=off",
			"KAFKA_IGGY_IGGY__ADDRESS="+iggyAddr,
			"KAFKA_IGGY_LISTENER__ADDRESS="+kafkaAddr,
			"KAFKA_IGGY_TOPICS__DEFAULT_PARTITIONS=3",
			"KAFKA_IGGY_LIMITS__DRAIN_TIMEOUT=2s",
		)
	}
	p := start()

	const topic, n, kills = "sigkill-idem", 30000, 10
	cl, err := kgo.NewClient(kgo.SeedBrokers(kafkaAddr), kgo.DefaultProduceTopic(topic),
		kgo.AllowAutoTopicCreation(), kgo.ProducerLinger(0), kgo.ProducerBatchMaxBytes(2048),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
		kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }),
		kgo.RecordDeliveryTimeout(2*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()

	var acked atomic.Int64
	var mu sync.Mutex
	var failures []error
	var wg sync.WaitGroup
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// At most window records are unacknowledged at a time, so every kill
	// lands in the middle of the stream with batches in flight.
	const window = 1000
	slots := make(chan struct{}, window)
	// The producer does not run further than window past a kill point
	// before that kill happened.
	killed := make([]chan struct{}, kills+1)
	for k := range killed {
		killed[k] = make(chan struct{})
	}
	killAt := func(k int) int { return k * (n / (kills + 1)) }
	reached := make([]chan struct{}, kills+1) // closed when killAt(k) records are acknowledged
	for k := range reached {
		reached[k] = make(chan struct{})
	}
	wg.Add(n)
	go func() {
		k := 1
		for i := 0; i < n; i++ {
			if k <= kills && i >= killAt(k)+window {
				select {
				case <-killed[k]:
				case <-ctx.Done():
				}
				k++
			}
			slots <- struct{}{}
			cl.Produce(ctx, &kgo.Record{Value: []byte(fmt.Sprintf("v%06d", i))}, func(_ *kgo.Record, err error) {
				defer func() { <-slots; wg.Done() }()
				if err != nil {
					mu.Lock()
					failures = append(failures, err)
					mu.Unlock()
					return
				}
				if a := acked.Add(1); a%int64(killAt(1)) == 0 && a/int64(killAt(1)) <= kills {
					close(reached[a/int64(killAt(1))])
				}
			})
		}
	}()

	// Kill at evenly spaced points of the acknowledged count, while the
	// producer has batches in flight, and restart on the same port.
	for k := 1; k <= kills; k++ {
		select {
		case <-reached[k]:
		case <-ctx.Done():
			t.Fatalf("%d records acknowledged, kill %d waits for %d", acked.Load(), k, killAt(k))
		}
		if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-p.done
		t.Logf("SIGKILL %d at %d acknowledged records", k, acked.Load())
		p = start()
		close(killed[k])
	}
	wg.Wait()
	if len(failures) > 0 {
		t.Fatalf("%d records failed, first: %v", len(failures), failures[0])
	}

	// Iggy holds every record once: the end offsets add up to n, and
	// reading everything back finds each value once.
	adm := kadm.NewClient(cl)
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	var stored int64
	ends.Each(func(o kadm.ListedOffset) { stored += o.Offset })
	rd, err := kgo.NewClient(kgo.SeedBrokers(kafkaAddr), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	seen := map[string]int{}
	var read int64
	for read < stored && ctx.Err() == nil {
		fs := rd.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) {
			seen[string(r.Value)]++
			read++
		})
	}
	dups, missing := 0, 0
	for i := 0; i < n; i++ {
		switch c := seen[fmt.Sprintf("v%06d", i)]; {
		case c == 0:
			missing++
		case c > 1:
			dups += c - 1
		}
	}
	t.Logf("%d kills: %d records acknowledged, %d stored, %d duplicates, %d missing", kills, acked.Load(), stored, dups, missing)
	if stored != n || dups != 0 || missing != 0 {
		t.Fatalf("want each of %d records once: %d stored, %d duplicates, %d missing", n, stored, dups, missing)
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	<-p.done
}
