package proxy

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/panjf2000/gnet/v2"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/valyala/bytebufferpool"
	"golang.org/x/sys/unix"

	"github.com/kafka-iggy/kafka-iggy/bridge"
	"github.com/kafka-iggy/kafka-iggy/budget"
)

// Dispatcher is what the front door needs from the bridge: the served
// version range of each API key (checked before a body is decoded) and the
// dispatch itself. *bridge.Table satisfies it. See bridge.HandlerFunc for
// the meaning of Dispatch's results.
type Dispatcher interface {
	Versions(key int16) (minVersion, maxVersion int16, ok bool)
	Dispatch(ctx context.Context, rq *bridge.Request) (kmsg.Response, error)
	// Completes reports whether a received request of key runs even when
	// its connection closed before it started (bridge.API.Completes).
	Completes(key int16) bool
}

var _ Dispatcher = (*bridge.Table)(nil)

// Server errors.
var (
	// ErrServerStarted: Start was called twice.
	ErrServerStarted = errors.New("proxy: server already started")

	errUnknownKey = errors.New("api key not served")
)

// Option customises a Server beyond its Config.
type Option func(*Server)

// WithMetrics sets the Metrics sink (default NopMetrics).
func WithMetrics(m Metrics) Option {
	return func(s *Server) {
		if m != nil {
			s.metrics = m
		}
	}
}

// WithBudget sets the process's memory budget the front door draws from
// (shared with the bridge's fetches). Default: one of
// limits.memory_bytes (derived as Config.Resolved says when 0).
func WithBudget(b *budget.Budget) Option {
	return func(s *Server) {
		if b != nil {
			s.budget = b
		}
	}
}

// Server is the Kafka front door: a gnet v2 engine whose event loops split
// request frames off client sockets and hand them to a bounded worker pool,
// which decodes them, calls the Dispatcher and queues replies that each
// connection writes back in request order.
//
// Threads: event loops only split frames, parse request headers and write;
// they never block. Handlers run on workers. Per-connection state lives in
// a *conn in the gnet.Conn context; what workers touch is behind its mutex.
//
// Start, Shutdown, Addr and Advertised are safe for concurrent use.
type Server struct {
	cfg     Config
	d       Dispatcher
	log     zerolog.Logger
	gnetLog gnetLogger
	metrics Metrics
	budget  *budget.Budget // limits.memory_bytes: frames, produce copies, unsent replies

	inPool    bytebufferpool.Pool // request frames
	bigPool   bytebufferpool.Pool // request frames of bigFrame bytes or more
	outPool   bytebufferpool.Pool // encoded replies
	jobPool   sync.Pool           // *job
	batchPool sync.Pool           // *writeBatch
	pool      *workerPool

	baseCtx    context.Context // parent of every connection's context
	baseCancel context.CancelFunc

	started   atomic.Bool
	stopping  atomic.Bool
	draining  atomic.Bool
	inFlight  atomic.Int64 // requests taken off sockets, reply not yet written
	drained   chan struct{}
	nconns    atomic.Int64
	nextID    atomic.Uint64
	tickEvery time.Duration

	connsMu sync.Mutex
	conns   map[uint64]*conn
	tickMu  sync.Mutex // serialises OnTick (gnet calls it from one goroutine; tests too)
	tickBuf []*conn    // guarded by tickMu
	live    liveness   // progress of the ticker, the loops and the pool (liveness.go)

	eng      gnet.Engine
	addr     net.Addr // set in OnBoot, before booted closes
	addrErr  error
	booted   chan struct{}
	runDone  chan struct{}
	runErr   error
	shutOnce sync.Once
	shutErr  error
}

// New checks cfg and builds a Server that serves d. log receives the
// server's and gnet's log lines. Nothing listens until Start.
func New(cfg Config, d Dispatcher, log zerolog.Logger, opts ...Option) (*Server, error) {
	cfg, _ = cfg.Resolved()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if d == nil {
		return nil, errors.New("proxy: nil dispatcher")
	}
	s := &Server{
		cfg:     cfg,
		d:       d,
		log:     log.With().Str("component", "proxy").Logger(),
		gnetLog: newGnetLogger(log),
		metrics: NopMetrics{},
		drained: make(chan struct{}, 1),
		conns:   make(map[uint64]*conn),
		booted:  make(chan struct{}),
		runDone: make(chan struct{}),
	}
	for _, o := range opts {
		o(s)
	}
	if s.budget == nil {
		s.budget = budget.New(cfg.Limits.MemoryBytes)
	}
	if total := s.budget.Total(); int64(cfg.Limits.MaxFrameBytes) > total {
		return nil, fmt.Errorf("limits.max_frame_bytes: %d is above the memory budget (%d bytes): a frame that large could never be read", cfg.Limits.MaxFrameBytes, total)
	}
	s.baseCtx, s.baseCancel = context.WithCancel(context.Background())
	s.pool = newWorkerPool(cfg.Gnet.WorkerPoolSize, cfg.Gnet.WorkerQueueSize, s.live.counting(s.serve))
	s.tickEvery = 100 * time.Millisecond
	if idle := cfg.Limits.IdleTimeout; idle > 0 && idle/4 < s.tickEvery {
		s.tickEvery = max(idle/4, 10*time.Millisecond)
	}
	return s, nil
}

