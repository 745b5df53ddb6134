package bridge

// DeleteTopics: v0-v6
//
// Behavior:
//   - Topics by name (v0-v5 TopicNames; v6 Topics with a name) or by topic id
//     (v6 Topics with a null name), answered as Kafka's controller does: an
//     entry with both a name and an id, or neither, is INVALID_REQUEST; a
//     name or id listed twice gets one INVALID_REQUEST ("Duplicate topic
//     name." / "Duplicate topic id.") for all its entries; an unknown name
//     (or one Kafka would refuse) is UNKNOWN_TOPIC_OR_PARTITION, an unknown
//     id UNKNOWN_TOPIC_ID.
//   - A deleted topic's answer carries its name and (v6) its topic id. The
//     Iggy topic is deleted with its messages and consumer offsets; its
//     stream stays. The client's cached lookup is dropped and waiting
//     fetches of its partitions are woken, so they see it gone at once.
//   - controller_mutation_rate (bridge/quotas): from v5 a topic asked for
//     while the rate is above it is THROTTLING_QUOTA_EXCEEDED, as Kafka.
//   - Iggy failures map through errors.go (scopeAdmin). TimeoutMillis is not
//     used: Iggy answers once the delete is committed.
//
// Version notes:
//   - v1: ThrottleMillis
//   - v2, v3: no change
//   - v4: flexible
//   - v5: ErrorMessage
//   - v6: Topics (name or id) replace TopicNames; TopicID in the answer
//
// Iggy commands: GET_STREAM (200), GET_TOPIC (300), GET_TOPICS (301, to find
// topics by id), DELETE_TOPIC (303).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
	"github.com/kafka-iggy/kafka-iggy/bridge/quotas"
	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

func (b *Bridge) deleteTopicsAPI() API {
	return API{Key: 20, Name: "DeleteTopics", MinVersion: 0, MaxVersion: 6, Handle: b.handleDeleteTopics, Completes: true, ErrorCodes: errorCodes(deleteTopicsErrorCodes)}
}

func init() { registerAPI((*Bridge).deleteTopicsAPI) }

func (b *Bridge) handleDeleteTopics(ctx context.Context, rq *Request) (kmsg.Response, error) {
	req := rq.Msg.(*kmsg.DeleteTopicsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)

	topics := req.Topics
	if rq.Version <= 5 {
		topics = make([]kmsg.DeleteTopicsRequestTopic, 0, len(req.TopicNames))
		for _, n := range req.TopicNames {
			t := kmsg.NewDeleteTopicsRequestTopic()
			t.Topic = kmsg.StringPtr(n)
			topics = append(topics, t)
		}
	}

	answer := func(name *string, id [16]byte, code int16, msg string) {
		st := kmsg.NewDeleteTopicsResponseTopic()
		st.Topic = name
		st.TopicID = id
		st.ErrorCode = code
		if msg != "" {
			st.ErrorMessage = &msg
		}
		resp.Topics = append(resp.Topics, st)
	}

	names := map[string]int{}
	ids := map[[16]byte]int{}
	for _, t := range topics {
		if t.Topic != nil {
			names[*t.Topic]++
		} else {
			ids[t.TopicID]++
		}
	}
	dupDone, mq := map[string]bool{}, b.mutations(ctx, rq, 5)
	dupIDDone := map[[16]byte]bool{}
	for _, t := range topics {
		switch {
		case t.Topic == nil && t.TopicID == [16]byte{}:
			answer(nil, t.TopicID, kerr.InvalidRequest.Code, "Neither topic name nor id were specified.")
			continue
		case t.Topic != nil && t.TopicID != [16]byte{}:
			answer(t.Topic, t.TopicID, kerr.InvalidRequest.Code, "You may not specify both topic name and topic id.")
			continue
		case t.Topic != nil && names[*t.Topic] > 1:
			if !dupDone[*t.Topic] {
				dupDone[*t.Topic] = true
				answer(t.Topic, [16]byte{}, kerr.InvalidRequest.Code, "Duplicate topic name.")
			}
			continue
		case t.Topic == nil && ids[t.TopicID] > 1:
			if !dupIDDone[t.TopicID] {
				dupIDDone[t.TopicID] = true
				answer(nil, t.TopicID, kerr.InvalidRequest.Code, "Duplicate topic id.")
			}
			continue
		}
		name := ""
		if t.Topic != nil {
			name = *t.Topic
		} else {
			n, ok := b.topicIDs.name(ctx, t.TopicID, receivedAt(rq))
			if !ok {
				answer(nil, t.TopicID, kerr.UnknownTopicID.Code, "")
				continue
			}
			name = n
		}
		id, code, msg := b.deleteTopic(ctx, name, mq)
		if code == kerr.UnknownTopicOrPartition.Code && t.Topic == nil {
			code = kerr.UnknownTopicID.Code // gone between the scan and the delete
		}
		if t.Topic == nil {
			id = t.TopicID
		}
		n := name
		answer(&n, id, code, msg)
	}
	resp.ThrottleMillis = mq.ThrottleMs()
	return resp, nil
}

// deleteTopic deletes one topic by Kafka name and returns its topic id (zero
// when it was not found) and the Kafka outcome.
func (b *Bridge) deleteTopic(ctx context.Context, name string, mq *quotas.MutationQuota) ([16]byte, int16, string) {
	if validTopicName(name) != nil {
		return [16]byte{}, kerr.UnknownTopicOrPartition.Code, ""
	}
	if isInternalTopic(name) {
		return internalTopicID(name), kerr.InvalidTopicException.Code,
			"Topic " + name + " is internal: the gateway keeps committed offsets in Iggy; delete consumer groups instead"
	}
	ref := b.topics.ref(name)
	info, err := b.iggy.RefreshTopic(ctx, ref)
	if err != nil {
		if iggy.IsNotFound(err) {
			return [16]byte{}, kerr.UnknownTopicOrPartition.Code, ""
		}
		code, msg := b.adminError(name, "delete topics", err)
		return [16]byte{}, code, msg
	}
	id := topicID(info)
	if !mq.Take(int(info.PartitionsCount)) { // controller_mutation_rate
		return id, kerr.ThrottlingQuotaExceeded.Code, ""
	}
	err = b.iggy.Do(ctx, &icodec.DeleteTopicRequest{StreamID: ref.StreamID(), TopicID: ref.TopicID()}, nil)
	b.iggy.InvalidateTopic(ref)
	b.cgMeta.Invalidate()
	for p := uint32(0); p < info.PartitionsCount; p++ {
		b.notify.wake(name, int32(p))
	}
	if err != nil {
		if iggy.IsNotFound(err) {
			return [16]byte{}, kerr.UnknownTopicOrPartition.Code, ""
		}
		code, msg := b.adminError(name, "delete topics", err)
		return id, code, msg
	}
	b.log.Info().Str("topic", name).Str("iggy_stream", ref.Stream).Msg("deleted topic")
	return id, 0, ""
}

// deleteTopicsErrorCodes walks a DeleteTopics response for the metrics.
func deleteTopicsErrorCodes(r *kmsg.DeleteTopicsResponse, f func(int16)) {
	for _, t := range r.Topics {
		f(t.ErrorCode)
	}
}
