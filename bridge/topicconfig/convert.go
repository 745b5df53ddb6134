// Kafka config values <-> Iggy option values, one pair per mapped config
// (the toIggy/toKafka of the catalog), and the refusal reasons they give.

package topicconfig

import (
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"

	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

// parseKafkaLong parses a Kafka LONG (ConfigDef trims before parsing).
func parseKafkaLong(v string) (int64, bool) {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	return n, err == nil
}

func retentionMsToIggy(v string, _ *icodec.OptionSpec, _ uint32) (uint64, string) {
	n, ok := parseKafkaLong(v)
	switch {
	case !ok:
		return 0, "Not a number of type LONG"
	case n < -1:
		return 0, "Value must be at least -1"
	case n == -1:
		return math.MaxUint64, ""
	case n == 0:
		// Iggy's 0 means "server default" (never expire); 1 µs is the
		// closest to Kafka's "delete at once" and reads back as 0 ms.
		return 1, ""
	case uint64(n) >= (math.MaxUint64-1)/1000:
		return math.MaxUint64, "" // beyond 584,000 years: never
	}
	return uint64(n) * 1000, ""
}

func retentionMsToKafka(v uint64, _ uint32) string {
	if v == math.MaxUint64 {
		return "-1"
	}
	return strconv.FormatUint(v/1000, 10)
}

// perPartition is the divisor of max_topic_size: a topic with no partitions
// (Iggy allows it) counts as one.
func perPartition(partitions uint32) uint64 {
	if partitions == 0 {
		return 1
	}
	return uint64(partitions)
}

func retentionBytesToIggy(v string, _ *icodec.OptionSpec, partitions uint32) (uint64, string) {
	n, ok := parseKafkaLong(v)
	switch {
	case !ok:
		return 0, "Not a number of type LONG"
	case n < -1:
		return 0, "Value must be at least -1"
	case n == -1:
		return math.MaxUint64, ""
	case n == 0:
		return 0, "Iggy cannot keep less than one segment per topic; use at least segment.bytes / partitions"
	}
	hi, lo := bits.Mul64(uint64(n), perPartition(partitions))
	if hi != 0 || lo == math.MaxUint64 {
		return math.MaxUint64, "" // larger than any disk: unlimited
	}
	return lo, ""
}

func retentionBytesToKafka(v uint64, partitions uint32) string {
	if v == math.MaxUint64 {
		return "-1"
	}
	return strconv.FormatUint(v/perPartition(partitions), 10)
}

func segmentBytesToIggy(v string, spec *icodec.OptionSpec, _ uint32) (uint64, string) {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
	if err != nil {
		return 0, "Not a number of type INT"
	}
	if n <= 0 || !inCatalogRange(spec, uint64(n)) {
		return 0, rangeReason(spec)
	}
	return uint64(n), ""
}

// maxMessageBytesToGateway parses max.message.bytes: an INT of at least 0,
// as Kafka's ConfigDef has it.
func maxMessageBytesToGateway(v string, _ *icodec.OptionSpec, _ uint32) (uint64, string) {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
	switch {
	case err != nil:
		return 0, "Not a number of type INT"
	case n < 0:
		return 0, "Value must be at least 0"
	}
	return uint64(n), ""
}

func countToIggy(v string, spec *icodec.OptionSpec, _ uint32) (uint64, string) {
	n, ok := parseKafkaLong(v)
	if !ok {
		return 0, "Not a number of type LONG"
	}
	if n <= 0 || !inCatalogRange(spec, uint64(n)) {
		return 0, rangeReason(spec)
	}
	return uint64(n), ""
}

func decimalToKafka(v uint64, _ uint32) string { return strconv.FormatUint(v, 10) }

func compressionToIggy(v string, _ *icodec.OptionSpec, _ uint32) (uint64, string) {
	switch strings.TrimSpace(v) {
	case "none", "uncompressed":
		return uint64(icodec.CompressionAlgorithmNone), ""
	case "gzip":
		return uint64(icodec.CompressionAlgorithmGzip), ""
	}
	return 0, "Iggy stores only none (uncompressed) or gzip as a topic's compression label"
}

func compressionToKafka(v uint64, _ uint32) string {
	if icodec.CompressionAlgorithm(v) == icodec.CompressionAlgorithmGzip {
		return "gzip"
	}
	return "none"
}

// rangeReason describes the catalog bounds of spec.
func rangeReason(spec *icodec.OptionSpec) string {
	if spec == nil {
		return "not supported"
	}
	var b strings.Builder
	b.WriteString("Iggy ")
	b.WriteString(spec.Key)
	b.WriteString(" must be")
	if spec.MultipleOf > 0 {
		fmt.Fprintf(&b, " a multiple of %d", spec.MultipleOf)
	}
	switch {
	case spec.HasMin && spec.HasMax:
		fmt.Fprintf(&b, " between %d and %d", spec.Min, spec.Max)
	case spec.HasMin:
		fmt.Fprintf(&b, " at least %d", spec.Min)
	case spec.HasMax:
		fmt.Fprintf(&b, " at most %d", spec.Max)
	}
	return b.String()
}
