package proxy

import (
	"context"
	"encoding/binary"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafka-iggy/kafka-iggy/bridge"
	"github.com/kafka-iggy/kafka-iggy/embedded/embedtest"
)

// bigConfigs is a DescribeConfigs answer of n configs of 1000-byte values
// (about n KB encoded).
func bigConfigs(n int) *kmsg.DescribeConfigsResponse {
	resp := kmsg.NewPtrDescribeConfigsResponse()
	r := kmsg.NewDescribeConfigsResponseResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeBroker, "1"
	v := strings.Repeat("v", 1000)
	for range n {
		c := kmsg.NewDescribeConfigsResponseResourceConfig()
		c.Name, c.Value = "name", &v
		r.Configs = append(r.Configs, c)
	}
	resp.Resources = append(resp.Resources, r)
	return resp
}

// streamServer serves DescribeConfigs with a 20 MB answer and Heartbeat
// with a small one.
func streamServer(t *testing.T) *Server {
	t.Helper()
	var tab *bridge.Table
	tab, err := bridge.NewTable(
		bridge.ApiVersionsAPI(func() *bridge.Table { return tab }),
		bridge.API{Key: 32, MinVersion: 0, MaxVersion: 1, Handle: func(_ context.Context, rq *bridge.Request) (kmsg.Response, error) {
			resp := bigConfigs(20_000)
			resp.Version = rq.Version
			return resp, nil
		}},
		bridge.API{Key: 12, MinVersion: 0, MaxVersion: 4, Handle: func(_ context.Context, rq *bridge.Request) (kmsg.Response, error) {
			return rq.Msg.ResponseKind(), nil
		}},
	)
	if err != nil {
		t.Fatal(err)
	}
	log, tl := newTestLogger(t)
	srv, err := New(testConfig(), tab, log)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Shutdown(ctx); cancel(); tl.stop() })
	return srv
}

// readBig reads one response frame of any size: correlation id and body.
func readBig(t *testing.T, c io.Reader) (int32, []byte) {
	t.Helper()
	var hdr [4]byte
	if _, err := io.ReadFull(c, hdr[:]); err != nil {
		t.Fatalf("read size: %v", err)
	}
	b := make([]byte, binary.BigEndian.Uint32(hdr[:]))
	if _, err := io.ReadFull(c, b); err != nil {
		t.Fatalf("read body: %v", err)
	}
	return int32(binary.BigEndian.Uint32(b)), b[4:]
}

// A huge reply goes to gnet in chunks as the socket takes them: with a
// client that does not read, gnet holds at most two chunks of it unsent
// (not the whole 20 MB again); once the client reads, the reply arrives
// whole and the pipelined request behind it after it.
func TestHugeReplyWrittenAsTheSocketDrains(t *testing.T) {
	srv := streamServer(t)
	c := dial(t, srv.Addr().String())
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.Version = 1
	b := appendRequest(nil, 1, &testClientID, req)
	b = appendRequest(b, 2, &testClientID, kmsg.NewPtrHeartbeatRequest())
	send(t, c, b)
	var cs *conn
	embedtest.WaitFor(t, testTimeout, "the reply waiting for the socket", func() bool {
		srv.connsMu.Lock()
		for _, x := range srv.conns {
			cs = x
		}
		srv.connsMu.Unlock()
		if cs == nil {
			return false
		}
		cs.mu.Lock()
		defer cs.mu.Unlock()
		return cs.stream != nil && cs.stream.waiting
	})
	if held := cs.outHeld.Load(); held > 2*streamChunk {
		t.Fatalf("gnet holds %d unsent bytes of the reply, want at most %d", held, 2*streamChunk)
	}
	_ = c.SetReadDeadline(time.Now().Add(testTimeout))
	corr, body := readBig(t, c)
	if corr != 1 {
		t.Fatalf("first answer corr %d, want 1", corr)
	}
	resp := kmsg.NewPtrDescribeConfigsResponse()
	resp.Version = 1
	if err := resp.ReadFrom(body); err != nil || len(resp.Resources) != 1 || len(resp.Resources[0].Configs) != 20_000 {
		t.Fatalf("the 20 MB answer: %v, %d resources", err, len(resp.Resources))
	}
	if corr, _ := readBig(t, c); corr != 2 {
		t.Fatalf("second answer corr %d, want 2", corr)
	}
	embedtest.WaitFor(t, testTimeout, "the budget returned", func() bool { return srv.budget.InUse() == 0 })
}

// A client that closes while its huge reply streams leaves nothing held:
// the budget and the in-flight count go back to zero.
func TestHugeReplyClientGone(t *testing.T) {
	srv := streamServer(t)
	c := dial(t, srv.Addr().String())
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.Version = 1
	send(t, c, appendRequest(nil, 1, &testClientID, req))
	embedtest.WaitFor(t, testTimeout, "the reply streaming", func() bool {
		srv.connsMu.Lock()
		defer srv.connsMu.Unlock()
		for _, cs := range srv.conns {
			cs.mu.Lock()
			st := cs.stream != nil
			cs.mu.Unlock()
			if st {
				return true
			}
		}
		return false
	})
	_ = c.Close()
	embedtest.WaitFor(t, testTimeout, "everything released", func() bool {
		return srv.budget.InUse() == 0 && srv.inFlight.Load() == 0
	})
}
