package proxy

import (
	"context"
	"encoding/binary"
	"net"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafka-iggy/kafka-iggy/embedded/embedtest"
)

func TestApiVersionsEveryVersion(t *testing.T) {
	e := startEnv(t, nil)
	c := dial(t, e.addr)
	for v := int16(0); v <= 5; v++ {
		send(t, c, appendRequest(nil, int32(100+v), &testClientID, apiVersionsReq(v)))
		corr, body := readResponse(t, c)
		if corr != int32(100+v) {
			t.Fatalf("v%d: corr %d", v, corr)
		}
		// The ApiVersions response header is v0 even when flexible: the body
		// starts right after the correlation id.
		r := decodeApiVersions(t, v, body)
		if r.ErrorCode != 0 {
			t.Fatalf("v%d: error %d", v, r.ErrorCode)
		}
		got := map[int16][2]int16{}
		var keys []int16
		for _, k := range r.ApiKeys {
			got[k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
			keys = append(keys, k.ApiKey)
		}
		want := map[int16][2]int16{0: {3, testProduceMax}, 3: {0, testMetadataMax}, 12: {0, 4}, 18: {0, 5}}
		if len(got) != len(want) || !slices.IsSorted(keys) {
			t.Fatalf("v%d: keys %v", v, r.ApiKeys)
		}
		for k, w := range want {
			if got[k] != w {
				t.Fatalf("v%d: key %d = %v, want %v", v, k, got[k], w)
			}
		}
		if v >= 3 && (len(r.FinalizedFeatures) != 0 || len(r.SupportedFeatures) != 0) {
			t.Fatalf("v%d: features advertised: %+v %+v", v, r.SupportedFeatures, r.FinalizedFeatures)
		}
	}
}

func TestApiVersionsUnsupportedVersionFallback(t *testing.T) {
	e := startEnv(t, nil)
	c := dial(t, e.addr)
	// v127 with a body no version defines: the front door must not decode it.
	send(t, c, rawFrame(18, 127, 7, []byte{0xde, 0xad, 0xbe, 0xef}))
	corr, body := readResponse(t, c)
	if corr != 7 {
		t.Fatalf("corr %d", corr)
	}
	r := decodeApiVersions(t, 0, body)
	if r.ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("error code %d, want 35", r.ErrorCode)
	}
	if len(r.ApiKeys) != 1 || r.ApiKeys[0].ApiKey != 18 || r.ApiKeys[0].MinVersion != 0 || r.ApiKeys[0].MaxVersion != 5 {
		t.Fatalf("api keys %+v", r.ApiKeys)
	}
	// The connection stays usable: the client retries at v4.
	send(t, c, appendRequest(nil, 8, &testClientID, apiVersionsReq(4)))
	if corr, body = readResponse(t, c); corr != 8 {
		t.Fatalf("retry corr %d", corr)
	}
	if r := decodeApiVersions(t, 4, body); r.ErrorCode != 0 || len(r.ApiKeys) != 4 {
		t.Fatalf("retry: %+v", r)
	}
}

func TestPipelinedRepliesInOrder(t *testing.T) {
	e := startEnv(t, func(c *Config) { c.Limits.MaxInFlight = 8 })
	c := dial(t, e.addr)
	var batch []byte
	const n = 50
	for i := 0; i < n; i++ {
		if i%2 == 0 {
			batch = appendRequest(batch, int32(i), &testClientID, apiVersionsReq(int16(i%5)))
		} else {
			m := kmsg.NewPtrMetadataRequest()
			m.Version = int16(i % (testMetadataMax + 1))
			if m.Version >= 1 {
				m.Topics = []kmsg.MetadataRequestTopic{kmsg.NewMetadataRequestTopic()}
				topic := "t"
				m.Topics[0].Topic = &topic
			}
			batch = appendRequest(batch, int32(i), nil, m)
		}
	}
	send(t, c, batch) // one write: many frames per OnTraffic
	for i := 0; i < n; i++ {
		corr, body := readResponse(t, c)
		if corr != int32(i) {
			t.Fatalf("reply %d has corr %d", i, corr)
		}
		if i%2 == 1 {
			v := int16(i % (testMetadataMax + 1))
			r := kmsg.NewPtrMetadataResponse()
			r.Version = v
			if v >= 9 { // flexible: response header v1 carries an empty tag section
				if body[0] != 0 {
					t.Fatalf("metadata v%d: tag byte %d", v, body[0])
				}
				body = body[1:]
			}
			if err := r.ReadFrom(body); err != nil {
				t.Fatalf("metadata v%d: %v", v, err)
			}
			if len(r.Brokers) != 1 || len(r.Topics) != 1 {
				t.Fatalf("metadata v%d: %+v", v, r)
			}
		}
	}
}

