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
	p("# Benchmarks\n\n")
	p("<!-- Generated by `make bench` (scripts/bench): do not edit by hand; run it again. -->\n\n")
	p("The sidecar side by side with Apache Kafka, franz-go's kfake, and the direct path to the same Iggy server. ")
	p("Every figure comes from **one run** (%s, %s, %s wall time, mode: %s), workload by workload with every target in turn, ", b.started.UTC().Format("2006-01-02 15:04 UTC"), "budget "+b.plan.Budget.String(), time.Since(b.started).Round(time.Second), mode)
	p("so the runs a ratio compares were made seconds to minutes apart on the same machine. ")
	p("This is a shared 2-core machine: the load generator, the servers and whatever else runs there share both cores, so single figures move by tens of percent between runs. ")
	p("Read the ratios, not the absolute numbers, and treat differences smaller than the spread between the two passes of the gnet sweep as noise.\n\n")

	b.writeSummary(p)

	p("## Machine, versions, command\n\n| | |\n|---|---|\n")
	for _, kv := range b.machine {
		p("| %s | %s |\n", kv[0], kv[1])
	}
	for _, kv := range b.versions {
		p("| %s | %s |\n", kv[0], kv[1])
	}
	p("| command | `%s` |\n", strings.Join(append([]string{"go run ./scripts/bench"}, b.args[1:]...), " "))
	p("| regenerate | `make bench` (full, ≤ 10 min); `make bench-smoke` (CI, < 1 min, writes to a temporary directory) |\n\n")

	// Produce.
	p("## Produce throughput\n\n")
	p("franz-go producer, one client, records of 1 KiB (%d-byte payload, no key, no headers), `linger` 5 ms, up to %d records or %s per run, topic of %d partitions. ",
		1024, b.plan.Records, b.plan.Dur, b.plan.Partitions)
	p("acks=all uses the idempotent producer (franz-go's default); acks=1 turns idempotence off; everything else is franz-go's default (10,000 buffered records at most, 1 MB batches). ")
	p("*Ack latency* is each record's time from `Produce` to its acknowledgement under this load, so it includes the wait in the producer's buffer. ")
	p("The payloads are text (words and numbers); lz4 shrinks them %.2f× in 64 KiB blocks.\n\n", b.lz4)
	if name := plots["throughput"]; name != "" {
		p("![throughput](bench/%s)\n\n", name)
	}
	for _, v := range produceVariants {
		p("### %s\n\n", v.name)
		p("| target | records/s | MB/s | vs Kafka | vs kfake | ack latency p50 / p99 (under load) | server CPU s/GB | Iggy CPU s/GB | allocs/record | server RSS max | Iggy connections | messages per Iggy batch |\n")
		p("|---|---|---|---|---|---|---|---|---|---|---|---|\n")
		kafka := b.find(wProduce, v.name, tKafka)
		kfake := b.find(wProduce, v.name, tKfake)
		for _, t := range []string{tSidecar, tKafka, tKfake} {
			if !b.ran(t) {
				continue
			}
			r := b.anyResult(wProduce, v.name, t)
			if !r.ok() {
				p("| %s | %s ||||||||||||\n", targetLabel[t], status(r))
				continue
			}
			lat := "–"
			if r.Latency != nil {
				lat = fmtUS(r.Latency.P50) + " / " + fmtUS(r.Latency.P99)
			}
			p("| %s | %s | %.1f | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", targetLabel[t], fmtNum(r.RecPerS), r.MBPerS,
				ratioOf(r, kafka), ratioOf(r, kfake), lat,
				fmtOpt(perGB(r.ServerCPUs, r.Bytes), "%.1f"), iggyCPU(r), fmtAllocs(r.AllocsPerRec), fmtMiB(r.ServerRSSMax), fmtConns(r.IggyConns),
				fmtOpt(r.IggyBatchMsgs, "%.0f"))
		}
		p("\n")
	}
	p("### Direct baseline: the same payloads straight to the embedded Iggy server\n\n")
	p("%d connections, each sending batches of %d messages to its own partition and waiting for each confirmation (lockstep, as both clients work), up to %d records or %s. ",
		b.plan.DirectConns, b.plan.Batch, b.plan.Records, b.plan.Dur)
	p("The sidecar's column is its acks=1 none run; an Iggy confirmation is what acks=1 waits for.\n\n")
	p("| path | records/s | MB/s | sidecar ÷ this | Iggy CPU s/GB | client CPU s/GB | Iggy connections |\n|---|---|---|---|---|---|---|\n")
	side := b.find(wProduce, produceVariants[0].name, tSidecar)
	if side != nil {
		p("| %s (acks=1 none) | %s | %.1f | 1.00× | %s | %s | %s |\n", targetLabel[tSidecar], fmtNum(side.RecPerS), side.MBPerS,
			iggyCPU(side), fmtOpt(perGB(side.ClientCPUs, side.Bytes), "%.1f"), fmtConns(side.IggyConns))
	}
	for _, t := range []string{tGo, tRust} {
		if !b.ran(t) {
			continue
		}
		r := b.anyResult(wProduce, directVariant, t)
		if !r.ok() {
			p("| %s | %s ||||||\n", targetLabel[t], status(r))
			continue
		}
		p("| %s | %s | %.1f | %s | %s | %s | %s |\n", targetLabel[t], fmtNum(r.RecPerS), r.MBPerS, ratioOf(side, r),
			iggyCPU(r), fmtOpt(perGB(r.ClientCPUs, r.Bytes), "%.1f"), fmtConns(r.IggyConns))
	}
	p("\n")

	// Consume.
	p("## Consume from the earliest offset\n\n")
	p("Reads back what the first produce run wrote (acks=1 none for Kafka-protocol targets, the direct run for the direct paths), from the earliest offset, until every record arrived or %s. ", b.plan.ConsumeDur)
	p("franz-go consumer without a group (`ConsumeTopics` + `AtStart`, fetch max wait 250 ms); the direct clients poll each partition from offset 0, %d messages per poll. The clock starts before the client connects.\n\n", b.plan.PollCount)
	p("| target | records | records/s | MB/s | vs Kafka | server CPU s/GB | Iggy CPU s/GB | allocs/record |\n|---|---|---|---|---|---|---|---|\n")
	kc := b.find(wConsume, "", tKafka)
	for _, t := range allTargets {
		if !b.ran(t) {
			continue
		}
		r := b.anyResult(wConsume, "", t)
		if !r.ok() {
			p("| %s | %s |||||||\n", targetLabel[t], status(r))
			continue
		}
		recs := fmt.Sprint(r.Records)
		if r.Expected > 0 && r.Records < r.Expected {
			recs = fmt.Sprintf("%d of %d", r.Records, r.Expected)
		}
		p("| %s | %s | %s | %.1f | %s | %s | %s | %s |\n", targetLabel[t], recs, fmtNum(r.RecPerS), r.MBPerS, ratioOf(r, kc),
			fmtOpt(perGB(r.ServerCPUs, r.Bytes), "%.1f"), iggyCPU(r), fmtAllocs(r.AllocsPerRec))
	}
	p("\n")

	// Latency.
	p("## Closed-loop produce latency\n\n")
	p("One record at a time, each waited for before the next (franz-go: acks=all, idempotent, no linger; direct clients: one message per SEND_MESSAGES), %d warm-up records first, then up to %d records or %s, recorded in an HDR histogram (µs).\n\n",
		b.plan.Warmup, b.plan.LatRecords, b.plan.LatDur)
	if name := plots["latency"]; name != "" {
		p("![latency CDF](bench/%s)\n\n", name)
	}
	p("| target | p50 | p90 | p99 | p99.9 | max | samples | p50 vs Kafka | p99 vs Kafka | server CPU µs/record |\n|---|---|---|---|---|---|---|---|---|---|\n")
	kl := b.find(wLatency, "", tKafka)
	for _, t := range allTargets {
		if !b.ran(t) {
			continue
		}
		r := b.anyResult(wLatency, "", t)
		if !r.ok() || r.Latency == nil {
			p("| %s | %s |||||||||\n", targetLabel[t], status(r))
			continue
		}
		l := r.Latency
		p50r, p99r := "–", "–"
		if kl != nil && kl.Latency != nil {
			p50r, p99r = fmtRatio(l.P50, kl.Latency.P50), fmtRatio(l.P99, kl.Latency.P99)
		}
		cpu := max(0, r.ServerCPUs) + r.IggyCPUs
		p("| %s | %s | %s | %s | %s | %s | %d | %s | %s | %.0f |\n", targetLabel[t], fmtUS(l.P50), fmtUS(l.P90), fmtUS(l.P99), fmtUS(l.P999), fmtUS(l.Max), l.N,
			p50r, p99r, cpu*1e6/float64(r.Records))
	}
	p("\n")

	// Many connections.
	p("## %d producer connections\n\n", b.plan.Conns)
	p("%d franz-go producers (one client each: acks=1, linger 5 ms), each connected and warmed with one record first; then all produce %d records at once. ", b.plan.Conns, b.plan.ConnRecords)
	p("The direct row opens as many Iggy connections (one client each) and sends each one's %d messages as one batch. ", b.plan.ConnRecords)
	p("Connections are counted from /proc/net/tcp at their peak during the produce phase: \"Kafka-side\" on the target's port, \"Iggy\" on the embedded server's port.\n\n")
	p("| target | connect phase | records/s | Kafka-side connections | Iggy connections | server RSS max | Iggy RSS max | server CPU s/GB |\n|---|---|---|---|---|---|---|---|\n")
	for _, t := range []string{tSidecar, tKafka, tKfake, tGo} {
		if !b.ran(t) {
			continue
		}
		r := b.anyResult(wConns, fmt.Sprintf("%d producers × %d records", b.plan.Conns, b.plan.ConnRecords), t)
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
	p("## %d idle connections\n\n", b.plan.Idle)
	p("Plain TCP connections, each answered one ApiVersions v0 request (so the server has fully set it up), then held idle; the server's RSS (VmRSS) is read before and after a 1 s pause.\n\n")
	p("| target | connections held | RSS before | RSS with | per connection | vs Kafka |\n|---|---|---|---|---|---|\n")
	ki := b.find(wIdle, fmt.Sprintf("%d connections", b.plan.Idle), tKafka)
	for _, t := range []string{tSidecar, tKafka, tKfake} {
		if !b.ran(t) {
			continue
		}
		r := b.anyResult(wIdle, fmt.Sprintf("%d connections", b.plan.Idle), t)
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

	b.writeGnet(p, plots)

	b.writeProfiles(p)

	p("## How it is measured\n\n")
	p("- **Processes.** Every server is its own process, started by the bench in a process group of its own and ended with it: the sidecar (`kafka-iggy serve`), the embedded Iggy server (`kafka-iggy embedded-iggy`, data in memory), kfake (`bench kfake`, the bench's own binary), Apache Kafka (`scripts/kafka/start.sh`: its server.properties and the heap `scripts/kafka/run.sh` gives the broker). The load generator is the bench process itself; the Rust baseline is `scripts/bench/rustdirect`, one process per run.\n")
	p("- **Sidecar configuration**, as `KAFKA_IGGY_*` environment variables, everything else at its default: %s.\n", b.sidecarConfigText())
	p("- **MB/s** counts payload bytes (10^6 per MB) acknowledged (produce) or received (consume), over the time from the first send to the last acknowledgement.\n")
	p("- **CPU s/GB**: user + system CPU seconds of the server process during the run (utime + stime of `/proc/<pid>/stat`: the rusage figures of the live process, all threads, 10 ms ticks) per 10^9 payload bytes. *server* is the process the client talks to (the sidecar, Kafka, kfake); *Iggy* is the embedded server behind the sidecar or under the direct clients. The gateway's own cost is the sidecar's figure; sidecar + Iggy is the whole path, to set against the direct rows' Iggy figure.\n")
	p("- **RSS**: VmRSS of the process, sampled every 200 ms; *max* is the highest sample.\n")
	p("- **allocs/record**: the Go server's `go_memstats_mallocs_total` (its /metrics) over the run, less the cost of the scrapes, per record. Only Go servers (the sidecar, kfake) have it.\n")
	p("- **Iggy connections**: established TCP connections to the embedded server's port held by the process under test (the sidecar, the load generator, the Rust program), peak during the run: what the path really opens to Iggy.\n")
	p("- **messages per Iggy batch**: the sidecar's own `kafka_iggy_upstream_batch_messages` histogram (sum ÷ count over the run): how many Kafka records one SEND_MESSAGES carried. The direct runs send batches of %d by construction.\n", b.plan.Batch)
	p("- **Payloads**: a pool of %d distinct 1 KiB texts (words and six-digit numbers from a seeded xorshift generator), record *j* carrying payload *j* mod %d; the Rust program builds the same pool and the bench checks its hash (`%s`).\n", poolSize, poolSize, b.poolHash)
	p("- **Bounds**: every loop stops at its record count or its deadline, whichever comes first; the whole run at its budget (%s), with a watchdog that ends every process shortly after.\n\n", b.plan.Budget)

	p("## Notes of this run\n\n")
	if len(b.notes) == 0 {
		p("- Nothing to note.\n")
	}
	for _, n := range b.notes {
		p("- %s\n", n)
	}
	for _, r := range b.results {
		if r.Error != "" {
			p("- FAILED: %s %s on %s: %s\n", r.Workload, r.Variant, r.Target, mdEscape(firstLine(r.Error)))
		}
		if r.Note != "" {
			p("- %s %s on %s: %s\n", r.Workload, r.Variant, r.Target, r.Note)
		}
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

func ratioOf(r, base *Result) string {
	if r == nil || base == nil {
		return "–"
	}
	return fmtRatio(r.MBPerS, base.MBPerS)
}

func iggyCPU(r *Result) string {
	if r.IggyCPUs == 0 && r.IggyRSSMax == 0 {
		return "–"
	}
	return fmtOpt(perGB(r.IggyCPUs, r.Bytes), "%.1f")
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

// writeSummary writes the headline ratios.
func (b *bench) writeSummary(p func(string, ...any)) {
	p("## Summary\n\n")
	n := 0
	line := func(format string, args ...any) {
		p("- "+format+"\n", args...)
		n++
	}
	v0 := produceVariants[0].name
	side := b.find(wProduce, v0, tSidecar)
	if side != nil {
		parts := []string{}
		for _, t := range []string{tKafka, tKfake} {
			if r := b.find(wProduce, v0, t); r != nil {
				parts = append(parts, fmt.Sprintf("%s of %s (%.1f MB/s)", fmtRatio(side.MBPerS, r.MBPerS), targetLabel[t], r.MBPerS))
			}
		}
		for _, t := range []string{tGo, tRust} {
			if r := b.find(wProduce, directVariant, t); r != nil {
				parts = append(parts, fmt.Sprintf("%s of the %s path (%.1f MB/s)", fmtRatio(side.MBPerS, r.MBPerS), targetLabel[t], r.MBPerS))
			}
		}
		if len(parts) > 0 {
			line("**Produce** (acks=1, none): the sidecar did %.1f MB/s, %s.", side.MBPerS, strings.Join(parts, ", "))
		}
		if g := perGB(side.ServerCPUs, side.Bytes); g >= 0 {
			direct := ""
			if r := b.find(wProduce, directVariant, tGo); r != nil {
				direct = fmt.Sprintf("; the direct Go path cost the Iggy server %.1f", perGB(r.IggyCPUs, r.Bytes))
			}
			line("**CPU per GB produced**: the gateway process %.1f s/GB, the Iggy server behind it %.1f s/GB%s.", g, perGB(side.IggyCPUs, side.Bytes), direct)
		}
	}
	if s, k := b.find(wConsume, "", tSidecar), b.find(wConsume, "", tKafka); s != nil && k != nil {
		line("**Consume** from earliest: sidecar %.1f MB/s, %s of Kafka's.", s.MBPerS, fmtRatio(s.MBPerS, k.MBPerS))
	} else if s != nil {
		line("**Consume** from earliest: sidecar %.1f MB/s.", s.MBPerS)
	}
	if s := b.find(wLatency, "", tSidecar); s != nil && s.Latency != nil {
		parts := []string{}
		for _, t := range []string{tKafka, tKfake, tGo, tRust} {
			if r := b.find(wLatency, "", t); r != nil && r.Latency != nil {
				parts = append(parts, fmt.Sprintf("%s %s / %s", targetLabel[t], fmtUS(r.Latency.P50), fmtUS(r.Latency.P99)))
			}
		}
		line("**Latency** p50 / p99, closed loop: sidecar %s / %s; %s.", fmtUS(s.Latency.P50), fmtUS(s.Latency.P99), strings.Join(parts, "; "))
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
		line("**Idle connections** cost the sidecar %.1f KiB of RSS each%s.", s.RSSPerConn/1024, k)
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
	p("The sidecar restarted under each setting (config keys `gnet.*` through `KAFKA_IGGY_GNET__*`, everything else default), then ran a produce run (acks=1 none, up to %d records or %s) and a closed-loop latency run (up to %d records or %s). ",
		b.plan.GnetRecords, b.plan.GnetDur, b.plan.GnetLatRecords, b.plan.GnetLatDur)
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
