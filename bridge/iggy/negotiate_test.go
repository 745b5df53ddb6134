package iggy

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// countingProxy forwards TCP connections to target and counts them.
type countingProxy struct {
	ln    net.Listener
	conns atomic.Int64
	wg    sync.WaitGroup
}

func startCountingProxy(t *testing.T, target string) *countingProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &countingProxy{ln: ln}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.conns.Add(1)
			s, err := net.Dial("tcp", target)
			if err != nil {
				_ = c.Close()
				continue
			}
			p.wg.Add(2)
			pipe := func(dst, src net.Conn) {
				defer p.wg.Done()
				_, _ = io.Copy(dst, src)
				_ = dst.Close()
				_ = src.Close()
			}
			go pipe(s, c)
			go pipe(c, s)
		}
	}()
	t.Cleanup(func() { _ = ln.Close(); p.wg.Wait() })
	return p
}

// upMetrics signals when n sessions are up.
type upMetrics struct {
	NopMetrics
	want int
	up   chan struct{}
	once sync.Once
}

func (m *upMetrics) SessionsUp(n int) {
	if n >= m.want {
		m.once.Do(func() { close(m.up) })
	}
}

// TestNegotiateOncePerServer: with iggy.protocol auto against a 0.11
// server, a pool of 6 sessions opens 7 connections (one login refused for
// its protocol, then 6 logins), not 12; a second pool to the same server
// starts with the settled generation and opens 6.
func TestNegotiateOncePerServer(t *testing.T) {
	srv := startEmbeddedProtocol(t, "0.11")
	px := startCountingProxy(t, srv.Addr().String())
	const pool = 6
	open := func() *Client {
		cfg := testConfig(px.ln.Addr().String())
		cfg.Protocol, cfg.PoolSize = "auto", pool
		m := &upMetrics{want: pool, up: make(chan struct{})}
		c := startClient(t, cfg, WithMetrics(m))
		select {
		case <-m.up:
		case <-time.After(10 * time.Second):
			t.Fatalf("%d sessions not up within 10s", pool)
		}
		if got := c.Protocol().Label(); got != "0.11" {
			t.Fatalf("protocol %s, want 0.11", got)
		}
		return c
	}
	c := open()
	if n := px.conns.Load(); n != pool+1 {
		t.Fatalf("%d connections for %d sessions, want %d (one negotiation)", n, pool, pool+1)
	}
	_ = c.Close()
	open()
	if n := px.conns.Load(); n != 2*pool+1 {
		t.Fatalf("%d connections after a second pool, want %d (no negotiation)", n, 2*pool+1)
	}
}
