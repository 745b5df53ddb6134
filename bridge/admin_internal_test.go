package bridge

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kafka-iggy/kafka-iggy/bridge/topicconfig"
	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

// TestKafkaCodeAdmin: the Iggy outcomes the admin APIs meet, through the
// one table of errors.go.
func TestKafkaCodeAdmin(t *testing.T) {
	for st, want := range map[icodec.Status]int16{
		icodec.StatusTopicNameAlreadyExists:     kerr.TopicAlreadyExists.Code,
		icodec.StatusUnsupportedOptionKey:       kerr.InvalidConfig.Code,
		icodec.StatusInvalidOptionValue:         kerr.InvalidConfig.Code,
		icodec.StatusInvalidTopicSize:           kerr.InvalidConfig.Code,
		icodec.StatusTooManyPartitions:          kerr.InvalidPartitions.Code,
		icodec.StatusPartitionsLimitReached:     kerr.InvalidPartitions.Code,
		icodec.StatusTooManyTopics:              kerr.PolicyViolation.Code,
		icodec.StatusTooManyStreams:             kerr.PolicyViolation.Code,
		icodec.StatusTopicIDNotFound:            kerr.UnknownTopicOrPartition.Code,
		icodec.StatusStreamIDNotFound:           kerr.UnknownTopicOrPartition.Code,
		icodec.StatusUnauthorized:               kerr.TopicAuthorizationFailed.Code,
		icodec.StatusTransientNotCommitted:      kerr.RequestTimedOut.Code,
		icodec.StatusCannotCreateTopicDirectory: kerr.UnknownServerError.Code,
	} {
		if got := kafkaCode(st, scopeAdmin); got != want {
			t.Errorf("%v: %d, want %d", st, got, want)
		}
	}
}

func TestTopicNameProblem(t *testing.T) {
	for name, want := range map[string]string{
		"ok.topic_1-x":           "",
		"":                       "can't be empty",
		".":                      `cannot be "." or ".."`,
		strings.Repeat("a", 250): "longer than 249",
		"a/b":                    "contains a character other than",
	} {
		got := topicconfig.NameProblem(name)
		if (want == "") != (got == "") || !strings.Contains(got, want) {
			t.Errorf("%q: %q, want %q", name, got, want)
		}
	}
}
