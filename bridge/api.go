package bridge

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// HandlerFunc serves one Kafka API.
//
// The three possible outcomes mean:
//   - a non-nil response: encode it (with the request's correlation id) and
//     write it in request order. Its Key must be the request's key and its
//     version the request's version (ApiVersions alone may answer at v0,
//     KIP-511). Build it with rq.Msg.ResponseKind(), which sets both.
//   - nil response, nil error: nothing goes on the wire (Produce with
//     acks=0); the request still takes its turn in the connection's order.
//   - a non-nil error: the connection is closed and close_reason is logged.
//     Use it only for broken invariants. Kafka business errors (unknown
//     topic, not coordinator, ...) are error codes inside the response,
//     never Go errors.
//
// Handlers run on worker goroutines, many at once; they may block (on Iggy,
// on a fetch wait) and must honour ctx, which is cancelled when the client
// connection closes or the server's drain deadline passes.
type HandlerFunc func(ctx context.Context, rq *Request) (kmsg.Response, error)

// API is one row of the Table: a Kafka API key, the version range we serve
// for it, and its handler. The same row drives dispatch and the ApiVersions
// response, so what is advertised is exactly what is served.
type API struct {
	// Key is the Kafka API key (0 Produce, 1 Fetch, 18 ApiVersions, ...).
	Key int16
	// Name is the API's name for logs; empty means kmsg's name for Key.
	Name string
	// MinVersion and MaxVersion bound the versions served (inclusive).
	// MaxVersion may not exceed what kmsg can decode for Key.
	MinVersion, MaxVersion int16
	// Handle serves a request whose version is inside the range.
	Handle HandlerFunc
	// Completes marks a request with effects (a write, a commit, an admin
	// change) that runs to its end once received, even when its
	// connection closes first, as Kafka's request handlers do: its
	// handler gets a context the close does not cancel (the Iggy client's
	// own deadlines still bound it), and the front door runs it even when
	// it was queued behind the close. An acks=0 producer that closes right
	// after writing loses nothing. Reads and group membership requests
	// stop with their connection.
	Completes bool
	// Group marks an API that changes group membership: after it the
	// group gauges are refreshed.
	Group bool
	// FrameCharge is how many times its frame's size a request of this
	// API draws from the memory budget (limits.memory_bytes) from the
	// moment the front door takes it off the socket until its reply is
	// written: the API's decode and response amplification (Produce 14,
	// DescribeConfigs 1200). 0: Bridge.apis gives it defaultFrameCharge
	// (framecharge.go); a table built by hand treats 0 as 1.
	FrameCharge int64
	// ErrorCodes walks a response of this API, calling f with every error
	// code it carries (top level, per topic, per partition, ...); the
	// metrics and the request log count the non-zero ones. Build it with
	// errorCodes. nil: the response carries none.
	ErrorCodes func(resp kmsg.Response, f func(code int16))
}

// errorCodes adapts a walker of one response type to API.ErrorCodes; a
// response of another type is not walked.
func errorCodes[R kmsg.Response](walk func(r R, f func(int16))) func(kmsg.Response, func(int16)) {
	return func(resp kmsg.Response, f func(int16)) {
		if r, ok := resp.(R); ok {
			walk(r, f)
		}
	}
}

// apiRows holds the row builder of every API file: each NN_name.go
// registers its own in an init function, so the floor (bridge.go, this
// file) never names an API file and adding an API touches one file.
var apiRows []func(*Bridge) API

// registerAPI adds an API file's row builder to what New serves.
func registerAPI(row func(*Bridge) API) { apiRows = append(apiRows, row) }

// numKeys is the size of the dispatch array: every key kmsg knows.
const numKeys = int(kmsg.MaxKey) + 1

// Errors returned by NewTable (joined, each wrapped with the offending row)
// and by Table.Dispatch. Match them with errors.Is.
var (
	// ErrUnknownAPI: the key is outside what kmsg knows, or not in the Table.
	ErrUnknownAPI = errors.New("bridge: unknown api key")
	// ErrUnsupportedVersion: the version is outside the served range, or a
	// row's range is empty, negative or beyond what kmsg supports.
	ErrUnsupportedVersion = errors.New("bridge: unsupported api version")
	// ErrDuplicateAPI: two rows name the same key.
	ErrDuplicateAPI = errors.New("bridge: duplicate api key")
	// ErrNoHandler: a row has a nil Handle.
	ErrNoHandler = errors.New("bridge: api without handler")
	// ErrBadRequest: Dispatch got a nil request, a nil Msg, or a Msg whose
	// key or version disagrees with the request header.
	ErrBadRequest = errors.New("bridge: malformed request")
	// ErrResponseMismatch: a handler answered with a response of another
	// key or version than its request.
	ErrResponseMismatch = errors.New("bridge: response does not match request")
)

// Table is the one dispatch table of the gateway: a fixed array indexed by
// API key, built once by NewTable and immutable afterwards, so every method
// is safe for concurrent use. *Table satisfies proxy.Dispatcher.
type Table struct {
	apis [numKeys]API
	has  [numKeys]bool
	// sorted holds the rows in key order (All returns a copy).
	sorted []API
	// advertised is the ApiVersions key list in key order, built once and
	// shared read-only by every ApiVersions response.
	advertised []kmsg.ApiVersionsResponseApiKey
}

