package main

// Before and after: the report sets this run's headline figures beside
// the previous report's (the docs/bench/results.json the run is about to
// replace), and includes the tuning log (scripts/bench/tuning.md: what was
// tried, kept or reverted, with its A/B figures).

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// baseline is a previous run's results.json.
type baseline struct {
	Started time.Time `json:"started"`
	Plan    struct {
		Passes int `json:"passes"`
	} `json:"plan"`
	Results []*Result `json:"results"`
}

// loadBaseline reads the results.json in the output directory before it is
// overwritten (nil when there is none).
func (b *bench) loadBaseline() {
	data, err := os.ReadFile(filepath.Join(b.out, "bench", "results.json"))
	if err != nil {
		return
	}
	var bl baseline
	if json.Unmarshal(data, &bl) == nil && len(bl.Results) > 0 {
		b.before = &bl
	}
}

// writeBefore writes the before/after table of the headline figures.
func (b *bench) writeBefore(p func(string, ...any)) {
	if b.before == nil {
		return
	}
	old := &bench{results: b.before.Results, plan: b.plan}
	v0 := produceVariants[0].name
	mv := fmt.Sprintf("%.0f%% of direct", b.plan.MatchedFrac*100)
	type row struct {
		what       string
		w, v, t    string
		f          func(*Result) float64
		format     string
		beforeNote string
	}
	rows := []row{
		{"produce acks=1 none, sidecar MB/s", wProduce, v0, tSidecar, mbps, "%.1f", ""},
		{"produce acks=1 none, sidecar CPU s/GB", wProduce, v0, tSidecar, serverPerGB, "%.2f", ""},
		{"produce acks=1 none, Iggy behind the sidecar CPU s/GB", wProduce, v0, tSidecar, iggyPerGB, "%.2f", ""},
		{"produce, direct Go MB/s", wProduce, directVariant, tGo, mbps, "%.1f", ""},
		{"produce acks=1 none, Apache Kafka MB/s", wProduce, v0, tKafka, mbps, "%.1f", ""},
		{"matched load, sidecar CPU s/GB", wMatched, mv, tSidecar, serverPerGB, "%.2f", "(no such run)"},
		{"consume, sidecar MB/s", wConsume, "", tSidecar, mbps, "%.1f", " (read once from earliest)"},
		{"consume, sidecar CPU s/GB", wConsume, "", tSidecar, serverPerGB, "%.2f", " (read once from earliest)"},
		{"consume, direct Go MB/s", wConsume, "", tGo, mbps, "%.1f", " (read once from earliest)"},
		{"consume, Apache Kafka MB/s", wConsume, "", tKafka, mbps, "%.1f", " (read once from earliest)"},
		{"latency p50 sidecar µs", wLatency, "", tSidecar, p50, "%.0f", ""},
		{"latency p99 sidecar µs", wLatency, "", tSidecar, p99, "%.0f", ""},
		{"latency p50 direct Go µs", wLatency, "", tGo, p50, "%.0f", ""},
	}
	p("## Before and after\n\n")
	kind := "steady-state runs of this harness"
	if b.before.Plan.Passes < 2 {
		kind = "record-bounded runs of one to a few seconds, before this harness: the differences include the harness (steady state, interleaving)"
	}
	p("This run beside the report it replaced (%s, %d pass(es) per figure, %s). Between the two, the product changed as the tuning log below and the git log say; the machine's load differs too. *reading* says whether the earlier figure lies inside this run's range (noise) or outside it.\n\n",
		b.before.Started.UTC().Format("2006-01-02 15:04 UTC"), max(1, b.before.Plan.Passes), kind)
	p("| figure | before | after | after ÷ before | reading |\n|---|---|---|---|---|\n")
	for _, r := range rows {
		bs, as := old.st(r.w, r.v, r.t, r.f), b.st(r.w, r.v, r.t, r.f)
		if as.n == 0 && bs.n == 0 {
			continue
		}
		before := bs.show(r.format)
		if old := b.before.Plan.Passes < 2; old && bs.n == 0 && strings.HasPrefix(r.beforeNote, "(") {
			before = r.beforeNote
		} else if old && bs.n > 0 && !strings.HasPrefix(r.beforeNote, "(") {
			before += r.beforeNote // the earlier harness measured it differently
		}
		ratioS, reading := "–", "–"
		if as.n > 0 && bs.n > 0 && bs.mean != 0 {
			ratioS = fmt.Sprintf("%.2f", as.mean/bs.mean)
			reading = "outside this run's range"
			if as.overlaps(bs) {
				reading = "noise (inside this run's range)"
			}
		}
		p("| %s | %s | %s | %s | %s |\n", r.what, before, as.show(r.format), ratioS, reading)
	}
	p("\n")
}

// writeTuning includes the tuning log and the security costs
// (scripts/bench/security.md: the -tls-b A/B).
func (b *bench) writeTuning(p func(string, ...any)) {
	for _, name := range []string{"tuning.md", "security.md"} {
		data, err := os.ReadFile(filepath.Join(b.root, "scripts", "bench", name))
		if err != nil || len(strings.TrimSpace(string(data))) == 0 {
			continue
		}
		p("%s\n\n", strings.TrimSpace(string(data)))
	}
}
