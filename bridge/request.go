package bridge

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
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
}
