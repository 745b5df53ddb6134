package bridge

// Metadata: v0-v13
//
// Behavior:
//   - Brokers: this instance alone, at its advertised host and port; it is
//     the controller and the leader of every partition (replicas = ISR =
//     [self], leader epoch 0). The cluster id is derived from the Iggy
//     cluster's name and node names, so every sidecar of one Iggy cluster
//     reports the same id.
//   - Topics: null (v1+) or empty (v0) lists every Kafka topic (the topics
//     of topics.default_stream plus the overrides that exist). A listed topic
//     that does not exist is created when the request allows it (always in
//     v0-v3, AllowAutoTopicCreation in v4+) and topics.auto_create is on;
//     otherwise it answers UNKNOWN_TOPIC_OR_PARTITION. Names Kafka refuses
//     answer INVALID_TOPIC_EXCEPTION before any Iggy call.
//   - Topic ids (v10+) are stable per topic (stream, name, creation time);
//     topics requested by id (v10+ with a null name) are found by scanning.
//   - __consumer_offsets is listed (with every topic, or by name) as an
//     internal topic of one partition that is not in Iggy
//     (internaltopics.go).
//   - Iggy failures answer the retriable code of errors.go per topic.
//
// Version notes: v13 adds a top-level error code (always 0 here).
//
// Iggy commands: GET_TOPICS (301), GET_TOPIC (300), CREATE_STREAM (202),
// CREATE_TOPIC (302), GET_CLUSTER_METADATA (12).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
)

func (b *Bridge) metadataAPI() API {
	return API{Key: 3, Name: "Metadata", MinVersion: 0, MaxVersion: 13, Handle: b.handleMetadata, ErrorCodes: errorCodes(metadataErrorCodes)}
}

func init() { registerAPI((*Bridge).metadataAPI) }

func (b *Bridge) handleMetadata(ctx context.Context, rq *Request) (kmsg.Response, error) {
	req := rq.Msg.(*kmsg.MetadataRequest)
	resp := req.ResponseKind().(*kmsg.MetadataResponse)

	self := b.self()
	broker := kmsg.NewMetadataResponseBroker()
	broker.NodeID = self.NodeID
	broker.Host = self.Host
	broker.Port = self.Port
	broker.Rack = self.Rack
	resp.Brokers = append(resp.Brokers, broker)
	resp.ControllerID = self.NodeID
	if id := b.clusterIDFor(ctx); id != "" {
		resp.ClusterID = &id
	}

	allowCreate := b.cfg.Topics.AutoCreate && (rq.Version < 4 || req.AllowAutoTopicCreation)
	all := req.Topics == nil || (rq.Version == 0 && len(req.Topics) == 0)

	type want struct {
		name   string
		byID   bool
		id     [16]byte
		create bool
	}
	var wants []want
	if all {
		names, err := b.listTopics(ctx)
		if err != nil {
			// Nothing to list without Iggy: answer no topics; clients retry
			// metadata on their own schedule.
			b.log.Warn().Err(err).Uint32("iggy_code", iggyCode(err)).Msg("metadata: listing topics failed")
		}
		for _, n := range names {
			if !isInternalTopic(n) {
				wants = append(wants, want{name: n})
			}
		}
		wants = append(wants, want{name: consumerOffsetsTopic})
	} else {
		for _, t := range req.Topics {
			if t.Topic == nil {
				n, ok := b.topicIDs.Name(ctx, t.TopicID, receivedAt(rq))
				if t.TopicID == internalTopicID(consumerOffsetsTopic) {
					n, ok = consumerOffsetsTopic, false
				}
				wants = append(wants, want{name: n, byID: true, id: t.TopicID, create: ok})
				continue
			}
			wants = append(wants, want{name: *t.Topic, create: allowCreate})
		}
	}

	for _, w := range wants {
		rt := kmsg.NewMetadataResponseTopic()
		if w.byID && w.name == "" {
			rt.TopicID = w.id
			rt.ErrorCode = kerr.UnknownTopicID.Code
			resp.Topics = append(resp.Topics, rt)
			continue
		}
		name := w.name
		rt.Topic = &name
		if err := validTopicName(name); err != nil {
			rt.ErrorCode = kerr.InvalidTopicException.Code
			resp.Topics = append(resp.Topics, rt)
			continue
		}
		if isInternalTopic(name) {
			rt.IsInternal = true
			rt.TopicID = internalTopicID(name)
			rt.Partitions = []kmsg.MetadataResponseTopicPartition{b.selfLed(self.NodeID, 0)}
			resp.Topics = append(resp.Topics, rt)
			continue
		}
		var info *iggy.TopicInfo
		var err error
		if w.create && !w.byID {
			info, err = b.ensureTopic(ctx, name, -1)
		} else {
			info, err = b.lookupTopic(ctx, name)
		}
		if err != nil && all && iggy.IsUnauthorized(err) {
			continue // Kafka leaves out the topics a principal may not describe
		} else if err != nil {
			rt.ErrorCode = kafkaCode(err, scopeData)
			if rt.ErrorCode == kerr.UnknownServerError.Code {
				b.log.Warn().Err(err).Str("topic", name).Uint32("iggy_code", iggyCode(err)).Msg("metadata: topic lookup failed")
			}
			resp.Topics = append(resp.Topics, rt)
			continue
		}
		rt.TopicID = topicID(info)
		for p := int32(0); p < int32(info.PartitionsCount); p++ {
			rt.Partitions = append(rt.Partitions, b.selfLed(self.NodeID, p))
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

// selfLed describes partition p as led by this instance alone.
func (b *Bridge) selfLed(node, p int32) kmsg.MetadataResponseTopicPartition {
	rp := kmsg.NewMetadataResponseTopicPartition()
	rp.Partition = p
	rp.Leader = node
	rp.LeaderEpoch = 0
	rp.Replicas = []int32{node}
	rp.ISR = []int32{node}
	return rp
}

// metadataErrorCodes walks a Metadata response for the metrics.
func metadataErrorCodes(r *kmsg.MetadataResponse, f func(int16)) {
	f(r.ErrorCode)
	for _, t := range r.Topics {
		f(t.ErrorCode)
	}
}
