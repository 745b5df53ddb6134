package main

import (
	"context"
	"fmt"
	"math"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
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

// Formatting helpers.

func fmtUS(us float64) string {
	switch {
	case us >= 1e6:
		return fmt.Sprintf("%.2f s", us/1e6)
	case us >= 1000:
		return fmt.Sprintf("%.2f ms", us/1000)
	default:
		return fmt.Sprintf("%.0f µs", us)
	}
}

func fmtMiB(b int64) string {
	if b <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20))
}

func fmtNum(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.2f M", v/1e6)
	case v >= 1e4:
		return fmt.Sprintf("%.0f k", v/1e3)
	case v >= 1000:
		return fmt.Sprintf("%.1f k", v/1e3)
	default:
		return fmt.Sprintf("%.0f", v)
	}
}

func fmtRatio(a, b float64) string {
	if a <= 0 || b <= 0 || math.IsNaN(a/b) {
		return "–"
	}
	return fmt.Sprintf("%.2f×", a/b)
}

func fmtOpt(v float64, format string) string {
	if v < 0 {
		return "–"
	}
	return fmt.Sprintf(format, v)
}

// fmtAllocs shows allocations per record: small values keep 3 decimals
// (the sidecar works on batches, so it allocates far less than once per
// record).
func fmtAllocs(v float64) string {
	switch {
	case v < 0:
		return "–"
	case v < 1:
		return fmt.Sprintf("%.3f", v)
	default:
		return fmt.Sprintf("%.1f", v)
	}
}

func fmtConns(n int) string {
	if n < 0 {
		return "–"
	}
	return fmt.Sprint(n)
}

// status is what a table shows for a run without figures.
func status(r *Result) string {
	switch {
	case r == nil:
		return "not run"
	case r.Skipped != "":
		return "skipped: " + r.Skipped
	case r.Error != "":
		return "FAILED: " + mdEscape(firstLine(r.Error))
	}
	return "no records"
}

func mdEscape(s string) string {
	s = strings.ReplaceAll(s, "|", "\\|")
	if len(s) > 160 {
		s = s[:160] + "…"
	}
	return s
}

// any returns the result of a workload/variant/target, failed or not.
func (b *bench) anyResult(workload, variant, target string) *Result {
	for _, r := range b.results {
		if r.Workload == workload && r.Variant == variant && r.Target == target {
			return r
		}
	}
	return nil
}

func (b *bench) ran(t string) bool {
	for _, r := range b.results {
		if r.Target == t {
			return true
		}
	}
	return false
}

