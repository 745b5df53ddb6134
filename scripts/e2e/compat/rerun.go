package main

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// A second run for a test that failed once.
//
// The matrix runs real clients against real brokers on a 2-core machine
// that also runs the brokers, and a few of its checks are timing-bound
// (a Kafka broker's metadata after a create, a client's group join under
// load). A test that fails is run once more, alone; when it passes then,
// its cell counts as passed and the report lists it under "Passed on a
// second run" with the lines of its first failure, so a flake stays
// visible without failing the run. A test that fails twice fails the run.
// More than maxReruns failures are not a flake: nothing is run again.

const (
	maxReruns    = 6
	rerunTimeout = 6 * time.Minute
)

// flakyTest is a test that failed once and passed when run again.
type flakyTest struct {
	Suite        string // "e2e" or "kgo suite against <target>"
	Test         string
	FirstFailure string
}

// failedLeaves lists the tests of events that failed and have no subtests:
// the ones a second run can repeat alone.
func failedLeaves(events []testEvent) []string {
	final := map[string]string{}
	for _, ev := range events {
		if ev.Test == "" {
			continue
		}
		if _, ok := final[ev.Test]; !ok {
			final[ev.Test] = ""
		}
		switch ev.Action {
		case "pass", "fail", "skip":
			final[ev.Test] = ev.Action
		}
	}
	var out []string
	for name, action := range final {
		if action != "fail" {
			continue
		}
		parent := false
		for other := range final {
			if strings.HasPrefix(other, name+"/") {
				parent = true
				break
			}
		}
		if !parent {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// runPattern is the go test -run pattern that selects exactly the test
// name (a path of subtests).
func runPattern(name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return strings.Join(parts, "/")
}

// under reports whether test is name or one of its subtests.
func under(test, name string) bool {
	return test == name || strings.HasPrefix(test, name+"/")
}

// rerunFailures runs each failed leaf of events once more and merges the
// result: a leaf that passes the second time replaces its first events (and
// an ancestor that failed only through it passes); it is returned as flaky.
func rerunFailures(env []string, logs string, events []testEvent) ([]testEvent, []flakyTest, error) {
	leaves := failedLeaves(events)
	if len(leaves) == 0 || len(leaves) > maxReruns {
		return events, nil, nil
	}
	var flaky []flakyTest
	for i, leaf := range leaves {
		name := fmt.Sprintf("e2e-rerun-%d", i+1)
		fmt.Printf("== compat: %s failed; running it once more (log: %s)\n", leaf, filepath.Join(logs, name+".log"))
		again, err := runE2E(env, logs, name, rerunTimeout, runPattern(leaf))
		if err != nil {
			fmt.Printf("   the second run did not run (%v); the first result stands\n", err)
			continue
		}
		if !passed(again, leaf) {
			fmt.Printf("   fail again\n")
			continue
		}
		fmt.Printf("   pass on the second run: listed as flaky\n")
		var first []string
		for _, ev := range events {
			if ev.Test == leaf && ev.Action == "output" {
				first = append(first, ev.Output)
			}
		}
		flaky = append(flaky, flakyTest{Suite: "e2e", Test: leaf, FirstFailure: errorLines(first, 8)})
		events = mergeRerun(events, leaf, again)
	}
	return events, flaky, nil
}

// passed reports whether leaf passed in events with no failing subtest.
func passed(events []testEvent, leaf string) bool {
	ok := false
	for _, ev := range events {
		if !under(ev.Test, leaf) {
			continue
		}
		switch {
		case ev.Action == "fail":
			return false
		case ev.Action == "pass" && ev.Test == leaf:
			ok = true
		}
	}
	return ok
}

// mergeRerun replaces the events of leaf (and its subtests) by those of its
// second run, and turns the failure of each ancestor that has no failing
// descendant left into a pass.
func mergeRerun(events []testEvent, leaf string, again []testEvent) []testEvent {
	var out []testEvent
	for _, ev := range events {
		if !under(ev.Test, leaf) {
			out = append(out, ev)
		}
	}
	for _, ev := range again {
		if under(ev.Test, leaf) {
			out = append(out, ev)
		}
	}
	failing := map[string]bool{}
	for _, ev := range out {
		if ev.Action == "fail" && ev.Test != "" {
			failing[ev.Test] = true
		}
	}
	for anc := leaf; ; {
		i := strings.LastIndex(anc, "/")
		if i < 0 {
			break
		}
		anc = anc[:i]
		still := false
		for f := range failing {
			if strings.HasPrefix(f, anc+"/") {
				still = true
				break
			}
		}
		if still {
			break
		}
		for j := range out {
			if out[j].Test == anc && out[j].Action == "fail" {
				out[j].Action = "pass"
			}
		}
		delete(failing, anc)
	}
	return out
}
