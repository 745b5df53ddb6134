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
//     back to Iggy's default (see topicconfig/catalog.go).
//   - Only retention.ms, retention.bytes and compression.type can change.
//     segment.bytes and flush.messages are fixed at creation: naming one with
//     its current value is accepted (read-modify-write tools resend them),
//     another value is INVALID_CONFIG naming the key; one the request leaves
//     out keeps its value (Iggy cannot reset it). Configs Iggy has no
//     option for (cleanup.policy, message.timestamp.type, max.message.bytes,
//     ...: topicconfig/held.go) are changed in the topic-config store in Iggy
//     (topicconfig/store.go), one record per alter that changes them. Unknown keys, bad values and retention.bytes ×
//     partitions below segment.bytes are INVALID_CONFIG naming the key; a
//     null value or a key named twice is INVALID_REQUEST.
//   - A resource named twice in one request: INVALID_REQUEST "Each resource
//     must appear at most once." for it. TOPIC resources: a name Kafka
//     refuses is INVALID_TOPIC_EXCEPTION, an empty one INVALID_REQUEST, an
//     unknown topic UNKNOWN_TOPIC_OR_PARTITION. BROKER resources ("" or this
//     node id) are read-only: nothing to change is success, any config is
//     INVALID_REQUEST (the gateway's configuration sets them). CLIENT_METRICS
//     (bridge/clientmetrics): replaced as Kafka 4.4 does. Others: INVALID_REQUEST.
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

func init() { registerAPI((*Bridge).alterConfigsAPI) }

func (b *Bridge) handleAlterConfigs(ctx context.Context, rq *Request) (kmsg.Response, error) {
	req := rq.Msg.(*kmsg.AlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)

	// AlterConfigs is IncrementalAlterConfigs with every config a SET and
	// the configs left out reset (replace).
	inc := kmsg.NewPtrIncrementalAlterConfigsRequest()
	inc.ValidateOnly = req.ValidateOnly
	for _, res := range req.Resources {
		ir := kmsg.NewIncrementalAlterConfigsRequestResource()
		ir.ResourceType, ir.ResourceName = res.ResourceType, res.ResourceName
		for _, c := range res.Configs {
			ic := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
			ic.Name, ic.Op, ic.Value = c.Name, kmsg.IncrementalAlterConfigOpSet, c.Value
			ir.Configs = append(ir.Configs, ic)
		}
		inc.Resources = append(inc.Resources, ir)
	}
	for i, o := range b.alterResources(ctx, inc, true) {
		r := kmsg.NewAlterConfigsResponseResource()
		r.ResourceType, r.ResourceName = req.Resources[i].ResourceType, req.Resources[i].ResourceName
		r.ErrorCode, r.ErrorMessage = o.code, o.msg
		resp.Resources = append(resp.Resources, r)
	}
	return resp, nil
}

// alterConfigsErrorCodes walks a AlterConfigs response for the metrics.
func alterConfigsErrorCodes(r *kmsg.AlterConfigsResponse, f func(int16)) {
	for _, res := range r.Resources {
		f(res.ErrorCode)
	}
}