// markdown renders docs/BENCHMARKS.md.
func (b *bench) markdown(plots map[string]string) string {
	var w strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&w, format, args...) }
	mode := "full"
	if b.plan.Smoke {
		mode = "smoke (CI-sized counts: the figures only show the harness works)"
	}
	pl := b.plan
	p("# Benchmarks\n\n")
	p("<!-- Generated by `make bench` (scripts/bench): do not edit by hand; run it again. -->\n\n")
	p("The sidecar side by side with Apache Kafka, franz-go's kfake, and the direct path to the same Iggy server. ")
	p("Every figure comes from **one run** of the bench (%s, budget %s, %s wall time, mode: %s). ", b.started.UTC().Format("2006-01-02 15:04 UTC"), pl.Budget, time.Since(b.started).Round(time.Second), mode)
	p("Each throughput run is a **steady-state** run: %s of warm-up (its rate is the calibration that sizes the window), then a measured window of at least %s (long enough for %d records at the calibrated rate, at most %s); only what completes inside the window counts, and CPU is read at the window's edges. ",
		pl.Warm, pl.Measure, pl.MinRecords, max(pl.Measure, pl.MaxMeasure))
	p("**Every figure is run %d times, the targets interleaved** (pass 1 in table order, pass 2 reversed), and shown as the mean **±spread** (half the range between the runs, as a percentage of the mean). ", pl.Passes)
	p("A ratio marked *(noise)* compares two figures whose ranges overlap: the difference is smaller than the spread. ")
	p("This is a shared 2-core machine: the load generator, the servers and whatever else runs there share both cores. The *load* column gives the 1-minute load average at the start of each run and the most CPU that processes other than the bench's used during one (cores, from /proc/stat less the bench's own processes); ⚠N marks N runs taken above load %.1f or with others above %.2f cores. ", pl.MaxLoad, pl.MaxForeign)
	p("Throughput under such load moves with how the cores are shared; **CPU per GB** (each process's own utime+stime) and **delivered ÷ offered at a matched offered load** do not, and are the figures to trust first.\n\n")

	b.writeSummary(p)
	b.writeAB(p)
	b.writeTargets(p)
	b.writeBefore(p)
	b.writeTuning(p)

	p("## Machine, versions, command\n\n| | |\n|---|---|\n")
	for _, kv := range b.machine {
		p("| %s | %s |\n", kv[0], kv[1])
	}
	for _, kv := range b.versions {
		p("| %s | %s |\n", kv[0], kv[1])
	}
	p("| command | `%s` |\n", strings.Join(append([]string{"go run ./scripts/bench"}, b.args[1:]...), " "))
	p("| regenerate | `make bench` (full, ≤ 13 min budget; about 11 min on this machine); `make bench-smoke` (CI, about a minute, writes to a temporary directory) |\n\n")

	// Produce.
	p("## Produce throughput\n\n")
	p("franz-go producer, one client, records of 1 KiB (%d-byte payload, no key, no headers), `linger` 5 ms, topic of %d partitions, producing as fast as the client's buffer allows for the whole run. ",
		1024, pl.Partitions)
	p("acks=all uses the idempotent producer (franz-go's default); acks=1 turns idempotence off; everything else is franz-go's default (10,000 buffered records at most, 1 MB batches). ")
	p("*Ack latency* is each record's time from `Produce` to its acknowledgement under this load (acknowledgements inside the window), so it includes the wait in the producer's buffer. ")
	p("The payloads are text (words and numbers); lz4 shrinks them %.2f× in 64 KiB blocks.\n\n", b.lz4)
	if name := plots["throughput"]; name != "" {
		p("![throughput](bench/%s)\n\n", name)
	}
	for _, v := range produceVariants {
		p("### %s\n\n", v.name)
		p("| target | records/s | MB/s | vs Kafka | vs kfake | ack latency p50 / p99 (under load) | server CPU s/GB | Iggy CPU s/GB | allocs/record | server RSS max | Iggy connections | messages per Iggy batch | load / others |\n")
		p("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
		kafka := b.st(wProduce, v.name, tKafka, mbps)
		kfake := b.st(wProduce, v.name, tKfake, mbps)
		for _, t := range []string{tSidecar, tSidecarB, tKafka, tKfake} {
			if !b.ran(t) {
				continue
			}
			runs := b.runsOf(wProduce, v.name, t)
			r := meanResult(runs)
			if r == nil {
				p("| %s | %s |||||||||||||\n", targetLabel[t], status(b.anyResult(wProduce, v.name, t)))
				continue
			}
			mb := statOf(runs, mbps)
			lat := "–"
			if r.Latency != nil {
				lat = fmtUS(r.Latency.P50) + " / " + fmtUS(r.Latency.P99)
			}
			p("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", targetLabel[t], fmtNum(r.RecPerS), mb.show("%.1f"),
				showRatio(mb, kafka), showRatio(mb, kfake), lat,
				statOf(runs, serverPerGB).show("%.2f"), statOf(runs, iggyPerGB).show("%.2f"), fmtAllocs(r.AllocsPerRec), fmtMiB(r.ServerRSSMax), fmtConns(r.IggyConns),
				fmtOpt(r.IggyBatchMsgs, "%.0f"), loadCell(runs))
		}
		p("\n")
	}
	p("### Direct baseline: the same payloads straight to the embedded Iggy server\n\n")
	p("%d connections, each sending batches of %d messages to its own partition and waiting for each confirmation (lockstep, as both clients work), for the same warm-up and window. ",
		pl.DirectConns, pl.Batch)
	p("The sidecar's row is its acks=1 none run; an Iggy confirmation is what acks=1 waits for. *whole path* is the CPU of every process the record passes through on the server side: the sidecar plus the Iggy server for the sidecar, the Iggy server alone for the direct rows.\n\n")
	p("| path | records/s | MB/s | sidecar ÷ this | Iggy CPU s/GB | whole path CPU s/GB | client CPU s/GB | Iggy connections | load / others |\n|---|---|---|---|---|---|---|---|---|\n")
	sideRuns := b.runsOf(wProduce, produceVariants[0].name, tSidecar)
	sideMB := statOf(sideRuns, mbps)
	if side := meanResult(sideRuns); side != nil {
		p("| %s (acks=1 none) | %s | %s | 1.00× | %s | %s | %s | %s | %s |\n", targetLabel[tSidecar], fmtNum(side.RecPerS), sideMB.show("%.1f"),
			statOf(sideRuns, iggyPerGB).show("%.2f"), statOf(sideRuns, pathPerGB).show("%.2f"), fmtOpt(perGB(side.ClientCPUs, side.Bytes), "%.1f"), fmtConns(side.IggyConns), loadCell(sideRuns))
	}
	for _, t := range []string{tGo, tRust} {
		if !b.ran(t) {
			continue
		}
		runs := b.runsOf(wProduce, directVariant, t)
		r := meanResult(runs)
		if r == nil {
			p("| %s | %s ||||||||\n", targetLabel[t], status(b.anyResult(wProduce, directVariant, t)))
			continue
		}
		mb := statOf(runs, mbps)
		p("| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", targetLabel[t], fmtNum(r.RecPerS), mb.show("%.1f"), showRatio(sideMB, mb),
			statOf(runs, iggyPerGB).show("%.2f"), statOf(runs, pathPerGB).show("%.2f"), fmtOpt(perGB(r.ClientCPUs, r.Bytes), "%.1f"), fmtConns(r.IggyConns), loadCell(runs))
	}
	p("\n")

	b.writeMatched(p)
	b.writeMany(p)

	// Consume.
	p("## Consume (steady-state reads)\n\n")
	p("Each target reads a topic filled beforehand with %d records (the direct paths share one Iggy topic): a franz-go consumer without a group (`ConsumeTopics` + `AtStart`, fetch max wait 250 ms) that, once every partition is read to its high watermark, starts over from offset 0 (`SetOffsets`); the direct clients poll each partition from offset 0, %d messages per poll, and start over likewise. Only records that arrive inside the window count.\n\n", pl.FillRecords, pl.PollCount)
	p("| target | records/s | MB/s | vs Kafka | ÷ direct Go | server CPU s/GB | Iggy CPU s/GB | whole path CPU s/GB | allocs/record | load / others |\n|---|---|---|---|---|---|---|---|---|---|\n")
	kc := b.st(wConsume, "", tKafka, mbps)
	gc := b.st(wConsume, "", tGo, mbps)
	for _, t := range allTargets {
		if !b.ran(t) {
			continue
		}
		runs := b.runsOf(wConsume, "", t)
		r := meanResult(runs)
		if r == nil {
			p("| %s | %s |||||||||\n", targetLabel[t], status(b.anyResult(wConsume, "", t)))
			continue
		}
		mb := statOf(runs, mbps)
		p("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", targetLabel[t], fmtNum(r.RecPerS), mb.show("%.1f"), showRatio(mb, kc), showRatio(mb, gc),
			statOf(runs, serverPerGB).show("%.2f"), statOf(runs, iggyPerGB).show("%.2f"), statOf(runs, pathPerGB).show("%.2f"), fmtAllocs(r.AllocsPerRec), loadCell(runs))
	}
	p("\n")

	// Latency.
	p("## Closed-loop produce latency\n\n")
	p("One record at a time, each waited for before the next (franz-go: acks=all, idempotent, no linger; direct clients: one message per SEND_MESSAGES), %d warm-up records first, then up to %d records or %s, recorded in an HDR histogram (µs); %d runs per target, interleaved, percentiles averaged over the runs (±spread). *added* is the sidecar's figure less the direct Go client's.\n\n",
		pl.Warmup, pl.LatRecords, pl.LatDur, pl.Passes)
	if name := plots["latency"]; name != "" {
		p("![latency CDF](bench/%s)\n\n", name)
	}
	p("| target | p50 | p90 | p99 | p99.9 | max | samples | p50 vs Kafka | p99 vs Kafka | server CPU µs/record | load / others |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
	k50, k99 := b.st(wLatency, "", tKafka, p50), b.st(wLatency, "", tKafka, p99)
	for _, t := range allTargets {
		if !b.ran(t) {
			continue
		}
		runs := b.runsOf(wLatency, "", t)
		r := meanResult(runs)
		if r == nil || r.Latency == nil {
			p("| %s | %s ||||||||||\n", targetLabel[t], status(b.anyResult(wLatency, "", t)))
			continue
		}
		l := r.Latency
		s50, s99 := statOf(runs, p50), statOf(runs, p99)
		cpu := max(0, r.ServerCPUs) + r.IggyCPUs
		p("| %s | %s | %s | %s | %s | %s | %d | %s | %s | %.0f | %s |\n", targetLabel[t], s50.showUS(), fmtUS(l.P90), s99.showUS(), statOf(runs, p999).showUS(), fmtUS(l.Max), l.N,
			showRatio(s50, k50), showRatio(s99, k99), cpu*1e6/float64(r.Records), loadCell(runs))
	}
	if a50, a99 := b.added(p50), b.added(p99); a50.n > 0 {
		p("\n**Added by the sidecar** over the direct Go client: p50 %s (range %s to %s), p99 %s (range %s to %s), p99.9 %s.\n",
			fmtUS(a50.mean), fmtUS(a50.lo), fmtUS(a50.hi), fmtUS(a99.mean), fmtUS(a99.lo), fmtUS(a99.hi), fmtUS(b.added(p999).mean))
	}
	p("\n")

	// Many connections.
	p("## %d producer connections (a burst)\n\n", pl.Conns)
	p("%d franz-go producers (one client each: acks=1, linger 5 ms), each connected and warmed with one record first; then all produce %d records at once (one run per target: this run counts connections, not throughput). ", pl.Conns, pl.ConnRecords)
	p("The direct row opens as many Iggy connections (one client each) and sends each one's %d messages as one batch. ", pl.ConnRecords)
	p("Connections are counted from /proc/net/tcp at their peak during the produce phase: \"Kafka-side\" on the target's port, \"Iggy\" on the embedded server's port.\n\n")
	p("| target | connect phase | records/s | Kafka-side connections | Iggy connections | server RSS max | Iggy RSS max | server CPU s/GB |\n|---|---|---|---|---|---|---|---|\n")
	for _, t := range []string{tSidecar, tSidecarB, tKafka, tKfake, tGo} {
		if !b.ran(t) {
			continue
		}
		r := b.anyResult(wConns, fmt.Sprintf("%d producers × %d records", pl.Conns, pl.ConnRecords), t)
		if r == nil {
			continue
		}
		if !r.ok() {
			p("| %s | %s |||||||\n", targetLabel[t], status(r))
			continue
		}
		p("| %s | %.1f s | %s | %s | %s | %s | %s | %s |\n", targetLabel[t], r.ConnectSeconds, fmtNum(r.RecPerS), fmtConns(r.KafkaConns), fmtConns(r.IggyConns),
			fmtMiB(r.ServerRSSMax), fmtMiB(r.IggyRSSMax), fmtOpt(perGB(r.ServerCPUs, r.Bytes), "%.1f"))
	}
	p("\n")

	// Idle connections.
	p("## %d idle connections\n\n", pl.Idle)
	p("Plain TCP connections, each answered one ApiVersions v0 request (so the server has fully set it up), then held idle; the server's RSS (VmRSS) is read before and after a 1 s pause (one run per target, first thing after start-up).\n\n")
	p("| target | connections held | RSS before (idle) | RSS with | per connection | vs Kafka |\n|---|---|---|---|---|---|\n")
	ki := b.find(wIdle, fmt.Sprintf("%d connections", pl.Idle), tKafka)
	for _, t := range []string{tSidecar, tSidecarB, tKafka, tKfake} {
		if !b.ran(t) {
			continue
		}
		r := b.anyResult(wIdle, fmt.Sprintf("%d connections", pl.Idle), t)
		if r == nil {
			continue
		}
		if !r.ok() {
			p("| %s | %s |||||\n", targetLabel[t], status(r))
			continue
		}
		vk := "–"
		if ki != nil {
			vk = fmtRatio(r.RSSPerConn, ki.RSSPerConn)
		}
		p("| %s | %d | %s | %s | %.1f KiB | %s |\n", targetLabel[t], r.Records, fmtMiB(r.RSSBefore), fmtMiB(r.RSSWith), r.RSSPerConn/1024, vk)
	}
	p("\n")

	b.writeRebalance(p)

	b.writePeakRSS(p)

	b.writeGnet(p, plots)

	b.writeProfiles(p)

	p("## How it is measured\n\n")
	p("- **Processes.** Every server is its own process, started by the bench in a process group of its own and ended with it: the sidecar (`kafka-iggy serve`), the embedded Iggy server (`kafka-iggy embedded-iggy`, data in memory), kfake (`bench kfake`, the bench's own binary), Apache Kafka (`scripts/kafka/start.sh`: its server.properties and the heap `scripts/kafka/run.sh` gives the broker). The load generator is the bench process itself; the Rust baseline is `scripts/bench/rustdirect`, one process per run (it marks its own window on stderr and the bench reads CPU at those marks).\n")
	p("- **Sidecar configuration**, as `KAFKA_IGGY_*` environment variables, everything else at its default: %s.\n", b.sidecarConfigText())
	p("- **Steady state.** A throughput run starts producing (or reading) at once and keeps going through the warm-up and the window; acknowledgements (records received) are counted by the time they arrive, inside [window start, window end) only. The warm-up's rate is kept as the run's calibration (`calibration_records_per_s` in results.json) and sizes the window. After the window the producer flushes what it still holds (not counted) so the next run starts on a quiet server.\n")
	p("- **Interleaving and spread.** Pass 1 runs the targets in table order, pass 2 in reverse (A B C, C B A), so a drift of the machine's load over the bench hits every target alike. ±spread is half the range between the passes as a percentage of the mean; a ratio is *(noise)* when the two figures' ranges overlap. Every run is listed with its load at the end.\n")
	p("- **MB/s** counts payload bytes (10^6 per MB) acknowledged (produce) or received (consume) inside the window, over the window's length.\n")
	p("- **CPU s/GB**: user + system CPU seconds of the server process during the window (utime + stime of `/proc/<pid>/stat`: the process's own accounting, all threads, 10 ms ticks) per 10^9 payload bytes. *server* is the process the client talks to (the sidecar, Kafka, kfake); *Iggy* is the embedded server behind the sidecar or under the direct clients. The gateway's own cost is the sidecar's figure; sidecar + Iggy is the whole path, to set against the direct rows' Iggy figure.\n")
	p("- **Machine load**: `/proc/loadavg` (1 minute) at the start and the end of each window; *others* is the machine's busy time (`/proc/stat`: user, nice, system, irq, softirq, steal) during the window less the CPU of the bench and every process it runs, in cores. Runs above load %.1f or others %.2f cores are flagged (⚠) and listed.\n", pl.MaxLoad, pl.MaxForeign)
	p("- **RSS**: VmRSS of the process, sampled every 200 ms; *max* is the highest sample.\n")
	p("- **allocs/record**: the Go server's `go_memstats_mallocs_total` (its /metrics) over the window, less the cost of the scrapes, per record. Only Go servers (the sidecar, kfake) have it.\n")
	p("- **Iggy connections**: established TCP connections to the embedded server's port held by the process under test (the sidecar, the load generator, the Rust program), peak during the run: what the path really opens to Iggy.\n")
	p("- **messages per Iggy batch**: the sidecar's own `kafka_iggy_upstream_batch_messages` histogram (sum ÷ count over the run): how many Kafka records one SEND_MESSAGES carried. The direct runs send batches of %d by construction.\n", pl.Batch)
	p("- **Payloads**: a pool of %d distinct 1 KiB texts (words and six-digit numbers from a seeded xorshift generator), record *j* carrying payload *j* mod %d; the Rust program builds the same pool and the bench checks its hash (`%s`).\n", poolSize, poolSize, b.poolHash)
	p("- **Bounds**: every loop stops at its record bound (%d) or its deadline, whichever comes first; the whole run at its budget (%s), with a watchdog that ends every process shortly after.\n\n", pl.Records, pl.Budget)

	b.writeRuns(p)

	p("## Notes of this run\n\n")
	if len(b.notes) == 0 {
		p("- Nothing to note.\n")
	}
	for _, n := range b.notes {
		p("- %s\n", n)
	}
	flagged := 0
	for _, r := range b.results {
		if r.Error != "" {
			p("- FAILED: %s %s on %s (pass %d): %s\n", r.Workload, r.Variant, r.Target, r.Pass, mdEscape(firstLine(r.Error)))
		}
		if r.Note != "" {
			p("- %s %s on %s: %s\n", r.Workload, r.Variant, r.Target, r.Note)
		}
		if r.Flagged != "" {
			flagged++
		}
	}
	if flagged > 0 {
		p("- %d of %d runs were taken on a busy machine (⚠: load above %.1f or other processes above %.2f cores); their throughput is less trustworthy than their CPU per GB.\n", flagged, len(b.results), pl.MaxLoad, pl.MaxForeign)
	}
	skipped := 0
	for _, r := range b.results {
		if r.Skipped != "" {
			skipped++
		}
	}
	if skipped > 0 {
		p("- %d run(s) skipped (see the tables for why).\n", skipped)
	}
	return w.String()
}

// added is the sidecar's latency figure f less the direct Go client's.
func (b *bench) added(f func(*Result) float64) stat {
	return diff(b.st(wLatency, "", tSidecar, f), b.st(wLatency, "", tGo, f))
}

// writeMatched writes the matched-offered-load table.
func (b *bench) writeMatched(p func(string, ...any)) {
	v := fmt.Sprintf("%.0f%% of direct", b.plan.MatchedFrac*100)
	any := false
	for _, t := range allTargets {
		if b.anyResult(wMatched, v, t) != nil {
			any = true
		}
	}
	if !any {
		return
	}
	p("## Matched offered load\n\n")
	p("Every path offered the same load: %.0f%% of the direct Go client's saturation rate in the produce run above (its mean), 1 KiB records, acks=1, no compression. The Kafka-protocol targets get it from one franz-go producer paced to the rate (linger 5 ms); the direct paths from %d connections sending paced batches of %d. ", b.plan.MatchedFrac*100, b.plan.DirectConns, b.plan.Batch)
	p("*delivered ÷ offered* is below 1 when a path cannot carry the load. The CPU per GB here does not depend on how the two cores are shared: it is what each process spent for what it delivered.\n\n")
	p("| target | offered MB/s | delivered MB/s | delivered ÷ offered | ack latency p50 / p99 | server CPU s/GB | Iggy CPU s/GB | whole path CPU s/GB | server RSS max | load / others |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for _, t := range allTargets {
		if !b.ran(t) {
			continue
		}
		runs := b.runsOf(wMatched, v, t)
		r := meanResult(runs)
		if r == nil {
			if a := b.anyResult(wMatched, v, t); a != nil {
				p("| %s | %s |||||||||\n", targetLabel[t], status(a))
			}
			continue
		}
		lat := "–"
		if r.Latency != nil {
			lat = fmtUS(r.Latency.P50) + " / " + fmtUS(r.Latency.P99)
		}
		p("| %s | %.1f | %s | %s | %s | %s | %s | %s | %s | %s |\n", targetLabel[t], r.OfferedMBPerS, statOf(runs, mbps).show("%.1f"), statOf(runs, delivered).show("%.2f"), lat,
			statOf(runs, serverPerGB).show("%.2f"), statOf(runs, iggyPerGB).show("%.2f"), statOf(runs, pathPerGB).show("%.2f"), fmtMiB(r.ServerRSSMax), loadCell(runs))
	}
	p("\n")
}

// writeMany writes the many-connections steady-state table.
func (b *bench) writeMany(p func(string, ...any)) {
	v := fmt.Sprintf("%d connections", b.plan.Many)
	any := false
	for _, t := range allTargets {
		if b.anyResult(wMany, v, t) != nil {
			any = true
		}
	}
	if !any {
		return
	}
	p("## %d concurrent producer connections\n\n", b.plan.Many)
	p("%d producers at once, each on its own connection, producing as fast as they can through the warm-up and the window: franz-go clients (acks=1, linger 5 ms, at most %d buffered records each) for the Kafka-protocol targets; lockstep Iggy connections sending batches of %d for the direct paths.\n\n", b.plan.Many, b.plan.ManyBuffer, b.plan.Batch)
	p("| target | records/s | MB/s | vs Kafka | ack latency p50 / p99 | server CPU s/GB | Iggy CPU s/GB | whole path CPU s/GB | server RSS max | Kafka-side connections | Iggy connections | load / others |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	kafka := b.st(wMany, v, tKafka, mbps)
	for _, t := range allTargets {
		if !b.ran(t) {
			continue
		}
		runs := b.runsOf(wMany, v, t)
		r := meanResult(runs)
		if r == nil {
			if a := b.anyResult(wMany, v, t); a != nil {
				p("| %s | %s |||||||||||\n", targetLabel[t], status(a))
			}
			continue
		}
		lat := "–"
		if r.Latency != nil {
			lat = fmtUS(r.Latency.P50) + " / " + fmtUS(r.Latency.P99)
		}
		mb := statOf(runs, mbps)
		p("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", targetLabel[t], fmtNum(r.RecPerS), mb.show("%.1f"), showRatio(mb, kafka), lat,
			statOf(runs, serverPerGB).show("%.2f"), statOf(runs, iggyPerGB).show("%.2f"), statOf(runs, pathPerGB).show("%.2f"), fmtMiB(r.ServerRSSMax), fmtConns(r.KafkaConns), fmtConns(r.IggyConns), loadCell(runs))
	}
	p("\n")
}

// goals are the targets, checked against this run's figures.
func (b *bench) goals() []goal {
	v0 := produceVariants[0].name
	mv := fmt.Sprintf("%.0f%% of direct", b.plan.MatchedFrac*100)
	side := func(w, v string, f func(*Result) float64) stat { return b.st(w, v, tSidecar, f) }
	allocs := stat{}
	for _, v := range produceVariants {
		s := side(wProduce, v.name, func(r *Result) float64 { return r.AllocsPerRec })
		if s.n > 0 && (allocs.n == 0 || s.mean > allocs.mean) {
			allocs = s
		}
	}
	iv := fmt.Sprintf("%d connections", b.plan.Idle)
	idleBefore := side(wIdle, iv, func(r *Result) float64 { return float64(r.RSSBefore) / (1 << 20) })
	idleWith := side(wIdle, iv, func(r *Result) float64 { return float64(r.RSSWith) / (1 << 20) })
	return []goal{
		{"sidecar CPU per GB produced, matched load", side(wMatched, mv, serverPerGB), "%.2f core-s/GB", true, 0.75, "matched-load run"},
		{"sidecar CPU per GB produced, saturation", side(wProduce, v0, serverPerGB), "%.2f core-s/GB", true, 0.75, "produce acks=1 none"},
		{"sidecar CPU per GB fetched", side(wConsume, "", serverPerGB), "%.2f core-s/GB", true, 0.6, "consume run (saturation)"},
		{"produce ÷ direct Go", ratio(side(wProduce, v0, mbps), b.st(wProduce, directVariant, tGo, mbps)), "%.2f×", false, 0.80, "produce acks=1 none vs direct"},
		{"consume ÷ direct Go", ratio(side(wConsume, "", mbps), b.st(wConsume, "", tGo, mbps)), "%.2f×", false, 0.65, "consume run"},
		{"produce ÷ Apache Kafka", ratio(side(wProduce, v0, mbps), b.st(wProduce, v0, tKafka, mbps)), "%.2f×", false, 1.5, "produce acks=1 none"},
		{"consume ÷ Apache Kafka", ratio(side(wConsume, "", mbps), b.st(wConsume, "", tKafka, mbps)), "%.2f×", false, 1.0, "consume run"},
		{"added latency p50", b.added(p50), "%.0f µs", true, 50, "closed-loop latency, sidecar − direct Go"},
		{"added latency p99", b.added(p99), "%.0f µs", true, 150, "closed-loop latency, sidecar − direct Go"},
		{"allocations per produced record", allocs, "%.3f", true, 0.05, "produce, the worst variant"},
		{"RSS idle", idleBefore, "%.1f MiB", true, 20, "idle run, before the connections"},
		{fmt.Sprintf("RSS with %d idle connections", b.plan.Idle), idleWith, "%.1f MiB", true, 40, "idle run"},
	}
}

// writeTargets writes the targets, each met or missed by how much.
func (b *bench) writeTargets(p func(string, ...any)) {
	gs := b.goals()
	p("## Targets\n\n")
	p("Each target against this run's figure (mean of the passes, with the range between them). *met* means every run met it; *missed* means no run did, by the mean's distance; otherwise the target lies within the spread.\n\n")
	p("| target | figure | range | goal | verdict | from |\n|---|---|---|---|---|---|\n")
	for _, g := range gs {
		op := "≥"
		if g.atMost {
			op = "≤"
		}
		fig, rng := "–", "–"
		if g.figure.n > 0 {
			fig = fmt.Sprintf(g.unit, g.figure.mean)
			num := strings.Fields(g.unit)[0]
			rng = fmt.Sprintf(num+" – "+num, g.figure.lo, g.figure.hi)
		}
		p("| %s | %s | %s | %s %s | %s | %s |\n", g.what, fig, rng, op, fmt.Sprintf(g.unit, g.target), g.verdict(), g.where)
	}
	p("\n")
}

// writeAB writes the A/B table when the run had both sidecar builds: each
// figure of B against A with both spreads, and whether B's difference is
// beyond the spread (a win or a loss) or noise.
func (b *bench) writeAB(p func(string, ...any)) {
	if !b.ran(tSidecarB) || !b.ran(tSidecar) {
		return
	}
	v0 := produceVariants[0].name
	mv := fmt.Sprintf("%.0f%% of direct", b.plan.MatchedFrac*100)
	mc := fmt.Sprintf("%d connections", b.plan.Many)
	type fig struct {
		what, w, v string
		f          func(*Result) float64
		format     string
		higher     bool // higher is better
	}
	figs := []fig{
		{"produce acks=1 none MB/s", wProduce, v0, mbps, "%.1f", true},
		{"produce acks=1 none sidecar CPU s/GB", wProduce, v0, serverPerGB, "%.3f", false},
		{"produce acks=1 none allocs/record", wProduce, v0, func(r *Result) float64 { return r.AllocsPerRec }, "%.3f", false},
		{"produce acks=1 lz4 MB/s", wProduce, produceVariants[1].name, mbps, "%.1f", true},
		{"produce acks=all none MB/s", wProduce, produceVariants[2].name, mbps, "%.1f", true},
		{"matched load delivered ÷ offered", wMatched, mv, delivered, "%.3f", true},
		{"matched load sidecar CPU s/GB", wMatched, mv, serverPerGB, "%.3f", false},
		{"matched load Iggy CPU s/GB", wMatched, mv, iggyPerGB, "%.3f", false},
		{"many producers MB/s", wMany, mc, mbps, "%.1f", true},
		{"many producers sidecar CPU s/GB", wMany, mc, serverPerGB, "%.3f", false},
		{"consume MB/s", wConsume, "", mbps, "%.1f", true},
		{"consume sidecar CPU s/GB", wConsume, "", serverPerGB, "%.3f", false},
		{"latency p50 µs", wLatency, "", p50, "%.0f", false},
		{"latency p99 µs", wLatency, "", p99, "%.0f", false},
		{"latency p99.9 µs", wLatency, "", p999, "%.0f", false},
	}
	envB := ""
	if len(b.envB) > 0 {
		envB = " with " + strings.Join(b.envB, " ")
	}
	p("## A/B: sidecar B (%s%s) against A (%s)\n\n", b.binB, envB, b.bin)
	p("Both sidecars ran on the same Iggy server, interleaved with every other target (A B … B A), %d runs each. *beyond the spread* means the two ranges do not overlap.\n\n", b.plan.Passes)
	p("| figure | A | B | B ÷ A | reading |\n|---|---|---|---|---|\n")
	for _, f := range figs {
		a, bb := b.st(f.w, f.v, tSidecar, f.f), b.st(f.w, f.v, tSidecarB, f.f)
		if a.n == 0 || bb.n == 0 {
			continue
		}
		reading := "noise (ranges overlap)"
		if !a.overlaps(bb) {
			better := bb.mean > a.mean
			if !f.higher {
				better = !better
			}
			reading = "B worse, beyond the spread"
			if better {
				reading = "B better, beyond the spread"
			}
		}
		ratioS := "–"
		if a.mean != 0 {
			ratioS = fmt.Sprintf("%.3f", bb.mean/a.mean)
		}
		p("| %s | %s | %s | %s | %s |\n", f.what, a.show(f.format), bb.show(f.format), ratioS, reading)
	}
	p("\n")
}

// writePeakRSS lists the sidecar's peak RSS per workload beside its memory
// budget (limits.memory_bytes), and the embedded Iggy server's.
func (b *bench) writePeakRSS(p func(string, ...any)) {
	type row struct {
		name               string
		side, iggy, budget int64
	}
	var rows []*row
	by := map[string]*row{}
	for _, r := range b.results {
		if r.Target != tSidecar || (!r.ok() && r.Workload != wIdle) || r.ServerRSSMax <= 0 {
			continue
		}
		name := r.Workload
		if r.Variant != "" {
			name += " " + r.Variant
		}
		w := by[name]
		if w == nil {
			w = &row{name: name}
			by[name] = w
			rows = append(rows, w)
		}
		w.side = max(w.side, r.ServerRSSMax, r.RSSWith)
		w.iggy = max(w.iggy, r.IggyRSSMax)
		w.budget = max(w.budget, r.BudgetBytes)
	}
	if len(rows) == 0 {
		return
	}
	p("## Peak RSS per workload (sidecar)\n\n")
	p("The sidecar's highest VmRSS sample over every run of a workload (sampled every 200 ms), beside its memory budget (`limits.memory_bytes`, read from its `kafka_iggy_memory_budget_bytes` gauge; the bench runs it at its default), and the embedded Iggy server's peak behind it.\n\n")
	p("| workload | sidecar peak RSS | memory budget | peak ÷ budget | Iggy peak RSS |\n|---|---|---|---|---|\n")
	for _, w := range rows {
		budget, frac := "–", "–"
		if w.budget > 0 {
			budget = fmtMiB(w.budget)
			frac = fmt.Sprintf("%.0f%%", float64(w.side)/float64(w.budget)*100)
		}
		p("| %s | %s | %s | %s | %s |\n", w.name, fmtMiB(w.side), budget, frac, fmtMiB(w.iggy))
	}
	p("\n")
}

// writeRuns lists every run with the machine's load.
func (b *bench) writeRuns(p func(string, ...any)) {
	p("## Every run\n\n")
	p("In the order they ran: the window's length, the figure, the 1-minute load average at the window's start and end, the CPU other processes used during it, and why it was flagged.\n\n")
	p("<details><summary>%d runs</summary>\n\n| # | workload | variant | target | pass | window | MB/s | load before → after | others (cores) | flagged |\n|---|---|---|---|---|---|---|---|---|---|\n", len(b.results))
	for i, r := range b.results {
		fig := status(r)
		switch {
		case r.ok() && r.Workload == wRebalance:
			fig = fmt.Sprintf("%.2f s (rebalance)", r.RebalanceS)
		case r.ok():
			fig = fmt.Sprintf("%.1f", r.MBPerS)
		}
		others := "–"
		if r.ForeignCores >= 0 {
			others = fmt.Sprintf("%.2f", r.ForeignCores)
		}
		p("| %d | %s | %s | %s | %d | %.1f s | %s | %.2f → %.2f | %s | %s |\n", i+1, r.Workload, r.Variant, r.Target, r.Pass, r.Seconds, fig, r.Load1Before, r.Load1After, others, r.Flagged)
	}
	p("\n</details>\n\n")
}

// sidecarConfigText lists the settings every sidecar of the run got.
func (b *bench) sidecarConfigText() string {
	s := b.sidecarSettings("127.0.0.1:<free port>", "127.0.0.1:<free port>", nil)
	s["iggy.address"] = "<the embedded server>"
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("`%s=%s`", k, s[k]))
	}
	return strings.Join(parts, ", ") + " (no connection cap: the idle run opens " + fmt.Sprint(b.plan.Idle) + " connections)"
}

