// The data-plane floor shared by Produce, Fetch, ListOffsets and the
// offsets APIs: the partition check, the data scope's error mapping and
// logging, and the single-consumer Iggy read.

package bridge

import (
	"context"
	"strconv"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

// checkPartition answers UNKNOWN_TOPIC_OR_PARTITION for a partition the
// topic does not have, asking Iggy again once when the cached lookup may
// predate added partitions. It returns the lookup to use from then on.
func checkPartition(ctx context.Context, client *iggy.Client, info *iggy.TopicInfo, partition int32) (int16, *iggy.TopicInfo) {
	if partition < 0 {
		return kerr.UnknownTopicOrPartition.Code, info
	}
	if uint32(partition) < info.PartitionsCount {
		return 0, info
	}
	fresh, err := client.RefreshTopic(ctx, info.Ref)
	if err != nil {
		return kafkaCode(err, scopeData), info
	}
	if uint32(partition) < fresh.PartitionsCount {
		return 0, fresh
	}
	return kerr.UnknownTopicOrPartition.Code, fresh
}

// txnPartition checks a partition AddPartitionsToTxn adds (bridge/txn's
// Frontend.CheckPartition): an existing one, else its Kafka code.
func (b *Bridge) txnPartition(ctx context.Context, topic string, partition int32) int16 {
	if validTopicName(topic) != nil || isInternalTopic(topic) {
		return kerr.UnknownTopicOrPartition.Code
	}
	info, err := b.lookupTopic(ctx, topic)
	if err != nil {
		return kafkaCode(err, scopeData)
	}
	code, _ := checkPartition(ctx, b.iggy, info, partition)
	return code
}

// dataErrCode maps an Iggy failure of a data API to its Kafka code and logs
// the failures without a specific code (UNKNOWN_SERVER_ERROR) with their
// Iggy code, and the others (and everything after the client left: ctx
// done) at debug level.
func dataErrCode(ctx context.Context, log zerolog.Logger, rq *Request, err error, topic, msg string) int16 {
	code := kafkaCode(err, scopeData)
	ev := log.Debug()
	if code == kerr.UnknownServerError.Code && ctx.Err() == nil {
		ev = log.Warn()
	}
	ev.Err(err).Uint64("conn_id", rq.ConnID).Int16("api_key", rq.Key).Int32("corr_id", rq.CorrID).
		Str("topic", topic).Uint32("iggy_code", iggyCode(err)).Int16("error_code", code).Msg(msg)
	return code
}

// firstOffset polls the first retained message; with none it answers hw
// (the log starts where it ends). hw < 0 means unknown: then the poll's
// current offset decides.
func firstOffset(ctx context.Context, client *iggy.Client, ref iggy.TopicRef, partition int32, hw int64) (int64, error) {
	p, err := pollIggy(ctx, client, ref, partition, icodec.PollingKindFirst, 0, 1)
	if err != nil {
		return 0, err
	}
	defer p.Release()
	it := p.Messages()
	if it.Next() {
		return int64(it.Message().Offset), nil
	}
	if hw >= 0 {
		return hw, nil
	}
	if p.CurrentOffset > 0 {
		return int64(p.CurrentOffset) + 1, nil
	}
	return 0, nil
}

// pollIggy runs one single-consumer poll (fetchConsumer, no auto-commit).
func pollIggy(ctx context.Context, client *iggy.Client, ref iggy.TopicRef, partition int32, kind icodec.PollingKind, value uint64, count uint32) (*iggy.Polled, error) {
	return client.Poll(ctx, &icodec.PollMessagesRequest{
		Consumer:    fetchConsumer,
		StreamID:    ref.StreamID(),
		TopicID:     ref.TopicID(),
		PartitionID: icodec.OptionalPartition{Present: true, PartitionID: uint32(partition)},
		Strategy:    icodec.PollingStrategy{Kind: kind, Value: value},
		Count:       count,
	})
}

// pollTail is pollIggy on the bridge's client: bridge/producers reads
// partition tails and its lease topic with it.
func (b *Bridge) pollTail(ctx context.Context, ref iggy.TopicRef, partition int32, kind icodec.PollingKind, value uint64, count uint32) (*iggy.Polled, error) {
	return pollIggy(ctx, b.iggy, ref, partition, kind, value, count)
}

// fetchConsumer is the single consumer every read polls with: numeric id
// 0x6b616667 ("kafg"). Reads use strategies Offset, First, Last and
// Timestamp and never auto-commit, so no offset is ever stored under it.
var fetchConsumer = icodec.Consumer{
	Kind: icodec.ConsumerKindConsumer,
	ID:   icodec.Identifier{Kind: icodec.IdentifierKindNumeric, Value: []byte{0x67, 0x66, 0x61, 0x6b}},
}

// checkMessageSize applies max.message.bytes to one partition's records of
// a Produce v3+ (one record batch, so the records are the batch as Kafka
// measures it, log overhead included). Message sets of v0-v2 are not
// checked. It returns MESSAGE_TOO_LARGE and Kafka's reason, or 0.
func (b *Bridge) checkMessageSize(ctx context.Context, version int16, info *iggy.TopicInfo, records []byte) (int16, string) {
	if version < 3 {
		return 0, ""
	}
	if limit := b.store.MaxMessageBytes(ctx, info, int(b.cfg.Topics.MaxMessageBytes)); len(records) > limit {
		return kerr.MessageTooLarge.Code, "The request included a message larger than the max message size the server will accept: " +
			strconv.Itoa(len(records)) + " bytes > max.message.bytes " + strconv.Itoa(limit)
	}
	return 0, ""
}