// Start binds the listener and starts the event loops. It returns once the
// server is listening (ctx bounds only this wait), or the bind error.
func (s *Server) Start(ctx context.Context) error {
	if !s.started.CompareAndSwap(false, true) {
		return ErrServerStarted
	}
	g := s.cfg.Gnet
	lb, _ := loadBalancing(g.LoadBalancing)
	loops := g.NumEventLoop
	if loops == 0 {
		loops = 1
		if g.Multicore {
			loops = runtime.GOMAXPROCS(0)
		}
	}
	noDelay := gnet.TCPDelay
	if g.TCPNoDelay {
		noDelay = gnet.TCPNoDelay
	}
	opts := []gnet.Option{
		gnet.WithMulticore(g.Multicore),
		gnet.WithNumEventLoop(loops),
		gnet.WithLockOSThread(g.LockOSThread),
		gnet.WithTCPNoDelay(noDelay),
		gnet.WithReadBufferCap(g.ReadBufferCap),
		gnet.WithWriteBufferCap(g.WriteBufferCap),
		gnet.WithSocketRecvBuffer(g.SocketRecvBuffer),
		gnet.WithSocketSendBuffer(g.SocketSendBuffer),
		gnet.WithEdgeTriggeredIO(g.EdgeTriggeredIO),
		gnet.WithReusePort(g.ReusePort),
		gnet.WithReuseAddr(g.ReuseAddr),
		gnet.WithLoadBalancing(lb),
		gnet.WithTicker(true),
		gnet.WithLogger(s.gnetLog),
	}
	if g.TCPKeepAlive > 0 {
		opts = append(opts, gnet.WithTCPKeepAlive(g.TCPKeepAlive))
	}
	go func() {
		s.runErr = gnet.Run((*handler)(s), "tcp://"+s.cfg.Listener.Address, opts...)
		close(s.runDone)
	}()
	select {
	case <-s.booted:
	case <-s.runDone:
		if s.runErr != nil {
			return fmt.Errorf("proxy: listen %s: %w", s.cfg.Listener.Address, s.runErr)
		}
		return fmt.Errorf("proxy: listen %s: engine stopped at start", s.cfg.Listener.Address)
	case <-ctx.Done():
		return ctx.Err()
	}
	if s.addrErr != nil {
		return fmt.Errorf("proxy: listener address: %w", s.addrErr)
	}
	s.log.Info().Str("address", s.addr.String()).Int("event_loops", loops).Msg("kafka listener started")
	return nil
}

// listenerAddr asks the kernel which address the listener is bound to
// (port 0 picks a free port).
func listenerAddr(eng gnet.Engine) (net.Addr, error) {
	fd, err := eng.Dup()
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	sa, err := unix.Getsockname(fd)
	if err != nil {
		return nil, err
	}
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		return &net.TCPAddr{IP: net.IP(a.Addr[:]).To16(), Port: a.Port}, nil
	case *unix.SockaddrInet6:
		return &net.TCPAddr{IP: net.IP(a.Addr[:]), Port: a.Port}, nil
	}
	return nil, fmt.Errorf("unexpected socket address %T", sa)
}

// Addr is the address the server listens on (nil before Start returns).
func (s *Server) Addr() net.Addr {
	select {
	case <-s.booted:
		return s.addr
	default:
		return nil
	}
}

// Advertised is the host and port clients are told to connect to:
// listener.advertised_host/port, defaulting to the listen host and the
// bound port. Valid after Start.
func (s *Server) Advertised() (host string, port int32) {
	host, portStr, _ := net.SplitHostPort(s.cfg.Listener.Address)
	if s.cfg.Listener.AdvertisedHost != "" {
		host = s.cfg.Listener.AdvertisedHost
	}
	p, _ := strconv.Atoi(portStr)
	if a, ok := s.Addr().(*net.TCPAddr); ok {
		p = a.Port
	}
	if s.cfg.Listener.AdvertisedPort != 0 {
		p = s.cfg.Listener.AdvertisedPort
	}
	return host, int32(p)
}

// stopGrace is how long Shutdown waits, after the drain, for the event
// loops to close every connection and for cancelled handlers to return.
const stopGrace = 5 * time.Second

// Shutdown drains and stops the server: new connections are refused (they
// are accepted and closed, close_reason shutdown), no new requests are
// read, requests in flight finish and their replies are written, then
// every connection is closed and the loops and workers stop. The drain
// lasts until ctx is done or, if ctx has no deadline, limits.drain_timeout;
// handlers still running then see their context cancelled, and Shutdown
// waits up to 5s more for them and the loops. It returns ctx's error when
// the drain was cut short. Calling it again returns the first result.
func (s *Server) Shutdown(ctx context.Context) error {
	if !s.started.Load() {
		return nil
	}
	s.shutOnce.Do(func() { s.shutErr = s.shutdown(ctx) })
	return s.shutErr
}

