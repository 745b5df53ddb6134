package main

// The direct baseline through the official Rust SDK: scripts/bench/rustdirect,
// built with cargo (crates pinned by its Cargo.lock) and run once per
// workload as a child process.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// rustTargetDir is where cargo builds rustdirect. By default it is the
// conformance driver's target directory: both pin the same crates and the
// same profile, so a warm cache builds rustdirect in seconds.
func rustTargetDir() string {
	if d := os.Getenv("CARGO_TARGET_DIR"); d != "" {
		return d
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "kafka-iggy", "conformance-target")
}

// buildRust builds rustdirect (release) and returns the binary's path.
func buildRust(ctx context.Context, root string) (string, error) {
	manifest := filepath.Join(root, "scripts", "bench", "rustdirect", "Cargo.toml")
	if _, err := exec.LookPath("cargo"); err != nil {
		return "", fmt.Errorf("cargo not on PATH (a Rust toolchain >= 1.95 is needed for the Rust SDK baseline)")
	}
	env := []string{"CARGO_TARGET_DIR=" + rustTargetDir()}
	// Download exactly what Cargo.lock pins (a no-op with a warm cache).
	if out, err := runBounded(ctx, root, env, "cargo", "fetch", "--manifest-path", manifest, "--locked", "--quiet"); err != nil {
		fmt.Fprintf(os.Stderr, "bench: cargo fetch failed (%v); trying offline\n%s\n", err, tailBytes(out, 2000))
	}
	out, err := runBounded(ctx, root, env, "cargo", "build", "--manifest-path", manifest, "--locked", "--offline", "--release")
	if err != nil {
		return "", fmt.Errorf("cargo build: %w\n%s", err, tailBytes(out, 3000))
	}
	return filepath.Join(rustTargetDir(), "release", "iggy-bench-direct"), nil
}

func tailBytes(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(bytes.TrimSpace(b))
}

// rustOut is the JSON line rustdirect prints.
type rustOut struct {
	Mode      string  `json:"mode"`
	Records   int64   `json:"records"`
	Bytes     int64   `json:"bytes"`
	ElapsedNS int64   `json:"elapsed_ns"`
	Conns     int     `json:"conns"`
	PoolHash  string  `json:"pool_hash"`
	LatNS     []int64 `json:"lat_ns"`
	Error     string  `json:"error"`
}

// rustSpec is one rustdirect run.
type rustSpec struct {
	bin, addr, topic, mode   string
	partitions, conns, batch int
	records, pollCount       int
	warmup                   int
	dur                      time.Duration
	// warm, when positive, runs the steady-state window: dur is the
	// measured window after warm; the meter follows the program's
	// window-start/window-end lines. rate paces produce (records/s).
	warm time.Duration
	rate float64
}

// runRust runs rustdirect once. The meter covers the whole process (its
// own connection set-up included; it reports its own elapsed time for the
// measured part). The program's CPU comes from its rusage.
func runRust(ctx context.Context, s rustSpec, wantHash string, m *meter) (r Result, h *hdr.Histogram, err error) {
	args := []string{
		"--addr", s.addr, "--mode", s.mode, "--stream", benchStream, "--topic", s.topic,
		"--partitions", strconv.Itoa(s.partitions), "--conns", strconv.Itoa(s.conns),
		"--records", strconv.Itoa(s.records), "--seconds", strconv.FormatFloat(s.dur.Seconds(), 'f', 3, 64),
		"--size", "1024", "--batch", strconv.Itoa(s.batch), "--poll-count", strconv.Itoa(s.pollCount),
		"--warmup", strconv.Itoa(s.warmup),
	}
	if s.warm > 0 {
		args = append(args, "--warm-seconds", strconv.FormatFloat(s.warm.Seconds(), 'f', 3, 64))
	}
	if s.rate > 0 {
		args = append(args, "--rate", strconv.FormatFloat(s.rate, 'f', 1, 64))
	}
	cctx, cancel := context.WithTimeout(ctx, s.warm+s.dur+60*time.Second)
	defer cancel()
	cmd := exec.Command(s.bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		return r, nil, err
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if s.warm <= 0 {
		m.begin()
	}
	if err := cmd.Start(); err != nil {
		if s.warm <= 0 {
			m.end()
		}
		return r, nil, err
	}
	m.iggyOwner.Store(int64(cmd.Process.Pid))
	m.clientPID.Store(int64(cmd.Process.Pid))
	// The window markers (and the rest of stderr, kept for errors).
	var mm measured
	began, ended := false, false
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(errPipe)
		for sc.Scan() {
			line := sc.Text()
			switch {
			case s.warm > 0 && line == "window-start" && !began:
				began = true
				m.begin()
			case s.warm > 0 && line == "window-end" && began && !ended:
				ended = true
				mm = m.end()
			default:
				stderr.WriteString(line + "\n")
			}
		}
	}()
	done := make(chan error, 1)
	go func() { <-scanned; done <- cmd.Wait() }()
	var werr error
	select {
	case werr = <-done:
	case <-cctx.Done():
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		werr = fmt.Errorf("rustdirect did not finish: %w", context.Cause(cctx))
	}
	switch {
	case s.warm <= 0:
		mm = m.end()
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok && ru != nil {
			mm.ClientCPU = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
			// The program had exited when the meter ended, so its CPU
			// was counted as the others'.
			if el := time.Since(m.at0).Seconds(); el > 0 && mm.ForeignCores > 0 {
				mm.ForeignCores = max(0, mm.ForeignCores-mm.ClientCPU.Seconds()/el)
			}
		}
	case began && !ended:
		mm = m.end()
	}
	var out rustOut
	if jerr := json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &out); jerr != nil {
		return r, nil, fmt.Errorf("rustdirect output %q (%v; stderr %s): %w", tailBytes(stdout.Bytes(), 300), werr, tailBytes(stderr.Bytes(), 500), jerr)
	}
	if out.PoolHash != "" && out.PoolHash != wantHash {
		return r, nil, fmt.Errorf("rustdirect payload pool hash %s, Go's is %s: the two payload generators differ", out.PoolHash, wantHash)
	}
	r.Records, r.Bytes = out.Records, out.Bytes
	r.finish(time.Duration(out.ElapsedNS), &mm)
	if len(out.LatNS) > 0 {
		h = newHist()
		for _, ns := range out.LatNS {
			_ = h.RecordValue(max(ns/1000, 1))
		}
		r.Latency, r.CDF = summarize(h)
	}
	if out.Error != "" {
		return r, h, fmt.Errorf("rustdirect: %s", out.Error)
	}
	if werr != nil {
		return r, h, fmt.Errorf("rustdirect: %w (stderr %s)", werr, tailBytes(stderr.Bytes(), 500))
	}
	return r, h, nil
}
