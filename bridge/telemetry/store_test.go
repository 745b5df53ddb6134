package telemetry

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy/xerial"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kafka-iggy/kafka-iggy/budget"
)

// clock is a settable time source for the store.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func testStore(t *testing.T, mut func(*Config)) (*Store, *clock) {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Enabled = true
	cfg.PushInterval = time.Second
	if mut != nil {
		mut(&cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	s := NewStore(cfg, budget.New(64<<20), zerolog.Nop())
	c := &clock{t: time.Unix(1_700_000_000, 0)}
	s.now = c.now
	return s, c
}

func push(s *Store, sub Subscription, payload []byte) Push {
	return Push{ClientInstanceID: sub.ClientInstanceID, SubscriptionID: sub.SubscriptionID, Metrics: payload, ClientID: "app-1"}
}

// gather renders the store's series in the text format.
func gather(t *testing.T, s *Store) string {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(s)
	var b strings.Builder
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			b.WriteString(mf.GetName())
			for _, l := range m.GetLabel() {
				b.WriteString(" " + l.GetName() + "=" + l.GetValue())
			}
			b.WriteString("\n")
		}
	}
	return b.String()
}

func TestSubscribeHandsOutInstanceIDs(t *testing.T) {
	s, c := testStore(t, nil)
	a := s.Subscribe([16]byte{})
	b := s.Subscribe([16]byte{})
	if a.ErrorCode != 0 || a.ClientInstanceID == ([16]byte{}) || a.ClientInstanceID == b.ClientInstanceID {
		t.Fatalf("ids %x %x (code %d): want two distinct non-zero ids", a.ClientInstanceID, b.ClientInstanceID, a.ErrorCode)
	}
	if v := a.ClientInstanceID[6] >> 4; v != 4 {
		t.Errorf("uuid version %d, want 4", v)
	}
	// Another sidecar of the same configuration gives the instance the same
	// subscription id; another metric list a different one.
	same, _ := testStore(t, nil)
	if got := same.Subscribe(a.ClientInstanceID).SubscriptionID; got != a.SubscriptionID {
		t.Errorf("subscription id %d on another store, want %d", got, a.SubscriptionID)
	}
	other, _ := testStore(t, func(c *Config) { c.Metrics = []string{""} })
	if other.Subscribe(a.ClientInstanceID).SubscriptionID == a.SubscriptionID {
		t.Error("another metric list has the same subscription id")
	}
	// Asking again within the interval is throttled; after it, answered.
	if got := s.Subscribe(a.ClientInstanceID).ErrorCode; got != kerr.ThrottlingQuotaExceeded.Code {
		t.Errorf("second ask at once: %d, want THROTTLING_QUOTA_EXCEEDED", got)
	}
	c.t = c.t.Add(time.Second)
	if got := s.Subscribe(a.ClientInstanceID); got.ErrorCode != 0 || got.ClientInstanceID != a.ClientInstanceID {
		t.Errorf("ask after the interval: code %d id %x", got.ErrorCode, got.ClientInstanceID)
	}
}