// NewTable checks the rows and builds the Table. Every problem is reported
// (errors.Join): a key kmsg does not know, a duplicate key, a nil handler,
// a negative or inverted version range, a MaxVersion above kmsg's.
func NewTable(apis ...API) (*Table, error) {
	t := &Table{}
	var errs []error
	for _, a := range apis {
		if a.Key < 0 || int(a.Key) >= numKeys {
			errs = append(errs, fmt.Errorf("api key %d: %w", a.Key, ErrUnknownAPI))
			continue
		}
		req := kmsg.RequestForKey(a.Key)
		if req == nil {
			errs = append(errs, fmt.Errorf("api key %d: %w (kmsg has no request type)", a.Key, ErrUnknownAPI))
			continue
		}
		if a.Name == "" {
			a.Name = kmsg.NameForKey(a.Key)
		}
		bad := false
		if t.has[a.Key] {
			errs = append(errs, fmt.Errorf("api key %d (%s): %w", a.Key, a.Name, ErrDuplicateAPI))
			bad = true
		}
		if a.Handle == nil {
			errs = append(errs, fmt.Errorf("api key %d (%s): %w", a.Key, a.Name, ErrNoHandler))
			bad = true
		}
		if a.MinVersion < 0 || a.MinVersion > a.MaxVersion {
			errs = append(errs, fmt.Errorf("api key %d (%s): versions %d-%d: %w",
				a.Key, a.Name, a.MinVersion, a.MaxVersion, ErrUnsupportedVersion))
			bad = true
		}
		if limit := req.MaxVersion(); a.MaxVersion > limit {
			errs = append(errs, fmt.Errorf("api key %d (%s): max version %d above kmsg's %d: %w",
				a.Key, a.Name, a.MaxVersion, limit, ErrUnsupportedVersion))
			bad = true
		}
		if bad {
			continue
		}
		t.apis[a.Key] = a
		t.has[a.Key] = true
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	for k := range t.apis {
		if !t.has[k] {
			continue
		}
		a := t.apis[k]
		t.sorted = append(t.sorted, a)
		ak := kmsg.NewApiVersionsResponseApiKey()
		ak.ApiKey, ak.MinVersion, ak.MaxVersion = a.Key, a.MinVersion, a.MaxVersion
		t.advertised = append(t.advertised, ak)
	}
	return t, nil
}

// Versions reports the served version range of key; ok is false when key
// is not in the Table.
func (t *Table) Versions(key int16) (minVersion, maxVersion int16, ok bool) {
	if key < 0 || int(key) >= numKeys || !t.has[key] {
		return 0, 0, false
	}
	a := &t.apis[key]
	return a.MinVersion, a.MaxVersion, true
}

// Completes reports whether a received request of key runs to its end even
// when its connection closes first (API.Completes).
func (t *Table) Completes(key int16) bool {
	a, ok := t.Lookup(key)
	return ok && a.Completes
}

// FrameCharge reports how many times its frame's size a request of key
// draws from the memory budget (API.FrameCharge): at least 1, and 1 for a
// key not in the Table.
func (t *Table) FrameCharge(key int16) int64 {
	a, ok := t.Lookup(key)
	if !ok {
		return 1
	}
	return max(a.FrameCharge, 1)
}

// Lookup returns the row for key. The pointer refers into the Table; do not
// modify what it points to.
func (t *Table) Lookup(key int16) (*API, bool) {
	if key < 0 || int(key) >= numKeys || !t.has[key] {
		return nil, false
	}
	return &t.apis[key], true
}

// All returns a copy of every row, sorted by key.
func (t *Table) All() []API {
	return slices.Clone(t.sorted)
}

// Dispatch checks rq against the Table, calls the row's handler and checks
// that the response matches the request (same key; same version, except
// the ApiVersions v0 fallback; a mismatched VectoredResponse is released).
// See HandlerFunc for what its results mean.
// An error wraps one of ErrUnknownAPI, ErrUnsupportedVersion, ErrBadRequest,
// ErrResponseMismatch, or the handler's own error.
func (t *Table) Dispatch(ctx context.Context, rq *Request) (kmsg.Response, error) {
	if rq == nil || rq.Msg == nil {
		return nil, ErrBadRequest
	}
	a, ok := t.Lookup(rq.Key)
	if !ok {
		return nil, fmt.Errorf("api key %d: %w", rq.Key, ErrUnknownAPI)
	}
	if rq.Version < a.MinVersion || rq.Version > a.MaxVersion {
		return nil, fmt.Errorf("%s v%d (served v%d-v%d): %w",
			a.Name, rq.Version, a.MinVersion, a.MaxVersion, ErrUnsupportedVersion)
	}
	if rq.Msg.Key() != rq.Key || rq.Msg.GetVersion() != rq.Version {
		return nil, fmt.Errorf("%s v%d: body is key %d v%d: %w",
			a.Name, rq.Version, rq.Msg.Key(), rq.Msg.GetVersion(), ErrBadRequest)
	}
	if a.Completes {
		ctx = context.WithoutCancel(ctx)
	}
	resp, err := a.Handle(ctx, rq)
	if err != nil {
		return nil, fmt.Errorf("%s v%d: %w", a.Name, rq.Version, err)
	}
	if resp == nil {
		return nil, nil
	}
	if err := matches(rq, resp); err != nil {
		if vr, ok := resp.(VectoredResponse); ok {
			vr.Release() // never encoded: its blocks go back here
		}
		return nil, fmt.Errorf("%s v%d: %w", a.Name, rq.Version, err)
	}
	return resp, nil
}

// matches checks that resp answers rq: the same key, and the same version
// except ApiVersions' v0 fallback (KIP-511). This is the one place the
// check is made; the front door encodes what Dispatch returns as is.
func matches(rq *Request, resp kmsg.Response) error {
	if resp.Key() != rq.Key {
		return fmt.Errorf("response key %d: %w", resp.Key(), ErrResponseMismatch)
	}
	if v := resp.GetVersion(); v != rq.Version && (rq.Key != kmsg.ApiVersions.Int16() || v != 0) {
		return fmt.Errorf("response version %d: %w", v, ErrResponseMismatch)
	}
	return nil
}
