package proxy

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafka-iggy/kafka-iggy/bridge"
)

// testTimeout bounds every wait in these tests.
const testTimeout = 10 * time.Second

// testLog forwards server logs to t.Log until the test's cleanup has shut
// the server down (gnet goroutines may log a little later; that is dropped).
type testLog struct {
	mu   sync.Mutex
	t    testing.TB
	done bool
}

func (w *testLog) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(strings.TrimSuffix(string(p), "\n"))
	}
	return len(p), nil
}

func (w *testLog) stop() {
	w.mu.Lock()
	w.done = true
	w.mu.Unlock()
}

// newTestLogger logs at warn (KAFKA_IGGY_TEST_LOG=debug|info for more).
func newTestLogger(t testing.TB) (zerolog.Logger, *testLog) {
	w := &testLog{t: t}
	lvl := zerolog.WarnLevel
	if v := os.Getenv("KAFKA_IGGY_TEST_LOG"); v != "" {
		if l, err := zerolog.ParseLevel(v); err == nil {
			lvl = l
		}
	}
	return zerolog.New(w).Level(lvl).With().Timestamp().Logger(), w
}

// gate is a test API handler that blocks each request until the test
// releases its correlation id, recording how many ran at once.
type gate struct {
	entered chan int32
	mu      sync.Mutex
	release map[int32]chan struct{}
	failing map[int32]bool
	cur     atomic.Int32
	peak    atomic.Int32
}

func newGate() *gate {
	return &gate{entered: make(chan int32, 256), release: make(map[int32]chan struct{}), failing: make(map[int32]bool)}
}

// fail lets the request with this correlation id finish with an error.
func (g *gate) fail(corr int32) {
	g.mu.Lock()
	g.failing[corr] = true
	g.mu.Unlock()
	g.open(corr)
}

func (g *gate) ch(corr int32) chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	c, ok := g.release[corr]
	if !ok {
		c = make(chan struct{})
		g.release[corr] = c
	}
	return c
}

// open lets the request with this correlation id finish.
func (g *gate) open(corr int32) { close(g.ch(corr)) }

// waitEntered returns the next correlation id that entered the handler.
func (g *gate) waitEntered(t testing.TB) int32 {
	t.Helper()
	select {
	case c := <-g.entered:
		return c
	case <-time.After(testTimeout):
		t.Fatal("timed out waiting for a request to reach the handler")
		return 0
	}
}

func (g *gate) handle(ctx context.Context, rq *bridge.Request) (kmsg.Response, error) {
	n := g.cur.Add(1)
	for {
		p := g.peak.Load()
		if n <= p || g.peak.CompareAndSwap(p, n) {
			break
		}
	}
	g.entered <- rq.CorrID
	defer g.cur.Add(-1)
	select {
	case <-g.ch(rq.CorrID):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	g.mu.Lock()
	failing := g.failing[rq.CorrID]
	g.mu.Unlock()
	if failing {
		return nil, errors.New("gate: told to fail")
	}
	return rq.Msg.ResponseKind(), nil
}

// env is a running server with the fake API table.
type env struct {
	srv      *Server
	addr     string
	gate     *gate
	produced chan *kmsg.ProduceRequest
	metrics  *countMetrics
	// ownShutdown: the test calls Shutdown itself and checks its result.
	ownShutdown bool
	// clientIDs records the ClientID pointer of each Metadata request.
	clientIDs chan *string
}

// countMetrics counts what the server reports.
type countMetrics struct {
	opened, requests, bytesIn, bytesOut atomic.Int64
	mu                                  sync.Mutex
	closed                              map[CloseReason]int
	outcomes                            map[Outcome]int
}

func newCountMetrics() *countMetrics {
	return &countMetrics{closed: map[CloseReason]int{}, outcomes: map[Outcome]int{}}
}

func (m *countMetrics) ConnOpened() { m.opened.Add(1) }
func (m *countMetrics) ConnClosed(r CloseReason) {
	m.mu.Lock()
	m.closed[r]++
	m.mu.Unlock()
}
func (m *countMetrics) Request(_, _ int16, _ time.Duration, o Outcome) {
	m.requests.Add(1)
	m.mu.Lock()
	m.outcomes[o]++
	m.mu.Unlock()
}
func (m *countMetrics) BytesIn(n int)  { m.bytesIn.Add(int64(n)) }
func (m *countMetrics) BytesOut(n int) { m.bytesOut.Add(int64(n)) }
func (m *countMetrics) closedCount(r CloseReason) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.closed[r]
}

