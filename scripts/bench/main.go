// Command bench runs kafka-iggy's side-by-side benchmarks and writes
// docs/BENCHMARKS.md with its plots (`make bench`; `make bench-smoke` for
// the seconds-long CI version).
//
// One load generator (franz-go kgo, HDR histograms) drives the same
// workloads against
//
//   - the sidecar (`kafka-iggy serve` as its own process) on the embedded
//     Iggy server (`kafka-iggy embedded-iggy`, also its own process);
//   - Apache Kafka, single-node KRaft, from scripts/kafka (Maven jars);
//   - franz-go's kfake, run as a child process of this binary;
//
// and the "direct" baseline sends the same payloads straight to the same
// embedded server with the project's Iggy client (bridge/iggy) and with the
// official Rust SDK (scripts/bench/rustdirect).
//
// Every throughput figure comes from steady-state runs (a warm-up, then a
// measured window of at least 5 s), each run at least twice with the
// targets interleaved, shown with its spread and the machine's load.
//
// Everything listens on 127.0.0.1. Every loop is bounded by a record count
// and a deadline, the whole run by -budget; every process the bench starts
// leads its own process group and is ended when the bench ends (also on
// failure or a signal, and by Pdeathsig if the bench is killed).
//
// Usage:
//
//	go run ./scripts/bench [-smoke] [-out docs] [-budget 22m] [-targets ...]
//	    [-measure 5s] [-warm 1.5s] [-passes 2] [-max-load 3] [-max-foreign 0.25]
//
// Used internally: `bench kfake ...` runs kfake as a child process.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "kfake":
			os.Exit(kfakeMain(os.Args[2:]))
		}
	}
	os.Exit(benchMain(os.Args[1:]))
}

// plan is what one bench run does: sizes, bounds and targets.
type plan struct {
	Smoke   bool          `json:"smoke"`
	Budget  time.Duration `json:"budget"`
	Targets []string      `json:"targets"`

	Partitions int `json:"partitions"`
	// Every throughput run (produce, consume, matched, many) is a
	// steady-state run: Warm of warm-up (its rate is the calibration), then
	// a measured window of at least Measure, long enough for MinRecords at
	// the calibrated rate, at most MaxMeasure.
	Warm       time.Duration `json:"warm_up"`
	Measure    time.Duration `json:"measure_min"`
	MaxMeasure time.Duration `json:"measure_max"`
	MinRecords int64         `json:"window_min_records"`
	Records    int           `json:"produce_records_max"` // upper bound per produce run
	// Passes: every figure is run this many times, the targets interleaved
	// (pass 1 in table order, pass 2 reversed, ...), and shown with its
	// spread.
	Passes int `json:"passes"`
	// A run is flagged when the 1-minute load average at its start is above
	// MaxLoad or the processes other than the bench's used more than
	// MaxForeign cores during it.
	MaxLoad    float64 `json:"max_load1"`
	MaxForeign float64 `json:"max_foreign_cores"`

	FillRecords int     `json:"consume_topic_records"`
	MatchedFrac float64 `json:"matched_fraction"` // offered load ÷ the direct Go saturation
	Many        int     `json:"many_connections"`
	ManyBuffer  int     `json:"many_buffered_per_client"`

	LatRecords  int           `json:"latency_records"`
	LatDur      time.Duration `json:"latency_max"`
	Warmup      int           `json:"latency_warmup"`
	Conns       int           `json:"producer_connections"`
	ConnRecords int           `json:"records_per_connection"`
	ConnDur     time.Duration `json:"connections_max"`
	Idle        int           `json:"idle_connections"`
	IdleDur     time.Duration `json:"idle_max"`
	Batch       int           `json:"direct_batch"`
	DirectConns int           `json:"direct_connections"`
	PollCount   int           `json:"direct_poll_count"`
	WarmRecords int           `json:"warmup_records"`
	WarmDur     time.Duration `json:"warmup_max"`

	// Only, when set, limits the run to these workloads (idle, produce,
	// produce1 = produce acks=1 none only, matched, many, consume,
	// latency, e2e, conns, rebalance, fetchsession, txn, principals, gnet): for A/B runs of one change.
	Only map[string]bool `json:"only,omitempty"`

	// The rebalance workload (rebalance.go): a topic of RebalPartitions
	// partitions, franz-go group members with session timeout RebalSession
	// and heartbeat interval RebalHeartbeat; every wait for the group to be
	// whole is bounded by RebalWait (the owner kill by RebalSession more).
	// Not part of -smoke.
	RebalPartitions int           `json:"rebalance_partitions,omitempty"`
	RebalSession    time.Duration `json:"rebalance_session_timeout,omitempty"`
	RebalHeartbeat  time.Duration `json:"rebalance_heartbeat_interval,omitempty"`
	RebalWait       time.Duration `json:"rebalance_wait_max,omitempty"`

	Gnet           bool          `json:"gnet_sweep"`
	GnetAll        bool          `json:"gnet_all_settings"`
	GnetWarm       time.Duration `json:"gnet_warm_up"`
	GnetMeasure    time.Duration `json:"gnet_measure"`
	GnetLatRecords int           `json:"gnet_latency_records"`
	GnetLatDur     time.Duration `json:"gnet_latency_max"`
}

