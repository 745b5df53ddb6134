package clientmetrics

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func set(name, v string) AlterOp {
	return AlterOp{Name: name, Op: kmsg.IncrementalAlterConfigOpSet, Value: &v}
}

// Plan stores normalized values, writes only what changes, and a replace
// removes the configs it does not set.
func TestPlanChanges(t *testing.T) {
	cur := map[string]string{KeyMetrics: "a.,b.", KeyInterval: "1000"}
	ch, next, p := Plan("s", cur, []AlterOp{set(KeyMetrics, " a. , b. "), set(KeyInterval, "2000")}, false)
	if p != nil || len(ch) != 1 || ch[0] != (Op{Key: KeyInterval, Value: "2000"}) || next[KeyMetrics] != "a.,b." {
		t.Errorf("incremental: %+v %v %v", ch, next, p)
	}
	ch, _, p = Plan("s", cur, []AlterOp{set(KeyMatch, "client_id=x")}, true)
	var got []string
	for _, c := range ch {
		got = append(got, c.Key+"="+c.Value+map[bool]string{true: " removed"}[c.Remove])
	}
	if p != nil || strings.Join(got, ",") != "interval.ms= removed,match=client_id=x,metrics= removed" {
		t.Errorf("replace: %v %v", got, p)
	}
}

// Match: every pattern of a subscription must match its selector's whole
// value; the union of metrics, the smallest interval; none matched: no
// metric, the default interval.
func TestMatchCombines(t *testing.T) {
	s := &Store{subs: map[string]map[string]string{
		"a": {KeyMetrics: "p.", KeyInterval: "60000", KeyMatch: "client_id=app-.*,client_source_port=9"},
		"b": {KeyMetrics: "c.,p."},
		"c": {KeyMetrics: "x.", KeyInterval: "100", KeyMatch: "client_id=app"},
	}, gen: 1}
	s.syncedAt = farFuture
	m := s.Match(t.Context(), Client{ClientID: "app-1", SourcePort: "9"})
	if m.Count != 2 || strings.Join(m.Metrics, ",") != "p.,c." || m.IntervalMs != 60000 {
		t.Errorf("app-1: %+v", m)
	}
	m = s.Match(t.Context(), Client{ClientID: "app-1x", SourcePort: "90"})
	if m.Count != 1 || m.IntervalMs != DefaultInterval {
		t.Errorf("app-1x port 90: %+v", m)
	}
	s.subs = map[string]map[string]string{"c": {KeyMatch: "client_id=app"}}
	s.gen++
	if m := s.Match(t.Context(), Client{ClientID: "zzz"}); !m.Any || m.Count != 0 || len(m.Metrics) != 0 || m.IntervalMs != DefaultInterval {
		t.Errorf("none matched: %+v", m)
	}
}

var farFuture = func() (t0 time.Time) { return time.Now().Add(time.Hour) }()