// writeSummary writes the headline figures, each with its spread.
func (b *bench) writeSummary(p func(string, ...any)) {
	p("## Summary\n\n")
	n := 0
	line := func(format string, args ...any) {
		p("- "+format+"\n", args...)
		n++
	}
	v0 := produceVariants[0].name
	side := b.st(wProduce, v0, tSidecar, mbps)
	if side.n > 0 {
		parts := []string{}
		for _, t := range []string{tKafka, tKfake} {
			if r := b.st(wProduce, v0, t, mbps); r.n > 0 {
				parts = append(parts, fmt.Sprintf("%s of %s (%s MB/s)", showRatio(side, r), targetLabel[t], r.show("%.1f")))
			}
		}
		for _, t := range []string{tGo, tRust} {
			if r := b.st(wProduce, directVariant, t, mbps); r.n > 0 {
				parts = append(parts, fmt.Sprintf("%s of the %s path (%s MB/s)", showRatio(side, r), targetLabel[t], r.show("%.1f")))
			}
		}
		line("**Produce** (acks=1, none, saturation): the sidecar did %s MB/s, %s.", side.show("%.1f"), strings.Join(parts, ", "))
		direct := ""
		if r := b.st(wProduce, directVariant, tGo, iggyPerGB); r.n > 0 {
			direct = fmt.Sprintf("; the direct Go path cost the Iggy server %s", r.show("%.2f"))
		}
		line("**CPU per GB produced** at saturation: the sidecar %s core-s/GB, the Iggy server behind it %s%s.",
			b.st(wProduce, v0, tSidecar, serverPerGB).show("%.2f"), b.st(wProduce, v0, tSidecar, iggyPerGB).show("%.2f"), direct)
	}
	mv := fmt.Sprintf("%.0f%% of direct", b.plan.MatchedFrac*100)
	if s := b.st(wMatched, mv, tSidecar, serverPerGB); s.n > 0 {
		r := b.find(wMatched, mv, tSidecar)
		d := ""
		if g := b.st(wMatched, mv, tGo, iggyPerGB); g.n > 0 {
			d = fmt.Sprintf("; the direct Go path at the same load: Iggy %s core-s/GB, delivered ÷ offered %s", g.show("%.2f"), b.st(wMatched, mv, tGo, delivered).show("%.2f"))
		}
		line("**Matched offered load** (%.1f MB/s offered to every path): the sidecar delivered %s of it at %s core-s/GB (Iggy behind it %s)%s.",
			r.OfferedMBPerS, b.st(wMatched, mv, tSidecar, delivered).show("%.2f"), s.show("%.2f"), b.st(wMatched, mv, tSidecar, iggyPerGB).show("%.2f"), d)
	}
	if s := b.st(wConsume, "", tSidecar, mbps); s.n > 0 {
		parts := []string{}
		for _, t := range []string{tKafka, tGo} {
			if r := b.st(wConsume, "", t, mbps); r.n > 0 {
				parts = append(parts, fmt.Sprintf("%s of %s's", showRatio(s, r), targetLabel[t]))
			}
		}
		line("**Consume** (steady-state reads): sidecar %s MB/s at %s core-s/GB, %s.", s.show("%.1f"), b.st(wConsume, "", tSidecar, serverPerGB).show("%.2f"), strings.Join(parts, ", "))
	}
	if s := b.st(wLatency, "", tSidecar, p50); s.n > 0 {
		parts := []string{}
		for _, t := range []string{tKafka, tKfake, tGo, tRust} {
			if r := b.st(wLatency, "", t, p50); r.n > 0 {
				parts = append(parts, fmt.Sprintf("%s %s / %s", targetLabel[t], r.showUS(), b.st(wLatency, "", t, p99).showUS()))
			}
		}
		add := ""
		if a := b.added(p50); a.n > 0 {
			add = fmt.Sprintf(" The sidecar adds %s at p50 and %s at p99 over the direct Go client.", fmtUS(a.mean), fmtUS(b.added(p99).mean))
		}
		line("**Latency** p50 / p99, closed loop: sidecar %s / %s (p99.9 %s); %s.%s", s.showUS(), b.st(wLatency, "", tSidecar, p99).showUS(), b.st(wLatency, "", tSidecar, p999).showUS(), strings.Join(parts, "; "), add)
	}
	mc := fmt.Sprintf("%d connections", b.plan.Many)
	if s := b.st(wMany, mc, tSidecar, mbps); s.n > 0 {
		k := ""
		if r := b.st(wMany, mc, tKafka, mbps); r.n > 0 {
			k = fmt.Sprintf(", %s of Kafka's", showRatio(s, r))
		}
		line("**%d concurrent producers**: the sidecar did %s MB/s%s at %s core-s/GB over %s Iggy connections.", b.plan.Many, s.show("%.1f"), k,
			b.st(wMany, mc, tSidecar, serverPerGB).show("%.2f"), fmtConns(b.find(wMany, mc, tSidecar).IggyConns))
	}
	cv := fmt.Sprintf("%d producers × %d records", b.plan.Conns, b.plan.ConnRecords)
	if s := b.find(wConns, cv, tSidecar); s != nil {
		d := ""
		if g := b.find(wConns, cv, tGo); g != nil {
			d = fmt.Sprintf(" (the direct Go clients opened %s)", fmtConns(g.IggyConns))
		}
		line("**%d producer connections** through the sidecar used %s Iggy connections%s.", b.plan.Conns, fmtConns(s.IggyConns), d)
	}
	iv := fmt.Sprintf("%d connections", b.plan.Idle)
	if s := b.find(wIdle, iv, tSidecar); s != nil {
		k := ""
		if r := b.find(wIdle, iv, tKafka); r != nil {
			k = fmt.Sprintf(" (Kafka: %.1f KiB)", r.RSSPerConn/1024)
		}
		line("**Idle connections** cost the sidecar %.1f KiB of RSS each%s; idle RSS %s, %s with %d connections.", s.RSSPerConn/1024, k, fmtMiB(s.RSSBefore), fmtMiB(s.RSSWith), b.plan.Idle)
	}
	if line1 := b.rebalanceSummary(); line1 != "" {
		line("%s", line1)
	}
	if rec := b.gnetRecommendation(); rec != "" {
		line("**gnet**: %s", rec)
	}
	if n == 0 {
		p("- No sidecar figures in this run (see the notes at the end).\n")
	}
	p("\n")
}

