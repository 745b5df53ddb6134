package main

import (
	"context"
	"fmt"
	"os"
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

// kept is a filled topic a produce run leaves for the consume run.
type kept struct {
	topic   string
	records int64
}

// runWorkloads runs every workload, workload by workload, every target in
// turn inside each, so that runs compared in one table are close in time.
func (b *bench) runWorkloads() {
	var kafkaTargets, directTargets []string
	for _, t := range allTargets {
		if _, ok := b.targets[t]; !ok {
			continue
		}
		if t == tGo || t == tRust {
			directTargets = append(directTargets, t)
		} else {
			kafkaTargets = append(kafkaTargets, t)
		}
	}
	filled := map[string]kept{}

	// 0. Idle connections first, while every server is fresh: its RSS
	// then moves with the connections only, not with a garbage collector
	// returning what a throughput run used.
	for _, t := range kafkaTargets {
		b.runIdle(t)
	}
	// Warm-up, not reported: JIT compilation of the JVM broker, first-use
	// allocations and page faults of every server.
	for _, t := range append(append([]string{}, kafkaTargets...), directTargets...) {
		b.warm(t)
	}
	// 1. Produce throughput.
	for i, v := range produceVariants {
		for _, t := range kafkaTargets {
			topic, ok := b.runProduce(t, v, i == 0)
			if ok && i == 0 {
				filled[t] = topic
			}
		}
		if i == 0 {
			for _, t := range directTargets {
				if topic, ok := b.runDirectProduce(t); ok {
					filled[t] = topic
				}
			}
		}
	}
	// 2. Consume from the earliest offset (what the first produce run wrote).
	for _, t := range append(append([]string{}, kafkaTargets...), directTargets...) {
		k, ok := filled[t]
		if !ok {
			b.add(&Result{Workload: wConsume, Target: t, Skipped: "no filled topic (its produce run failed or was skipped)"})
			continue
		}
		b.runConsume(t, k)
		b.deleteTopic(t, k.topic)
	}
	// 3. Closed-loop latency.
	for _, t := range append(append([]string{}, kafkaTargets...), directTargets...) {
		b.runLatency(t, b.plan.LatRecords, b.plan.LatDur, wLatency, "")
	}
	// 4. Many producer connections.
	for _, t := range kafkaTargets {
		b.runConns(t)
	}
	if _, ok := b.targets[tGo]; ok {
		b.runConns(tGo)
	}
	// 6. gnet settings on the sidecar.
	if _, ok := b.targets[tSidecar]; ok && b.plan.Gnet {
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
	var err error
	switch t {
	case tGo:
		_, err = directProduce(b.ctx, b.embedded.addr, topic, b.pool, b.plan.Partitions, b.plan.DirectConns, b.plan.Batch, b.plan.WarmRecords, b.plan.WarmDur, m)
	case tRust:
		_, _, err = runRust(b.ctx, rustSpec{bin: b.rustBin, addr: b.embedded.addr, topic: topic, mode: "produce",
			partitions: b.plan.Partitions, conns: b.plan.DirectConns, batch: b.plan.Batch, records: b.plan.WarmRecords,
			pollCount: b.plan.PollCount, dur: b.plan.WarmDur}, b.poolHash, m)
	default:
		_, err = kafkaProduce(b.ctx, produceSpec{bootstrap: b.targets[t].addr, topic: topic, acks: kgo.LeaderAck(),
			codec: kgo.NoCompression(), linger: 5 * time.Millisecond, records: b.plan.WarmRecords, dur: b.plan.WarmDur}, b.pool, m)
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

// add records a result and prints a one-line summary.
func (b *bench) add(r *Result) {
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
	default:
		lat := ""
		if r.Latency != nil {
			lat = fmt.Sprintf(" p50 %.0fµs p99 %.0fµs", r.Latency.P50, r.Latency.P99)
		}
		b.logf("%-28s %-12s %8d rec %7.1fs %9.0f rec/s %7.1f MB/s cpu %.2fs+%.2fs%s", what, r.Target, r.Records, r.Seconds, r.RecPerS, r.MBPerS, max(0, r.ServerCPUs), r.IggyCPUs, lat)
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
	if s.pid > 0 {
		m.server = watched{pid: s.pid, metricsURL: s.metricsURL}
		m.kafkaPort = s.port
	}
	if s.iggyPath && b.embedded != nil {
		m.iggy = watched{pid: b.embedded.pid}
		m.iggyPort = b.embedded.port
		switch t {
		case tSidecar:
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

func (b *bench) runProduce(t string, v produceVariant, keep bool) (kept, bool) {
	r := &Result{Workload: wProduce, Variant: v.name, Target: t}
	defer b.add(r)
	if r.Skipped = b.skipFor(b.plan.Dur + b.slack(20*time.Second)); r.Skipped != "" {
		return kept{}, false
	}
	topic := b.topicName("produce", t)
	if err := b.createTopic(t, topic); err != nil {
		r.Error = err.Error()
		return kept{}, false
	}
	endProfile := b.profileRun(t, "produce "+v.name, b.plan.Dur)
	endIggy := func() {}
	if t == tSidecar {
		endIggy = b.profileIggy(t, "produce "+v.name, b.plan.Dur)
	}
	res, err := kafkaProduce(b.ctx, produceSpec{
		bootstrap: b.targets[t].addr, topic: topic, acks: v.acks, codec: v.codec,
		linger: 5 * time.Millisecond, records: b.plan.Records, dur: b.plan.Dur,
	}, b.pool, b.meterFor(t))
	endProfile()
	endIggy()
	*r = mergeResult(r, res)
	if err != nil {
		r.Error = err.Error()
	}
	if keep && err == nil {
		return kept{topic: topic, records: res.Records + 1}, true
	}
	b.deleteTopic(t, topic)
	return kept{}, false
}

// mergeResult copies a workload's figures into a result that already has
// its names.
func mergeResult(named *Result, figures Result) Result {
	figures.Workload, figures.Variant, figures.Target = named.Workload, named.Variant, named.Target
	return figures
}

func (b *bench) runDirectProduce(t string) (kept, bool) {
	r := &Result{Workload: wProduce, Variant: directVariant, Target: t}
	defer b.add(r)
	if r.Skipped = b.skipFor(b.plan.Dur + b.slack(20*time.Second)); r.Skipped != "" {
		return kept{}, false
	}
	topic := b.topicName("produce", t)
	if err := b.createTopic(t, topic); err != nil {
		r.Error = err.Error()
		return kept{}, false
	}
	var res Result
	var err error
	if t == tGo {
		endIggy := b.profileIggy(t, "produce", b.plan.Dur)
		res, err = directProduce(b.ctx, b.embedded.addr, topic, b.pool, b.plan.Partitions, b.plan.DirectConns, b.plan.Batch, b.plan.Records, b.plan.Dur, b.meterFor(t))
		endIggy()
	} else {
		res, _, err = runRust(b.ctx, rustSpec{bin: b.rustBin, addr: b.embedded.addr, topic: topic, mode: "produce",
			partitions: b.plan.Partitions, conns: b.plan.DirectConns, batch: b.plan.Batch, records: b.plan.Records,
			pollCount: b.plan.PollCount, dur: b.plan.Dur}, b.poolHash, b.meterFor(t))
	}
	*r = mergeResult(r, res)
	if err != nil {
		r.Error = err.Error()
		b.deleteTopic(t, topic)
		return kept{}, false
	}
	return kept{topic: topic, records: res.Records}, true
}

func (b *bench) runConsume(t string, k kept) {
	r := &Result{Workload: wConsume, Target: t}
	defer b.add(r)
	if r.Skipped = b.skipFor(b.plan.ConsumeDur + b.slack(10*time.Second)); r.Skipped != "" {
		return
	}
	var res Result
	var err error
	switch t {
	case tGo:
		res, err = directConsume(b.ctx, b.embedded.addr, k.topic, b.plan.Partitions, b.plan.PollCount, k.records, b.plan.ConsumeDur, b.meterFor(t))
	case tRust:
		res, _, err = runRust(b.ctx, rustSpec{bin: b.rustBin, addr: b.embedded.addr, topic: k.topic, mode: "consume",
			partitions: b.plan.Partitions, conns: 1, batch: b.plan.Batch, records: int(k.records),
			pollCount: b.plan.PollCount, dur: b.plan.ConsumeDur}, b.poolHash, b.meterFor(t))
		res.Expected = k.records
	default:
		endProfile := b.profileRun(t, "consume", b.plan.ConsumeDur)
		res, err = kafkaConsume(b.ctx, b.targets[t].addr, k.topic, k.records, b.plan.ConsumeDur, b.meterFor(t))
		endProfile()
	}
	*r = mergeResult(r, res)
	if err != nil {
		r.Error = err.Error()
	}
}

// runLatency runs the closed-loop latency workload on t and returns the
// result (also recorded).
func (b *bench) runLatency(t string, records int, dur time.Duration, workload, variant string) *Result {
	r := &Result{Workload: workload, Variant: variant, Target: t}
	defer b.add(r)
	if r.Skipped = b.skipFor(dur + b.slack(20*time.Second)); r.Skipped != "" {
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
			endProfile = b.profileRun(t, "latency", dur)
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
	if r.Skipped = b.skipFor(b.plan.ConnDur + b.slack(30*time.Second)); r.Skipped != "" {
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
	if r.Skipped = b.skipFor(b.plan.IdleDur/2 + b.slack(10*time.Second)); r.Skipped != "" {
		return
	}
	s := b.targets[t]
	if s.pid == 0 {
		r.Skipped = "the server's pid is not known"
		return
	}
	res, err := idleConns(b.ctx, s.addr, s.pid, s.port, b.plan.Idle, b.plan.IdleDur)
	*r = mergeResult(r, res)
	if err != nil {
		r.Error = err.Error()
	}
}

// runGnetSweep restarts the sidecar under each gnet setting and runs a
// short produce (acks=1, none) and a short latency run on it. It makes two
// passes, the second in reverse order (A B C … C B A), so a drift of the
// machine's load over the sweep hits every setting alike, and every
// setting has two runs whose spread shows the noise.
func (b *bench) runGnetSweep() {
	settings := gnetSettings(b.plan.GnetAll)
	var order []gnetSetting
	order = append(order, settings...)
	for i := len(settings) - 1; i >= 0; i-- {
		order = append(order, settings[i])
	}
	for i, g := range order {
		pass := 1 + i/len(settings)
		r := &Result{Workload: wGnet, Variant: g.name, Target: tSidecar, Pass: pass}
		need := b.plan.GnetDur + b.plan.GnetLatDur + b.slack(40*time.Second)
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
			linger: 5 * time.Millisecond, records: b.plan.GnetRecords, dur: b.plan.GnetDur,
		}, b.pool, b.meterFor(tSidecar))
		b.deleteTopic(tSidecar, topic)
		*r = mergeResult(r, res)
		r.Pass = pass
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