func (s *Server) shutdown(ctx context.Context) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.cfg.Limits.DrainTimeout)
		defer cancel()
	}
	select {
	case <-s.booted:
	case <-s.runDone:
		return nil // never listened
	case <-ctx.Done():
		return ctx.Err()
	}
	s.draining.Store(true)
	s.log.Info().Int64("in_flight", s.inFlight.Load()).Msg("draining kafka listener")

	var err error
	for s.inFlight.Load() > 0 && err == nil {
		select {
		case <-s.drained:
		case <-ctx.Done():
			err = ctx.Err()
			s.log.Warn().Int64("in_flight", s.inFlight.Load()).Msg("drain deadline passed; closing connections with requests in flight")
		}
	}

	// Cancel handlers still running, then stop the engine: it closes every
	// connection (OnClose: close_reason shutdown) and its loops.
	s.stopping.Store(true)
	s.baseCancel()
	grace := time.NewTimer(stopGrace)
	defer grace.Stop()
	stopCtx, cancelStop := context.WithCancel(context.Background())
	defer cancelStop()
	go func() { _ = s.eng.Stop(stopCtx) }()
	select {
	case <-s.runDone:
	case <-grace.C:
		s.log.Error().Dur("grace", stopGrace).Msg("event loops did not stop in time")
		return errors.Join(err, errors.New("proxy: event loops did not stop in time"))
	}

	// Loops are gone, so nothing submits any more: stop the workers once
	// the queue is empty.
	s.pool.close()
	if !s.pool.wait(grace.C) {
		s.log.Error().Dur("grace", stopGrace).Msg("handlers did not return in time after cancellation")
		return errors.Join(err, errors.New("proxy: handlers did not return in time"))
	}
	s.log.Info().Msg("kafka listener stopped")
	return err
}

// finish accounts n requests whose replies were written (or dropped).
func (s *Server) finish(n int) {
	if s.inFlight.Add(-int64(n)) == 0 && s.draining.Load() {
		select {
		case s.drained <- struct{}{}:
		default:
		}
	}
}

func (s *Server) getBatch(cs *conn) *writeBatch {
	wb, _ := s.batchPool.Get().(*writeBatch)
	if wb == nil {
		wb = &writeBatch{s: s}
		wb.cb = wb.written
	}
	wb.cs = cs
	return wb
}

// bigFrame is the size from which request frames have a pool of their own
// (bigPool): large produce frames then get a buffer that has held one
// before instead of growing a small one (the pools size what they hand out
// from what comes back).
const bigFrame = 64 << 10

// getFrame returns a pooled buffer for a request frame of size bytes.
func (s *Server) getFrame(size int) *bytebufferpool.ByteBuffer {
	if size >= bigFrame {
		return s.bigPool.Get()
	}
	return s.inPool.Get()
}

// putFrame returns a request frame buffer to the pool of its size.
func (s *Server) putFrame(b *bytebufferpool.ByteBuffer) {
	if cap(b.B) >= bigFrame {
		s.bigPool.Put(b)
		return
	}
	s.inPool.Put(b)
}

func (s *Server) getJob() *job {
	j, _ := s.jobPool.Get().(*job)
	if j == nil {
		j = new(job)
	}
	return j
}

func (s *Server) putJob(j *job) {
	if j.frame != nil {
		s.putFrame(j.frame)
	}
	s.budget.Release(j.held)
	*j = job{}
	s.jobPool.Put(j)
}

// handler is the Server as a gnet event handler; its methods are not part
// of the Server's API.
type handler Server

// OnBoot records the engine and the bound address (the listener is bound
// already; loops start accepting after OnBoot returns).
func (h *handler) OnBoot(eng gnet.Engine) gnet.Action {
	h.eng = eng
	h.addr, h.addrErr = listenerAddr(eng)
	close(h.booted)
	return gnet.None
}

// OnShutdown runs after gnet closed every connection.
func (h *handler) OnShutdown(gnet.Engine) {}

// OnOpen sets up the connection's state, or refuses it when the server is
// draining or at max_connections.
func (h *handler) OnOpen(c gnet.Conn) ([]byte, gnet.Action) {
	s := (*Server)(h)
	now := time.Now()
	cs := &conn{s: s, gc: c, id: s.nextID.Add(1), ring: make([]slot, s.cfg.Limits.MaxInFlight)}
	if ra := c.RemoteAddr(); ra != nil {
		cs.remote = ra.String()
	}
	cs.touch(now)
	cs.ctx, cs.cancel = context.WithCancel(s.baseCtx)
	c.SetContext(cs)
	s.metrics.ConnOpened()
	n := s.nconns.Add(1)
	if s.draining.Load() {
		cs.fail(closeInfo{reason: CloseShutdown})
		return nil, gnet.Close
	}
	if limit := s.cfg.Limits.MaxConnections; limit > 0 && n > int64(limit) {
		cs.fail(closeInfo{reason: CloseTooManyConnections, size: n, limit: int64(limit)})
		return nil, gnet.Close
	}
	s.connsMu.Lock()
	s.conns[cs.id] = cs
	s.connsMu.Unlock()
	s.log.Debug().Uint64("conn_id", cs.id).Str("remote", cs.remote).Msg("connection opened")
	return nil, gnet.None
}

