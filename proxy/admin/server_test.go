package admin

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
	"github.com/kafka-iggy/kafka-iggy/embedded/embedtest"
	"github.com/kafka-iggy/kafka-iggy/proxy"
)

func TestHealthzReadyzAndDraining(t *testing.T) {
	m := NewMetrics("test")
	r := NewReadiness()
	var listener, upstream atomic.Bool
	r.AddCheck("listener", listener.Load)
	r.AddCheck("iggy", upstream.Load)
	base := startAdmin(t, m, r)

	if code, body := get(t, base+"/healthz"); code != 200 || body != "ok\n" {
		t.Fatalf("/healthz = %d %q", code, body)
	}
	code, body := get(t, base+"/readyz")
	if code != http.StatusServiceUnavailable || body != "not ready: listener\nnot ready: iggy\n" {
		t.Fatalf("/readyz with nothing up = %d %q", code, body)
	}
	listener.Store(true)
	if code, body := get(t, base+"/readyz"); code != 503 || body != "not ready: iggy\n" {
		t.Fatalf("/readyz with the listener up = %d %q", code, body)
	}
	upstream.Store(true)
	if code, body := get(t, base+"/readyz"); code != 200 || body != "ok\n" {
		t.Fatalf("/readyz with everything up = %d %q", code, body)
	}
	r.SetDraining()
	if code, body := get(t, base+"/readyz"); code != 503 || body != "not ready: draining\n" {
		t.Fatalf("/readyz while draining = %d %q", code, body)
	}
	// Liveness holds while draining: the kubelet must not restart a
	// sidecar that is finishing its in-flight requests.
	if code, _ := get(t, base+"/healthz"); code != 200 {
		t.Fatalf("/healthz while draining = %d", code)
	}
	if code, _ := get(t, base+"/debug/pprof/"); code != 200 {
		t.Fatalf("/debug/pprof/ with admin.pprof = %d", code)
	}
	if code, _ := get(t, base+"/nothing"); code != 404 {
		t.Fatalf("/nothing = %d", code)
	}
	fams := embedtest.Scrape(t, base+"/metrics")
	if v := fams.Value("kafka_iggy_build_info", "version", "test"); v != 1 {
		t.Fatalf("build_info = %v", v)
	}
	if _, ok := fams["go_goroutines"]; !ok {
		t.Fatal("no Go runtime metrics")
	}
}

// /healthz answers 503 naming each stalled part while a liveness check
// reports one, and 200 again once it moves.
func TestHealthzFollowsLiveness(t *testing.T) {
	r := NewReadiness()
	var stalled atomic.Value
	stalled.Store("")
	r.AddLiveness("proxy", func() string { return stalled.Load().(string) })
	base := startAdmin(t, NewMetrics("test"), r)
	if code, body := get(t, base+"/healthz"); code != 200 || body != "ok\n" {
		t.Fatalf("/healthz while moving = %d %q", code, body)
	}
	stalled.Store("the worker pool is stuck")
	if code, body := get(t, base+"/healthz"); code != 503 || body != "not alive: proxy: the worker pool is stuck\n" {
		t.Fatalf("/healthz while stalled = %d %q", code, body)
	}
	stalled.Store("")
	if code, _ := get(t, base+"/healthz"); code != 200 {
		t.Fatalf("/healthz after the stall = %d", code)
	}
}

