package main

// The servers the bench measures: the embedded Iggy server, the sidecar
// (kafka-iggy serve), kfake and Apache Kafka, each started as its own process
// group and waited for.

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// server is one running server the bench talks to.
type server struct {
	name       string
	addr       string // host:port the clients dial
	port       int
	proc       *proc // nil for Kafka (started by its script)
	pid        int   // the process measured
	metricsURL string
	pprofURL   string // the server's /debug/pprof with -profile (sidecar, embedded Iggy), else ""
	iggyPath   bool   // requests go on to the embedded Iggy server
	settings   map[string]string
}

// startEmbedded runs `kafka-iggy embedded-iggy` (in memory) on a free port.
func (b *bench) startEmbedded() error {
	port, err := freePort()
	if err != nil {
		return err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	args := []string{"embedded-iggy", "--listen", addr}
	pprofURL := ""
	if b.profDir != "" {
		pport, err := freePort()
		if err != nil {
			return err
		}
		args = append(args, "--pprof-addr", fmt.Sprintf("127.0.0.1:%d", pport))
		pprofURL = fmt.Sprintf("http://127.0.0.1:%d/debug/pprof", pport)
	}
	cmd := exec.Command(b.bin, args...)
	p, err := b.ps.start("embedded-iggy", cmd, filepath.Join(b.work, "embedded.log"))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	if err := waitTCP(ctx, addr, p); err != nil {
		return fmt.Errorf("embedded Iggy server: %w\n%s", err, tail(p.Log, 2000))
	}
	b.embedded = &server{name: "embedded-iggy", addr: addr, port: port, proc: p, pid: p.PID(), pprofURL: pprofURL}
	b.logf("embedded Iggy server on %s (pid %d)", addr, p.PID())
	return nil
}

// startSidecar starts `kafka-iggy serve` with the given settings (sidecar
// config keys, passed as KAFKA_IGGY_* environment variables).
func (b *bench) startSidecar(settings map[string]string) (*server, error) {
	return b.startServe(settings)
}

// sidecarSettings are the settings every sidecar of the bench gets: the
// Kafka listener, the upstream, no connection cap (the idle run opens
// 10,000), quiet logs.
func (b *bench) sidecarSettings(listen, admin string, extra map[string]string) map[string]string {
	iggyAddr := ""
	if b.embedded != nil {
		iggyAddr = b.embedded.addr
	}
	s := map[string]string{
		"listener.address":       listen,
		"iggy.address":           iggyAddr,
		"embedded.mode":          "off",
		"admin.address":          admin,
		"limits.max_connections": "0",
		"log.level":              "warn",
		"producer.instance_id":   "1",
	}
	if b.profDir != "" {
		s["admin.pprof"] = "true"
	}
	for k, v := range extra {
		s[k] = v
	}
	return s
}

func envName(key string) string {
	return "KAFKA_IGGY_" + strings.ToUpper(strings.ReplaceAll(key, ".", "__"))
}

func (b *bench) startServe(settings map[string]string) (*server, error) {
	return b.startServeFrom(b.bin, tSidecar, settings)
}

// startServeFrom starts `kafka-iggy serve` from binary bin as target name.
func (b *bench) startServeFrom(bin, name string, settings map[string]string) (*server, error) {
	kport, err := freePort()
	if err != nil {
		return nil, err
	}
	aport, err := freePort()
	if err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", kport)
	all := b.sidecarSettings(addr, fmt.Sprintf("127.0.0.1:%d", aport), settings)
	cmd := exec.Command(bin, "serve")
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KAFKA_IGGY_") {
			env = append(env, kv)
		}
	}
	keys := make([]string, 0, len(all))
	for k := range all {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, envName(k)+"="+all[k])
	}
	var clientTLS *tls.Config
	if name == tSidecarB {
		env = append(env, b.envB...)
		if b.tlsB {
			tenv, tc, err := benchTLS(b.work)
			if err != nil {
				return nil, err
			}
			env, clientTLS = append(env, tenv...), tc
		}
		if b.saslB {
			senv, m, err := benchSASL(bin, b.work)
			if err != nil {
				return nil, err
			}
			env = append(env, senv...)
			tlsMu.Lock()
			saslAddrs[addr] = m
			tlsMu.Unlock()
		}
	}
	cmd.Env = env
	b.seq++
	p, err := b.ps.start(name, cmd, filepath.Join(b.work, fmt.Sprintf("%s-%d.log", name, b.seq)))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if err := waitTCP(ctx, addr, p); err != nil {
		p.stop(2 * time.Second)
		return nil, fmt.Errorf("%w: %s", err, strings.ReplaceAll(tail(p.Log, 400), "\n", " | "))
	}
	if clientTLS != nil {
		tlsMu.Lock()
		tlsAddrs[addr] = clientTLS
		tlsMu.Unlock()
	}
	s := &server{name: name, addr: addr, port: kport, proc: p, pid: p.PID(), iggyPath: true,
		metricsURL: fmt.Sprintf("http://127.0.0.1:%d/metrics", aport), settings: settings}
	if b.profDir != "" {
		s.pprofURL = fmt.Sprintf("http://127.0.0.1:%d/debug/pprof", aport)
	}
	b.waitSessions(s)
	b.logf("%s (%s serve) on %s (pid %d) %v", name, bin, addr, p.PID(), settings)
	return s, nil
}

