package bridge

// DescribeProducers: v0
//
// Behavior (KAFKA-ON-IGGY "Transactions"; bridge/txnread): per partition,
// the transactional producers its messages name (the partition scanned
// forward to its end first, within the tracker's window): producer id,
// epoch, last sequence (from the idempotent message id, -1 when none), last
// timestamp, the coordinator epoch of its last end marker (-1 before any)
// and the first offset of its open transaction (-1 when none), ordered by
// producer id. Idempotent producers outside transactions are not listed.
// Unknown topics and partitions answer UNKNOWN_TOPIC_OR_PARTITION (3), as
// Kafka's ReplicaManager; Iggy failures map through kafkaCode.
//
// Iggy commands: GET_TOPIC (300), POLL_MESSAGES (100).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
	"github.com/kafka-iggy/kafka-iggy/bridge/txnread"
)

func (b *Bridge) describeProducersAPI() API {
	return API{Key: 61, Name: "DescribeProducers", MinVersion: 0, MaxVersion: 0, Handle: b.handleDescribeProducers, ErrorCodes: errorCodes(describeProducersErrorCodes)}
}

func init() { registerAPI((*Bridge).describeProducersAPI) }

func (b *Bridge) handleDescribeProducers(ctx context.Context, rq *Request) (kmsg.Response, error) {
	req := rq.Msg.(*kmsg.DescribeProducersRequest)
	resp := req.ResponseKind().(*kmsg.DescribeProducersResponse)
	resp.Topics = make([]kmsg.DescribeProducersResponseTopic, len(req.Topics))
	for i := range req.Topics {
		t := &req.Topics[i]
		rt := &resp.Topics[i]
		*rt = kmsg.NewDescribeProducersResponseTopic()
		rt.Topic = t.Topic
		info, code := (*iggy.TopicInfo)(nil), kerr.UnknownTopicOrPartition.Code
		if validTopicName(t.Topic) == nil && !isInternalTopic(t.Topic) {
			var err error
			if info, err = b.lookupTopic(ctx, t.Topic); err == nil {
				code = 0
			} else {
				code = dataErrCode(ctx, b.log, rq, err, t.Topic, "describe producers: topic lookup failed")
			}
		}
		rt.Partitions = make([]kmsg.DescribeProducersResponseTopicPartition, len(t.Partitions))
		for j, part := range t.Partitions {
			rp := &rt.Partitions[j]
			*rp = kmsg.NewDescribeProducersResponseTopicPartition()
			rp.Partition, rp.ErrorCode = part, code
			if code == 0 {
				rp.ErrorCode, info = checkPartition(ctx, b.iggy, info, part)
			}
			if rp.ErrorCode != 0 {
				continue
			}
			k := txnread.Key{Topic: t.Topic, Partition: part}
			if _, err := b.txnReads.Stable(ctx, k, info.Ref, 0); err != nil {
				rp.ErrorCode = dataErrCode(ctx, b.log, rq, err, t.Topic, "describe producers: scan failed")
				continue
			}
			for _, p := range b.txnReads.Producers(k) {
				rp.ActiveProducers = append(rp.ActiveProducers, kmsg.DescribeProducersResponseTopicPartitionActiveProducer{ProducerID: p.ProducerID, ProducerEpoch: int32(p.Epoch), LastSequence: p.LastSequence, LastTimestamp: p.LastTimestamp, CoordinatorEpoch: p.CoordinatorEpoch, CurrentTxnStartOffset: p.TxnStartOffset})
			}
		}
	}
	return resp, nil
}

// describeProducersErrorCodes walks a DescribeProducers response for the metrics.
func describeProducersErrorCodes(r *kmsg.DescribeProducersResponse, f func(int16)) {
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			f(p.ErrorCode)
		}
	}
}
