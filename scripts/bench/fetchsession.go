package main

// The fetch-session workload (KIP-227): what one Fetch costs the server
// for a consumer of fsPartitions partitions of which one receives data,
// with fetch sessions (franz-go's default: after the first full Fetch the
// consumer sends, and the server answers, only what changed) and without
// (kgo.DisableFetchSessions: every Fetch names all 200 partitions and is
// answered for all of them). On the sidecar and on the Kafka broker.
//
// A producer writes one 100-byte record to partition 0 every
// fsProduceEvery; the consumer (no group: the partitions assigned
// directly, from the end) fetches with franz-go's defaults. After
// fsWarmup, the server process's CPU time and the Fetch requests the
// consumer sent are counted over fsMeasure: the figure is the server's CPU
// per Fetch (for the sidecar: the sidecar process; the embedded Iggy
// server's CPU is reported beside it).

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

const (
	wFetchSession  = "fetchsession"
	fsPartitions   = 200
	fsProduceEvery = 10 * time.Millisecond
	fsWarmup       = 3 * time.Second
	fsMeasure      = 15 * time.Second
	fsSessions     = "sessions"
	fsSessionless  = "sessionless"
)

// fetchCounter counts the Fetch requests a client wrote.
type fetchCounter struct{ n atomic.Int64 }

func (f *fetchCounter) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if key == 1 && err == nil {
		f.n.Add(1)
	}
}

func (b *bench) runFetchSession() {
	if b.plan.Smoke {
		b.note("fetch-session CPU not measured in -smoke")
		return
	}
	var group []string
	for _, t := range []string{tSidecar, tKafka} {
		if _, ok := b.targets[t]; ok {
			group = append(group, t)
		}
	}
	if len(group) == 0 {
		b.note("fetch-session CPU not measured: it needs the sidecar or the kafka target")
		return
	}
	for pass := 1; pass <= max(1, b.plan.Passes); pass++ {
		for _, t := range order(group, pass) {
			s := b.targets[t]
			topic := b.topicName(wFetchSession, t)
			ctx, cancel := context.WithTimeout(b.ctx, 60*time.Second)
			err := kafkaCreateTopic(ctx, s.addr, topic, fsPartitions)
			cancel()
			variants := []string{fsSessions, fsSessionless}
			if pass%2 == 0 {
				variants = []string{fsSessionless, fsSessions}
			}
			for _, v := range variants {
				r := &Result{Workload: wFetchSession, Variant: v, Pass: pass, Target: t}
				switch {
				case err != nil:
					r.Error = err.Error()
				default:
					if sk := b.skipFor(fsWarmup + fsMeasure + b.slack(15*time.Second)); sk != "" {
						r.Skipped = sk
					} else if e := b.fetchSessionRun(s, topic, v == fsSessions, r); e != nil {
						r.Error = e.Error()
					}
				}
				b.add(r)
			}
			b.deleteTopic(t, topic)
		}
	}
}

// fetchSessionRun measures one variant on server s.
func (b *bench) fetchSessionRun(s *server, topic string, sessions bool, r *Result) error {
	ctx, cancel := context.WithCancel(b.ctx)
	defer cancel()
	prod, err := newKgo(kgo.SeedBrokers(s.addr), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	if err != nil {
		return err
	}
	defer prod.Close()
	parts := map[int32]kgo.Offset{}
	for p := int32(0); p < fsPartitions; p++ {
		parts[p] = kgo.NewOffset().AtEnd()
	}
	var fetches fetchCounter
	opts := []kgo.Opt{kgo.SeedBrokers(s.addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: parts}), kgo.WithHooks(&fetches)}
	if !sessions {
		opts = append(opts, kgo.DisableFetchSessions())
	}
	cons, err := newKgo(opts...)
	if err != nil {
		return err
	}
	defer cons.Close()
	value := make([]byte, 100)
	go func() {
		tick := time.NewTicker(fsProduceEvery)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				prod.Produce(ctx, &kgo.Record{Partition: 0, Value: value}, nil)
			}
		}
	}()
	var consumed atomic.Int64
	var pollErr atomic.Value
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			f := cons.PollFetches(ctx)
			if f.IsClientClosed() || ctx.Err() != nil {
				return
			}
			f.EachError(func(_ string, _ int32, err error) { pollErr.Store(err) })
			consumed.Add(int64(f.NumRecords()))
		}
	}()
	select {
	case <-time.After(fsWarmup):
	case <-b.ctx.Done():
		return b.ctx.Err()
	}
	cpu0, err := cpuTime(s.pid)
	if err != nil {
		return err
	}
	var iggy0 time.Duration
	if s.iggyPath && b.embedded != nil {
		iggy0, _ = cpuTime(b.embedded.pid)
	}
	n0, c0, t0 := fetches.n.Load(), consumed.Load(), time.Now()
	select {
	case <-time.After(fsMeasure):
	case <-b.ctx.Done():
		return b.ctx.Err()
	}
	cpu1, err := cpuTime(s.pid)
	if err != nil {
		return err
	}
	if s.iggyPath && b.embedded != nil {
		i1, _ := cpuTime(b.embedded.pid)
		r.IggyCPUs = (i1 - iggy0).Seconds()
	}
	r.Seconds = time.Since(t0).Seconds()
	r.FetchRequests = fetches.n.Load() - n0
	r.Records = consumed.Load() - c0
	r.RecPerS = float64(r.Records) / r.Seconds
	r.ServerCPUs = (cpu1 - cpu0).Seconds()
	cancel()
	<-done
	if r.FetchRequests == 0 {
		return fmt.Errorf("the consumer sent no Fetch in %s", fsMeasure)
	}
	if r.Records == 0 {
		if e, _ := pollErr.Load().(error); e != nil {
			return fmt.Errorf("nothing consumed: %w", e)
		}
		return fmt.Errorf("nothing consumed in %s", fsMeasure)
	}
	r.CPUPerFetchUs = r.ServerCPUs / float64(r.FetchRequests) * 1e6
	return nil
}

