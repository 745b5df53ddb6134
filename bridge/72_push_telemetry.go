package bridge

// PushTelemetry: v0
//
// Behavior:
//   - Served (and advertised) only when telemetry.enabled is true.
//   - The push is checked in Kafka's order: the zero client instance id,
//     or a push after the instance's terminating one, is INVALID_REQUEST; a
//     non-terminating push sooner than the push interval after the previous
//     one is THROTTLING_QUOTA_EXCEEDED (the first push after a Get is always
//     in time: clients jitter it); a subscription id that is not the
//     instance's is UNKNOWN_SUBSCRIPTION_ID, and the client asks for its
//     subscription again; a compression type Kafka does not know is
//     UNSUPPORTED_COMPRESSION_TYPE; a payload above telemetry.max_bytes, or
//     decompressing to more than 8 times it, is TELEMETRY_TOO_LARGE; a
//     payload that is not OTLP metrics is INVALID_RECORD. An instance the
//     sidecar does not know (another sidecar's, or one expired) is
//     registered, as Kafka registers it.
//   - An accepted push replaces the instance's exported series: its
//     subscribed Gauge and Sum data points, labelled client_id (the request
//     header's), client_instance_id and the points' own attributes; an
//     empty payload changes nothing. The decompressed payload draws from
//     the memory budget while it is decoded. A terminating push is accepted
//     the same way, and the instance is forgotten one push interval later.
//
// Iggy commands: none.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafka-iggy/kafka-iggy/bridge/telemetry"
)

func (b *Bridge) pushTelemetryAPI() API {
	if b.telem == nil {
		return API{}
	}
	return API{Key: 72, Name: "PushTelemetry", MinVersion: 0, MaxVersion: 0,
		Handle: b.handlePushTelemetry, ErrorCodes: errorCodes(pushTelemetryErrorCodes)}
}

func init() { registerAPI((*Bridge).pushTelemetryAPI) }

func (b *Bridge) handlePushTelemetry(ctx context.Context, rq *Request) (kmsg.Response, error) {
	req := rq.Msg.(*kmsg.PushTelemetryRequest)
	resp := req.ResponseKind().(*kmsg.PushTelemetryResponse)
	p := telemetry.Push{
		ClientInstanceID: req.ClientInstanceID,
		SubscriptionID:   req.SubscriptionID,
		Terminating:      req.Terminating,
		CompressionType:  req.CompressionType,
		Metrics:          req.Metrics,
	}
	if rq.ClientID != nil {
		p.ClientID = *rq.ClientID
	}
	if p.Remote = rq.Remote; rq.Software != nil {
		p.Software = *rq.Software
	}
	resp.ErrorCode = b.telem.Push(ctx, p)
	return resp, nil
}

// pushTelemetryErrorCodes walks the response for the metrics.
func pushTelemetryErrorCodes(r *kmsg.PushTelemetryResponse, f func(int16)) {
	f(r.ErrorCode)
}
