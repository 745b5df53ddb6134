package proxy

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafka-iggy/kafka-iggy/bridge"
	"github.com/kafka-iggy/kafka-iggy/embedded/embedtest"
)

// TestDrainServesUnreadAcksZeroProduce: acks=0 produce frames still unread
// when the drain starts (behind a request holding the connection's only
// in-flight slot) are served before the drain ends, not dropped; a
// request that does not complete once received (ApiVersions) is refused
// by the close that ends the drain.
func TestDrainServesUnreadAcksZeroProduce(t *testing.T) {
	g := newGate()
	produced := make(chan int32, 16)
	var tab *bridge.Table
	tab, err := bridge.NewTable(
		bridge.ApiVersionsAPI(func() *bridge.Table { return tab }),
		bridge.API{Key: 0, MinVersion: 3, MaxVersion: testProduceMax, Completes: true,
			Handle: func(_ context.Context, rq *bridge.Request) (kmsg.Response, error) {
				produced <- rq.CorrID
				return nil, nil // acks=0
			}},
		bridge.API{Key: 12, MinVersion: 0, MaxVersion: 4, Handle: g.handle},
	)
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig()
	cfg.Limits.MaxInFlight = 1
	log, tl := newTestLogger(t)
	srv, err := New(cfg, tab, log)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer tl.stop()

	c := dial(t, srv.Addr().String())
	send(t, c, appendRequest(nil, 1, &testClientID, kmsg.NewPtrHeartbeatRequest()))
	g.waitEntered(t)
	var batch []byte
	const produces = 5
	for i := int32(0); i < produces; i++ {
		p := kmsg.NewPtrProduceRequest()
		p.Version, p.Acks, p.TimeoutMillis = 9, 0, 1000
		batch = appendRequest(batch, 10+i, &testClientID, p)
	}
	batch = appendRequest(batch, 20, &testClientID, apiVersionsReq(3))
	send(t, c, batch)

	done := make(chan error, 1)
	go func() { done <- srv.Shutdown(ctx) }()
	embedtest.WaitFor(t, testTimeout, "draining", srv.draining.Load)
	g.open(1)
	if corr, _ := readResponse(t, c); corr != 1 {
		t.Fatalf("corr %d, want 1", corr)
	}
	expectClosed(t, c) // ApiVersions refused by the close
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("shutdown: %v", err)
		}
	case <-time.After(testTimeout):
		t.Fatal("Shutdown did not return")
	}
	for i := int32(0); i < produces; i++ {
		select {
		case corr := <-produced:
			if corr != 10+i {
				t.Fatalf("produce %d served as corr %d, want %d", i, corr, 10+i)
			}
		default:
			t.Fatalf("%d of %d acks=0 produce requests served before the drain ended", i, produces)
		}
	}
}

// TestLeftoversRunInTheWorkerPool: acks=0 produce frames still unread
// when their client closes (the connection parked on a full worker queue)
// are served, as Kafka serves what it read before a close, but on the
// worker pool like any request: with its one worker busy they wait for it
// instead of running beside it.
func TestLeftoversRunInTheWorkerPool(t *testing.T) {
	g := newGate()
	produced := make(chan int32, 16)
	var tab *bridge.Table
	tab, err := bridge.NewTable(
		bridge.ApiVersionsAPI(func() *bridge.Table { return tab }),
		bridge.API{Key: 0, MinVersion: 3, MaxVersion: testProduceMax, Completes: true,
			Handle: func(_ context.Context, rq *bridge.Request) (kmsg.Response, error) {
				n := g.cur.Add(1)
				defer g.cur.Add(-1)
				for p := g.peak.Load(); n > p && !g.peak.CompareAndSwap(p, n); p = g.peak.Load() {
				}
				produced <- rq.CorrID
				return nil, nil // acks=0
			}},
		bridge.API{Key: 12, MinVersion: 0, MaxVersion: 4, Handle: g.handle},
	)
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig()
	cfg.Gnet.WorkerPoolSize, cfg.Gnet.WorkerQueueSize = 1, 1
	log, tl := newTestLogger(t)
	srv, err := New(cfg, tab, log)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer tl.stop()
	defer func() { _ = srv.Shutdown(ctx) }()

	busy := dial(t, srv.Addr().String())
	send(t, busy, appendRequest(nil, 1, &testClientID, kmsg.NewPtrHeartbeatRequest()))
	g.waitEntered(t) // the only worker is taken
	queued := dial(t, srv.Addr().String())
	send(t, queued, appendRequest(nil, 2, &testClientID, kmsg.NewPtrHeartbeatRequest()))
	embedtest.WaitFor(t, testTimeout, "the queue full", func() bool { return len(srv.pool.jobs) == 1 })

	c := dial(t, srv.Addr().String())
	var batch []byte
	const produces = 5
	for i := int32(0); i < produces; i++ {
		p := kmsg.NewPtrProduceRequest()
		p.Version, p.Acks, p.TimeoutMillis = 9, 0, 1000
		batch = appendRequest(batch, 10+i, &testClientID, p)
	}
	send(t, c, batch)
	_ = c.Close()
	// Its produces wait for the pool's queue, not run beside the busy
	// worker.
	embedtest.WaitFor(t, testTimeout, "the leftovers waiting for the pool", func() bool { return srv.pool.blocked.Load() == 1 })
	select {
	case corr := <-produced:
		t.Fatalf("leftover produce %d served while the only worker is busy", corr)
	default:
	}
	g.open(1)
	if corr := g.waitEntered(t); corr != 2 {
		t.Fatalf("corr %d entered, want 2", corr)
	}
	g.open(2)
	for i := int32(0); i < produces; i++ {
		select {
		case corr := <-produced:
			if corr != 10+i {
				t.Fatalf("produce %d served as corr %d, want %d", i, corr, 10+i)
			}
		case <-time.After(testTimeout):
			t.Fatalf("%d of %d leftover produce requests served", i, produces)
		}
	}
	if p := g.peak.Load(); p != 1 {
		t.Fatalf("%d handlers ran at once with one worker", p)
	}
}
