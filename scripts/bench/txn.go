package main

// The transaction workload (issue 25): what a Kafka transaction costs on
// the sidecar and on the Kafka broker, with franz-go, transaction protocol
// v1 on both (Produce v11, AddPartitionsToTxn v3, EndTxn v4: what the
// sidecar serves), and on Kafka also under v2 (KIP-890: what franz-go and
// Kafka 4.x use by default), as rows of their own.
//
//   - EndTxn latency: a transactional producer runs transactions of
//     txnLatRecords 1 KiB records, to one partition or spread over four,
//     one after the other; each transaction's records are flushed, then
//     EndTransaction(commit) is timed (the EndTxn round trip: the
//     coordinator's decision and, on the sidecar, the markers). The whole
//     transaction (Begin to the commit's answer) is timed beside it.
//   - Throughput: one producer client sending 1 KiB records as fast as it
//     can (at most txnBuffered records buffered) to a 4-partition topic:
//     idempotent (franz-go's default), transactional committing every
//     100 ms, transactional committing every 1,000 records. A record of a
//     transaction counts when its commit is answered inside the window.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

const (
	wTxn          = "txn"
	txnLatRecords = 10   // records per transaction of the latency runs
	txnLatWarm    = 10   // transactions before the timed ones
	txnLatMax     = 2000 // timed transactions at most per run
	txnBuffered   = 10_000

	txnEnd1     = "endtxn 1 partition"
	txnEnd4     = "endtxn 4 partitions"
	txnIdem     = "idempotent"
	txnEvery100 = "txn every 100 ms"
	txnEvery1k  = "txn every 1000 records"
	// txnV2 marks a run under transaction protocol v2 (KIP-890: franz-go's
	// newest versions, the server's transaction.version 2 finalized), a
	// row beside the v1 figures, on both targets.
	txnV2 = " (protocol v2)"
)

// txnVersions caps franz-go at transaction protocol v1.
func txnVersions() *kversion.Versions {
	vs := kversion.Stable()
	vs.SetMaxKeyVersion(0, 11)
	vs.SetMaxKeyVersion(24, 3)
	vs.SetMaxKeyVersion(26, 4)
	return vs
}

func (b *bench) runTxn() {
	var group []string
	for _, t := range []string{tSidecar, tKafka} {
		if _, ok := b.targets[t]; ok {
			group = append(group, t)
		}
	}
	if len(group) == 0 {
		b.note("transaction costs not measured: they need the sidecar or the kafka target")
		return
	}
	latDur := 2 * b.plan.LatDur
	win := windowSpec{warm: b.plan.Warm, measure: b.plan.Measure}
	for pass := 1; pass <= max(1, b.plan.Passes); pass++ {
		for _, t := range order(group, pass) {
			s := b.targets[t]
			topic := b.topicName(wTxn, t)
			if err := b.createTopic(t, topic); err != nil {
				b.add(&Result{Workload: wTxn, Variant: txnEnd1, Target: t, Pass: pass, Error: err.Error()})
				continue
			}
			variants := []string{txnEnd1, txnEnd4, txnIdem, txnEvery100, txnEvery1k}
			variants = append(variants, txnEnd1+txnV2, txnEnd4+txnV2, txnEvery100+txnV2, txnEvery1k+txnV2)
			if pass%2 == 0 {
				slices.Reverse(variants)
			}
			for _, v := range variants {
				r := &Result{Workload: wTxn, Variant: v, Target: t, Pass: pass}
				var err error
				base, v2 := strings.CutSuffix(v, txnV2)
				if v2 {
					err = kafkaTxnV2(b.ctx, s.addr)
				}
				switch {
				case err != nil:
				case base == txnEnd1 || base == txnEnd4:
					if sk := b.skipFor(latDur + b.slack(20*time.Second)); sk != "" {
						r.Skipped = sk
						break
					}
					parts := 1
					if base == txnEnd4 {
						parts = b.plan.Partitions
					}
					err = b.txnLatency(s, t, topic, parts, latDur, v2, r)
				default:
					if sk := b.skipFor(b.plan.runLen() + b.slack(20*time.Second)); sk != "" {
						r.Skipped = sk
						break
					}
					err = b.txnThroughput(t, topic, base, win, v2, r)
				}
				if err != nil {
					r.Error = err.Error()
				}
				b.add(r)
			}
			b.deleteTopic(t, topic)
		}
	}
}

