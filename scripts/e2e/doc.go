// Package e2e holds the end-to-end suite that proves unmodified Kafka clients
// work through a Kafka-protocol broker: franz-go kgo, IBM sarama,
// segmentio/kafka-go, confluent-kafka-go (bundled librdkafka), kcat and the
// Java client (kafka-clients), each with the codecs none, gzip, snappy, lz4
// and zstd; a differential scenario that compares a broker with franz-go's
// kfake; and the long-poll timing checks. Only the _test.go files run
// anything; this file, target.go and sidecar_target.go hold what a broker
// hook needs.
//
// # Targets
//
// Every test runs against each Target that targets() returns:
//
//   - "kfake": franz-go's in-process reference broker, always started.
//   - "sidecar": the kafka-iggy sidecar that startSidecar in
//     sidecar_target.go builds and runs on the embedded Iggy server.
//   - any broker already listening, named by the environment variable
//     KAFKA_IGGY_E2E_BROKERS="name=[kind@]host:port[,...]" (for example
//     a sidecar started by hand with `make run`: mine=127.0.0.1:9092). The
//     kind is sidecar (the default: a kafka-iggy sidecar, Target.Sidecar,
//     which gets the differences intended for "sidecar" whatever its name)
//     or broker (any other broker, held to Kafka's values).
//
// KAFKA_IGGY_E2E_TARGETS="sidecar,..." keeps only the named targets (the
// differential test still uses kfake as its reference), and
// KAFKA_IGGY_E2E_NO_SIDECAR=1 does not start the suite's own sidecar:
// docs/OPERATIONS.md ("Checking a deployment with the end-to-end suite")
// has the whole recipe for an operator's own sidecar and Iggy server.
//
// # What each test proves
//
// Round trips (kgo_test.go, sarama_test.go, kafkago_test.go,
// confluent_test.go, kcat_test.go, java_test.go, driven by runRoundTrips in
// matrix_test.go): per target and codec, the client produces the canonical
// records (records_test.go: null, empty and 300-byte keys; tombstone, empty,
// 1 KiB and binary values; duplicate header names, an empty header value, a
// 300-byte header value and a 260-byte header name; CreateTime 0 ms, a
// far-past one and ordinary ones; two partitions) to a fresh topic and
// consumes them from the start. What the client consumed, and what franz-go
// reads back independently, must equal what the producer was told: key,
// value, headers in order, timestamp, partition and offset, with null and
// empty kept apart. On a target that returns batches as produced (kfake) the
// raw batches must carry the codec under test.
//
// Where a client cannot express a case, the test says so at the client and
// adapts only that case: kafka-go and librdkafka (confluent) send the current
// time for a CreateTime of 0 ms, so they send 1 ms; kafka-go's Reader shows
// empty bytes as null; kcat sets no CreateTime, shares -H headers across a
// run, needs -Z for nulls and, through Debian's librdkafka 2.0.2, compresses
// gzip/snappy/lz4 only with brokers that advertise Produce v2 (kfake starts at
// v3).
//
// differential_test.go runs a scripted admin and data scenario against kfake
// and every other target and compares the transcripts field by field;
// intendedDifferences lists the accepted differences and kafkaSemantics the
// values Apache Kafka gives. longpoll_test.go checks that a waiting Fetch
// wakes on produce and that an idle Fetch is held for max_wait.
//
// Kafka's own tools, Java 4.x and 3.9 (scripts/kafka/bin): javatools_test.go
// runs kafka-topics, kafka-configs and kafka-consumer-groups --list and
// --describe (committed offsets and lag); javaconsole_test.go has the
// console producer (stock config, idempotent) write keyed records, the
// console consumer with --group read them, kafka-consumer-groups
// --reset-offsets --to-earliest --execute rewind the inactive group, and a
// consumer without --from-beginning read everything again from the reset
// offsets. scenarios_test.go and scenarios_ext_test.go run the per-client
// scenarios of the compatibility matrix (scripts/e2e/compat).
//
// # Dependencies
//
// The Java program and kcat come from scripts/install-test-deps.sh. Outside CI
// a test whose tool is missing skips and names that script; with CI=true it
// fails instead.
package e2e
