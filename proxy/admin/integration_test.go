package admin

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafka-iggy/kafka-iggy/bridge"
	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
	"github.com/kafka-iggy/kafka-iggy/embedded/embedtest"
	"github.com/kafka-iggy/kafka-iggy/proxy"
)

// /readyz follows the Iggy session pool: 503 before the client has a
// session, 200 once one is logged in, 503 when the server goes away, 200
// again when it is back; the upstream series move with it.
func TestReadyzFollowsIggySessions(t *testing.T) {
	srv := embedtest.Start(t, "127.0.0.1:0", nil)
	addr := srv.Addr().String()

	m := NewMetrics("test")
	r := NewReadiness()
	cfg := iggy.DefaultConfig()
	cfg.Address = addr
	cfg.PoolSize = 2
	cfg.BackoffMin = 10 * time.Millisecond
	cfg.BackoffMax = 50 * time.Millisecond
	cfg.KeepaliveInterval = 50 * time.Millisecond // notice the server's absence while idle
	client, err := iggy.New(cfg, zerolog.New(io.Discard), iggy.WithMetrics(m.Iggy()))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	r.AddCheck("iggy", client.Ready)
	base := startAdmin(t, m, r)

	readyz := func() int { code, _ := get(t, base+"/readyz"); return code }
	if code, body := get(t, base+"/readyz"); code != http.StatusServiceUnavailable || body != "not ready: iggy\n" {
		t.Fatalf("/readyz before Start = %d %q", code, body)
	}

	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if err := client.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if code := readyz(); code != http.StatusOK {
		t.Fatalf("/readyz after Start = %d", code)
	}
	embedtest.WaitFor(t, testTimeout, "both sessions up in the metrics", func() bool {
		return embedtest.Scrape(t, base+"/metrics").Value("kafka_iggy_upstream_sessions_up") == 2
	})
	if err := client.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	if f := embedtest.Scrape(t, base+"/metrics"); f.Value("kafka_iggy_upstream_requests_total", "result", "ok") < 1 ||
		f.Value("kafka_iggy_upstream_request_duration_seconds") < 1 {
		t.Fatal("a successful Iggy request was not counted")
	}

	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	embedtest.WaitFor(t, testTimeout, "/readyz 503 with the Iggy server gone", func() bool { return readyz() == http.StatusServiceUnavailable })
	embedtest.WaitFor(t, testTimeout, "sessions_up 0", func() bool { return embedtest.Scrape(t, base+"/metrics").Value("kafka_iggy_upstream_sessions_up") == 0 })

	srv = embedtest.Start(t, addr, nil)
	defer srv.Close()
	embedtest.WaitFor(t, testTimeout, "/readyz 200 with the Iggy server back", func() bool { return readyz() == http.StatusOK })
	embedtest.WaitFor(t, testTimeout, "reconnects counted", func() bool {
		return embedtest.Scrape(t, base+"/metrics").Value("kafka_iggy_upstream_reconnects_total") >= 1
	})
}

// A real Kafka client against the front door with the Prometheus adapter:
// the request, byte and connection series move.
func TestFrontDoorMetricsMove(t *testing.T) {
	m := NewMetrics("test")
	base := startAdmin(t, m, NewReadiness())

	var srv *proxy.Server
	var tab *bridge.Table
	tab, err := bridge.NewTable(
		bridge.ApiVersionsAPI(func() *bridge.Table { return tab }),
		bridge.API{Key: 3, MinVersion: 0, MaxVersion: 12, Handle: func(_ context.Context, rq *bridge.Request) (kmsg.Response, error) {
			resp := rq.Msg.ResponseKind().(*kmsg.MetadataResponse)
			host, port := srv.Advertised()
			b := kmsg.NewMetadataResponseBroker()
			b.NodeID, b.Host, b.Port = 0, host, port
			resp.Brokers = append(resp.Brokers, b)
			return resp, nil
		}},
	)
	if err != nil {
		t.Fatal(err)
	}
	pcfg := proxy.DefaultConfig()
	pcfg.Listener.Address = "127.0.0.1:0"
	srv, err = proxy.New(pcfg, tab, zerolog.New(io.Discard), proxy.WithMetrics(m.Proxy()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := srv.Shutdown(ctx); err != nil {
			t.Error(err)
		}
	}()

	before := embedtest.Scrape(t, base+"/metrics")
	cl, err := kgo.NewClient(kgo.SeedBrokers(srv.Addr().String()))
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl); err != nil {
			t.Fatal(err)
		}
	}
	after := embedtest.Scrape(t, base+"/metrics")
	moved := []struct {
		name   string
		labels []string
		min    float64
	}{
		{"kafka_iggy_requests_total", []string{"api", "ApiVersions", "outcome", "ok"}, 1},
		{"kafka_iggy_requests_total", []string{"api", "Metadata", "outcome", "ok"}, 3},
		{"kafka_iggy_request_duration_seconds", []string{"api", "Metadata"}, 3},
		{"kafka_iggy_connections_opened_total", nil, 1},
		{"kafka_iggy_connections_active", nil, 1},
		{"kafka_iggy_received_bytes_total", nil, 100},
		{"kafka_iggy_sent_bytes_total", nil, 100},
	}
	for _, c := range moved {
		if d := after.Value(c.name, c.labels...) - before.Value(c.name, c.labels...); d < c.min {
			t.Errorf("%s%v moved by %v, want at least %v", c.name, c.labels, d, c.min)
		}
	}
	cl.Close()
	embedtest.WaitFor(t, testTimeout, "the closed connection counted", func() bool {
		f := embedtest.Scrape(t, base+"/metrics")
		return f.Value("kafka_iggy_connections_closed_total") >= 1 && f.Value("kafka_iggy_connections_active") == 0
	})
}
