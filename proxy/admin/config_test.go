package admin

import (
	"strings"
	"testing"
)

// The profiler has no authentication: admin.pprof is refused unless the
// admin listener binds loopback.
func TestPprofOnlyOnLoopback(t *testing.T) {
	for addr, ok := range map[string]bool{
		"0.0.0.0:9094":   false,
		":9094":          false,
		"10.1.2.3:9094":  false,
		"[::]:9094":      false,
		"127.0.0.1:9094": true,
		"[::1]:9094":     true,
		"localhost:9094": true,
	} {
		cfg := DefaultConfig()
		cfg.Address, cfg.Pprof = addr, true
		err := cfg.Validate()
		if ok && err != nil {
			t.Errorf("%s: %v", addr, err)
		}
		if !ok && (err == nil || !strings.Contains(err.Error(), "admin.pprof: ")) {
			t.Errorf("%s: Validate = %v, want admin.pprof refused", addr, err)
		}
		cfg.Pprof = false
		if err := cfg.Validate(); err != nil {
			t.Errorf("%s without pprof: %v", addr, err)
		}
	}
}