// gnetAgg is one gnet setting over the passes of the sweep.
type gnetAgg struct {
	name         string
	runs         []*Result // the successful runs
	failed       []*Result // failed or skipped runs
	mean, lo, hi float64   // MB/s
	p50, p99max  float64   // µs: mean p50, worst p99
	cpuPerGB     float64
	allocs       float64
	rssMax       int64
}

// gnetAggregates folds the sweep's results per setting, in sweep order.
func (b *bench) gnetAggregates() []*gnetAgg {
	var out []*gnetAgg
	by := map[string]*gnetAgg{}
	for _, r := range b.results {
		if r.Workload != wGnet {
			continue
		}
		a := by[r.Variant]
		if a == nil {
			a = &gnetAgg{name: r.Variant, lo: math.Inf(1)}
			by[r.Variant] = a
			out = append(out, a)
		}
		if !r.ok() {
			a.failed = append(a.failed, r)
			continue
		}
		a.runs = append(a.runs, r)
	}
	for _, a := range out {
		n := float64(len(a.runs))
		if n == 0 {
			a.lo = 0
			continue
		}
		var cpu, allocs float64
		var bytes int64
		for _, r := range a.runs {
			a.mean += r.MBPerS / n
			a.lo = math.Min(a.lo, r.MBPerS)
			a.hi = math.Max(a.hi, r.MBPerS)
			if r.Latency != nil {
				a.p50 += r.Latency.P50 / n
				a.p99max = math.Max(a.p99max, r.Latency.P99)
			}
			cpu += max(0, r.ServerCPUs)
			bytes += r.Bytes
			allocs += r.AllocsPerRec / n
			a.rssMax = max(a.rssMax, r.ServerRSSMax)
		}
		a.cpuPerGB = perGB(cpu, bytes)
		a.allocs = allocs
	}
	return out
}

