package main

import (
	"fmt"
	"strings"
	"testing"
)

// The end-to-end section and its target render from results alone: the
// sidecar's percentiles beside Kafka's with the ratio, a failed run shown
// with its reason, and the target missed when the sidecar is slower.
func TestE2ESection(t *testing.T) {
	b := &bench{plan: fullPlan()}
	run := func(tg string, pass int, p50, p99 float64) *Result {
		return &Result{Workload: wE2E, Target: tg, Pass: pass, Records: 1000, Bytes: 1024000, Seconds: 1,
			Latency: &Percentiles{P50: p50, P90: p50, P99: p99, P999: p99, Max: p99, N: 1000}}
	}
	b.results = []*Result{
		run(tSidecar, 1, 900, 3000), run(tSidecar, 2, 1100, 5000),
		run(tKafka, 1, 400, 2000), run(tKafka, 2, 600, 2000),
		{Workload: wE2E, Target: tKfake, Pass: 1, Error: "record 3 not consumed within 30s"},
	}
	var w strings.Builder
	b.writeE2E(func(f string, a ...any) { w.WriteString(fmt.Sprintf(f, a...)) })
	md := w.String()
	for _, want := range []string{
		"## End-to-end latency (produce → a waiting consumer)",
		"| sidecar → embedded Iggy | 1.00 ms ±10% |",
		"| 2.00× | 2.00× |",
		"| kfake | FAILED: record 3 not consumed within 30s |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("section lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "direct: Go client") {
		t.Errorf("section has a row for a target that did not run:\n%s", md)
	}
	var g *goal
	for _, x := range b.goals() {
		if x.what == "end-to-end p50 ÷ Apache Kafka" {
			g = &x
		}
	}
	if g == nil {
		t.Fatal("no end-to-end target")
	}
	if v := g.verdict(); !strings.HasPrefix(v, "**missed** by 1.00×") {
		t.Errorf("verdict %q, want missed by 1.00×", v)
	}
	if s := b.e2eSummary(); !strings.Contains(s, "sidecar 1.00 ms ±10% / 4.00 ms ±25%") {
		t.Errorf("summary %q", s)
	}
}
