package e2e

import (
	"encoding/json"
	"os"
	"testing"
)

// TestIntendedDifferencesDocumented: every accepted difference of the
// differential test names its step and says why. With KAFKA_IGGY_COMPAT_DIFFS
// set (the compat runner sets it), the list is also written there as JSON,
// so docs/COMPATIBILITY.md shows the same list the test applies.
func TestIntendedDifferencesDocumented(t *testing.T) {
	var out []map[string]string
	for _, d := range intendedDifferences {
		if d.Step == "" || d.Why == "" {
			t.Errorf("intended difference %+v: a step and a reason are required", d)
		}
		out = append(out, map[string]string{"step": d.Step, "field": d.Field, "target": d.Target, "want": d.Want, "why": d.Why})
	}
	if path := os.Getenv("KAFKA_IGGY_COMPAT_DIFFS"); path != "" {
		b, err := json.MarshalIndent(out, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
