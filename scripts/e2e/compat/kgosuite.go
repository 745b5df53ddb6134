package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/kafka-iggy/kafka-iggy/scripts/e2e"
)

// franz-go's own kgo test suite, run from the module at the version go.mod
// pins, against a broker named by KGO_SEEDS. kgo-suite.txt (beside this file)
// decides, for every test function of pkg/kgo, whether it runs, with the
// reason when it does not; the runner refuses to start when a test is
// missing from the list (a version bump brings new tests to judge).

const (
	kgoModule = "github.com/twmb/franz-go"
	// kgoSuiteFloor is the fewest tests that must pass against a target
	// (the acceptance bar of the compatibility issue).
	kgoSuiteFloor = 61
	// kgoRecords bounds the records the ETL tests produce (KGO_TEST_RECORDS;
	// the suite's default is 500,000), so the suite fits the CI budget.
	kgoRecords = "20000"
	kgoTimeout = 9 * time.Minute
)

type kgoListEntry struct {
	Test, Mode, Why string // Mode: run, skip, skip-sidecar
}

type kgoTestResult struct {
	Test        string
	Integration bool // reaches the broker (calls the suite's client helpers)
	Mode        string
	Why         string
	Outcome     string // pass, fail, skip, not run
	Elapsed     float64
	Detail      string // the failing or skip lines
}

type kgoSuiteResult struct {
	Target, Version         string
	Tests                   []kgoTestResult
	Passed, Failed, Skipped int
	IntegrationPassed       int
	Excluded                int
	Duration                time.Duration
	Env                     []string
	Unexpected              []string
	Flaky                   []flakyTest // failed once, passed when run again
	// Subset: only the tests -kgo-run selected ran (the floor is not
	// judged).
	Subset bool
}

// kgoSASLUser is KGO_TEST_SCRAM's user:password of the SASL listeners
// (e2e.StartSASLSidecar, e2e.KafkaSASLBrokerEnv).
var kgoSASLUser = e2e.SASLUser + ":" + e2e.SASLPassword

var kgoListLine = regexp.MustCompile(`^(run|skip|skip-sidecar)\s+(Test\w+)\s*(.*)$`)

func readKgoList(path string) ([]kgoListEntry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []kgoListEntry
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		m := kgoListLine.FindStringSubmatch(line)
		if m == nil {
			return nil, fmt.Errorf("%s:%d: %q is not \"run|skip|skip-sidecar TestName reason\"", path, n, line)
		}
		if m[1] != "run" && strings.TrimSpace(m[3]) == "" {
			return nil, fmt.Errorf("%s:%d: %s %s needs a reason", path, n, m[1], m[2])
		}
		out = append(out, kgoListEntry{Test: m[2], Mode: m[1], Why: strings.TrimSpace(m[3])})
	}
	return out, sc.Err()
}

// kgoVersion is the franz-go version the kafka-iggy module requires.
func kgoVersion(root string) (string, error) {
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Version}}", kgoModule)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go list -m %s: %v", kgoModule, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// kgoSource downloads the module (go mod download, from the module proxy)
// and copies it to a writable dir.
func kgoSource(root, version, dst string) error {
	cmd := exec.Command("go", "mod", "download", "-json", kgoModule+"@"+version)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("go mod download %s@%s: %v", kgoModule, version, err)
	}
	var info struct{ Dir string }
	if err := json.Unmarshal(out, &info); err != nil || info.Dir == "" {
		return fmt.Errorf("go mod download %s@%s printed no Dir: %s", kgoModule, version, out)
	}
	return filepath.WalkDir(info.Dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(info.Dir, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
}

// kgoTests lists the test functions of pkg/kgo and marks those that reach a
// broker: the ones that, directly or through other functions of the test
// files, call the suite's client helpers (which read KGO_SEEDS).
func kgoTests(dir string) (map[string]bool, error) {
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	if err != nil {
		return nil, err
	}
	calls := map[string]map[string]bool{} // function or method name -> identifiers it uses
	var tests []string
	for _, f := range files {
		af, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			return nil, err
		}
		for _, decl := range af.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			name := fd.Name.Name
			if fd.Recv == nil && strings.HasPrefix(name, "Test") && fd.Type.Params.NumFields() == 1 {
				tests = append(tests, name)
			}
			used := calls[name]
			if used == nil {
				used = map[string]bool{}
				calls[name] = used
			}
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				if id, ok := n.(*ast.Ident); ok {
					used[id.Name] = true
				}
				return true
			})
		}
	}
	seeds := map[string]bool{"newTestClient": true, "adm": true, "testClientOpts": true, "getSeedBrokers": true,
		"scramSeeds": true, "oauthSeeds": true} // the SASL tests' listener
	reach := map[string]bool{}
	var visit func(name string, seen map[string]bool) bool
	visit = func(name string, seen map[string]bool) bool {
		if seeds[name] {
			return true
		}
		if v, ok := reach[name]; ok {
			return v
		}
		if seen[name] {
			return false
		}
		seen[name] = true
		for id := range calls[name] {
			if id != name && (seeds[id] || calls[id] != nil) && visit(id, seen) {
				reach[name] = true
				return true
			}
		}
		return false
	}
	out := map[string]bool{}
	for _, tname := range tests {
		out[tname] = visit(tname, map[string]bool{})
	}
	return out, nil
}

