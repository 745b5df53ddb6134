package bridge

// GetTelemetrySubscriptions: v0
//
// Behavior:
//   - Served (and advertised in ApiVersions) only when telemetry.enabled is
//     true; otherwise the API is not in the table, as on a Kafka broker
//     without a client-metrics reporter.
//   - A client asking with the zero client instance id gets a new random
//     (version 4) UUID; every client gets the one subscription this
//     sidecar has: the metric prefixes of telemetry.metrics, the push
//     interval telemetry.push_interval, the payload limit
//     telemetry.max_bytes, and Kafka's compression types (zstd, lz4, gzip,
//     snappy). The subscription id is computed as Kafka computes it (a
//     CRC-32C of the subscription XORed with the instance id's hash), so
//     every sidecar of one configuration gives an instance the same id.
//   - DeltaTemporality is false: clients push cumulative values, which
//     Prometheus counters expect (Kafka asks for delta).
//   - A known instance asking again within the push interval after its last
//     Get or Push is answered THROTTLING_QUOTA_EXCEEDED, except after an
//     UNKNOWN_SUBSCRIPTION_ID or UNSUPPORTED_COMPRESSION_TYPE (KIP-714's
//     rule; Kafka 4.4's check throttles those too).
//
// Iggy commands: none (package bridge/telemetry holds the instances).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafka-iggy/kafka-iggy/bridge/telemetry"
)

func (b *Bridge) getTelemetrySubscriptionsAPI() API {
	if b.telem == nil {
		return API{}
	}
	return API{Key: 71, Name: "GetTelemetrySubscriptions", MinVersion: 0, MaxVersion: 0,
		Handle: b.handleGetTelemetrySubscriptions, ErrorCodes: errorCodes(getTelemetrySubscriptionsErrorCodes)}
}

func init() { registerAPI((*Bridge).getTelemetrySubscriptionsAPI) }

func (b *Bridge) handleGetTelemetrySubscriptions(_ context.Context, rq *Request) (kmsg.Response, error) {
	req := rq.Msg.(*kmsg.GetTelemetrySubscriptionsRequest)
	resp := req.ResponseKind().(*kmsg.GetTelemetrySubscriptionsResponse)
	sub := b.telem.Subscribe(req.ClientInstanceID)
	cfg := b.telem.Config()
	resp.ErrorCode = sub.ErrorCode
	resp.ClientInstanceID = sub.ClientInstanceID
	resp.SubscriptionID = sub.SubscriptionID
	resp.AcceptedCompressionTypes = append(resp.AcceptedCompressionTypes, telemetry.AcceptedCompression...)
	resp.PushIntervalMillis = int32(cfg.PushInterval.Milliseconds())
	resp.TelemetryMaxBytes = int32(cfg.MaxBytes)
	resp.DeltaTemporality = false
	resp.RequestedMetrics = append(resp.RequestedMetrics, cfg.Metrics...)
	return resp, nil
}

// getTelemetrySubscriptionsErrorCodes walks the response for the metrics.
func getTelemetrySubscriptionsErrorCodes(r *kmsg.GetTelemetrySubscriptionsResponse, f func(int16)) {
	f(r.ErrorCode)
}