// TestRequestsOfOneConnectionRunInOrder: like a Kafka broker, the front door
// runs one request of a connection at a time, in the order they were sent
// (pipelined produces must land in order), while it keeps reading ahead.
func TestRequestsOfOneConnectionRunInOrder(t *testing.T) {
	e := startEnv(t, func(c *Config) { c.Limits.MaxInFlight = 5 })
	c := dial(t, e.addr)
	var batch []byte
	for i := int32(1); i <= 5; i++ {
		batch = appendRequest(batch, i, &testClientID, kmsg.NewPtrHeartbeatRequest())
	}
	send(t, c, batch)
	cs := onlyConn(t, e.srv)
	embedtest.WaitFor(t, testTimeout, "all five read off the socket", func() bool {
		cs.mu.Lock()
		defer cs.mu.Unlock()
		return cs.inFlight == 5
	})
	for i := int32(1); i <= 5; i++ {
		if got := e.gate.waitEntered(t); got != i {
			t.Fatalf("request %d entered the handler before request %d", got, i)
		}
		select {
		case corr := <-e.gate.entered:
			t.Fatalf("request %d entered while request %d was still running", corr, i)
		default:
		}
		e.gate.open(i)
		if corr, _ := readResponse(t, c); corr != i {
			t.Fatalf("reply %d has corr %d", i, corr)
		}
	}
	if p := e.gate.peak.Load(); p != 1 {
		t.Fatalf("peak concurrency on one connection %d, want 1", p)
	}
}

func TestMaxInFlightBackpressure(t *testing.T) {
	const maxInFlight, n = 2, 8
	e := startEnv(t, func(c *Config) { c.Limits.MaxInFlight = maxInFlight })
	c := dial(t, e.addr)
	var batch []byte
	for i := int32(1); i <= n; i++ {
		batch = appendRequest(batch, i, &testClientID, kmsg.NewPtrHeartbeatRequest())
	}
	send(t, c, batch)
	// Two requests are taken off the socket (one running, one queued behind
	// it); the server then stops taking frames off this connection (they
	// stay buffered) until a reply is written.
	if got := e.gate.waitEntered(t); got != 1 {
		t.Fatalf("entered %d", got)
	}
	cs := onlyConn(t, e.srv)
	embedtest.WaitFor(t, testTimeout, "connection paused at max_in_flight", func() bool {
		cs.mu.Lock()
		defer cs.mu.Unlock()
		return cs.flags.isSet(flagPausedInFlight) && cs.inFlight == maxInFlight
	})
	// Release one at a time: each reply lets exactly the next one in.
	for i := int32(1); i <= n; i++ {
		if i > 1 {
			if got := e.gate.waitEntered(t); got != i {
				t.Fatalf("after reply %d, entered %d", i-1, got)
			}
		}
		e.gate.open(i)
		if corr, _ := readResponse(t, c); corr != i {
			t.Fatalf("reply %d has corr %d", i, corr)
		}
		cs.mu.Lock()
		inFlight := cs.inFlight
		cs.mu.Unlock()
		if inFlight > maxInFlight {
			t.Fatalf("%d requests in flight, above max_in_flight %d", inFlight, maxInFlight)
		}
	}
}

