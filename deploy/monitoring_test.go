package deploy

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

const (
	rulesFile          = "prometheus/kafka-iggy-rules.yaml"
	prometheusRuleFile = "prometheus/kafka-iggy-prometheusrule.yaml"
	dashboardFile      = "grafana/kafka-iggy-dashboard.json"
)

// promtool is Prometheus's rule checker (Debian's prometheus package,
// installed by scripts/install-test-deps.sh).
func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		missing(t, "promtool")
	}
	return p
}

func readYAML(t *testing.T, path string) map[string]any {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := yaml.Unmarshal(raw, &m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return m
}

// The alert rules pass promtool, in the plain file and in the
// PrometheusRule (its spec written out as a rules file), and the two hold
// the same groups; a broken rule fails the check.
func TestAlertRulesValid(t *testing.T) {
	pt := promtool(t)
	check := func(path string) (string, error) {
		out, err := exec.Command(pt, "check", "rules", path).CombinedOutput()
		return string(out), err
	}
	if out, err := check(rulesFile); err != nil {
		t.Errorf("promtool check rules %s: %v\n%s", rulesFile, err, out)
	}
	plain := readYAML(t, rulesFile)
	pr := readYAML(t, prometheusRuleFile)
	if pr["apiVersion"] != "monitoring.coreos.com/v1" || pr["kind"] != "PrometheusRule" {
		t.Fatalf("%s is not a PrometheusRule: %v %v", prometheusRuleFile, pr["apiVersion"], pr["kind"])
	}
	spec := dig(pr, "spec")
	if !reflect.DeepEqual(spec, map[string]any{"groups": plain["groups"]}) {
		t.Errorf("%s and %s hold different rules", rulesFile, prometheusRuleFile)
	}
	out, err := yaml.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	specFile := filepath.Join(t.TempDir(), "spec.yaml")
	if err := os.WriteFile(specFile, out, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := check(specFile); err != nil {
		t.Errorf("promtool check rules (PrometheusRule spec): %v\n%s", err, out)
	}
	want := []string{"KafkaIggyIggyUnreachable", "KafkaIggyMemoryBudgetExhausted", "KafkaIggyRebalanceStorm", "KafkaIggyShardWithoutOwner", "KafkaIggyRequestErrors"}
	var alerts []string
	for _, r := range dig(plain, "groups", 0, "rules").([]any) {
		alerts = append(alerts, dig(r, "alert").(string))
		if dig(r, "labels", "severity") == nil || dig(r, "annotations", "description") == nil {
			t.Errorf("%v: no severity or description", dig(r, "alert"))
		}
	}
	for _, w := range want {
		if !strings.Contains(strings.Join(alerts, " "), w) {
			t.Errorf("no alert %s in %v", w, alerts)
		}
	}
	// The check is real.
	raw, _ := os.ReadFile(rulesFile)
	bad := strings.Replace(string(raw), "== 0", "== 0)", 1)
	badFile := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(badFile, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := check(badFile); err == nil {
		t.Errorf("promtool accepted a broken expression:\n%s", out)
	}
}

// The dashboard is importable as is: Grafana JSON with a Prometheus
// datasource variable that every panel and query uses, unique panel ids,
// panels inside the 24-column grid, every query non-empty.
func TestDashboardImportable(t *testing.T) {
	raw, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d map[string]any
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	if d["uid"] != "kafka-iggy" || d["title"] == nil || d["schemaVersion"] == nil {
		t.Errorf("uid %v title %v schemaVersion %v", d["uid"], d["title"], d["schemaVersion"])
	}
	if _, ok := d["__inputs"]; ok {
		t.Error("__inputs: an import would ask for inputs; the datasource is a variable")
	}
	if dig(d, "templating", "list", 0, "type") != "datasource" || dig(d, "templating", "list", 0, "query") != "prometheus" {
		t.Errorf("the first variable is not the Prometheus datasource: %v", dig(d, "templating", "list", 0))
	}
	ids := map[float64]bool{}
	queries := 0
	for _, p := range d["panels"].([]any) {
		id, _ := dig(p, "id").(float64)
		if ids[id] || id == 0 {
			t.Errorf("panel %v: id %v missing or repeated", dig(p, "title"), id)
		}
		ids[id] = true
		x, _ := dig(p, "gridPos", "x").(float64)
		w, _ := dig(p, "gridPos", "w").(float64)
		if w == 0 || x+w > 24 {
			t.Errorf("panel %v: gridPos %v", dig(p, "title"), dig(p, "gridPos"))
		}
		if dig(p, "type") == "row" {
			continue
		}
		if dig(p, "datasource", "uid") != "${datasource}" || dig(p, "description") == nil {
			t.Errorf("panel %v: datasource %v, description %v", dig(p, "title"), dig(p, "datasource"), dig(p, "description"))
		}
		targets, _ := dig(p, "targets").([]any)
		if len(targets) == 0 {
			t.Errorf("panel %v: no queries", dig(p, "title"))
		}
		for _, tg := range targets {
			queries++
			if e, _ := dig(tg, "expr").(string); !strings.Contains(e, "kafka_iggy_") && !strings.Contains(e, "process_") && !strings.Contains(e, "go_") {
				t.Errorf("panel %v: query %q", dig(p, "title"), e)
			}
		}
	}
	if len(ids) < 15 || queries < 20 {
		t.Errorf("%d panels, %d queries", len(ids), queries)
	}
}