func TestDisabledAndBadAddress(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Enabled = false
	s := New(cfg, NewMetrics("x"), NewReadiness(), zerolog.New(io.Discard))
	if err := s.Start(context.Background()); err != nil || s.Addr() != nil {
		t.Fatalf("disabled Start = %v, Addr %v", err, s.Addr())
	}
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}

	cfg = DefaultConfig()
	cfg.Address = "127.0.0.1:99999"
	if err := cfg.Validate(); err == nil || !strings.HasPrefix(err.Error(), "admin.address: ") {
		t.Fatalf("Validate(port 99999) = %v", err)
	}
	cfg.Address = "no-port"
	cfg.ReadHeaderTimeout = 0
	err := cfg.Validate()
	if err == nil || !strings.Contains(err.Error(), "admin.address: ") || !strings.Contains(err.Error(), "admin.read_header_timeout: ") {
		t.Fatalf("Validate = %v", err)
	}
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestProxyAdapter(t *testing.T) {
	m := NewMetrics("test")
	base := startAdmin(t, m, NewReadiness())
	p := m.Proxy()
	p.ConnOpened()
	p.ConnOpened()
	p.ConnClosed(proxy.CloseClientClosed)
	p.Request(0, 9, 2*time.Millisecond, proxy.OutcomeOK)
	p.Request(0, 9, 3*time.Millisecond, proxy.OutcomeOK)
	p.Request(0, 9, time.Millisecond, proxy.OutcomeNoResponse)
	p.Request(18, 7, time.Millisecond, proxy.OutcomeUnsupportedVersion)
	p.Request(999, 70, time.Millisecond, proxy.OutcomeDecodeError) // outside the caches
	p.BytesIn(100)
	p.BytesOut(40)

	f := embedtest.Scrape(t, base+"/metrics")
	checks := []struct {
		name   string
		labels []string
		want   float64
	}{
		{"kafka_iggy_connections_opened_total", nil, 2},
		{"kafka_iggy_connections_closed_total", []string{"reason", "client_closed"}, 1},
		{"kafka_iggy_connections_active", nil, 1},
		{"kafka_iggy_requests_total", []string{"api", "Produce", "version", "9", "outcome", "ok"}, 2},
		{"kafka_iggy_requests_total", []string{"api", "Produce", "outcome", "no_response"}, 1},
		{"kafka_iggy_requests_total", []string{"api", "ApiVersions", "version", "7", "outcome", "unsupported_version"}, 1},
		{"kafka_iggy_requests_total", []string{"api", "Unknown999", "version", "70", "outcome", "decode_error"}, 1},
		{"kafka_iggy_request_duration_seconds", []string{"api", "Produce"}, 3},
		{"kafka_iggy_request_duration_seconds", []string{"api", "Unknown999"}, 1},
		{"kafka_iggy_received_bytes_total", nil, 100},
		{"kafka_iggy_sent_bytes_total", nil, 40},
	}
	for _, c := range checks {
		if got := f.Value(c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
}

func TestIggyAndBridgeAdapters(t *testing.T) {
	m := NewMetrics("test")
	base := startAdmin(t, m, NewReadiness())
	i := m.Iggy()
	i.SessionsUp(3)
	i.Reconnect()
	i.InFlight(2)
	i.QueueDepth(1, 7)
	i.QueueDepth(1000, 2)
	i.Batch(10, 4096, 3)
	i.Request("message.send", time.Millisecond, nil)
	i.Request("message.send", time.Millisecond, &iggy.Error{Op: "message.send", Sent: true, Err: icodec.StatusTopicIDNotFound})
	i.Request("message.poll", time.Second, &iggy.Error{Op: "message.poll", Sent: true, Err: iggy.ErrTimeout})
	i.Request("message.poll", time.Second, errors.New("boom"))
	b := m.Bridge()
	b.KafkaError(0, 3)
	b.KafkaError(0, 0)
	b.KafkaError(1, 32000)
	b.SetGroups(2)
	b.SetGroupMembers(5)
	b.AddFetchWaiters(2)
	b.AddFetchWaiters(-1)

	f := embedtest.Scrape(t, base+"/metrics")
	checks := []struct {
		name   string
		labels []string
		want   float64
	}{
		{"kafka_iggy_upstream_sessions_up", nil, 3},
		{"kafka_iggy_upstream_reconnects_total", nil, 1},
		{"kafka_iggy_upstream_requests_in_flight", nil, 2},
		{"kafka_iggy_upstream_lane_queue_depth", []string{"lane", "1"}, 7},
		{"kafka_iggy_upstream_lane_queue_depth", []string{"lane", "1000"}, 2},
		{"kafka_iggy_upstream_batch_messages", nil, 1},
		{"kafka_iggy_upstream_batch_bytes", nil, 1},
		{"kafka_iggy_upstream_batch_callers", nil, 1},
		{"kafka_iggy_upstream_requests_total", []string{"op", "message.send", "result", "ok"}, 1},
		{"kafka_iggy_upstream_requests_total", []string{"op", "message.send", "result", icodec.StatusTopicIDNotFound.Name()}, 1},
		{"kafka_iggy_upstream_requests_total", []string{"op", "message.poll", "result", "timeout"}, 1},
		{"kafka_iggy_upstream_requests_total", []string{"op", "message.poll", "result", "error"}, 1},
		{"kafka_iggy_upstream_request_duration_seconds", []string{"op", "message.send"}, 2},
		{"kafka_iggy_errors_total", []string{"api", "Produce", "error", "UNKNOWN_TOPIC_OR_PARTITION"}, 1},
		{"kafka_iggy_errors_total", []string{"api", "Fetch", "error", "UNKNOWN_32000"}, 1},
		{"kafka_iggy_errors_total", nil, 2},
		{"kafka_iggy_groups", nil, 2},
		{"kafka_iggy_group_members", nil, 5},
		{"kafka_iggy_fetch_waiters", nil, 1},
	}
	for _, c := range checks {
		if got := f.Value(c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
}

// The request hook runs on the front door's workers for every request: once
// a label set has been seen it must not allocate.
func TestRequestHookDoesNotAllocate(t *testing.T) {
	m := NewMetrics("test")
	p, i := m.Proxy(), m.Iggy()
	p.Request(1, 12, time.Millisecond, proxy.OutcomeOK)
	i.Request("message.send", time.Millisecond, nil)
	i.QueueDepth(3, 1)
	allocs := testing.AllocsPerRun(1000, func() {
		p.Request(1, 12, time.Millisecond, proxy.OutcomeOK)
		p.BytesIn(10)
		p.BytesOut(10)
		i.Request("message.send", time.Millisecond, nil)
		i.QueueDepth(3, 2)
		i.Batch(1, 100, 1)
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per request", allocs)
	}
}

func BenchmarkProxyRequestHook(b *testing.B) {
	p := NewMetrics("bench").Proxy()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			p.Request(0, 9, time.Millisecond, proxy.OutcomeOK)
		}
	})
}

// The admin listener's log lines carry each key once: the caller names the
// component (serve.go does, as for every component), New adds nothing.
func TestLogLineKeysOnce(t *testing.T) {
	var out bytes.Buffer
	cfg := DefaultConfig()
	cfg.Address = "127.0.0.1:0"
	s := New(cfg, NewMetrics("x"), NewReadiness(), zerolog.New(&out).With().Str("component", "admin").Logger())
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	line, _, _ := bytes.Cut(out.Bytes(), []byte("\n"))
	if !bytes.Contains(line, []byte("admin listener up")) {
		t.Fatalf("no listener line: %q", out.String())
	}
	if n := bytes.Count(line, []byte(`"component":`)); n != 1 {
		t.Fatalf("component appears %d times in %s", n, line)
	}
}