func TestWorkerQueueFullParksInsteadOfDropping(t *testing.T) {
	// One worker, one queue slot, three connections: the third request has
	// nowhere to go and must wait (parked, its connection paused), not be
	// dropped.
	e := startEnv(t, func(c *Config) {
		c.Gnet.WorkerPoolSize, c.Gnet.WorkerQueueSize = 1, 1
	})
	c1, c2, c3 := dial(t, e.addr), dial(t, e.addr), dial(t, e.addr)
	send(t, c1, appendRequest(nil, 1, &testClientID, kmsg.NewPtrHeartbeatRequest()))
	if got := e.gate.waitEntered(t); got != 1 {
		t.Fatalf("entered %d", got)
	}
	send(t, c2, appendRequest(nil, 2, &testClientID, kmsg.NewPtrHeartbeatRequest()))
	embedtest.WaitFor(t, testTimeout, "request 2 queued", func() bool { return len(e.srv.pool.jobs) == 1 })
	send(t, c3, appendRequest(nil, 3, &testClientID, kmsg.NewPtrHeartbeatRequest()))
	embedtest.WaitFor(t, testTimeout, "request 3 parked", func() bool { return e.srv.pool.nwait.Load() == 1 })

	e.gate.open(1)
	if got := e.gate.waitEntered(t); got != 2 {
		t.Fatalf("entered %d, want 2", got)
	}
	e.gate.open(2)
	if got := e.gate.waitEntered(t); got != 3 {
		t.Fatalf("entered %d, want 3", got)
	}
	e.gate.open(3)
	for i, c := range []net.Conn{c1, c2, c3} {
		if corr, _ := readResponse(t, c); corr != int32(i+1) {
			t.Fatalf("conn %d: corr %d", i+1, corr)
		}
	}
}

func TestAcksZeroProduceWritesNothing(t *testing.T) {
	e := startEnv(t, nil)
	c := dial(t, e.addr)
	p := kmsg.NewPtrProduceRequest()
	p.Version, p.Acks, p.TimeoutMillis = 9, 0, 1000
	tp := kmsg.NewProduceRequestTopic()
	tp.Topic = "t"
	pp := kmsg.NewProduceRequestTopicPartition()
	tp.Partitions = append(tp.Partitions, pp)
	p.Topics = append(p.Topics, tp)
	batch := appendRequest(nil, 1, &testClientID, p)
	batch = appendRequest(batch, 2, &testClientID, apiVersionsReq(3))
	send(t, c, batch)
	// The first reply on the wire is ApiVersions': acks=0 consumed its
	// sequence number and wrote nothing.
	if corr, _ := readResponse(t, c); corr != 2 {
		t.Fatalf("first reply has corr %d, want 2", corr)
	}
	select {
	case got := <-e.produced:
		if got.Acks != 0 {
			t.Fatalf("acks %d", got.Acks)
		}
	default:
		t.Fatal("produce never reached the handler")
	}
}

func TestUnknownKeyClosesConnection(t *testing.T) {
	e := startEnv(t, nil)
	for _, tc := range []struct {
		name         string
		key, version int16
	}{
		{"unknown to kmsg", 1000, 0},
		{"negative key", -1, 0},
		{"known but not served", 1, 4},
		{"served key, version too high", 3, testMetadataMax + 1},
		{"served key, version below min", 0, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dial(t, e.addr)
			send(t, c, rawFrame(tc.key, tc.version, 1, nil))
			expectClosed(t, c)
		})
	}
	embedtest.WaitFor(t, testTimeout, "close reasons counted", func() bool { return e.metrics.closedCount(CloseUnsupportedAPI) == 5 })
}

func TestOversizeFrameClosesWithoutAllocating(t *testing.T) {
	e := startEnv(t, func(c *Config) { c.Limits.MaxFrameBytes = 1 << 20 })
	c := dial(t, e.addr)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], 1<<30) // claims 1 GiB
	send(t, c, hdr[:])
	expectClosed(t, c)
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 16<<20 {
		t.Fatalf("server allocated %d bytes for a refused frame", grew)
	}
	embedtest.WaitFor(t, testTimeout, "close reason", func() bool { return e.metrics.closedCount(CloseFrameTooLarge) == 1 })

	// A negative int32 size is refused the same way.
	c2 := dial(t, e.addr)
	send(t, c2, []byte{0x80, 0, 0, 0})
	expectClosed(t, c2)
}

