package bridge_test

import (
	"context"
	"testing"
	"time"
)

// stop shuts the stack down in the sidecar's order: the front door
// (draining its requests), the Iggy client, then the embedded server,
// which syncs and closes its data dir. The cleanups startStack registered
// run again at test end and do nothing.
func (s *stack) stop(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Proxy.Shutdown(ctx); err != nil {
		t.Fatalf("front door shutdown: %v", err)
	}
	_ = s.Client.Close()
	if err := s.Iggy.Close(); err != nil {
		t.Fatalf("embedded server close: %v", err)
	}
}

// restart stops s and starts a new stack with mods: with
// o.embedded.DataDir set by mods, the new embedded server starts from what
// the old one stored. Addresses change (new loopback ports), so clients of
// the old stack are useless afterwards.
func (s *stack) restart(t testing.TB, mods ...func(*stackOpts)) *stack {
	t.Helper()
	s.stop(t)
	return startStack(t, mods...)
}
