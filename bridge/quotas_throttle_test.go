package bridge_test

import (
	"bytes"
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// quotaWindow is the measured window: one whole period of Kafka's quota
// windows (11 samples of 1s), over which a client sending as fast as it is
// let gets the quota: an opening burst up to the minimum window, then the
// quota (bridge/quotas rate.go).
const quotaWindow = 11 * time.Second

// TestClientQuotaThrottlesProducer: a franz-go producer limited to 1 MB/s
// by a client-id quota through the sidecar writes within 10% of 1 MB/s
// over the measured window, throttled (throttle_time_ms in its Produce
// responses, its connection muted), with one Produce in flight and with
// franz-go's default five: the requests a client pipelined before a
// throttle wait for the mute to end before they are served, as Kafka
// reads nothing from a muted connection.
func TestClientQuotaThrottlesProducer(t *testing.T) {
	if testing.Short() {
		t.Skip("measures 11s of throttled traffic")
	}
	for _, inflight := range []int{1, 5} {
		t.Run(fmt.Sprintf("inflight-%d", inflight), func(t *testing.T) { quotaProducer(t, inflight) })
	}
}

func quotaProducer(t *testing.T, inflight int) {
	const quota = 1 << 20
	s := startStack(t)
	rk := dialRaw(t, s.Addr)
	createTopic(t, rk, "quota-produce")
	if code := alterQuota(t, rk, false, []string{"client-id", "quota-producer"}, quotaOp("producer_byte_rate", quota)); code != 0 {
		t.Fatalf("alter: %v", kerr.ErrorForCode(code))
	}
	var throttled atomic.Int64
	cl := s.kgoClient(t, kgo.ClientID("quota-producer"), kgo.DefaultProduceTopic("quota-produce"),
		kgo.ProducerBatchMaxBytes(64<<10), kgo.ProducerLinger(0), kgo.MaxBufferedRecords(64),
		kgo.ProducerBatchCompression(kgo.NoCompression()), // quotas count wire bytes
		kgo.DisableIdempotentWrite(), kgo.MaxProduceRequestsInflightPerBroker(inflight),
		kgo.WithHooks(throttleHook{&throttled}))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	value := bytes.Repeat([]byte("q"), 16<<10)
	var acked atomic.Int64
	start := time.Now()
	end := start.Add(quotaWindow)
	for time.Now().Before(end) {
		cl.Produce(ctx, &kgo.Record{Value: value}, func(r *kgo.Record, err error) {
			if err == nil && time.Now().Before(end) {
				acked.Add(int64(len(r.Value)))
			}
		})
	}
	got := float64(acked.Load()) / quotaWindow.Seconds()
	t.Logf("produced %.0f B/s over %v (quota %d B/s), throttled %d times", got, quotaWindow, quota, throttled.Load())
	if got < 0.9*quota || got > 1.1*quota {
		t.Fatalf("produced %.0f B/s, want %d within 10%%", got, quota)
	}
	if throttled.Load() == 0 {
		t.Fatal("no Produce response carried a throttle")
	}
}

// TestClientQuotaThrottlesConsumer: the same for a consumer limited by
// consumer_byte_rate, reading a topic that holds more than the window lets
// it read.
func TestClientQuotaThrottlesConsumer(t *testing.T) {
	if testing.Short() {
		t.Skip("measures 11s of throttled traffic")
	}
	const quota = 1 << 20
	s := startStack(t)
	rk := dialRaw(t, s.Addr)
	createTopic(t, rk, "quota-fetch")
	pr := s.kgoClient(t, kgo.DefaultProduceTopic("quota-fetch"), kgo.ProducerBatchCompression(kgo.NoCompression()))
	value := bytes.Repeat([]byte("c"), 16<<10)
	ctx := context.Background()
	for i := 0; i < 20<<20/len(value); i++ { // 20 MiB, more than 11s at 1 MB/s with the burst
		pr.Produce(ctx, &kgo.Record{Value: value}, nil)
	}
	if err := pr.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if code := alterQuota(t, rk, false, []string{"client-id", "quota-consumer"}, quotaOp("consumer_byte_rate", quota)); code != 0 {
		t.Fatalf("alter: %v", kerr.ErrorForCode(code))
	}
	var throttled atomic.Int64
	cl := s.kgoClient(t, kgo.ClientID("quota-consumer"), kgo.ConsumeTopics("quota-fetch"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxPartitionBytes(64<<10), kgo.FetchMaxBytes(64<<10),
		kgo.WithHooks(throttleHook{&throttled}))
	var read int64
	start := time.Now()
	end := start.Add(quotaWindow)
	for time.Now().Before(end) {
		fctx, cancel := context.WithDeadline(ctx, end)
		fs := cl.PollFetches(fctx)
		cancel()
		if time.Now().After(end) {
			break
		}
		fs.EachRecord(func(r *kgo.Record) { read += int64(len(r.Value)) })
	}
	got := float64(read) / quotaWindow.Seconds()
	t.Logf("consumed %.0f B/s over %v (quota %d B/s), throttled %d times", got, quotaWindow, quota, throttled.Load())
	if got < 0.9*quota || got > 1.1*quota {
		t.Fatalf("consumed %.0f B/s, want %d within 10%%", got, quota)
	}
	if throttled.Load() == 0 {
		t.Fatal("no Fetch response carried a throttle")
	}
}

// throttleHook counts the responses that carried a throttle.
type throttleHook struct{ n *atomic.Int64 }

func (h throttleHook) OnBrokerThrottle(_ kgo.BrokerMetadata, d time.Duration, _ bool) {
	if d > 0 {
		h.n.Add(1)
	}
}
