package admin

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"
)

// Server is the admin HTTP listener. Create it with New, bind it with
// Start, stop it with Shutdown. Its methods are safe for concurrent use.
type Server struct {
	cfg     Config
	handler http.Handler
	log     zerolog.Logger

	mu   sync.Mutex
	ln   net.Listener
	srv  *http.Server
	done chan struct{}
}

// New builds the admin server for cfg, serving m's registry and r's
// readiness. Nothing listens until Start. log is used as given: the caller
// names the component, as for every other component's logger (adding it
// here too wrote "component" twice into each JSON line).
func New(cfg Config, m *Metrics, r *Readiness, log zerolog.Logger) *Server {
	s := &Server{cfg: cfg, log: log}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.Registry(), promhttp.HandlerOpts{
		Registry:          m.Registry(), // promhttp's own error counters
		ErrorHandling:     promhttp.ContinueOnError,
		ErrorLog:          promLogger{s.log},
		EnableOpenMetrics: false,
	}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		ok, failing := r.Alive()
		probeAnswer(w, ok, "not alive: ", failing)
		if !ok {
			s.log.Warn().Strs("stalled", failing).Msg("liveness probe failed")
		}
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		ok, failing := r.Ready()
		probeAnswer(w, ok, "not ready: ", failing)
	})
	if cfg.Pprof {
		mux.HandleFunc("GET /debug/pprof/", pprof.Index)
		mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	}
	s.handler = mux
	return s
}

// Handler is the admin HTTP handler (for tests and for mounting elsewhere).
func (s *Server) Handler() http.Handler { return s.handler }

// Start binds the listener and serves in the background. It returns the
// bind error, if any. With admin.enabled false it does nothing.
func (s *Server) Start(ctx context.Context) error {
	if !s.cfg.Enabled {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv != nil {
		return errors.New("admin: server already started")
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", s.cfg.Address)
	if err != nil {
		return fmt.Errorf("admin.address: %w", err)
	}
	s.ln = ln
	s.srv = &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: s.cfg.ReadHeaderTimeout,
		ErrorLog:          nil,
	}
	s.done = make(chan struct{})
	srv, done := s.srv, s.done
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error().Err(err).Msg("admin listener failed")
		}
	}()
	s.log.Info().Str("address", ln.Addr().String()).Msg("admin listener up")
	return nil
}

// Addr is the bound address (nil before Start or when disabled).
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return nil
	}
	return s.ln.Addr()
}

// Shutdown stops the listener, lets requests being served finish until ctx
// is done, and waits for the serving goroutine.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	srv, done := s.srv, s.done
	s.mu.Unlock()
	if srv == nil {
		return nil
	}
	err := srv.Shutdown(ctx)
	if err != nil {
		_ = srv.Close()
	}
	<-done
	return err
}

// probeAnswer writes a probe's answer: 200 "ok", or 503 with one
// "<prefix><what>" line per failing condition.
func probeAnswer(w http.ResponseWriter, ok bool, prefix string, failing []string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if ok {
		_, _ = w.Write([]byte("ok\n"))
		return
	}
	w.WriteHeader(http.StatusServiceUnavailable)
	var b strings.Builder
	for _, f := range failing {
		b.WriteString(prefix)
		b.WriteString(f)
		b.WriteByte('\n')
	}
	_, _ = w.Write([]byte(b.String()))
}

// promLogger routes promhttp's error log to zerolog.
type promLogger struct{ log zerolog.Logger }

// Println logs a metrics gathering or encoding error.
func (l promLogger) Println(v ...any) {
	l.log.Error().Msg(strings.TrimSpace(fmt.Sprintln(v...)))
}
