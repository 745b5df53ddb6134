package admin

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// startLimited starts an admin listener with the given caps.
func startLimited(t *testing.T, maxConns int, idle time.Duration) string {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Address = "127.0.0.1:0"
	cfg.MaxConnections, cfg.IdleTimeout = maxConns, idle
	s := New(cfg, NewMetrics("x"), NewReadiness(), zerolog.New(io.Discard))
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		_ = s.Shutdown(ctx)
	})
	return s.Addr().String()
}

// healthz sends one keep-alive GET /healthz on c and reads its answer
// until deadline.
func healthz(c net.Conn, r *bufio.Reader, deadline time.Time) error {
	if _, err := c.Write([]byte("GET /healthz HTTP/1.1\r\nHost: admin\r\n\r\n")); err != nil {
		return err
	}
	_ = c.SetReadDeadline(deadline)
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.Body.Close()
}

// TestAdminConnectionCap: with admin.max_connections 1, a second
// connection is not served while the first stays open, and is served once
// it closes.
func TestAdminConnectionCap(t *testing.T) {
	addr := startLimited(t, 1, time.Minute)
	a, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	if err := healthz(a, bufio.NewReader(a), time.Now().Add(testTimeout)); err != nil {
		t.Fatal(err)
	}
	b, err := net.Dial("tcp", addr) // into the accept queue
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	rb := bufio.NewReader(b)
	err = healthz(b, rb, time.Now().Add(300*time.Millisecond))
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("second connection answered past the cap of 1 (err %v)", err)
	}
	_ = a.Close()
	_ = b.SetReadDeadline(time.Now().Add(testTimeout))
	resp, err := http.ReadResponse(rb, nil)
	if err != nil {
		t.Fatalf("second connection not served once the first closed: %v", err)
	}
	_ = resp.Body.Close()
}

// TestAdminIdleTimeout: a keep-alive connection idle past
// admin.idle_timeout is closed by the listener.
func TestAdminIdleTimeout(t *testing.T) {
	addr := startLimited(t, DefaultMaxConnections, 50*time.Millisecond)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	if err := healthz(c, r, time.Now().Add(testTimeout)); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(testTimeout))
	if _, err := r.ReadByte(); !errors.Is(err, io.EOF) {
		t.Fatalf("idle connection not closed: %v", err)
	}
}
