package iggy

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"math"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
	"github.com/kafka-iggy/kafka-iggy/embedded/embedtest"
)

// seen is one request as the script server received it.
type seen struct {
	conn int
	h    icodec.RequestHeader
	body []byte
}

type recorder struct {
	mu  sync.Mutex
	all []seen
}

func (r *recorder) add(sc *scriptConn, h icodec.RequestHeader, body []byte) {
	r.mu.Lock()
	r.all = append(r.all, seen{conn: sc.idx, h: h, body: append([]byte(nil), body...)})
	r.mu.Unlock()
}

func (r *recorder) list() []seen {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]seen(nil), r.all...)
}

func TestLoginAndRequestNumbering(t *testing.T) {
	var rec recorder
	srv := newScriptServer(t, nil, func(sc *scriptConn, h icodec.RequestHeader, body []byte) [][]byte {
		rec.add(sc, h, body)
		switch {
		case h.Operation == icodec.OperationRegister:
			return [][]byte{loginReply(h, 77)}
		case h.Operation == icodec.OperationCreateStream:
			sr := icodec.StreamResponse{ID: 3, Name: "s"}
			return [][]byte{reply(h, 0, resultOK(sr.AppendTo(nil)))}
		}
		return [][]byte{reply(h, 0, nil)} // PING, GET_CONSUMER_OFFSET "none"
	})
	c := startClient(t, testConfig(srv.addr()), WithClientVersion("1.2.3"))
	ctx := context.Background()
	steps := []func() error{
		func() error { return c.Ping(ctx) },
		func() error { _, err := c.CreateStream(ctx, "s1"); return err },
		func() error { return c.Ping(ctx) },
		func() error { _, err := c.CreateStream(ctx, "s2"); return err },
		func() error { _, _, err := c.GetOffset(ctx, TopicRef{"s", "t"}, 0, icodec.Consumer{}); return err },
	}
	for i, step := range steps {
		if err := step(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	got := rec.list()
	want := []struct {
		op      icodec.Operation
		code    uint32
		request uint64
		session uint64
	}{
		{icodec.OperationRegister, 0, 0, 0},
		{icodec.OperationNonReplicated, icodec.CodePing, 1, 77},
		{icodec.OperationCreateStream, 0, 1, 77},
		{icodec.OperationNonReplicated, icodec.CodePing, 2, 77},
		{icodec.OperationCreateStream, 0, 2, 77},
		{icodec.OperationNonReplicated, icodec.CodeGetConsumerOffset, 3, 77},
	}
	if len(got) != len(want) {
		t.Fatalf("server saw %d requests, want %d", len(got), len(want))
	}
	client := got[0].h.Client
	if client.IsZero() {
		t.Fatal("client id is zero")
	}
	for i, w := range want {
		h := got[i].h
		if h.Operation != w.op || h.Code != w.code || h.Request != w.request || h.Session != w.session || h.Client != client {
			t.Errorf("request %d: op %v code %d request %d session %d client %v; want op %v code %d request %d session %d",
				i, h.Operation, h.Code, h.Request, h.Session, h.Client, w.op, w.code, w.request, w.session)
		}
		if err := h.Validate(); err != nil {
			t.Errorf("request %d breaks the server's header rules: %v", i, err)
		}
	}
	var lr icodec.LoginRegisterRequest
	if _, err := lr.DecodeFrom(got[0].body); err != nil {
		t.Fatal(err)
	}
	if lr.VersionInfo.SdkName != "kafka-iggy" || lr.VersionInfo.SdkVersion != "1.2.3" ||
		lr.VersionInfo.ProtocolVersion != uint32(icodec.Protocol011) || lr.Username != "iggy" || lr.Password != "iggy" {
		t.Errorf("login body %+v", lr)
	}
}

func TestLoginWithPAT(t *testing.T) {
	bodies := make(chan []byte, 4)
	srv := newScriptServer(t, nil, func(sc *scriptConn, h icodec.RequestHeader, body []byte) [][]byte {
		if h.Operation == icodec.OperationRegister {
			bodies <- append([]byte(nil), body...)
			return [][]byte{loginReply(h, 5)}
		}
		return nil
	})
	cfg := testConfig(srv.addr())
	cfg.Username, cfg.Password, cfg.PersonalAccessToken = "", "", "secret-token"
	startClient(t, cfg)
	var req icodec.LoginRegisterWithPATRequest
	if _, err := req.DecodeFrom(recv(t, "login", bodies)); err != nil {
		t.Fatal(err)
	}
	if req.Token != "secret-token" || req.VersionInfo.SdkName != SDKName {
		t.Fatalf("PAT login body %+v", req)
	}
}

func TestStartRefusedLogin(t *testing.T) {
	tests := []struct {
		name   string
		reason icodec.EvictionReason
		want   icodec.Status
	}{
		{"bad password", icodec.EvictionReasonInvalidCredentials, icodec.StatusInvalidCredentials},
		{"bad token", icodec.EvictionReasonInvalidToken, icodec.StatusInvalidPersonalAccessToken},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newScriptServer(t, nil, func(sc *scriptConn, h icodec.RequestHeader, body []byte) [][]byte {
				return [][]byte{eviction(h, tt.reason)}
			})
			c, err := New(testConfig(srv.addr()), zerolog.New(io.Discard))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err = c.Start(ctx)
			errIs(t, err, tt.want)
			if !IsUnauthorized(err) || Retriable(err) || c.Ready() {
				t.Fatalf("Start: %v (unauthorized %v, retriable %v, ready %v)", err, IsUnauthorized(err), Retriable(err), c.Ready())
			}
		})
	}
}

