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
	// Pprof serves Go's profiler under /debug/pprof/ on the admin listener
	// (CPU and heap profiles for tuning). Default false.
	Pprof bool `koanf:"pprof"`
}

// DefaultConfig returns the documented defaults.
func DefaultConfig() Config {
	return Config{
		Enabled:           true,
		Address:           DefaultAddress,
		ReadHeaderTimeout: DefaultReadHeaderTimeout,
		StallTimeout:      DefaultStallTimeout,
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
	if _, port, err := net.SplitHostPort(c.Address); err != nil {
		bad("address", "%q is not host:port: %v", c.Address, err)
	} else if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		bad("address", "port %q is not 0-65535", port)
	}
	if c.ReadHeaderTimeout <= 0 {
		bad("read_header_timeout", "%v is not positive", c.ReadHeaderTimeout)
	}
	if c.StallTimeout <= 0 {
		bad("stall_timeout", "%v is not positive", c.StallTimeout)
	}
	return errors.Join(errs...)
}
