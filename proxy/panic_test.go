package proxy

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafka-iggy/kafka-iggy/bridge"
)

// panicDecode is a Metadata request whose decoding panics.
type panicDecode struct{ *kmsg.MetadataRequest }

func (panicDecode) ReadFrom([]byte) error { panic("decode fault") }

// panicEncode is a Heartbeat response whose encoding panics.
type panicEncode struct{ *kmsg.HeartbeatResponse }

func (panicEncode) AppendTo([]byte) []byte { panic("encode fault") }

// TestPanicClosesOnlyItsConnection: a panic while decoding a request (a
// faulty request type), in its handler, or while encoding its response
// closes that request's connection with close_reason panic (counted), and
// the server goes on serving other connections.
func TestPanicClosesOnlyItsConnection(t *testing.T) {
	e := &env{metrics: newCountMetrics()}
	var tab *bridge.Table
	tab, err := bridge.NewTable(
		bridge.ApiVersionsAPI(func() *bridge.Table { return tab }),
		bridge.API{Key: 3, MinVersion: 0, MaxVersion: testMetadataMax, Handle: func(context.Context, *bridge.Request) (kmsg.Response, error) {
			return kmsg.NewPtrMetadataResponse(), nil
		}},
		bridge.API{Key: 0, MinVersion: 3, MaxVersion: testProduceMax, Handle: func(context.Context, *bridge.Request) (kmsg.Response, error) {
			panic("handler fault")
		}},
		bridge.API{Key: 12, MinVersion: 0, MaxVersion: 4, Handle: func(_ context.Context, rq *bridge.Request) (kmsg.Response, error) {
			return panicEncode{rq.Msg.ResponseKind().(*kmsg.HeartbeatResponse)}, nil
		}},
	)
	if err != nil {
		t.Fatal(err)
	}
	log, tl := newTestLogger(t)
	srv, err := New(testConfig(), tab, log, WithMetrics(e.metrics))
	if err != nil {
		t.Fatal(err)
	}
	srv.newRequest = func(key int16) kmsg.Request {
		if key == kmsg.Metadata.Int16() {
			return panicDecode{kmsg.NewPtrMetadataRequest()}
		}
		return kmsg.RequestForKey(key)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		_ = srv.Shutdown(ctx)
		tl.stop()
	})
	addr := srv.Addr().String()

	produce := kmsg.NewPtrProduceRequest()
	produce.SetVersion(7)
	produce.Acks = 1
	heartbeat := kmsg.NewPtrHeartbeatRequest()
	heartbeat.SetVersion(3)
	metadata := kmsg.NewPtrMetadataRequest()
	metadata.SetVersion(9)
	for i, tc := range []struct {
		name string
		req  kmsg.Request
	}{{"decode", metadata}, {"handler", produce}, {"encode", heartbeat}} {
		c := dial(t, addr)
		send(t, c, appendRequest(nil, int32(i), nil, tc.req))
		expectClosed(t, c)
		_ = c.Close()
		// OnClose counts it once gnet has closed the socket.
		deadline := time.Now().Add(testTimeout)
		for e.metrics.closedCount(ClosePanic) < i+1 {
			if time.Now().After(deadline) {
				t.Fatalf("%s panic: %d panic closes counted, want %d", tc.name, e.metrics.closedCount(ClosePanic), i+1)
			}
			time.Sleep(time.Millisecond)
		}
		// The process lives: another connection is served.
		c2 := dial(t, addr)
		send(t, c2, appendRequest(nil, 100, nil, apiVersionsReq(3)))
		if corr, _ := readResponse(t, c2); corr != 100 {
			t.Fatalf("after the %s panic: corr %d, want 100", tc.name, corr)
		}
		_ = c2.Close()
	}
}