// TestSilentServerTimesOut: a server that logs in and then swallows every
// frame yields ErrTimeout within the request deadline and a fresh session.
func TestSilentServerTimesOut(t *testing.T) {
	logins := make(chan int, 8)
	srv := newScriptServer(t, nil, func(sc *scriptConn, h icodec.RequestHeader, body []byte) [][]byte {
		if h.Operation == icodec.OperationRegister {
			logins <- sc.idx
			return [][]byte{loginReply(h, uint64(10+sc.idx))}
		}
		return nil // swallow
	})
	cfg := testConfig(srv.addr())
	cfg.RequestTimeout = 300 * time.Millisecond
	c := startClient(t, cfg)
	recv(t, "first login", logins)

	start := time.Now()
	err := c.Ping(context.Background())
	took := time.Since(start)
	errIs(t, err, ErrTimeout)
	if !IsTimeout(err) || !Retriable(err) || errors.Is(err, ErrNotSent) {
		t.Fatalf("ping: %v", err)
	}
	if took < cfg.RequestTimeout || took > cfg.RequestTimeout+time.Second {
		t.Fatalf("timed out after %v, deadline %v", took, cfg.RequestTimeout)
	}
	if idx := recv(t, "second login", logins); idx != 1 {
		t.Fatalf("relogin on connection %d", idx)
	}
	embedtest.WaitFor(t, 10*time.Second, "session up again", c.Ready)
}