// OnClose releases the connection's state and logs its close_reason.
func (h *handler) OnClose(c gnet.Conn, err error) gnet.Action {
	s := (*Server)(h)
	cs, ok := c.Context().(*conn)
	if !ok {
		return gnet.None
	}
	finishing := s.takeLeftovers(c, cs, err)
	cs.mu.Lock()
	cs.flags.set(flagClosed)
	why := cs.why
	dropped := 0
	for i := range cs.ring {
		if sl := &cs.ring[i]; sl.ready {
			sl.rep.release(s)
			*sl = slot{}
			dropped++
		}
	}
	cs.mu.Unlock()
	if cs.partial != nil {
		s.putFrame(cs.partial)
		cs.partial, cs.partialSize = nil, 0
	}
	s.dropReservation(cs)
	s.budget.Release(cs.outHeld.Swap(0))
	s.budget.Outside(-cs.inHeld)
	cs.inHeld = 0
	if cs.parked != nil && finishing {
		// The parked job heads this connection's queue: run it, and what
		// is queued behind it, off the pool (serveOne skips all but the
		// requests that complete once received).
		j := cs.parked
		cs.parked = nil
		go s.serve(j)
	}
	if cs.parked != nil {
		// The parked job heads this connection's queue and will never run:
		// release it and everything read behind it.
		s.putJob(cs.parked)
		cs.parked = nil
		dropped++
		cs.mu.Lock()
		q := cs.queue
		cs.queue = nil
		cs.mu.Unlock()
		for _, qj := range q {
			s.putJob(qj)
			dropped++
		}
	}
	if dropped > 0 {
		s.finish(dropped)
	}
	cs.cancel()
	s.nconns.Add(-1)
	s.connsMu.Lock()
	delete(s.conns, cs.id)
	s.connsMu.Unlock()

	if why.reason == CloseUnknown {
		switch {
		case s.stopping.Load() || s.draining.Load():
			why.reason = CloseShutdown
		case err == nil || errors.Is(err, io.EOF):
			why.reason = CloseClientClosed
		default:
			why.reason = CloseIOError
		}
	}
	s.metrics.ConnClosed(why.reason)
	s.logClose(cs, why, err)
	return gnet.None
}

// takeLeftovers runs when the client closed its connection: the complete
// requests still in the connection's input whose API completes once
// received (bridge.API.Completes: produce, commits, admin changes) are
// queued to run, in order, as Kafka runs what it read before a close (an
// acks=0 producer writes and closes at once). Others are dropped unread.
// It reports whether the connection's queued requests should still run;
// not on shutdown, and not after a close the front door decided.
func (s *Server) takeLeftovers(c gnet.Conn, cs *conn, err error) bool {
	cs.mu.Lock()
	decided := cs.why.reason != CloseUnknown
	cs.mu.Unlock()
	if decided || s.stopping.Load() || s.draining.Load() || (err != nil && !errors.Is(err, io.EOF)) {
		return false
	}
	cs.closing = true
	if cs.partial != nil {
		return true // an incomplete frame: nothing complete behind it
	}
	now := time.Now()
	for {
		size, complete, ferr := pendingFrame(c, s.cfg.Limits.MaxFrameBytes)
		if ferr != nil || !complete || size < 2 {
			return true
		}
		hdr, perr := c.Peek(FrameHeaderSize + 2)
		if perr != nil {
			return true
		}
		if !s.d.Completes(int16(binary.BigEndian.Uint16(hdr[FrameHeaderSize:]))) {
			if _, derr := c.Discard(FrameHeaderSize + size); derr != nil {
				return true
			}
			continue
		}
		// Bytes gnet holds already: charged, not waited for.
		held := int64(size)
		s.budget.Charge(held)
		buf := s.getFrame(size)
		if cap(buf.B) < size {
			buf.B = make([]byte, size)
		} else {
			buf.B = buf.B[:size]
		}
		if terr := takeFrame(c, buf.B); terr != nil {
			s.putFrame(buf)
			s.budget.Release(held)
			return true
		}
		if s.accept(cs, buf, held, now) != gnet.None {
			return true
		}
	}
}

