package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// produceVariant is one produce configuration of the Kafka-protocol runs.
type produceVariant struct {
	name  string
	acks  kgo.Acks
	codec kgo.CompressionCodec
}

var produceVariants = []produceVariant{
	{"acks=1 none", kgo.LeaderAck(), kgo.NoCompression()},
	{"acks=1 lz4", kgo.LeaderAck(), kgo.Lz4Compression()},
	{"acks=all none", kgo.AllISRAcks(), kgo.NoCompression()},
	{"acks=all lz4", kgo.AllISRAcks(), kgo.Lz4Compression()},
}

// directVariant names the direct produce runs.
const directVariant = "batches of 100, lockstep"

// gnetSetting is one point of the gnet sweep.
type gnetSetting struct {
	name string
	set  map[string]string
}

func gnetSettings(all bool) []gnetSetting {
	s := []gnetSetting{
		{"default", nil},
		{"multicore=false (1 loop)", map[string]string{"gnet.multicore": "false"}},
	}
	if all {
		s = append(s,
			gnetSetting{"num_event_loop=4", map[string]string{"gnet.num_event_loop": "4"}},
			gnetSetting{"lock_os_thread=true", map[string]string{"gnet.lock_os_thread": "true"}},
			gnetSetting{"edge_triggered_io=true", map[string]string{"gnet.edge_triggered_io": "true"}},
			gnetSetting{"buffer caps 16 KiB", map[string]string{"gnet.read_buffer_cap": "16384", "gnet.write_buffer_cap": "16384"}},
			gnetSetting{"buffer caps 256 KiB", map[string]string{"gnet.read_buffer_cap": "262144", "gnet.write_buffer_cap": "262144"}},
		)
	}
	return s
}

// kept is a filled topic the consume runs read.
type kept struct {
	topic   string
	records int64
}

// order is the targets of pass (1-based): table order on odd passes,
// reversed on even ones (A B C, C B A, ...), so a drift of the machine's
// load hits every target alike and consecutive runs of a target are apart.
func order(targets []string, pass int) []string {
	out := append([]string{}, targets...)
	if pass%2 == 0 {
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
	}
	return out
}

