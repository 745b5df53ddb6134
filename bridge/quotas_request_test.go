package bridge_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// request_percentage: a client id whose quota is a sliver of one thread
// gets throttled answers (at most Kafka's one-window bound, 1 s) once its
// handler time is above it; another client id is not throttled.
func TestRequestPercentageQuota(t *testing.T) {
	s := startStack(t)
	if code := alterQuota(t, dialRaw(t, s.Addr), false, []string{"client-id", "busy"}, quotaOp("request_percentage", 0.00001)); code != 0 {
		t.Fatalf("alter: %d", code)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	throttle := func(cl *kgo.Client) int32 {
		t.Helper()
		req := kmsg.NewPtrDescribeConfigsRequest()
		rr := kmsg.NewDescribeConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeBroker, "" // no Iggy call: handler time only
		req.Resources = append(req.Resources, rr)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.ThrottleMillis
	}
	busy, idle := s.kgoClient(t, kgo.ClientID("busy")), s.kgoClient(t, kgo.ClientID("idle"))
	var got int32
	for i := 0; i < 50 && got == 0; i++ {
		got = throttle(busy)
	}
	if got <= 0 || got > 1000 {
		t.Errorf("a client over its request_percentage: throttle_time_ms %d, want 1..1000", got)
	}
	for i := 0; i < 5; i++ {
		if got := throttle(idle); got != 0 {
			t.Errorf("a client without a quota: throttle_time_ms %d", got)
		}
	}
}
