package bridge

// AlterConfigs: v0-v2
//
// Behavior:
//   - Non-incremental, as Kafka defines it: the configs sent REPLACE the
//     topic's whole set of dynamic configs. Every updatable config the
//     request does not name goes back to its default, as a Kafka topic
//     without an override falls back to its broker's config: the gateway's
//     default option for it when topics.default_options sets one, else
//     Iggy's default. Iggy's UPDATE_TOPIC patches only the keys it is sent,
//     so the gateway sends every updatable option (compression_algorithm,
//     message_expiry, max_topic_size), with a default marker for those going
//     back to Iggy's default (see topicconfig.go).
//   - Only retention.ms, retention.bytes and compression.type can change.
//     segment.bytes and flush.messages are fixed at creation: naming one with
//     its current value is accepted (read-modify-write tools resend them),
//     another value is INVALID_CONFIG naming the key; one the request leaves
//     out keeps its value (Iggy cannot reset it). cleanup.policy accepts
//     only "delete". Unknown keys, bad values and retention.bytes ×
//     partitions below segment.bytes are INVALID_CONFIG naming the key; a
//     null value or a key named twice is INVALID_REQUEST.
//   - A resource named twice in one request: INVALID_REQUEST "Each resource
//     must appear at most once." for it. TOPIC resources: a name Kafka
//     refuses is INVALID_TOPIC_EXCEPTION, an empty one INVALID_REQUEST, an
//     unknown topic UNKNOWN_TOPIC_OR_PARTITION. BROKER resources ("" or this
//     node id) are read-only: nothing to change is success, any config is
//     INVALID_REQUEST (the gateway's configuration sets them). Other types:
//     INVALID_REQUEST.
//   - ValidateOnly runs every check and changes nothing.
//   - Iggy failures map through errors.go (scopeAdmin).
//
// Version notes:
//   - v1: ThrottleMillis
//   - v2: flexible
//
// Iggy commands: GET_STREAM (200), GET_TOPIC (300), UPDATE_TOPIC (304).

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

func (b *Bridge) alterConfigsAPI() API {
	return API{Key: 33, Name: "AlterConfigs", MinVersion: 0, MaxVersion: 2, Handle: b.handleAlterConfigs, Completes: true}
}

func (b *Bridge) handleAlterConfigs(ctx context.Context, rq *Request) (kmsg.Response, error) {
	req, ok := rq.Msg.(*kmsg.AlterConfigsRequest)
	if !ok {
		return nil, fmt.Errorf("alter configs: %w", ErrBadRequest)
	}
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
	resp.Version = rq.Version

	keys := make([]resourceKey, len(req.Resources))
	for i := range req.Resources {
		keys[i] = resourceKey{req.Resources[i].ResourceType, req.Resources[i].ResourceName}
	}
	outcomes := b.alterResources(ctx, keys, func(i int) []alterOp {
		ops := make([]alterOp, 0, len(req.Resources[i].Configs))
		for _, c := range req.Resources[i].Configs {
			ops = append(ops, alterOp{name: c.Name, op: kmsg.IncrementalAlterConfigOpSet, value: c.Value})
		}
		return ops
	}, true, req.ValidateOnly)
	for i, o := range outcomes {
		r := kmsg.NewAlterConfigsResponseResource()
		r.ResourceType, r.ResourceName = keys[i].typ, keys[i].name
		r.ErrorCode, r.ErrorMessage = o.code, o.msg
		resp.Resources = append(resp.Resources, r)
	}
	return resp, nil
}

// alterOutcome is one resource's answer to an alter request.
type alterOutcome struct {
	code int16
	msg  *string // nil when there is nothing to say
}

// alterResources answers every resource of an AlterConfigs (replace) or
// IncrementalAlterConfigs request, in request order: a resource named
// twice is INVALID_REQUEST, the others go through alterResource with the
// changes ops(i) gives for resource i.
func (b *Bridge) alterResources(ctx context.Context, keys []resourceKey, ops func(i int) []alterOp, replace, validateOnly bool) []alterOutcome {
	dups := duplicateResources(keys)
	out := make([]alterOutcome, len(keys))
	for i, k := range keys {
		var msg string
		if dups[k] {
			out[i].code, msg = kerr.InvalidRequest.Code, "Each resource must appear at most once."
		} else {
			out[i].code, msg = b.alterResource(ctx, k.typ, k.name, ops(i), replace, validateOnly)
		}
		if msg != "" {
			out[i].msg = &msg
		}
	}
	return out
}

// resourceKey identifies a config resource of a request.
type resourceKey struct {
	typ  kmsg.ConfigResourceType
	name string
}

// duplicateResources returns the resources a request names more than once.
func duplicateResources(keys []resourceKey) map[resourceKey]bool {
	seen := make(map[resourceKey]int, len(keys))
	for _, k := range keys {
		seen[k]++
	}
	dups := map[resourceKey]bool{}
	for k, n := range seen {
		if n > 1 {
			dups[k] = true
		}
	}
	return dups
}

// alterResource applies ops to one resource (AlterConfigs with replace,
// IncrementalAlterConfigs without) and returns the Kafka outcome.
func (b *Bridge) alterResource(ctx context.Context, typ kmsg.ConfigResourceType, name string, ops []alterOp, replace, validateOnly bool) (int16, string) {
	switch typ {
	case kmsg.ConfigResourceTypeTopic:
	case kmsg.ConfigResourceTypeBroker:
		if name != "" {
			if code, msg := b.checkBrokerResource(name); code != 0 {
				return code, msg
			}
		}
		if len(ops) > 0 {
			return kerr.InvalidRequest.Code, fmt.Sprintf(
				"Invalid config value for resource ConfigResource(type=BROKER, name='%s'): broker configs of the gateway are read-only (%s); set them in its configuration", name, ops[0].name)
		}
		return 0, ""
	default:
		return kerr.InvalidRequest.Code, fmt.Sprintf("Unsupported resource type: %s", typ)
	}
	if name == "" {
		return kerr.InvalidRequest.Code, "Default topic resources are not allowed."
	}
	if msg := topicNameProblem(name); msg != "" {
		return kerr.InvalidTopicException.Code, msg
	}
	ref := b.topics.ref(name)
	info, err := b.iggy.RefreshTopic(ctx, ref)
	if err != nil {
		if iggy.IsNotFound(err) {
			return kerr.UnknownTopicOrPartition.Code, fmt.Sprintf("The topic '%s' does not exist.", name)
		}
		return b.adminError(name, "alter configs", err)
	}
	cur := b.topicOptionSet(name, info.Details.ExplicitOptions, info.Details.DerivedOptions)
	patch, next, e := planAlter(cur, info.PartitionsCount, ops, replace, b.brokerDefaults())
	if e != nil {
		return e.code, e.msg
	}
	if validateOnly {
		return 0, ""
	}
	if len(patch) == 0 {
		b.topics.held.store(name, next)
		return 0, ""
	}
	req := &icodec.UpdateTopicRequest{StreamID: ref.StreamID(), TopicID: ref.TopicID(), Name: ref.Topic, Options: patch}
	err = b.iggy.Do(ctx, req, nil)
	b.iggy.InvalidateTopic(ref)
	if err != nil {
		if iggy.IsNotFound(err) {
			return kerr.UnknownTopicOrPartition.Code, fmt.Sprintf("The topic '%s' does not exist.", name)
		}
		return b.adminError(name, "alter configs", err)
	}
	b.topics.held.store(name, next)
	b.log.Info().Str("topic", name).Int("options", len(patch)).Msg("altered topic configs")
	return 0, ""
}