// logClose writes the one log line of a closed connection.
func (s *Server) logClose(cs *conn, why closeInfo, err error) {
	var ev *zerolog.Event
	switch {
	case why.reason == CloseInternal:
		ev = s.log.Error()
	case why.reason.isProtocolError() || why.reason == CloseHandlerError || why.reason == CloseTooManyConnections:
		ev = s.log.Warn()
	default:
		ev = s.log.Debug()
	}
	if ev == nil {
		return
	}
	ev = ev.Uint64("conn_id", cs.id).Str("remote", cs.remote).Str("close_reason", why.reason.String())
	if why.hasReq {
		ev = ev.Int16("api_key", why.key).Int16("api_version", why.version).Int32("corr_id", why.corrID)
	}
	if why.limit != 0 {
		ev = ev.Int64("size", why.size).Int64("limit", why.limit)
	}
	switch {
	case why.err != nil:
		ev = ev.Err(why.err)
	case err != nil && !errors.Is(err, io.EOF):
		ev = ev.Err(err)
	}
	ev.Msg("connection closed")
}

// OnTraffic takes every complete request frame off the connection and hands
// it on, until the input is exhausted or the connection must pause.
func (h *handler) OnTraffic(c gnet.Conn) gnet.Action {
	s := (*Server)(h)
	cs, ok := c.Context().(*conn)
	if !ok {
		return gnet.Close
	}
	now := time.Now()
	cs.touch(now)
	s.settleOutbound(c, cs)
	defer s.settleInbound(c, cs)
	if cs.parked != nil {
		if !s.pool.submit(cs.parked, cs) {
			return s.paused(c, cs)
		}
		cs.parked = nil
	}
	if s.draining.Load() {
		return gnet.None // leave new requests unread; Shutdown closes us
	}
	maxFrame := s.cfg.Limits.MaxFrameBytes
	maxOut := s.cfg.Limits.MaxOutboundBytes
	consumed := 0
	defer func() {
		if consumed > 0 {
			s.metrics.BytesIn(consumed)
		}
	}()
	for {
		if maxOut > 0 && c.OutboundBuffered() > maxOut {
			cs.mu.Lock()
			cs.flags.set(flagPausedOutbound)
			cs.mu.Unlock()
			return s.paused(c, cs)
		}
		cs.mu.Lock()
		if cs.inFlight >= s.cfg.Limits.MaxInFlight {
			cs.flags.set(flagPausedInFlight)
			cs.mu.Unlock()
			return s.paused(c, cs)
		}
		cs.mu.Unlock()

		var buf *bytebufferpool.ByteBuffer
		var size int
		if cs.partial != nil {
			// Continue the frame being assembled.
			b, complete, err := fillPartial(c, cs.partial.B, cs.partialSize)
			cs.partial.B = b
			if err != nil {
				cs.fail(closeInfo{reason: CloseInternal, err: err})
				return gnet.Close
			}
			if !complete {
				return gnet.None
			}
			buf, size = cs.partial, cs.partialSize
			cs.partial, cs.partialSize = nil, 0
		} else {
			// The frame's budget comes first: nothing of it is taken off
			// gnet's buffer (or allocated) before it is granted.
			var complete bool
			var err error
			size, complete, err = pendingFrame(c, maxFrame)
			if err != nil {
				return s.refuseFrame(c, cs, err)
			}
			if size == 0 && !complete {
				return gnet.None // no size prefix yet
			}
			switch s.reserveFrame(c, cs, size) {
			case reserveWait:
				return s.paused(c, cs)
			case reserveMore:
				return gnet.None
			}
			if !complete {
				if size > 0 && c.InboundBuffered() > FrameHeaderSize {
					// The body has started to arrive: assemble it as
					// it comes (one copy per piece, out of gnet's read
					// buffer) rather than leave it to gnet's ring.
					if _, err := c.Discard(FrameHeaderSize); err != nil {
						cs.fail(closeInfo{reason: CloseInternal, err: ErrShortFrame})
						return gnet.Close
					}
					cs.partial, cs.partialSize = s.getFrame(size), size
					b, _, err := fillPartial(c, cs.partial.B[:0], size)
					cs.partial.B = b
					if err != nil {
						cs.fail(closeInfo{reason: CloseInternal, err: err})
						return gnet.Close
					}
				}
				return gnet.None
			}
			buf = s.getFrame(size)
			if cap(buf.B) < size {
				buf.B = make([]byte, size)
			} else {
				buf.B = buf.B[:size]
			}
			if err := takeFrame(c, buf.B); err != nil {
				s.putFrame(buf)
				cs.fail(closeInfo{reason: CloseInternal, err: err})
				return gnet.Close
			}
		}
		consumed += FrameHeaderSize + size
		held := cs.held
		cs.held = 0
		if a := s.accept(cs, buf, held, now); a != gnet.None {
			return a
		}
		if cs.parked != nil {
			return s.paused(c, cs)
		}
	}
}

