package proxy

import (
	"context"
	"errors"
	"fmt"
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

	"github.com/kafka-iggy/kafka-iggy/auth"
	"github.com/kafka-iggy/kafka-iggy/bridge"
	"github.com/kafka-iggy/kafka-iggy/budget"
)

// Dispatcher is what the front door needs from the bridge: the served
// version range of each API key (checked before a body is decoded), the
// per-API facts of its table row and the dispatch itself. *bridge.Table
// satisfies it. See bridge.HandlerFunc for the meaning of Dispatch's
// results.
type Dispatcher interface {
	Versions(key int16) (minVersion, maxVersion int16, ok bool)
	// Dispatch serves rq. A non-nil response has the request's key and
	// version (ApiVersions: or v0); the front door encodes it as is.
	Dispatch(ctx context.Context, rq *bridge.Request) (kmsg.Response, error)
	// Completes reports whether a received request of key runs even when
	// its connection closed before it started (bridge.API.Completes).
	Completes(key int16) bool
	// FrameCharge reports how many times its frame's size a request of
	// key draws from the memory budget, at least 1
	// (bridge.API.FrameCharge).
	FrameCharge(key int16) int64
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

// WithAuth makes clients authenticate (SASL, checked by a) before anything but
// ApiVersions is served (see package auth). Default: no authentication.
func WithAuth(a *auth.Authenticator) Option { return func(s *Server) { s.auth = a } }

// FrontInfo is what a TLS front (package proxy/tlsfront) tells the server
// of a connection it forwards: the client's address and the principal of
// its client certificate.
type FrontInfo struct {
	Remote    string
	Principal string
}

// WithFront says every connection comes through a TLS front that knows
// it by the address it dials from: lookup gives the client's real address
// (logged, SASL's metric label) and TLS principal; a connection lookup
// does not know did not come through the front and is closed at open
// (close_reason authentication). Default: none (a plaintext listener).
func WithFront(lookup func(remote string) (FrontInfo, bool)) Option {
	return func(s *Server) { s.front = lookup }
}

// WithCertUsers binds the requests of a front's connections without SASL
// to the Iggy user their certificate principal maps to in u (see
// auth.CertUsers, auth.Bind). Default: they run as the sidecar's Iggy user.
func WithCertUsers(u *auth.CertUsers) Option { return func(s *Server) { s.certUsers = u } }

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
	budget  *budget.Budget                        // limits.memory_bytes: frames, produce copies, unsent replies
	auth    *auth.Authenticator                   // nil: no SASL
	front   func(remote string) (FrontInfo, bool) // nil: no TLS front
	// certUsers maps certificate principals to Iggy users (nil: none).
	certUsers *auth.CertUsers
	// newRequest makes the empty request a frame decodes into
	// (kmsg.RequestForKey; tests inject faults through it).
	newRequest func(key int16) kmsg.Request

	inPool    bytebufferpool.Pool // request frames
	bigPool   bytebufferpool.Pool // request frames of bigFrame bytes or more
	outPool   bytebufferpool.Pool // encoded replies
	jobPool   sync.Pool           // *job
	batchPool sync.Pool           // *writeBatch
	pool      *workerPool

	baseCtx    context.Context // parent of every connection's context
	baseCancel context.CancelFunc

	started  atomic.Bool
	stopping atomic.Bool
	draining atomic.Bool
	inFlight atomic.Int64 // requests taken off sockets, reply not yet written
	drained  chan struct{}
	// drainPending counts connections woken for their drain pass that
	// have not run it; drainPassedCh is signalled when it reaches 0.
	drainPending  atomic.Int64
	drainPassedCh chan struct{}
	nconns        atomic.Int64
	nextID        atomic.Uint64
	tickEvery     time.Duration

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
		cfg:           cfg,
		d:             d,
		log:           log.With().Str("component", "proxy").Logger(),
		gnetLog:       newGnetLogger(log),
		metrics:       NopMetrics{},
		newRequest:    kmsg.RequestForKey,
		drained:       make(chan struct{}, 1),
		drainPassedCh: make(chan struct{}, 1),
		conns:         make(map[uint64]*conn),
		booted:        make(chan struct{}),
		runDone:       make(chan struct{}),
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
	// Every connection takes what it read that completes once received
	// (acks=0 produce included) before the wait for in-flight requests.
	s.drainConns(ctx)

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