// writeFetchSession renders the fetch-session section.
func (b *bench) writeFetchSession(p func(string, ...any)) {
	any := false
	for _, r := range b.results {
		any = any || r.Workload == wFetchSession
	}
	if !any {
		return
	}
	p("## Fetch sessions (KIP-227): CPU per Fetch, 200 partitions, one receiving data\n\n")
	p("A franz-go consumer assigned all %d partitions of a fresh topic (from the end, no group), a producer writing one 100-byte record to partition 0 every %s. **sessions**: franz-go's default (incremental Fetches once the session exists: only what changed is sent and answered); **sessionless**: `kgo.DisableFetchSessions()` (every Fetch names and is answered for all %d partitions). After %s of warm-up, the server process's CPU time and the Fetch requests the consumer sent are counted over %s; each cell is CPU per Fetch (mean of the passes, every pass in the order run), then Fetches per second. The sidecar's figure is the sidecar process; the embedded Iggy server's CPU over the same time is in the last column.\n\n",
		fsPartitions, fsProduceEvery, fsPartitions, fsWarmup, fsMeasure)
	p("| target | sessions: CPU per Fetch | sessionless: CPU per Fetch | sessionless ÷ sessions | Fetches/s (sessions; sessionless) | Iggy CPU s (sessions; sessionless) |\n|---|---|---|---|---|---|\n")
	for _, t := range []string{tSidecar, tKafka} {
		ws, wl := b.runsOf(wFetchSession, fsSessions, t), b.runsOf(wFetchSession, fsSessionless, t)
		if len(ws) == 0 && len(wl) == 0 {
			if b.ran(t) {
				p("| %s | %s | %s | – | – | – |\n", targetLabel[t], status(b.anyResult(wFetchSession, fsSessions, t)), status(b.anyResult(wFetchSession, fsSessionless, t)))
			}
			continue
		}
		per := func(rs []*Result) (string, float64) {
			if len(rs) == 0 {
				return "–", 0
			}
			st := statOf(rs, func(r *Result) float64 { return r.CPUPerFetchUs })
			s := fmt.Sprintf("%.0f µs", st.mean)
			for i, r := range rs {
				if i == 0 {
					s += " ("
				} else {
					s += ", "
				}
				s += fmt.Sprintf("%.0f", r.CPUPerFetchUs)
			}
			return s + ")", st.mean
		}
		rate := func(rs []*Result) string {
			if len(rs) == 0 {
				return "–"
			}
			return fmt.Sprintf("%.0f", statOf(rs, func(r *Result) float64 { return float64(r.FetchRequests) / r.Seconds }).mean)
		}
		iggy := func(rs []*Result) string {
			if len(rs) == 0 || t != tSidecar {
				return "–"
			}
			return fmt.Sprintf("%.2f", statOf(rs, func(r *Result) float64 { return r.IggyCPUs }).mean)
		}
		sc, sm := per(ws)
		lc, lm := per(wl)
		ratio := "–"
		if sm > 0 && lm > 0 {
			ratio = fmt.Sprintf("%.1f×", lm/sm)
		}
		p("| %s | %s | %s | %s | %s; %s | %s; %s |\n", targetLabel[t], sc, lc, ratio, rate(ws), rate(wl), iggy(ws), iggy(wl))
	}
	p("\n")
}
