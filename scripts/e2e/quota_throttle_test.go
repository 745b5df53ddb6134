package e2e

import (
	"bytes"
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestClientQuotaThrottle: a franz-go producer limited to 1 MB/s by a
// client-id quota writes within 10% of 1 MB/s over one quota period (11
// windows of 1s), on Apache Kafka and on the sidecar alike, with one
// Produce in flight and with five (the requests pipelined before a throttle
// wait for the mute to end on both).
func TestClientQuotaThrottle(t *testing.T) {
	if testing.Short() {
		t.Skip("measures 11s of throttled traffic per target")
	}
	const quota = 1 << 20
	const window = 11 * time.Second
	for _, tg := range targets(t) {
		if !tg.Kafka && !tg.Sidecar {
			continue // kfake keeps no quota
		}
		for _, inflight := range []int{1, 5} {
			t.Run(fmt.Sprintf("%s/inflight-%d", tg.Name, inflight), func(t *testing.T) {
				ctx := testCtx(t, 60*time.Second)
				admin := newKgo(t, tg)
				topic, clientID := uniqueTopic("quota"), uniqueTopic("quota-client")
				if _, err := kadm.NewClient(admin).CreateTopic(ctx, 1, 1, nil, topic); err != nil {
					t.Fatal(err)
				}
				alter := func(op kmsg.AlterClientQuotasRequestEntryOp) {
					req := kmsg.NewPtrAlterClientQuotasRequest()
					e := kmsg.NewAlterClientQuotasRequestEntry()
					e.Entity = []kmsg.AlterClientQuotasRequestEntryEntity{{Type: "client-id", Name: &clientID}}
					e.Ops = []kmsg.AlterClientQuotasRequestEntryOp{op}
					req.Entries = append(req.Entries, e)
					resp, err := req.RequestWith(ctx, admin)
					if err != nil || resp.Entries[0].ErrorCode != 0 {
						t.Fatalf("alter client quota: %v %+v", err, resp)
					}
				}
				alter(kmsg.AlterClientQuotasRequestEntryOp{Key: "producer_byte_rate", Value: quota})
				t.Cleanup(func() { alter(kmsg.AlterClientQuotasRequestEntryOp{Key: "producer_byte_rate", Remove: true}) })
				// Kafka applies the quota once its broker's metadata image has it.
				for deadline := time.Now().Add(10 * time.Second); ; {
					req := kmsg.NewPtrDescribeClientQuotasRequest()
					c := kmsg.NewDescribeClientQuotasRequestComponent()
					c.EntityType, c.MatchType, c.Match = "client-id", kmsg.QuotasMatchTypeExact, &clientID
					req.Components = append(req.Components, c)
					if resp, err := req.RequestWith(ctx, admin); err == nil && len(resp.Entries) == 1 {
						break
					}
					if time.Now().After(deadline) {
						t.Fatal("the quota is not described")
					}
					time.Sleep(20 * time.Millisecond)
				}

				var throttled atomic.Int64
				cl := newKgo(t, tg, kgo.ClientID(clientID), kgo.DefaultProduceTopic(topic),
					kgo.ProducerBatchMaxBytes(64<<10), kgo.ProducerLinger(0), kgo.MaxBufferedRecords(64),
					kgo.ProducerBatchCompression(kgo.NoCompression()), // quotas count wire bytes
					kgo.DisableIdempotentWrite(), kgo.MaxProduceRequestsInflightPerBroker(inflight),
					kgo.WithHooks(quotaThrottleHook{&throttled}))
				value := bytes.Repeat([]byte("q"), 16<<10)
				var acked atomic.Int64
				pctx, cancel := context.WithCancel(ctx)
				defer cancel()
				end := time.Now().Add(window)
				for time.Now().Before(end) {
					cl.Produce(pctx, &kgo.Record{Value: value}, func(r *kgo.Record, err error) {
						if err == nil && time.Now().Before(end) {
							acked.Add(int64(len(r.Value)))
						}
					})
				}
				got := float64(acked.Load()) / window.Seconds()
				t.Logf("%s: produced %.0f B/s over %v (quota %d B/s), throttled %d times", tg.Name, got, window, quota, throttled.Load())
				if got < 0.9*quota || got > 1.1*quota {
					t.Errorf("%s: produced %.0f B/s, want %d within 10%%", tg.Name, got, quota)
				}
				if throttled.Load() == 0 {
					t.Errorf("%s: no Produce response carried a throttle", tg.Name)
				}
			})
		}
	}
}

// quotaThrottleHook counts the responses that carried a throttle.
type quotaThrottleHook struct{ n *atomic.Int64 }

func (h quotaThrottleHook) OnBrokerThrottle(_ kgo.BrokerMetadata, d time.Duration, _ bool) {
	if d > 0 {
		h.n.Add(1)
	}
}
