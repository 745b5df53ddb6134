package bridge

import "github.com/kafka-iggy/kafka-iggy/codec/records"

// FetchSkipMetrics is what a Metrics implementation may also implement to
// count the Iggy messages Fetch skipped because the record mapping cannot
// read them (records_fetch.go): each is an offset gap a consumer steps over
// without an error, so operators alert on this counter
// (kafka_iggy_fetch_skipped_messages_total, docs/OPERATIONS.md).
type FetchSkipMetrics interface {
	// FetchSkipped counts one skipped message; reason is records.SkipReason's
	// String.
	FetchSkipped(reason string)
}

// countSkip reports a skipped message to the metrics, when they count them.
func (b *Bridge) countSkip(reason records.SkipReason) {
	if m, ok := b.metrics.(FetchSkipMetrics); ok {
		m.FetchSkipped(reason.String())
	}
}