// TestSessionDroppedOnBadReplies: every reply that leaves the connection
// unusable drops the session; the call fails retriably and the session comes
// back on a new connection with a new client id.
func TestSessionDroppedOnBadReplies(t *testing.T) {
	tests := []struct {
		name  string
		reply func(h icodec.RequestHeader) []byte
		want  []error
	}{
		{"eviction", func(h icodec.RequestHeader) []byte { return eviction(h, icodec.EvictionReasonSessionError) },
			[]error{ErrSessionLost, icodec.StatusUnauthenticated}},
		{"request echo out of step", func(h icodec.RequestHeader) []byte { h.Request += 5; return reply(h, 0, nil) },
			[]error{ErrProtocol}},
		{"unauthenticated", func(h icodec.RequestHeader) []byte { return reply(h, icodec.StatusUnauthenticated, nil) },
			[]error{ErrSessionLost, icodec.StatusUnauthenticated}},
		{"undefined command byte", func(h icodec.RequestHeader) []byte {
			f := reply(h, 0, nil)
			f[60] = 77
			return f
		}, []error{ErrProtocol}},
		{"truncated result section", func(h icodec.RequestHeader) []byte {
			return reply(h, 0, []byte{2, 0, 0, 0, 1})
		}, []error{ErrProtocol}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var rec recorder
			logins := make(chan int, 8)
			srv := newScriptServer(t, nil, basic(func(sc *scriptConn, h icodec.RequestHeader, body []byte) [][]byte {
				rec.add(sc, h, body)
				if sc.idx == 0 {
					return [][]byte{tt.reply(h)}
				}
				sr := icodec.StreamResponse{ID: 1, Name: "s"}
				return [][]byte{reply(h, 0, resultOK(sr.AppendTo(nil)))}
			}))
			_ = logins
			c := startClient(t, testConfig(srv.addr()))
			_, err := c.CreateStream(context.Background(), "s")
			errIs(t, err, tt.want...)
			if !Retriable(err) {
				t.Fatalf("not retriable: %v", err)
			}
			embedtest.WaitFor(t, 10*time.Second, "second connection", func() bool { return srv.accepts.Load() == 2 })
			if _, err := c.CreateStream(context.Background(), "s"); err != nil {
				t.Fatalf("after reconnect: %v", err)
			}
			got := rec.list()
			if len(got) != 2 || got[0].h.Client == got[1].h.Client || got[1].conn != 1 {
				t.Fatalf("requests %+v", got)
			}
		})
	}
}

// TestStatusErrorsKeepSession: business errors travel as Status values and
// leave the session alone.
func TestStatusErrorsKeepSession(t *testing.T) {
	srv := newScriptServer(t, nil, basic(func(sc *scriptConn, h icodec.RequestHeader, body []byte) [][]byte {
		switch {
		case h.Operation == icodec.OperationCreateStream:
			return [][]byte{reply(h, 0, icodec.AppendResultError(nil, icodec.StatusStreamNameAlreadyExists))}
		case h.Code == icodec.CodeGetStream:
			return [][]byte{reply(h, 0, nil)} // unknown: empty body
		case h.Code == icodec.CodePollMessages:
			return [][]byte{reply(h, icodec.StatusTopicIDNotFound, nil)}
		case h.Code == icodec.CodeGetStats:
			return [][]byte{reply(h, icodec.StatusUnauthorized, nil)}
		}
		return nil
	}))
	c := startClient(t, testConfig(srv.addr()))
	ctx := context.Background()

	_, err := c.CreateStream(ctx, "s")
	errIs(t, err, icodec.StatusStreamNameAlreadyExists)
	var re *icodec.ResultError
	if !errors.As(err, &re) || Retriable(err) {
		t.Errorf("create stream: %v", err)
	}
	_, err = c.GetTopic(ctx, TopicRef{"nope", "t"})
	if !errors.Is(err, ErrNotFound) || !IsNotFound(err) {
		t.Errorf("get topic of unknown stream: %v", err)
	}
	_, err = c.Poll(ctx, &icodec.PollMessagesRequest{
		Consumer: icodec.Consumer{Kind: icodec.ConsumerKindConsumer, ID: icodec.Identifier{Kind: icodec.IdentifierKindNumeric, Value: []byte{1, 0, 0, 0}}},
		StreamID: TopicRef{"s", "t"}.StreamID(), TopicID: TopicRef{"s", "t"}.TopicID(),
		Strategy: icodec.PollingStrategy{Kind: icodec.PollingKindFirst}, Count: 1,
	})
	if !IsNotFound(err) || !errors.Is(err, icodec.StatusTopicIDNotFound) {
		t.Errorf("poll: %v", err)
	}
	err = c.Do(ctx, &icodec.GetStatsRequest{}, nil)
	if !IsUnauthorized(err) || Retriable(err) {
		t.Errorf("stats: %v", err)
	}
	if n := srv.accepts.Load(); n != 1 {
		t.Fatalf("business errors reconnected: %d connections", n)
	}
}