// paused is where OnTraffic ends when it stops consuming input: gnet keeps
// reading the socket into its buffer regardless, so bound that buffer.
func (s *Server) paused(c gnet.Conn, cs *conn) gnet.Action {
	n := c.InboundBuffered()
	if cs.partial != nil {
		n += FrameHeaderSize + len(cs.partial.B) // taken off gnet's buffer already
	}
	if n > s.cfg.Limits.MaxInboundBytes {
		cs.fail(closeInfo{reason: CloseInboundOverflow, size: int64(n), limit: int64(s.cfg.Limits.MaxInboundBytes)})
		return gnet.Close
	}
	return gnet.None
}

// refuseFrame closes the connection over a bad size prefix.
func (s *Server) refuseFrame(c gnet.Conn, cs *conn, err error) gnet.Action {
	if !errors.Is(err, ErrFrameTooLarge) {
		cs.fail(closeInfo{reason: CloseInternal, err: err})
		return gnet.Close
	}
	ci := closeInfo{reason: CloseFrameTooLarge, limit: int64(s.cfg.Limits.MaxFrameBytes)}
	if hdr, perr := c.Peek(FrameHeaderSize); perr == nil {
		ci.size = int64(binary.BigEndian.Uint32(hdr))
	}
	cs.fail(ci)
	return gnet.Close
}

// accept parses the header of one request frame (owned by buf from here on)
// and queues it for a worker, or answers/refuses it on the spot.
// held is the memory budget the frame drew; the job returns it.
func (s *Server) accept(cs *conn, buf *bytebufferpool.ByteBuffer, held int64, now time.Time) gnet.Action {
	frame := buf.B
	key, version, corrID, err := parseHeaderPrefix(frame)
	if err != nil {
		s.dropFrame(buf, held)
		cs.fail(closeInfo{reason: CloseBadHeader, err: err, size: int64(len(frame)), limit: headerPrefixSize})
		return gnet.Close
	}
	minV, maxV, known := s.d.Versions(key)
	if !known || version < minV || version > maxV {
		s.dropFrame(buf, held)
		if known && key == apiVersionsKey {
			s.answerUnsupportedApiVersions(cs, corrID, version, minV, maxV, now)
			return gnet.None
		}
		var detail error = errUnknownKey
		if known {
			detail = fmt.Errorf("version outside served range v%d-v%d", minV, maxV)
		}
		cs.fail(reqClose(CloseUnsupportedAPI, key, version, corrID, detail))
		return gnet.Close
	}
	req := kmsg.RequestForKey(key)
	if req == nil {
		s.dropFrame(buf, held)
		cs.fail(reqClose(CloseUnsupportedAPI, key, version, corrID, errUnknownKey))
		return gnet.Close
	}
	req.SetVersion(version)
	clientID, null, bodyOff, err := parseHeaderRest(frame, req.IsFlexible())
	if err != nil {
		s.dropFrame(buf, held)
		cs.fail(reqClose(CloseBadHeader, key, version, corrID, err))
		return gnet.Close
	}
	// Clients send the same client id on every request: keep one string.
	var cid *string
	if !null {
		if cs.clientID == nil || *cs.clientID != string(clientID) {
			v := string(clientID)
			cs.clientID = &v
		}
		cid = cs.clientID
	}

	j := s.getJob()
	j.cs, j.seq, j.frame, j.bodyOff, j.held = cs, s.admit(cs), buf, bodyOff, held
	j.rq = bridge.Request{
		ConnID: cs.id, Remote: cs.remote, ClientID: cid, CorrID: corrID,
		Key: key, Version: version, Msg: req, Received: now,
	}
	// One request per connection at a time (Kafka's ordering guarantee:
	// pipelined produces must land in the order they were sent); the next
	// one runs on the same worker when this one completes.
	cs.mu.Lock()
	if cs.running {
		cs.queue = append(cs.queue, j)
		cs.mu.Unlock()
		return gnet.None
	}
	cs.running = true
	cs.mu.Unlock()
	if cs.closing {
		// Taken from the input of a closed connection (takeLeftovers):
		// OnTraffic will not run again to resume a parked job.
		go s.serve(j)
		return gnet.None
	}
	if !s.pool.submit(j, cs) {
		cs.parked = j
	}
	return gnet.None
}

// admit gives the next request of cs its sequence number and counts it in
// flight. Event-loop only.
func (s *Server) admit(cs *conn) uint64 {
	seq := cs.nextSeq
	cs.nextSeq++
	cs.mu.Lock()
	cs.inFlight++
	cs.mu.Unlock()
	s.inFlight.Add(1)
	return seq
}

// answerUnsupportedApiVersions sends the KIP-511 reply to an ApiVersions
// request at a version we do not serve, in its turn among the replies.
func (s *Server) answerUnsupportedApiVersions(cs *conn, corrID int32, version, minV, maxV int16, now time.Time) {
	seq := s.admit(cs)
	out := s.outPool.Get()
	b := appendResponseHeader(out.B[:0], corrID, false, apiVersionsKey)
	b = bridge.UnsupportedApiVersionsResponse(minV, maxV).AppendTo(b)
	finishFrame(b, 0)
	out.B = b
	s.log.Debug().Uint64("conn_id", cs.id).Int16("api_key", apiVersionsKey).Int16("api_version", version).
		Int32("corr_id", corrID).Msg("api versions: unsupported version, answering v0 with UNSUPPORTED_VERSION")
	s.metrics.Request(apiVersionsKey, version, time.Since(now), OutcomeUnsupportedVersion)
	cs.complete(seq, reply{buf: out})
}

