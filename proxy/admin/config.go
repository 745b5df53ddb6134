package admin

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"
)

// Defaults of Config, one documented constant each (DefaultConfig uses them).
const (
	// DefaultAddress is where the admin listener binds: every interface,
	// because the kubelet's probes and Prometheus reach a pod on its pod IP.
	// Port 9094 sits next to the Kafka port (9092).
	DefaultAddress = "0.0.0.0:9094"
	// DefaultReadHeaderTimeout bounds how long a client may take to send a
	// request's headers (5s), so idle half-open connections cannot pile up.
	DefaultReadHeaderTimeout = 5 * time.Second
	// DefaultStallTimeout is how long a part of the front door may make no
	// progress before /healthz fails (20s): two liveness probe periods of
	// the shipped manifests, far above any pause a busy but healthy sidecar
	// shows, so only a wedged one is restarted.
	DefaultStallTimeout = 20 * time.Second
	// DefaultMaxConnections caps the admin listener's open connections
	// (64: probes and scrapers need a few; more wait in the accept queue).
	DefaultMaxConnections = 64
	// DefaultIdleTimeout closes an admin connection idle that long between
	// requests: 10 minutes, Kafka's connections.max.idle.ms.
	DefaultIdleTimeout = 10 * time.Minute
)

// Config configures the admin listener. Keys are given relative to the
// admin section of the sidecar's configuration (admin.address, ...).
type Config struct {
	// Enabled starts the admin listener. Without it there are no probes
	// and no metrics endpoint. Default true.
	Enabled bool `koanf:"enabled"`
	// Address is the TCP host:port of the admin listener; port 0 picks a
	// free port (tests). Default "0.0.0.0:9094".
	Address string `koanf:"address"`
	// ReadHeaderTimeout bounds how long one HTTP request may take to send
	// its headers. Default 5s.
	ReadHeaderTimeout time.Duration `koanf:"read_header_timeout"`
	// StallTimeout is how long the event loops, their ticker or the worker
	// pool (requests waiting with no worker taking one) may make no progress
	// before /healthz answers 503 and the liveness probe restarts the
	// sidecar. Default 20s.
	StallTimeout time.Duration `koanf:"stall_timeout"`
	// MaxConnections caps the connections open at once; a connection past
	// it waits in the accept queue until one closes. Default 64.
	MaxConnections int `koanf:"max_connections"`
	// IdleTimeout closes a connection idle that long between requests
	// (keep-alive). Default 10m (Kafka's connections.max.idle.ms).
	IdleTimeout time.Duration `koanf:"idle_timeout"`
	// Pprof serves Go's profiler under /debug/pprof/ on the admin listener
	// (CPU and heap profiles for tuning). It has no authentication, so it
	// is refused unless address binds loopback (127.0.0.1, ::1 or
	// localhost). Default false.
	Pprof bool `koanf:"pprof"`
}

// DefaultConfig returns the documented defaults.
func DefaultConfig() Config {
	return Config{
		Enabled:           true,
		Address:           DefaultAddress,
		ReadHeaderTimeout: DefaultReadHeaderTimeout,
		StallTimeout:      DefaultStallTimeout,
		MaxConnections:    DefaultMaxConnections,
		IdleTimeout:       DefaultIdleTimeout,
	}
}

// Validate returns every problem at once (errors.Join), each naming its key
// under admin. A disabled listener is not checked further.
func (c Config) Validate() error {
	if !c.Enabled {
		return nil
	}
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("admin.%s: %s", key, fmt.Sprintf(format, args...)))
	}
	if host, port, err := net.SplitHostPort(c.Address); err != nil {
		bad("address", "%q is not host:port: %v", c.Address, err)
	} else if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		bad("address", "port %q is not 0-65535", port)
	} else if c.Pprof && !loopback(host) {
		bad("pprof", "the profiler has no authentication and admin.address %q is not loopback; bind admin.address to 127.0.0.1 to profile (kubectl port-forward reaches it)", c.Address)
	}
	if c.ReadHeaderTimeout <= 0 {
		bad("read_header_timeout", "%v is not positive", c.ReadHeaderTimeout)
	}
	if c.StallTimeout <= 0 {
		bad("stall_timeout", "%v is not positive", c.StallTimeout)
	}
	if c.MaxConnections <= 0 {
		bad("max_connections", "%d is not positive", c.MaxConnections)
	}
	if c.IdleTimeout <= 0 {
		bad("idle_timeout", "%v is not positive", c.IdleTimeout)
	}
	return errors.Join(errs...)
}

// loopback reports whether host names only the loopback interface.
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