func fullPlan() plan {
	return plan{
		Budget:     22 * time.Minute,
		Targets:    []string{tSidecar, tKafka, tKfake, tGo, tRust},
		Partitions: 4,
		Warm:       1500 * time.Millisecond, Measure: 5 * time.Second, MaxMeasure: 8 * time.Second, MinRecords: 500_000,
		Records: 20_000_000, Passes: 2, MaxLoad: 3.0, MaxForeign: 0.25,
		FillRecords: 200_000, MatchedFrac: 0.5, Many: 100, ManyBuffer: 1000,
		LatRecords: 20_000, LatDur: 4 * time.Second, Warmup: 200,
		Conns: 1000, ConnRecords: 20, ConnDur: 20 * time.Second,
		Idle: 10_000, IdleDur: 60 * time.Second,
		Batch: 100, DirectConns: 4, PollCount: 1000,
		WarmRecords: 50_000, WarmDur: 2 * time.Second,
		RebalPartitions: 6, RebalSession: 10 * time.Second, RebalHeartbeat: time.Second, RebalWait: 30 * time.Second,
		Gnet: true, GnetAll: true, GnetWarm: time.Second, GnetMeasure: 3 * time.Second,
		GnetLatRecords: 5000, GnetLatDur: 1500 * time.Millisecond,
	}
}

func smokePlan() plan {
	return plan{
		Smoke:      true,
		Budget:     90 * time.Second,
		Targets:    []string{tSidecar, tKfake, tGo},
		Partitions: 2,
		Warm:       150 * time.Millisecond, Measure: 300 * time.Millisecond, MaxMeasure: 300 * time.Millisecond,
		Records: 200_000, Passes: 2, MaxLoad: 3.0, MaxForeign: 0.25,
		FillRecords: 3000, MatchedFrac: 0.5, Many: 10, ManyBuffer: 200,
		LatRecords: 200, LatDur: 500 * time.Millisecond, Warmup: 20,
		Conns: 20, ConnRecords: 5, ConnDur: 5 * time.Second,
		Idle: 200, IdleDur: 10 * time.Second,
		Batch: 100, DirectConns: 2, PollCount: 1000,
		WarmRecords: 500, WarmDur: 300 * time.Millisecond,
		Gnet: true, GnetAll: false, GnetWarm: 100 * time.Millisecond, GnetMeasure: 300 * time.Millisecond,
		GnetLatRecords: 100, GnetLatDur: 300 * time.Millisecond,
	}
}

// does reports whether the plan runs workload w.
func (p plan) does(w string) bool { return p.Only == nil || p.Only[w] }

