package bridge_test

import (
	"context"
	"crypto/rand"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafka-iggy/kafka-iggy/budget"
)

// TestBudgetBackpressure: under an 8 MiB budget, 6 producers writing
// 1 MiB batches (2 MiB of budget each while served) and 3 consumers asking
// 1000 MiB per fetch all finish without an error: the front door stops
// reading and the fetches shrink to what fits, and every record arrives.
// The budget is never held past its total except by what cannot wait (a
// first batch larger than a fetch's grant, unsent reply bytes in gnet).
func TestBudgetBackpressure(t *testing.T) {
	const (
		total     = 8 << 20
		producers = 6
		perProd   = 12
		consumers = 3
		valueSize = 1000_000
	)
	budget := budget.New(total)
	s := startStack(t, func(o *stackOpts) {
		o.budget = budget
		o.bridge.Topics.DefaultPartitions = 1
		o.bridge.Topics.MaxMessageBytes = 2 << 20
		o.proxy.Limits.MaxFrameBytes = 4 << 20
		o.proxy.Limits.MaxInboundBytes = 8 << 20
	})
	const topic = "budgeted"
	createTopic(t, dialRaw(t, s.Addr), topic)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	value := make([]byte, valueSize)
	_, _ = rand.Read(value)
	var wg sync.WaitGroup
	errs := make(chan error, producers*perProd+consumers)
	for p := 0; p < producers; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl := s.kgoClient(t, kgo.DefaultProduceTopic(topic), kgo.ProducerBatchMaxBytes(2<<20),
				kgo.ProducerBatchCompression(kgo.NoCompression()))
			defer cl.Close()
			for i := 0; i < perProd; i++ {
				if err := cl.ProduceSync(ctx, &kgo.Record{Value: value}).FirstErr(); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	want := producers * perProd
	for c := 0; c < consumers; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl := s.kgoClient(t,
				kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(0)}}),
				kgo.FetchMaxBytes(1000<<20), kgo.FetchMaxPartitionBytes(1000<<20), kgo.BrokerMaxReadBytes(1001<<20),
				kgo.FetchMaxWait(500*time.Millisecond))
			defer cl.Close()
			got := 0
			for got < want {
				fs := cl.PollFetches(ctx)
				if ctx.Err() != nil {
					errs <- ctx.Err()
					return
				}
				fs.EachError(func(_ string, _ int32, err error) { errs <- err })
				fs.EachRecord(func(r *kgo.Record) {
					if len(r.Value) == valueSize {
						got++
					}
				})
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if budget.Waits() == 0 {
		t.Errorf("the budget never ran short (peak %d of %d): the test does not exercise backpressure", budget.Peak(), total)
	}
	t.Logf("budget %d: peak %d, waits %d, in use after %d", total, budget.Peak(), budget.Waits(), budget.InUse())
	// Everything drawn is given back once the replies are out.
	deadline := time.Now().Add(5 * time.Second)
	for budget.InUse() != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := budget.InUse(); n != 0 {
		t.Errorf("%d budget bytes still held after every client finished", n)
	}
}

// TestFetchBudgetExhausted: with the whole budget held, a fetch waits its
// max_wait for room, then answers the partition's offsets without records
// (no error: the consumer fetches again); once room is back, the records.
func TestFetchBudgetExhausted(t *testing.T) {
	budget := budget.New(8 << 20)
	s := startStack(t, func(o *stackOpts) { o.fetchBudget = budget })
	rk := dialRaw(t, s.Addr)
	const topic = "starved"
	createTopic(t, rk, topic)
	rk.produceValues(topic, 0, []byte("a"), []byte("b"), []byte("c"))
	got := budget.TryUpTo(8 << 20)
	start := time.Now()
	resp := rk.fetch(12, fetchReq(300, 1, 1<<30, fetchPart{topic: topic, partition: 0, offset: 1, maxBytes: 1 << 30}))
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 || p.HighWatermark != 3 || len(p.RecordBatches) != 0 || time.Since(start) < 250*time.Millisecond {
		t.Fatalf("starved fetch: error %d hw %d, %d record bytes after %v", p.ErrorCode, p.HighWatermark, len(p.RecordBatches), time.Since(start))
	}
	budget.Release(got)
	resp = rk.fetch(12, fetchReq(300, 1, 1<<30, fetchPart{topic: topic, partition: 0, offset: 1, maxBytes: 1 << 30}))
	if recs, _ := decodeBatches(t, resp.Topics[0].Partitions[0].RecordBatches); len(recs) != 2 {
		t.Fatalf("after release: %d records", len(recs))
	}
	// The reply's bytes go back once gnet has them (the callback may run
	// just after the client read them).
	deadline := time.Now().Add(5 * time.Second)
	for budget.InUse() != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := budget.InUse(); n != 0 {
		t.Fatalf("%d bytes held after the fetches", n)
	}
}