func TestMalformedRequestsClose(t *testing.T) {
	e := startEnv(t, nil)
	cases := []struct {
		name  string
		frame []byte
	}{
		{"frame shorter than header", []byte{0, 0, 0, 3, 0, 18, 0}},
		{"client id longer than frame", func() []byte {
			b := rawFrame(18, 1, 1, nil)
			binary.BigEndian.PutUint16(b[12:], 50)
			return b
		}()},
		{"flexible header with truncated tags", rawFrame(18, 3, 1, []byte{0x05})},
		{"metadata body truncated", rawFrame(3, 1, 1, []byte{0, 0, 0, 5, 0})},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := dial(t, e.addr)
			send(t, c, tc.frame)
			expectClosed(t, c)
		})
	}
	embedtest.WaitFor(t, testTimeout, "close reasons counted", func() bool {
		return e.metrics.closedCount(CloseBadHeader) == 3 && e.metrics.closedCount(CloseDecodeError) == 1
	})
}

func TestHandlerErrorClosesConnection(t *testing.T) {
	e := startEnv(t, nil)
	c := dial(t, e.addr)
	send(t, c, appendRequest(nil, 1, &testClientID, kmsg.NewPtrHeartbeatRequest()))
	e.gate.waitEntered(t)
	e.gate.fail(1)
	expectClosed(t, c)
	embedtest.WaitFor(t, testTimeout, "handler_error counted", func() bool { return e.metrics.closedCount(CloseHandlerError) == 1 })
}

func TestClientCloseCancelsHandler(t *testing.T) {
	e := startEnv(t, nil)
	c := dial(t, e.addr)
	send(t, c, appendRequest(nil, 1, &testClientID, kmsg.NewPtrHeartbeatRequest()))
	e.gate.waitEntered(t)
	_ = c.Close()
	// The handler's context is cancelled: it returns without being released.
	embedtest.WaitFor(t, testTimeout, "handler released by connection close", func() bool { return e.gate.cur.Load() == 0 })
	embedtest.WaitFor(t, testTimeout, "client_closed counted", func() bool { return e.metrics.closedCount(CloseClientClosed) == 1 })
	if n := e.metrics.closedCount(CloseHandlerError); n != 0 {
		t.Fatalf("%d handler_error closes for a client that left", n)
	}
}

func TestIdleTimeout(t *testing.T) {
	e := startEnv(t, func(c *Config) { c.Limits.IdleTimeout = 100 * time.Millisecond })
	c := dial(t, e.addr)
	send(t, c, appendRequest(nil, 1, &testClientID, apiVersionsReq(0)))
	readResponse(t, c)
	expectClosed(t, c)
	embedtest.WaitFor(t, testTimeout, "idle_timeout counted", func() bool { return e.metrics.closedCount(CloseIdleTimeout) == 1 })
}

func TestMaxConnections(t *testing.T) {
	e := startEnv(t, func(c *Config) { c.Limits.MaxConnections = 1 })
	c1 := dial(t, e.addr)
	send(t, c1, appendRequest(nil, 1, &testClientID, apiVersionsReq(0)))
	readResponse(t, c1) // c1 is registered
	c2 := dial(t, e.addr)
	expectClosed(t, c2)
	// c1 still works.
	send(t, c1, appendRequest(nil, 2, &testClientID, apiVersionsReq(0)))
	if corr, _ := readResponse(t, c1); corr != 2 {
		t.Fatalf("corr %d", corr)
	}
	embedtest.WaitFor(t, testTimeout, "refusal counted", func() bool { return e.metrics.closedCount(CloseTooManyConnections) == 1 })
}

