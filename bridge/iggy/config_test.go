package iggy

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(*Config)
		wants []string // substrings of the joined error, one per expected problem
	}{
		{"defaults", func(*Config) {}, nil},
		{"address set", func(c *Config) { c.Address = "iggy:8090" }, nil},
		{"pat instead of password", func(c *Config) { c.Username, c.Password, c.PersonalAccessToken = "", "", "tok" }, nil},
		{"bad address", func(c *Config) { c.Address = "nohost" }, []string{"iggy.address"}},
		{"bad port", func(c *Config) { c.Address = "h:0" }, []string{"iggy.address"}},
		{"short credentials", func(c *Config) { c.Username, c.Password = "ab", "x" }, []string{"iggy.username", "iggy.password"}},
		{"pool", func(c *Config) { c.PoolSize = 0 }, []string{"iggy.pool_size"}},
		{"pool too big", func(c *Config) { c.PoolSize = 1000 }, []string{"iggy.pool_size"}},
		{"timeouts", func(c *Config) { c.RequestTimeout, c.ConnectTimeout = 0, -1 }, []string{"iggy.request_timeout", "iggy.connect_timeout"}},
		{"backoff", func(c *Config) { c.BackoffMin, c.BackoffMax = time.Second, time.Millisecond }, []string{"iggy.backoff_max"}},
		{"backoff min", func(c *Config) { c.BackoffMin = 0 }, []string{"iggy.backoff_min"}},
		{"keepalive", func(c *Config) { c.KeepaliveInterval = -time.Second }, []string{"iggy.keepalive_interval"}},
		{"batch limits", func(c *Config) { c.MaxBatchBytes, c.MaxBatchMessages = 10, 0 }, []string{"iggy.max_batch_bytes", "iggy.max_batch_messages"}},
		{"batch bytes above frame", func(c *Config) { c.MaxBatchBytes = 64 << 20 }, []string{"iggy.max_batch_bytes"}},
		{"ttl", func(c *Config) { c.MetadataTTL = -1 }, []string{"iggy.metadata_ttl"}},
		{"ca without tls", func(c *Config) { c.TLS.CAFile = "/x.pem" }, []string{"iggy.tls.ca_file"}},
		{"everything at once", func(c *Config) {
			c.PoolSize, c.RequestTimeout, c.MaxBatchMessages = -1, 0, -5
		}, []string{"iggy.pool_size", "iggy.request_timeout", "iggy.max_batch_messages"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultConfig()
			tt.edit(&c)
			err := c.Validate()
			if len(tt.wants) == 0 {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want %v", tt.wants)
			}
			lines := strings.Split(err.Error(), "\n")
			if len(lines) != len(tt.wants) {
				t.Errorf("got %d problems, want %d: %v", len(lines), len(tt.wants), err)
			}
			for _, w := range tt.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %s", err, w)
				}
			}
		})
	}
}

func TestNewRequiresAddress(t *testing.T) {
	if _, err := New(DefaultConfig(), zerolog.New(io.Discard)); err == nil || !strings.Contains(err.Error(), "iggy.address") {
		t.Fatalf("New without address: %v", err)
	}
	cfg := DefaultConfig()
	cfg.Address = "127.0.0.1:1"
	cfg.TLS.Enabled = true
	cfg.TLS.CAFile = "/does/not/exist.pem"
	if _, err := New(cfg, zerolog.New(io.Discard)); err == nil || !strings.Contains(err.Error(), "iggy.tls.ca_file") {
		t.Fatalf("New with a missing CA file: %v", err)
	}
}

func TestBackoffBounds(t *testing.T) {
	tests := []struct {
		attempt int
		lo, hi  time.Duration
	}{
		{0, 50 * time.Millisecond, 100 * time.Millisecond},
		{1, 100 * time.Millisecond, 200 * time.Millisecond},
		{3, 400 * time.Millisecond, 800 * time.Millisecond},
		{10, 2500 * time.Millisecond, 5 * time.Second},
		{1000, 2500 * time.Millisecond, 5 * time.Second},
	}
	for _, tt := range tests {
		for range 200 {
			d := backoff(100*time.Millisecond, 5*time.Second, tt.attempt)
			if d < tt.lo || d > tt.hi {
				t.Fatalf("attempt %d: %v outside [%v, %v]", tt.attempt, d, tt.lo, tt.hi)
			}
		}
	}
}
