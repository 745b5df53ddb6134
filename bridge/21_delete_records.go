package bridge

// DeleteRecords: v0-v2
//
// Behavior:
//   - Moves each partition's log start offset up to the offset asked (-1:
//     the high watermark), as Kafka does for kafka-delete-records and for
//     Kafka Streams' purge of consumed repartition records. The offset is
//     durable and shared by every sidecar of the Iggy server: a log_start
//     record in the topic-config store (topicconfig/store.go), the highest offset
//     per partition winning. ListOffsets earliest, Fetch (its log start
//     offset, and OFFSET_OUT_OF_RANGE below it) and this API honour it.
//   - Iggy storage: Iggy cannot drop part of a segment, and its segments'
//     boundaries are not visible to a client. The partition's single
//     consumer kafka.log-start is stored at log start offset − 1 (Iggy's
//     "last processed message"), then DELETE_SEGMENTS asks for every sealed
//     segment: the server raises the partition's delete watermark to the
//     end of its newest sealed segment and deletes only sealed segments that
//     end at or below it and at or below the lowest stored consumer offset
//     of the partition (its consumer barrier), so exactly those wholly below
//     the log start offset go, and a repartition topic Streams purges stays
//     bounded. Those a consumer group's lower stored offset holds back go
//     when that offset moves past them (the watermark stays). The active
//     segment always stays. The real 0.9 server answers with operation 68
//     (TruncatePartition, result-framed: success even when nothing was
//     deleted, or 1009/2010/3007/41), 138 with an empty body only for a body
//     it cannot decode, and 58 TransientNotAccepted while the partition has
//     not converged, which the Iggy client resends while its request timeout
//     allows (bridge/iggy). A failure of this step is logged; the log start
//     offset holds all the same. The kafka.log-start offset also holds back Iggy's
//     time and size retention at the log start offset (a consumer barrier).
//   - Answers, per partition: the new low watermark (the log start offset
//     after the call, never below Iggy's own first retained offset); an
//     offset at or below it changes nothing. An offset above the high
//     watermark, or below -1, is OFFSET_OUT_OF_RANGE with -1; an unknown
//     topic or partition UNKNOWN_TOPIC_OR_PARTITION; a name Kafka refuses
//     and __consumer_offsets (internaltopics.go) INVALID_TOPIC_EXCEPTION, as
//     Kafka answers for an internal topic. Iggy failures map through
//     kafkaCode (errors.go). TimeoutMillis is not used (the store write is
//     confirmed before the answer).
//
// Version notes:
//   - v1: no change (throttling after the response)
//   - v2: flexible
//
// Iggy commands: POLL_MESSAGES (100), GET_TOPIC (300), the store's
// SEND_MESSAGES (101), STORE_CONSUMER_OFFSET (121), DELETE_SEGMENTS (503).

import (
	"context"
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

func (b *Bridge) deleteRecordsAPI() API {
	return API{Key: 21, Name: "DeleteRecords", MinVersion: 0, MaxVersion: 2, Handle: b.handleDeleteRecords, Completes: true, ErrorCodes: errorCodes(deleteRecordsErrorCodes)}
}

// deleteRecordsErrorCodes walks a DeleteRecords response for the metrics.
func deleteRecordsErrorCodes(r *kmsg.DeleteRecordsResponse, f func(int16)) {
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			f(p.ErrorCode)
		}
	}
}

func init() { registerAPI((*Bridge).deleteRecordsAPI) }

// logStartConsumer is the single consumer whose stored offset (log start
// offset − 1) bounds the segments DELETE_SEGMENTS removes.
var logStartConsumer = icodec.Consumer{
	Kind: icodec.ConsumerKindConsumer,
	ID:   icodec.Identifier{Kind: icodec.IdentifierKindString, Value: []byte("kafka.log-start")},
}