func TestTransientIsResentIdentically(t *testing.T) {
	var rec recorder
	srv := newScriptServer(t, nil, basic(func(sc *scriptConn, h icodec.RequestHeader, body []byte) [][]byte {
		rec.add(sc, h, body)
		if len(rec.list()) < 3 {
			return [][]byte{reply(h, icodec.StatusTransientNotAccepted, nil)}
		}
		sr := icodec.StreamResponse{ID: 9, Name: "s"}
		return [][]byte{reply(h, 0, resultOK(sr.AppendTo(nil)))}
	}))
	c := startClient(t, testConfig(srv.addr()))
	id, err := c.CreateStream(context.Background(), "s")
	if err != nil || id != 9 {
		t.Fatalf("create stream: %d %v", id, err)
	}
	got := rec.list()
	if len(got) != 3 {
		t.Fatalf("server saw %d frames", len(got))
	}
	for _, g := range got[1:] {
		if g.h != got[0].h || !bytes.Equal(g.body, got[0].body) {
			t.Fatalf("resent frame differs: %+v vs %+v", g.h, got[0].h)
		}
	}
}

func TestKeepalivePing(t *testing.T) {
	pings := make(chan uint64, 16)
	srv := newScriptServer(t, nil, func(sc *scriptConn, h icodec.RequestHeader, body []byte) [][]byte {
		if h.Operation == icodec.OperationRegister {
			return [][]byte{loginReply(h, 3)}
		}
		if h.Code == icodec.CodePing {
			select {
			case pings <- h.Session:
			default:
			}
		}
		return [][]byte{reply(h, 0, nil)}
	})
	cfg := testConfig(srv.addr())
	cfg.KeepaliveInterval = 20 * time.Millisecond
	startClient(t, cfg)
	for range 3 {
		if s := recv(t, "keep-alive ping", pings); s != 3 {
			t.Fatalf("ping with session %d", s)
		}
	}
}

func TestDoRefusesSessionCommands(t *testing.T) {
	srv := newScriptServer(t, nil, basic(nil))
	c := startClient(t, testConfig(srv.addr()))
	for _, req := range []Request{&icodec.LogoutUserRequest{}, &icodec.LoginRegisterRequest{}} {
		if err := c.Do(context.Background(), req, nil); !errors.Is(err, ErrUnsupported) || !errors.Is(err, ErrNotSent) {
			t.Errorf("%T: %v", req, err)
		}
	}
}

