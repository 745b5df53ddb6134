package bridge_test

import (
	"context"
	"encoding/binary"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafka-iggy/kafka-iggy/bridge"
)

// otlpGauge is an OTLP MetricsData with one gauge point of name and value,
// attribute topic=t1 (protobuf written by hand: field tags and lengths).
func otlpGauge(name string, v float64) []byte {
	ld := func(num int, b []byte) []byte {
		out := binary.AppendUvarint(nil, uint64(num<<3|2))
		out = binary.AppendUvarint(out, uint64(len(b)))
		return append(out, b...)
	}
	attr := ld(7, append(ld(1, []byte("topic")), ld(2, ld(1, []byte("t1")))...))
	pt := binary.LittleEndian.AppendUint64(append(attr, 4<<3|1), math.Float64bits(v))
	metric := append(ld(1, []byte(name)), ld(5, ld(1, pt))...)
	return ld(1, ld(2, ld(2, metric)))
}

// Through the front door, with telemetry enabled: the subscription carries
// the configured metrics, interval and limits; a push is accepted and its
// point exported with the client's id; the error cases answer Kafka's codes.
func TestTelemetryThroughTheFrontDoor(t *testing.T) {
	s := startStack(t, func(o *stackOpts) {
		o.bridge.Telemetry.Enabled = true
		o.bridge.Telemetry.PushInterval = time.Hour
	})
	cl := s.kgoClient(t, kgo.ClientID("app-7"))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	sub, err := kmsg.NewPtrGetTelemetrySubscriptionsRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if sub.ErrorCode != 0 || sub.ClientInstanceID == ([16]byte{}) || sub.PushIntervalMillis != 3600000 ||
		sub.TelemetryMaxBytes != 1<<20 || sub.DeltaTemporality || len(sub.AcceptedCompressionTypes) != 4 ||
		strings.Join(sub.RequestedMetrics, ",") != "org.apache.kafka.producer.,org.apache.kafka.consumer." {
		t.Fatalf("subscription %+v", sub)
	}
	pushReq := func(mod func(*kmsg.PushTelemetryRequest)) int16 {
		t.Helper()
		req := kmsg.NewPtrPushTelemetryRequest()
		req.ClientInstanceID, req.SubscriptionID = sub.ClientInstanceID, sub.SubscriptionID
		req.Metrics = otlpGauge("org.apache.kafka.producer.buffer.available.bytes", 5)
		if mod != nil {
			mod(req)
		}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.ErrorCode
	}
	if code := pushReq(nil); code != 0 {
		t.Fatalf("push: %v", kerr.ErrorForCode(code))
	}
	if code := pushReq(nil); code != kerr.ThrottlingQuotaExceeded.Code {
		t.Errorf("second push within the hour: %d", code)
	}
	if code := pushReq(func(r *kmsg.PushTelemetryRequest) { r.ClientInstanceID = [16]byte{} }); code != kerr.InvalidRequest.Code {
		t.Errorf("zero instance id: %d", code)
	}
	other, err := kmsg.NewPtrGetTelemetrySubscriptionsRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if code := pushReq(func(r *kmsg.PushTelemetryRequest) { r.ClientInstanceID = other.ClientInstanceID }); code != kerr.UnknownSubscriptionID.Code {
		t.Errorf("another instance's subscription id: %d", code)
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(s.Bridge.Telemetry())
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, mf := range mfs {
		if mf.GetName() != "org_apache_kafka_producer_buffer_available_bytes" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			found = labels["client_id"] == "app-7" && labels["topic"] == "t1" && labels["client_instance_id"] != "" && m.GetGauge().GetValue() == 5
		}
	}
	if !found {
		t.Fatalf("the pushed gauge is not exported with the client's labels: %v", mfs)
	}
}

// Off by default: no row, nothing to register.
func TestTelemetryOffByDefault(t *testing.T) {
	s := startStack(t)
	if s.Bridge.Telemetry() != nil {
		t.Error("a telemetry store without telemetry.enabled")
	}
	for _, key := range []int16{71, 72} {
		if _, ok := s.Bridge.Table().Lookup(key); ok {
			t.Errorf("key %d served with telemetry off", key)
		}
	}
	if bridge.DefaultConfig().Telemetry.Enabled {
		t.Error("telemetry.enabled defaults to true")
	}
}