// runWorkloads runs every workload, workload by workload; inside each, every
// target runs plan.Passes times, the passes interleaved (see order), so that
// the runs compared in one table are close in time and their spread shows.
func (b *bench) runWorkloads() {
	var kafkaTargets, all []string
	for _, t := range allTargets {
		if _, ok := b.targets[t]; !ok {
			continue
		}
		all = append(all, t)
		if t != tGo && t != tRust {
			kafkaTargets = append(kafkaTargets, t)
		}
	}
	passes := max(1, b.plan.Passes)

	// 0. Idle connections first, while every server is fresh: its RSS
	// then moves with the connections only, not with a garbage collector
	// returning what a throughput run used.
	for _, t := range kafkaTargets {
		if b.plan.does("idle") {
			b.runIdle(t)
		}
	}
	// Warm-up, not reported: JIT compilation of the JVM broker, first-use
	// allocations and page faults of every server.
	for _, t := range all {
		b.warm(t)
	}
	// 1. Produce throughput; the direct paths join the acks=1 none group
	// (an Iggy confirmation is what acks=1 waits for).
	for i, v := range produceVariants {
		if !b.plan.does("produce") && !(i == 0 && b.plan.does("produce1")) {
			continue
		}
		group := kafkaTargets
		if i == 0 {
			group = all
		}
		for pass := 1; pass <= passes; pass++ {
			for _, t := range order(group, pass) {
				if t == tGo || t == tRust {
					b.runDirectProduce(t, pass)
				} else {
					b.runProduce(t, v, pass)
				}
			}
		}
	}
	// 2. Matched offered load: every path offered the same load, a fraction
	// of the direct Go client's saturation.
	if b.plan.does("matched") {
		if rate := b.matchedRate(); rate > 0 {
			for pass := 1; pass <= passes; pass++ {
				for _, t := range order(all, pass) {
					b.runMatched(t, rate, pass)
				}
			}
		} else {
			b.note("matched-load run skipped: no direct-go produce figure to match")
		}
	}
	// 3. Many concurrent producer connections, steady state.
	for pass := 1; pass <= passes && b.plan.does("many"); pass++ {
		for _, t := range order(all, pass) {
			b.runMany(t, pass)
		}
	}
	// 4. Consume: each target reads a topic filled for it, over and over.
	filled := map[string]kept{}
	for _, t := range all {
		if !b.plan.does("consume") {
			break
		}
		if t == tRust {
			if k, ok := filled[tGo]; ok {
				filled[tRust] = k // the same Iggy topic
				continue
			}
		}
		if k, err := b.fill(t); err != nil {
			b.note("consume on %s skipped: filling its topic: %v", t, firstLine(err.Error()))
		} else {
			filled[t] = k
		}
	}
	for pass := 1; pass <= passes && b.plan.does("consume"); pass++ {
		for _, t := range order(all, pass) {
			k, ok := filled[t]
			if !ok {
				b.add(&Result{Workload: wConsume, Target: t, Pass: pass, Skipped: "no filled topic"})
				continue
			}
			b.runConsume(t, k, pass)
		}
	}
	for _, t := range all {
		if k, ok := filled[t]; ok && t != tRust {
			b.deleteTopic(t, k.topic)
		}
	}
	// 5. Closed-loop latency.
	for pass := 1; pass <= passes && b.plan.does("latency"); pass++ {
		for _, t := range order(all, pass) {
			b.runLatency(t, b.plan.LatRecords, b.plan.LatDur, wLatency, "", pass)
		}
	}
	// 5b. End-to-end latency, produce → a waiting consumer (e2e.go).
	for pass := 1; pass <= passes && b.plan.does(wE2E); pass++ {
		for _, t := range order(kafkaTargets, pass) {
			b.runE2E(t, pass)
		}
	}
	// 6. A burst from many producer connections (connection counts).
	for _, t := range kafkaTargets {
		if b.plan.does("conns") {
			b.runConns(t)
		}
	}
	if _, ok := b.targets[tGo]; ok && b.plan.does("conns") {
		b.runConns(tGo)
	}
	// 7. Rebalance times: three sidecars of one coordination domain beside
	// the Kafka broker (rebalance.go).
	if b.plan.does("rebalance") {
		b.runRebalance()
	}
	// 7b. CPU per Fetch with and without fetch sessions (fetchsession.go).
	if b.plan.does("fetchsession") {
		b.runFetchSession()
	}
	// 7c. The cost of a transaction: EndTxn latency, transactional vs
	// idempotent throughput (txn.go).
	if b.plan.does("txn") && !b.plan.Smoke {
		b.runTxn()
	}
	// 8. Per-principal Iggy sessions (principals.go); restarts the sidecar.
	if _, ok := b.targets[tSidecar]; ok && b.plan.does("principals") && !b.plan.Smoke {
		b.runPrincipals()
	}
	// 9. gnet settings on the sidecar.
	if _, ok := b.targets[tSidecar]; ok && b.plan.Gnet && b.plan.does("gnet") {
		b.runGnetSweep()
	}
}

// warm runs a short produce and latency run on t that is not reported.
func (b *bench) warm(t string) {
	if b.skipFor(b.plan.WarmDur+b.slack(20*time.Second)) != "" {
		return
	}
	topic := b.topicName("warm", t)
	if err := b.createTopic(t, topic); err != nil {
		b.logf("warm-up on %s: %v", t, err)
		return
	}
	defer b.deleteTopic(t, topic)
	m := &meter{}
	win := windowSpec{warm: b.plan.WarmDur / 2, measure: b.plan.WarmDur / 2}
	var err error
	switch t {
	case tGo:
		_, err = directProduce(b.ctx, directSpec{addr: b.embedded.addr, topic: topic, partitions: b.plan.Partitions,
			conns: b.plan.DirectConns, batch: b.plan.Batch, records: b.plan.WarmRecords, win: win}, b.pool, m)
	case tRust:
		_, _, err = runRust(b.ctx, rustSpec{bin: b.rustBin, addr: b.embedded.addr, topic: topic, mode: "produce",
			partitions: b.plan.Partitions, conns: b.plan.DirectConns, batch: b.plan.Batch, records: b.plan.WarmRecords,
			pollCount: b.plan.PollCount, dur: b.plan.WarmDur}, b.poolHash, m)
	default:
		_, err = kafkaProduce(b.ctx, produceSpec{bootstrap: b.targets[t].addr, topic: topic, acks: kgo.LeaderAck(),
			codec: kgo.NoCompression(), linger: 5 * time.Millisecond, records: b.plan.WarmRecords, win: win}, b.pool, m)
		if err == nil {
			_, _, err = kafkaLatency(b.ctx, b.targets[t].addr, topic, b.pool, b.plan.Warmup, b.plan.Warmup, b.plan.WarmDur, m)
		}
	}
	if err != nil {
		b.logf("warm-up on %s: %v", t, err)
		return
	}
	b.logf("warmed up %s", t)
}

