package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestMain lets a test run this binary's main: with KIGGY_TEST_RUN_MAIN set
// the test binary becomes `kafka-iggy <KIGGY_TEST_MAIN_ARGS>`, so process
// tests need no separate build.
func TestMain(m *testing.M) {
	if os.Getenv("KIGGY_TEST_RUN_MAIN") == "1" {
		os.Exit(run(strings.Fields(os.Getenv("KIGGY_TEST_MAIN_ARGS"))))
	}
	os.Exit(m.Run())
}

// sidecarProc is a `kafka-iggy serve` child process.
type sidecarProc struct {
	cmd   *exec.Cmd
	kafka string
	admin string
	done  chan error
	log   *strings.Builder
	mu    *sync.Mutex
}

// startSidecarProc starts `kafka-iggy serve` with an embedded Iggy server
// keeping its data in dataDir, and waits for its ready line.
func startSidecarProc(t *testing.T, dataDir string, drain time.Duration) *sidecarProc {
	t.Helper()
	return startServeProc(t,
		"KAFKA_IGGY_EMBEDDED__LISTEN=127.0.0.1:0",
		"KAFKA_IGGY_EMBEDDED__DATA_DIR="+dataDir,
		"KAFKA_IGGY_LIMITS__DRAIN_TIMEOUT="+drain.String(),
	)
}

// startServeProc starts `kafka-iggy serve` on loopback ports with the extra
// KAFKA_IGGY_* settings env, and waits for its ready line.
func startServeProc(t *testing.T, env ...string) *sidecarProc {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(append(childEnv(),
		"KIGGY_TEST_RUN_MAIN=1",
		"KIGGY_TEST_MAIN_ARGS=serve",
		"KAFKA_IGGY_LISTENER__ADDRESS=127.0.0.1:0",
		"KAFKA_IGGY_ADMIN__ADDRESS=127.0.0.1:0",
		"KAFKA_IGGY_LOG__FORMAT=json",
	), env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &sidecarProc{cmd: cmd, done: make(chan error, 1), log: &strings.Builder{}, mu: &sync.Mutex{}}
	ready := make(chan [2]string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			p.mu.Lock()
			p.log.Write(sc.Bytes())
			p.log.WriteByte('\n')
			p.mu.Unlock()
			var line struct {
				Message string `json:"message"`
				Kafka   string `json:"kafka_address"`
				Admin   string `json:"admin_address"`
			}
			if json.Unmarshal(sc.Bytes(), &line) == nil && strings.Contains(line.Message, "ready for Kafka clients") {
				ready <- [2]string{line.Kafka, line.Admin}
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
		p.done <- cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
	})
	select {
	case a := <-ready:
		p.kafka, p.admin = a[0], a[1]
		return p
	case err := <-p.done:
		t.Fatalf("sidecar exited before it was ready: %v\n%s", err, p.logText())
	case <-time.After(60 * time.Second):
		t.Fatalf("sidecar not ready within 60s\n%s", p.logText())
	}
	return nil
}

// childEnv is this process's environment without KAFKA_IGGY_* keys (the
// sidecar refuses unknown ones).
func childEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KAFKA_IGGY_") {
			env = append(env, kv)
		}
	}
	return env
}

func (p *sidecarProc) logText() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.String()
}

// TestSIGTERMDuringProduceLosesNothing: SIGTERM while a producer is busy.
// Every record whose produce got a response is in Iggy afterwards (read back
// through a second sidecar on the same data directory), the process exits
// within the drain deadline, and the client sees the connection close.
func TestSIGTERMDuringProduceLosesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("starts sidecar processes")
	}
	dataDir := t.TempDir()
	const drain = 5 * time.Second
	p := startSidecarProc(t, dataDir, drain)

	const topic = "sigterm"
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.kafka), kgo.DefaultProduceTopic(topic),
		kgo.AllowAutoTopicCreation(), kgo.RecordRetries(0), kgo.RequestRetries(0),
		kgo.ProducerLinger(0), kgo.RecordDeliveryTimeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()

	var mu sync.Mutex
	acked := map[string]int64{} // value -> offset confirmed to the client
	failed := 0
	var wg sync.WaitGroup
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	produced := make(chan struct{}, 1)
	go func() {
		for i := 0; ctx.Err() == nil && i < 200000; i++ {
			wg.Add(1)
			v := strconv.Itoa(i)
			cl.Produce(ctx, &kgo.Record{Value: []byte(v)}, func(r *kgo.Record, err error) {
				defer wg.Done()
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					failed++
					return
				}
				acked[v] = r.Offset
				if len(acked) == 2000 {
					select {
					case produced <- struct{}{}:
					default:
					}
				}
			})
		}
	}()
	select {
	case <-produced:
	case <-time.After(60 * time.Second):
		t.Fatalf("no steady produce load within 60s\n%s", p.logText())
	}

	termAt := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.done:
		if err != nil {
			t.Fatalf("sidecar exit: %v\n%s", err, p.logText())
		}
	case <-time.After(drain + 10*time.Second):
		t.Fatalf("sidecar still running %v after SIGTERM (drain deadline %v)", time.Since(termAt), drain)
	}
	exitAfter := time.Since(termAt)
	if exitAfter > drain+2*time.Second {
		t.Fatalf("exit took %v, drain deadline %v", exitAfter, drain)
	}
	// Closing the client fails whatever it still buffers (the sidecar is
	// gone), so every callback runs.
	stop()
	cl.Close()
	wg.Wait()

	mu.Lock()
	want := make(map[string]int64, len(acked))
	for k, v := range acked {
		want[k] = v
	}
	nFailed := failed
	mu.Unlock()
	t.Logf("SIGTERM after %d acknowledged records; exit took %v; %d records failed after the close", len(want), exitAfter, nFailed)

	// Read everything back through a second sidecar on the same data dir.
	p2 := startSidecarProc(t, dataDir, drain)
	rd, err := kgo.NewClient(kgo.SeedBrokers(p2.kafka), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	got := map[string]int64{}
	deadline := time.Now().Add(60 * time.Second)
	for len(got) < len(want) && time.Now().Before(deadline) {
		fctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		fs := rd.PollFetches(fctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) { got[string(r.Value)] = r.Offset })
	}
	var missing []string
	for v, off := range want {
		g, ok := got[v]
		if !ok {
			missing = append(missing, fmt.Sprintf("%s@%d", v, off))
		} else if g != off {
			t.Errorf("record %s acknowledged at offset %d, stored at %d", v, off, g)
		}
	}
	if len(missing) > 0 {
		if len(missing) > 20 {
			missing = missing[:20]
		}
		t.Fatalf("%d acknowledged records missing after the restart, e.g. %v", len(want)-len(got), missing)
	}
	_ = p2.cmd.Process.Signal(syscall.SIGTERM)
	<-p2.done
}
