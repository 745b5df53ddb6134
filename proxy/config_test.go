package proxy

import (
	"errors"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestDefaultConfigIsValid(t *testing.T) {
	cfg := DefaultConfig()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if cfg.Listener.Address != "127.0.0.1:9092" || cfg.Limits.MaxFrameBytes != 104857600 ||
		cfg.Limits.MaxInFlight != 5 || cfg.Limits.IdleTimeout != 10*time.Minute ||
		cfg.Limits.DrainTimeout != 30*time.Second || !cfg.Gnet.Multicore || !cfg.Gnet.TCPNoDelay ||
		cfg.Gnet.LoadBalancing != LBRoundRobin {
		t.Fatalf("defaults drifted from the documentation: %+v", cfg)
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	cfg := Config{
		Listener: ListenerConfig{Address: "0.0.0.0:0", AdvertisedPort: 70000},
		Limits: LimitsConfig{
			MaxFrameBytes: 5, MaxConnections: -1, MaxInFlight: 0, MaxInboundBytes: 1,
			MaxOutboundBytes: -1, IdleTimeout: -time.Second, DrainTimeout: 0,
		},
		Gnet: GnetConfig{
			NumEventLoop: -1, TCPKeepAlive: -1, ReadBufferCap: -1, WriteBufferCap: -1,
			SocketRecvBuffer: -1, SocketSendBuffer: -1, ReusePort: true,
			LoadBalancing: "random", WorkerPoolSize: 0, WorkerQueueSize: 0,
		},
	}
	err := cfg.Validate()
	if err == nil {
		t.Fatal("invalid config accepted")
	}
	msg := err.Error()
	for _, key := range []string{
		"listener.advertised_host", "listener.advertised_port", "gnet.reuse_port",
		"limits.max_frame_bytes", "limits.max_connections", "limits.max_in_flight",
		"limits.max_inbound_bytes", "limits.max_outbound_bytes", "limits.idle_timeout",
		"limits.drain_timeout", "gnet.num_event_loop", "gnet.tcp_keep_alive",
		"gnet.read_buffer_cap", "gnet.write_buffer_cap", "gnet.socket_recv_buffer",
		"gnet.socket_send_buffer", "gnet.load_balancing", "gnet.worker_pool_size",
		"gnet.worker_queue_size",
	} {
		if !strings.Contains(msg, key+":") {
			t.Errorf("no problem reported for %s", key)
		}
	}
	var joined interface{ Unwrap() []error }
	if !errors.As(err, &joined) || len(joined.Unwrap()) != 19 {
		t.Errorf("want 19 joined problems, got:\n%v", err)
	}

	bad := DefaultConfig()
	bad.Listener.Address = "localhost"
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "listener.address:") {
		t.Errorf("address without port: %v", err)
	}
}

// Every config field carries a snake_case koanf tag (the key Validate and
// the docs use).
func TestConfigKoanfTags(t *testing.T) {
	snake := regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	var walk func(t reflect.Type, path string)
	walk = func(typ reflect.Type, path string) {
		for i := 0; i < typ.NumField(); i++ {
			f := typ.Field(i)
			tag := f.Tag.Get("koanf")
			if !snake.MatchString(tag) {
				t.Errorf("%s%s: koanf tag %q", path, f.Name, tag)
			}
			if f.Type.Kind() == reflect.Struct && f.Type != reflect.TypeOf(time.Duration(0)) {
				walk(f.Type, path+tag+".")
			}
		}
	}
	walk(reflect.TypeOf(Config{}), "")
}

// TestMemoryBudgetConfig: limits.memory_bytes 0 is derived (cgroup limit
// or the fixed default), a default max_frame_bytes is lowered to a smaller
// budget, and an explicit frame limit above the budget fails naming the key.
func TestMemoryBudgetConfig(t *testing.T) {
	cfg := DefaultConfig()
	res, source := cfg.Resolved()
	if lim, ok := CgroupMemoryLimit(); ok {
		if source != "cgroup" || res.Limits.MemoryBytes != BudgetForLimit(lim) {
			t.Fatalf("cgroup limit %d: budget %d from %s", lim, res.Limits.MemoryBytes, source)
		}
	} else if source != "default" || res.Limits.MemoryBytes != DefaultMemoryBytes {
		t.Fatalf("no cgroup limit: budget %d from %s", res.Limits.MemoryBytes, source)
	}

	cfg.Limits.MemoryBytes = 64 << 20
	if err := cfg.Validate(); err != nil {
		t.Fatalf("a 64 MiB budget with the default frame limit (lowered when resolved): %v", err)
	}
	res, source = cfg.Resolved()
	if source != "config" || res.Limits.MaxFrameBytes != 64<<20 || res.Validate() != nil {
		t.Fatalf("default frame limit under a 64 MiB budget: %d (%v)", res.Limits.MaxFrameBytes, res.Validate())
	}
	cfg.Limits.MaxFrameBytes = 65 << 20
	res, _ = cfg.Resolved()
	if err := res.Validate(); err == nil || !strings.Contains(err.Error(), "limits.max_frame_bytes") {
		t.Fatalf("explicit frame limit above the budget: %v", err)
	}
	cfg.Limits.MemoryBytes = 1 << 20
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "limits.memory_bytes") {
		t.Fatalf("budget below the minimum: %v", err)
	}
}

func TestBudgetForLimit(t *testing.T) {
	for limit, want := range map[int64]int64{256 << 20: 192 << 20, 128 << 20: 64 << 20, 64 << 20: 32 << 20, 1 << 30: 768 << 20, 4 << 20: 4 << 20} {
		if got := BudgetForLimit(limit); got != want {
			t.Errorf("BudgetForLimit(%d MiB) = %d MiB, want %d MiB", limit>>20, got>>20, want>>20)
		}
	}
}

func TestReadMemoryLimit(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		text string
		want int64
		ok   bool
	}{{"268435456\n", 268435456, true}, {"max\n", 0, false}, {"9223372036854771712\n", 0, false}} {
		p := dir + "/memory.max"
		if err := os.WriteFile(p, []byte(c.text), 0o600); err != nil {
			t.Fatal(err)
		}
		if n, ok := readMemoryLimit(p); n != c.want || ok != c.ok {
			t.Errorf("%q: %d %v", c.text, n, ok)
		}
	}
}
