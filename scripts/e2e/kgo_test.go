package e2e

import "testing"

// TestKgoRoundTrip: franz-go kgo produces the canonical records (every case,
// unadapted) with each codec and consumes them with ConsumePartitions.
func TestKgoRoundTrip(t *testing.T) {
	runRoundTrips(t, roundTripClient{
		name:    "kgo",
		records: canonicalRecords,
		produce: kgoProduce,
		consume: kgoConsume,
	})
}
