package main

// The end-to-end latency workload (issue 29): how long a record takes from
// the producer's call to a consumer that is already waiting for it, on the
// Kafka-protocol targets (the sidecar, Apache Kafka, kfake). The direct
// Iggy clients have no long poll on protocol 0.11, so they have no row.
//
// One producer (franz-go: acks=all, idempotent, no linger) and one consumer
// (franz-go, no group: the topic's partitions from the start, the client's
// default long poll of 5 s and min bytes 1), each with its own connection,
// on a fresh topic. Closed loop: record i (its key the big-endian index) is
// produced, and record i+1 only after the consumer has received record i.
// The figure is the time from the produce call to the moment the
// consumer's poll returned the record: the consumer's long poll, the wake-up
// a write gives a waiting Fetch (a broker's purgatory; on the sidecar its
// produce notifier, on Iggy's side nothing) and the Fetch's answer.

import (
	"context"
	"encoding/binary"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// wE2E is the end-to-end latency workload.
const wE2E = "e2e"

// received is a record index seen by the consumer and when its poll
// returned it.
type received struct {
	idx uint64
	at  time.Time
}

func (b *bench) runE2E(t string, pass int) {
	r := &Result{Workload: wE2E, Target: t, Pass: pass}
	defer b.add(r)
	dur := b.plan.LatDur
	if r.Skipped = b.skipFor(dur + b.slack(20*time.Second)); r.Skipped != "" {
		return
	}
	topic := b.topicName(wE2E, t)
	if err := b.createTopic(t, topic); err != nil {
		r.Error = err.Error()
		return
	}
	defer b.deleteTopic(t, topic)
	endProfile := b.profileRun(t, profName(wE2E, pass), dur)
	res, err := kafkaE2E(b.ctx, b.targets[t].addr, topic, b.pool, b.plan.LatRecords, b.plan.Warmup, dur, b.meterFor(t))
	endProfile()
	*r = mergeResult(r, res)
	if err != nil {
		r.Error = err.Error()
	}
}

// kafkaE2E runs the closed loop of the workload: warmup records first (each
// waited for at the consumer, which also proves the consumer is polling),
// then up to records or dur of measured ones.
func kafkaE2E(ctx context.Context, bootstrap, topic string, pool [][]byte, records, warmup int, dur time.Duration, m *meter) (r Result, err error) {
	prod, err := newKgo(kgo.SeedBrokers(bootstrap), kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(0),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordDeliveryTimeout(flushGrace))
	if err != nil {
		return r, err
	}
	defer prod.Close()
	cons, err := newKgo(kgo.SeedBrokers(bootstrap), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return r, err
	}
	defer cons.Close()
	cctx, stop := context.WithCancel(ctx)
	defer stop()
	got := make(chan received, 1024)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for cctx.Err() == nil {
			fs := cons.PollFetches(cctx)
			at := time.Now()
			fs.EachRecord(func(rec *kgo.Record) {
				if len(rec.Key) == 8 {
					select {
					case got <- received{idx: binary.BigEndian.Uint64(rec.Key), at: at}:
					case <-cctx.Done():
					}
				}
			})
		}
	}()
	defer func() { stop(); <-done }()

	// one produces record idx and waits for the consumer to return it.
	one := func(idx uint64) (time.Duration, error) {
		key := binary.BigEndian.AppendUint64(nil, idx)
		wctx, c := context.WithTimeout(ctx, flushGrace)
		defer c()
		t0 := time.Now()
		if err := prod.ProduceSync(wctx, &kgo.Record{Key: key, Value: pool[idx%poolSize]}).FirstErr(); err != nil {
			return 0, fmt.Errorf("produce: %w", err)
		}
		for {
			select {
			case g := <-got:
				if g.idx == idx {
					return g.at.Sub(t0), nil
				}
			case <-wctx.Done():
				return 0, fmt.Errorf("record %d not consumed within %s", idx, flushGrace)
			}
		}
	}
	var idx uint64
	for ; idx < uint64(warmup); idx++ {
		if _, err := one(idx); err != nil {
			return r, fmt.Errorf("warm-up: %w", err)
		}
	}
	h := newHist()
	m.begin()
	start := time.Now()
	deadline := start.Add(dur)
	for i := 0; i < records && time.Now().Before(deadline); i++ {
		d, err := one(idx)
		if err != nil {
			mm := m.end()
			r.finish(time.Since(start), &mm)
			return r, err
		}
		_ = h.RecordValue(max(d.Microseconds(), 1))
		r.Records++
		r.Bytes += int64(len(pool[idx%poolSize]))
		idx++
	}
	mm := m.end()
	r.finish(time.Since(start), &mm)
	r.Latency, r.CDF = summarize(h)
	return r, nil
}

