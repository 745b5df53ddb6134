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
//     out keeps its value (Iggy cannot reset it). Configs Iggy has no
//     option for (cleanup.policy, message.timestamp.type, max.message.bytes,
//     ...: topicheld.go) are changed in the topic-config store in Iggy
//     (topicstore.go), one record per alter that changes them. Unknown keys, bad values and retention.bytes ×
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
// Iggy commands: GET_STREAM (200), GET_TOPIC (300), UPDATE_TOPIC (304), the
// store's SEND_MESSAGES (101) and POLL_MESSAGES (100).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *Bridge) alterConfigsAPI() API {
	return API{Key: 33, Name: "AlterConfigs", MinVersion: 0, MaxVersion: 2, Handle: b.handleAlterConfigs, Completes: true, ErrorCodes: errorCodes(alterConfigsErrorCodes)}
}

// alterConfigsErrorCodes walks a AlterConfigs response for the metrics.
func alterConfigsErrorCodes(r *kmsg.AlterConfigsResponse, f func(int16)) {
	for _, res := range r.Resources {
		f(res.ErrorCode)
	}
}

func init() { registerAPI((*Bridge).alterConfigsAPI) }

func (b *Bridge) handleAlterConfigs(ctx context.Context, rq *Request) (kmsg.Response, error) {
	req := rq.Msg.(*kmsg.AlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)

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
