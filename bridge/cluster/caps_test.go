package cluster

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// waitLog waits until the server's log holds want.
func waitLog(t *testing.T, logs *strings.Builder, mu *sync.Mutex, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		l := logs.String()
		mu.Unlock()
		if strings.Contains(l, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("log never held %s:\n%s", want, l)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// closedWithin reports whether the server closes c (read EOF or reset)
// within d, reading whatever it sends first.
func closedWithin(c net.Conn, d time.Duration) bool {
	_ = c.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	return !(errors.As(err, &ne) && ne.Timeout())
}

// peers.max_connections: connections past the cap are closed at once,
// logged; those under it get the challenge.
func TestPeerMaxConnections(t *testing.T) {
	s, logs, mu := linkPair(t, "the-right-secret-123", echo, func(s *linkServer) { s.maxConns = 2; s.hsTime = 5 * time.Second })
	var held []net.Conn
	for i := 0; i < 2; i++ {
		c, err := net.Dial("tcp", s.ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		// The challenge arrives: the connection is being served.
		if _, err := readFrame(bufio.NewReader(c), handshakeMaxFrame); err != nil {
			t.Fatalf("connection %d under the cap: %v", i, err)
		}
		held = append(held, c)
	}
	third, err := net.Dial("tcp", s.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer third.Close()
	if !closedWithin(third, 2*time.Second) {
		t.Fatal("a third connection past peers.max_connections=2 stayed open")
	}
	waitLog(t, logs, mu, `"close_reason":"too_many_connections"`)
	if open, refused := s.stats(); open != 2 || refused != 1 {
		t.Fatalf("stats: %d open, %d refused; want 2 and 1", open, refused)
	}
	// Once one closes, a new connection is served again.
	_ = held[0].Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := net.Dial("tcp", s.ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Now().Add(time.Second))
		_, err = readFrame(bufio.NewReader(c), handshakeMaxFrame)
		_ = c.Close()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no connection served after one under the cap closed")
		}
	}
}

// A connection that does not authenticate is closed after
// peers.handshake_timeout.
func TestPeerUnauthenticatedTimeout(t *testing.T) {
	s, _, _ := linkPair(t, "the-right-secret-123", echo, func(s *linkServer) { s.hsTime = 300 * time.Millisecond })
	c, err := net.Dial("tcp", s.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	if !closedWithin(c, 5*time.Second) {
		t.Fatal("a silent unauthenticated connection stayed open 5s")
	}
	if took := time.Since(start); took < 250*time.Millisecond {
		t.Fatalf("closed after %v, before the handshake timeout", took)
	}
}

// peers.idle_timeout: an authenticated connection with no frame and no
// call in flight is closed (the client dials again on its next call); a
// call parked longer than the timeout keeps its connection.
func TestPeerIdleTimeout(t *testing.T) {
	release := make(chan struct{})
	s, logs, mu := linkPair(t, "the-right-secret-123", func(ctx context.Context, kind uint8, body []byte) ([]byte, error) {
		d := newDec(body, "park")
		if d.str("s") == "park" {
			select {
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return echo(ctx, kind, body)
	}, func(s *linkServer) { s.idle = 200 * time.Millisecond })
	p := client(s.ln.Addr().String(), "the-right-secret-123")
	defer p.close()
	var park, hi enc
	park.str("park")
	hi.str("hi")
	done := make(chan error, 1)
	go func() {
		_, err := p.call(context.Background(), describeCall.kind, park.b)
		done <- err
	}()
	time.Sleep(time.Second) // five idle timeouts with the call parked
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("a call parked past the idle timeout failed: %v", err)
	}
	p.mu.Lock()
	first := p.conn
	p.mu.Unlock()
	// Now nothing is in flight: the server closes the connection.
	deadline := time.Now().Add(5 * time.Second)
	for {
		p.mu.Lock()
		cur := p.conn
		p.mu.Unlock()
		if cur != first {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("an idle authenticated connection stayed open")
		}
		time.Sleep(20 * time.Millisecond)
	}
	waitLog(t, logs, mu, `"close_reason":"idle_timeout"`)
	if _, err := p.call(context.Background(), describeCall.kind, hi.b); err != nil {
		t.Fatalf("call after the idle close: %v", err)
	}
}

// peers.max_inflight_calls: a peer sending more calls than the cap has at
// most the cap served at once; the rest wait and are then answered.
func TestPeerMaxInflightCalls(t *testing.T) {
	var now, peak atomic.Int32
	gate := make(chan struct{})
	s, _, _ := linkPair(t, "the-right-secret-123", func(ctx context.Context, kind uint8, body []byte) ([]byte, error) {
		n := now.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		<-gate
		now.Add(-1)
		return echo(ctx, kind, body)
	}, func(s *linkServer) { s.maxInflight = 3 })
	p := client(s.ln.Addr().String(), "the-right-secret-123")
	defer p.close()
	var e enc
	e.str("x")
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := p.call(context.Background(), describeCall.kind, e.b)
			errs <- err
		}()
	}
	deadline := time.Now().Add(5 * time.Second)
	for now.Load() < 3 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // would more start past the cap?
	close(gate)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("a call failed: %v", err)
		}
	}
	if got := peak.Load(); got != 3 {
		t.Fatalf("%d calls served at once, cap 3", got)
	}
}

