package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The real Apache Kafka broker: the reference of the compatibility run.
//
// It joins the targets (named "kafka") in one of two ways:
//
//   - KAFKA_IGGY_E2E_KAFKA_BOOTSTRAP=host:port: a broker that is already
//     running, for example the one scripts/e2e/compat (make e2e) starts once
//     and shares between this suite and franz-go's kgo suite.
//   - KAFKA_IGGY_E2E_KAFKA=1 (or a version such as 3.9.2): the test binary
//     starts one itself with scripts/kafka/start.sh (single-node KRaft,
//     loopback, ports picked at run time, -Xmx512m) and stops it after the
//     last test. The jars come from scripts/kafka/install.sh; when they are
//     missing every test fails and names that script.
//
// With neither set there is no Kafka target (go test ./... in `make test`
// runs against kfake and the sidecar only).

func startKafkaTarget() (tgt Target, stop func(), ok bool, err error) {
	if addr := os.Getenv("KAFKA_IGGY_E2E_KAFKA_BOOTSTRAP"); addr != "" {
		return kafkaTarget(addr), nil, true, nil
	}
	want := os.Getenv("KAFKA_IGGY_E2E_KAFKA")
	if want == "" || want == "0" {
		return Target{}, nil, false, nil
	}
	version := ""
	if want != "1" {
		version = want
	}
	b, err := StartKafkaBroker(version, "")
	if err != nil {
		return Target{}, nil, false, err
	}
	return kafkaTarget(b.Bootstrap), b.Stop, true, nil
}

func kafkaTarget(addr string) Target {
	return Target{Name: "kafka", Bootstrap: addr, Kafka: true, KeepsProducerBatches: true}
}

// KafkaBroker is a broker started by scripts/kafka/start.sh.
type KafkaBroker struct {
	Version   string
	Bootstrap string
	Dir       string        // its work dir: server.properties, server.log, data
	StartTime time.Duration // from the call to the first ApiVersions answer
	stopOnce  func()
}

// Stop ends the broker's process group and removes its work dir unless
// KAFKA_IGGY_KEEP_BROKER_DIR is set.
func (b *KafkaBroker) Stop() { b.stopOnce() }

// repoRoot finds the module root from the working directory (go test runs in
// the package dir; the compat runner may run elsewhere).
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "scripts", "kafka", "start.sh")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("scripts/kafka/start.sh not found above the working directory")
		}
		dir = parent
	}
}

// StartKafkaBroker starts a Kafka broker of the given version ("" = the
// default of scripts/kafka/versions.sh) in dir ("" = a fresh temporary dir)
// and waits until it answers. The broker is also stopped when this process
// exits without calling Stop (start.sh --watch).
func StartKafkaBroker(version, dir string) (*KafkaBroker, error) {
	root, err := repoRoot()
	if err != nil {
		return nil, err
	}
	tmp := false
	if dir == "" {
		if dir, err = os.MkdirTemp("", "kafka-iggy-broker-"); err != nil {
			return nil, err
		}
		tmp = true
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(root, "scripts", "kafka", "start.sh"), dir, "--watch", strconv.Itoa(os.Getpid()))
	cmd.Env = os.Environ()
	if version != "" {
		cmd.Env = append(cmd.Env, "KAFKA_VERSION="+version)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("scripts/kafka/start.sh: %v\n%s(install the jars with scripts/kafka/install.sh, or make test-deps)", err, stderr.String())
	}
	took := time.Since(start)
	addr := strings.TrimSpace(stdout.String())
	if addr == "" {
		return nil, fmt.Errorf("scripts/kafka/start.sh printed no bootstrap address\n%s", stderr.String())
	}
	v, _ := os.ReadFile(filepath.Join(dir, "version"))
	b := &KafkaBroker{Version: strings.TrimSpace(string(v)), Bootstrap: addr, Dir: dir, StartTime: took}
	var stopped bool
	b.stopOnce = func() {
		if stopped {
			return
		}
		stopped = true
		stop := exec.Command("bash", filepath.Join(root, "scripts", "kafka", "stop.sh"), dir)
		stop.Stdout, stop.Stderr = os.Stderr, os.Stderr
		_ = stop.Run()
		if tmp && os.Getenv("KAFKA_IGGY_KEEP_BROKER_DIR") == "" {
			_ = os.RemoveAll(dir)
		}
	}
	return b, nil
}

// KafkaVersions reads the Kafka versions of scripts/kafka/versions.sh: the
// newest 4.x (the reference broker) and the newest 3.9.x.
func KafkaVersions() (v4, v3 string, err error) {
	root, err := repoRoot()
	if err != nil {
		return "", "", err
	}
	b, err := os.ReadFile(filepath.Join(root, "scripts", "kafka", "versions.sh"))
	if err != nil {
		return "", "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), "=")
		if !ok {
			continue
		}
		switch k {
		case "KAFKA_4_VERSION":
			v4 = v
		case "KAFKA_3_VERSION":
			v3 = v
		}
	}
	if v4 == "" || v3 == "" {
		return "", "", errors.New("scripts/kafka/versions.sh sets no KAFKA_4_VERSION / KAFKA_3_VERSION")
	}
	return v4, v3, nil
}

// KafkaCacheDir is where scripts/kafka/install.sh puts Kafka VERSION: libs/
// (broker, tools, kafka-clients), classes/ (the Java programs compiled
// against them) and extra/ (gson).
func KafkaCacheDir(version string) string {
	base := os.Getenv("KAFKA_IGGY_CACHE")
	if base == "" {
		home, _ := os.UserHomeDir()
		base = filepath.Join(home, ".cache", "kafka-iggy")
	}
	return filepath.Join(base, "kafka-"+version)
}

// StartSidecar runs the sidecar hook (sidecar_target.go) for the compat
// runner, which starts the sidecar once and shares it between this suite
// (as KAFKA_IGGY_E2E_BROKERS="sidecar=...") and franz-go's kgo suite.
func StartSidecar() (tgt Target, stop func(), ok bool, err error) { return startSidecar() }
