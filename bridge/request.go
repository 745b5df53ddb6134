package bridge

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafka-iggy/kafka-iggy/codec/records"
)

// Request is one decoded Kafka request as the front door (package proxy)
// hands it to a HandlerFunc through Table.Dispatch.
//
// Lifetime: a Request and everything it points to belong to the handler only
// for the duration of the call. Msg was decoded with kmsg's safe ReadFrom, so
// its strings are copies, but byte fields (for example the Records of a
// Produce request) alias the pooled frame buffer, which is reused as soon as
// the handler has returned and its response has been encoded. A handler that
// keeps bytes beyond its return must copy them.
type Request struct {
	// ConnID identifies the client connection; unique for the life of the
	// process, starting at 1. Logged as conn_id.
	ConnID uint64
	// Remote is the client's address ("ip:port").
	Remote string
	// Software is the client software name and version the connection's
	// ApiVersions (v3+) sent; nil before one (KIP-714 matches on them).
	Software *[2]string
	// ClientID is the request header's client id; nil when the client sent
	// a null client id. The pointer is shared by every request of the same
	// connection that carries the same id: treat it as read-only.
	ClientID *string
	// CorrID is the request header's correlation id, echoed in the
	// response header by the front door. Logged as corr_id.
	CorrID int32
	// Key is the Kafka API key (logged as api_key); Version the request
	// version (api_version). Both were checked against the Table before the
	// body was decoded, so Version is inside the API's served range.
	Key, Version int16
	// Msg is the decoded request body: the kmsg type for Key (for example
	// *kmsg.ProduceRequest), with its version set to Version.
	Msg kmsg.Request
	// Received is when the front door took the complete frame off the
	// socket; request latency is measured from here.
	Received time.Time
	// ErrorCodes is set by the bridge once the handler answered: how many
	// non-zero Kafka error codes its response carries (top level, per
	// topic, per partition or resource), and FirstErrorCode the first of
	// them. The front door's request log and outcome label use them, so a
	// CreateTopics whose topics all failed is not logged as "ok".
	ErrorCodes     int32
	FirstErrorCode int16
}

// Cut is one block of a VectoredResponse's encoding that is not copied into
// the reply buffer: Data belongs at offset At of the bytes AppendVectored
// produced (between dst[:At] and dst[At:]).
type Cut = records.Cut

// VectoredResponse is a Response whose encoding carries large blocks (the
// record bytes of a Fetch response) that the front door writes to the
// socket from the response's own memory, with one writev, instead of
// copying them into the reply buffer first.
//
// The front door calls AppendVectored instead of AppendTo, writes
// dst[:c0.At], c0.Data, dst[c0.At:c1.At], c1.Data, ... dst[cN.At:], and
// calls Release once those bytes were written (or dropped). A response
// encoded with AppendTo needs no Release. The blocks must not alias the
// request: its frame is reused once the response is encoded.
type VectoredResponse interface {
	kmsg.Response
	// AppendVectored appends the encoding to dst, leaving out the blocks
	// Cuts then returns (at most maxCuts of them). The frame is the
	// appended bytes with the cuts' Data spliced in.
	AppendVectored(dst []byte, maxCuts int) []byte
	// Cuts returns the blocks AppendVectored left out, in order, owned by
	// the response until Release.
	Cuts() []Cut
	// Release frees the blocks. Called once.
	Release()
}

// receivedAt is when the request arrived (now for callers that did not
// stamp it).
func receivedAt(rq *Request) time.Time {
	if rq.Received.IsZero() {
		return time.Now()
	}
	return rq.Received
}
