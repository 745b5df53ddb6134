package main

// Figures over the passes of a run: every throughput figure of the report is
// the mean of plan.Passes interleaved runs, shown with its spread (half the
// range between the lowest and the highest run, as a percentage of the
// mean). A comparison whose two ranges overlap is within the spread and is
// marked as noise.

import (
	"fmt"
	"math"
	"strings"
)

// stat is one figure over the runs that measured it.
type stat struct {
	mean, lo, hi float64
	n            int
}

// statOf folds f over runs; values below 0 (not measured) are left out.
func statOf(runs []*Result, f func(*Result) float64) stat {
	s := stat{lo: math.Inf(1), hi: math.Inf(-1)}
	for _, r := range runs {
		v := f(r)
		if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		s.mean += v
		s.lo = math.Min(s.lo, v)
		s.hi = math.Max(s.hi, v)
		s.n++
	}
	if s.n == 0 {
		return stat{}
	}
	s.mean /= float64(s.n)
	return s
}

// spread is half the range as a fraction of the mean.
func (s stat) spread() float64 {
	if s.n < 2 || s.mean == 0 {
		return 0
	}
	return (s.hi - s.lo) / 2 / math.Abs(s.mean)
}

// show formats the mean with its spread: "272.5 ±3%" ("–" when nothing
// was measured; no spread for a single run).
func (s stat) show(format string) string {
	if s.n == 0 {
		return "–"
	}
	v := fmt.Sprintf(format, s.mean)
	if s.n > 1 {
		v += fmt.Sprintf(" ±%.0f%%", s.spread()*100)
	}
	return v
}

// showUS is show for microseconds.
func (s stat) showUS() string {
	if s.n == 0 {
		return "–"
	}
	v := fmtUS(s.mean)
	if s.n > 1 {
		v += fmt.Sprintf(" ±%.0f%%", s.spread()*100)
	}
	return v
}

// overlaps reports whether the ranges of two figures overlap: their
// difference is smaller than their spread.
func (s stat) overlaps(o stat) bool {
	return s.n > 0 && o.n > 0 && s.lo <= o.hi && o.lo <= s.hi
}

// ratio is a ÷ b with its range [a.lo/b.hi, a.hi/b.lo].
func ratio(a, b stat) stat {
	if a.n == 0 || b.n == 0 || b.lo <= 0 || b.mean == 0 {
		return stat{}
	}
	return stat{mean: a.mean / b.mean, lo: a.lo / b.hi, hi: a.hi / b.lo, n: min(a.n, b.n)}
}

// diff is a − b with its range [a.lo−b.hi, a.hi−b.lo].
func diff(a, b stat) stat {
	if a.n == 0 || b.n == 0 {
		return stat{}
	}
	return stat{mean: a.mean - b.mean, lo: a.lo - b.hi, hi: a.hi - b.lo, n: min(a.n, b.n)}
}

// showRatio formats a ÷ b as "1.42×", marked "(noise)" when the two
// figures' ranges overlap (the difference is within the spread).
func showRatio(a, b stat) string {
	r := ratio(a, b)
	if r.n == 0 {
		return "–"
	}
	v := fmt.Sprintf("%.2f×", r.mean)
	if a.overlaps(b) && a != b {
		v += " (noise)"
	}
	return v
}

// runsOf are the successful runs of a workload/variant/target, in order.
func (b *bench) runsOf(workload, variant, target string) []*Result {
	var out []*Result
	for _, r := range b.results {
		if r.Workload == workload && r.Variant == variant && r.Target == target && r.ok() {
			out = append(out, r)
		}
	}
	return out
}

// st is the stat of f over the runs of a workload/variant/target.
func (b *bench) st(workload, variant, target string, f func(*Result) float64) stat {
	return statOf(b.runsOf(workload, variant, target), f)
}

// Common figures of a run.
func mbps(r *Result) float64 { return r.MBPerS }
func serverPerGB(r *Result) float64 {
	if r.ServerCPUs < 0 {
		return -1
	}
	return perGB(r.ServerCPUs, r.Bytes)
}

// serverPerRecord is the server process's CPU per record in µs (-1 when
// not measured).
func serverPerRecord(r *Result) float64 {
	if r.ServerCPUs < 0 || r.Records == 0 {
		return -1
	}
	return r.ServerCPUs * 1e6 / float64(r.Records)
}

// iggyPerRecord is the Iggy server's CPU per record in µs (-1 when not
// measured).
func iggyPerRecord(r *Result) float64 {
	if (r.IggyCPUs == 0 && r.IggyRSSMax == 0) || r.Records == 0 {
		return -1
	}
	return r.IggyCPUs * 1e6 / float64(r.Records)
}

func iggyPerGB(r *Result) float64 {
	if r.IggyCPUs == 0 && r.IggyRSSMax == 0 {
		return -1
	}
	return perGB(r.IggyCPUs, r.Bytes)
}
func pathPerGB(r *Result) float64 {
	s, i := serverPerGB(r), iggyPerGB(r)
	if i < 0 {
		return s
	}
	return max(0, s) + i
}
func p50(r *Result) float64 {
	if r.Latency == nil {
		return -1
	}
	return r.Latency.P50
}
func p99(r *Result) float64 {
	if r.Latency == nil {
		return -1
	}
	return r.Latency.P99
}
func p999(r *Result) float64 {
	if r.Latency == nil {
		return -1
	}
	return r.Latency.P999
}
func delivered(r *Result) float64 {
	if r.OfferedMBPerS <= 0 {
		return -1
	}
	return r.MBPerS / r.OfferedMBPerS
}

