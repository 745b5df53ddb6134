package e2e

import (
	"reflect"
	"testing"
)

// External targets (KAFKA_IGGY_E2E_BROKERS) and which intended differences
// reach them: an operator's own sidecar, whatever they name it, gets the
// sidecar's.

func TestExternalTargets(t *testing.T) {
	got, err := externalTargets(" pod-a=10.0.0.5:9092, ref=broker@10.0.0.6:9092 ,pod-b=sidecar@h:1")
	if err != nil {
		t.Fatal(err)
	}
	want := []Target{
		{Name: "pod-a", Bootstrap: "10.0.0.5:9092", Sidecar: true},
		{Name: "ref", Bootstrap: "10.0.0.6:9092"},
		{Name: "pod-b", Bootstrap: "h:1", Sidecar: true},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	for _, bad := range []string{"nohost", "=h:1", "x=", "x=kafka@h:1", "x=broker@"} {
		if _, err := externalTargets(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestSidecarDifferencesFollowTheKind(t *testing.T) {
	saved := intendedDifferences
	t.Cleanup(func() { intendedDifferences = saved })
	d := intendedDifference{Step: "s", Field: "f", Want: "w", Target: "sidecar", Why: "test"}
	intendedDifferences = append([]intendedDifference{d}, saved...)
	kfake := Target{Name: "kfake", Reference: true}
	for _, tc := range []struct {
		tg   Target
		want bool
	}{
		{Target{Name: "sidecar", Sidecar: true}, true},
		{Target{Name: "prod-pod", Sidecar: true}, true},
		{Target{Name: "sidecar"}, false}, // a plain broker named sidecar
		{Target{Name: "kafka", Kafka: true}, false},
	} {
		has := false
		for _, e := range intendedFor(tc.tg, kfake) {
			if e == d {
				has = true
			}
		}
		if has != tc.want || targetExcused(tc.tg, "s", "f", "w") != tc.want {
			t.Errorf("%+v: sidecar difference applies %v, want %v", tc.tg, has, tc.want)
		}
	}
}
