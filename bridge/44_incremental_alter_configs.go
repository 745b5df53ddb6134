package bridge

// IncrementalAlterConfigs: v0-v1
//
// Behavior:
//   - Applies each operation to the topic's current configs and changes only
//     the options named (Iggy's UPDATE_TOPIC patches): SET sets a value,
//     DELETE puts the config back to its default (the gateway's default
//     option when topics.default_options sets one, else Iggy's default
//     through a default marker, see topicconfig/catalog.go), APPEND and SUBTRACT work
//     on LIST configs only
//     (cleanup.policy, the throttled-replica lists) and are INVALID_CONFIG
//     elsewhere ("Can't APPEND to key
//     ... because its type is not LIST."). An unknown operation or a null
//     value for SET/APPEND/SUBTRACT is INVALID_REQUEST, as is a key named
//     twice.
//   - The updatable set, create-only keys (a no-op SET to the current value
//     is accepted; DELETE of one that was set is INVALID_CONFIG), the
//     cleanup.policy rule, BROKER resources, duplicate resources and
//     ValidateOnly behave as in AlterConfigs (33_alter_configs.go).
//   - CLIENT_METRICS resources: bridge/clientmetrics checks and keeps them.
//
// Version notes:
//   - v1: flexible
//
// Iggy commands: GET_STREAM (200), GET_TOPIC (300), UPDATE_TOPIC (304), the
// store's SEND_MESSAGES (101) and POLL_MESSAGES (100).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *Bridge) incrementalAlterConfigsAPI() API {
	return API{Key: 44, Name: "IncrementalAlterConfigs", MinVersion: 0, MaxVersion: 1, Handle: b.handleIncrementalAlterConfigs, Completes: true, ErrorCodes: errorCodes(incrementalAlterConfigsErrorCodes)}
}

func init() { registerAPI((*Bridge).incrementalAlterConfigsAPI) }

func (b *Bridge) handleIncrementalAlterConfigs(ctx context.Context, rq *Request) (kmsg.Response, error) {
	req := rq.Msg.(*kmsg.IncrementalAlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)

	for i, o := range b.alterResources(ctx, req, false) {
		r := kmsg.NewIncrementalAlterConfigsResponseResource()
		r.ResourceType, r.ResourceName = req.Resources[i].ResourceType, req.Resources[i].ResourceName
		r.ErrorCode, r.ErrorMessage = o.code, o.msg
		resp.Resources = append(resp.Resources, r)
	}
	return resp, nil
}

// incrementalAlterConfigsErrorCodes walks a IncrementalAlterConfigs response for the metrics.
func incrementalAlterConfigsErrorCodes(r *kmsg.IncrementalAlterConfigsResponse, f func(int16)) {
	for _, res := range r.Resources {
		f(res.ErrorCode)
	}
}