// add records a result, flags it when the machine was busy, and prints a
// one-line summary.
func (b *bench) add(r *Result) {
	if r.ok() {
		var why []string
		if b.plan.MaxLoad > 0 && r.Load1Before > b.plan.MaxLoad {
			why = append(why, fmt.Sprintf("load %.2f > %.2f", r.Load1Before, b.plan.MaxLoad))
		}
		if b.plan.MaxForeign > 0 && r.ForeignCores > b.plan.MaxForeign {
			why = append(why, fmt.Sprintf("others used %.2f cores > %.2f", r.ForeignCores, b.plan.MaxForeign))
		}
		r.Flagged = strings.Join(why, ", ")
	}
	b.results = append(b.results, r)
	what := r.Workload
	if r.Variant != "" {
		what += " " + r.Variant
	}
	if r.Pass > 0 {
		what += fmt.Sprintf(" #%d", r.Pass)
	}
	switch {
	case r.Skipped != "":
		b.logf("%-28s %-12s skipped: %s", what, r.Target, r.Skipped)
	case r.Error != "":
		b.logf("%-28s %-12s FAILED: %s", what, r.Target, r.Error)
	case r.Workload == wRebalance:
		b.logf("%-28s %-12s %6.2fs until the group is whole again, load %.2f→%.2f others %.2f cores", what, r.Target, r.RebalanceS,
			r.Load1Before, r.Load1After, r.ForeignCores)
	default:
		lat := ""
		if r.Latency != nil {
			lat = fmt.Sprintf(" p50 %.0fµs p99 %.0fµs", r.Latency.P50, r.Latency.P99)
		}
		flag := ""
		if r.Flagged != "" {
			flag = " FLAGGED (" + r.Flagged + ")"
		}
		b.logf("%-28s %-12s %8d rec %5.1fs %9.0f rec/s %7.1f MB/s cpu %.2fs+%.2fs%s load %.2f→%.2f others %.2f cores%s", what, r.Target, r.Records, r.Seconds, r.RecPerS, r.MBPerS, max(0, r.ServerCPUs), r.IggyCPUs, lat,
			r.Load1Before, r.Load1After, r.ForeignCores, flag)
	}
}

// skipFor returns a reason to skip a run that needs about need, or "".
func (b *bench) skipFor(need time.Duration) string {
	if b.ctx.Err() != nil {
		return "the run was interrupted or its budget ended"
	}
	if b.left() < need {
		return fmt.Sprintf("budget: %s left, the run needs up to %s", b.left().Round(time.Second), need.Round(time.Second))
	}
	return ""
}

// slack is the set-up and tear-down time a run needs besides its
// measured part: full in a full run, a sixth of it in a smoke run.
func (b *bench) slack(full time.Duration) time.Duration {
	if b.plan.Smoke {
		return full / 6
	}
	return full
}

// meterFor is the meter of one run on target t.
func (b *bench) meterFor(t string) *meter {
	s := b.targets[t]
	m := &meter{every: 200 * time.Millisecond}
	for _, o := range b.targets {
		if o.pid > 0 {
			m.ours = append(m.ours, o.pid)
		}
	}
	if b.embedded != nil {
		m.ours = append(m.ours, b.embedded.pid)
	}
	if s.pid > 0 {
		m.server = watched{pid: s.pid, metricsURL: s.metricsURL}
		m.kafkaPort = s.port
	}
	if s.iggyPath && b.embedded != nil {
		m.iggy = watched{pid: b.embedded.pid}
		m.iggyPort = b.embedded.port
		switch t {
		case tSidecar, tSidecarB:
			m.iggyOwner.Store(int64(s.pid))
		case tGo:
			m.iggyOwner.Store(int64(os.Getpid()))
		case tRust:
			m.iggyOwner.Store(-1) // runRust sets it once the program runs
		}
	}
	return m
}

