package main

// The report's gnet section: the sidecar's event-loop settings compared
// run by run, and the recommendation drawn from them.

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

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