// runKgoSuite runs the suite against seeds. sasl ("" none) is the target's
// SASL listener (SCRAM-SHA-256, SCRAM-SHA-512 and OAUTHBEARER with
// unsigned tokens, the credentials of package e2e): the suite's SASL tests
// run against it, TestSCRAMAuth once more with SCRAM-SHA-512 (the suite
// takes one mechanism a run), and skip themselves without it. only (nil:
// every test) selects the tests of the list to run.
func runKgoSuite(seeds, target, logs, sasl string, only *regexp.Regexp) (kgoSuiteResult, error) {
	res := kgoSuiteResult{Target: target, Subset: only != nil}
	start := time.Now()
	root, err := moduleRoot()
	if err != nil {
		return res, err
	}
	if res.Version, err = kgoVersion(root); err != nil {
		return res, err
	}
	src := filepath.Join(logs, "franz-go-"+res.Version)
	if _, err := os.Stat(filepath.Join(src, "go.mod")); err != nil {
		if err := kgoSource(root, res.Version, src); err != nil {
			return res, err
		}
	}
	pkg := filepath.Join(src, "pkg", "kgo")
	tests, err := kgoTests(pkg)
	if err != nil {
		return res, err
	}
	list, err := readKgoList(filepath.Join(root, "scripts", "e2e", "compat", "kgo-suite.txt"))
	if err != nil {
		return res, err
	}
	listed := map[string]kgoListEntry{}
	for _, e := range list {
		if _, dup := listed[e.Test]; dup {
			return res, fmt.Errorf("kgo-suite.txt lists %s twice", e.Test)
		}
		if _, ok := tests[e.Test]; !ok {
			return res, fmt.Errorf("kgo-suite.txt lists %s, which franz-go %s pkg/kgo does not have", e.Test, res.Version)
		}
		listed[e.Test] = e
	}
	var missing []string
	for name := range tests {
		if _, ok := listed[name]; !ok {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return res, fmt.Errorf("franz-go %s pkg/kgo has tests kgo-suite.txt does not judge (add a run or skip line for each): %s", res.Version, strings.Join(missing, " "))
	}
	var runNames []string
	for _, e := range list {
		if only != nil && !only.MatchString(e.Test) {
			continue
		}
		r := kgoTestResult{Test: e.Test, Integration: tests[e.Test], Mode: e.Mode, Why: e.Why, Outcome: "not run"}
		if e.Mode == "run" || (e.Mode == "skip-sidecar" && target != "sidecar") {
			runNames = append(runNames, e.Test)
		} else {
			res.Excluded++
		}
		res.Tests = append(res.Tests, r)
	}
	res.Env = []string{"KGO_SEEDS=" + seeds, "KGO_TEST_RF=1", "KGO_TEST_RECORDS=" + kgoRecords, "KGO_LOG_LEVEL=none", "GOWORK=off", "GOFLAGS=-mod=mod"}
	if sasl != "" {
		res.Env = append(res.Env, "KGO_TEST_SCRAM_SEEDS="+sasl, "KGO_TEST_SCRAM="+kgoSASLUser+":256", "KGO_TEST_OAUTH_SEEDS="+sasl)
	}
	if len(runNames) == 0 {
		return res, fmt.Errorf("no test of kgo-suite.txt runs against %s (-kgo-run %v)", target, only)
	}
	fmt.Printf("== compat: franz-go %s kgo suite against %s: %d tests (log: %s)\n", res.Version, target, len(runNames), filepath.Join(logs, "kgo-suite-"+target+".log"))
	outcome, output, err := kgoRun(pkg, res.Env, runNames, kgoTimeout, filepath.Join(logs, "kgo-suite-"+target+".log"))
	if err != nil {
		return res, err
	}
	// A test that failed runs once more, alone with the others that failed
	// (rerun.go says why); passing then, it counts and is listed as flaky.
	var failed []string
	for _, name := range runNames {
		if ev, ok := outcome[name]; !ok || ev.Action == "fail" {
			failed = append(failed, name)
		}
	}
	if len(failed) > 0 && len(failed) <= maxReruns {
		log := filepath.Join(logs, "kgo-suite-"+target+"-rerun.log")
		fmt.Printf("== compat: kgo suite against %s: %s failed; running once more (log: %s)\n", target, strings.Join(failed, " "), log)
		again, againOut, err := kgoRun(pkg, res.Env, failed, rerunTimeout, log)
		if err == nil {
			for _, name := range failed {
				if ev, ok := again[name]; ok && ev.Action == "pass" {
					res.Flaky = append(res.Flaky, flakyTest{Suite: "kgo suite against " + target, Test: name, FirstFailure: failureLines(output[name], 8)})
					outcome[name] = ev
					output[name] = againOut[name]
				}
			}
		}
	}
	for i := range res.Tests {
		r := &res.Tests[i]
		ev, ok := outcome[r.Test]
		if !ok {
			if slices.Contains(runNames, r.Test) {
				r.Outcome = "fail"
				r.Detail = "no result (the test binary stopped before it finished; see the log)"
				res.Failed++
			}
			continue
		}
		r.Outcome, r.Elapsed = ev.Action, ev.Elapsed
		switch ev.Action {
		case "pass":
			res.Passed++
			if r.Integration {
				res.IntegrationPassed++
			}
		case "fail":
			res.Failed++
			r.Detail = failureLines(output[r.Test], 12)
		case "skip":
			res.Skipped++
			r.Detail = failureLines(output[r.Test], 3)
		}
	}
	if sasl != "" && slices.Contains(runNames, "TestSCRAMAuth") {
		// The same test with SCRAM-SHA-512 (KGO_TEST_SCRAM's ":512").
		env := append(slices.Clone(res.Env), "KGO_TEST_SCRAM="+kgoSASLUser+":512")
		name := "TestSCRAMAuth"
		r := kgoTestResult{Test: name + " (SCRAM-SHA-512)", Integration: true, Mode: "run", Outcome: "fail"}
		outcome, output, err := kgoRun(pkg, env, []string{name}, rerunTimeout, filepath.Join(logs, "kgo-suite-"+target+"-scram512.log"))
		if err != nil {
			return res, err
		}
		ev, ok := outcome[name]
		switch {
		case !ok:
			r.Detail = "no result (the test binary stopped before it finished; see the log)"
			res.Failed++
		case ev.Action == "pass":
			r.Outcome, r.Elapsed = "pass", ev.Elapsed
			res.Passed++
			res.IntegrationPassed++
		case ev.Action == "skip":
			r.Outcome, r.Detail = "skip", failureLines(output[name], 3)
			res.Skipped++
		default:
			r.Detail = failureLines(output[name], 12)
			res.Failed++
		}
		res.Tests = append(res.Tests, r)
	}
	res.Duration = time.Since(start)
	fmt.Printf("== compat: kgo suite against %s: %d passed (%d of them reach the broker), %d failed, %d skipped, %d excluded, in %v\n",
		target, res.Passed, res.IntegrationPassed, res.Failed, res.Skipped, res.Excluded, res.Duration.Round(time.Second))
	return res, nil
}

// failureLines keeps the lines of a test's output that say what went wrong.
func failureLines(out []string, max int) string {
	var keep []string
	for _, l := range out {
		l = strings.TrimRight(l, "\n")
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "=== ") || strings.HasPrefix(t, "--- ") {
			continue
		}
		keep = append(keep, t)
	}
	if len(keep) > max {
		keep = append(keep[:max], fmt.Sprintf("... (%d more lines in the log)", len(keep)-max))
	}
	return strings.Join(keep, "\n")
}

