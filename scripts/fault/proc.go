package main

// The processes of a run: one `kafka-iggy embedded-iggy` with its data on
// disk and three `kafka-iggy serve` of one coordination domain, each on fixed
// loopback ports so a restarted process is found where its clients left it.
// Each process gets its own process group (Ctrl-C in the terminal reaches the
// driver only, which then kills them all) and dies with the driver
// (Pdeathsig).

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

const peerSecret = "fault-workload-peer-secret-0123456789"

// proc is one supervised process, started again on the same ports after a
// kill; its log (stderr and stdout) goes to dir/name.log, appended across
// restarts.
type proc struct {
	name  string
	bin   string
	args  []string
	env   []string
	ready string // the log message that says it is up
	dir   string

	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{} // closed when the current incarnation exited
	stopped bool          // SIGSTOPped and not yet continued
	starts  int
}

// freePort returns a loopback port free right now.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// baseEnv is the driver's environment without KAFKA_IGGY_* keys (the
// sidecar refuses unknown ones).
func baseEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KAFKA_IGGY_") {
			env = append(env, kv)
		}
	}
	return env
}

func newIggy(bin, dir, dataDir string, port int) *proc {
	return &proc{
		name: "iggy", bin: bin, dir: dir, ready: "embedded Iggy server listening",
		args: []string{"embedded-iggy", "--listen", fmt.Sprintf("127.0.0.1:%d", port), "--data-dir", dataDir},
		env:  baseEnv(),
	}
}

func newSidecar(bin, dir string, i int, iggyPort, kafkaPort, adminPort, peerPort int) *proc {
	return &proc{
		name: fmt.Sprintf("sidecar%d", i), bin: bin, dir: dir, ready: "ready for Kafka clients",
		args: []string{"serve"},
		env: append(baseEnv(),
			"KAFKA_IGGY_EMBEDDED__MODE=off",
			fmt.Sprintf("KAFKA_IGGY_IGGY__ADDRESS=127.0.0.1:%d", iggyPort),
			fmt.Sprintf("KAFKA_IGGY_LISTENER__ADDRESS=127.0.0.1:%d", kafkaPort),
			fmt.Sprintf("KAFKA_IGGY_ADMIN__ADDRESS=127.0.0.1:%d", adminPort),
			fmt.Sprintf("KAFKA_IGGY_PEERS__ADDRESS=127.0.0.1:%d", peerPort),
			"KAFKA_IGGY_PEERS__SECRET="+peerSecret,
			"KAFKA_IGGY_LIMITS__DRAIN_TIMEOUT=5s",
			"KAFKA_IGGY_LOG__FORMAT=json",
		),
	}
}

// start starts the process and waits for its ready line (bounded by ctx and
// 60 s). A process that exits before it is ready is started again, up to
// three times (a port still held by the previous incarnation, for instance).
func (p *proc) start(ctx context.Context) error {
	var err error
	for attempt := 0; attempt < 4; attempt++ {
		if err = p.startOnce(ctx); err == nil || ctx.Err() != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
	return err
}

func (p *proc) startOnce(ctx context.Context) error {
	logf, err := os.OpenFile(filepath.Join(p.dir, p.name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(p.bin, p.args...)
	cmd.Env = p.env
	cmd.Stdout = logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		logf.Close()
		return err
	}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return err
	}
	exited := make(chan struct{})
	ready := make(chan struct{}, 1)
	p.mu.Lock()
	p.cmd, p.exited, p.stopped = cmd, exited, false
	p.starts++
	p.mu.Unlock()
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			line := sc.Bytes()
			_, _ = logf.Write(line)
			_, _ = logf.Write([]byte{'\n'})
			var l struct {
				Message string `json:"message"`
			}
			if json.Unmarshal(line, &l) == nil && strings.Contains(l.Message, p.ready) {
				select {
				case ready <- struct{}{}:
				default:
				}
			}
		}
		_, _ = io.Copy(logf, stderr)
		_ = cmd.Wait()
		logf.Close()
		close(exited)
	}()
	timer := time.NewTimer(60 * time.Second)
	defer timer.Stop()
	select {
	case <-ready:
		return nil
	case <-exited:
		return fmt.Errorf("%s exited before it was ready: %v (log %s)", p.name, cmd.ProcessState, filepath.Join(p.dir, p.name+".log"))
	case <-timer.C:
		p.kill()
		return fmt.Errorf("%s not ready within 60s (log %s)", p.name, filepath.Join(p.dir, p.name+".log"))
	case <-ctx.Done():
		p.kill()
		return ctx.Err()
	}
}

// signal sends sig to the current incarnation.
func (p *proc) signal(sig syscall.Signal) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.cmd.Process == nil {
		return
	}
	_ = p.cmd.Process.Signal(sig)
	switch sig {
	case syscall.SIGSTOP:
		p.stopped = true
	case syscall.SIGCONT:
		p.stopped = false
	}
}

// kill SIGKILLs the current incarnation and waits until it is gone.
func (p *proc) kill() {
	p.signal(syscall.SIGKILL)
	p.wait(30 * time.Second)
}

// wait waits up to d for the current incarnation to exit; false if it did
// not.
func (p *proc) wait(d time.Duration) bool {
	p.mu.Lock()
	exited := p.exited
	p.mu.Unlock()
	if exited == nil {
		return true
	}
	select {
	case <-exited:
		return true
	case <-time.After(d):
		return false
	}
}

// terminate sends SIGTERM and waits for the drain (then SIGKILL after 30 s).
func (p *proc) terminate() (clean bool) {
	p.signal(syscall.SIGTERM)
	if p.wait(30 * time.Second) {
		return true
	}
	p.kill()
	return false
}