// serve runs a connection's requests on a worker, one after the other in
// the order they were read, starting with j.
func (s *Server) serve(j *job) {
	for j != nil {
		cs := j.cs
		s.serveOne(j)
		cs.mu.Lock()
		if len(cs.queue) > 0 {
			j = cs.queue[0]
			cs.queue[0] = nil
			cs.queue = cs.queue[1:]
		} else {
			cs.running = false
			j = nil
		}
		cs.mu.Unlock()
	}
}

// serveOne runs one request: decode, dispatch, encode, complete.
func (s *Server) serveOne(j *job) {
	cs, rq := j.cs, &j.rq
	seq := j.seq
	if cs.ctx.Err() != nil && !s.d.Completes(rq.Key) { // connection already gone
		s.putJob(j)
		cs.complete(seq, reply{})
		return
	}
	if err := rq.Msg.ReadFrom(j.frame.B[j.bodyOff:]); err != nil {
		s.metrics.Request(rq.Key, rq.Version, time.Since(rq.Received), OutcomeDecodeError)
		cs.closeWith(reqClose(CloseDecodeError, rq.Key, rq.Version, rq.CorrID, err))
		s.putJob(j)
		cs.complete(seq, reply{})
		return
	}
	resp, err := s.dispatch(cs, rq)
	var out reply
	if err == nil && resp != nil {
		out, err = s.encode(rq, resp)
	}
	if err != nil {
		s.metrics.Request(rq.Key, rq.Version, time.Since(rq.Received), OutcomeHandlerError)
		if cs.ctx.Err() != nil {
			// The connection closed (or the drain deadline passed) under
			// the handler: its failure is a consequence, not the cause.
			s.log.Debug().Uint64("conn_id", cs.id).Int16("api_key", rq.Key).Int16("api_version", rq.Version).
				Int32("corr_id", rq.CorrID).Err(err).Msg("handler ended after its connection closed")
		} else {
			cs.closeWith(reqClose(CloseHandlerError, rq.Key, rq.Version, rq.CorrID, err))
		}
		s.putJob(j)
		cs.complete(seq, reply{})
		return
	}
	outcome := OutcomeOK
	switch {
	case out.buf == nil:
		outcome = OutcomeNoResponse
	case rq.ErrorCodes > 0:
		outcome = OutcomeErrorCode
	}
	latency := time.Since(rq.Received)
	s.metrics.Request(rq.Key, rq.Version, latency, outcome)
	if ev := s.log.Debug(); ev.Enabled() {
		ev = ev.Uint64("conn_id", cs.id).Int16("api_key", rq.Key).Int16("api_version", rq.Version).
			Int32("corr_id", rq.CorrID).Dur("latency", latency).Str("outcome", outcome.String())
		if rq.ErrorCodes > 0 {
			ev = ev.Int16("error_code", rq.FirstErrorCode).Int32("error_codes", rq.ErrorCodes)
		}
		ev.Msg("request served")
	}
	s.putJob(j) // after encoding: the response may alias the request
	cs.complete(seq, out)
}

// dispatch calls the Dispatcher, turning a panic into a handler error.
func (s *Server) dispatch(cs *conn, rq *bridge.Request) (resp kmsg.Response, err error) {
	defer func() {
		if p := recover(); p != nil {
			resp, err = nil, fmt.Errorf("handler panic: %v", p)
		}
	}()
	return s.d.Dispatch(cs.ctx, rq)
}

// encode writes the framed response: size, header, body. A
// bridge.VectoredResponse keeps its large blocks out of the buffer; they
// are spliced in when the reply is written.
func (s *Server) encode(rq *bridge.Request, resp kmsg.Response) (reply, error) {
	vr, vectored := resp.(bridge.VectoredResponse)
	if resp.Key() != rq.Key || resp.GetVersion() != rq.Version && (rq.Key != apiVersionsKey || resp.GetVersion() != 0) {
		if vectored {
			vr.Release()
		}
		if resp.Key() != rq.Key {
			return reply{}, fmt.Errorf("response key %d for request key %d", resp.Key(), rq.Key)
		}
		return reply{}, fmt.Errorf("response version %d for request version %d", resp.GetVersion(), rq.Version)
	}
	out := s.outPool.Get()
	b := appendResponseHeader(out.B[:0], rq.CorrID, rq.Msg.IsFlexible(), rq.Key)
	rep := reply{buf: out}
	if vectored {
		b = vr.AppendVectored(b, maxCuts)
		rep.vr = vr
	} else {
		b = resp.AppendTo(b)
	}
	out.B = b
	extra := 0
	for _, c := range rep.cuts() {
		extra += len(c.Data)
	}
	if !finishFrameSized(b, extra) {
		rep.release(s)
		return reply{}, fmt.Errorf("response of %d bytes exceeds the int32 frame size", len(b)+extra)
	}
	return rep, nil
}

