package main

import (
	"path/filepath"
	"slices"
	"testing"
)

// TestKgoSuiteList: kgo-suite.txt judges exactly the test functions of the
// franz-go version go.mod pins, every skip has a reason, and the tests the
// runner counts as reaching the broker include the suite's known
// broker-bound ones.
func TestKgoSuiteList(t *testing.T) {
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	version, err := kgoVersion(root)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := kgoSource(root, version, dir); err != nil {
		t.Fatal(err)
	}
	tests, err := kgoTests(filepath.Join(dir, "pkg", "kgo"))
	if err != nil {
		t.Fatal(err)
	}
	list, err := readKgoList("kgo-suite.txt")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, e := range list {
		if _, ok := tests[e.Test]; !ok {
			t.Errorf("kgo-suite.txt: %s is not a test of franz-go %s pkg/kgo", e.Test, version)
		}
		if seen[e.Test] {
			t.Errorf("kgo-suite.txt: %s listed twice", e.Test)
		}
		seen[e.Test] = true
	}
	for name := range tests {
		if !seen[name] {
			t.Errorf("kgo-suite.txt does not judge %s (franz-go %s)", name, version)
		}
	}
	var integration []string
	for name, reach := range tests {
		if reach {
			integration = append(integration, name)
		}
	}
	slices.Sort(integration)
	for _, want := range []string{"TestGroupETL", "TestTxnEtl", "TestClient_Produce", "TestIssue434"} {
		if !slices.Contains(integration, want) {
			t.Errorf("%s reaches the broker, but the call-graph walk says it does not", want)
		}
	}
	for _, unit := range []string{"TestParseBrokerAddr", "TestRecBatchAppendTo"} {
		if slices.Contains(integration, unit) {
			t.Errorf("%s needs no broker, but the call-graph walk says it does", unit)
		}
	}
	if testing.Verbose() {
		t.Logf("%d of %d tests reach the broker: %v", len(integration), len(tests), integration)
	}
}
