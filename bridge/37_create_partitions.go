package bridge

// CreatePartitions: v0-v3
//
// Behavior:
//   - Grows a topic to Count partitions, answered as Kafka's controller
//     does: a topic listed twice gets one INVALID_REQUEST ("Duplicate topic
//     name."); an unknown topic is UNKNOWN_TOPIC_OR_PARTITION; a Count equal
//     to or below the current count is INVALID_PARTITIONS (Kafka's
//     messages); adding more than Iggy's 1000 partitions per request, or
//     beyond its highest partition id, is INVALID_PARTITIONS.
//   - An Assignment must list one replica list per new partition, each
//     exactly [this broker] (INVALID_REPLICA_ASSIGNMENT otherwise), as on a
//     one-broker Kafka.
//   - ValidateOnly runs every check and adds nothing.
//   - New partitions take the next ids (Iggy appends max+1...). Kafka's
//     retention.bytes is per partition and Iggy's max_topic_size per topic,
//     so an explicitly set max_topic_size is scaled by new/old partition
//     count afterwards (UPDATE_TOPIC), keeping retention.bytes unchanged; if
//     that update fails the partitions stay added and the failure is logged.
//   - Iggy failures map through errors.go (scopeAdmin).
//
// Version notes:
//   - v1: ThrottleMillis
//   - v2: flexible
//   - v3: no change
//
// Iggy commands: GET_STREAM (200), GET_TOPIC (300), CREATE_PARTITIONS (402),
// UPDATE_TOPIC (304).

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
	"github.com/kafka-iggy/kafka-iggy/bridge/topicconfig"
	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

func (b *Bridge) createPartitionsAPI() API {
	return API{Key: 37, Name: "CreatePartitions", MinVersion: 0, MaxVersion: 3, Handle: b.handleCreatePartitions, Completes: true, ErrorCodes: errorCodes(createPartitionsErrorCodes)}
}

func init() { registerAPI((*Bridge).createPartitionsAPI) }

func (b *Bridge) handleCreatePartitions(ctx context.Context, rq *Request) (kmsg.Response, error) {
	req := rq.Msg.(*kmsg.CreatePartitionsRequest)
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)

	answer := func(name string, code int16, msg string) {
		st := kmsg.NewCreatePartitionsResponseTopic()
		st.Topic = name
		st.ErrorCode = code
		if msg != "" {
			st.ErrorMessage = &msg
		}
		resp.Topics = append(resp.Topics, st)
	}
	eachTopic(req.Topics, func(rt *kmsg.CreatePartitionsRequestTopic) string { return rt.Topic },
		func(name string) { answer(name, kerr.InvalidRequest.Code, "Duplicate topic name.") },
		func(rt *kmsg.CreatePartitionsRequestTopic) {
			code, msg := b.createPartitions(ctx, rt, req.ValidateOnly)
			answer(rt.Topic, code, msg)
		})
	return resp, nil
}

// createPartitions checks and grows one topic.
func (b *Bridge) createPartitions(ctx context.Context, rt *kmsg.CreatePartitionsRequestTopic, validateOnly bool) (int16, string) {
	name := rt.Topic
	if validTopicName(name) != nil {
		return kerr.UnknownTopicOrPartition.Code, ""
	}
	ref := b.topics.ref(name)
	info, err := b.iggy.RefreshTopic(ctx, ref)
	if err != nil {
		if iggy.IsNotFound(err) {
			return kerr.UnknownTopicOrPartition.Code, ""
		}
		return b.adminError(name, "create partitions", err)
	}
	cur := int64(info.PartitionsCount)
	want := int64(rt.Count)
	switch {
	case want == cur:
		return kerr.InvalidPartitions.Code, fmt.Sprintf("Topic already has %d partition(s).", cur)
	case want < cur:
		return kerr.InvalidPartitions.Code, fmt.Sprintf("The topic %s currently has %d partition(s); %d would not be an increase.", name, cur, want)
	case want-cur > icodec.LimitMaxPartitionsPerRequest:
		return kerr.InvalidPartitions.Code, fmt.Sprintf("Iggy adds at most %d partitions per request; %d were asked for.", icodec.LimitMaxPartitionsPerRequest, want-cur)
	case want-1 > icodec.LimitMaxPartitionID:
		return kerr.InvalidPartitions.Code, fmt.Sprintf("Iggy's highest partition id is %d.", icodec.LimitMaxPartitionID)
	}
	add := want - cur
	if rt.Assignment != nil {
		if int64(len(rt.Assignment)) != add {
			return kerr.InvalidReplicaAssignment.Code, fmt.Sprintf(
				"Attempted to add %d additional partition(s), but only %d assignment(s) were specified.", add, len(rt.Assignment))
		}
		self := b.self().NodeID
		for _, a := range rt.Assignment {
			if e := topicconfig.CheckReplicas(a.Replicas, self); e != nil {
				return e.Code, e.Msg
			}
		}
	}
	if validateOnly {
		return 0, ""
	}
	req := &icodec.CreatePartitionsRequest{StreamID: ref.StreamID(), TopicID: ref.TopicID(), PartitionsCount: uint32(add)}
	err = b.iggy.Do(ctx, req, nil)
	b.iggy.InvalidateTopic(ref)
	b.cgMeta.Invalidate()
	if err != nil {
		if iggy.IsNotFound(err) {
			return kerr.UnknownTopicOrPartition.Code, ""
		}
		return b.adminError(name, "create partitions", err)
	}
	b.log.Info().Str("topic", name).Int64("partitions", want).Msg("added partitions")
	b.rescaleTopicSize(ctx, ref, info, uint32(want))
	return 0, ""
}

// rescaleTopicSize keeps retention.bytes (per partition) unchanged when a
// topic grows from info.PartitionsCount to partitions partitions: an
// explicitly set max_topic_size (per topic) is scaled by the same factor.
func (b *Bridge) rescaleTopicSize(ctx context.Context, ref iggy.TopicRef, info *iggy.TopicInfo, partitions uint32) {
	opt, next, ok := topicconfig.ScaledTopicSize(info.Details.ExplicitOptions, info.Details.DerivedOptions, info.PartitionsCount, partitions)
	if !ok {
		return
	}
	req := &icodec.UpdateTopicRequest{StreamID: ref.StreamID(), TopicID: ref.TopicID(), Name: ref.Topic,
		Options: icodec.Options{opt}}
	err := b.iggy.Do(ctx, req, nil)
	b.iggy.InvalidateTopic(ref)
	if err != nil {
		b.log.Warn().Err(err).Str("topic", ref.Topic).Uint32("iggy_code", iggyCode(err)).Uint64("max_topic_size", next).
			Msg("create partitions: scaling max_topic_size failed; retention.bytes now reads lower")
	}
}

// createPartitionsErrorCodes walks a CreatePartitions response for the metrics.
func createPartitionsErrorCodes(r *kmsg.CreatePartitionsResponse, f func(int16)) {
	for _, t := range r.Topics {
		f(t.ErrorCode)
	}
}
