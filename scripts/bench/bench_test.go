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
	// The report it replaces: its figures become the "before" column.
	if err := os.MkdirAll(filepath.Join(dir, "bench"), 0o755); err != nil {
		t.Fatal(err)
	}
	old := `{"started":"2026-11-30T18:52:34Z","results":[{"workload":"produce","variant":"acks=1 none","target":"sidecar","records":1000,"bytes":1024000,"mb_per_s":0.5,"server_cpu_s":0.01}]}`
	if err := os.WriteFile(filepath.Join(dir, "bench", "results.json"), []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := b.writeOutputs(); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, "BENCHMARKS.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Summary", "FAILED: boom \\| bang", "bench/throughput.png", "bench/latency_cdf.png", "bench/gnet.png", "| sidecar → embedded Iggy |",
		"## Before and after", "| produce acks=1 none, sidecar MB/s | 0.5 | 1.0 | 2.05 | outside this run's range |", "## Targets", "## Every run"} {
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

// Passes alternate the target order (A B C, C B A) so a load drift hits
// every target alike.
func TestOrderInterleaves(t *testing.T) {
	ts := []string{"a", "b", "c"}
	if got := strings.Join(order(ts, 1), ""); got != "abc" {
		t.Fatal(got)
	}
	if got := strings.Join(order(ts, 2), ""); got != "cba" {
		t.Fatal(got)
	}
	if strings.Join(ts, "") != "abc" {
		t.Fatal("order changed its input")
	}
}

func mbRuns(v ...float64) []*Result {
	var out []*Result
	for _, x := range v {
		out = append(out, &Result{MBPerS: x, Records: 1})
	}
	return out
}

// A figure shows its spread; a ratio between figures whose ranges overlap is
// marked as noise, one between separated figures is not.
func TestSpreadAndNoise(t *testing.T) {
	a := statOf(mbRuns(100, 110), mbps)
	if a.mean != 105 || a.lo != 100 || a.hi != 110 || a.show("%.1f") != "105.0 ±5%" {
		t.Fatalf("%+v %q", a, a.show("%.1f"))
	}
	near := statOf(mbRuns(108, 120), mbps)
	far := statOf(mbRuns(200, 210), mbps)
	if got := showRatio(a, near); !strings.Contains(got, "(noise)") {
		t.Fatalf("overlapping ranges: %q", got)
	}
	if got := showRatio(far, a); got != "1.95×" {
		t.Fatalf("separated ranges: %q", got)
	}
	if s := statOf(mbRuns(), mbps); s.show("%.1f") != "–" {
		t.Fatal(s.show("%.1f"))
	}
	// Values below zero are "not measured" and left out.
	if s := statOf([]*Result{{ServerCPUs: -1, Bytes: 1e9}}, serverPerGB); s.n != 0 {
		t.Fatalf("%+v", s)
	}
}

// A target is met only when every run meets it, missed (by the mean's
// distance) when none does, and otherwise within the spread.
func TestGoalVerdict(t *testing.T) {
	g := goal{unit: "%.2f", atMost: true, target: 0.75}
	g.figure = stat{mean: 0.6, lo: 0.55, hi: 0.65, n: 2}
	if v := g.verdict(); v != "**met**" {
		t.Fatal(v)
	}
	g.figure = stat{mean: 1.0, lo: 0.9, hi: 1.1, n: 2}
	if v := g.verdict(); !strings.HasPrefix(v, "**missed** by 0.25, 33%") {
		t.Fatal(v)
	}
	g.figure = stat{mean: 0.8, lo: 0.7, hi: 0.9, n: 2}
	if v := g.verdict(); !strings.Contains(v, "within the spread") {
		t.Fatal(v)
	}
	lower := goal{unit: "%.2f×", target: 0.8, figure: stat{mean: 0.5, lo: 0.45, hi: 0.55, n: 2}}
	if v := lower.verdict(); !strings.HasPrefix(v, "**missed** by 0.30×") {
		t.Fatal(v)
	}
}

// A busy machine flags a run: the load at its start or other processes'
// CPU above the plan's thresholds.
func TestRunsAreFlagged(t *testing.T) {
	b := &bench{plan: plan{MaxLoad: 3, MaxForeign: 0.25}, started: time.Now()}
	quiet := &Result{Workload: wProduce, Target: tSidecar, Records: 10, Load1Before: 1.2, ForeignCores: 0.1}
	busy := &Result{Workload: wProduce, Target: tSidecar, Records: 10, Load1Before: 5, ForeignCores: 0.6}
	b.add(quiet)
	b.add(busy)
	if quiet.Flagged != "" || !strings.Contains(busy.Flagged, "load 5.00") || !strings.Contains(busy.Flagged, "0.60 cores") {
		t.Fatalf("quiet %q, busy %q", quiet.Flagged, busy.Flagged)
	}
	if got := loadCell([]*Result{quiet, busy}); got != "1.2, 5.0 / 0.60 ⚠1" {
		t.Fatal(got)
	}
}

// The window counts only what completes inside it, opens after the
// warm-up and sizes itself from the calibration.
func TestWindow(t *testing.T) {
	m := &meter{every: 10 * time.Millisecond}
	w, runCtx, cancel := openWindow(context.Background(), m, windowSpec{warm: 50 * time.Millisecond, measure: 100 * time.Millisecond, maxMeasure: 300 * time.Millisecond, minRecords: 1_000_000})
	defer cancel()
	if w.in(time.Now()) || !w.before(time.Now()) {
		t.Fatal("the window is open during the warm-up")
	}
	w.warmCount.Add(100) // 2000 records/s: a million needs far more than the maximum
	<-runCtx.Done()
	mm := w.wait()
	if !mm.Began {
		t.Fatal("the meter never began")
	}
	if d := w.seconds(); d != 300*time.Millisecond {
		t.Fatalf("window %s, want the maximum 300ms", d)
	}
	if w.in(time.Now()) {
		t.Fatal("the window is still open after its end")
	}
	if r := w.calRate(); r < 1999 || r > 2001 {
		t.Fatalf("calibration %.0f records/s", r)
	}
}

// With both sidecar builds the report reads B against A: a difference
// beyond both spreads is a win or a loss, an overlap is noise.
func TestABTable(t *testing.T) {
	b := &bench{plan: plan{Passes: 2, MatchedFrac: 0.5, Many: 100}, bin: "a", binB: "b", envB: []string{"GOGC=200"}}
	prod := func(tg string, mb, cpu float64) *Result {
		return &Result{Workload: wProduce, Variant: produceVariants[0].name, Target: tg, Records: 1000, Bytes: 1e9, MBPerS: mb, ServerCPUs: cpu}
	}
	b.results = []*Result{prod(tSidecar, 100, 1.0), prod(tSidecarB, 130, 1.02), prod(tSidecarB, 128, 0.98), prod(tSidecar, 102, 0.99)}
	var out strings.Builder
	b.writeAB(func(format string, args ...any) { fmt.Fprintf(&out, format, args...) })
	s := out.String()
	if !strings.Contains(s, "with GOGC=200") {
		t.Errorf("no B environment:\n%s", s)
	}
	if !strings.Contains(s, "| produce acks=1 none MB/s | 101.0 ±1% | 129.0 ±1% | 1.277 | B better, beyond the spread |") {
		t.Errorf("throughput row:\n%s", s)
	}
	if !strings.Contains(s, "| produce acks=1 none sidecar CPU s/GB | 0.995 ±1% | 1.000 ±2% | 1.005 | noise (ranges overlap) |") {
		t.Errorf("CPU row:\n%s", s)
	}
}