// TestReadsUseAnyIdleSession: with one session stuck on a request, reads
// still complete on the other.
func TestReadsUseAnyIdleSession(t *testing.T) {
	gate := make(chan struct{})
	stuck := make(chan struct{}, 1)
	srv := newScriptServer(t, nil, basic(func(sc *scriptConn, h icodec.RequestHeader, body []byte) [][]byte {
		if h.Code == icodec.CodeGetStats {
			stuck <- struct{}{}
			<-gate
		}
		return [][]byte{reply(h, 0, nil)}
	}))
	cfg := testConfig(srv.addr())
	cfg.PoolSize = 2
	c := startClient(t, cfg)
	embedtest.WaitFor(t, 10*time.Second, "both sessions", func() bool { return c.SessionsUp() == 2 })
	done := make(chan error, 1)
	go func() { done <- c.Do(context.Background(), &icodec.GetStatsRequest{}, nil) }()
	recv(t, "stuck request", stuck)
	for range 5 {
		if err := c.Ping(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	close(gate)
	if err := recv(t, "stuck request answer", done); err != nil {
		t.Fatal(err)
	}
}

func TestCloseFailsWaitersAndLeavesNoGoroutines(t *testing.T) {
	gate := make(chan struct{})
	defer close(gate)
	stuck := make(chan struct{}, 1)
	srv := newScriptServer(t, nil, basic(func(sc *scriptConn, h icodec.RequestHeader, body []byte) [][]byte {
		select {
		case stuck <- struct{}{}:
		default:
		}
		<-gate
		return nil
	}))
	before := 0
	cfg := testConfig(srv.addr())
	cfg.PoolSize = 2
	cfg.RequestTimeout = time.Minute
	c, err := New(cfg, zerolog.New(io.Discard))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	embedtest.WaitFor(t, 10*time.Second, "both sessions", func() bool { return c.SessionsUp() == 2 })
	ctx := context.Background()
	errs := make(chan error, 8)
	go func() { errs <- c.Do(ctx, &icodec.GetStatsRequest{}, nil) }() // on the wire, never answered
	recv(t, "stuck request", stuck)
	tr := TopicRef{"s", "t"}
	for p := range uint32(4) { // queued on lanes or on the wire
		go func() {
			m := c.NewMessages()
			_ = m.Add(randID(), 1, []byte("x"), nil)
			_, err := c.Send(ctx, tr, p, m)
			errs <- err
		}()
	}
	embedtest.WaitFor(t, 10*time.Second, "sends queued", func() bool {
		n := 0
		for _, l := range c.lanes {
			l.mu.Lock()
			n += l.depth
			l.mu.Unlock()
		}
		return n >= 2
	})
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		err := recv(t, "answer after Close", errs)
		errIs(t, err, ErrClosed)
	}
	if err := c.Ping(ctx); !errors.Is(err, ErrClosed) || !errors.Is(err, ErrNotSent) {
		t.Fatalf("ping after close: %v", err)
	}
	m := c.NewMessages()
	_ = m.Add(randID(), 1, []byte("x"), nil)
	if _, err := c.Send(ctx, tr, 0, m); !errors.Is(err, ErrClosed) || !errors.Is(err, ErrNotSent) {
		t.Fatalf("send after close: %v", err)
	}
	_ = c.Close()
	embedtest.WaitFor(t, 10*time.Second, "client goroutines gone", func() bool { return countGoroutines() <= before })
}

// TestTLS: TLS with a CA file works; a server whose certificate the CA did
// not sign is refused.
func TestTLS(t *testing.T) {
	dir := t.TempDir()
	caPEM, serverCert := selfSignedCA(t)
	caFile := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, caPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	srv := newScriptServer(t, &tls.Config{Certificates: []tls.Certificate{serverCert}, MinVersion: tls.VersionTLS12}, basic(nil))

	cfg := testConfig(srv.addr())
	cfg.TLS = TLSConfig{Enabled: true, CAFile: caFile, ServerName: "iggy.test"}
	c := startClient(t, cfg)
	if err := c.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}

	otherPEM, _ := selfSignedCA(t)
	otherFile := filepath.Join(dir, "other.pem")
	if err := os.WriteFile(otherFile, otherPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg.TLS.CAFile = otherFile
	bad, err := New(cfg, zerolog.New(io.Discard))
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	var ue x509.UnknownAuthorityError
	if err := bad.Start(ctx); err == nil || !errors.As(err, &ue) {
		t.Fatalf("start against an unknown CA: %v", err)
	}
}

func selfSignedCA(t *testing.T) ([]byte, tls.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "iggy.test"},
		DNSNames:              []string{"iggy.test"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// TestDeleteSegmentsReplies: every answer the real 0.9 server gives a
// DELETE_SEGMENTS (core/server/src/dispatch.rs: handle_delete_segments_request)
// decodes by the reply's operation byte — 68 TruncatePartition result-framed
// (success, a committed rejection, the 58 TransientNotAccepted a partition
// that has not converged answers, resent identically while the deadline
// allows), or 138 with an empty body (an undecodable body) — and none
// breaks the session.
func TestDeleteSegmentsReplies(t *testing.T) {
	var rec recorder
	srv := newScriptServer(t, nil, basic(func(sc *scriptConn, h icodec.RequestHeader, body []byte) [][]byte {
		if h.Operation != icodec.OperationDeleteSegments {
			return nil
		}
		rec.add(sc, h, body)
		var req icodec.DeleteSegmentsRequest
		if _, err := req.DecodeFrom(body); err != nil {
			t.Errorf("decode: %v", err)
			return nil
		}
		trunc := h
		trunc.Operation = icodec.OperationTruncatePartition
		switch req.PartitionID {
		case 0:
			return [][]byte{reply(trunc, 0, icodec.AppendResultOK(nil))}
		case 1:
			return [][]byte{reply(trunc, 0, icodec.AppendResultError(nil, icodec.StatusPartitionNotFound))}
		case 2:
			return [][]byte{reply(h, 0, nil)}
		case 3:
			if n := len(framesOf(&rec, 3)); n < 3 { // twice transient, then committed
				return [][]byte{reply(trunc, 0, icodec.AppendResultError(nil, icodec.StatusTransientNotAccepted))}
			}
			return [][]byte{reply(trunc, 0, icodec.AppendResultOK(nil))}
		}
		return [][]byte{reply(trunc, 0, icodec.AppendResultError(nil, icodec.StatusTransientNotAccepted))}
	}))
	cfg := testConfig(srv.addr())
	cfg.RequestTimeout = 500 * time.Millisecond
	c := startClient(t, cfg)
	ctx := context.Background()
	ref := TopicRef{"s", "t"}
	del := func(partition uint32) error {
		return c.Do(ctx, &icodec.DeleteSegmentsRequest{StreamID: ref.StreamID(), TopicID: ref.TopicID(), PartitionID: partition, SegmentsCount: math.MaxUint32}, nil)
	}
	if err := del(0); err != nil {
		t.Fatalf("op 68 success: %v", err)
	}
	if err := del(1); !IsNotFound(err) || !errors.Is(err, icodec.StatusPartitionNotFound) || Retriable(err) {
		t.Fatalf("op 68 rejection: %v", err)
	}
	if err := del(2); err != nil {
		t.Fatalf("op 138 empty: %v", err)
	}
	if err := del(3); err != nil {
		t.Fatalf("op 68 58, 58, success: %v", err)
	}
	got := framesOf(&rec, 3)
	if len(got) != 3 {
		t.Fatalf("transient: server saw %d frames, want 3", len(got))
	}
	for _, g := range got[1:] {
		if g.h != got[0].h || !bytes.Equal(g.body, got[0].body) {
			t.Fatalf("resent frame differs: %+v vs %+v", g.h, got[0].h)
		}
	}
	start := time.Now()
	err := del(4)
	if !errors.Is(err, icodec.StatusTransientNotAccepted) || !Retriable(err) {
		t.Fatalf("58 for ever: %v", err)
	}
	if n, d := len(framesOf(&rec, 4)), time.Since(start); n < 2 || n > int(cfg.RequestTimeout/transientPause)+1 || d > 2*cfg.RequestTimeout {
		t.Fatalf("58 for ever: %d frames in %v (bounded by the %v request timeout)", n, d, cfg.RequestTimeout)
	}
	if n := srv.accepts.Load(); n != 1 {
		t.Fatalf("a DELETE_SEGMENTS answer broke the session: %d connections", n)
	}
}

// framesOf is the DELETE_SEGMENTS frames rec saw for partition.
func framesOf(rec *recorder, partition uint32) []seen {
	var out []seen
	for _, g := range rec.list() {
		var req icodec.DeleteSegmentsRequest
		if _, err := req.DecodeFrom(g.body); err == nil && req.PartitionID == partition {
			out = append(out, g)
		}
	}
	return out
}
