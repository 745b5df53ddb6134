package bridge

// DescribeTopicPartitions: v0
//
// Behavior (KIP-966; what kafka-topics.sh --describe asks first):
//   - The topics asked for, sorted by name (an empty list: every Kafka
//     topic, as Metadata lists them, with __consumer_offsets as an
//     internal topic of one partition). Each partition is led by this
//     sidecar alone, as Metadata reports it: leader self, leader epoch 0,
//     replicas = ISR = [self], no eligible leader replicas (ELR, last known
//     ELR) and no offline replica.
//   - Paging as Kafka's: at most ResponsePartitionLimit partitions (capped
//     at Kafka's default max.request.partition.size.limit, 2000) from the
//     Cursor (topic, first partition) on; when partitions are left,
//     NextCursor names the next one.
//   - Every topic: those Iggy refuses the principal (sasl.authorization
//     principal) are left out, as Kafka leaves out what it may not describe.
//   - Unknown topics (and names Kafka refuses) answer
//     UNKNOWN_TOPIC_OR_PARTITION with the name and a zero id; Iggy
//     failures the retriable code of errors.go.
//   - AuthorizedOperations: no authorizer, so every TOPIC operation Kafka
//     defines is reported allowed (READ, WRITE, CREATE, DELETE, ALTER,
//     DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS), as Kafka reports them
//     for every topic, unknown ones too.
//
// Iggy commands: GET_TOPICS (301, every topic), GET_TOPIC (300), cached.

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// describeTopicPartitionsMax is Kafka's max.request.partition.size.limit
// default: the most partitions one answer carries.
const describeTopicPartitionsMax = 2000

// topicAuthorizedOps is Kafka's TOPIC operation set as a bit field, all
// allowed without an authorizer.
var topicAuthorizedOps = func() int32 {
	var f int32
	for _, op := range []kmsg.ACLOperation{
		kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationCreate, kmsg.ACLOperationDelete,
		kmsg.ACLOperationAlter, kmsg.ACLOperationDescribe, kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs,
	} {
		f |= 1 << int32(op)
	}
	return f
}()

func (b *Bridge) describeTopicPartitionsAPI() API {
	return API{Key: 75, Name: "DescribeTopicPartitions", MinVersion: 0, MaxVersion: 0, Handle: b.handleDescribeTopicPartitions,
		ErrorCodes: errorCodes(describeTopicPartitionsErrorCodes)}
}

func init() { registerAPI((*Bridge).describeTopicPartitionsAPI) }

func (b *Bridge) handleDescribeTopicPartitions(ctx context.Context, rq *Request) (kmsg.Response, error) {
	req := rq.Msg.(*kmsg.DescribeTopicPartitionsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeTopicPartitionsResponse)
	var names []string
	if len(req.Topics) == 0 {
		listed, err := b.listTopics(ctx)
		if err != nil {
			// Nothing to list without Iggy: answer no topics, as Metadata.
			b.log.Warn().Err(err).Uint32("iggy_code", iggyCode(err)).Msg("describe topic partitions: listing topics failed")
		}
		names = append(listed, consumerOffsetsTopic)
	} else {
		for _, t := range req.Topics {
			names = append(names, t.Topic)
		}
	}
	slices.Sort(names)
	names = slices.Compact(names)

	limit := int(min(max(req.ResponsePartitionLimit, 1), describeTopicPartitionsMax))
	self := b.self().NodeID
	for _, name := range names {
		first := int32(0)
		if c := req.Cursor; c != nil {
			if name < c.Topic {
				continue
			}
			if name == c.Topic {
				first = max(c.Partition, 0)
			}
		}
		if limit == 0 {
			resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: name, Partition: first}
			break
		}
		rt := kmsg.NewDescribeTopicPartitionsResponseTopic()
		rt.Topic = kmsg.StringPtr(name)
		rt.AuthorizedOperations = topicAuthorizedOps
		info, count, code := b.topicForAdmin(ctx, name, false)
		switch {
		case code == kerr.TopicAuthorizationFailed.Code && len(req.Topics) == 0:
			continue // every topic: Kafka leaves out what the principal may not describe
		case code != 0:
			rt.ErrorCode = code
		case info == nil:
			rt.IsInternal, rt.TopicID = true, internalTopicID(name)
		default:
			rt.TopicID = topicID(info)
		}
		for p := first; p < count; p++ {
			if limit == 0 {
				resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: name, Partition: p}
				break
			}
			limit--
			rp := kmsg.NewDescribeTopicPartitionsResponseTopicPartition()
			rp.Partition, rp.LeaderID, rp.LeaderEpoch = p, self, 0
			rp.Replicas, rp.ISR = []int32{self}, []int32{self}
			rp.EligibleLeaderReplicas, rp.LastKnownELR, rp.OfflineReplicas = []int32{}, []int32{}, []int32{}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
		if resp.NextCursor != nil {
			break
		}
	}
	return resp, nil
}

// describeTopicPartitionsErrorCodes walks the response for the metrics.
func describeTopicPartitionsErrorCodes(r *kmsg.DescribeTopicPartitionsResponse, f func(int16)) {
	for _, t := range r.Topics {
		f(t.ErrorCode)
		for _, p := range t.Partitions {
			f(p.ErrorCode)
		}
	}
}
