package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"testing"
	"time"
)

// The payload pool is what the Rust program builds too; its hash is the
// one rustdirect printed for the same pool (a change on either side must
// change both).
func TestPayloadPool(t *testing.T) {
	pool := payloadPool(1024)
	if len(pool) != poolSize {
		t.Fatalf("pool of %d payloads, want %d", len(pool), poolSize)
	}
	for i, p := range pool {
		if len(p) != 1024 {
			t.Fatalf("payload %d is %d bytes", i, len(p))
		}
	}
	if got, want := poolHash(pool), "a6ff269144d777b7"; got != want {
		t.Fatalf("pool hash %s, want %s (rustdirect's): keep payload.go and rustdirect/src/main.rs in step", got, want)
	}
	if string(pool[0][:6]) == string(pool[1][:6]) && string(pool[1][:6]) == string(pool[2][:6]) {
		t.Fatal("payloads look identical")
	}
	if r := lz4Ratio(pool); r < 1.2 || r > 10 {
		t.Fatalf("lz4 ratio %.2f: the payloads should compress like text", r)
	}
}

func TestFindMetric(t *testing.T) {
	text := `# HELP go_memstats_mallocs_total Total number of heap objects allocated.
# TYPE go_memstats_mallocs_total counter
go_memstats_mallocs_total_extra 1
go_memstats_mallocs_total 1.234567e+06
kafka_iggy_upstream_sessions_up{pool="default"} 4
`
	v, ok := findMetric(bufio.NewScanner(strings.NewReader(text)), "go_memstats_mallocs_total")
	if !ok || v != 1234567 {
		t.Fatalf("mallocs = %v, %v", v, ok)
	}
	v, ok = findMetric(bufio.NewScanner(strings.NewReader(text)), "kafka_iggy_upstream_sessions_up")
	if !ok || v != 4 {
		t.Fatalf("sessions = %v, %v", v, ok)
	}
	if _, ok := findMetric(bufio.NewScanner(strings.NewReader(text)), "absent"); ok {
		t.Fatal("found an absent metric")
	}
}

func TestEnvName(t *testing.T) {
	if got := envName("gnet.read_buffer_cap"); got != "KAFKA_IGGY_GNET__READ_BUFFER_CAP" {
		t.Fatal(got)
	}
}

func gnetResult(variant string, pass int, mbs, p99 float64) *Result {
	return &Result{Workload: wGnet, Variant: variant, Pass: pass, Target: tSidecar, Records: 1000, Bytes: 1 << 20,
		MBPerS: mbs, Latency: &Percentiles{P50: p99 / 4, P99: p99}}
}

// sweep builds A B B A results: default then other, then other then default.
func sweep(other string, d1, o1, o2, d2, p99 float64) []*Result {
	return []*Result{gnetResult("default", 1, d1, 1000), gnetResult(other, 1, o1, p99), gnetResult(other, 2, o2, p99), gnetResult("default", 2, d2, 1100)}
}

func TestGnetRecommendation(t *testing.T) {
	b := &bench{}
	b.results = sweep("num_event_loop=4", 100, 104, 103, 98, 900)
	if rec := b.gnetRecommendation(); !strings.Contains(rec, "keeping the defaults") {
		t.Fatalf("within the noise: %q", rec)
	}
	b.results = sweep("num_event_loop=4", 100, 130, 125, 98, 900)
	if rec := b.gnetRecommendation(); !strings.Contains(rec, "`num_event_loop=4` beat the default") {
		t.Fatalf("clear win: %q", rec)
	}
	// One lucky pass is not a win.
	b.results = sweep("num_event_loop=4", 100, 160, 95, 98, 900)
	if rec := b.gnetRecommendation(); !strings.Contains(rec, "keeping the defaults") {
		t.Fatalf("one pass: %q", rec)
	}
	// A throughput win that costs p99 is not recommended.
	b.results = sweep("lock_os_thread=true", 100, 130, 130, 98, 5000)
	if rec := b.gnetRecommendation(); !strings.Contains(rec, "keeping the defaults") {
		t.Fatalf("worse tail: %q", rec)
	}
	b.results = sweep("multicore=false (1 loop)", 100, 60, 65, 98, 900)
	if rec := b.gnetRecommendation(); !strings.Contains(rec, "Slower than the default in every pass: `multicore=false (1 loop)`") {
		t.Fatalf("slower: %q", rec)
	}
}