// kafkaTxnV2 checks that the server at addr has transaction.version 2
// finalized (KIP-890), so that a client at its newest versions runs
// transaction protocol v2.
func kafkaTxnV2(ctx context.Context, addr string) error {
	cl, err := newKgo(kgo.SeedBrokers(addr))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	for _, f := range resp.FinalizedFeatures {
		if f.Name == "transaction.version" && f.MaxVersionLevel >= 2 {
			return nil
		}
	}
	return errors.New("the server has no transaction.version 2 finalized: no transaction protocol v2")
}

// txnID is a fresh transactional id.
func (b *bench) txnID(t string) string {
	b.seq++
	return fmt.Sprintf("bench-txn-%s-%d-%d", t, b.started.UnixNano(), b.seq)
}

// txnLatency times EndTransaction(commit) of transactions of txnLatRecords
// records over parts partitions.
func (b *bench) txnLatency(s *server, t, topic string, parts int, dur time.Duration, v2 bool, r *Result) error {
	opts := []kgo.Opt{kgo.SeedBrokers(s.addr), kgo.DefaultProduceTopic(topic), kgo.TransactionalID(b.txnID(t)),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0)}
	if !v2 {
		opts = append(opts, kgo.MaxVersions(txnVersions()))
	}
	cl, err := newKgo(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(b.ctx, dur+30*time.Second)
	defer cancel()
	end, whole := newHist(), newHist()
	var done, records, bytes int64
	m := b.meterFor(t)
	var deadline time.Time
	begun := false
	defer func() {
		if begun {
			m.end()
		}
	}()
	for i := 0; i < txnLatWarm+txnLatMax; i++ {
		if i == txnLatWarm {
			m.begin()
			begun = true
			deadline = time.Now().Add(dur)
		}
		if i > txnLatWarm && time.Now().After(deadline) {
			break
		}
		t0 := time.Now()
		if err := cl.BeginTransaction(); err != nil {
			return err
		}
		for j := range txnLatRecords {
			rec := &kgo.Record{Partition: int32(j % parts), Value: b.pool[(i*txnLatRecords+j)%poolSize]}
			cl.Produce(ctx, rec, nil)
		}
		if err := cl.Flush(ctx); err != nil {
			return fmt.Errorf("flush: %w", err)
		}
		t1 := time.Now()
		if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
			return fmt.Errorf("commit: %w", err)
		}
		t2 := time.Now()
		if i < txnLatWarm {
			continue
		}
		_ = end.RecordValue(max(t2.Sub(t1).Microseconds(), 1))
		_ = whole.RecordValue(max(t2.Sub(t0).Microseconds(), 1))
		done++
		records += txnLatRecords
		for j := range txnLatRecords {
			bytes += int64(len(b.pool[(i*txnLatRecords+j)%poolSize]))
		}
	}
	if done == 0 {
		return errors.New("no transaction was timed")
	}
	mm := m.end()
	begun = false
	el := time.Since(deadline.Add(-dur))
	r.Records, r.Bytes = records, bytes
	r.finish(el, &mm)
	r.Latency, _ = summarize(end)
	r.TxnLatency, _ = summarize(whole)
	r.TxnPerS = float64(done) / el.Seconds()
	return nil
}