// win is the window of the plan's throughput runs.
func (p plan) win() windowSpec {
	return windowSpec{warm: p.Warm, measure: p.Measure, maxMeasure: p.MaxMeasure, minRecords: p.MinRecords}
}

// profLen is how long a CPU profile of a throughput run lasts: the warm-up
// and the shortest window (a longer window's tail goes unprofiled rather
// than every run waiting for the longest).
func (p plan) profLen() time.Duration { return p.Warm + p.Measure }

// runLen is the longest a throughput run's timed part lasts.
func (p plan) runLen() time.Duration { return p.Warm + max(p.Measure, p.MaxMeasure) }

func benchMain(args []string) int {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	smoke := fs.Bool("smoke", false, "the seconds-long CI version: small counts, no Kafka broker, no Rust build, output to a temporary directory unless -out is given")
	out := fs.String("out", "", "directory that receives BENCHMARKS.md and bench/*.png (default docs; a temporary directory with -smoke)")
	budget := fs.Duration("budget", 0, "upper bound of the whole run, builds included (default 22m; 90s with -smoke)")
	targets := fs.String("targets", "", "comma-separated targets: sidecar,kafka,kfake,direct-go,direct-rust (default: all; with -smoke sidecar,kfake,direct-go)")
	measure := fs.Duration("measure", 0, "shortest measured window of a throughput run (default 5s; 300ms with -smoke); the longest is 8s or this, whichever is more")
	warmFor := fs.Duration("warm", 0, "warm-up (calibration) before each throughput run's window (default 1.5s; 150ms with -smoke)")
	only := fs.String("only", "", "comma-separated workloads to run (idle,produce,produce1,matched,many,consume,latency,e2e,conns,rebalance,fetchsession,txn,principals,gnet; produce1 is produce acks=1 none only; rebalance and txn need the sidecar and/or kafka target and are not part of -smoke); default all")
	passes := fs.Int("passes", 0, "runs of every figure, interleaved (default 2)")
	maxLoad := fs.Float64("max-load", 0, "flag runs whose 1-minute load average at their start is above this (default 3.0)")
	maxForeign := fs.Float64("max-foreign", 0, "flag runs during which other processes used more than this many cores (default 0.25)")
	gnet := fs.Bool("gnet", true, "run the gnet settings sweep on the sidecar")
	binPath := fs.String("bin", "", "a kafka-iggy binary to run (default: build ./cmd/kafka-iggy within the budget)")
	envB := fs.String("env-b", "", "comma-separated NAME=VALUE environment variables for the sidecar-b process only (an A/B of a runtime setting such as GOGC=200; -bin-b defaults to -bin then)")
	tlsB := fs.Bool("tls-b", false, "run the sidecar-b target (from -bin-b, default -bin) with TLS on its Kafka listener and its clients over TLS: the B ÷ A table is the cost of TLS")
	saslB := fs.Bool("sasl-b", false, "run the sidecar-b target (from -bin-b, default -bin) with SASL SCRAM-SHA-512 and authenticate every connection of its clients (with -tls-b: SASL_SSL): the B ÷ A table is the cost of SASL")
	binB := fs.String("bin-b", "", "a second kafka-iggy binary for the sidecar-b target: with -targets sidecar,sidecar-b,... every run is an interleaved A/B of the two builds (the report adds a B ÷ A table)")
	keep := fs.Bool("keep", false, "keep the work directory (logs, Kafka data) and a -smoke report after the run")
	profDir := fs.String("profile", "", "(default: the run's work directory in a full run, none with -smoke) start the sidecar with admin.pprof and the embedded Iggy server with --pprof-addr and save CPU and allocation profiles of the sidecar's produce, consume and latency runs and of the Iggy server's produce runs (sidecar and direct-go) in this directory")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	p := fullPlan()
	if *smoke {
		p = smokePlan()
	}
	if *budget > 0 {
		p.Budget = *budget
	}
	if *targets != "" {
		p.Targets = nil
		for _, t := range strings.Split(*targets, ",") {
			t = strings.TrimSpace(t)
			if _, ok := targetLabel[t]; !ok {
				fmt.Fprintf(os.Stderr, "bench: unknown target %q (known: %s)\n", t, strings.Join(allTargets, ","))
				return 2
			}
			p.Targets = append(p.Targets, t)
		}
	}
	if *measure > 0 {
		p.Measure = *measure
		p.MaxMeasure = max(p.MaxMeasure, *measure)
	}
	if *warmFor > 0 {
		p.Warm = *warmFor
	}
	if *passes > 0 {
		p.Passes = *passes
	}
	if *only != "" {
		p.Only = map[string]bool{}
		for _, w := range strings.Split(*only, ",") {
			p.Only[strings.TrimSpace(w)] = true
		}
		if p.Only["produce"] {
			p.Only["produce1"] = true
		}
	}
	if *maxLoad > 0 {
		p.MaxLoad = *maxLoad
	}
	if *maxForeign > 0 {
		p.MaxForeign = *maxForeign
	}
	p.Gnet = p.Gnet && *gnet
	outDir := *out
	tempOut := false
	if outDir == "" {
		if p.Smoke {
			tempOut = true
			d, err := os.MkdirTemp("", "kafka-iggy-bench-smoke-")
			if err != nil {
				fmt.Fprintln(os.Stderr, "bench:", err)
				return 1
			}
			outDir = d
		} else {
			outDir = "docs"
		}
	}

	root, err := repoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	if !filepath.IsAbs(outDir) {
		outDir = filepath.Join(root, outDir)
	}
	b := &bench{plan: p, root: root, out: outDir, ps: &procs{}, started: time.Now(), args: os.Args}
	if *binPath != "" {
		abs, err := filepath.Abs(*binPath)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			return 2
		}
		b.bin = abs
	}
	if *binB != "" {
		abs, err := filepath.Abs(*binB)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			return 2
		}
		b.binB = abs
	}
	if *envB != "" {
		b.envB = strings.Split(*envB, ",")
		if b.binB == "" {
			b.binB = b.bin
		}
	}
	if *saslB {
		b.saslB = true
		if b.binB == "" {
			b.binB = b.bin
		}
	}
	if *tlsB {
		b.tlsB = true
		if b.binB == "" {
			b.binB = b.bin
		}
	}
	if b.has(tSidecarB) && b.binB == "" && !b.tlsB && !b.saslB {
		fmt.Fprintln(os.Stderr, "bench: the sidecar-b target needs -bin-b")
		return 2
	}
	if *profDir != "" {
		abs, err := filepath.Abs(*profDir)
		if err == nil {
			err = os.MkdirAll(abs, 0o755)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			return 2
		}
		b.profDir = abs
	}
	b.deadline = b.started.Add(p.Budget)
	sigCtx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithDeadline(sigCtx, b.deadline)
	defer cancel()
	b.ctx = ctx

	// The watchdog: whatever happens, the bench ends itself (and everything
	// it started) shortly after its budget.
	watchdog := time.AfterFunc(p.Budget+45*time.Second, func() {
		fmt.Fprintln(os.Stderr, "bench: watchdog: budget exceeded; stopping every process and exiting")
		b.ps.stopAll()
		os.Exit(3)
	})
	defer watchdog.Stop()

	work, err := os.MkdirTemp("", "kafka-iggy-bench-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	b.work = work
	if b.profDir == "" && !p.Smoke {
		// A full run always profiles, into its work directory: the report
		// shows where the CPU goes (writeProfiles).
		b.profDir = filepath.Join(work, "prof")
		if err := os.MkdirAll(b.profDir, 0o755); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			return 1
		}
	}
	status := b.run()
	if sigCtx.Err() != nil {
		b.note("interrupted by a signal: the figures are incomplete")
		status = 130
	}
	b.ps.stopAll()
	b.stopKafka()
	b.collectVersions()
	if err := b.writeOutputs(); err != nil {
		fmt.Fprintln(os.Stderr, "bench: writing the report:", err)
		status = 1
	}
	if *keep || status != 0 {
		fmt.Fprintf(os.Stderr, "bench: logs kept in %s\n", work)
	} else {
		os.RemoveAll(work)
	}
	if tempOut && status == 0 && !*keep {
		// The smoke run only proves the harness works end to end.
		os.RemoveAll(outDir)
		fmt.Fprintf(os.Stderr, "bench: done in %s; the report rendered (removed: -keep keeps it)\n", time.Since(b.started).Round(time.Second))
		return status
	}
	fmt.Fprintf(os.Stderr, "bench: done in %s; report %s\n", time.Since(b.started).Round(time.Second), filepath.Join(outDir, "BENCHMARKS.md"))
	return status
}