func TestPushErrors(t *testing.T) {
	ctx := context.Background()
	s, c := testStore(t, func(c *Config) { c.MaxBytes = 1000 })
	sub := s.Subscribe([16]byte{})
	good := samplePayload()

	check := func(what string, p Push, want int16) {
		t.Helper()
		if got := s.Push(ctx, p); got != want {
			t.Errorf("%s: code %d (%v), want %d (%v)", what, got, kerr.ErrorForCode(got), want, kerr.ErrorForCode(want))
		}
	}
	check("zero instance id", Push{SubscriptionID: sub.SubscriptionID, Metrics: good}, kerr.InvalidRequest.Code)
	p := push(s, sub, good)
	p.SubscriptionID++
	// The first push after a Get is in time, and counts for the interval
	// even though it then fails, as in Kafka.
	check("wrong subscription id", p, kerr.UnknownSubscriptionID.Code)
	check("too early", push(s, sub, good), kerr.ThrottlingQuotaExceeded.Code)
	next := func() { c.t = c.t.Add(time.Second) }
	next()
	p = push(s, sub, good)
	p.CompressionType = 7
	check("unknown compression", p, kerr.UnsupportedCompressionType.Code)
	next()
	check("too large", push(s, sub, make([]byte, 1001)), kerr.TelemetryTooLarge.Code)
	next()
	check("not OTLP", push(s, sub, []byte{0x0a, 0xff, 0xff}), kerr.InvalidRecord.Code)
	next()
	check("in time", push(s, sub, good), 0)
	check("too early again", push(s, sub, good), kerr.ThrottlingQuotaExceeded.Code)
	p = push(s, sub, good)
	p.Terminating = true
	check("terminating, early", p, 0)
	next()
	check("after terminating", push(s, sub, good), kerr.InvalidRequest.Code)
	// An instance this store never saw (another sidecar's) is registered,
	// and its own subscription id accepted.
	id := [16]byte{1, 2, 3}
	check("unknown instance, wrong subscription", Push{ClientInstanceID: id, SubscriptionID: sub.SubscriptionID, Metrics: good}, kerr.UnknownSubscriptionID.Code)
	next()
	check("unknown instance, its subscription", Push{ClientInstanceID: id, SubscriptionID: s.subscriptionID(id), Metrics: good}, 0)
}

func TestPushCompressed(t *testing.T) {
	payload := samplePayload()
	var gz, lz bytes.Buffer
	gw := gzip.NewWriter(&gz)
	gw.Write(payload)
	gw.Close()
	lw := lz4.NewWriter(&lz)
	lw.Write(payload)
	lw.Close()
	ze, _ := zstd.NewWriter(nil)
	zs := ze.EncodeAll(payload, nil)
	for _, tc := range []struct {
		codec int8
		data  []byte
	}{{compressionGzip, gz.Bytes()}, {compressionLZ4, lz.Bytes()}, {compressionZstd, zs}, {compressionSnappy, xerial.Encode(nil, payload)}} {
		s, _ := testStore(t, nil)
		sub := s.Subscribe([16]byte{})
		p := push(s, sub, tc.data)
		p.CompressionType = tc.codec
		if got := s.Push(context.Background(), p); got != 0 {
			t.Errorf("codec %d: code %d", tc.codec, got)
		}
		if out := gather(t, s); !strings.Contains(out, "org_apache_kafka_producer_record_send_total") {
			t.Errorf("codec %d: not exported:\n%s", tc.codec, out)
		}
	}
	// A bomb: 100 KiB of zeros pushed as 1 KiB limit × 8 is too large.
	s, _ := testStore(t, func(c *Config) { c.MaxBytes = 1024 })
	sub := s.Subscribe([16]byte{})
	p := push(s, sub, ze.EncodeAll(make([]byte, 100<<10), nil))
	p.CompressionType = compressionZstd
	if got := s.Push(context.Background(), p); got != kerr.TelemetryTooLarge.Code {
		t.Errorf("bomb: code %d, want TELEMETRY_TOO_LARGE", got)
	}
	p = push(s, s.Subscribe([16]byte{}), xerial.Encode(nil, make([]byte, 10<<10)))
	p.CompressionType = compressionSnappy
	if got := s.Push(context.Background(), p); got != kerr.TelemetryTooLarge.Code {
		t.Errorf("snappy bomb: code %d, want TELEMETRY_TOO_LARGE", got)
	}
	if b := s.budget.InUse(); b != 0 {
		t.Errorf("%d budget bytes still held after the pushes", b)
	}
}