// txnThroughput is a steady-state produce run of one client, idempotent or
// transactional (variant).
func (b *bench) txnThroughput(t, topic, variant string, win windowSpec, v2 bool, r *Result) error {
	opts := []kgo.Opt{kgo.SeedBrokers(b.targets[t].addr), kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(5 * time.Millisecond),
		kgo.MaxBufferedRecords(txnBuffered),
		kgo.RecordDeliveryTimeout(win.warm + win.measure + flushGrace), kgo.ProduceRequestTimeout(flushGrace)}
	if !v2 {
		opts = append(opts, kgo.MaxVersions(txnVersions()))
	}
	txn := variant != txnIdem
	if txn {
		opts = append(opts, kgo.TransactionalID(b.txnID(t)))
	}
	cl, err := newKgo(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	m := b.meterFor(t)
	w, runCtx, cancel := openWindow(b.ctx, m, win)
	defer cancel()
	var (
		counted, bytes, failed, txns atomic.Int64
		firstErr                     atomic.Value
		mu                           sync.Mutex
		h                            = newHist()
	)
	count := func(n, nb int64, at time.Time) {
		switch {
		case w.before(at):
			w.warmCount.Add(n)
		case w.in(at):
			counted.Add(n)
			bytes.Add(nb)
		}
	}
	promise := func(rec *kgo.Record, err error) {
		if err != nil {
			if runCtx.Err() == nil || !(errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
				failed.Add(1)
				firstErr.CompareAndSwap(nil, err)
			}
			return
		}
		if !txn {
			count(1, int64(len(rec.Value)), time.Now())
		}
	}
	j := 0
	if !txn {
		for runCtx.Err() == nil {
			cl.Produce(runCtx, &kgo.Record{Value: b.pool[j%poolSize]}, promise)
			j++
		}
	} else {
		// The commits use b.ctx, not the window's context: a cancelled
		// EndTxn leaves the client's state unknown.
		for runCtx.Err() == nil {
			if err := cl.BeginTransaction(); err != nil {
				return err
			}
			start, n, nb := time.Now(), int64(0), int64(0)
			for runCtx.Err() == nil {
				if variant == txnEvery1k && n == 1000 || variant == txnEvery100 && time.Since(start) >= 100*time.Millisecond {
					break
				}
				v := b.pool[j%poolSize]
				cl.Produce(b.ctx, &kgo.Record{Value: v}, promise)
				j++
				n++
				nb += int64(len(v))
			}
			fctx, fcancel := context.WithTimeout(b.ctx, flushGrace)
			ferr := cl.Flush(fctx)
			fcancel()
			if ferr != nil {
				return fmt.Errorf("flush: %w", ferr)
			}
			t1 := time.Now()
			if err := cl.EndTransaction(b.ctx, kgo.TryCommit); err != nil {
				return fmt.Errorf("commit: %w", err)
			}
			t2 := time.Now()
			count(n, nb, t2)
			if w.in(t2) {
				txns.Add(1)
				mu.Lock()
				_ = h.RecordValue(max(t2.Sub(t1).Microseconds(), 1))
				mu.Unlock()
			}
		}
	}
	mm := w.wait()
	if !txn {
		fctx, fcancel := context.WithTimeout(b.ctx, flushGrace)
		_ = cl.Flush(fctx)
		fcancel()
	}
	r.Records, r.Bytes, r.Errors = counted.Load(), bytes.Load(), failed.Load()
	r.finish(w.seconds(), &mm)
	r.CalRecPerS = w.calRate()
	if txn {
		r.Latency, _ = summarize(h)
		r.TxnPerS = float64(txns.Load()) / w.seconds().Seconds()
	}
	if !mm.Began {
		return errors.New("the run ended before its window opened")
	}
	if e, ok := firstErr.Load().(error); ok {
		return fmt.Errorf("%d records failed, first: %w", r.Errors, e)
	}
	return nil
}

// txnRow is one row of a transaction table: the runs of variant v on t.
type txnRow struct{ t, v, label string }

// txnRows are the rows of variant v: one per target, each target's protocol
// v2 runs after its v1 row (never for the idempotent producer).
func txnRows(group []string, v string) []txnRow {
	var out []txnRow
	for _, t := range group {
		out = append(out, txnRow{t, v, targetLabel[t]})
		if v != txnIdem {
			out = append(out, txnRow{t, v + txnV2, targetLabel[t] + ", protocol v2"})
		}
	}
	return out
}

// writeTxn renders the transaction section.
func (b *bench) writeTxn(p func(string, ...any)) {
	any := false
	for _, r := range b.results {
		any = any || r.Workload == wTxn
	}
	if !any {
		return
	}
	var group []string
	for _, t := range []string{tSidecar, tKafka} {
		if b.ran(t) {
			group = append(group, t)
		}
	}
	p("## The cost of a transaction (issue 25)\n\n")
	p("franz-go, transaction protocol v1 on both targets (Produce v11, AddPartitionsToTxn v3, EndTxn v4); the rows *protocol v2* are each target under KIP-890's v2 (franz-go's newest versions, the server's transaction.version 2 finalized: Produce v12 adds the partitions implicitly, EndTxn v5 bumps the epoch). %d pass(es), the targets and the variants interleaved. "+
		"**EndTxn latency**: one transactional producer runs transactions of %d 1 KiB records, to one partition or spread over %d, back to back (%d untimed first, then for up to %s or %d transactions); each transaction's records are flushed, then `EndTransaction(commit)` is timed: the EndTxn round trip (on the sidecar the decision written to the coordinator's log in Iggy and a marker appended to each partition before the answer; Kafka answers after its PREPARE_COMMIT and writes the markers afterwards). *transaction* is Begin to the commit's answer (produce, AddPartitionsToTxn and EndTxn): a transaction that starts while the previous one's markers are still being written meets CONCURRENT_TRANSACTIONS on AddPartitionsToTxn, and franz-go retries after its backoff (20 ms by default, growing). "+
		"**Throughput**: one client producing 1 KiB records as fast as it can (at most %d buffered, linger 5 ms) to a %d-partition topic: idempotent (franz-go's default) or transactional, committing every 100 ms or every 1,000 records; a transactional record counts when its commit is answered inside the window (%s warm-up, %s window).\n\n",
		max(1, b.plan.Passes), txnLatRecords, b.plan.Partitions, txnLatWarm, 2*b.plan.LatDur, txnLatMax, txnBuffered, b.plan.Partitions, b.plan.Warm, b.plan.Measure)
	p("| EndTxn (commit) | target | EndTxn p50 | EndTxn p99 | transaction p50 | transaction p99 | transactions/s | sidecar ÷ Kafka (p50) |\n|---|---|---|---|---|---|---|---|\n")
	for _, v := range []string{txnEnd1, txnEnd4} {
		kp50 := b.st(wTxn, v, tKafka, func(r *Result) float64 { return r.Latency.P50 })
		for _, row := range txnRows(group, v) {
			t, label := row.t, row.label
			rs := b.runsOf(wTxn, row.v, t)
			if len(rs) == 0 {
				if r := b.anyResult(wTxn, row.v, t); r != nil || row.v == v {
					p("| %d records, %s | %s | %s ||||||\n", txnLatRecords, v[len("endtxn "):], label, status(r))
				}
				continue
			}
			pct := func(f func(r *Result) float64) string { return statOf(rs, f).showUS() }
			p50 := statOf(rs, func(r *Result) float64 { return r.Latency.P50 })
			vs := "–"
			if t == tSidecar {
				vs = showRatio(p50, kp50)
			}
			p("| %d records, %s | %s | %s | %s | %s | %s | %s | %s |\n", txnLatRecords, v[len("endtxn "):], label, p50.showUS(),
				pct(func(r *Result) float64 { return r.Latency.P99 }), pct(func(r *Result) float64 { return r.TxnLatency.P50 }),
				pct(func(r *Result) float64 { return r.TxnLatency.P99 }), statOf(rs, func(r *Result) float64 { return r.TxnPerS }).show("%.0f"), vs)
		}
	}
	p("\n| producer | target | records/s | MB/s | ÷ idempotent | sidecar ÷ Kafka | server CPU s/GB | Iggy CPU s/GB | commits/s | EndTxn p50 / p99 |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for _, v := range []string{txnIdem, txnEvery100, txnEvery1k} {
		for _, row := range txnRows(group, v) {
			t, label := row.t, row.label
			rs := b.runsOf(wTxn, row.v, t)
			if len(rs) == 0 {
				if r := b.anyResult(wTxn, row.v, t); r != nil || row.v == v {
					p("| %s | %s | %s ||||||||\n", v, label, status(r))
				}
				continue
			}
			rec := statOf(rs, func(r *Result) float64 { return r.RecPerS })
			idem := b.st(wTxn, txnIdem, t, func(r *Result) float64 { return r.RecPerS })
			vi, commits, lat := "1", "–", "–"
			if v != txnIdem {
				vi = showRatio(rec, idem)
				commits = statOf(rs, func(r *Result) float64 { return r.TxnPerS }).show("%.1f")
				lat = statOf(rs, func(r *Result) float64 { return r.Latency.P50 }).showUS() + " / " + statOf(rs, func(r *Result) float64 { return r.Latency.P99 }).showUS()
			}
			iggy, vk := "–", "–"
			if t == tSidecar {
				iggy = statOf(rs, func(r *Result) float64 { return perGB(r.IggyCPUs, r.Bytes) }).show("%.2f")
				vk = showRatio(rec, b.st(wTxn, v, tKafka, func(r *Result) float64 { return r.RecPerS }))
			}
			p("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", v, label, rec.show("%.0f"), statOf(rs, mbps).show("%.1f"), vi, vk,
				statOf(rs, serverPerGB).show("%.2f"), iggy, commits, lat)
		}
	}
	p("\n")
	var flagged int
	for _, r := range b.results {
		if r.Workload == wTxn && r.Flagged != "" {
			flagged++
		}
	}
	if flagged > 0 {
		p("%d of these runs were taken on a busy machine (⚠: load above %.1f or other processes above %.2f cores; *Every run* lists them).\n\n", flagged, b.plan.MaxLoad, b.plan.MaxForeign)
	}
}
