package admin

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// testTimeout bounds every wait of these tests.
const testTimeout = 20 * time.Second

// startAdmin starts an admin server on a free loopback port.
func startAdmin(t testing.TB, m *Metrics, r *Readiness) string {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Address = "127.0.0.1:0"
	cfg.Pprof = true
	s := New(cfg, m, r, zerolog.New(io.Discard))
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("admin shutdown: %v", err)
		}
	})
	return "http://" + s.Addr().String()
}

// get fetches url and returns the status code and body.
func get(t testing.TB, url string) (int, string) {
	t.Helper()
	c := http.Client{Timeout: testTimeout}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}
