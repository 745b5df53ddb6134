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