// Test versions: Metadata and Produce stop at 12 (v13 names topics by id).
const (
	testMetadataMax = 12
	testProduceMax  = 12
)

// newTestTable builds the fake table: ApiVersions (the real bridge row),
// Metadata answering with one broker (this listener), Produce echoing base
// offset 0 and honouring acks=0, and Heartbeat behind the gate. Produce
// draws twice its frame from the budget, as the bridge's row does.
func newTestTable(t testing.TB, e *env) *bridge.Table {
	t.Helper()
	var tab *bridge.Table
	tab, err := bridge.NewTable(
		bridge.ApiVersionsAPI(func() *bridge.Table { return tab }),
		bridge.API{Key: 3, MinVersion: 0, MaxVersion: testMetadataMax, Handle: e.metadata},
		bridge.API{Key: 0, MinVersion: 3, MaxVersion: testProduceMax, Handle: e.produce, FrameCharge: 2},
		// FrameCharge 3: TestFrameChargeComesFromTable sees it charged.
		bridge.API{Key: 12, MinVersion: 0, MaxVersion: 4, Handle: e.gate.handle, FrameCharge: 3},
	)
	if err != nil {
		t.Fatal(err)
	}
	return tab
}

func (e *env) metadata(_ context.Context, rq *bridge.Request) (kmsg.Response, error) {
	req := rq.Msg.(*kmsg.MetadataRequest)
	select {
	case e.clientIDs <- rq.ClientID:
	default:
	}
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	host, port := e.srv.Advertised()
	b := kmsg.NewMetadataResponseBroker()
	b.NodeID, b.Host, b.Port = 0, host, port
	resp.Brokers = append(resp.Brokers, b)
	cluster := "kafka-iggy-test"
	resp.ClusterID = &cluster
	resp.ControllerID = 0
	names := []string{"t"} // no topics named: all topics
	if len(req.Topics) > 0 {
		names = names[:0]
		for _, rt := range req.Topics {
			if rt.Topic != nil {
				names = append(names, *rt.Topic)
			}
		}
	}
	for _, name := range names {
		mt := kmsg.NewMetadataResponseTopic()
		n := name
		mt.Topic = &n
		mt.TopicID = [16]byte{1}
		p := kmsg.NewMetadataResponseTopicPartition()
		p.Partition, p.Leader, p.LeaderEpoch = 0, 0, 0
		p.Replicas, p.ISR = []int32{0}, []int32{0}
		mt.Partitions = append(mt.Partitions, p)
		resp.Topics = append(resp.Topics, mt)
	}
	return resp, nil
}