func TestShutdownDrainsInFlight(t *testing.T) {
	e := startEnv(t, nil)
	c := dial(t, e.addr)
	send(t, c, appendRequest(nil, 41, &testClientID, kmsg.NewPtrHeartbeatRequest()))
	e.gate.waitEntered(t)

	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		done <- e.srv.Shutdown(ctx)
	}()
	embedtest.WaitFor(t, testTimeout, "draining", e.srv.draining.Load)

	// New connections are refused while draining.
	late := dial(t, e.addr)
	expectClosed(t, late)
	select {
	case err := <-done:
		t.Fatalf("Shutdown returned %v with a request in flight", err)
	default:
	}

	e.gate.open(41)
	if corr, _ := readResponse(t, c); corr != 41 {
		t.Fatalf("corr %d", corr)
	}
	expectClosed(t, c)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("shutdown: %v", err)
		}
	case <-time.After(testTimeout):
		t.Fatal("Shutdown did not return")
	}
	if n := e.metrics.closedCount(CloseShutdown); n != 2 {
		t.Fatalf("shutdown closes %d, want 2", n)
	}
}

func TestShutdownDeadlineCutsDrainShort(t *testing.T) {
	e := startEnv(t, nil)
	c := dial(t, e.addr)
	send(t, c, appendRequest(nil, 1, &testClientID, kmsg.NewPtrHeartbeatRequest()))
	e.gate.waitEntered(t)
	e.ownShutdown = true
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := e.srv.Shutdown(ctx); err != context.DeadlineExceeded {
		t.Fatalf("shutdown: %v, want deadline exceeded", err)
	}
	expectClosed(t, c)
	if n := e.gate.cur.Load(); n != 0 {
		t.Fatalf("%d handlers still running after shutdown", n)
	}
}

func TestStartErrors(t *testing.T) {
	e := startEnv(t, nil)
	if err := e.srv.Start(context.Background()); err != ErrServerStarted {
		t.Fatalf("second Start: %v", err)
	}
	// The port is taken: the second server fails to start.
	cfg := testConfig()
	cfg.Listener.Address = e.addr
	cfg.Gnet.ReuseAddr = false
	log, tl := newTestLogger(t)
	defer tl.stop()
	s2, err := New(cfg, e.srv.d, log)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if err := s2.Start(ctx); err == nil {
		_ = s2.Shutdown(ctx)
		t.Fatal("second server started on a taken port")
	}
}

func TestAdvertised(t *testing.T) {
	e := startEnv(t, nil)
	host, port := e.srv.Advertised()
	_, portStr, err := net.SplitHostPort(e.addr)
	if err != nil {
		t.Fatal(err)
	}
	if host != "127.0.0.1" || itoa(int(port)) != portStr {
		t.Fatalf("advertised %s:%d, listening on %s", host, port, e.addr)
	}

	cfg := testConfig()
	cfg.Listener.AdvertisedHost, cfg.Listener.AdvertisedPort = "10.1.2.3", 19092
	s := &Server{cfg: cfg, booted: make(chan struct{})}
	if h, p := s.Advertised(); h != "10.1.2.3" || p != 19092 {
		t.Fatalf("configured advertised address: %s:%d", h, p)
	}
}

func TestInboundOverflowWhilePaused(t *testing.T) {
	e := startEnv(t, func(c *Config) {
		c.Limits.MaxInFlight = 1
		c.Limits.MaxFrameBytes = 1 << 10
		c.Limits.MaxInboundBytes = 8 << 10
	})
	c := dial(t, e.addr)
	send(t, c, appendRequest(nil, 1, &testClientID, kmsg.NewPtrHeartbeatRequest()))
	e.gate.waitEntered(t) // in flight: the connection is now paused
	// Keep sending valid frames: gnet buffers them; past 8 KiB the server
	// gives up on this client instead of buffering without end.
	var more []byte
	for i := int32(2); len(more) < 64<<10; i++ {
		more = appendRequest(more, i, &testClientID, kmsg.NewPtrHeartbeatRequest())
	}
	_ = c.SetWriteDeadline(time.Now().Add(testTimeout))
	_, _ = c.Write(more) // may fail once the server has closed
	expectClosed(t, c)
	embedtest.WaitFor(t, testTimeout, "inbound_overflow counted", func() bool { return e.metrics.closedCount(CloseInboundOverflow) == 1 })
	if p := e.gate.peak.Load(); p != 1 {
		t.Fatalf("peak concurrency %d", p)
	}
}

