package archtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// rule is what one package may import from this module, as module-relative
// patterns: "x" is package x, "x/..." is x and every package below it, "..."
// is any package of the module.
type rule struct {
	// imports are the arrows its non-test files may draw.
	imports []string
	// tests are the extra arrows its test files (in-package and _test
	// package) may draw, on top of imports.
	tests []string
}

// testKit is what test files of the layers above codec may import: the
// embedded server and the tests' shared kit around it.
var testKit = []string{"embedded", "embedded/embedtest"}

// iggyCodec is the Iggy wire code every layer may use; codec/records (the
// Kafka record codec) is bridge's alone.
var iggyCodec = []string{"codec/wire", "codec/iggy"}

func with(base []string, more ...string) []string { return append(slices.Clone(base), more...) }

// layers is the picture of docs/ARCHITECTURE.md, one entry per package of
// the module (a key ending in "/..." covers that directory's tree). Imports
// point one way: codec <- bridge <- proxy <- cmd; budget imports nothing of
// ours; codec/records, bridge/offsets, bridge/topicconfig,
// bridge/fetchsession, bridge/telemetry, bridge/quotas, bridge/clientmetrics,
// bridge/producers and bridge/kafkacode serve bridge only; embedded imports codec only; embedded/embedtest is imported by test
// files only; proxy/admin is imported by cmd only; scripts/** are tools that
// may import anything and nothing imports them. importedOnlyBy and
// TestLayeringTableKeepsTheRules check the table itself against those
// sentences, so loosening one of them means editing the table, that list
// and the doc together.
var layers = map[string]rule{
	"codec/wire":    {},
	"codec/iggy":    {imports: []string{"codec/wire"}},
	"codec/records": {imports: iggyCodec},

	"budget": {},

	"bridge/iggy":          {imports: with(iggyCodec, "codec/records", "budget", "internal/tlsconf"), tests: with(testKit, "internal/tlsconf/tlstest")},
	"bridge/groups":        {imports: with(iggyCodec, "codec/records", "budget", "bridge/iggy"), tests: testKit},
	"bridge/cluster":       {imports: with(iggyCodec, "codec/records", "budget", "bridge/iggy", "bridge/groups", "bridge/cgroups", "bridge/txn", "bridge/txnoffsets", "internal/tlsconf"), tests: with(testKit, "internal/tlsconf/tlstest")},
	"bridge/offsets":       {imports: with(iggyCodec, "codec/records", "budget", "bridge/iggy"), tests: testKit},
	"bridge/topicconfig":   {imports: with(iggyCodec, "codec/records", "budget", "bridge/iggy"), tests: testKit},
	"bridge/fetchsession":  {},
	"bridge/telemetry":     {imports: []string{"budget"}},
	"bridge/cgroups":       {imports: []string{"bridge/groups"}},
	"bridge/quotas":        {imports: with(iggyCodec, "codec/records", "bridge/iggy")},
	"bridge/clientmetrics": {imports: with(iggyCodec, "codec/records", "bridge/iggy")},
	"bridge/producers":     {imports: with(iggyCodec, "budget", "bridge/iggy")},
	"bridge/topicids":      {imports: with(iggyCodec, "bridge/iggy")},
	"bridge/txn":           {imports: with(iggyCodec, "codec/records", "budget", "bridge/iggy"), tests: testKit},
	"bridge/kafkacode":     {imports: with(iggyCodec, "codec/records", "budget", "bridge/iggy")},
	"bridge/fetchread":     {imports: with(iggyCodec, "codec/records", "budget", "bridge/iggy")},
	"bridge/txnoffsets":    {imports: with(iggyCodec, "budget", "bridge/iggy")},
	"bridge/txnread":       {imports: with(iggyCodec, "codec/records", "budget", "bridge/iggy")},
	// bridge's end-to-end tests drive the API files through the front door.
	"auth":   {imports: with(iggyCodec, "bridge/iggy"), tests: testKit},
	"bridge": {imports: []string{"codec/...", "budget", "bridge/...", "auth", "internal/panics"}, tests: with(testKit, "proxy")},

	"proxy": {imports: with(iggyCodec, "budget", "bridge", "bridge/iggy", "auth"), tests: testKit},
	// tlsfront terminates TLS in front of proxy's gnet listener.
	"proxy/tlsfront": {imports: []string{"auth", "budget"}, tests: []string{"internal/tlsconf", "internal/tlsconf/tlstest"}},
	// admin adapts the metric hooks of proxy and bridge/iggy.
	"proxy/admin": {imports: with(iggyCodec, "budget", "bridge/iggy", "proxy"), tests: with(testKit, "bridge")},

	"cmd/kafka-iggy": {
		imports: with(iggyCodec, "budget", "bridge", "bridge/iggy", "bridge/groups", "bridge/cluster", "proxy", "proxy/admin", "proxy/tlsfront", "embedded", "auth", "internal/tlsconf"),
		tests:   with(testKit, "internal/tlsconf/tlstest"),
	},

	"embedded":           {imports: with(iggyCodec, "embedded/plog"), tests: []string{"embedded/embedtest"}},
	"embedded/plog":      {imports: iggyCodec},
	"embedded/embedtest": {imports: with(iggyCodec, "embedded")},
	"gen":                {},
	"deploy":             {},
	"internal/archtest":  {},
	"internal/panics":    {},
	"internal/tlsconf":   {tests: []string{"internal/tlsconf/tlstest"}},
	// the tests' own CA and certificates (test files only)
	"internal/tlsconf/tlstest": {},
	"scripts/...":              {imports: []string{"..."}},
}

