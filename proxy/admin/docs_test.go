package admin

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kafka-iggy/kafka-iggy/embedded/embedtest"
)

var update = flag.Bool("update", false, "rewrite the generated metrics list in docs/OPERATIONS.md")

const (
	metricsBegin = "<!-- BEGIN METRICS: generated from proxy/admin by `go test ./proxy/admin -run TestOperationsMetricsList -update`; do not edit by hand -->\n"
	metricsEnd   = "<!-- END METRICS -->"
)

// metricsList renders the table of every kafka_iggy_* series.
func metricsList(m *Metrics) string {
	var b strings.Builder
	b.WriteString("\n| series | type | labels | meaning |\n|---|---|---|---|\n")
	for _, s := range m.series {
		labels := "—"
		if len(s.labels) > 0 {
			labels = "`" + strings.Join(s.labels, "`, `") + "`"
		}
		b.WriteString("| `" + s.name + "` | " + s.kind + " | " + labels + " | " + strings.ReplaceAll(s.help, "|", `\|`) + " |\n")
	}
	b.WriteString("\n")
	return b.String()
}

// docs/OPERATIONS.md lists exactly the series NewMetrics registers.
func TestOperationsMetricsList(t *testing.T) {
	path := filepath.Join("..", "..", "docs", "OPERATIONS.md")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	i, j := strings.Index(doc, metricsBegin), strings.Index(doc, metricsEnd)
	if i < 0 || j < i {
		t.Fatalf("%s: no metrics markers", path)
	}
	want := metricsList(NewMetrics("docs"))
	if doc[i+len(metricsBegin):j] == want {
		return
	}
	if *update {
		if err := os.WriteFile(path, []byte(doc[:i+len(metricsBegin)]+want+doc[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s: the metrics list is stale; run go test ./proxy/admin -run TestOperationsMetricsList -update", path)
}

// Every described series is exposed under its name once touched.
func TestSeriesDescribedAreRegistered(t *testing.T) {
	m := NewMetrics("x")
	base := startAdmin(t, m, NewReadiness())
	// Touch every labelled family once so it appears in the exposition.
	p, i, br := m.Proxy(), m.Iggy(), m.Bridge()
	p.ConnOpened()
	p.ConnClosed(0)
	p.Request(0, 0, 0, 0)
	i.QueueDepth(0, 0)
	i.Request("x", 0, nil)
	br.KafkaError(0, 1)
	m.SetCoordination("d", func() CoordinationStats { return CoordinationStats{} })
	fams := embedtest.Scrape(t, base+"/metrics")
	for _, s := range m.series {
		if _, ok := fams[s.name]; !ok {
			t.Errorf("%s described but not exposed", s.name)
		}
	}
}