// waitSessions waits (bounded) until the sidecar reports an Iggy session up.
func (b *bench) waitSessions(s *server) {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) && b.ctx.Err() == nil {
		if v, ok := scrape(s.metricsURL, "kafka_iggy_upstream_sessions_up"); ok && v >= 1 {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// startKfake runs kfake as `bench kfake` on a free port.
func (b *bench) startKfake() (*server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	mport, err := freePort()
	if err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	cmd := exec.Command(b.self, "kfake", "-listen", addr, "-metrics", fmt.Sprintf("127.0.0.1:%d", mport))
	p, err := b.ps.start("kfake", cmd, filepath.Join(b.work, "kfake.log"))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	if err := waitTCP(ctx, addr, p); err != nil {
		return nil, fmt.Errorf("%w\n%s", err, tail(p.Log, 2000))
	}
	b.logf("kfake on %s (pid %d)", addr, p.PID())
	return &server{name: tKfake, addr: addr, port: port, proc: p, pid: p.PID(),
		metricsURL: fmt.Sprintf("http://127.0.0.1:%d/metrics", mport)}, nil
}

// startKafka installs (cached) and starts Apache Kafka with scripts/kafka.
func (b *bench) startKafka() (*server, error) {
	dir := filepath.Join(b.root, "scripts", "kafka")
	if _, err := os.Stat(filepath.Join(dir, "start.sh")); err != nil {
		return nil, errors.New("scripts/kafka/start.sh is not in this tree")
	}
	if b.left() < 2*time.Minute {
		return nil, errors.New("not enough budget left to start a JVM broker")
	}
	version := kafkaVersion(dir)
	if !kafkaInstalled(version) {
		// install.sh is idempotent and brings everything scripts/e2e needs
		// too; the bench only needs the broker's jars.
		b.logf("installing Apache Kafka %s (scripts/kafka/install.sh)", version)
		ctx, cancel := context.WithTimeout(b.ctx, min(4*time.Minute, b.left()-2*time.Minute))
		out, err := runBounded(ctx, b.root, nil, "bash", filepath.Join(dir, "install.sh"), version)
		cancel()
		if err != nil && !kafkaInstalled(version) {
			return nil, fmt.Errorf("scripts/kafka/install.sh %s: %w: %s", version, err, strings.ReplaceAll(tailBytes(out, 600), "\n", " | "))
		}
	}
	b.kafkaDir = filepath.Join(b.work, "kafka")
	b.logf("starting Apache Kafka %s (scripts/kafka/start.sh)", version)
	ctx, cancel := context.WithTimeout(b.ctx, min(2*time.Minute, b.left()-time.Minute))
	env := []string{"KAFKA_VERSION=" + version, fmt.Sprintf("KAFKA_IGGY_START_TIMEOUT=%d", 90)}
	out, err := runBounded(ctx, b.root, env, "bash", filepath.Join(dir, "start.sh"), b.kafkaDir, "--watch", fmt.Sprint(os.Getpid()))
	cancel()
	if pgid := readInt(filepath.Join(b.kafkaDir, "pid")); pgid > 0 {
		b.ps.adoptGroup(pgid)
	}
	if err != nil {
		return nil, fmt.Errorf("scripts/kafka/start.sh: %w\n%s", err, tailBytes(out, 2000))
	}
	addr := strings.TrimSpace(readString(filepath.Join(b.kafkaDir, "bootstrap")))
	if addr == "" {
		return nil, errors.New("scripts/kafka/start.sh wrote no bootstrap address")
	}
	b.kafkaVer = strings.TrimSpace(readString(filepath.Join(b.kafkaDir, "version")))
	_, portS, _ := strings.Cut(addr, ":")
	port := atoi(portS)
	pid := pidListening(port)
	if pid == 0 {
		pid = readInt(filepath.Join(b.kafkaDir, "pid"))
	}
	b.logf("Apache Kafka %s on %s (pid %d)", b.kafkaVer, addr, pid)
	return &server{name: tKafka, addr: addr, port: port, pid: pid}, nil
}

// kafkaInstalled reports whether scripts/kafka/install.sh has put the jars
// of version in its cache (the file run.sh checks).
func kafkaInstalled(version string) bool {
	cache := os.Getenv("KAFKA_IGGY_CACHE")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache", "kafka-iggy")
	}
	_, err := os.Stat(filepath.Join(cache, "kafka-"+version, "mainclasses"))
	return err == nil
}

// stopKafka runs scripts/kafka/stop.sh (bounded); stopAll already signalled
// the broker's process group.
func (b *bench) stopKafka() {
	if b.kafkaDir == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, _ = runBounded(ctx, b.root, nil, "bash", filepath.Join(b.root, "scripts", "kafka", "stop.sh"), b.kafkaDir)
}

// kafkaVersion is the reference broker version of scripts/kafka/versions.sh.
func kafkaVersion(dir string) string {
	for _, line := range strings.Split(readString(filepath.Join(dir, "versions.sh")), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "KAFKA_4_VERSION="); ok {
			return strings.Trim(v, `"' `)
		}
	}
	return "4.4.0"
}