// A call and an answer larger than one peer frame travel in parts
// (kindPart frames) and arrive whole; calls of other sizes on the same
// connection meanwhile are unaffected. A message past
// peers.max_message_bytes closes the connection (the call fails).
func TestPeerMessagesLargerThanAFrame(t *testing.T) {
	s, logs, mu := linkPair(t, "the-right-secret-123", func(ctx context.Context, kind uint8, body []byte) ([]byte, error) {
		d := newDec(body, "big")
		in := d.str("s")
		if err := d.done(); err != nil {
			return nil, err
		}
		var e enc
		e.str(in + in) // the answer twice the request
		return e.b, nil
	}, func(s *linkServer) { s.maxFrame = 4096; s.maxMessage = 1 << 20 })
	p := client(s.ln.Addr().String(), "the-right-secret-123")
	p.maxFrame, p.maxMessage = 4096, 4<<20
	defer p.close()
	var wg sync.WaitGroup
	for i, n := range []int{10, 4096 - 9 - 4, 4096, 100_000, 300_000} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			want := strings.Repeat(string(rune('a'+i)), n)
			var e enc
			e.str(want)
			resp, err := p.call(context.Background(), describeCall.kind, e.b)
			if err != nil {
				t.Errorf("%d bytes: %v", n, err)
				return
			}
			d := newDec(resp, "answer")
			if got := d.str("s"); got != want+want || d.done() != nil {
				t.Errorf("%d bytes: answer of %d bytes, want %d", n, len(got), 2*n)
			}
		}()
	}
	wg.Wait()
	var huge enc
	huge.str(strings.Repeat("z", 1<<20)) // past the server's 1 MiB
	if _, err := p.call(context.Background(), describeCall.kind, huge.b); err == nil {
		t.Fatal("a call past peers.max_message_bytes was answered")
	}
	waitLog(t, logs, mu, "past 1048576 bytes\",\"close_reason\":\"frame_malformed\"")
}

// A message split into parts is the same bytes as one frame would carry.
func TestAppendMessageParts(t *testing.T) {
	body := []byte(strings.Repeat("0123456789", 1000))
	b := appendMessage(nil, 10|kindResponse, 7, body, 4096)
	a := assembler{max: 1 << 20, answers: true}
	br := bufio.NewReader(strings.NewReader(string(b)))
	frames := 0
	for {
		f, err := readFrame(br, 4096)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		frames++
		kind, id, part, err := parseHeader(f)
		if err != nil || id != 7 {
			t.Fatalf("frame %d: id %d, %v", frames, id, err)
		}
		msg, done, err := a.add(kind, id, part)
		if err != nil {
			t.Fatal(err)
		}
		if done {
			if kind != 10|kindResponse || string(msg) != string(body) {
				t.Fatalf("joined: kind %d, %d bytes, want %d", kind, len(msg), len(body))
			}
			if a.held != 0 {
				t.Fatalf("%d bytes still held", a.held)
			}
		}
	}
	if frames != 3 {
		t.Fatalf("%d frames for 10,000 bytes at 4096, want 3", frames)
	}
}
