package bridge

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
)

// headerRE is the first line of an API file's header: "// Name: vA-vB" or
// "// Name: vA".
var headerRE = regexp.MustCompile(`(?m)^// (\w+): v(\d+)(?:-v(\d+))?$`)

// rowsBridge builds a Bridge whose Iggy client never connects: enough to
// read the rows New registered.
func rowsBridge(t *testing.T) *Bridge {
	t.Helper()
	icfg := iggy.DefaultConfig()
	icfg.Address = "127.0.0.1:1"
	cl, err := iggy.New(icfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Telemetry.Enabled = true // the rows that config gates are in the table too
	b, err := New(Options{Config: cfg, Client: cl, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Every API file registers exactly one row, for the key its name carries,
// and its header states the versions the row serves; every row walks its
// response's error codes for the metrics.
func TestAPIFileHeadersMatchTable(t *testing.T) {
	tab := rowsBridge(t).Table()
	files, err := filepath.Glob("[0-9][0-9]_*.go")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int16]string{}
	for _, f := range files {
		if !apiFileRE.MatchString(f) || strings.HasSuffix(f, "_test.go") {
			continue
		}
		key64, _ := strconv.ParseInt(f[:2], 10, 16)
		key := int16(key64)
		seen[key] = f
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		m := headerRE.FindSubmatch(src)
		if m == nil {
			t.Errorf("%s: no header line \"// Name: vMIN-vMAX\"", f)
			continue
		}
		lo, _ := strconv.Atoi(string(m[2]))
		hi := lo
		if len(m[3]) > 0 {
			hi, _ = strconv.Atoi(string(m[3]))
		}
		row, ok := tab.Lookup(key)
		if !ok {
			t.Errorf("%s: key %d has no row in the Table (registerAPI missing?)", f, key)
			continue
		}
		if int(row.MinVersion) != lo || int(row.MaxVersion) != hi {
			t.Errorf("%s: header says %s v%d-v%d, the Table serves v%d-v%d", f, m[1], lo, hi, row.MinVersion, row.MaxVersion)
		}
		if !strings.EqualFold(row.Name, string(m[1])) {
			t.Errorf("%s: header names %s, the row %s", f, m[1], row.Name)
		}
		if row.ErrorCodes == nil {
			t.Errorf("%s: the row has no ErrorCodes walker: its error codes would not be counted", f)
		}
	}
	for _, row := range tab.All() {
		if seen[row.Key] == "" {
			t.Errorf("row %d (%s) has no API file %02d_*.go", row.Key, row.Name, row.Key)
		}
	}
}

// Every "KAFKA-ON-IGGY §N" a bridge file cites is a section of
// docs/KAFKA-ON-IGGY.md.
func TestKafkaOnIggyReferences(t *testing.T) {
	doc, err := os.ReadFile("../docs/KAFKA-ON-IGGY.md")
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	ref := regexp.MustCompile(`KAFKA-ON-IGGY(?:\.md)? §(\d+)`)
	n := 0
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range ref.FindAllSubmatch(src, -1) {
			n++
			if !regexp.MustCompile(`(?m)^## ` + string(m[1]) + `\. `).Match(doc) {
				t.Errorf("%s cites KAFKA-ON-IGGY §%s, which docs/KAFKA-ON-IGGY.md does not have", f, m[1])
			}
		}
	}
	if n == 0 {
		t.Fatal("no KAFKA-ON-IGGY reference found: the pattern is wrong")
	}
}
