package bridge_test

import (
	"context"
	"io"
	"net"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafka-iggy/kafka-iggy/bridge"
	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
	"github.com/kafka-iggy/kafka-iggy/budget"
	"github.com/kafka-iggy/kafka-iggy/embedded"
	"github.com/kafka-iggy/kafka-iggy/embedded/embedtest"
	"github.com/kafka-iggy/kafka-iggy/proxy"
)

// stack is the whole sidecar in one process, over real TCP: the embedded Iggy
// server, the Iggy session pool, the bridge and the gnet front door.
type stack struct {
	Iggy   *embedded.Server
	Client *iggy.Client
	Bridge *bridge.Bridge
	Proxy  *proxy.Server
	Addr   string // Kafka bootstrap address
}

// stackOpts tweaks a stack before it starts.
type stackOpts struct {
	embedded    embedded.Config
	client      iggy.Config
	bridge      bridge.Config
	proxy       proxy.Config
	bridgeLog   io.Writer    // also gets the bridge's log lines (warn and up)
	iggyMetrics iggy.Metrics // receives the Iggy client's measurements
	// shared, when set, is the Iggy server of another stack: this stack is
	// a second sidecar on it (no embedded server of its own).
	shared *embedded.Server
	// iggyVia, when set, returns the address the Iggy client dials in place
	// of the server's (a fault proxy in front of it).
	iggyVia func(server string) string
	// metrics, when set, receives the bridge's measurements.
	metrics bridge.Metrics
	// budget is shared by the bridge and the front door (nil: the proxy's
	// own); fetchBudget, when set, is the bridge's alone (the front door
	// keeps its own), so a test can starve fetches without stopping requests.
	budget, fetchBudget *budget.Budget
}

// startStack starts a stack on loopback ports and stops it when the test ends.
func startStack(t testing.TB, mods ...func(*stackOpts)) *stack {
	t.Helper()
	o := stackOpts{
		embedded: embedded.DefaultConfig(),
		client:   iggy.DefaultConfig(),
		bridge:   bridge.DefaultConfig(),
		proxy:    proxy.DefaultConfig(),
	}
	o.embedded.Listen = "127.0.0.1:0"
	o.proxy.Listener.Address = "127.0.0.1:0"
	o.client.PoolSize = 2
	// KAFKA_IGGY_TEST_IGGY_PROTOCOL=0.12 runs the stacks on an embedded server
	// of protocol 0.12 (make test runs this package a second time so).
	if p := os.Getenv("KAFKA_IGGY_TEST_IGGY_PROTOCOL"); p != "" {
		o.embedded.Protocol = p
	}
	for _, m := range mods {
		m(&o)
	}
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	srv := o.shared
	if srv == nil {
		srv = embedtest.StartWith(t, o.embedded, log.With().Str("component", "embedded").Logger())
	}

	o.client.Address = srv.Addr().String()
	if o.iggyVia != nil {
		o.client.Address = o.iggyVia(o.client.Address)
	}
	var iopts []iggy.Option
	if o.iggyMetrics != nil {
		iopts = append(iopts, iggy.WithMetrics(o.iggyMetrics))
	}
	cl, err := iggy.New(o.client, log.With().Str("component", "iggy").Logger(), iopts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Close() })

	blog := log
	if o.bridgeLog != nil {
		blog = zerolog.New(io.MultiWriter(zerolog.NewTestWriter(t), o.bridgeLog)).Level(zerolog.WarnLevel)
	}
	bb := o.budget
	if o.fetchBudget != nil {
		bb = o.fetchBudget
	}
	br, err := bridge.New(bridge.Options{Config: o.bridge, Client: cl, Broker: bridge.Broker{NodeID: 0, Host: "127.0.0.1"}, Log: blog, Metrics: o.metrics, Budget: bb})
	if err != nil {
		t.Fatal(err)
	}
	px, err := proxy.New(o.proxy, br.Table(), log.With().Str("component", "proxy").Logger(), proxy.WithBudget(o.budget))
	if err != nil {
		t.Fatal(err)
	}
	if err := px.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sctx, c := context.WithTimeout(context.Background(), 10*time.Second)
		defer c()
		_ = px.Shutdown(sctx)
	})
	host, port, _ := net.SplitHostPort(px.Addr().String())
	p, _ := strconv.Atoi(port)
	br.SetBroker(bridge.Broker{NodeID: 0, Host: host, Port: int32(p)})
	return &stack{Iggy: srv, Client: cl, Bridge: br, Proxy: px, Addr: px.Addr().String()}
}

// kgoClient returns a franz-go client of the stack, closed at test end.
func (s *stack) kgoClient(t testing.TB, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(s.Addr)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}