// The report and the plots render from results alone (no servers).
func TestReportRenders(t *testing.T) {
	dir := t.TempDir()
	p := smokePlan()
	b := &bench{plan: p, out: dir, started: time.Now(), args: []string{"bench", "-smoke"}, poolHash: "x", lz4: 2}
	lat := newHist()
	for i := int64(1); i <= 1000; i++ {
		_ = lat.RecordValue(100 + i)
	}
	pct, cdf := summarize(lat)
	for _, tg := range []string{tSidecar, tKfake, tGo} {
		v := produceVariants[0].name
		if tg == tGo {
			v = directVariant
		}
		b.results = append(b.results,
			&Result{Workload: wProduce, Variant: v, Target: tg, Records: 1000, Bytes: 1024000, Seconds: 1, RecPerS: 1000, MBPerS: 1.024, AllocsPerRec: 0.01, IggyConns: 4},
			&Result{Workload: wConsume, Target: tg, Records: 1000, Bytes: 1024000, Seconds: 1, RecPerS: 1000, MBPerS: 1.024, AllocsPerRec: -1, IggyConns: -1},
			&Result{Workload: wLatency, Target: tg, Records: 1000, Bytes: 1024000, Seconds: 1, Latency: pct, CDF: cdf},
		)
	}
	b.results = append(b.results,
		&Result{Workload: wProduce, Variant: produceVariants[1].name, Target: tKfake, Error: "boom | bang"},
		&Result{Workload: wIdle, Variant: "200 connections", Target: tSidecar, Records: 200, RSSBefore: 10 << 20, RSSWith: 11 << 20, RSSPerConn: 5000},
		gnetResult("default", 1, 100, 1000), gnetResult("default", 2, 90, 1000))
	b.collectVersions()
	if err := b.writeOutputs(); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, "BENCHMARKS.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Summary", "FAILED: boom \\| bang", "bench/throughput.png", "bench/latency_cdf.png", "bench/gnet.png", "| sidecar → embedded Iggy |"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("BENCHMARKS.md lacks %q", want)
		}
	}
	for _, f := range []string{"throughput.png", "latency_cdf.png", "gnet.png", "results.json"} {
		if st, err := os.Stat(filepath.Join(dir, "bench", f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// The report's profile tables come from `go tool pprof -top` on the saved
// CPU profiles: a real profile gives rows with the function names.
func TestPprofTop(t *testing.T) {
	file := filepath.Join(t.TempDir(), "produce-acks1-none.cpu.pprof")
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		t.Fatal(err)
	}
	var sink uint64
	for deadline := time.Now().Add(300 * time.Millisecond); time.Now().Before(deadline); {
		sink += busyWork(1 << 16)
	}
	pprof.StopCPUProfile()
	_ = f.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rows, total, err := pprofTop(ctx, file, 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) == 0 || len(rows) > 5 || total == "?" {
		t.Fatalf("rows %v, total %q (sink %d)", rows, total, sink)
	}
	var seen bool
	for _, r := range rows {
		seen = seen || strings.Contains(r[5], "busyWork")
	}
	if !seen {
		t.Errorf("busyWork not among the top functions: %v", rows)
	}

	var out strings.Builder
	b := &bench{profDir: filepath.Dir(file)}
	b.writeProfiles(func(format string, args ...any) { fmt.Fprintf(&out, format, args...) })
	if !strings.Contains(out.String(), "## Where the CPU goes") || !strings.Contains(out.String(), "busyWork") {
		t.Errorf("report section:\n%s", out.String())
	}
}

//go:noinline
func busyWork(n int) uint64 {
	var h uint64 = 1469598103934665603
	for i := range n {
		h = (h ^ uint64(i)) * 1099511628211
	}
	return h
}
