package bridge

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

func TestOffsetsScopeCodes(t *testing.T) {
	// The offsets scope of the shared table: timeouts and retriable
	// failures are COORDINATOR_LOAD_IN_PROGRESS, 4100 is OFFSET_OUT_OF_RANGE.
	for err, want := range map[error]int16{
		iggy.ErrTimeout:                     kerr.CoordinatorLoadInProgress.Code,
		context.DeadlineExceeded:            kerr.CoordinatorLoadInProgress.Code,
		iggy.ErrSessionLost:                 kerr.CoordinatorLoadInProgress.Code,
		icodec.StatusInvalidOffset:          kerr.OffsetOutOfRange.Code,
		icodec.StatusTopicIDNotFound:        kerr.UnknownTopicOrPartition.Code,
		icodec.StatusUnauthorized:           kerr.TopicAuthorizationFailed.Code, // Iggy refuses the topic
		icodec.StatusInvalidCommand:         kerr.UnknownServerError.Code,
		icodec.StatusConsumerOffsetNotFound: kerr.UnknownServerError.Code,
	} {
		if got := kafkaCode(err, scopeOffsets); got != want {
			t.Errorf("kafkaCode(%v, offsets) = %d, want %d", err, got, want)
		}
	}
	if got := kafkaCode(iggy.ErrTimeout, scopeData); got != kerr.RequestTimedOut.Code {
		t.Errorf("data scope timeout: %d", got)
	}
}
