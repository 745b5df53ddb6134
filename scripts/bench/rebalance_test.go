package main

import (
	"fmt"
	"strings"
	"testing"
)

func TestGroupWhole(t *testing.T) {
	want := []string{"a", "b", "c"}
	whole := map[string][]int32{"a": {0, 1}, "b": {2, 3}, "c": {4, 5}}
	if err := groupWhole("Stable", whole, 6, want); err != nil {
		t.Fatalf("a whole group: %v", err)
	}
	for _, c := range []struct {
		name, state string
		as          map[string][]int32
		want        []string
		says        string
	}{
		{"rebalancing", "PreparingRebalance", whole, want, "state"},
		{"member id not known yet", "Stable", whole, []string{"a", "b", ""}, "no member id"},
		{"dead member still in", "Stable", whole, []string{"a", "b"}, "3 members, want 2"},
		{"other member", "Stable", map[string][]int32{"a": {0, 1, 2}, "x": {3, 4, 5}}, []string{"a", "b"}, "not one of the live members"},
		// Cooperative first round: the joiner is in, the revoked partitions are not yet handed out.
		{"partitions in flight", "Stable", map[string][]int32{"a": {0, 1}, "b": {2, 3}, "c": nil}, want, "holds no partition"},
		{"one unassigned", "Stable", map[string][]int32{"a": {0, 1}, "b": {2, 3}, "c": {4}}, want, "5 of 6"},
		{"assigned twice", "Stable", map[string][]int32{"a": {0, 1, 2}, "b": {2, 3}, "c": {4, 5}}, want, "assigned to"},
		{"out of range", "Stable", map[string][]int32{"a": {0, 1}, "b": {2, 3}, "c": {4, 6}}, want, "holds partition 6"},
	} {
		err := groupWhole(c.state, c.as, 6, c.want)
		if err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.says)
		}
	}
}

func TestActiveShards(t *testing.T) {
	log := strings.Join([]string{
		`{"level":"info","shard":3,"epoch":1,"via":"lease wait","message":"coordination: shard active here"}`,
		`{"level":"info","shard":5,"epoch":1,"via":"lease wait","message":"coordination: shard active here"}`,
		`not json coordination: shard active here`,
		`{"level":"info","shard":3,"reason":"not listed","message":"coordination: shard released"}`,
		`{"level":"info","message":"coordination: shard active here"}`,
		`{"level":"info","shard":0,"message":"coordination: shard active here"}`,
	}, "\n")
	got := activeShards(log)
	if len(got) != 2 || !got[5] || !got[0] {
		t.Fatalf("active shards %v, want 0 and 5", got)
	}
	one := `{"shard":0,"message":"coordination: shard active here"}` + "\n" + `{"shard":1,"message":"coordination: shard active here"}`
	two := `{"shard":1,"message":"coordination: shard active here"}`
	if err := shardsSettled([]string{one, ""}, 2); err != nil {
		t.Fatalf("settled: %v", err)
	}
	if err := shardsSettled([]string{one, two}, 2); err == nil || !strings.Contains(err.Error(), "shard 1 active on 2") {
		t.Fatalf("shard on two sidecars: %v", err)
	}
	if err := shardsSettled([]string{two, ""}, 2); err == nil || !strings.Contains(err.Error(), "shard 0 active on 0") {
		t.Fatalf("shard without owner: %v", err)
	}
}

func TestRebalanceStat(t *testing.T) {
	s := rebalanceStat([]*Result{{RebalanceS: 3}, {RebalanceS: 1}, {RebalanceS: 2}})
	if s.median != 2 || s.lo != 1 || s.hi != 3 {
		t.Fatalf("odd: %+v", s)
	}
	if got := s.show(); got != "2.00 s ±50% (3.00, 1.00, 2.00)" {
		t.Fatalf("show: %q", got)
	}
	k := rebalanceStat([]*Result{{RebalanceS: 1}, {RebalanceS: 1.5}})
	if k.median != 1.25 {
		t.Fatalf("even: %+v", k)
	}
	if got := rbRatio(s, k); got != "1.60× (noise)" {
		t.Fatalf("ratio: %q", got)
	}
	if got := rbRatio(rebalanceStat([]*Result{{RebalanceS: 4}}), k); got != "3.20×" {
		t.Fatalf("ratio beyond the spread: %q", got)
	}
	// Within the poll interval of each other: noise, though the ranges do not overlap.
	if got := rbRatio(rebalanceStat([]*Result{{RebalanceS: 0.51}}), rebalanceStat([]*Result{{RebalanceS: 0.53}})); got != "0.96× (noise)" {
		t.Fatalf("ratio within the resolution: %q", got)
	}
	if got := rbRatio(s, rebalanceStat(nil)); got != "–" {
		t.Fatalf("ratio without Kafka: %q", got)
	}
}

// The "Rebalance times" section renders from results alone: medians,
// ratios where Kafka has the event, n/a with the reason where it cannot.
func TestRebalanceSection(t *testing.T) {
	b := &bench{plan: fullPlan()}
	rb := func(ev, tg string, pass int, s float64) *Result {
		return &Result{Workload: wRebalance, Variant: ev, Target: tg, Pass: pass, RebalanceS: s, Seconds: s, Load1Before: 0.5}
	}
	b.results = []*Result{
		rb(evJoin, tSidecar, 1, 1.0), rb(evLeave, tSidecar, 1, 0.5), rb(evKill, tSidecar, 1, 11),
		rb(evJoin, tKafka, 1, 0.5), rb(evLeave, tKafka, 1, 0.5),
		rb(evJoin, tKafka, 2, 0.6), rb(evLeave, tKafka, 2, 0.52),
		rb(evJoin, tSidecar, 2, 1.2), rb(evLeave, tSidecar, 2, 0.51),
		{Workload: wRebalance, Variant: evKill, Target: tSidecar, Pass: 2, Error: "not timed: boom"},
	}
	var w strings.Builder
	b.writeRebalance(func(f string, a ...any) { w.WriteString(fmt.Sprintf(f, a...)) })
	md := w.String()
	for _, want := range []string{
		"## Rebalance times",
		"| member join | ", "1.10 s ±9% (1.00, 1.20) | 0.55 s ±9% (0.50, 0.60) | 2.00× |",
		"0.51 s ±1% (0.50, 0.51) | 0.51 s ±2% (0.50, 0.52) | 0.99× (noise) |",
		"| owner SIGKILL | ", "| 11.00 s | " + killNA + " | – |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("section lacks %q:\n%s", want, md)
		}
	}
	if s := b.rebalanceSummary(); !strings.Contains(s, "member join 1.10 s (Kafka 0.55 s, 2.00×)") || !strings.Contains(s, "owner SIGKILL 11.00 s") {
		t.Errorf("summary: %s", s)
	}
	// A failed run is not a figure.
	if len(b.runsOf(wRebalance, evKill, tSidecar)) != 1 {
		t.Error("the failed kill counted as a run")
	}
}
