// Command fault is the fault workload (issue 24): one `kafka-iggy
// embedded-iggy` with its data on disk and three `kafka-iggy serve` of one
// coordination domain, over loopback, with idempotent producers (franz-go
// and the Java client) and a franz-go consumer group spread over the
// sidecars, while a seeded schedule SIGKILLs and restarts sidecars,
// SIGSTOPs and SIGCONTs them, SIGKILLs and restarts the Iggy server (same
// data directory) and rolls all sidecars (SIGTERM, wait, restart). At the
// end a checker reads every partition back and reports acknowledged records
// lost, duplicates per producer and partition, committed offsets that moved
// backwards and partitions with two owners in one generation.
//
//	go run ./scripts/fault                    # make fault: 30 minutes, >= 50 faults, writes docs/FAULTS.md
//	go run ./scripts/fault -smoke             # make fault-smoke: about 2-3 minutes, 3 faults of each kind
//
// It exits 1 on any anomaly or run error, and kills every process it
// started when it ends, fails or is interrupted (Ctrl-C).
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

type options struct {
	bin        string
	smoke      bool
	duration   time.Duration
	seed       uint64
	perKind    int
	minFaults  int
	rate       int
	partitions int
	java       bool
	out        string
	note       string
	report     string
	keep       bool
}

func main() {
	var o options
	fs := flag.NewFlagSet("fault", flag.ExitOnError)
	fs.StringVar(&o.bin, "bin", "", "kafka-iggy binary (default: built from this tree into the run directory)")
	fs.BoolVar(&o.smoke, "smoke", false, "short run for CI: -per-kind faults of each kind, about 2-3 minutes")
	fs.DurationVar(&o.duration, "duration", 30*time.Minute, "length of the fault phase of a full run")
	fs.Uint64Var(&o.seed, "seed", 0, "seed of the fault schedule (default: from the clock; printed)")
	fs.IntVar(&o.perKind, "per-kind", 3, "faults of each kind in a smoke run")
	fs.IntVar(&o.minFaults, "min-faults", 50, "at least this many faults in a full run")
	fs.IntVar(&o.rate, "rate", 40, "records a second per producer")
	fs.IntVar(&o.partitions, "partitions", 6, "partitions of the topic")
	fs.BoolVar(&o.java, "java", true, "run the Java producer too (compiled by scripts/install-test-deps.sh)")
	fs.StringVar(&o.out, "out", "", "directory that receives FAULTS.md (make fault: docs; default none)")
	fs.StringVar(&o.note, "note", "", "a line for FAULTS.md (e.g. that this is not the 30-minute run)")
	fs.StringVar(&o.report, "report", "", "path of the JSON report (default: report.json in the run directory)")
	fs.BoolVar(&o.keep, "keep", false, "keep the run directory (logs, data, report.json) also when the run is clean (it is kept when the run fails or -out is set)")
	_ = fs.Parse(os.Args[1:])
	if o.seed == 0 {
		o.seed = uint64(time.Now().UnixNano())
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, o)
	stop()
	os.Exit(code)
}

// run returns the exit code: 0 clean, 1 anomalies or run errors, 2 the run
// could not be set up.
func run(ctx context.Context, o options) int {
	started := time.Now()
	runDir, err := os.MkdirTemp("", "kafka-iggy-fault-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "fault:", err)
		return 2
	}
	fmt.Printf("fault: seed %d (rerun with -seed %d); run directory %s\n", o.seed, o.seed, runDir)
	w := &workload{o: o, runDir: runDir, started: started}
	defer w.killAll()
	rep, err := w.run(ctx)
	w.killAll()
	if err != nil {
		fmt.Fprintf(os.Stderr, "fault: %v (logs in %s)\n", err, runDir)
		return 2
	}
	rep.summary(os.Stdout)
	path := o.report
	if path == "" {
		path = filepath.Join(runDir, "report.json")
	}
	if err := rep.writeJSON(path); err != nil {
		fmt.Fprintln(os.Stderr, "fault:", err)
		return 2
	}
	if o.out != "" {
		if err := rep.writeMarkdown(o.out, o.note); err != nil {
			fmt.Fprintln(os.Stderr, "fault:", err)
			return 2
		}
		fmt.Printf("fault: wrote %s\n", filepath.Join(o.out, "FAULTS.md"))
	}
	failed := rep.Anomalies > 0 || len(rep.Errors) > 0
	if !failed && !o.keep && o.out == "" {
		_ = os.RemoveAll(runDir) // a clean smoke run leaves nothing behind
		if o.report != "" {
			fmt.Printf("fault: JSON report %s\n", path)
		}
	} else {
		fmt.Printf("fault: JSON report %s; logs and data kept in %s\n", path, runDir)
	}
	if failed {
		fmt.Println("fault: FAILED")
		return 1
	}
	fmt.Println("fault: OK")
	return 0
}