func TestExportLabelsAndExpiry(t *testing.T) {
	s, c := testStore(t, nil)
	sub := s.Subscribe([16]byte{})
	payload := metricsData(nil,
		sumMetric("org.apache.kafka.producer.record.send.total", true,
			point(42, true, kvString("topic", "t1"), kvString("client_id", "spoofed"))),
		gaugeMetric("org.apache.kafka.admin.other", point(1, false)),                // not subscribed
		gaugeMetric("org.apache.kafka.producer.record.send.total", point(3, false)), // another kind: not sent
	)
	if got := s.Push(context.Background(), push(s, sub, payload)); got != 0 {
		t.Fatalf("push: %d", got)
	}
	id := uuidString(sub.ClientInstanceID)
	want := "org_apache_kafka_producer_record_send_total client_id=app-1 client_instance_id=" + id + " topic=t1\n"
	out := gather(t, s)
	if !strings.Contains(out, want) {
		t.Fatalf("export:\n%s\nwant the line\n%s", out, want)
	}
	if strings.Contains(out, "admin_other") {
		t.Errorf("an unsubscribed metric is exported:\n%s", out)
	}
	// A client naming a metric in the sidecar's own namespace is not
	// exported (with every metric subscribed).
	all, _ := testStore(t, func(c *Config) { c.Metrics = []string{""} })
	asub := all.Subscribe([16]byte{})
	if got := all.Push(context.Background(), push(all, asub, metricsData(nil,
		gaugeMetric("kafka_iggy.telemetry.clients", point(9, false)),
		gaugeMetric("app.metric", point(1, false))))); got != 0 {
		t.Fatalf("push: %d", got)
	}
	if v := value(t, all, "kafka_iggy_telemetry_clients"); v != 1 {
		t.Errorf("kafka_iggy_telemetry_clients = %v: a client's metric took the name", v)
	}
	if !strings.Contains(gather(t, all), "app_metric client_id=app-1") {
		t.Error("with every metric subscribed, app.metric is not exported")
	}
	if n := strings.Count(out, "org_apache_kafka_producer_record_send_total "); n != 1 {
		t.Fatalf("%d series of the metric, want 1 (the spoofed client_id label is not one)", n)
	}
	// Silent for three intervals: still there; past them: gone.
	c.t = c.t.Add(3 * time.Second)
	if !strings.Contains(gather(t, s), want) {
		t.Fatal("expired too soon")
	}
	c.t = c.t.Add(time.Millisecond)
	if out := gather(t, s); strings.Contains(out, "record_send") || value(t, s, "kafka_iggy_telemetry_clients") != 0 {
		t.Fatalf("not expired:\n%s", out)
	}
}

func TestCaps(t *testing.T) {
	s, c := testStore(t, func(c *Config) { c.MaxClients = 2; c.MaxSeriesPerClient = 1 })
	var subs []Subscription
	for range 3 {
		subs = append(subs, s.Subscribe([16]byte{}))
		c.t = c.t.Add(time.Millisecond)
	}
	// The first instance (least recently seen) was evicted by the third.
	if _, ok := s.instances[subs[0].ClientInstanceID]; ok {
		t.Error("the least recently seen instance is kept")
	}
	if got := s.Push(context.Background(), push(s, subs[2], samplePayload())); got != 0 {
		t.Fatalf("push: %d", got)
	}
	out := gather(t, s)
	if n := strings.Count(out, "org_apache_kafka"); n != 1 {
		t.Errorf("%d client series with max_series_per_client 1:\n%s", n, out)
	}
	for name, want := range map[string]float64{
		"kafka_iggy_telemetry_dropped_series_total":  3,
		"kafka_iggy_telemetry_evicted_clients_total": 1,
		"kafka_iggy_telemetry_clients":               2,
	} {
		if got := value(t, s, name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
}

// value returns the value of the store's unlabelled series name.
func value(t *testing.T, s *Store, name string) float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(s)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		m := mf.GetMetric()[0]
		if m.GetCounter() != nil {
			return m.GetCounter().GetValue()
		}
		return m.GetGauge().GetValue()
	}
	t.Fatalf("no series %s", name)
	return 0
}

func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	bad := DefaultConfig()
	bad.PushInterval, bad.MaxBytes, bad.MaxClients, bad.MaxSeriesPerClient = time.Millisecond, 0, 0, 0
	err := bad.Validate()
	for _, k := range []string{"push_interval", "max_bytes", "max_clients", "max_series_per_client"} {
		if err == nil || !strings.Contains(err.Error(), "telemetry."+k) {
			t.Errorf("no error for telemetry.%s: %v", k, err)
		}
	}
}
