package bridge

// CreateTopics: v0-v7
//
// Behavior:
//   - Each topic is checked in Kafka's order, and the first failure is its
//     answer: a name Kafka refuses (INVALID_TOPIC_EXCEPTION, Kafka's
//     message); a name listed twice in the request (one INVALID_REQUEST
//     "Duplicate topic name." for all its entries); an existing topic
//     (TOPIC_ALREADY_EXISTS); a name that differs from an existing topic (or
//     one created earlier in the request) only by '.' versus '_'
//     (INVALID_TOPIC_EXCEPTION, as Kafka refuses metric-name collisions); a
//     null config value (INVALID_CONFIG); the partitions and replication
//     layout; the configs.
//   - Layout, as a one-broker Kafka answers it: with a replica assignment,
//     NumPartitions and ReplicationFactor must be -1 (INVALID_REQUEST), the
//     partitions must be 0..n-1 once each and every replica list exactly
//     [this broker] (INVALID_REPLICA_ASSIGNMENT otherwise); without one,
//     ReplicationFactor -1 means 1, 1 is fine, 0 or below -1 and anything
//     above 1 are INVALID_REPLICATION_FACTOR; NumPartitions -1 means
//     topics.default_partitions, 0 or below -1 is INVALID_PARTITIONS, and
//     more than Iggy's 1000 partitions per request is INVALID_PARTITIONS.
//   - Configs map to Iggy topic options (topicconfig/catalog.go) over the gateway's
//     topics.default_options; configs Iggy has no option for
//     (cleanup.policy, message.timestamp.type, max.message.bytes,
//     min.insync.replicas, ...: topicconfig/held.go) are checked with Kafka's
//     rules and written to the topic-config store in Iggy (topicconfig/store.go)
//     once the topic exists; unknown keys, values out of range and
//     retention.bytes × partitions below segment.bytes are INVALID_CONFIG
//     naming the key. A config named twice: the last wins.
//   - ValidateOnly (v1+) runs every check above, including the option values
//     against Iggy's catalog, and creates nothing; its answer carries the
//     configs the topic would get and a zero topic id.
//   - v5+ answers carry the partition count, replication factor 1 and every
//     mapped config with its source (as DescribeConfigs reports it) and
//     read-only flag (IsSensitive false);
//     failed topics carry -1, -1 and no configs, as Kafka does.
//   - controller_mutation_rate (bridge/quotas): from v6 a topic asked for
//     while the rate is above it is THROTTLING_QUOTA_EXCEEDED, as Kafka.
//   - Iggy failures map through errors.go (scopeAdmin); TimeoutMillis is not
//     used (Iggy answers a create once it is committed).
//
// Version notes:
//   - v1: ValidateOnly; ErrorMessage
//   - v2: ThrottleMillis
//   - v3: no change
//   - v4: -1 NumPartitions / ReplicationFactor select defaults (KIP-464);
//     served at every version, which old clients never send
//   - v5: flexible; NumPartitions, ReplicationFactor, Configs in the answer
//   - v6: THROTTLING_QUOTA_EXCEEDED for a topic over the mutation quota
//   - v7: TopicID in the answer
//
// Iggy commands: GET_STREAM (200), GET_TOPIC (300), GET_TOPICS (301, for the
// collision check), CREATE_STREAM (202, only while the client does not know
// the stream exists), CREATE_TOPIC (302); the store's SEND_MESSAGES (101)
// and POLL_MESSAGES (100).

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
	"github.com/kafka-iggy/kafka-iggy/bridge/quotas"
	"github.com/kafka-iggy/kafka-iggy/bridge/topicconfig"
	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

// createTopicsCharge is the row's memory charge (API.FrameCharge): a
// 27-byte topic answers (v5+) its ~20 configs, and the handler builds them
// (~4 KB) for validated topics at every version.
const createTopicsCharge = 300

func (b *Bridge) createTopicsAPI() API {
	return API{Key: 19, Name: "CreateTopics", MinVersion: 0, MaxVersion: 7, Handle: b.handleCreateTopics, FrameCharge: createTopicsCharge, Completes: true, ErrorCodes: errorCodes(createTopicsErrorCodes)}
}

func init() { registerAPI((*Bridge).createTopicsAPI) }

func (b *Bridge) handleCreateTopics(ctx context.Context, rq *Request) (kmsg.Response, error) {
	req := rq.Msg.(*kmsg.CreateTopicsRequest)
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	validateOnly := rq.Version >= 1 && req.ValidateOnly

	cc := &collisionCheck{b: b, mq: b.mutations(ctx, rq, 6)}
	eachTopic(req.Topics, func(rt *kmsg.CreateTopicsRequestTopic) string { return rt.Topic },
		func(name string) {
			resp.Topics = append(resp.Topics, createTopicError(name, kerr.InvalidRequest.Code, "Duplicate topic name."))
		},
		func(rt *kmsg.CreateTopicsRequestTopic) {
			resp.Topics = append(resp.Topics, b.createTopic(ctx, rt, validateOnly, cc))
		})
	resp.ThrottleMillis = cc.mq.ThrottleMs()
	return resp, nil
}

// createTopicError is a failed topic of a CreateTopics answer.
func createTopicError(name string, code int16, msg string) kmsg.CreateTopicsResponseTopic {
	st := kmsg.NewCreateTopicsResponseTopic()
	st.Topic = name
	st.ErrorCode = code
	if msg != "" {
		st.ErrorMessage = &msg
	}
	return st
}