func (e *env) produce(_ context.Context, rq *bridge.Request) (kmsg.Response, error) {
	req := rq.Msg.(*kmsg.ProduceRequest)
	select {
	case e.produced <- req:
	default:
	}
	if req.Acks == 0 {
		return nil, nil
	}
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewProduceResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewProduceResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.BaseOffset = 0
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

// testConfig is the default config on a free loopback port.
func testConfig() Config {
	cfg := DefaultConfig()
	cfg.Listener.Address = "127.0.0.1:0"
	return cfg
}

// startEnv starts a server with the fake table; mod adjusts the config.
func startEnv(t testing.TB, mod func(*Config)) *env {
	t.Helper()
	return startEnvWith(t, mod)
}

// startEnvWith is startEnv with server options.
func startEnvWith(t testing.TB, mod func(*Config), opts ...Option) *env {
	t.Helper()
	e := &env{
		gate: newGate(), produced: make(chan *kmsg.ProduceRequest, 16),
		metrics: newCountMetrics(), clientIDs: make(chan *string, 16),
	}
	cfg := testConfig()
	if mod != nil {
		mod(&cfg)
	}
	log, tl := newTestLogger(t)
	srv, err := New(cfg, newTestTable(t, e), log, append([]Option{WithMetrics(e.metrics)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	e.srv = srv
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	e.addr = srv.Addr().String()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil && !e.ownShutdown {
			t.Errorf("shutdown: %v", err)
		}
		tl.stop()
	})
	return e
}

// appendRequest appends a framed request: size, header (v2 when the
// request is flexible, else v1), body.
func appendRequest(dst []byte, corr int32, clientID *string, req kmsg.Request) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = binary.BigEndian.AppendUint16(dst, uint16(req.Key()))
	dst = binary.BigEndian.AppendUint16(dst, uint16(req.GetVersion()))
	dst = binary.BigEndian.AppendUint32(dst, uint32(corr))
	if clientID == nil {
		dst = binary.BigEndian.AppendUint16(dst, 0xffff)
	} else {
		dst = binary.BigEndian.AppendUint16(dst, uint16(len(*clientID)))
		dst = append(dst, *clientID...)
	}
	if req.IsFlexible() {
		dst = append(dst, 0)
	}
	dst = req.AppendTo(dst)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}

var testClientID = "proxy-test"

// rawFrame builds a frame from explicit header fields and body bytes.
func rawFrame(key, version int16, corr int32, body []byte) []byte {
	b := make([]byte, 4, 4+10+len(body))
	b = binary.BigEndian.AppendUint16(b, uint16(key))
	b = binary.BigEndian.AppendUint16(b, uint16(version))
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	b = binary.BigEndian.AppendUint16(b, 0) // empty client id
	b = append(b, body...)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

func apiVersionsReq(version int16) *kmsg.ApiVersionsRequest {
	r := kmsg.NewPtrApiVersionsRequest()
	r.Version = version
	if version >= 3 {
		r.ClientSoftwareName, r.ClientSoftwareVersion = "proxy-test", "1.0.0"
	}
	return r
}

func dial(t testing.TB, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, testTimeout)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func send(t testing.TB, c net.Conn, b []byte) {
	t.Helper()
	_ = c.SetWriteDeadline(time.Now().Add(testTimeout))
	if _, err := c.Write(b); err != nil {
		t.Fatalf("write: %v", err)
	}
}

// readResponse reads one response frame: correlation id and the rest.
func readResponse(t testing.TB, c net.Conn) (int32, []byte) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(testTimeout))
	var hdr [8]byte
	if _, err := io.ReadFull(c, hdr[:4]); err != nil {
		t.Fatalf("read size: %v", err)
	}
	size := binary.BigEndian.Uint32(hdr[:4])
	if size < 4 || size > 64<<20 {
		t.Fatalf("bad response size %d", size)
	}
	b := make([]byte, size)
	if _, err := io.ReadFull(c, b); err != nil {
		t.Fatalf("read body: %v", err)
	}
	return int32(binary.BigEndian.Uint32(b)), b[4:]
}

// expectClosed asserts that the server closes c (EOF or reset) rather
// than answering or hanging.
func expectClosed(t testing.TB, c net.Conn) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(testTimeout))
	var b [64]byte
	n, err := c.Read(b[:])
	if err == nil {
		t.Fatalf("expected the connection to close, got %d bytes", n)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("connection not closed within the deadline")
	}
	// EOF or reset: closed.
}

func decodeApiVersions(t testing.TB, version int16, body []byte) *kmsg.ApiVersionsResponse {
	t.Helper()
	r := kmsg.NewPtrApiVersionsResponse()
	r.Version = version
	if err := r.ReadFrom(body); err != nil {
		t.Fatalf("decode api versions v%d: %v", version, err)
	}
	return r
}

func itoa(i int) string { return strconv.Itoa(i) }
