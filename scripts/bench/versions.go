package main

// What the report says ran where: the machine, and the versions of Go, the
// modules, kafka-iggy, Kafka and the Rust SDK.

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// collectVersions records the machine and the versions of everything that
// ran, for the report.
func (b *bench) collectVersions() {
	cpu := "?"
	for _, line := range strings.Split(readString("/proc/cpuinfo"), "\n") {
		if v, ok := strings.CutPrefix(line, "model name"); ok {
			cpu = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
			break
		}
	}
	mem := "?"
	for _, line := range strings.Split(readString("/proc/meminfo"), "\n") {
		if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			var kb int64
			fmt.Sscan(strings.TrimSpace(v), &kb)
			mem = fmt.Sprintf("%.1f GiB", float64(kb)/(1<<20))
		}
	}
	kernel := strings.TrimSpace(readString("/proc/sys/kernel/osrelease"))
	b.machine = [][2]string{
		{"CPU", fmt.Sprintf("%s, %d logical CPUs (GOMAXPROCS %d)", cpu, runtime.NumCPU(), runtime.GOMAXPROCS(0))},
		{"memory", mem},
		{"kernel", "Linux " + kernel},
		{"load average (1/5/15 min) at start / end", b.loadAvg[0] + " / " + b.loadAvg[1]},
		{"network", "loopback only (127.0.0.1)"},
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmdOut := func(name string, args ...string) string {
		out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
		if err != nil {
			return ""
		}
		return firstLine(string(out))
	}
	kv := [][2]string{}
	desc := cmdOut("git", "-C", b.root, "describe", "--tags", "--always", "--dirty")
	if desc == "" {
		desc = "unknown"
	}
	kv = append(kv, [2]string{"kafka-iggy", desc + " (`kafka-iggy serve` and `kafka-iggy embedded-iggy`, built from this tree)"})
	kv = append(kv, [2]string{"Go", runtime.Version()})
	// Module versions: from go.mod (the sidecar's own, such as gnet, are not
	// linked into the bench binary).
	for _, m := range [][2]string{
		{"github.com/panjf2000/gnet/v2", "gnet (the sidecar's event loop)"},
		{"github.com/twmb/franz-go", "franz-go (kgo, the load generator)"},
		{"github.com/twmb/franz-go/pkg/kfake", "kfake"},
		{"github.com/HdrHistogram/hdrhistogram-go", "hdrhistogram-go"},
		{"gonum.org/v1/plot", "gonum plot"},
	} {
		if v := modVersion(b.root, m[0]); v != "" {
			kv = append(kv, [2]string{m[1], v})
		}
	}
	if b.kafkaVer != "" {
		java := cmdOut("java", "-version")
		kv = append(kv, [2]string{"Apache Kafka", b.kafkaVer + " (KRaft, single node, scripts/kafka; " + java + ")"})
	}
	if b.rustBin != "" {
		kv = append(kv, [2]string{"Iggy Rust SDK", "iggy =0.11.0 (scripts/bench/rustdirect/Cargo.lock), " + cmdOut("rustc", "--version")})
	}
	b.versions = kv
}

// modVersion is the version go.mod requires of module path, or "".
func modVersion(root, path string) string {
	for _, line := range strings.Split(readString(filepath.Join(root, "go.mod")), "\n") {
		f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "require "))
		if len(f) >= 2 && f[0] == path {
			return f[1]
		}
	}
	return ""
}
