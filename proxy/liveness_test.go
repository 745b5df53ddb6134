package proxy

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/panjf2000/gnet/v2"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafka-iggy/kafka-iggy/embedded/embedtest"
)

// Stalled follows the worker pool: alive while connections are open and
// idle (their event loops answer the ticker's pings), stalled once a
// request has waited for the only worker longer than the window, alive
// again once the worker is free; a worker busy with nothing waiting is not
// a stall.
func TestStalledFollowsWorkerPool(t *testing.T) {
	e := startEnv(t, func(c *Config) {
		c.Gnet.WorkerPoolSize, c.Gnet.WorkerQueueSize = 1, 1
	})
	const window = 300 * time.Millisecond
	c1, c2 := dial(t, e.addr), dial(t, e.addr)

	// Idle connections: the loops serving them are pinged and answer.
	embedtest.WaitFor(t, testTimeout, "the event loops pinged and answering", func() bool {
		e.srv.live.mu.Lock()
		defer e.srv.live.mu.Unlock()
		answered := 0
		for _, p := range e.srv.live.loops {
			if p.answeredAt.Load() != 0 {
				answered++
			}
		}
		return answered > 0
	})
	if why := e.srv.Stalled(window); why != "" {
		t.Fatalf("idle server stalled: %s", why)
	}

	// The worker busy, nothing waiting: alive past the window.
	send(t, c1, appendRequest(nil, 1, &testClientID, kmsg.NewPtrHeartbeatRequest()))
	e.gate.waitEntered(t)
	busySince := time.Now()
	embedtest.WaitFor(t, testTimeout, "the window passes with the worker busy", func() bool { return time.Since(busySince) > 2*window })
	if why := e.srv.Stalled(window); why != "" {
		t.Fatalf("a busy worker with nothing waiting counted as a stall: %s", why)
	}

	// A second request waits for the worker: stalled after the window.
	send(t, c2, appendRequest(nil, 2, &testClientID, kmsg.NewPtrHeartbeatRequest()))
	waitingSince := time.Now()
	var why string
	embedtest.WaitFor(t, testTimeout, "Stalled reports the pool", func() bool {
		why = e.srv.Stalled(window)
		return why != ""
	})
	if d := time.Since(waitingSince); d < window {
		t.Errorf("stalled %v after the request began to wait, before the %v window", d, window)
	}
	if !strings.Contains(why, "waited") || !strings.Contains(why, "worker") {
		t.Errorf("reason %q", why)
	}

	e.gate.open(1)
	e.gate.waitEntered(t)
	e.gate.open(2)
	embedtest.WaitFor(t, testTimeout, "alive again", func() bool { return e.srv.Stalled(window) == "" })
	for i, c := range []net.Conn{c1, c2} {
		if corr, _ := readResponse(t, c); corr != int32(i+1) {
			t.Fatalf("conn %d: corr %d", i+1, corr)
		}
	}
}

// Stalled follows the event loops: a real gnet loop wedged by a task that
// blocks (sent through gnet's own EventLoop.Execute) stops answering the
// ticker's pings, Stalled names it after the window, and it is alive again
// once the task returns.
func TestStalledFollowsEventLoop(t *testing.T) {
	e := startEnv(t, nil)
	dial(t, e.addr)
	var cs *conn
	embedtest.WaitFor(t, testTimeout, "the connection registered", func() bool {
		e.srv.connsMu.Lock()
		defer e.srv.connsMu.Unlock()
		for _, c := range e.srv.conns {
			cs = c
		}
		return cs != nil
	})
	const window = 300 * time.Millisecond
	release := make(chan struct{})
	wedged := make(chan struct{})
	err := cs.gc.EventLoop().Execute(context.Background(), gnet.RunnableFunc(func(context.Context) error {
		close(wedged)
		<-release
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	<-wedged
	wedgedAt := time.Now()
	var why string
	embedtest.WaitFor(t, testTimeout, "Stalled reports the loop", func() bool {
		why = e.srv.Stalled(window)
		return why != ""
	})
	if d := time.Since(wedgedAt); d < window {
		t.Errorf("stalled %v after the loop wedged, before the %v window", d, window)
	}
	if !strings.Contains(why, "event loop") {
		t.Errorf("reason %q", why)
	}
	close(release)
	embedtest.WaitFor(t, testTimeout, "alive again", func() bool { return e.srv.Stalled(window) == "" })
}
