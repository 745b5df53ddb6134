package iggy

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"io"
	mrand "math/rand/v2"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
	"github.com/kafka-iggy/kafka-iggy/codec/wire"
)

// scriptServer is a test tool: a TCP listener that reads 256-byte-header
// frames and lets each test decide, frame by frame, what to answer (or to
// answer nothing). It knows only framing and the login reply shape; any
// command semantics belong to the test's handler.
type scriptServer struct {
	t       *testing.T
	ln      net.Listener
	handle  func(sc *scriptConn, h icodec.RequestHeader, body []byte) [][]byte
	accepts atomic.Int32

	mu    sync.Mutex
	conns []net.Conn
	wg    sync.WaitGroup
}

// scriptConn is one accepted connection.
type scriptConn struct {
	idx  int // 0-based accept order
	conn net.Conn
}

func newScriptServer(t *testing.T, tc *tls.Config, handle func(sc *scriptConn, h icodec.RequestHeader, body []byte) [][]byte) *scriptServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if tc != nil {
		ln = tls.NewListener(ln, tc)
	}
	s := &scriptServer{t: t, ln: ln, handle: handle}
	s.wg.Add(1)
	go s.accept()
	t.Cleanup(s.close)
	return s
}

func (s *scriptServer) addr() string { return s.ln.Addr().String() }

func (s *scriptServer) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		idx := int(s.accepts.Add(1)) - 1
		s.mu.Lock()
		s.conns = append(s.conns, c)
		s.mu.Unlock()
		s.wg.Add(1)
		go s.serve(&scriptConn{idx: idx, conn: c})
	}
}

func (s *scriptServer) serve(sc *scriptConn) {
	defer s.wg.Done()
	defer sc.conn.Close()
	br := bufio.NewReader(sc.conn)
	for {
		frame, err := icodec.ReadFrame(br, nil, icodec.MaxFrameSize)
		if err != nil {
			return
		}
		var h icodec.RequestHeader
		if _, err := h.DecodeFrom(frame); err != nil {
			return
		}
		for _, out := range s.handle(sc, h, frame[icodec.HeaderSize:]) {
			if _, err := sc.conn.Write(out); err != nil {
				return
			}
		}
	}
}

// dropAll closes every accepted connection (the listener stays).
func (s *scriptServer) dropAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.conns {
		_ = c.Close()
	}
	s.conns = nil
}

func (s *scriptServer) close() {
	_ = s.ln.Close()
	s.dropAll()
	s.wg.Wait()
}

// reply builds a reply frame echoing h's request and operation.
func reply(h icodec.RequestHeader, status icodec.Status, body []byte) []byte {
	rh := icodec.ReplyHeader{Request: h.Request, Operation: h.Operation, Status: status, Client: h.Client}
	out := rh.AppendTo(nil, len(body))
	return append(out, body...)
}

// resultOK builds a result-framed success body around payload.
func resultOK(payload []byte) []byte { return append(icodec.AppendResultOK(nil), payload...) }

// loginReply answers a Register with session epoch.
func loginReply(h icodec.RequestHeader, epoch uint64) []byte {
	ls := icodec.LoginSession{UserID: 0, Session: epoch, ServerProtocolVersion: uint32(icodec.Protocol011), ServerVersion: "script"}
	return reply(h, 0, resultOK(ls.AppendTo(nil)))
}

// eviction builds an Eviction frame.
func eviction(h icodec.RequestHeader, reason icodec.EvictionReason) []byte {
	eh := icodec.EvictionHeader{Client: h.Client, Reason: reason}
	return eh.AppendTo(nil, 0)
}

// basic answers login (epoch 1000+connection index) and PING, and hands
// everything else to next (nil: swallow).
func basic(next func(sc *scriptConn, h icodec.RequestHeader, body []byte) [][]byte) func(sc *scriptConn, h icodec.RequestHeader, body []byte) [][]byte {
	return func(sc *scriptConn, h icodec.RequestHeader, body []byte) [][]byte {
		switch {
		case h.Operation == icodec.OperationRegister:
			return [][]byte{loginReply(h, uint64(1000+sc.idx))}
		case h.Operation == icodec.OperationNonReplicated && h.Code == icodec.CodePing:
			return [][]byte{reply(h, 0, nil)}
		case next != nil:
			return next(sc, h, body)
		}
		return nil
	}
}

// testConfig is a fast-failing configuration for addr.
func testConfig(addr string) Config {
	cfg := DefaultConfig()
	cfg.Address = addr
	cfg.Protocol = "0.11"    // the scripted server answers 0.11 shapes
	cfg.FollowLeader = false // and no GET_CLUSTER_METADATA
	cfg.PoolSize = 1
	cfg.RequestTimeout = 2 * time.Second
	cfg.ConnectTimeout = 2 * time.Second
	cfg.BackoffMin = 5 * time.Millisecond
	cfg.BackoffMax = 50 * time.Millisecond
	cfg.KeepaliveInterval = 0
	return cfg
}

// startClient creates and starts a client, closed at cleanup.
func startClient(t *testing.T, cfg Config, opts ...Option) *Client {
	t.Helper()
	c, err := New(cfg, zerolog.New(io.Discard), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	return c
}

// recv receives from ch within 10s.
func recv[T any](t *testing.T, what string, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
	var zero T
	return zero
}

// errIs asserts errors.Is(err, target) for every target.
func errIs(t *testing.T, err error, targets ...error) {
	t.Helper()
	for _, target := range targets {
		if !errors.Is(err, target) {
			t.Errorf("error %v does not match %v", err, target)
		}
	}
}

// countGoroutines counts the goroutines running client code (session
// loops and anything they call): zero after Close.
func countGoroutines() int {
	buf := make([]byte, 1<<20)
	n := runtime.Stack(buf, true)
	count := 0
	for _, g := range strings.Split(string(buf[:n]), "\n\n") {
		if strings.Contains(g, "bridge/iggy.(*session)") {
			count++
		}
	}
	return count
}

// randID returns a random message id.
func randID() wire.U128 { return wire.U128{Lo: mrand.Uint64(), Hi: mrand.Uint64()} }