// gnetRecommendation reads the sweep. The noise band is the median spread
// between the two passes of a setting (at least 5 %). A setting is
// recommended over the default only when every one of its runs beat every
// default run by more than the band and its worst p99 is not worse than
// the default's beyond the band; anything less is within this machine's
// noise.
func (b *bench) gnetRecommendation() string {
	aggs := b.gnetAggregates()
	var def *gnetAgg
	for _, a := range aggs {
		if a.name == "default" {
			def = a
		}
	}
	if def == nil || len(def.runs) == 0 || len(aggs) < 2 {
		return ""
	}
	// The noise band: the median spread between the passes of a setting
	// (at least 5 %).
	var spreads []float64
	for _, a := range aggs {
		if len(a.runs) > 1 && a.mean > 0 {
			spreads = append(spreads, (a.hi-a.lo)/a.mean)
		}
	}
	band := 0.05
	if len(spreads) > 0 {
		sort.Float64s(spreads)
		band = math.Max(band, spreads[len(spreads)/2])
	}
	var best *gnetAgg
	var slower []string
	for _, a := range aggs {
		if a == def || len(a.runs) == 0 || len(a.runs) < len(def.runs) {
			continue
		}
		if a.lo > def.hi*(1+band) && (def.p99max == 0 || a.p99max <= def.p99max*(1+band)) {
			if best == nil || a.mean > best.mean {
				best = a
			}
		}
		if a.hi < def.lo*(1-band) {
			slower = append(slower, "`"+a.name+"`")
		}
	}
	var msg string
	if best == nil {
		msg = fmt.Sprintf("no setting beat the default in every pass by more than the noise band (±%.0f%%, the median spread between a setting's two passes) without a worse p99. The data supports keeping the defaults (multicore, one loop per GOMAXPROCS, level-triggered epoll, no LockOSThread, 64 KiB buffer caps).", band*100)
	} else {
		msg = fmt.Sprintf("`%s` beat the default in every pass by more than the noise band (±%.0f%%): mean %.1f against %.1f MB/s (+%.0f%%), without a worse p99. It is the candidate to adopt, once a second `make bench` agrees.", best.name, band*100, best.mean, def.mean, (best.mean/def.mean-1)*100)
	}
	if len(slower) > 0 {
		msg += fmt.Sprintf(" Slower than the default in every pass: %s.", strings.Join(slower, ", "))
	}
	return msg
}

