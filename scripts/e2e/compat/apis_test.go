package main

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var updateAPIs = flag.Bool("update-apis", false, "rewrite the Kafka APIs section of docs/COMPATIBILITY.md from apis.go")

// TestAPITableInReport: docs/COMPATIBILITY.md holds the section
// apiTableMarkdown renders (the full report regenerates it too; -update-apis
// rewrites just that section), and apis.go lists each key once, in order.
func TestAPITableInReport(t *testing.T) {
	for i := 1; i < len(kafkaAPIs); i++ {
		if kafkaAPIs[i].Key <= kafkaAPIs[i-1].Key {
			t.Fatalf("apis.go: key %d after %d", kafkaAPIs[i].Key, kafkaAPIs[i-1].Key)
		}
	}
	for _, a := range kafkaAPIs {
		if a.Sidecar != "answered as disabled" && a.Sidecar != "not advertised" && !strings.HasPrefix(a.Sidecar, "served v") {
			t.Errorf("key %d: status %q", a.Key, a.Sidecar)
		}
		if !strings.HasPrefix(a.Sidecar, "served") && a.Why == "" {
			t.Errorf("key %d (%s) is %s with no reason", a.Key, a.Name, a.Sidecar)
		}
	}
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(root, "docs", "COMPATIBILITY.md")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	want := apiTableMarkdown()
	start := strings.Index(doc, apiTableHeading+"\n")
	if *updateAPIs {
		if start < 0 {
			// Before the client matrix, where the report puts it.
			start = strings.Index(doc, "## Client matrix")
			doc = doc[:start] + want + doc[start:]
		} else {
			end := start + len(apiTableHeading) + strings.Index(doc[start+len(apiTableHeading):], "\n## ") + 1
			doc = doc[:start] + want + doc[end:]
		}
		if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if !strings.Contains(doc, want) {
		t.Fatalf("%s: the Kafka APIs section is stale; run go test ./scripts/e2e/compat -run TestAPITableInReport -update-apis", path)
	}
}