// workload is one run.
type workload struct {
	o        options
	runDir   string
	started  time.Time
	iggy     *proc
	sidecars []*proc
	kafka    []string // the sidecars' Kafka addresses
	gos      []*goProducer
	javas    []*javaProducer
	members  []*member
	j        *journal
}

// killAll kills every process the run started (idempotent).
func (w *workload) killAll() {
	for _, p := range w.javas {
		p.kill()
	}
	for _, s := range w.sidecars {
		s.kill()
	}
	if w.iggy != nil {
		w.iggy.kill()
	}
}

const (
	topic = "fault"
	group = "fault-group"
)

func (w *workload) run(ctx context.Context) (*report, error) {
	o := w.o
	bin := o.bin
	if bin == "" {
		bin = filepath.Join(w.runDir, "kafka-iggy")
		fmt.Println("fault: building kafka-iggy")
		build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/kafka-iggy")
		if out, err := build.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("go build ./cmd/kafka-iggy (run from the repository root): %v\n%s", err, out)
		}
	}
	if o.java {
		if err := javaReady(); err != nil {
			return nil, err
		}
	}
	faults := plan(o.seed, o.smoke, o.perKind, o.minFaults, o.duration)
	// A watchdog: the whole run ends (every process killed) at the latest 15
	// minutes after the schedule's planned end, whatever hangs.
	var planned time.Duration
	for _, f := range faults {
		planned += f.Gap + f.Hold + estimate(f.Kind)
	}
	ctx, cancel := context.WithTimeout(ctx, planned+15*time.Minute)
	defer cancel()
	fmt.Printf("fault: schedule of %d faults:\n", len(faults))
	for _, f := range faults {
		fmt.Printf("  %s\n", f)
	}
	j, err := newJournal(filepath.Join(w.runDir, "events.jsonl"))
	if err != nil {
		return nil, err
	}
	w.j = j

	ports := make([]int, 10)
	for i := range ports {
		if ports[i], err = freePort(); err != nil {
			return nil, err
		}
	}
	w.iggy = newIggy(bin, w.runDir, filepath.Join(w.runDir, "iggy-data"), ports[0])
	if err := w.iggy.start(ctx); err != nil {
		return nil, err
	}
	for i := range 3 {
		s := newSidecar(bin, w.runDir, i, ports[0], ports[1+3*i], ports[2+3*i], ports[3+3*i])
		w.sidecars = append(w.sidecars, s)
		w.kafka = append(w.kafka, fmt.Sprintf("127.0.0.1:%d", ports[1+3*i]))
	}
	for _, s := range w.sidecars {
		if err := s.start(ctx); err != nil {
			return nil, err
		}
	}
	fmt.Printf("fault: iggy on 127.0.0.1:%d, sidecars on %s\n", ports[0], strings.Join(w.kafka, ", "))
	if err := createTopic(ctx, w.kafka[0], o.partitions); err != nil {
		return nil, err
	}

	// Clients: a franz-go producer and a group member on every sidecar, the
	// Java producer on sidecar 1.
	for i, addr := range w.kafka {
		p, err := startGoProducer(ctx, j, fmt.Sprintf("go%d", i), addr, topic, o.rate)
		if err != nil {
			return nil, err
		}
		w.gos = append(w.gos, p)
		m, err := startMember(ctx, j, fmt.Sprintf("member%d", i), i, addr, group, topic)
		if err != nil {
			return nil, err
		}
		w.members = append(w.members, m)
	}
	if o.java {
		p, err := startJavaProducer(j, w.runDir, "java1", w.kafka[1], topic, o.rate)
		if err != nil {
			return nil, err
		}
		w.javas = append(w.javas, p)
	}

	sctx, stopSampler := context.WithCancel(ctx)
	defer stopSampler()
	sampled, err := sampleOffsets(sctx, j, w.kafka, group)
	if err != nil {
		return nil, err
	}

	var runErrs []string
	warm := 10 * time.Second
	fmt.Printf("fault: clients running; first fault in %s\n", warm)
	if !sleepCtx(ctx, warm) {
		return nil, ctx.Err()
	}
	for _, f := range faults {
		if !sleepCtx(ctx, f.Gap) {
			return nil, ctx.Err()
		}
		r := w.inject(ctx, f)
		j.faultDone(r)
		fmt.Printf("fault: %s at %.1fs took %s%s\n", f, r.Start.Sub(w.started).Seconds(), r.End.Sub(r.Start).Round(100*time.Millisecond), noteText(r.Note))
		if r.Note != "" {
			runErrs = append(runErrs, fmt.Sprintf("%s: %s", f, r.Note))
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
	settle := 15 * time.Second
	fmt.Printf("fault: faults done; clients run %s more, then stop\n", settle)
	if !sleepCtx(ctx, settle) {
		return nil, ctx.Err()
	}
	for _, err := range stopAll(w.gos, w.javas, w.members, 2*time.Minute) {
		runErrs = append(runErrs, err.Error())
	}
	stopSampler()
	<-sampled
	j.close()

	fmt.Println("fault: reading every partition back")
	rctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	log, err := readBack(rctx, w.kafka[0], topic)
	if err != nil {
		return nil, err
	}
	if err := writeLog(filepath.Join(w.runDir, "log.tsv"), log); err != nil {
		return nil, err
	}
	f := check(log, j.acks, j.produceErrs, j.assigns, j.commits, j.samples, j.faults)
	rep := &report{Seed: o.seed, Smoke: o.smoke, Started: w.started, Duration: time.Since(w.started).Round(time.Second).String(),
		Topic: topic, Partitions: o.partitions, Group: group, Faults: j.faults, FaultCounts: map[string]int{},
		Consumed: j.consumed, CommitErrs: j.commitErrs, Errors: runErrs, Findings: f, Anomalies: f.anomalies(), RunDir: w.runDir}
	if rep.Errors == nil {
		rep.Errors = []string{}
	}
	for _, r := range j.faults {
		rep.FaultCounts[r.Kind]++
	}
	return rep, nil
}

func noteText(n string) string {
	if n == "" {
		return ""
	}
	return " (" + n + ")"
}

// sleepCtx waits d; false when ctx ended first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// inject runs one fault to its end (every process up again).
func (w *workload) inject(ctx context.Context, f fault) faultRun {
	r := faultRun{fault: f, Start: time.Now()}
	var errs []string
	restart := func(p *proc) {
		if err := p.start(ctx); err != nil {
			errs = append(errs, fmt.Sprintf("restart %s: %v", p.name, err))
		}
	}
	switch f.Kind {
	case faultSidecarKill:
		s := w.sidecars[f.Target]
		s.kill()
		sleepCtx(ctx, f.Hold)
		restart(s)
	case faultSidecarStop:
		s := w.sidecars[f.Target]
		s.signal(syscall.SIGSTOP)
		sleepCtx(ctx, f.Hold)
		s.signal(syscall.SIGCONT)
	case faultIggyKill:
		w.iggy.kill()
		sleepCtx(ctx, f.Hold)
		restart(w.iggy)
	case faultRolling:
		for i, s := range w.sidecars {
			if !s.terminate() {
				errs = append(errs, fmt.Sprintf("%s did not exit within 30s of SIGTERM", s.name))
			}
			restart(s)
			if i < len(w.sidecars)-1 {
				sleepCtx(ctx, f.Hold)
			}
		}
	}
	r.End = time.Now()
	r.Note = strings.Join(errs, "; ")
	return r
}

func createTopic(ctx context.Context, seed string, partitions int) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seed))
	if err != nil {
		return err
	}
	defer cl.Close()
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	resp, err := kadm.NewClient(cl).CreateTopic(cctx, int32(partitions), 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	return nil
}

