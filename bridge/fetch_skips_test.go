package bridge

import (
	"testing"

	"github.com/rs/zerolog"

	"github.com/kafka-iggy/kafka-iggy/codec/records"
)

// skipCounter is a Metrics that also counts Fetch skips.
type skipCounter struct {
	NopMetrics
	reasons []string
}

func (m *skipCounter) FetchSkipped(reason string) { m.reasons = append(m.reasons, reason) }

// TestFetchSkipIsCounted: a message the mapping cannot read reaches the
// metrics with its reason (the counter operators alert on), besides the
// rate-limited log line.
func TestFetchSkipIsCounted(t *testing.T) {
	m := &skipCounter{}
	f := &fetcher{b: &Bridge{metrics: m}, skipLog: zerolog.Nop()}
	f.onSkip(7, records.SkipBadMarker)
	f.onSkip(8, records.SkipBadEnvelope)
	if len(m.reasons) != 2 || m.reasons[0] != "bad_marker" || m.reasons[1] != "bad_envelope" {
		t.Fatalf("counted %v, want [bad_marker bad_envelope]", m.reasons)
	}
	if f.skipped.Load() != 2 {
		t.Fatalf("skipped %d, want 2", f.skipped.Load())
	}
}