func (b *bench) topicName(workload, target string) string {
	b.seq++
	return fmt.Sprintf("bench-%s-%s-%d", workload, target, b.seq)
}

// createTopic creates a topic of plan.Partitions partitions on target t.
func (b *bench) createTopic(t, topic string) error {
	ctx, cancel := context.WithTimeout(b.ctx, 40*time.Second)
	defer cancel()
	switch t {
	case tGo, tRust:
		return iggyCreateTopic(ctx, b.embedded.addr, topic, b.plan.Partitions)
	default:
		return kafkaCreateTopic(ctx, b.targets[t].addr, topic, b.plan.Partitions)
	}
}

// deleteTopic frees a topic's memory (the embedded server and kfake keep
// everything in memory). Failures are only logged.
func (b *bench) deleteTopic(t, topic string) {
	var err error
	switch t {
	case tGo, tRust:
		err = iggyDeleteTopic(b.embedded.addr, topic)
	default:
		err = kafkaDeleteTopic(b.targets[t].addr, topic)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench: deleting topic %s on %s: %v\n", topic, t, err)
	}
}

// profName is the profile file stem of a run: pass 1 keeps the plain name
// (the report reads it), later passes get a suffix.
func profName(name string, pass int) string {
	if pass > 1 {
		return fmt.Sprintf("%s p%d", name, pass)
	}
	return name
}

func (b *bench) runProduce(t string, v produceVariant, pass int) {
	r := &Result{Workload: wProduce, Variant: v.name, Target: t, Pass: pass}
	defer b.add(r)
	if r.Skipped = b.skipFor(b.plan.runLen() + b.slack(15*time.Second)); r.Skipped != "" {
		return
	}
	topic := b.topicName("produce", t)
	if err := b.createTopic(t, topic); err != nil {
		r.Error = err.Error()
		return
	}
	defer b.deleteTopic(t, topic)
	endProfile := b.profileRun(t, profName("produce "+v.name, pass), b.plan.profLen())
	endIggy := func() {}
	if t == tSidecar || t == tSidecarB {
		endIggy = b.profileIggy(t, profName("produce "+v.name, pass), b.plan.profLen())
	}
	res, err := kafkaProduce(b.ctx, produceSpec{
		bootstrap: b.targets[t].addr, topic: topic, acks: v.acks, codec: v.codec,
		linger: 5 * time.Millisecond, records: b.plan.Records, win: b.plan.win(),
	}, b.pool, b.meterFor(t))
	endProfile()
	endIggy()
	*r = mergeResult(r, res)
	if err != nil {
		r.Error = err.Error()
	}
}

// mergeResult copies a workload's figures into a result that already has
// its names.
func mergeResult(named *Result, figures Result) Result {
	figures.Workload, figures.Variant, figures.Target, figures.Pass = named.Workload, named.Variant, named.Target, named.Pass
	return figures
}

func (b *bench) runDirectProduce(t string, pass int) {
	r := &Result{Workload: wProduce, Variant: directVariant, Target: t, Pass: pass}
	defer b.add(r)
	if r.Skipped = b.skipFor(b.plan.runLen() + b.slack(15*time.Second)); r.Skipped != "" {
		return
	}
	topic := b.topicName("produce", t)
	if err := b.createTopic(t, topic); err != nil {
		r.Error = err.Error()
		return
	}
	defer b.deleteTopic(t, topic)
	res, err := b.directRun(t, topic, b.plan.DirectConns, 0, pass, "produce")
	*r = mergeResult(r, res)
	if err != nil {
		r.Error = err.Error()
	}
}

// directRun is a steady-state produce run of a direct path (conns
// connections; rate 0: saturation).
func (b *bench) directRun(t, topic string, conns int, rate float64, pass int, profile string) (Result, error) {
	if t == tGo {
		end := func() {}
		if profile != "" {
			end = b.profileIggy(t, profName(profile, pass), b.plan.profLen())
		}
		res, err := directProduce(b.ctx, directSpec{addr: b.embedded.addr, topic: topic, partitions: b.plan.Partitions,
			conns: conns, batch: b.plan.Batch, records: b.plan.Records, win: b.plan.win(), rate: rate}, b.pool, b.meterFor(t))
		end()
		return res, err
	}
	res, _, err := runRust(b.ctx, rustSpec{bin: b.rustBin, addr: b.embedded.addr, topic: topic, mode: "produce",
		partitions: b.plan.Partitions, conns: conns, batch: b.plan.Batch, records: b.plan.Records,
		pollCount: b.plan.PollCount, dur: b.plan.Measure, warm: b.plan.Warm, rate: rate}, b.poolHash, b.meterFor(t))
	if rate > 0 {
		res.OfferedRecPerS, res.OfferedMBPerS = rate, rate*1024/1e6
	}
	return res, err
}

