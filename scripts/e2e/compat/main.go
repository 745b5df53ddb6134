// Command compat runs the compatibility matrix and writes
// docs/COMPATIBILITY.md: every real client of scripts/e2e (round trips with
// each codec, group, commit/resume, seek by timestamp, idempotent producer,
// admin, Kafka's perf and admin tools) against a real Apache Kafka broker
// (the reference), the kafka-iggy sidecar (when its hook in
// scripts/e2e/sidecar_target.go starts it) and kfake; then franz-go's own kgo
// integration suite against Kafka and the sidecar.
//
// Usage (from the repository root; `make e2e` runs it after the Rust SDK
// conformance run):
//
//	go run ./scripts/e2e/compat -out docs/COMPATIBILITY.md
//
// It starts one Kafka broker (scripts/kafka/start.sh, the newest 4.x of
// scripts/kafka/versions.sh) and one sidecar, shares them between the e2e test
// binary (go test -json ./scripts/e2e) and the kgo suite, and stops both at
// the end. Logs (the test binary's output, the kgo suite's, the broker's)
// go to -logs (default a fresh temporary dir, named at the end).
//
// It exits non-zero, after writing the report, when a cell fails against
// Kafka, when a cell that passes against Kafka fails against the sidecar
// and is not in the intended differences (differences.go), or when the kgo
// suite falls below its floor. The last line is "compat: N passed, M failed"
// counting the cells and kgo tests that decide the exit status.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	e2e "github.com/kafka-iggy/kafka-iggy/scripts/e2e"
)

func main() {
	out := flag.String("out", "docs/COMPATIBILITY.md", "the report to write")
	logs := flag.String("logs", "", "where to keep the logs (default: a fresh temporary dir)")
	kgoSuite := flag.Bool("kgo-suite", true, "run franz-go's kgo integration suite")
	sidecar := flag.Bool("sidecar", os.Getenv("KAFKA_IGGY_COMPAT_NO_SIDECAR") != "1", "run against the sidecar when its hook starts it")
	gateSidecar := flag.Bool("gate-sidecar", os.Getenv("KAFKA_IGGY_COMPAT_SIDECAR_GATE") != "0",
		"fail when a sidecar cell that passes on Kafka fails without an intended difference")
	e2eTimeout := flag.Duration("e2e-timeout", 40*time.Minute, "bound of the e2e test binary")
	run := flag.String("run", "", "passed to go test -run (default: every test)")
	e2eSuite := flag.Bool("e2e", true, "run the e2e suite (scripts/e2e)")
	kgoRunFlag := flag.String("kgo-run", "", "run only the kgo-suite.txt tests this regexp matches (default: every test the list runs; a subset is not held to the floor)")
	flag.Parse()
	var kgoOnly *regexp.Regexp
	if *kgoRunFlag != "" {
		var err error
		if kgoOnly, err = regexp.Compile(*kgoRunFlag); err != nil {
			fmt.Fprintln(os.Stderr, "compat: -kgo-run:", err)
			os.Exit(2)
		}
	}
	if !*e2eSuite {
		*run = "^$"
	}
	if err := compat(*out, *logs, *kgoSuite, *sidecar, *gateSidecar, *e2eTimeout, *run, kgoOnly); err != nil {
		fmt.Fprintln(os.Stderr, "compat:", err)
		os.Exit(1)
	}
}

