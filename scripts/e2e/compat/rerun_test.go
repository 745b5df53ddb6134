package main

import (
	"regexp"
	"strings"
	"testing"
)

func ev(action, test string) testEvent { return testEvent{Action: action, Test: test} }

// TestRerunMerge: a leaf that failed once and passed alone on its second run
// makes its cell pass and its ancestors pass; a sibling's failure keeps its
// own cell and the ancestors failing.
func TestRerunMerge(t *testing.T) {
	first := []testEvent{
		ev("run", "TestScenarios"),
		ev("run", "TestScenarios/kafka-python/sidecar/commit"),
		{Action: "output", Test: "TestScenarios/kafka-python/sidecar/commit", Output: "    x_test.go:1: timed out\n"},
		ev("fail", "TestScenarios/kafka-python/sidecar/commit"),
		ev("pass", "TestScenarios/kafka-python/sidecar/seek"),
		ev("fail", "TestScenarios/kafka-python/sidecar"),
		ev("fail", "TestScenarios/kafka-python"),
		ev("fail", "TestScenarios/sarama/kafka/group"),
		ev("fail", "TestScenarios/sarama/kafka"),
		ev("fail", "TestScenarios/sarama"),
		ev("fail", "TestScenarios"),
	}
	leaves := failedLeaves(first)
	if strings.Join(leaves, ",") != "TestScenarios/kafka-python/sidecar/commit,TestScenarios/sarama/kafka/group" {
		t.Fatalf("failed leaves: %v", leaves)
	}
	again := []testEvent{
		ev("run", "TestScenarios"),
		ev("pass", "TestScenarios/kafka-python/sidecar/commit"),
		ev("pass", "TestScenarios/kafka-python/sidecar"),
		ev("pass", "TestScenarios/kafka-python"),
		ev("pass", "TestScenarios"),
	}
	if !passed(again, leaves[0]) {
		t.Fatal("second run not seen as passed")
	}
	merged := mergeRerun(first, leaves[0], again)
	r := &report{}
	r.build(merged)
	for name, want := range map[string]string{
		"TestScenarios/kafka-python/sidecar/commit": "pass",
		"TestScenarios/kafka-python/sidecar":        "pass",
		"TestScenarios/kafka-python":                "pass",
		"TestScenarios/sarama/kafka/group":          "fail",
		"TestScenarios":                             "fail",
	} {
		if got := r.tests[name].action; got != want {
			t.Errorf("%s after the merge: %s, want %s", name, got, want)
		}
	}
	if c := r.cellFor([]string{"TestScenarios/kafka-python/sidecar/commit"}); c.Status != "pass" {
		t.Errorf("kafka-python commit cell: %s (%s), want pass", c.Status, c.Detail)
	}
	if c := r.cellFor([]string{"TestScenarios/sarama/kafka/group"}); c.Status != "fail" {
		t.Errorf("sarama group cell: %s, want fail", c.Status)
	}
	// A second run that fails again is not a pass.
	if passed([]testEvent{ev("pass", "TestScenarios/sarama/kafka/group/x"), ev("fail", "TestScenarios/sarama/kafka/group")}, leaves[1]) {
		t.Error("a second failure counted as a pass")
	}
}

// TestRunPattern: the -run pattern selects exactly the test, level by level,
// whatever characters its name holds.
func TestRunPattern(t *testing.T) {
	name := "TestJavaTools/java-4.4.0/sidecar/admin-tools"
	p := runPattern(name)
	parts := strings.Split(p, "/")
	for i, want := range strings.Split(name, "/") {
		re := regexp.MustCompile(parts[i])
		if !re.MatchString(want) {
			t.Errorf("level %d: %q does not match %q", i, parts[i], want)
		}
		if re.MatchString(strings.Replace(want, ".", "x", 1)) && strings.Contains(want, ".") {
			t.Errorf("level %d: %q matches more than %q", i, parts[i], want)
		}
		if re.MatchString(want + "-more") {
			t.Errorf("level %d: %q matches a longer name", i, parts[i])
		}
	}
}