// matchedRate is the offered load of the matched-load run: plan.MatchedFrac
// of the direct Go client's mean saturation rate (records/s), or 0.
func (b *bench) matchedRate() float64 {
	var sum float64
	var n int
	for _, r := range b.results {
		if r.Workload == wProduce && r.Variant == directVariant && r.Target == tGo && r.ok() {
			sum += r.RecPerS
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return b.plan.MatchedFrac * sum / float64(n)
}

// runMatched offers rate records/s (acks=1, no compression; the direct
// paths in paced batches) and measures what is delivered and what it costs.
func (b *bench) runMatched(t string, rate float64, pass int) {
	r := &Result{Workload: wMatched, Variant: fmt.Sprintf("%.0f%% of direct", b.plan.MatchedFrac*100), Target: t, Pass: pass}
	defer b.add(r)
	if r.Skipped = b.skipFor(b.plan.runLen() + b.slack(15*time.Second)); r.Skipped != "" {
		return
	}
	topic := b.topicName("matched", t)
	if err := b.createTopic(t, topic); err != nil {
		r.Error = err.Error()
		return
	}
	defer b.deleteTopic(t, topic)
	var res Result
	var err error
	switch t {
	case tGo, tRust:
		res, err = b.directRun(t, topic, b.plan.DirectConns, rate, pass, "")
	default:
		endProfile := b.profileRun(t, profName("matched", pass), b.plan.profLen())
		res, err = kafkaProduce(b.ctx, produceSpec{
			bootstrap: b.targets[t].addr, topic: topic, acks: kgo.LeaderAck(), codec: kgo.NoCompression(),
			linger: 5 * time.Millisecond, records: b.plan.Records, win: b.plan.win(), rate: rate,
		}, b.pool, b.meterFor(t))
		endProfile()
	}
	*r = mergeResult(r, res)
	if err != nil {
		r.Error = err.Error()
	}
}

// runMany: plan.Many producer connections at once, each producing as fast
// as it can (Kafka targets: one franz-go client each, acks=1, linger 5 ms,
// at most plan.ManyBuffer buffered records; direct paths: one lockstep Iggy
// connection each, batches of plan.Batch), steady state.
func (b *bench) runMany(t string, pass int) {
	r := &Result{Workload: wMany, Variant: fmt.Sprintf("%d connections", b.plan.Many), Target: t, Pass: pass}
	defer b.add(r)
	if r.Skipped = b.skipFor(b.plan.runLen() + b.slack(25*time.Second)); r.Skipped != "" {
		return
	}
	topic := b.topicName("many", t)
	if err := b.createTopic(t, topic); err != nil {
		r.Error = err.Error()
		return
	}
	defer b.deleteTopic(t, topic)
	var res Result
	var err error
	switch t {
	case tGo, tRust:
		res, err = b.directRun(t, topic, b.plan.Many, 0, pass, "")
	default:
		res, err = kafkaProduce(b.ctx, produceSpec{
			bootstrap: b.targets[t].addr, topic: topic, acks: kgo.LeaderAck(), codec: kgo.NoCompression(),
			linger: 5 * time.Millisecond, records: b.plan.Records, win: b.plan.win(),
			clients: b.plan.Many, maxBuffered: b.plan.ManyBuffer,
		}, b.pool, b.meterFor(t))
	}
	*r = mergeResult(r, res)
	if err != nil {
		r.Error = err.Error()
	}
}

// fill creates and fills the topic the consume runs of t read:
// plan.FillRecords records (Kafka targets: one franz-go producer, acks=1;
// direct paths: batches on plan.DirectConns connections).
func (b *bench) fill(t string) (kept, error) {
	if s := b.skipFor(b.slack(30 * time.Second)); s != "" {
		return kept{}, errors.New(s)
	}
	topic := b.topicName("consume", t)
	if err := b.createTopic(t, topic); err != nil {
		return kept{}, err
	}
	ctx, cancel := context.WithTimeout(b.ctx, 60*time.Second)
	defer cancel()
	n := b.plan.FillRecords
	var err error
	switch t {
	case tGo, tRust:
		err = directFill(ctx, b.embedded.addr, topic, b.pool, b.plan.Partitions, b.plan.DirectConns, b.plan.Batch, n)
	default:
		err = kafkaFill(ctx, b.targets[t].addr, topic, b.pool, n)
	}
	if err != nil {
		b.deleteTopic(t, topic)
		return kept{}, err
	}
	return kept{topic: topic, records: int64(n)}, nil
}

func (b *bench) runConsume(t string, k kept, pass int) {
	r := &Result{Workload: wConsume, Target: t, Pass: pass}
	defer b.add(r)
	if r.Skipped = b.skipFor(b.plan.runLen() + b.slack(10*time.Second)); r.Skipped != "" {
		return
	}
	var res Result
	var err error
	switch t {
	case tGo:
		res, err = directConsume(b.ctx, b.embedded.addr, k.topic, b.plan.Partitions, b.plan.PollCount, b.plan.win(), b.meterFor(t))
	case tRust:
		res, _, err = runRust(b.ctx, rustSpec{bin: b.rustBin, addr: b.embedded.addr, topic: k.topic, mode: "consume",
			partitions: b.plan.Partitions, conns: 1, batch: b.plan.Batch, records: int(k.records),
			pollCount: b.plan.PollCount, dur: b.plan.Measure, warm: b.plan.Warm}, b.poolHash, b.meterFor(t))
	default:
		endProfile := b.profileRun(t, profName("consume", pass), b.plan.profLen())
		res, err = kafkaConsume(b.ctx, b.targets[t].addr, k.topic, k.records, b.plan.win(), b.meterFor(t))
		endProfile()
	}
	*r = mergeResult(r, res)
	if err != nil {
		r.Error = err.Error()
	}
}

// runLatency runs the closed-loop latency workload on t and returns the
// result (also recorded).
func (b *bench) runLatency(t string, records int, dur time.Duration, workload, variant string, pass int) *Result {
	r := &Result{Workload: workload, Variant: variant, Target: t, Pass: pass}
	defer b.add(r)
	if r.Skipped = b.skipFor(dur + b.slack(15*time.Second)); r.Skipped != "" {
		return r
	}
	topic := b.topicName("latency", t)
	if err := b.createTopic(t, topic); err != nil {
		r.Error = err.Error()
		return r
	}
	defer b.deleteTopic(t, topic)
	var res Result
	var err error
	switch t {
	case tGo:
		res, _, err = directLatency(b.ctx, b.embedded.addr, topic, b.pool, records, b.plan.Warmup, dur, b.meterFor(t))
	case tRust:
		res, _, err = runRust(b.ctx, rustSpec{bin: b.rustBin, addr: b.embedded.addr, topic: topic, mode: "latency",
			partitions: b.plan.Partitions, conns: 1, batch: 1, records: records, warmup: b.plan.Warmup,
			pollCount: b.plan.PollCount, dur: dur}, b.poolHash, b.meterFor(t))
	default:
		endProfile := func() {}
		if workload == wLatency {
			endProfile = b.profileRun(t, profName("latency", pass), dur)
		}
		res, _, err = kafkaLatency(b.ctx, b.targets[t].addr, topic, b.pool, records, b.plan.Warmup, dur, b.meterFor(t))
		endProfile()
	}
	*r = mergeResult(r, res)
	if err != nil {
		r.Error = err.Error()
	}
	return r
}

func (b *bench) runConns(t string) {
	r := &Result{Workload: wConns, Variant: fmt.Sprintf("%d producers × %d records", b.plan.Conns, b.plan.ConnRecords), Target: t}
	defer b.add(r)
	if r.Skipped = b.skipFor(b.plan.ConnDur/2 + b.slack(20*time.Second)); r.Skipped != "" {
		return
	}
	topic := b.topicName("conns", t)
	if err := b.createTopic(t, topic); err != nil {
		r.Error = err.Error()
		return
	}
	defer b.deleteTopic(t, topic)
	var res Result
	var err error
	if t == tGo {
		res, err = directConns(b.ctx, b.embedded.addr, topic, b.pool, b.plan.Partitions, b.plan.Conns, b.plan.ConnRecords, b.plan.ConnDur, b.meterFor(t))
	} else {
		res, err = kafkaConns(b.ctx, b.targets[t].addr, topic, b.pool, b.plan.Conns, b.plan.ConnRecords, b.plan.ConnDur, b.meterFor(t))
	}
	*r = mergeResult(r, res)
	if err != nil {
		r.Error = err.Error()
	}
}

func (b *bench) runIdle(t string) {
	r := &Result{Workload: wIdle, Variant: fmt.Sprintf("%d connections", b.plan.Idle), Target: t}
	defer b.add(r)
	if r.Skipped = b.skipFor(b.plan.IdleDur/4 + b.slack(10*time.Second)); r.Skipped != "" {
		return
	}
	s := b.targets[t]
	if s.pid == 0 {
		r.Skipped = "the server's pid is not known"
		return
	}
	before := load1()
	res, err := idleConns(b.ctx, s.addr, s.pid, s.port, b.plan.Idle, b.plan.IdleDur)
	*r = mergeResult(r, res)
	r.Load1Before, r.Load1After, r.ForeignCores = before, load1(), -1
	if err != nil {
		r.Error = err.Error()
	}
}

// runGnetSweep restarts the sidecar under each gnet setting and runs a
// short steady-state produce (acks=1, none) and a short latency run on it.
// It makes two passes, the second in reverse order (A B C … C B A), so a
// drift of the machine's load over the sweep hits every setting alike, and
// every setting has two runs whose spread shows the noise.
func (b *bench) runGnetSweep() {
	settings := gnetSettings(b.plan.GnetAll)
	var order []gnetSetting
	order = append(order, settings...)
	for i := len(settings) - 1; i >= 0; i-- {
		order = append(order, settings[i])
	}
	win := windowSpec{warm: b.plan.GnetWarm, measure: b.plan.GnetMeasure}
	for i, g := range order {
		pass := 1 + i/len(settings)
		r := &Result{Workload: wGnet, Variant: g.name, Target: tSidecar, Pass: pass}
		need := b.plan.GnetWarm + b.plan.GnetMeasure + b.plan.GnetLatDur + b.slack(30*time.Second)
		if r.Skipped = b.skipFor(need); r.Skipped != "" {
			b.add(r)
			continue
		}
		old := b.targets[tSidecar]
		old.proc.stop(10 * time.Second)
		s, err := b.startSidecar(g.set)
		if err != nil {
			r.Error = "start: " + err.Error()
			b.add(r)
			delete(b.targets, tSidecar)
			return
		}
		b.targets[tSidecar] = s
		topic := b.topicName("gnet", tSidecar)
		if err := b.createTopic(tSidecar, topic); err != nil {
			r.Error = err.Error()
			b.add(r)
			continue
		}
		res, err := kafkaProduce(b.ctx, produceSpec{
			bootstrap: s.addr, topic: topic, acks: kgo.LeaderAck(), codec: kgo.NoCompression(),
			linger: 5 * time.Millisecond, records: b.plan.Records, win: win,
		}, b.pool, b.meterFor(tSidecar))
		b.deleteTopic(tSidecar, topic)
		*r = mergeResult(r, res)
		r.Latency = nil
		if err != nil {
			r.Error = err.Error()
			b.add(r)
			continue
		}
		// The latency half, recorded inside the same result.
		lat := b.runLatencyQuiet(s, b.plan.GnetLatRecords, b.plan.GnetLatDur)
		if lat.Error != "" {
			r.Error = "latency: " + lat.Error
		}
		r.Latency, r.CDF = lat.Latency, lat.CDF
		b.add(r)
	}
}

// runLatencyQuiet is runLatency on a given sidecar, not recorded.
func (b *bench) runLatencyQuiet(s *server, records int, dur time.Duration) Result {
	topic := b.topicName("gnetlat", tSidecar)
	if err := b.createTopic(tSidecar, topic); err != nil {
		return Result{Error: err.Error()}
	}
	defer b.deleteTopic(tSidecar, topic)
	res, _, err := kafkaLatency(b.ctx, s.addr, topic, b.pool, records, b.plan.Warmup, dur, b.meterFor(tSidecar))
	if err != nil {
		res.Error = err.Error()
	}
	return res
}
