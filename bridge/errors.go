package bridge

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

// errScope says which Kafka API family an Iggy failure is reported to: the
// same Iggy error maps to different Kafka codes for data, offsets, groups and
// admin requests (KAFKA-ON-IGGY §7).
type errScope uint8

const (
	scopeData    errScope = iota // Produce, Fetch, ListOffsets, Metadata
	scopeOffsets                 // OffsetCommit, OffsetFetch, OffsetDelete
	scopeGroup                   // group coordination
	scopeAdmin                   // CreateTopics, DeleteTopics, CreatePartitions, configs
)

// statusToKafka is the one Iggy-code -> Kafka-code table for business
// outcomes that do not depend on the scope.
var statusToKafka = map[icodec.Status]int16{
	icodec.StatusResourceNotFound:          kerr.UnknownTopicOrPartition.Code,
	icodec.StatusStreamIDNotFound:          kerr.UnknownTopicOrPartition.Code,
	icodec.StatusStreamNameNotFound:        kerr.UnknownTopicOrPartition.Code,
	icodec.StatusTopicIDNotFound:           kerr.UnknownTopicOrPartition.Code,
	icodec.StatusTopicNameNotFound:         kerr.UnknownTopicOrPartition.Code,
	icodec.StatusPartitionNotFound:         kerr.UnknownTopicOrPartition.Code,
	icodec.StatusUnsupportedOptionKey:      kerr.InvalidConfig.Code,
	icodec.StatusInvalidOptionValue:        kerr.InvalidConfig.Code,
	icodec.StatusInvalidTopicSize:          kerr.InvalidConfig.Code,
	icodec.StatusTopicNameAlreadyExists:    kerr.TopicAlreadyExists.Code,
	icodec.StatusTooManyPartitions:         kerr.InvalidPartitions.Code,
	icodec.StatusInvalidPartitionsCount:    kerr.InvalidPartitions.Code,
	icodec.StatusPartitionIDSpaceExhausted: kerr.InvalidPartitions.Code,
	icodec.StatusPartitionsLimitReached:    kerr.InvalidPartitions.Code,
	icodec.StatusInvalidTopicName:          kerr.InvalidTopicException.Code,
	icodec.StatusTooBigUserHeaders:         kerr.MessageTooLarge.Code,
	icodec.StatusTooBigMessagePayload:      kerr.MessageTooLarge.Code,
	icodec.StatusInvalidConsumerGroupName:  kerr.InvalidGroupID.Code,
	// Only offset stores meet 4100: a consumer-mode commit beyond the high
	// watermark (KAFKA-ON-IGGY §6).
	icodec.StatusInvalidOffset: kerr.OffsetOutOfRange.Code,

	// Iggy's id spaces (4096 topics per stream, 1048576 streams) limit
	// creation cluster-wide: Kafka reports such limits as policy refusals.
	icodec.StatusTooManyTopics:  kerr.PolicyViolation.Code,
	icodec.StatusTooManyStreams: kerr.PolicyViolation.Code,
}

// kafkaCode maps an error from the Iggy client to the Kafka error code a
// client should see. nil maps to 0. Unknown failures map to
// UNKNOWN_SERVER_ERROR; callers log the Iggy code (iggy_code) for those.
// A business error never closes the Kafka connection.
func kafkaCode(err error, scope errScope) int16 {
	if err == nil {
		return 0
	}
	if errors.Is(err, iggy.ErrMessageTooLarge) {
		return kerr.MessageTooLarge.Code
	}
	if iggy.IsUnauthorized(err) {
		if scope == scopeGroup || scope == scopeOffsets {
			return kerr.GroupAuthorizationFailed.Code
		}
		return kerr.TopicAuthorizationFailed.Code
	}
	if iggy.IsTimeout(err) {
		if scope == scopeOffsets {
			// REQUEST_TIMED_OUT in an OffsetFetch answer is fatal to the
			// Java consumer; COORDINATOR_LOAD_IN_PROGRESS is retried by
			// every client.
			return kerr.CoordinatorLoadInProgress.Code
		}
		return kerr.RequestTimedOut.Code
	}
	if iggy.Retriable(err) {
		switch scope {
		case scopeOffsets, scopeGroup:
			return kerr.CoordinatorLoadInProgress.Code
		case scopeAdmin:
			return kerr.RequestTimedOut.Code
		}
		return kerr.NotLeaderForPartition.Code
	}
	if iggy.IsNotFound(err) {
		return kerr.UnknownTopicOrPartition.Code
	}
	var st icodec.Status
	if errors.As(err, &st) {
		if code, ok := statusToKafka[st]; ok {
			return code
		}
	}
	return kerr.UnknownServerError.Code
}

// iggyCode extracts the Iggy error code of err for logs (0 when err carries none).
func iggyCode(err error) uint32 {
	var st icodec.Status
	if errors.As(err, &st) {
		return uint32(st)
	}
	return 0
}