// writeE2E renders the end-to-end latency section.
func (b *bench) writeE2E(p func(string, ...any)) {
	ran := false
	for _, t := range allTargets {
		if b.anyResult(wE2E, "", t) != nil {
			ran = true
		}
	}
	if !ran {
		return
	}
	pl := b.plan
	p("## End-to-end latency (produce → a waiting consumer)\n\n")
	p("One franz-go producer (acks=all, idempotent, no linger) and one franz-go consumer (no group, the topic from its start, the client's default long poll: max wait 5 s, min bytes 1) on a fresh topic of %d partitions, closed loop: each record is produced once the consumer has received the one before. The figure is the time from the produce call to the return of the consumer's poll that holds the record: a waiting Fetch woken by the write (Kafka's purgatory; the sidecar's produce notifier for a write through the same sidecar) and answered. %d warm-up records, then up to %d records or %s; %d runs per target, interleaved, percentiles averaged over the runs (±spread). The direct Iggy clients have no long poll on protocol 0.11 and no row.\n\n",
		pl.Partitions, pl.Warmup, pl.LatRecords, pl.LatDur, pl.Passes)
	p("| target | p50 | p90 | p99 | p99.9 | max | samples | p50 vs Kafka | p99 vs Kafka | load / others |\n|---|---|---|---|---|---|---|---|---|---|\n")
	k50, k99 := b.st(wE2E, "", tKafka, p50), b.st(wE2E, "", tKafka, p99)
	for _, t := range allTargets {
		r0 := b.anyResult(wE2E, "", t)
		if r0 == nil {
			continue
		}
		runs := b.runsOf(wE2E, "", t)
		r := meanResult(runs)
		if r == nil || r.Latency == nil {
			p("| %s | %s |||||||||\n", targetLabel[t], status(r0))
			continue
		}
		l := r.Latency
		s50, s99 := statOf(runs, p50), statOf(runs, p99)
		p("| %s | %s | %s | %s | %s | %s | %d | %s | %s | %s |\n", targetLabel[t], s50.showUS(), fmtUS(l.P90), s99.showUS(), statOf(runs, p999).showUS(), fmtUS(l.Max), l.N,
			showRatio(s50, k50), showRatio(s99, k99), loadCell(runs))
	}
	p("\n")
}

// e2eSummary is the summary line of the workload, "" when it did not run.
func (b *bench) e2eSummary() string {
	s := b.st(wE2E, "", tSidecar, p50)
	if s.n == 0 {
		return ""
	}
	var parts []string
	for _, t := range []string{tKafka, tKfake} {
		if r := b.st(wE2E, "", t, p50); r.n > 0 {
			parts = append(parts, fmt.Sprintf("%s %s / %s (sidecar ÷ it at p50: %s)", targetLabel[t], r.showUS(), b.st(wE2E, "", t, p99).showUS(), showRatio(s, r)))
		}
	}
	return fmt.Sprintf("**End-to-end latency** p50 / p99, produce → a waiting consumer: sidecar %s / %s; %s.", s.showUS(), b.st(wE2E, "", tSidecar, p99).showUS(), strings.Join(parts, "; "))
}