// repoRoot is the module root (the directory holding go.mod), found from
// the working directory.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && strings.Contains(string(b), "module github.com/kafka-iggy/kafka-iggy") {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", errors.New("run the bench from inside the kafka-iggy module (no go.mod found)")
		}
	}
}

// bench is the state of one run.
type bench struct {
	plan     plan
	root     string
	out      string
	work     string
	args     []string
	ctx      context.Context
	started  time.Time
	deadline time.Time
	ps       *procs

	bin      string   // kafka-iggy
	binB     string   // -bin-b: the sidecar-b target's kafka-iggy
	envB     []string // -env-b: extra environment of the sidecar-b process
	tlsB     bool     // -tls-b: sidecar-b serves TLS (tls.go)
	saslB    bool     // -sasl-b: sidecar-b authenticates with SCRAM (tls.go)
	self     string   // this binary
	rustBin  string
	profDir  string // -profile: where the sidecar's profiles go
	pool     [][]byte
	poolHash string
	lz4      float64

	embedded *server
	targets  map[string]*server
	kafkaDir string
	kafkaVer string

	seq      int
	results  []*Result
	notes    []string
	versions [][2]string
	machine  [][2]string
	loadAvg  [2]string
	before   *baseline // the report this run replaces (before.go)
}

func (b *bench) note(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	b.notes = append(b.notes, msg)
	fmt.Fprintln(os.Stderr, "bench: note:", msg)
}