// kgoRun runs the named tests of pkg/kgo once and returns each one's end
// event and output; the output goes to logPath.
func kgoRun(pkg string, env, names []string, timeout time.Duration, logPath string) (map[string]testEvent, map[string][]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout+time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "test", "-json", "-count=1", "-timeout", timeout.String(),
		"-run", "^("+strings.Join(names, "|")+")$", ".")
	cmd.Dir = pkg
	cmd.Env = append(os.Environ(), env...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, nil, err
	}
	defer logf.Close()
	cmd.Stderr = logf
	if err := cmd.Start(); err != nil {
		return nil, nil, err
	}
	events, err := readEvents(stdout, logf, false)
	_ = cmd.Wait()
	if err != nil {
		return nil, nil, err
	}
	outcome := map[string]testEvent{}
	output := map[string][]string{}
	for _, ev := range events {
		if ev.Test == "" || strings.Contains(ev.Test, "/") {
			if ev.Test != "" && ev.Action == "output" {
				top, _, _ := strings.Cut(ev.Test, "/")
				output[top] = append(output[top], ev.Output)
			}
			continue
		}
		switch ev.Action {
		case "pass", "fail", "skip":
			outcome[ev.Test] = ev
		case "output":
			output[ev.Test] = append(output[ev.Test], ev.Output)
		}
	}
	return outcome, output, nil
}
