package e2e

import (
	"crypto/rand"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// kafkaFetchMaxBytes is the Kafka broker's default fetch.max.bytes (55 MiB),
// which the sidecar applies as fetch.max_bytes.
const kafkaFetchMaxBytes = 55 << 20

// fetchReads is a kgo hook that records the size of every Fetch response.
type fetchReads struct {
	mu    sync.Mutex
	sizes []int
}

func (f *fetchReads) OnBrokerRead(_ kgo.BrokerMetadata, key int16, bytesRead int, _, _ time.Duration, err error) {
	if key == kmsg.Fetch.Int16() && err == nil {
		f.mu.Lock()
		f.sizes = append(f.sizes, bytesRead)
		f.mu.Unlock()
	}
}

// TestFetchBrokerCap: a consumer asking 1000 MiB per response and per
// partition reads a 70 MB partition; the broker caps every response at its
// fetch.max.bytes (55 MiB), the real Kafka broker and the sidecar alike, and
// every record arrives. kfake applies no broker cap, so it is not a target.
func TestFetchBrokerCap(t *testing.T) {
	for _, tg := range targets(t) {
		if tg.Reference {
			continue
		}
		t.Run(tg.Name, func(t *testing.T) { fetchBrokerCap(t, tg) })
	}
}

func fetchBrokerCap(t *testing.T, tg Target) {
	const (
		records = 70
		size    = 1_000_000 // under Kafka's default message.max.bytes
		huge    = 1000 << 20
	)
	topic := uniqueTopic("fetchcap")
	createTopic(t, tg, topic, 1)
	producer := newKgo(t, tg, kgo.DefaultProduceTopic(topic), kgo.ProducerBatchMaxBytes(1<<20),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	ctx := testCtx(t, 3*time.Minute)
	value := make([]byte, size)
	_, _ = rand.Read(value) // incompressible, whatever a codec does
	for i := 0; i < records; i++ {
		producer.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Errorf("%s: produce: %v", tg.Name, err)
			}
		})
	}
	if err := producer.Flush(ctx); err != nil {
		t.Fatalf("%s: flush: %v", tg.Name, err)
	}

	reads := &fetchReads{}
	consumer := newKgo(t, tg,
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(0)}}),
		kgo.FetchMaxBytes(huge), kgo.FetchMaxPartitionBytes(huge), kgo.BrokerMaxReadBytes(huge+(1<<20)),
		kgo.FetchMaxWait(500*time.Millisecond),
		kgo.WithHooks(reads),
	)
	got := 0
	for got < records {
		fs := consumer.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("%s: %d of %d records after 3 min", tg.Name, got, records)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("%s: fetch: %v", tg.Name, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if len(r.Value) != size {
				t.Fatalf("%s: record of %d bytes", tg.Name, len(r.Value))
			}
			got++
		})
	}
	reads.mu.Lock()
	defer reads.mu.Unlock()
	largest := 0
	for _, n := range reads.sizes {
		largest = max(largest, n)
	}
	t.Logf("%s: %d records in %d fetch responses, largest %d bytes (cap %d)", tg.Name, got, len(reads.sizes), largest, kafkaFetchMaxBytes)
	// The response frame adds its headers (well under 64 KiB) to the cap.
	if largest > kafkaFetchMaxBytes+64<<10 {
		t.Errorf("%s: a Fetch response of %d bytes, above fetch.max.bytes %d", tg.Name, largest, kafkaFetchMaxBytes)
	}
	if largest < 40<<20 {
		t.Errorf("%s: largest Fetch response %d bytes: the cap never bound (data too small?)", tg.Name, largest)
	}
}