func (b *bench) logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench [%5.1fs]: %s\n", time.Since(b.started).Seconds(), fmt.Sprintf(format, args...))
}

// left is the time until the budget ends, minus what writing the report
// and stopping the processes needs.
func (b *bench) left() time.Duration { return time.Until(b.deadline) - 15*time.Second }

func (b *bench) has(t string) bool {
	for _, x := range b.plan.Targets {
		if x == t {
			return true
		}
	}
	return false
}

// run sets everything up, runs every workload and returns the exit status:
// 0 when every run that was not skipped succeeded.
func (b *bench) run() int {
	b.pool = payloadPool(1024)
	b.poolHash = poolHash(b.pool)
	b.lz4 = lz4Ratio(b.pool)
	b.targets = map[string]*server{}
	b.loadAvg[0] = loadAvg()

	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	b.self = self
	if err := b.setup(); err != nil {
		fmt.Fprintln(os.Stderr, "bench: set-up failed:", err)
		return 1
	}
	b.runWorkloads()
	b.loadAvg[1] = loadAvg()
	failed := 0
	for _, r := range b.results {
		if r.Error != "" {
			failed++
		}
	}
	if failed > 0 {
		fmt.Fprintf(os.Stderr, "bench: %d run(s) failed\n", failed)
		return 1
	}
	if len(b.results) == 0 {
		fmt.Fprintln(os.Stderr, "bench: nothing ran")
		return 1
	}
	return 0
}

