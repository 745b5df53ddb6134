package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestPlaceholderPeerSecretRefused: a sidecar started with the placeholder
// the manifests used to ship, or with a short secret in peers.secret_file,
// exits at once naming the key.
func TestPlaceholderPeerSecretRefused(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	short := filepath.Join(t.TempDir(), "peer-secret")
	if err := os.WriteFile(short, []byte("sixteen-bytes-ok\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for setting, key := range map[string]string{
		"KAFKA_IGGY_PEERS__SECRET=change-me-to-32-random-bytes": "peers.secret:",
		"KAFKA_IGGY_PEERS__SECRET_FILE=" + short:                "peers.secret_file:",
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, exe, "-test.run=^$")
		cmd.Env = append(childEnv(), "KIGGY_TEST_RUN_MAIN=1", "KIGGY_TEST_MAIN_ARGS=serve",
			"KAFKA_IGGY_LISTENER__ADDRESS=127.0.0.1:0", "KAFKA_IGGY_ADMIN__ADDRESS=127.0.0.1:0",
			"KAFKA_IGGY_EMBEDDED__LISTEN=127.0.0.1:0", "KAFKA_IGGY_PEERS__ADDRESS=127.0.0.1:0", setting)
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if ctx.Err() != nil {
			t.Fatalf("%s: still running after 30s, want an exit at start\n%s", setting, out)
		}
		if !errors.As(err, &ee) || ee.ExitCode() == 0 {
			t.Fatalf("%s: exit %v, want a failure\n%s", setting, err, out)
		}
		if !strings.Contains(string(out), key) {
			t.Errorf("%s: output does not name %s:\n%s", setting, key, out)
		}
	}
}
