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

// conformanceBinary finds an official-SDK conformance driver built by
// scripts/conformance/run.sh (CONFORMANCE_BUILD_ONLY=1): name is
// iggy-conformance (SDK 0.11.0) or iggy-conformance-edge (the edge SDK,
// protocol 0.12); env overrides the path. "" when it is not built.
func conformanceBinary(name, env string) string {
	if p := os.Getenv(env); p != "" {
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
	p := filepath.Join(dir, "release", name)
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}

// TestRustSDKConformance runs the official Rust SDK 0.11.0 driver of
// scripts/conformance against the server when the driver is built.
func TestRustSDKConformance(t *testing.T) {
	runConformance(t, conformanceBinary("iggy-conformance", "IGGY_CONFORMANCE_BIN"), nil)
}

// TestRustSDKEdgeConformance runs the newest published SDK's driver
// (scripts/conformance/edge, protocol 0.12.2) against the server in 0.12
// mode: every command the gateway uses, through a client we did not write.
func TestRustSDKEdgeConformance(t *testing.T) {
	runConformance(t, conformanceBinary("iggy-conformance-edge", "IGGY_CONFORMANCE_EDGE_BIN"), func(c *Config) { c.Protocol = "0.12" })
}

func runConformance(t *testing.T, bin string, mutate func(*Config)) {
	if bin == "" {
		const how = "conformance driver not built (make test builds it through scripts/install-test-deps.sh; or scripts/conformance/run.sh with CONFORMANCE_BUILD_ONLY=1 [CONFORMANCE_SDK=edge], or set IGGY_CONFORMANCE_BIN / IGGY_CONFORMANCE_EDGE_BIN)"
		if os.Getenv("CI") == "true" {
			t.Fatal(how)
		}
		t.Skip(how)
	}
	s := startServer(t, mutate)
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
