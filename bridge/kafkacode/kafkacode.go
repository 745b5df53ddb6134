// Package kafkacode is the Iggy-to-Kafka error table (KAFKA-ON-IGGY §7):
// the Kafka code a client sees for an error of the Iggy client, by the
// family of the Kafka API that met it.
package kafkacode

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

// Scope says which Kafka API family an Iggy failure is reported to: the
// same Iggy error maps to different Kafka codes for data, offsets, groups and
// admin requests (KAFKA-ON-IGGY §7).
type Scope uint8

const (
	Data    Scope = iota // Produce, Fetch, ListOffsets, Metadata
	Offsets              // OffsetCommit, OffsetFetch, OffsetDelete
	Group                // group coordination
	Admin                // CreateTopics, DeleteTopics, CreatePartitions, configs
)

// classToKafka is the one Iggy-to-Kafka table for business outcomes that
// do not depend on the scope: the Kafka code of each error class of
// schema/errors.yaml (icodec.Status.Class). The scoped classes (retriable,
// unauthorized) are Of's.
var classToKafka = [...]int16{
	icodec.StatusClassNotFound:          kerr.UnknownTopicOrPartition.Code,
	icodec.StatusClassInvalidConfig:     kerr.InvalidConfig.Code,
	icodec.StatusClassTopicExists:       kerr.TopicAlreadyExists.Code,
	icodec.StatusClassInvalidPartitions: kerr.InvalidPartitions.Code,
	icodec.StatusClassInvalidName:       kerr.InvalidTopicException.Code,
	icodec.StatusClassTooLarge:          kerr.MessageTooLarge.Code,
	icodec.StatusClassInvalidGroup:      kerr.InvalidGroupID.Code,
	// Only offset stores meet 4100 InvalidOffset: a consumer-mode commit
	// beyond the high watermark (KAFKA-ON-IGGY §6).
	icodec.StatusClassInvalidOffset: kerr.OffsetOutOfRange.Code,
	// Iggy's id spaces (4096 topics per stream, 1048576 streams) limit
	// creation cluster-wide: Kafka reports such limits as policy refusals.
	icodec.StatusClassLimit: kerr.PolicyViolation.Code,
}

// Of maps an error from the Iggy client to the Kafka error code a
// client should see. nil maps to 0. Unknown failures map to
// UNKNOWN_SERVER_ERROR; callers log the Iggy code (iggy_code) for those.
// A business error never closes the Kafka connection.
func Of(err error, scope Scope) int16 {
	if err == nil {
		return 0
	}
	if errors.Is(err, iggy.ErrMessageTooLarge) {
		return kerr.MessageTooLarge.Code
	}
	if iggy.IsUnauthorized(err) {
		if scope == Group { // Iggy refuses per topic; only group state is the group's (KAFKA-ON-IGGY §7)
			return kerr.GroupAuthorizationFailed.Code
		}
		return kerr.TopicAuthorizationFailed.Code
	}
	if iggy.IsTimeout(err) {
		if scope == Offsets {
			// REQUEST_TIMED_OUT in an OffsetFetch answer is fatal to the
			// Java consumer; COORDINATOR_LOAD_IN_PROGRESS is retried by
			// every client.
			return kerr.CoordinatorLoadInProgress.Code
		}
		return kerr.RequestTimedOut.Code
	}
	if iggy.Retriable(err) {
		switch scope {
		case Offsets, Group:
			return kerr.CoordinatorLoadInProgress.Code
		case Admin:
			return kerr.RequestTimedOut.Code
		}
		return kerr.NotLeaderForPartition.Code
	}
	if iggy.IsNotFound(err) {
		return kerr.UnknownTopicOrPartition.Code
	}
	var st icodec.Status
	if errors.As(err, &st) {
		if c := int(st.Class()); c < len(classToKafka) && classToKafka[c] != 0 {
			return classToKafka[c]
		}
	}
	return kerr.UnknownServerError.Code
}

// Iggy extracts the Iggy error code of err for logs (0 when err carries none).
func Iggy(err error) uint32 {
	var st icodec.Status
	if errors.As(err, &st) {
		return uint32(st)
	}
	return 0
}