func compat(out, logs string, kgoSuite, withSidecar, gateSidecar bool, e2eTimeout time.Duration, run string, kgoOnly *regexp.Regexp) error {
	start := time.Now()
	if logs == "" {
		var err error
		if logs, err = os.MkdirTemp("", "kafka-iggy-compat-"); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(logs, 0o755); err != nil {
		return err
	}
	v4, v3, err := e2e.KafkaVersions()
	if err != nil {
		return err
	}
	rep := &report{KafkaVersion: v4, Kafka3Version: v3, Started: start}

	fmt.Printf("== compat: starting Apache Kafka %s (KRaft, single node, PLAINTEXT and a SASL_PLAINTEXT listener for the kgo suite's SASL tests)\n", v4)
	// The SASL listener's settings reach scripts/kafka/start.sh through
	// the environment, only while it starts (the e2e suite's own brokers
	// must not inherit them).
	saslEnv, err := e2e.KafkaSASLBrokerEnv(filepath.Join(logs, "kafka-sasl"))
	if err != nil {
		return err
	}
	for _, kv := range saslEnv {
		k, v, _ := strings.Cut(kv, "=")
		_ = os.Setenv(k, v)
	}
	broker, err := e2e.StartKafkaBroker(v4, filepath.Join(logs, "kafka-broker"))
	for _, kv := range saslEnv {
		k, _, _ := strings.Cut(kv, "=")
		_ = os.Unsetenv(k)
	}
	if err != nil {
		return err
	}
	var kafkaSASL string
	if b, err := os.ReadFile(filepath.Join(broker.Dir, "listener.SASL_PLAINTEXT")); err == nil {
		kafkaSASL = strings.TrimSpace(string(b))
	}
	defer broker.Stop()
	rep.BrokerStart = broker.StartTime
	fmt.Printf("== compat: Kafka answers on %s after %v\n", broker.Bootstrap, broker.StartTime.Round(time.Millisecond))

	env := append(os.Environ(),
		"KAFKA_IGGY_E2E_KAFKA_BOOTSTRAP="+broker.Bootstrap,
		"KAFKA_IGGY_E2E_NO_SIDECAR=1", // the sidecar below is passed as an external target
		"KAFKA_IGGY_COMPAT_DIFFS="+filepath.Join(logs, "intended-differences.json"),
	)
	var sidecarAddr string
	if withSidecar {
		tg, stop, ok, err := e2e.StartSidecar()
		switch {
		case err != nil:
			rep.SidecarError = err.Error()
			fmt.Printf("== compat: the sidecar hook (scripts/e2e/sidecar_target.go) failed; Kafka and kfake only:\n%s\n", tail(err.Error(), 40))
		case ok:
			if stop != nil {
				defer stop()
			}
			sidecarAddr = tg.Bootstrap
			fmt.Printf("== compat: sidecar answers on %s\n", sidecarAddr)
			env = append(env, "KAFKA_IGGY_E2E_BROKERS=sidecar="+sidecarAddr)
		default:
			fmt.Println("== compat: the sidecar hook does not start a sidecar yet; Kafka and kfake only")
		}
	}
	rep.SidecarRan = sidecarAddr != ""
	// A second sidecar for the kgo suite's SASL tests: SCRAM-SHA-256/512
	// and OAUTHBEARER (unsigned tokens) on loopback.
	var sidecarSASL string
	if sidecarAddr != "" && kgoSuite {
		tg, stop, ok, err := e2e.StartSASLSidecar()
		switch {
		case err != nil:
			fmt.Printf("== compat: the SASL sidecar did not start; the kgo SASL tests skip themselves against the sidecar:\n%s\n", tail(err.Error(), 40))
		case ok:
			defer stop()
			sidecarSASL = tg.Bootstrap
			fmt.Printf("== compat: SASL sidecar (SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER unsecured) answers on %s\n", sidecarSASL)
		}
	}

	fmt.Printf("== compat: go test -json ./scripts/e2e (log: %s)\n", filepath.Join(logs, "e2e.log"))
	e2eStart := time.Now()
	events, err := runE2E(env, logs, "e2e", e2eTimeout, run)
	if err != nil {
		return err
	}
	events, rep.Flaky, err = rerunFailures(env, logs, events)
	if err != nil {
		return err
	}
	rep.E2EDuration = time.Since(e2eStart)
	rep.build(events)
	if b, err := os.ReadFile(filepath.Join(logs, "intended-differences.json")); err == nil {
		_ = json.Unmarshal(b, &rep.ProtocolDifferences)
	}

	if kgoSuite {
		ks := time.Now()
		res, err := runKgoSuite(broker.Bootstrap, "kafka", logs, kafkaSASL, kgoOnly)
		if err != nil {
			return fmt.Errorf("kgo suite: %w", err)
		}
		rep.KgoSuites = append(rep.KgoSuites, res)
		if sidecarAddr != "" {
			res, err := runKgoSuite(sidecarAddr, "sidecar", logs, sidecarSASL, kgoOnly)
			if err != nil {
				return fmt.Errorf("kgo suite against the sidecar: %w", err)
			}
			rep.KgoSuites = append(rep.KgoSuites, res)
		}
		rep.KgoDuration = time.Since(ks)
	}
	rep.Total = time.Since(start)
	rep.judge(gateSidecar)
	if err := os.WriteFile(out, []byte(rep.markdown()), 0o644); err != nil {
		return err
	}
	fmt.Print(rep.summary())
	fmt.Printf("== compat: wrote %s in %v; logs in %s\n", out, rep.Total.Round(time.Second), logs)
	fmt.Printf("compat: %d passed, %d failed\n", rep.Passed, len(rep.Unexpected))
	if len(rep.Unexpected) > 0 {
		return fmt.Errorf("%d unexpected failures (listed above and in %s)", len(rep.Unexpected), out)
	}
	return nil
}

// testEvent is one line of go test -json.
type testEvent struct {
	Action  string
	Test    string
	Output  string
	Elapsed float64
}

// runE2E runs the e2e test binary and returns its events; its output goes
// to logs/<name>.log as text and logs/<name>.jsonl as events.
func runE2E(env []string, logs, name string, timeout time.Duration, run string) ([]testEvent, error) {
	root, err := moduleRoot()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout+2*time.Minute)
	defer cancel()
	args := []string{"test", "-json", "-count=1", "-timeout", timeout.String()}
	if run != "" {
		args = append(args, "-run", run)
	}
	args = append(args, "./scripts/e2e")
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = root
	cmd.Env = env
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	textLog, err := os.Create(filepath.Join(logs, name+".log"))
	if err != nil {
		return nil, err
	}
	defer textLog.Close()
	jsonLog, err := os.Create(filepath.Join(logs, name+".jsonl"))
	if err != nil {
		return nil, err
	}
	defer jsonLog.Close()
	cmd.Stderr = textLog
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	events, err := readEvents(io.TeeReader(stdout, jsonLog), textLog, true)
	werr := cmd.Wait()
	if err != nil {
		return nil, err
	}
	if len(events) == 0 {
		return nil, fmt.Errorf("go test ./scripts/e2e produced no events (%v); see %s", werr, filepath.Join(logs, name+".log"))
	}
	return events, nil
}

// readEvents parses go test -json, copies the output to text, and prints the
// outcome of every top-level test as it ends.
func readEvents(r io.Reader, text io.Writer, progress bool) ([]testEvent, error) {
	var events []testEvent
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var ev testEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			fmt.Fprintln(text, sc.Text()) // build output
			continue
		}
		events = append(events, ev)
		if ev.Action == "output" {
			io.WriteString(text, ev.Output)
		}
		if progress && ev.Test != "" && !strings.Contains(ev.Test, "/") && (ev.Action == "pass" || ev.Action == "fail" || ev.Action == "skip") {
			fmt.Printf("   %-4s %s (%.1fs)\n", ev.Action, ev.Test, ev.Elapsed)
		}
	}
	return events, sc.Err()
}

// moduleRoot is the directory of go.mod for the working directory.
func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", err
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("not inside the kafka-iggy module")
	}
	return filepath.Dir(gomod), nil
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
