package iggy

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
	"github.com/kafka-iggy/kafka-iggy/embedded/embedtest"
)

// Session liveness (session.go, serve): an idle session notices the server
// closing its connection at once, an unasked eviction too, and a silent
// server within the keep-alive interval; watching an idle connection does
// not disturb the requests that follow.

// within fails unless cond holds within d (measured from start).
func within(t *testing.T, what string, start time.Time, d time.Duration, cond func() bool) time.Duration {
	t.Helper()
	for !cond() {
		if time.Since(start) > d {
			t.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(time.Millisecond)
	}
	return time.Since(start)
}

func TestIdleSessionNoticesClose(t *testing.T) {
	var refuse atomic.Bool
	srv := newScriptServer(t, nil, func(sc *scriptConn, h icodec.RequestHeader, body []byte) [][]byte {
		if h.Operation == icodec.OperationRegister && refuse.Load() {
			_ = sc.conn.Close() // the server is "down": no login
			return nil
		}
		return basic(nil)(sc, h, body)
	})
	cfg := testConfig(srv.addr())
	cfg.PoolSize = 2
	cfg.KeepaliveInterval = time.Minute // the keep-alive is not what notices it
	c := startClient(t, cfg)
	embedtest.WaitFor(t, 10*time.Second, "both sessions up", func() bool { return c.SessionsUp() == 2 })
	time.Sleep(2 * idleWatchAfter) // the scenario: the sessions sit idle

	refuse.Store(true)
	start := time.Now()
	srv.dropAll()
	took := within(t, "Ready false after the server closed every connection", start, time.Second, func() bool { return !c.Ready() })
	t.Logf("unready %v after the close", took)

	refuse.Store(false) // the server is back
	embedtest.WaitFor(t, 10*time.Second, "sessions up again", func() bool { return c.SessionsUp() == 2 })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Ping(ctx); err != nil {
		t.Fatalf("ping after the server came back: %v", err)
	}
}

func TestIdleSessionEvicted(t *testing.T) {
	evict := make(chan *scriptConn, 4)
	srv := newScriptServer(t, nil, func(sc *scriptConn, h icodec.RequestHeader, body []byte) [][]byte {
		out := basic(nil)(sc, h, body)
		if h.Operation == icodec.OperationRegister && sc.idx == 0 {
			evict <- sc
		}
		return out
	})
	cfg := testConfig(srv.addr())
	c := startClient(t, cfg)
	sc := recv(t, "first login", evict)
	time.Sleep(2 * idleWatchAfter) // idle, watching
	start := time.Now()
	// The server evicts the idle session and keeps the connection open.
	if _, err := sc.conn.Write(eviction(icodec.RequestHeader{Client: c.sessions[0].clientID}, icodec.EvictionReasonSessionError)); err != nil {
		t.Fatal(err)
	}
	within(t, "a new login after the eviction", start, time.Second, func() bool { return srv.accepts.Load() >= 2 && c.Ready() })
}

func TestSilentServerNoticedByKeepalive(t *testing.T) {
	var silent atomic.Bool
	srv := newScriptServer(t, nil, func(sc *scriptConn, h icodec.RequestHeader, body []byte) [][]byte {
		if silent.Load() {
			return nil // answers nothing, keeps the connection
		}
		return basic(nil)(sc, h, body)
	})
	cfg := testConfig(srv.addr())
	const iv = 600 * time.Millisecond
	cfg.KeepaliveInterval = iv
	c := startClient(t, cfg)
	silent.Store(true)
	start := time.Now()
	took := within(t, "Ready false with a silent server", start, iv+300*time.Millisecond, func() bool { return !c.Ready() })
	t.Logf("unready %v after the server fell silent (keep-alive %v)", took, iv)
}

func TestRequestsAfterIdleWatch(t *testing.T) {
	srv := newScriptServer(t, nil, basic(func(sc *scriptConn, h icodec.RequestHeader, body []byte) [][]byte {
		return [][]byte{reply(h, 0, nil)}
	}))
	cfg := testConfig(srv.addr())
	c := startClient(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i := range 4 {
		time.Sleep(idleWatchAfter + 20*time.Millisecond) // idle long enough to watch
		for j := range 3 {
			if err := c.Ping(ctx); err != nil {
				t.Fatalf("round %d ping %d: %v", i, j, err)
			}
		}
	}
	if srv.accepts.Load() != 1 {
		t.Fatalf("%d connections, want 1 (the watch broke a session)", srv.accepts.Load())
	}
}
