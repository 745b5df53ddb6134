package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.yaml.in/yaml/v3"

	"github.com/kafka-iggy/kafka-iggy/embedded/embedtest"
)

// monitoringQueries returns every PromQL expression of the Grafana
// dashboard and of the alert rules in deploy/, keyed by where it is.
func monitoringQueries(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	raw, err := os.ReadFile(filepath.Join(repoRoot, "deploy", "grafana", "kafka-iggy-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				RefID string `json:"refId"`
				Expr  string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatal(err)
	}
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			out["dashboard "+p.Title+" "+tg.RefID] = tg.Expr
		}
	}
	raw, err = os.ReadFile(filepath.Join(repoRoot, "deploy", "prometheus", "kafka-iggy-rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var rules struct {
		Groups []struct {
			Rules []struct {
				Alert string `yaml:"alert"`
				Expr  string `yaml:"expr"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(raw, &rules); err != nil {
		t.Fatal(err)
	}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			out["alert "+r.Alert] = r.Expr
		}
	}
	if len(out) < 20 {
		t.Fatalf("only %d queries found", len(out))
	}
	return out
}

var (
	// A series selector: a metric name of the sidecar and its matchers.
	selectorRE = regexp.MustCompile(`\b((?:kafka_iggy|go|process)_[a-z0-9_]+)(\{[^}]*\})?`)
	matcherRE  = regexp.MustCompile(`([a-z_]+)\s*(?:=~|!~|!=|=)`)
	groupingRE = regexp.MustCompile(`\b(?:by|on|without|group_left|group_right)\s*\(([^)]*)\)`)
)

// targetLabels are added by Prometheus when it scrapes, not by the sidecar.
var targetLabels = map[string]bool{"instance": true, "job": true}

// family maps a queried series name to its metric family (a histogram's
// _bucket, _sum and _count series belong to the histogram).
func family(fams embedtest.Families, name string) (string, bool) {
	if _, ok := fams[name]; ok {
		return name, true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok {
			if f, ok := fams[base]; ok && f.GetType().String() == "HISTOGRAM" {
				return base, true
			}
		}
	}
	return "", false
}

// labelsOf returns the label names the family's series carry (le for a
// histogram's buckets).
func labelsOf(fams embedtest.Families, fam string) map[string]bool {
	out := map[string]bool{}
	f := fams[fam]
	if f.GetType().String() == "HISTOGRAM" {
		out["le"] = true
	}
	for _, m := range f.GetMetric() {
		for _, l := range m.GetLabel() {
			out[l.GetName()] = true
		}
	}
	return out
}

// checkQuery reports the metric names and labels expr uses that the
// scraped families do not have.
func checkQuery(fams embedtest.Families, expr string) []string {
	var problems []string
	have := map[string]bool{} // labels of every series of the expression
	for _, m := range selectorRE.FindAllStringSubmatch(expr, -1) {
		fam, ok := family(fams, m[1])
		if !ok {
			problems = append(problems, "no series "+m[1])
			continue
		}
		labels := labelsOf(fams, fam)
		for l := range labels {
			have[l] = true
		}
		for _, lm := range matcherRE.FindAllStringSubmatch(m[2], -1) {
			if !labels[lm[1]] && !targetLabels[lm[1]] {
				problems = append(problems, m[1]+" has no label "+lm[1])
			}
		}
	}
	for _, g := range groupingRE.FindAllStringSubmatch(expr, -1) {
		for _, l := range strings.Split(g[1], ",") {
			l = strings.TrimSpace(l)
			if l != "" && !have[l] && !targetLabels[l] {
				problems = append(problems, "no series of the expression has label "+l)
			}
		}
	}
	return problems
}

// The check is real: unknown names and labels are caught.
func TestMonitoringQueryCheckCatches(t *testing.T) {
	text := "# TYPE kafka_iggy_requests_total counter\nkafka_iggy_requests_total{api=\"Produce\",outcome=\"ok\"} 1\n"
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	for expr, want := range map[string]int{
		`sum by (api) (rate(kafka_iggy_requests_total{job="x"}[5m]))`: 0,
		`sum by (apix) (rate(kafka_iggy_requests_total[5m]))`:         1,
		`rate(kafka_iggy_request_total{api="Produce"}[5m])`:           1,
		`rate(kafka_iggy_requests_total{error="X"}[5m])`:              1,
	} {
		if got := checkQuery(embedtest.Families(fams), expr); len(got) != want {
			t.Errorf("%s: problems %v, want %d", expr, got, want)
		}
	}
}

// Every metric and label the Grafana dashboard and the alert rules query
// exists in a running sidecar's /metrics: a sidecar with the peer link on
// (the coordination series), after traffic that touches every labelled
// family (produce, a consumer group, an error code, a closed connection).
func TestMonitoringQueriesMatchMetrics(t *testing.T) {
	if testing.Short() {
		t.Skip("starts sidecar and Iggy server processes")
	}
	queries := monitoringQueries(t)
	iggyAddr := freeAddr(t)
	startIggyProc(t, iggyAddr, t.TempDir())
	p := startClusterSidecar(t, iggyAddr, "KAFKA_IGGY_COORDINATION__DOMAIN=monitoring")
	defer func() { _ = p.cmd.Process.Signal(syscall.SIGTERM); <-p.done }()
	embedtest.WaitFor(t, 30*time.Second, "/readyz 200", func() bool { return readyz(p.admin) == http.StatusOK })

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const topic = "monitored"
	pr, err := kgo.NewClient(kgo.SeedBrokers(p.kafka), kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		if err := pr.ProduceSync(ctx, &kgo.Record{Value: []byte("m")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	requestError(ctx, t, pr)
	pr.Close() // a closed connection, by reason
	co, err := kgo.NewClient(kgo.SeedBrokers(p.kafka), kgo.ConsumeTopics(topic), kgo.ConsumerGroup("monitored-group"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer co.Close()
	for got := 0; got < 10 && ctx.Err() == nil; {
		got += co.PollFetches(ctx).NumRecords()
	}
	embedtest.WaitFor(t, 30*time.Second, "a closed connection counted", func() bool {
		return embedtest.Scrape(t, "http://"+p.admin+"/metrics").Value("kafka_iggy_connections_closed_total") > 0
	})
	fams := embedtest.Scrape(t, "http://"+p.admin+"/metrics")

	var where []string
	for w := range queries {
		where = append(where, w)
	}
	sort.Strings(where)
	for _, w := range where {
		for _, problem := range checkQuery(fams, queries[w]) {
			t.Errorf("%s: %s\n  %s", w, problem, queries[w])
		}
	}
	t.Logf("%d queries checked against %d metric families", len(queries), len(fams))
}