// setup builds what the targets need and starts them.
func (b *bench) setup() error {
	needIggy := b.has(tSidecar) || b.has(tGo) || b.has(tRust)
	if needIggy && b.bin == "" {
		b.logf("building kafka-iggy")
		ctx, cancel := context.WithTimeout(b.ctx, min(3*time.Minute, b.left()))
		b.bin = filepath.Join(b.work, "kafka-iggy")
		out, err := runBounded(ctx, b.root, []string{"CGO_ENABLED=0"}, "go", "build", "-o", b.bin, "./cmd/kafka-iggy")
		cancel()
		if err != nil {
			return fmt.Errorf("go build ./cmd/kafka-iggy: %w\n%s", err, tailBytes(out, 3000))
		}
	}
	if b.has(tRust) {
		b.logf("building the Rust SDK baseline (scripts/bench/rustdirect)")
		// At most 5 minutes (a cold build compiles the SDK and its
		// dependencies) and at most half of what is left.
		ctx, cancel := context.WithTimeout(b.ctx, min(5*time.Minute, b.left()/2))
		bin, err := buildRust(ctx, b.root)
		cancel()
		if err != nil {
			b.note("direct-rust skipped: %v", firstLine(err.Error()))
			b.drop(tRust)
		} else {
			b.rustBin = bin
		}
	}
	if needIggy {
		if err := b.startEmbedded(); err != nil {
			return err
		}
	}
	if b.has(tSidecar) {
		s, err := b.startSidecar(nil)
		if err != nil {
			return fmt.Errorf("sidecar: %w", err)
		}
		b.targets[tSidecar] = s
	}
	if b.has(tSidecarB) {
		s, err := b.startServeFrom(b.binB, tSidecarB, nil)
		if err != nil {
			return fmt.Errorf("sidecar-b: %w", err)
		}
		b.targets[tSidecarB] = s
	}
	if b.has(tKfake) {
		s, err := b.startKfake()
		if err != nil {
			return fmt.Errorf("kfake: %w", err)
		}
		b.targets[tKfake] = s
	}
	if b.has(tKafka) {
		s, err := b.startKafka()
		if err != nil {
			b.note("Apache Kafka skipped: %v", firstLine(err.Error()))
			b.drop(tKafka)
		} else {
			b.targets[tKafka] = s
		}
	}
	if b.has(tGo) {
		b.targets[tGo] = &server{name: tGo, iggyPath: true}
	}
	if b.has(tRust) {
		b.targets[tRust] = &server{name: tRust, iggyPath: true}
	}
	return nil
}

func (b *bench) drop(t string) {
	var keep []string
	for _, x := range b.plan.Targets {
		if x != t {
			keep = append(keep, x)
		}
	}
	b.plan.Targets = keep
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

func readString(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

func readInt(path string) int { return atoi(strings.TrimSpace(readString(path))) }

func atoi(s string) int {
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0
		}
		n = n*10 + int(c-'0')
	}
	return n
}

// loadAvg is the first three fields of /proc/loadavg.
func loadAvg() string {
	f := strings.Fields(readString("/proc/loadavg"))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// writeOutputs writes results.json, the plots and BENCHMARKS.md.
func (b *bench) writeOutputs() error {
	dir := filepath.Join(b.out, "bench")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	data, err := json.MarshalIndent(struct {
		Plan     plan        `json:"plan"`
		Started  time.Time   `json:"started"`
		Seconds  float64     `json:"seconds"`
		Machine  [][2]string `json:"machine"`
		Versions [][2]string `json:"versions"`
		Notes    []string    `json:"notes"`
		Results  []*Result   `json:"results"`
	}{b.plan, b.started, time.Since(b.started).Seconds(), b.machine, b.versions, b.notes, b.results}, "", "  ")
	if err != nil {
		return err
	}
	b.loadBaseline()
	if err := os.WriteFile(filepath.Join(dir, "results.json"), append(data, '\n'), 0o644); err != nil {
		return err
	}
	plots, err := b.writePlots(dir)
	if err != nil {
		return fmt.Errorf("plots: %w", err)
	}
	return os.WriteFile(filepath.Join(b.out, "BENCHMARKS.md"), []byte(b.markdown(plots)), 0o644)
}
