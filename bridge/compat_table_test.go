package bridge

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"testing"
)

// compatRowRE matches a row of the Kafka APIs table of docs/COMPATIBILITY.md:
// | key | API | Kafka versions | sidecar | notes |
var compatRowRE = regexp.MustCompile(`(?m)^\| (\d+) \| (\w+) \| v[\d-v]+ \| (served v(\d+)(?:-v(\d+))?|answered as disabled|not advertised) \|`)

// TestCompatibilityAPITable: the Kafka APIs table of docs/COMPATIBILITY.md
// (scripts/e2e/compat/apis.go) says "served" with exactly the versions the
// dispatch table serves, for exactly the keys it serves.
func TestCompatibilityAPITable(t *testing.T) {
	doc, err := os.ReadFile("../docs/COMPATIBILITY.md")
	if err != nil {
		t.Fatal(err)
	}
	tab := rowsBridge(t).Table()
	rows := compatRowRE.FindAllSubmatch(doc, -1)
	if len(rows) < 70 {
		t.Fatalf("docs/COMPATIBILITY.md: %d rows in the Kafka APIs table", len(rows))
	}
	listed := map[int16]bool{}
	for _, m := range rows {
		k, _ := strconv.Atoi(string(m[1]))
		key := int16(k)
		listed[key] = true
		row, served := tab.Lookup(key)
		if len(m[4]) == 0 {
			if served {
				t.Errorf("key %d (%s): the table says %q, the sidecar serves v%d-v%d", key, m[2], m[3], row.MinVersion, row.MaxVersion)
			}
			continue
		}
		lo, _ := strconv.Atoi(string(m[4]))
		hi := lo
		if len(m[5]) > 0 {
			hi, _ = strconv.Atoi(string(m[5]))
		}
		switch {
		case !served:
			t.Errorf("key %d (%s): the table says %q, the sidecar does not serve it", key, m[2], m[3])
		case int(row.MinVersion) != lo || int(row.MaxVersion) != hi:
			t.Errorf("key %d (%s): the table says %q, the sidecar serves v%d-v%d", key, m[2], m[3], row.MinVersion, row.MaxVersion)
		}
	}
	for _, row := range tab.All() {
		if !listed[row.Key] {
			t.Errorf("key %d (%s) is served but not in the table: %s", row.Key, row.Name, fmt.Sprintf("v%d-v%d", row.MinVersion, row.MaxVersion))
		}
	}
}
