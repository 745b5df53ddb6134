package embedded

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// conformanceBinary finds the official-SDK conformance driver built by
// scripts/conformance/run.sh (CONFORMANCE_BUILD_ONLY=1), or "".
func conformanceBinary() string {
	if p := os.Getenv("IGGY_CONFORMANCE_BIN"); p != "" {
		return p
	}
	dir := os.Getenv("CARGO_TARGET_DIR")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		dir = filepath.Join(home, ".cache", "kafka-iggy", "conformance-target")
	}
	p := filepath.Join(dir, "release", "iggy-conformance")
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}

// TestRustSDKConformance runs the official Rust SDK 0.11.0 driver of
// scripts/conformance against the server when the driver is built.
func TestRustSDKConformance(t *testing.T) {
	bin := conformanceBinary()
	if bin == "" {
		const how = "iggy-conformance not built (make test builds it through scripts/install-test-deps.sh; or scripts/conformance/run.sh with CONFORMANCE_BUILD_ONLY=1, or set IGGY_CONFORMANCE_BIN)"
		if os.Getenv("CI") == "true" {
			t.Fatal(how)
		}
		t.Skip(how)
	}
	s := startServer(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--addr", s.Addr().String())
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(line, "FAIL") {
			t.Error(line)
		}
	}
	if err != nil {
		t.Fatalf("conformance driver: %v\n%s", err, out.String())
	}
	t.Log(strings.TrimSpace(out.String()[strings.LastIndex(strings.TrimSpace(out.String()), "\n")+1:]))
}