func TestIdleTimeoutSparesConnectionsWithRequestsInFlight(t *testing.T) {
	e := startEnv(t, func(c *Config) { c.Limits.IdleTimeout = time.Hour })
	c := dial(t, e.addr)
	send(t, c, appendRequest(nil, 1, &testClientID, kmsg.NewPtrHeartbeatRequest()))
	e.gate.waitEntered(t)
	cs := onlyConn(t, e.srv)
	h := (*handler)(e.srv)

	cs.lastActive.Store(0) // silent for ages, but a request is in flight
	h.OnTick()
	cs.mu.Lock()
	why := cs.why.reason
	cs.mu.Unlock()
	if why != CloseUnknown {
		t.Fatalf("closed (%v) with a request in flight", why)
	}
	e.gate.open(1)
	readResponse(t, c)
	embedtest.WaitFor(t, testTimeout, "reply written", func() bool {
		cs.mu.Lock()
		defer cs.mu.Unlock()
		return cs.inFlight == 0
	})
	cs.lastActive.Store(0)
	h.OnTick()
	expectClosed(t, c)
	embedtest.WaitFor(t, testTimeout, "idle_timeout counted", func() bool { return e.metrics.closedCount(CloseIdleTimeout) == 1 })
}

func TestClientIDSharedAcrossRequests(t *testing.T) {
	e := startEnv(t, nil)
	c := dial(t, e.addr)
	other := "other-client"
	var batch []byte
	for _, id := range []*string{&testClientID, &testClientID, &other, nil} {
		batch = appendRequest(batch, 1, id, kmsg.NewPtrMetadataRequest())
	}
	send(t, c, batch)
	for range 4 {
		readResponse(t, c)
	}
	// Handlers run concurrently: compare as a set.
	var same []*string
	var others, nulls int
	for range 4 {
		switch id := <-e.clientIDs; {
		case id == nil:
			nulls++
		case *id == testClientID:
			same = append(same, id)
		case *id == other:
			others++
		}
	}
	if len(same) != 2 || same[0] != same[1] || others != 1 || nulls != 1 {
		t.Fatalf("client ids: same=%v others=%d nulls=%d", same, others, nulls)
	}
}

// onlyConn returns the server's single open connection.
func onlyConn(t testing.TB, s *Server) *conn {
	t.Helper()
	var cs *conn
	embedtest.WaitFor(t, testTimeout, "one connection", func() bool {
		s.connsMu.Lock()
		defer s.connsMu.Unlock()
		if len(s.conns) != 1 {
			return false
		}
		for _, c := range s.conns {
			cs = c
		}
		return true
	})
	return cs
}

// TestFrameChargeComesFromTable: a request holds its row's FrameCharge
// times its frame size of the memory budget while it is served (the test
// table's Heartbeat row charges 3), and returns it once answered.
func TestFrameChargeComesFromTable(t *testing.T) {
	e := startEnv(t, nil)
	c := dial(t, e.addr)
	frame := appendRequest(nil, 1, &testClientID, kmsg.NewPtrHeartbeatRequest())
	send(t, c, frame)
	if got := e.gate.waitEntered(t); got != 1 {
		t.Fatalf("request %d entered the handler, want 1", got)
	}
	size := int64(len(frame) - FrameHeaderSize)
	if got, want := e.srv.budget.InUse(), 3*size; got != want {
		t.Fatalf("budget in use %d while the request is served, want 3 × %d = %d", got, size, want)
	}
	e.gate.open(1)
	if corr, _ := readResponse(t, c); corr != 1 {
		t.Fatalf("reply has corr %d", corr)
	}
	embedtest.WaitFor(t, testTimeout, "the frame's budget back", func() bool { return e.srv.budget.InUse() == 0 })
}