// meanResult folds the runs of one figure into one Result: rates, latency
// percentiles and allocations averaged, counts, bytes and CPU summed (so
// CPU per GB is over all the runs), peaks the highest. The CDF is the
// first run's.
func meanResult(runs []*Result) *Result {
	if len(runs) == 0 {
		return nil
	}
	if len(runs) == 1 {
		return runs[0]
	}
	m := *runs[0]
	n := float64(len(runs))
	m.Records, m.Bytes, m.Seconds, m.ServerCPUs, m.IggyCPUs, m.ClientCPUs = 0, 0, 0, 0, 0, 0
	m.RecPerS, m.MBPerS, m.AllocsPerRec, m.IggyBatchMsgs = 0, 0, 0, 0
	var lat Percentiles
	var flags []string
	for _, r := range runs {
		m.Records += r.Records
		m.Bytes += r.Bytes
		m.Seconds += r.Seconds
		m.ServerCPUs += r.ServerCPUs
		m.IggyCPUs += r.IggyCPUs
		m.ClientCPUs += r.ClientCPUs
		m.RecPerS += r.RecPerS / n
		m.MBPerS += r.MBPerS / n
		m.AllocsPerRec += r.AllocsPerRec / n
		m.IggyBatchMsgs += r.IggyBatchMsgs / n
		m.ServerRSSMax = max(m.ServerRSSMax, r.ServerRSSMax)
		m.IggyRSSMax = max(m.IggyRSSMax, r.IggyRSSMax)
		m.IggyConns = max(m.IggyConns, r.IggyConns)
		m.KafkaConns = max(m.KafkaConns, r.KafkaConns)
		if r.Latency != nil {
			lat.P50 += r.Latency.P50 / n
			lat.P90 += r.Latency.P90 / n
			lat.P99 += r.Latency.P99 / n
			lat.P999 += r.Latency.P999 / n
			lat.Max = max(lat.Max, r.Latency.Max)
			lat.N += r.Latency.N
		}
		if r.Flagged != "" {
			flags = append(flags, r.Flagged)
		}
	}
	if runs[0].Latency != nil {
		m.Latency = &lat
	}
	if runs[0].ServerCPUs < 0 {
		m.ServerCPUs = -1
	}
	if runs[0].AllocsPerRec < 0 {
		m.AllocsPerRec = -1
	}
	if runs[0].IggyBatchMsgs < 0 {
		m.IggyBatchMsgs = -1
	}
	m.Flagged = strings.Join(flags, "; ")
	return &m
}

// loadCell shows the machine's load over the runs of one figure: the
// 1-minute load average at the start of each run and the most CPU other
// processes used during one (cores), with ⚠ when a run was flagged.
func loadCell(runs []*Result) string {
	if len(runs) == 0 {
		return "–"
	}
	var loads []string
	foreign := -1.0
	flagged := 0
	for _, r := range runs {
		loads = append(loads, fmt.Sprintf("%.1f", r.Load1Before))
		foreign = max(foreign, r.ForeignCores)
		if r.Flagged != "" {
			flagged++
		}
	}
	v := strings.Join(loads, ", ")
	if foreign >= 0 {
		v += fmt.Sprintf(" / %.2f", foreign)
	}
	if flagged > 0 {
		v += fmt.Sprintf(" ⚠%d", flagged)
	}
	return v
}

// goal is one of the targets, checked against a figure.
type goal struct {
	what   string
	figure stat
	unit   string // format of the figure, e.g. "%.2f"
	atMost bool   // the target is an upper bound (else a lower bound)
	target float64
	where  string // which run the figure comes from
}

// verdict says whether the figure meets the target, taking its spread into
// account: met (every run meets it), missed by how much (no run does), or
// within the spread (the target lies inside the runs' range).
func (g goal) verdict() string {
	f := g.figure
	if f.n == 0 {
		return "not measured"
	}
	show := func(v float64) string { return fmt.Sprintf(g.unit, v) }
	meets := func(v float64) bool {
		if g.atMost {
			return v <= g.target
		}
		return v >= g.target
	}
	gap := f.mean - g.target
	if !g.atMost {
		gap = g.target - f.mean
	}
	rel := ""
	if g.target != 0 {
		rel = fmt.Sprintf(", %.0f%%", math.Abs(gap/g.target)*100)
	}
	switch {
	case meets(f.lo) && meets(f.hi):
		return "**met**"
	case !meets(f.lo) && !meets(f.hi):
		return fmt.Sprintf("**missed** by %s%s", show(math.Abs(gap)), rel)
	case meets(f.mean):
		return "met by the mean, within the spread"
	default:
		return fmt.Sprintf("missed by the mean (by %s%s), within the spread", show(math.Abs(gap)), rel)
	}
}
