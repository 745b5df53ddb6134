package embedded

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// startPprof serves net/http/pprof on Config.PprofAddr (nothing when it is
// empty). The listener is closed by Close.
func (s *Server) startPprof(ctx context.Context) error {
	if s.cfg.PprofAddr == "" {
		return nil
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", s.cfg.PprofAddr)
	if err != nil {
		return fmt.Errorf("embedded: pprof_addr %s: %w", s.cfg.PprofAddr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	s.pprofLn = ln
	s.pprofSrv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	srv := s.pprofSrv
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error().Err(err).Msg("pprof listener failed")
		}
	}()
	s.log.Info().Str("pprof_addr", ln.Addr().String()).Msg("profiler served under /debug/pprof/")
	return nil
}

// PprofAddr returns the address the profiler listens on (useful with port
// 0), or nil without Config.PprofAddr or before Start.
func (s *Server) PprofAddr() net.Addr {
	if s.pprofLn == nil {
		return nil
	}
	return s.pprofLn.Addr()
}

// stopPprof closes the profiler's listener and its connections (a CPU
// profile being taken ends without its data).
func (s *Server) stopPprof() {
	if s.pprofSrv != nil {
		_ = s.pprofSrv.Close()
	}
}