func (b *bench) writeGnet(p func(string, ...any), plots map[string]string) {
	aggs := b.gnetAggregates()
	if len(aggs) == 0 {
		return
	}
	p("## gnet loop settings (sidecar)\n\n")
	p("The sidecar restarted under each setting (config keys `gnet.*` through `KAFKA_IGGY_GNET__*`, everything else default), then ran a steady-state produce run (acks=1 none, %s warm-up, %s window: shorter than the main runs to keep `make bench` bounded) and a closed-loop latency run (up to %d records or %s). ",
		b.plan.GnetWarm, b.plan.GnetMeasure, b.plan.GnetLatRecords, b.plan.GnetLatDur)
	p("The sweep makes two passes, the second in reverse order, so every setting has two runs and a drift of the machine's load hits all of them alike. ")
	p("The default is multicore (one loop per GOMAXPROCS = %d here), level-triggered epoll, no LockOSThread, 64 KiB read/write buffer caps.\n\n", b.gomaxprocs())
	if name := plots["gnet"]; name != "" {
		p("![gnet settings](bench/%s)\n\n", name)
	}
	p("| setting | MB/s per pass | mean MB/s | vs default | p50 (mean) | p99 (worst) | gateway CPU s/GB | allocs/record | RSS max |\n|---|---|---|---|---|---|---|---|---|\n")
	var def *gnetAgg
	for _, a := range aggs {
		if a.name == "default" {
			def = a
		}
	}
	for _, a := range aggs {
		if len(a.runs) == 0 {
			p("| %s | %s ||||||||\n", a.name, status(a.failed[0]))
			continue
		}
		var per []string
		for _, r := range a.runs {
			per = append(per, fmt.Sprintf("%.1f", r.MBPerS))
		}
		vs := "–"
		if def != nil && def.mean > 0 {
			vs = fmtRatio(a.mean, def.mean)
		}
		p("| %s | %s | %.1f | %s | %s | %s | %s | %s | %s |\n", a.name, strings.Join(per, ", "), a.mean, vs, fmtUS(a.p50), fmtUS(a.p99max),
			fmtOpt(a.cpuPerGB, "%.1f"), fmtAllocs(a.allocs), fmtMiB(a.rssMax))
	}
	if rec := b.gnetRecommendation(); rec != "" {
		p("\n**Reading:** %s\n", rec)
	}
	p("\n")
}

func (b *bench) gomaxprocs() int { return runtime.GOMAXPROCS(0) }