// createTopic checks and creates one topic.
func (b *Bridge) createTopic(ctx context.Context, rt *kmsg.CreateTopicsRequestTopic, validateOnly bool, cc *collisionCheck) kmsg.CreateTopicsResponseTopic {
	name := rt.Topic
	if msg := topicconfig.NameProblem(name); msg != "" {
		return createTopicError(name, kerr.InvalidTopicException.Code, msg)
	}
	iggyFail := func(err error) kmsg.CreateTopicsResponseTopic {
		code, msg := b.adminError(name, "create topics", err)
		return createTopicError(name, code, msg)
	}
	if isInternalTopic(name) {
		return createTopicError(name, kerr.TopicAlreadyExists.Code, fmt.Sprintf("Topic '%s' already exists.", name))
	}
	ref := b.topics.ref(name)
	switch _, err := b.iggy.RefreshTopic(ctx, ref); {
	case err == nil:
		return createTopicError(name, kerr.TopicAlreadyExists.Code, fmt.Sprintf("Topic '%s' already exists.", name))
	case !iggy.IsNotFound(err):
		return iggyFail(err)
	}
	if other, err := cc.collides(ctx, name); err != nil {
		return iggyFail(err)
	} else if other != "" {
		return createTopicError(name, kerr.InvalidTopicException.Code, fmt.Sprintf("Topic '%s' collides with existing topic: %s", name, other))
	}
	configs := make([]topicconfig.Value, 0, len(rt.Configs))
	for _, c := range rt.Configs {
		if c.Value == nil {
			return createTopicError(name, kerr.InvalidConfig.Code, "Null value not supported for topic configs: "+c.Name)
		}
		configs = append(configs, topicconfig.Value{Name: c.Name, Value: c.Value})
	}
	partitions, e := topicconfig.CreateLayout(rt, b.self().NodeID, b.cfg.Topics.DefaultPartitions)
	if e != nil {
		return createTopicError(name, e.Code, e.Msg)
	}
	opts, set, e := topicconfig.CreateOptions(b.topics.opts, configs, uint32(partitions))
	if e != nil {
		return createTopicError(name, e.Code, e.Msg)
	}

	if !cc.mq.Take(int(partitions)) { // controller_mutation_rate (quotas.go)
		return createTopicError(name, kerr.ThrottlingQuotaExceeded.Code, "")
	}
	st := kmsg.NewCreateTopicsResponseTopic()
	st.Topic = name
	if validateOnly {
		topicconfig.FillCreated(&st, set, uint32(partitions), b.brokerDefaults())
		return st
	}
	info, err := b.createIggyTopic(ctx, ref, uint32(partitions), opts)
	switch {
	case errors.Is(err, icodec.StatusTopicNameAlreadyExists):
		return createTopicError(name, kerr.TopicAlreadyExists.Code, fmt.Sprintf("Topic '%s' already exists.", name))
	case err != nil:
		return iggyFail(err)
	}
	cc.created(name)
	if held := topicconfig.StoredConfigs(set); len(held) > 0 {
		if err := b.store.PutConfigs(ctx, info, set); err != nil {
			b.log.Warn().Err(err).Str("topic", name).Msg("create topics: topic created, its configs not stored")
			code, _ := b.adminError(name, "create topics", err)
			return createTopicError(name, code, "Topic '"+name+"' was created, but its configs could not be stored in Iggy: "+err.Error())
		}
	}
	b.log.Info().Str("topic", name).Str("iggy_stream", ref.Stream).Int32("partitions", partitions).Msg("created topic")
	st.TopicID = topicID(info)
	created, err := b.store.Settings(ctx, info)
	if err != nil {
		created = set
	}
	topicconfig.FillCreated(&st, created, info.PartitionsCount, b.brokerDefaults())
	return st
}

// collisionCheck finds topics whose names differ only by '.' versus '_'
// (Kafka refuses them: their metric names collide). The topic list is read
// once per request, and only when a name has either character.
type collisionCheck struct {
	b      *Bridge
	mq     *quotas.MutationQuota
	loaded bool
	byNorm map[string]string // normalized name -> a topic holding it
}

func normalizeTopicName(name string) string { return strings.ReplaceAll(name, ".", "_") }

// collides returns an existing topic that collides with name ("" for none).
func (c *collisionCheck) collides(ctx context.Context, name string) (string, error) {
	if !strings.ContainsAny(name, "._") {
		return "", nil
	}
	if !c.loaded {
		names, err := c.b.listTopics(ctx)
		if err != nil {
			return "", err
		}
		c.loaded = true
		if c.byNorm == nil {
			c.byNorm = map[string]string{}
		}
		for _, n := range names {
			c.byNorm[normalizeTopicName(n)] = n
		}
	}
	if other, ok := c.byNorm[normalizeTopicName(name)]; ok && other != name {
		return other, nil
	}
	return "", nil
}

// created records a topic this request created.
func (c *collisionCheck) created(name string) {
	if c.byNorm == nil {
		c.byNorm = map[string]string{}
	}
	c.byNorm[normalizeTopicName(name)] = name
}

// createTopicsErrorCodes walks a CreateTopics response for the metrics.
func createTopicsErrorCodes(r *kmsg.CreateTopicsResponse, f func(int16)) {
	for _, t := range r.Topics {
		f(t.ErrorCode)
	}
}
