package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafka-iggy/kafka-iggy/embedded/embedtest"
)

// stallRelay forwards TCP connections to an upstream and can stop
// forwarding without closing anything: an Iggy server that stops
// answering.
type stallRelay struct {
	ln   net.Listener
	to   string
	gate sync.RWMutex // held for writing while stalled
}

func startStallRelay(t *testing.T, to string) *stallRelay {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &stallRelay{ln: ln, to: to}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", to)
			if err != nil {
				_ = c.Close()
				continue
			}
			go r.pipe(c, u)
			go r.pipe(u, c)
		}
	}()
	return r
}

// pipe copies from src to dst, holding each chunk while the relay stalls.
func (r *stallRelay) pipe(src, dst net.Conn) {
	defer src.Close()
	defer dst.Close()
	buf := make([]byte, 64<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			r.gate.RLock()
			_, werr := dst.Write(buf[:n])
			r.gate.RUnlock()
			if werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (r *stallRelay) stall()  { r.gate.Lock() }
func (r *stallRelay) resume() { r.gate.Unlock() }

// healthz returns the /healthz status and body (0 when the request fails).
func healthz(admin string) (int, string) {
	c := http.Client{Timeout: 500 * time.Millisecond}
	resp, err := c.Get("http://" + admin + "/healthz")
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestLivenessFailsWhenWorkersWedge wedges the worker pool of a sidecar
// process: one worker, its Iggy server behind a relay that stops answering
// (no connection closes, request timeout and keep-alive far away), and
// more produce requests than the worker and its queue hold. /healthz turns
// 503 within admin.stall_timeout plus a tick of the ticker, naming the
// worker pool, and turns 200 again once the relay forwards again and the
// requests complete.
func TestLivenessFailsWhenWorkersWedge(t *testing.T) {
	if testing.Short() {
		t.Skip("starts sidecar and Iggy server processes")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	iggyAddr := ln.Addr().String()
	_ = ln.Close()
	startIggyProc(t, iggyAddr, t.TempDir())
	relay := startStallRelay(t, iggyAddr)
	const stallTimeout = time.Second
	p := startServeProc(t,
		"KAFKA_IGGY_IGGY__ADDRESS="+relay.ln.Addr().String(),
		"KAFKA_IGGY_IGGY__REQUEST_TIMEOUT=2m",
		"KAFKA_IGGY_IGGY__KEEPALIVE_INTERVAL=10m",
		"KAFKA_IGGY_GNET__WORKER_POOL_SIZE=1",
		"KAFKA_IGGY_GNET__WORKER_QUEUE_SIZE=1",
		"KAFKA_IGGY_ADMIN__STALL_TIMEOUT="+stallTimeout.String(),
	)
	defer func() { _ = p.cmd.Process.Signal(syscall.SIGTERM); <-p.done }()
	embedtest.WaitFor(t, 30*time.Second, "/readyz 200", func() bool { return readyz(p.admin) == http.StatusOK })
	if code, body := healthz(p.admin); code != http.StatusOK {
		t.Fatalf("/healthz %d %q before the stall", code, body)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	const topic = "wedge"
	const producers = 4
	var clients []*kgo.Client
	for i := 0; i < producers; i++ {
		cl, err := kgo.NewClient(kgo.SeedBrokers(p.kafka), kgo.DefaultProduceTopic(topic))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		clients = append(clients, cl)
	}
	if _, err := kadm.NewClient(clients[0]).CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	// Warm up: every client knows the broker and the partition.
	for _, cl := range clients {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("warm")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	relay.stall()
	stalledAt := time.Now()
	errs := make(chan error, producers)
	for i, cl := range clients {
		go func() {
			errs <- cl.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprint("stalled-", i))}).FirstErr()
		}()
	}
	var body string
	embedtest.WaitFor(t, stallTimeout+5*time.Second, "/healthz 503", func() bool {
		var code int
		code, body = healthz(p.admin)
		return code == http.StatusServiceUnavailable
	})
	failedAfter := time.Since(stalledAt)
	if !strings.Contains(body, "not alive: proxy: requests have waited") {
		t.Errorf("/healthz body %q does not name the worker pool", body)
	}

	relay.resume()
	resumedAt := time.Now()
	embedtest.WaitFor(t, 30*time.Second, "/healthz 200", func() bool {
		code, _ := healthz(p.admin)
		return code == http.StatusOK
	})
	recoveredAfter := time.Since(resumedAt)
	for range clients {
		if err := <-errs; err != nil {
			t.Errorf("produce across the stall: %v", err)
		}
	}
	t.Logf("/healthz 503 %v after the stall began (stall_timeout %v), 200 %v after it ended",
		failedAfter.Round(time.Millisecond), stallTimeout, recoveredAfter.Round(time.Millisecond))
	if failedAfter < stallTimeout {
		t.Errorf("/healthz failed %v after the stall, before stall_timeout %v", failedAfter, stallTimeout)
	}
}
