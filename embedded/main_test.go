package embedded

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestRunMain(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var stderr bytes.Buffer
	started := make(chan *Server, 1)
	done := make(chan int, 1)
	go func() {
		done <- runMain(ctx, []string{"--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--root-user", "admin", "--root-password", "pw123"},
			testLogger(t), &stderr, func(s *Server) { started <- s })
	}()
	s := <-started
	c := dial(t, s)
	c.login("admin", "pw123")
	c.createStream("s")
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("exit code %d: %s", code, stderr.String())
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--nope"}, "unknown flag"},
		{[]string{"extra"}, "unexpected arguments"},
		{[]string{"--root-user", "ab"}, "embedded.root_username"},
		{[]string{"--listen", "nohostport"}, "embedded.listen"},
		{[]string{"--pprof-addr", "0.0.0.0:6060"}, "embedded.pprof_addr"},
	} {
		stderr.Reset()
		if code := runMain(context.Background(), tc.args, testLogger(t), &stderr, nil); code != 2 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q", tc.args, code, stderr.String())
		}
	}
}

func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	bad := Config{Listen: "x", Protocol: "0.13", MaxFrameBytes: 1, ReplyCacheSize: 0}
	err := bad.Validate()
	for _, key := range []string{"listen", "root_username", "root_password", "protocol", "server_version", "max_frame_bytes",
		"heartbeat_interval", "rebalance_timeout", "retention_interval", "reply_cache_size"} {
		if err == nil || !strings.Contains(err.Error(), "embedded."+key+":") {
			t.Errorf("no error naming %s in %v", key, err)
		}
	}
}
