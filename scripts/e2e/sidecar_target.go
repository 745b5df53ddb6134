package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// ---------------------------------------------------------------------------
// THE SIDECAR HOOK: the one place that runs the whole suite against
// kafka-iggy.
//
// startSidecar builds cmd/kafka-iggy and runs `kafka-iggy serve` as a separate
// process — the shape it has in a pod — backed by the embedded Iggy server,
// every listener on a free loopback port. It reads the bound Kafka address
// from the "ready for Kafka clients" log line. It runs at most once per test
// binary; stop ends the process after every test has finished.
//
// KAFKA_IGGY_E2E_IGGY_PROTOCOL=0.12 runs the embedded server in protocol 0.12
// mode (embedded.protocol) while the sidecar keeps iggy.protocol auto; the
// sidecar must then log in with that generation (its "iggy session up" line)
// or the target fails to start.
//
// KeepsProducerBatches stays false (the sidecar's Fetch re-encodes batches
// uncompressed) and Reference false.
// ---------------------------------------------------------------------------
func startSidecar() (tgt Target, stop func(), ok bool, err error) {
	if os.Getenv("KAFKA_IGGY_E2E_NO_SIDECAR") == "1" {
		return Target{}, nil, false, nil
	}
	return runSidecar(nil)
}

// runSidecar builds and starts `kafka-iggy serve` as startSidecar says;
// prepare (nil: none) writes what the process needs into its dir (bin is
// the built binary) and returns more KAFKA_IGGY_* settings.
func runSidecar(prepare func(bin, dir string) ([]string, error)) (tgt Target, stop func(), ok bool, err error) {
	root, err := moduleRoot()
	if err != nil {
		return Target{}, nil, false, err
	}
	dir, err := os.MkdirTemp("", "kafka-iggy-e2e-*")
	if err != nil {
		return Target{}, nil, false, err
	}
	bin := filepath.Join(dir, "kafka-iggy")
	build := exec.Command("go", "build", "-o", bin, "./cmd/kafka-iggy")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return Target{}, nil, false, fmt.Errorf("building kafka-iggy: %v\n%s", err, out)
	}
	var extra []string
	if prepare != nil {
		if extra, err = prepare(bin, dir); err != nil {
			return Target{}, nil, false, err
		}
	}
	logPath := filepath.Join(dir, "sidecar.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return Target{}, nil, false, err
	}
	cmd := exec.Command(bin, "serve")
	// The sidecar refuses unknown KAFKA_IGGY_* keys, so the suite's own
	// KAFKA_IGGY_E2E_* knobs are not passed on.
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KAFKA_IGGY_") {
			env = append(env, kv)
		}
	}
	cmd.Env = append(env,
		"KAFKA_IGGY_LISTENER__ADDRESS=127.0.0.1:0",
		"KAFKA_IGGY_ADMIN__ADDRESS=127.0.0.1:0",
		"KAFKA_IGGY_EMBEDDED__LISTEN=127.0.0.1:0",
		"KAFKA_IGGY_LOG__FORMAT=json",
		"KAFKA_IGGY_LOG__LEVEL=info",
		// Groups form at once in tests (Kafka's test brokers do the same).
		"KAFKA_IGGY_GROUPS__INITIAL_REBALANCE_DELAY=0s",
	)
	cmd.Env = append(cmd.Env, extra...)
	wantProto := os.Getenv("KAFKA_IGGY_E2E_IGGY_PROTOCOL")
	if wantProto != "" {
		cmd.Env = append(cmd.Env, "KAFKA_IGGY_EMBEDDED__PROTOCOL="+wantProto)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	pr, pw := io.Pipe()
	cmd.Stderr = io.MultiWriter(logFile, pw)
	cmd.Stdout = logFile
	if err := cmd.Start(); err != nil {
		return Target{}, nil, false, err
	}
	stop = func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		_ = pw.Close()
		_ = logFile.Close()
		if os.Getenv("KAFKA_IGGY_E2E_KEEP_LOG") == "" {
			_ = os.RemoveAll(dir)
		}
	}
	addr := make(chan string, 1)
	proto := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		sent, sawProto := false, false
		for sc.Scan() {
			if sent && sawProto {
				continue // keep draining so the process never blocks on stderr
			}
			var line struct {
				Message string `json:"message"`
				Kafka   string `json:"kafka_address"`
				Proto   string `json:"iggy_protocol"`
			}
			if json.Unmarshal(sc.Bytes(), &line) != nil {
				continue
			}
			if !sawProto && line.Message == "iggy session up" && line.Proto != "" {
				proto <- line.Proto
				sawProto = true
			}
			if !sent && strings.Contains(line.Message, "ready for Kafka clients") && line.Kafka != "" {
				addr <- line.Kafka
				sent = true
			}
		}
	}()
	select {
	case a := <-addr:
		if wantProto != "" {
			var got string
			select { // the pool logs in beside serving: wait for its first session
			case got = <-proto:
			case <-time.After(30 * time.Second):
			}
			if got != wantProto {
				stop()
				return Target{}, nil, false, fmt.Errorf("the sidecar logged in with iggy protocol %q, want %q (KAFKA_IGGY_E2E_IGGY_PROTOCOL)", got, wantProto)
			}
		}
		return Target{Name: "sidecar", Bootstrap: a, Sidecar: true}, stop, true, nil
	case <-time.After(60 * time.Second):
		b, _ := os.ReadFile(logPath)
		stop()
		return Target{}, nil, false, fmt.Errorf("kafka-iggy serve did not become ready within 60s; its log:\n%s", b)
	}
}

// moduleRoot finds the directory holding go.mod, above the test's directory.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("go.mod not found above %s", dir)
		}
		dir = parent
	}
}
