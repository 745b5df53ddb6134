//go:build !cgo

package e2e

import "testing"

// TestConfluentRoundTrip needs cgo: confluent-kafka-go links its bundled
// librdkafka with the C compiler. Without cgo (CGO_ENABLED=0, or no gcc) the
// client cannot be built, which CI reports as a failure.
func TestConfluentRoundTrip(t *testing.T) {
	missingDependency(t, "confluent-kafka-go needs cgo: set CGO_ENABLED=1 and install gcc")
}

// TestSecurityDifferential runs confluent-kafka-go beside franz-go: cgo.
func TestSecurityDifferential(t *testing.T) {
	missingDependency(t, "confluent-kafka-go needs cgo: set CGO_ENABLED=1 and install gcc")
}

// TestReadCommittedConfluent needs cgo too (see above).
func TestReadCommittedConfluent(t *testing.T) {
	missingDependency(t, "confluent-kafka-go needs cgo: set CGO_ENABLED=1 and install gcc")
}

// TestTxnProducerConfluent needs cgo too (see above).
func TestTxnProducerConfluent(t *testing.T) {
	missingDependency(t, "confluent-kafka-go needs cgo: set CGO_ENABLED=1 and install gcc")
}