// javaReady checks that the Java producer is compiled from this source (the
// stamp install-test-deps.sh writes: sha256 of scripts/e2e/java/pom.xml, which
// names the jars, and scripts/fault/java/FaultProducer.java).
func javaReady() error {
	if _, err := exec.LookPath("java"); err != nil {
		return errors.New("java is not on PATH; run `make test-deps` (or -java=false)")
	}
	var src []byte
	for _, f := range []string{"scripts/e2e/java/pom.xml", "scripts/fault/java/FaultProducer.java"} {
		b, err := os.ReadFile(f)
		if err != nil {
			return fmt.Errorf("read %s (run from the repository root): %w", f, err)
		}
		src = append(src, b...)
	}
	sum := sha256.Sum256(src)
	stamp, _ := os.ReadFile(filepath.Join(javaFaultDir(), "stamp"))
	if strings.TrimSpace(string(stamp)) != hex.EncodeToString(sum[:]) {
		return fmt.Errorf("the Java producer in %s is missing or compiled from another source; run `make test-deps` (or -java=false)", javaFaultDir())
	}
	return nil
}

// writeLog keeps the records read back (partition, offset, key), the
// evidence behind every duplicate and loss the report names.
func writeLog(path string, log []logRecord) error {
	var b strings.Builder
	b.WriteString("partition\toffset\tkey\n")
	for _, r := range log {
		fmt.Fprintf(&b, "%d\t%d\t%s\n", r.Partition, r.Offset, r.Key)
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}