func (b *Bridge) handleDeleteRecords(ctx context.Context, rq *Request) (kmsg.Response, error) {
	req := rq.Msg.(*kmsg.DeleteRecordsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
	for i := range req.Topics {
		resp.Topics = append(resp.Topics, b.deleteTopicRecords(ctx, rq, &req.Topics[i]))
	}
	return resp, nil
}

// deleteTopicRecords answers one topic of the request.
func (b *Bridge) deleteTopicRecords(ctx context.Context, rq *Request, rt *kmsg.DeleteRecordsRequestTopic) kmsg.DeleteRecordsResponseTopic {
	st := kmsg.NewDeleteRecordsResponseTopic()
	st.Topic = rt.Topic
	st.Partitions = make([]kmsg.DeleteRecordsResponseTopicPartition, len(rt.Partitions))
	for j, p := range rt.Partitions {
		st.Partitions[j] = kmsg.NewDeleteRecordsResponseTopicPartition()
		st.Partitions[j].Partition, st.Partitions[j].LowWatermark = p.Partition, -1
	}
	fail := func(code int16) kmsg.DeleteRecordsResponseTopic {
		for j := range st.Partitions {
			st.Partitions[j].ErrorCode = code
		}
		return st
	}
	if validTopicName(rt.Topic) != nil || isInternalTopic(rt.Topic) {
		return fail(kerr.InvalidTopicException.Code)
	}
	info, err := b.lookupTopic(ctx, rt.Topic)
	if err != nil {
		return fail(dataErrCode(ctx, b.log, rq, err, rt.Topic, "delete records: topic lookup failed"))
	}

	// Where each partition's log start goes; raised only where it moves.
	raise := map[int32]int64{}
	for j, p := range rt.Partitions {
		sp := &st.Partitions[j]
		if sp.ErrorCode, info = checkPartition(ctx, b.iggy, info, p.Partition); sp.ErrorCode != 0 {
			continue
		}
		hw, err := highWatermark(ctx, b, info.Ref, p.Partition)
		if err != nil {
			sp.ErrorCode = dataErrCode(ctx, b.log, rq, err, rt.Topic, "delete records: poll failed")
			continue
		}
		stored, err := b.store.LogStartFresh(ctx, info, p.Partition)
		if err != nil {
			sp.ErrorCode = dataErrCode(ctx, b.log, rq, err, rt.Topic, "delete records: topic-config store read failed")
			continue
		}
		first, err := firstOffset(ctx, b.iggy, info.Ref, p.Partition, hw)
		if err != nil {
			sp.ErrorCode = dataErrCode(ctx, b.log, rq, err, rt.Topic, "delete records: poll failed")
			continue
		}
		cur := max(stored, first)
		target := p.Offset
		if target == -1 {
			target = hw
		}
		switch {
		case target < -1 || target > hw:
			sp.ErrorCode = kerr.OffsetOutOfRange.Code
		case target <= cur:
			sp.LowWatermark = cur
		default:
			raise[p.Partition] = max(target, raise[p.Partition])
			sp.LowWatermark = target
		}
	}
	if len(raise) == 0 {
		return st
	}
	if err := b.store.PutLogStart(ctx, info, raise); err != nil {
		code := dataErrCode(ctx, b.log, rq, err, rt.Topic, "delete records: topic-config store write failed")
		for j := range st.Partitions {
			if sp := &st.Partitions[j]; sp.ErrorCode == 0 && sp.LowWatermark >= 0 {
				if _, ok := raise[sp.Partition]; ok {
					sp.ErrorCode, sp.LowWatermark = code, -1
				}
			}
		}
		return st
	}
	for p, off := range raise {
		b.dropSegmentsBelow(ctx, info.Ref, p, off)
	}
	b.log.Info().Str("topic", rt.Topic).Int("partitions", len(raise)).Msg("delete records: log start offsets raised")
	return st
}

// highWatermark is the offset after a partition's last message (0 when
// empty).
func highWatermark(ctx context.Context, b *Bridge, ref iggy.TopicRef, partition int32) (int64, error) {
	p, err := pollIggy(ctx, b.iggy, ref, partition, icodec.PollingKindLast, 0, 1)
	if err != nil {
		return 0, err
	}
	defer p.Release()
	if p.Count > 0 || p.CurrentOffset > 0 {
		return int64(p.CurrentOffset) + 1, nil
	}
	return 0, nil
}

// dropSegmentsBelow lets Iggy delete the partition's sealed segments wholly
// below logStart: the kafka.log-start consumer at logStart − 1 is the
// barrier, then DELETE_SEGMENTS asks for all. Failures are logged only.
func (b *Bridge) dropSegmentsBelow(ctx context.Context, ref iggy.TopicRef, partition int32, logStart int64) {
	if logStart <= 0 {
		return
	}
	if err := b.iggy.StoreOffset(ctx, ref, uint32(partition), logStartConsumer, uint64(logStart-1)); err != nil {
		b.log.Warn().Err(err).Str("iggy_topic", ref.Topic).Int32("partition", partition).Msg("delete records: storing the kafka.log-start offset failed; no segment deleted")
		return
	}
	req := &icodec.DeleteSegmentsRequest{StreamID: ref.StreamID(), TopicID: ref.TopicID(), PartitionID: uint32(partition), SegmentsCount: math.MaxUint32}
	if err := b.iggy.Do(ctx, req, nil); err != nil {
		b.log.Warn().Err(err).Str("iggy_topic", ref.Topic).Int32("partition", partition).Msg("delete records: DELETE_SEGMENTS failed; the log start offset holds, the segments stay")
	}
}
