package embedded

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/kafka-iggy/kafka-iggy/codec/iggy"
	"github.com/kafka-iggy/kafka-iggy/codec/wire"
)

// Server is an embedded Iggy-protocol server. Create it with New, start it
// with Start and stop it with Close. Its methods are safe for concurrent use.
type Server struct {
	cfg   Config
	log   zerolog.Logger
	proto iggy.ProtocolVersion
	now   func() time.Time // clock; tests may replace it before Start

	cluster atomic.Pointer[ClusterView] // SetCluster; nil: a one-node cluster

	handlers    map[handlerKey]*handler     // by command code
	byOperation map[iggy.Operation]*handler // replicated and session operations

	ln        net.Listener
	pprofLn   net.Listener // Config.PprofAddr's listener, or nil
	pprofSrv  *http.Server
	started   atomic.Bool
	closed    atomic.Bool
	closeOnce sync.Once
	closeErr  error
	done      chan struct{} // closed by Close
	wg        sync.WaitGroup
	startTime time.Time

	connSeq   atomic.Uint32
	liveConns atomic.Int64
	readBytes atomic.Uint64 // bytes served by polls
	wrBytes   atomic.Uint64 // bytes appended by sends
	cpu       cpuSampler
	mem       *memRelease

	// mu guards everything below (see the package documentation for the
	// lock order).
	mu           sync.Mutex
	conns        map[uint32]*conn
	sessions     map[wire.U128]*session // the current session of each client id
	commit       uint64                 // log position: bumped by logins and committed metadata operations
	streams      map[uint32]*stream
	streamByName map[string]uint32
	users        map[uint32]*user
	userByName   map[string]uint32
	nextPartKey  uint64 // directory key of the last partition created
}

// New validates cfg and returns a server that is not yet listening.
func New(cfg Config, log zerolog.Logger) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	proto, _ := protocolOf(cfg.Protocol)
	if proto.ExternalGroupOffsets() {
		cfg.ExternalGroups = true // kind 3 is part of the 0.12 wire
	}
	if cfg.ServerVersion == DefaultServerVersion && proto.Generation() >= iggy.Protocol012 {
		cfg.ServerVersion = DefaultServerVersion012
	}
	s := &Server{
		cfg:          cfg,
		log:          log.With().Str("component", "embedded_iggy").Logger(),
		proto:        proto,
		now:          time.Now,
		mem:          newMemRelease(),
		done:         make(chan struct{}),
		conns:        make(map[uint32]*conn),
		sessions:     make(map[wire.U128]*session),
		streams:      make(map[uint32]*stream),
		streamByName: make(map[string]uint32),
		users:        make(map[uint32]*user),
		userByName:   make(map[string]uint32),
	}
	s.handlers = s.handlerTable()
	s.byOperation = operationTable(s.handlers)
	return s, nil
}

// Start loads the stored state (with a data directory), starts listening
// and returns once the listener is bound; connections are served in the
// background until Close, or until ctx is cancelled.
func (s *Server) Start(ctx context.Context) error {
	if !s.started.CompareAndSwap(false, true) {
		return errors.New("embedded: server already started")
	}
	s.startTime = s.now()
	if err := s.load(); err != nil {
		return err
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", s.cfg.Listen)
	if err != nil {
		s.closeLogs()
		return fmt.Errorf("embedded: listen on %s: %w", s.cfg.Listen, err)
	}
	if t := s.cfg.TLS; t.Enabled {
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			_ = ln.Close()
			s.closeLogs()
			return fmt.Errorf("embedded.tls.cert_file: %w", err)
		}
		ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	}
	s.ln = ln
	if err := s.startPprof(ctx); err != nil {
		_ = ln.Close()
		s.closeLogs()
		return err
	}
	s.log.Info().Str("listen", ln.Addr().String()).Str("data_dir", s.cfg.DataDir).
		Str("protocol", s.proto.String()).Bool("tls", s.cfg.TLS.Enabled).Msg("embedded Iggy server listening")
	s.wg.Add(3)
	go s.acceptLoop()
	go s.background()
	go func() {
		defer s.wg.Done()
		s.mem.loop(s.done)
	}()
	go func() {
		select {
		case <-ctx.Done():
			_ = s.Close()
		case <-s.done:
		}
	}()
	return nil
}

// Addr returns the address the server listens on (useful with port 0), or
// nil before Start.
func (s *Server) Addr() net.Addr {
	if s.ln == nil {
		return nil
	}
	return s.ln.Addr()
}

// ConnCount returns the number of open client TCP connections.
func (s *Server) ConnCount() int { return int(s.liveConns.Load()) }

// Close stops listening, closes every connection, waits for their
// goroutines and closes the partition logs. It is safe to call more than
// once; later calls return the first call's result.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		close(s.done)
		s.stopPprof()
		var errs []error
		if s.ln != nil {
			if err := s.ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
				errs = append(errs, err)
			}
		}
		s.mu.Lock()
		for _, c := range s.conns {
			_ = c.nc.Close()
		}
		s.mu.Unlock()
		s.wg.Wait()
		errs = append(errs, s.closeLogs())
		s.closeErr = errors.Join(errs...)
		s.log.Info().Msg("embedded Iggy server stopped")
	})
	return s.closeErr
}

// closeLogs syncs and closes every partition log.
func (s *Server) closeLogs() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for _, st := range s.streams {
		for _, t := range st.topics {
			for _, p := range t.partitions {
				errs = append(errs, p.log.Close())
			}
		}
	}
	return errors.Join(errs...)
}

func (s *Server) acceptLoop() {
	defer s.wg.Done()
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			if s.closed.Load() {
				return
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			s.log.Error().Err(err).Msg("accept failed; listener stopped")
			return
		}
		if tc, ok := nc.(*net.TCPConn); ok {
			_ = tc.SetNoDelay(true)
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.serveConn(nc)
		}()
	}
}

// background runs the periodic jobs: stale-client eviction, pending
// revocation timeouts and segment retention.
func (s *Server) background() {
	defer s.wg.Done()
	sweep := max(s.cfg.HeartbeatInterval/4, 10*time.Millisecond)
	sweep = min(sweep, time.Second)
	st := time.NewTicker(sweep)
	defer st.Stop()
	rt := time.NewTicker(s.cfg.RetentionInterval)
	defer rt.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-st.C:
			s.sweepStale()
		case <-rt.C:
			s.applyRetention()
		}
	}
}

// nowMicros is the clock in µs since the Unix epoch.
func (s *Server) nowMicros() uint64 { return uint64(s.now().UnixMicro()) }

// pid is the process id reported by GET_STATS.
var pid = uint32(os.Getpid())
