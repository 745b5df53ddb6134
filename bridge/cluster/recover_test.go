package cluster

import (
	"context"
	"strings"
	"testing"
)

// A peer call whose handler panics fails (its connection closes, logged
// with close_reason handler_panic and the stack); the process lives and
// the next call is served.
func TestLinkHandlerPanicFailsThatCall(t *testing.T) {
	s, logs, mu := linkPair(t, "the-right-secret-123", func(ctx context.Context, kind uint8, body []byte) ([]byte, error) {
		d := newDec(body, "boom")
		if d.str("s") == "boom" {
			panic("peer handler fault")
		}
		return echo(ctx, kind, body)
	})
	p := client(s.ln.Addr().String(), "the-right-secret-123")
	defer p.close()
	var boom enc
	boom.str("boom")
	if _, err := p.call(context.Background(), describeCall.kind, boom.b); err == nil {
		t.Fatal("the panicking call answered")
	}
	var hi enc
	hi.str("hi")
	resp, err := p.call(context.Background(), describeCall.kind, hi.b)
	if err != nil {
		t.Fatalf("call after the panic: %v", err)
	}
	if d := newDec(resp, "answer"); d.str("s") != "HI" {
		t.Fatalf("answer %q", resp)
	}
	mu.Lock()
	l := logs.String()
	mu.Unlock()
	if !strings.Contains(l, `"close_reason":"handler_panic"`) || !strings.Contains(l, `"stack":`) {
		t.Fatalf("panic not logged with its reason and stack:\n%s", l)
	}
}