// dropFrame returns a frame that will not be served, and its budget.
func (s *Server) dropFrame(buf *bytebufferpool.ByteBuffer, held int64) {
	s.putFrame(buf)
	s.budget.Release(held)
}

// Outcomes of reserveFrame.
const (
	reserveOK   = iota // the frame's budget is held (cs.held)
	reserveWait        // queued: the budget wakes the connection
	reserveMore        // the api key is not buffered yet: wait for input
)

// produceKey is the API key of Produce, whose frames draw twice their size
// (the frame, and the Iggy messages built from it while it is served).
const produceKey = 0

// reserveFrame makes sure cs holds the budget of the frame of size bytes
// at the head of its input before any of it is taken or allocated. When
// the budget is short it queues the connection, which then takes nothing
// more until the budget wakes it (the event loop never waits). Event-loop
// only.
func (s *Server) reserveFrame(c gnet.Conn, cs *conn, size int) int {
	if s.budget == nil || cs.held > 0 {
		return reserveOK
	}
	if t := cs.ticket; t != nil {
		if !t.Granted() {
			return reserveWait
		}
		cs.held, cs.ticket = t.Bytes(), nil
		return reserveOK
	}
	charge := int64(size)
	if size >= 2 {
		hdr, err := c.Peek(FrameHeaderSize + 2)
		if err != nil || len(hdr) < FrameHeaderSize+2 {
			return reserveMore
		}
		if int16(binary.BigEndian.Uint16(hdr[FrameHeaderSize:])) == produceKey {
			charge *= 2
		}
	}
	charge = max(s.budget.Clamp(charge), 1)
	if t := s.budget.Queue(charge, int64(c.InboundBuffered()), cs.wake); t != nil {
		cs.ticket = t
		return reserveWait
	}
	cs.held = charge
	return reserveOK
}

// dropReservation returns (or withdraws) the budget cs holds or waits for
// for its next frame. Event-loop only (OnClose).
func (s *Server) dropReservation(cs *conn) {
	if cs.ticket != nil {
		if s.budget.Cancel(cs.ticket) {
			s.budget.Release(cs.ticket.Bytes())
		}
		cs.ticket = nil
	}
	s.budget.Release(cs.held)
	cs.held = 0
}

// settleOutbound keeps the budget's account of the reply bytes gnet holds
// for cs (copied into its outbound buffer when the socket did not take
// them at once) equal to what it holds now. Event-loop only.
func (s *Server) settleOutbound(c gnet.Conn, cs *conn) {
	n := int64(c.OutboundBuffered())
	switch prev := cs.outHeld.Swap(n); {
	case n > prev:
		s.budget.Charge(n - prev)
	case n < prev:
		s.budget.Release(prev - n)
	}
}

// settleInbound keeps the budget's Outside account of the request bytes
// gnet holds for cs equal to what it holds now. Event-loop only.
func (s *Server) settleInbound(c gnet.Conn, cs *conn) {
	if s.budget == nil {
		return
	}
	n := int64(c.InboundBuffered())
	if d := n - cs.inHeld; d != 0 {
		s.budget.Outside(d)
		cs.inHeld = n
	}
}

// OnTick closes idle connections and wakes those paused on unsent output.
// It runs on gnet's ticker goroutine, not on an event loop.
func (h *handler) OnTick() (time.Duration, gnet.Action) {
	s := (*Server)(h)
	s.tickMu.Lock()
	defer s.tickMu.Unlock()
	s.connsMu.Lock()
	s.tickBuf = s.tickBuf[:0]
	for _, cs := range s.conns {
		s.tickBuf = append(s.tickBuf, cs)
	}
	s.connsMu.Unlock()
	now := time.Now().UnixNano()
	s.live.observe(s, s.tickBuf, now)
	idle := s.cfg.Limits.IdleTimeout
	for i, cs := range s.tickBuf {
		s.tickBuf[i] = nil
		cs.mu.Lock()
		if cs.flags.isSet(flagClosed) {
			cs.mu.Unlock()
			continue
		}
		if cs.flags.isSet(flagPausedOutbound) || cs.outHeld.Load() > 0 {
			// Resume reading, or let the loop see how much of the
			// unsent output went out (settleOutbound).
			cs.flags.clear(flagPausedOutbound)
			_ = cs.gc.Wake(nil)
		}
		expired := idle > 0 && cs.inFlight == 0 && now-cs.lastActive.Load() > int64(idle)
		cs.mu.Unlock()
		if expired {
			cs.closeWith(closeInfo{reason: CloseIdleTimeout})
		}
	}
	return s.tickEvery, gnet.None
}
