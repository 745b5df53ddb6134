package e2e

// Target is one Kafka-protocol broker the suite runs against.
type Target struct {
	// Name labels the target in test names and failure messages.
	Name string
	// Bootstrap is the host:port a client dials first.
	Bootstrap string
	// Reference marks franz-go's kfake: the differential test compares every
	// other target with it unless a real Kafka broker (Kafka) is running.
	Reference bool
	// Kafka marks a real Apache Kafka broker (kafka_target.go): when present it
	// is the differential test's reference instead of kfake.
	Kafka bool
	// Sidecar marks a kafka-iggy sidecar, whatever its name: the suite's own
	// ("sidecar") and an external target given as a sidecar in
	// KAFKA_IGGY_E2E_BROKERS. It gets the differences intended for
	// "sidecar" (intendedDifferences).
	Sidecar bool
	// KeepsProducerBatches is true when Fetch returns record batches as the
	// producer sent them (kfake, a real Kafka broker), so the suite can check
	// that the client really compressed with the codec under test. The
	// sidecar re-encodes batches without compression, so it leaves this false.
	KeepsProducerBatches bool
}
