package bridge

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
)

// topicForAdmin resolves a Kafka topic for the admin APIs that answer per
// partition (ElectLeaders, reassignments, DescribeLogDirs,
// OffsetForLeaderEpoch, DescribeTopicPartitions): its Iggy topic (nil for
// the internal __consumer_offsets) and partition count, or the code to
// answer: UNKNOWN_TOPIC_OR_PARTITION for a name Kafka refuses or a topic
// that does not exist, else the code errors.go maps an Iggy failure to.
// fresh asks Iggy again (partition sizes and end offsets) instead of the
// client's cached lookup.
func (b *Bridge) topicForAdmin(ctx context.Context, name string, fresh bool) (*iggy.TopicInfo, int32, int16) {
	if validTopicName(name) != nil {
		return nil, 0, kerr.UnknownTopicOrPartition.Code
	}
	if isInternalTopic(name) {
		return nil, 1, 0
	}
	var info *iggy.TopicInfo
	var err error
	if fresh {
		info, err = b.iggy.RefreshTopic(ctx, b.topics.ref(name))
	} else {
		info, err = b.lookupTopic(ctx, name)
	}
	if err != nil {
		code := kafkaCode(err, scopeData)
		if code == kerr.UnknownServerError.Code {
			b.log.Warn().Err(err).Str("topic", name).Uint32("iggy_code", iggyCode(err)).Msg("admin: topic lookup failed")
		}
		return nil, 0, code
	}
	return info, int32(info.PartitionsCount), 0
}

// partitionStats returns a partition's log end offset (the high
// watermark: current_offset + 1 when it holds messages, else 0) and its
// size in bytes, from a GET_TOPIC answer; ok false when the answer does not
// list the partition. nil info (the internal topic) is an empty partition.
func partitionStats(info *iggy.TopicInfo, partition int32) (end int64, size uint64, ok bool) {
	if info == nil {
		return 0, 0, partition == 0
	}
	for i := range info.Details.Partitions {
		p := &info.Details.Partitions[i]
		if p.ID != uint32(partition) {
			continue
		}
		if p.MessagesCount > 0 {
			end = int64(p.CurrentOffset) + 1
		}
		return end, p.SizeBytes, true
	}
	return 0, 0, false
}

// unknownTopic reports whether a topicForAdmin code says the topic does
// not exist (rather than that Iggy could not be asked).
func unknownTopic(code int16) bool { return code == kerr.UnknownTopicOrPartition.Code }
