package bridge

// ApiVersions: v0-v5
//
// Behavior:
// * Answers from the Table itself: every key it serves with its min and max
//   version, sorted by key. What is advertised is exactly what is dispatched.
// * A version outside what we serve gets a v0 response carrying
//   UNSUPPORTED_VERSION (35) and only ApiVersions' own range (KIP-511); the
//   client retries at that version. The front door (package proxy) sends the
//   same answer, built by UnsupportedApiVersionsResponse, before decoding the
//   body, since a newer body may not decode; the check here covers direct
//   callers of the handler.
// * Features (v3+): one, transaction.version, supported 0-2 and finalized
//   at 2 as Apache Kafka 4.4.0 finalizes it by default, when the table
//   serves transaction protocol v2 (EndTxn v5; bridge/txn/v2.go): Kafka 4.x
//   clients then use it (Produce v12 without AddPartitionsToTxn, EndTxn v5,
//   TxnOffsetCommit v5 without AddOffsetsToTxn). FinalizedFeaturesEpoch is
//   a constant 1 (Kafka's is its metadata offset; clients keep the
//   features of the highest epoch they saw). No other feature level
//   (metadata.version, group.version, ...) is claimed.
// * ClientSoftwareName and ClientSoftwareVersion (v3+) are accepted as sent.
//   A broker answers INVALID_REQUEST (42) when they do not match
//   [a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?; being lenient breaks no client.
// * ThrottleMillis is always 0.
// * Quirk, handled by the front door: the ApiVersions response header is
//   always v0 (correlation id only, no tag buffer), even at v3+, because a
//   client reads it before it knows which versions the broker speaks.
//
// Version notes:
// * v1: ThrottleMillis in the response
// * v2: no wire change (throttling happens after the response, KIP-219)
// * v3: flexible; ClientSoftwareName/ClientSoftwareVersion in the request
//   (KIP-511); tagged SupportedFeatures, FinalizedFeaturesEpoch,
//   FinalizedFeatures, ZkMigrationReady in the response (KIP-584)
// * v4: no wire change (a SupportedFeatures MinVersion of 0 is allowed)
// * v5: ClusterID and NodeID in the request (KIP-1242): the identity the
//   client believes it reaches. Both null/-1 (bootstrapping) is the v4
//   answer; only one of them set is INVALID_REQUEST; both set and either
//   differing from this gateway (its Metadata cluster id, its node id) is
//   REBOOTSTRAP_REQUIRED with no api keys, so a client routed to the wrong
//   sidecar or Iggy server re-bootstraps. kafka-clients 4.x opens every
//   connection with v5; serving it saves the UNSUPPORTED_VERSION round trip.
//
// Iggy commands: none

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafka-iggy/kafka-iggy/bridge/txn"
)

// ApiVersionsMaxVersion is the highest ApiVersions version this file serves.
const ApiVersionsMaxVersion int16 = 5

// ApiVersionsAPI returns the Table row for ApiVersions (key 18, v0-v5). The
// handler answers from the Table that table() returns; pass a func because
// the Table is built from a row list that includes this row:
//
//	var t *bridge.Table
//	t, err := bridge.NewTable(bridge.ApiVersionsAPI(func() *bridge.Table { return t }), ...)
//
// identity, when given, returns the cluster id and node id a v5 request's
// ClusterID and NodeID are checked against; without it they are not
// checked.
func ApiVersionsAPI(table func() *Table, identity ...func(context.Context) (string, int32)) API {
	var id func(context.Context) (string, int32)
	if len(identity) > 0 {
		id = identity[0]
	}
	return API{
		Key:        kmsg.ApiVersions.Int16(),
		Name:       "ApiVersions",
		MinVersion: 0,
		MaxVersion: ApiVersionsMaxVersion,
		ErrorCodes: errorCodes(apiVersionsErrorCodes),
		// Its answer is the fixed table: the frame is all it holds.
		FrameCharge: 1,
		Handle: func(ctx context.Context, rq *Request) (kmsg.Response, error) {
			return handleApiVersions(ctx, table(), id, rq)
		},
	}
}

// apiVersionsAPI is the bridge's row: it answers from the bridge's Table
// and checks v5 identities against this instance.
func (b *Bridge) apiVersionsAPI() API { return ApiVersionsAPI(b.Table, b.identity) }

func init() { registerAPI((*Bridge).apiVersionsAPI) }

func handleApiVersions(ctx context.Context, t *Table, identity func(context.Context) (string, int32), rq *Request) (kmsg.Response, error) {
	req := rq.Msg.(*kmsg.ApiVersionsRequest)
	if t == nil {
		return nil, fmt.Errorf("api versions: no table yet: %w", ErrBadRequest)
	}
	minV, maxV, served := t.Versions(kmsg.ApiVersions.Int16())
	if !served {
		return nil, fmt.Errorf("api versions: table has no row for key 18: %w", ErrUnknownAPI)
	}
	if req.Version < minV || req.Version > maxV {
		return UnsupportedApiVersionsResponse(minV, maxV), nil
	}
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	if req.Version >= 5 && (req.ClusterID != nil || req.NodeID != -1) {
		if req.ClusterID == nil || req.NodeID == -1 {
			resp.ErrorCode = kerr.InvalidRequest.Code
			return resp, nil
		}
		if identity != nil {
			if cluster, node := identity(ctx); node != req.NodeID || cluster != "" && cluster != *req.ClusterID {
				resp.ErrorCode = kerr.RebootstrapRequired.Code
				return resp, nil
			}
		}
	}
	// Shared, read-only: the response is encoded and dropped, never changed.
	resp.ApiKeys = t.advertised
	if _, maxEnd, ok := t.Versions(kmsg.EndTxn.Int16()); ok && maxEnd >= 5 {
		resp.SupportedFeatures, resp.FinalizedFeatures, resp.FinalizedFeaturesEpoch = txnSupported, txnFinalized, 1
	}
	return resp, nil
}

// The features block: transaction.version (shared, read-only).
var (
	txnSupported = []kmsg.ApiVersionsResponseSupportedFeature{{Name: txn.FeatureName, MinVersion: txn.FeatureMin, MaxVersion: txn.FeatureMax}}
	txnFinalized = []kmsg.ApiVersionsResponseFinalizedFeature{{Name: txn.FeatureName, MinVersionLevel: txn.FeatureFinalized, MaxVersionLevel: txn.FeatureFinalized}}
)

// UnsupportedApiVersionsResponse is the KIP-511 answer to an ApiVersions
// request at a version we do not serve: a v0 response with
// UNSUPPORTED_VERSION (35) listing only ApiVersions' own range
// [minVersion, maxVersion]. Encode it with a v0 response header.
func UnsupportedApiVersionsResponse(minVersion, maxVersion int16) *kmsg.ApiVersionsResponse {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = 0
	resp.ErrorCode = kerr.UnsupportedVersion.Code
	k := kmsg.NewApiVersionsResponseApiKey()
	k.ApiKey, k.MinVersion, k.MaxVersion = kmsg.ApiVersions.Int16(), minVersion, maxVersion
	resp.ApiKeys = []kmsg.ApiVersionsResponseApiKey{k}
	return resp
}

// apiVersionsErrorCodes walks a ApiVersions response for the metrics.
func apiVersionsErrorCodes(r *kmsg.ApiVersionsResponse, f func(int16)) {
	f(r.ErrorCode)
}
