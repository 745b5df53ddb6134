package bridge_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Client metrics subscriptions altered through one sidecar (as
// kafka-client-metrics.sh --alter does) are listed and described by another
// sidecar of the same Iggy server, and decide what GetTelemetrySubscriptions
// hands out there: the subscriptions a client matches, combined as Kafka
// combines them; a push under the subscription of before a change is
// UNKNOWN_SUBSCRIPTION_ID.
func TestClientMetricsSubscriptionsAcrossSidecars(t *testing.T) {
	telem := func(o *stackOpts) { o.bridge.Telemetry.Enabled = true }
	a := startStack(t, telem)
	b := startStack(t, telem, func(o *stackOpts) { o.shared = a.Iggy })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin := a.kgoClient(t)
	alter := func(name string, kv ...string) {
		t.Helper()
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		rr := kmsg.NewIncrementalAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeClientMetrics, name
		for i := 0; i+1 < len(kv); i += 2 {
			c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
			c.Name, c.Value = kv[i], kmsg.StringPtr(kv[i+1])
			rr.Configs = append(rr.Configs, c)
		}
		req.Resources = append(req.Resources, rr)
		resp, err := req.RequestWith(ctx, admin)
		if err != nil || resp.Resources[0].ErrorCode != 0 {
			t.Fatalf("alter %s: %v %+v", name, err, resp)
		}
	}
	alter("producers", "metrics", "org.apache.kafka.producer.", "interval.ms", "60000", "match", "client_id=app-.*")
	alter("everyone", "metrics", "org.apache.kafka.consumer.fetch", "interval.ms", "30000")
	alter("others", "metrics", "*", "interval.ms", "1000", "match", "client_id=other")
	alter("kgo-clients", "metrics", "x.kgo.", "interval.ms", "30000", "match", "client_software_name=kgo") // ApiVersions v3+

	list, err := kmsg.NewPtrListConfigResourcesRequest().RequestWith(ctx, b.kgoClient(t))
	if err != nil {
		t.Fatal(err)
	}
	var subs []string
	for _, r := range list.ConfigResources {
		if r.Type == 16 {
			subs = append(subs, r.Name)
		}
	}
	if strings.Join(subs, ",") != "everyone,kgo-clients,others,producers" {
		t.Errorf("the other sidecar lists subscriptions %v", subs)
	}

	app := b.kgoClient(t, kgo.ClientID("app-1"))
	sub, err := kmsg.NewPtrGetTelemetrySubscriptionsRequest().RequestWith(ctx, app)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(sub.RequestedMetrics, ","); got != "org.apache.kafka.consumer.fetch,x.kgo.,org.apache.kafka.producer." || sub.PushIntervalMillis != 30000 {
		t.Errorf("app-1 is asked for %q every %d ms, want the three matching subscriptions' metrics every 30000 ms", got, sub.PushIntervalMillis)
	}
	other, err := kmsg.NewPtrGetTelemetrySubscriptionsRequest().RequestWith(ctx, b.kgoClient(t, kgo.ClientID("other")))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(other.RequestedMetrics, ","); got != "org.apache.kafka.consumer.fetch,x.kgo.," || other.PushIntervalMillis != 1000 {
		t.Errorf("other is asked for %q every %d ms, want every metric (\"\") every 1000 ms", got, other.PushIntervalMillis)
	}

	// A change to a subscription app-1 matches gives it a new subscription
	// id: its push under the old one is refused, and it asks again.
	alter("producers", "interval.ms", "20000")
	// The other sidecar reads the change at once when asked for the
	// subscription's configs (its telemetry view is at most a second old).
	dreq := kmsg.NewPtrDescribeConfigsRequest()
	dr := kmsg.NewDescribeConfigsRequestResource()
	dr.ResourceType, dr.ResourceName, dr.ConfigNames = kmsg.ConfigResourceTypeClientMetrics, "producers", []string{"interval.ms"}
	dreq.Resources = append(dreq.Resources, dr)
	if resp, err := dreq.RequestWith(ctx, app); err != nil || len(resp.Resources[0].Configs) != 1 || *resp.Resources[0].Configs[0].Value != "20000" {
		t.Fatalf("describe through the other sidecar: %v %+v", err, resp)
	}
	push := kmsg.NewPtrPushTelemetryRequest()
	push.ClientInstanceID, push.SubscriptionID = sub.ClientInstanceID, sub.SubscriptionID
	push.Metrics = otlpGauge("org.apache.kafka.producer.buffer.available.bytes", 5)
	if resp, err := push.RequestWith(ctx, app); err != nil || resp.ErrorCode != kerr.UnknownSubscriptionID.Code {
		t.Fatalf("push under the old subscription: %v %+v", err, resp)
	}
	again := kmsg.NewPtrGetTelemetrySubscriptionsRequest()
	again.ClientInstanceID = sub.ClientInstanceID
	sub2, err := again.RequestWith(ctx, app)
	if err != nil || sub2.ErrorCode != 0 || sub2.PushIntervalMillis != 20000 || sub2.SubscriptionID == sub.SubscriptionID {
		t.Fatalf("asking again: %v %+v", err, sub2)
	}
	push.SubscriptionID = sub2.SubscriptionID
	if resp, err := push.RequestWith(ctx, app); err != nil || resp.ErrorCode != 0 {
		t.Fatalf("push under the new subscription: %v %+v", err, resp)
	}
}