// importedOnlyBy names, for the packages the doc fences in, which packages
// may import them (test files included); scripts/** may import anything.
// embedded/embedtest's non-test importers: none.
var importedOnlyBy = map[string][]string{
	"scripts/x":            {"scripts/..."},
	"proxy/admin":          {"cmd/kafka-iggy"},
	"codec/records":        {"bridge", "bridge/..."},
	"bridge/offsets":       {"bridge"},
	"bridge/topicconfig":   {"bridge"},
	"bridge/fetchsession":  {"bridge"},
	"bridge/telemetry":     {"bridge"},
	"bridge/quotas":        {"bridge"},
	"bridge/clientmetrics": {"bridge"},
	"bridge/producers":     {"bridge"},
	"budget":               {"proxy", "proxy/admin", "proxy/tlsfront", "bridge", "bridge/...", "cmd/kafka-iggy"},
	"bridge/kafkacode":     {"bridge"},
}

// where tells a reader of a failure what to edit.
const where = "the layers table in internal/archtest/layers_test.go and the package list and import rules of docs/ARCHITECTURE.md"

// matches reports whether module-relative package rel matches pattern.
func matches(pattern, rel string) bool {
	if pattern == "..." {
		return true
	}
	if dir, ok := strings.CutSuffix(pattern, "/..."); ok {
		return rel == dir || strings.HasPrefix(rel, dir+"/")
	}
	return pattern == rel
}

// ruleFor finds the table entry of module-relative package rel.
func ruleFor(rel string) (rule, bool) {
	if r, ok := layers[rel]; ok {
		return r, true
	}
	for key, r := range layers {
		if strings.HasSuffix(key, "/...") && matches(key, rel) {
			return r, true
		}
	}
	return rule{}, false
}

func allowed(patterns []string, rel string) bool {
	return slices.ContainsFunc(patterns, func(p string) bool { return matches(p, rel) })
}

// listed is one package of `go list -json`.
type listed struct {
	ImportPath   string
	Imports      []string
	TestImports  []string
	XTestImports []string
}

// moduleRoot walks up from the test's directory to go.mod.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the test directory")
		}
		dir = parent
	}
}

// goList runs `go list` in the module root and decodes its output.
func goList(t *testing.T, root string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out
}

// modulePackages lists every package of the module with its imports.
func modulePackages(t *testing.T) (module string, pkgs []listed) {
	t.Helper()
	root := moduleRoot(t)
	module = strings.TrimSpace(string(goList(t, root, "-m")))
	out := goList(t, root, "-e", "-json=ImportPath,Imports,TestImports,XTestImports", "./...")
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decoding go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) == 0 {
		t.Fatal("go list ./... listed no packages")
	}
	return module, pkgs
}

// internal turns an import path into its module-relative form, ok false for
// a path outside the module.
func internal(module, path string) (string, bool) {
	if path == module {
		return "", true
	}
	return strings.CutPrefix(path, module+"/")
}

// TestLayering fails on an import of a module package that the layers table
// does not allow, and on a package the table does not know.
func TestLayering(t *testing.T) {
	module, pkgs := modulePackages(t)
	for _, p := range pkgs {
		rel, _ := internal(module, p.ImportPath)
		r, ok := ruleFor(rel)
		if !ok {
			t.Errorf("package %s is not in the layering table: add it, with the module packages it may import, to %s", rel, where)
			continue
		}
		check := func(kind string, imports, patterns []string) {
			for _, imp := range imports {
				to, ok := internal(module, imp)
				if !ok || to == rel {
					continue
				}
				if !allowed(patterns, to) {
					t.Errorf("%s: %s imports %s, which the layering of docs/ARCHITECTURE.md does not allow (%s may import %s). Remove the import, or if the picture changed, update %s",
						kind, rel, to, rel, describe(patterns), where)
				}
			}
		}
		check("non-test file", p.Imports, r.imports)
		withTests := append(slices.Clone(r.imports), r.tests...)
		check("test file", p.TestImports, withTests)
		check("test file", p.XTestImports, withTests)
	}
}

func describe(patterns []string) string {
	if len(patterns) == 0 {
		return "no package of this module"
	}
	return strings.Join(patterns, ", ")
}

// TestLayeringTableKeepsTheRules checks the table against the sentences of
// docs/ARCHITECTURE.md that are not arrows of one package: who may import
// embedded/embedtest, proxy/admin, budget, codec/records, bridge/offsets,
// bridge/topicconfig and scripts/**, and what the leaves import.
func TestLayeringTableKeepsTheRules(t *testing.T) {
	for from, r := range layers {
		if matches("scripts/...", from) {
			continue
		}
		for kind, patterns := range map[string][]string{"non-test": r.imports, "test": r.tests} {
			for _, p := range patterns {
				if p == "..." {
					t.Errorf("%s's %s files may import anything: only scripts/** may", from, kind)
				}
				if kind == "non-test" && matches(p, "embedded/embedtest") {
					t.Errorf("%s's non-test files may import embedded/embedtest: only test files may", from)
				}
				for fenced, importers := range importedOnlyBy {
					if matches(p, fenced) && !allowed(importers, from) {
						t.Errorf("%s's %s files may import %s: only %s may", from, kind, fenced, describe(importers))
					}
				}
			}
		}
	}
	for _, leaf := range []string{"budget", "codec/wire"} {
		if r := layers[leaf]; len(r.imports) != 0 {
			t.Errorf("%s imports no package of this module, but the table lets it import %s", leaf, describe(r.imports))
		}
	}
	for _, from := range []string{"embedded", "embedded/plog", "codec/records"} {
		for _, p := range layers[from].imports {
			if !matches("codec/...", p) && !matches("embedded/...", p) {
				t.Errorf("%s imports codec only, but the table lets it import %s", from, p)
			}
		}
	}
}
