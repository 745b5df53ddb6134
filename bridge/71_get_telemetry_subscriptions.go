package bridge

// GetTelemetrySubscriptions: v0
//
// Behavior:
//   - Served (and advertised in ApiVersions) only when telemetry.enabled is
//     true; otherwise the API is not in the table, as on a Kafka broker
//     without a client-metrics reporter.
//   - A client asking with the zero client instance id gets a new random
//     (version 4) UUID. Its subscription: when client metrics
//     subscriptions are stored (kafka-client-metrics.sh; CLIENT_METRICS
//     configs kept in Iggy, bridge/clientmetrics), those it matches
//     combined as Kafka combines them (the union of their metric prefixes,
//     "*" asking for every metric; the smallest interval; none matched:
//     no metric, every 5 minutes), matched on client_instance_id,
//     client_id, the software name and version of the connection's
//     ApiVersions and the client's source address and port; with none
//     stored, the configured one
//     (telemetry.metrics, telemetry.push_interval). Then the payload limit
//     telemetry.max_bytes and Kafka's compression types (zstd, lz4, gzip,
//     snappy). The subscription id is computed as Kafka computes it (a
//     CRC-32C of the subscription XORed with the instance id's hash), so
//     every sidecar gives an instance the same id; a push under an older
//     subscription gets UNKNOWN_SUBSCRIPTION_ID and the client asks again.
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

func (b *Bridge) handleGetTelemetrySubscriptions(ctx context.Context, rq *Request) (kmsg.Response, error) {
	req := rq.Msg.(*kmsg.GetTelemetrySubscriptionsRequest)
	resp := req.ResponseKind().(*kmsg.GetTelemetrySubscriptionsResponse)
	c := telemetry.Client{Remote: rq.Remote}
	if rq.ClientID != nil {
		c.ClientID = *rq.ClientID
	}
	if rq.Software != nil {
		c.Software = *rq.Software
	}
	sub := b.telem.SubscribeClient(ctx, req.ClientInstanceID, c)
	cfg := b.telem.Config()
	resp.ErrorCode = sub.ErrorCode
	resp.ClientInstanceID = sub.ClientInstanceID
	resp.SubscriptionID = sub.SubscriptionID
	resp.AcceptedCompressionTypes = append(resp.AcceptedCompressionTypes, telemetry.AcceptedCompression...)
	resp.PushIntervalMillis = int32(sub.PushInterval.Milliseconds())
	resp.TelemetryMaxBytes = int32(cfg.MaxBytes)
	resp.DeltaTemporality = false
	resp.RequestedMetrics = append(resp.RequestedMetrics, sub.Metrics...)
	return resp, nil
}

// getTelemetrySubscriptionsErrorCodes walks the response for the metrics.
func getTelemetrySubscriptionsErrorCodes(r *kmsg.GetTelemetrySubscriptionsResponse, f func(int16)) {
	f(r.ErrorCode)
}
