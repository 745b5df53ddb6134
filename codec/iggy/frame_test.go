package iggy

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/kafka-iggy/kafka-iggy/codec/wire"
)

// ---- golden vectors (testdata/vectors-0.11.json) ----

type goldenVector struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Hex         string `json:"hex"`
	Derived     bool   `json:"derived"`
}

// vectors011Path is the in-repo copy of the 0.11 golden vectors; the
// embedded server's conformance test reads the same file.
const vectors011Path = "testdata/vectors-0.11.json"

var (
	vectorsOnce   sync.Once
	vectorsByName map[string][]byte
	vectorNames   []string
	vectorsErr    error
)

func loadVectorFile() {
	raw, err := os.ReadFile(vectors011Path)
	if err != nil {
		vectorsErr = err
		return
	}
	var list []goldenVector
	if err := json.Unmarshal(raw, &list); err != nil {
		vectorsErr = err
		return
	}
	vectorsByName = make(map[string][]byte, len(list))
	for _, v := range list {
		b, err := hex.DecodeString(v.Hex)
		if err != nil {
			vectorsErr = errors.New("vector " + v.Name + ": " + err.Error())
			return
		}
		vectorsByName[v.Name] = b
		vectorNames = append(vectorNames, v.Name)
	}
}

// fataler is what both *testing.T/B and *testing.F offer.
type fataler interface {
	Helper()
	Fatalf(format string, args ...any)
}

// vectors returns the golden vectors by name; an unreadable file fails the
// test (the file is part of the repository).
func vectors(tb fataler) map[string][]byte {
	tb.Helper()
	vectorsOnce.Do(loadVectorFile)
	if vectorsErr != nil {
		tb.Fatalf("golden vectors (%s) unreadable: %v", vectors011Path, vectorsErr)
	}
	return vectorsByName
}

// vec returns one golden vector (a copy, so tests may mutate it).
func vec(tb fataler, name string) []byte {
	tb.Helper()
	b, ok := vectors(tb)[name]
	if !ok {
		tb.Fatalf("golden vector %q missing from %s", name, vectors011Path)
	}
	return bytes.Clone(b)
}

// testClient is the client id every vector uses (bytes 01..10 at offset 128).
var testClient = wire.U128{Lo: 0x0807060504030201, Hi: 0x100F0E0D0C0B0A09}

func wantDecodeErr(t *testing.T, err, sentinel error) {
	t.Helper()
	if !errors.Is(err, sentinel) {
		t.Fatalf("error = %v, want %v", err, sentinel)
	}
	var de *wire.DecodeError
	if !errors.As(err, &de) {
		t.Fatalf("error %T is not a *wire.DecodeError", err)
	}
}

// ---- frame vectors ----

func TestFrameVectors(t *testing.T) {
	vectors(t)
	tests := []struct {
		name string
		req  *RequestHeader
		rep  *ReplyHeader
		ev   *EvictionHeader
	}{
		{name: "login_register_request_frame", req: &RequestHeader{Client: testClient, Operation: OperationRegister}},
		{name: "legacy_login_user_request_frame", req: &RequestHeader{Client: testClient, Operation: OperationNonReplicated, Request: 1, Code: 38}},
		{name: "ping_request_frame", req: &RequestHeader{Client: testClient, Operation: OperationNonReplicated, Request: 1, Code: 1}},
		{name: "create_stream_request_frame", req: &RequestHeader{Client: testClient, Operation: OperationCreateStream, Request: 1, Session: 5}},
		{name: "create_topic_request_frame", req: &RequestHeader{Client: testClient, Operation: OperationCreateTopic, Request: 2, Session: 5}},
		{name: "send_messages_request_frame", req: &RequestHeader{Client: testClient, Operation: OperationSendMessages, Request: 3, Session: 5}},
		{name: "poll_messages_request_frame", req: &RequestHeader{Client: testClient, Operation: OperationNonReplicated, Request: 3, Session: 5, Code: 100}},
		{name: "store_consumer_offset_request_frame", req: &RequestHeader{Client: testClient, Operation: OperationStoreConsumerOffset, Request: 3, Session: 5}},
		{name: "login_register_reply_frame", rep: &ReplyHeader{Client: testClient, Op: 5, Commit: 5, Operation: OperationRegister}},
		{name: "ping_reply_frame", rep: &ReplyHeader{Client: testClient, Commit: 5, Request: 1, Operation: OperationNonReplicated}},
		{name: "error_reply_frame_status_1009", rep: &ReplyHeader{Client: testClient, Op: 5, Commit: 9, Request: 3, Operation: OperationNonReplicated, Status: StatusStreamIDNotFound}},
		{name: "error_reply_frame_create_stream_exists", rep: &ReplyHeader{Client: testClient, Op: 7, Commit: 7, Request: 1, Operation: OperationCreateStream}},
		{name: "error_reply_frame_unauthenticated", rep: &ReplyHeader{Client: testClient, Request: 1, Operation: OperationNonReplicated, Status: StatusUnauthenticated}},
		{name: "eviction_frame_malformed_login", ev: &EvictionHeader{Client: testClient, Reason: EvictionReasonMalformedLogin}},
		{name: "eviction_frame_invalid_credentials", ev: &EvictionHeader{Client: testClient, Reason: EvictionReasonInvalidCredentials}},
		{name: "eviction_frame_incompatible_protocol", ev: &EvictionHeader{Client: testClient, Reason: EvictionReasonIncompatibleProtocol,
			ServerProtocolVersion: Protocol011, ServerProtocolVersionMin: Protocol011}},
	}
	covered := map[string]bool{}
	for _, tc := range tests {
		covered[tc.name] = true
		t.Run(tc.name, func(t *testing.T) {
			frame := vec(t, tc.name)
			size, cmd, err := PeekFrame(frame, 0)
			if err != nil || int(size) != len(frame) {
				t.Fatalf("PeekFrame = %d, %d, %v; want size %d", size, cmd, err, len(frame))
			}
			bodyLen := len(frame) - HeaderSize
			var enc []byte
			switch {
			case tc.req != nil:
				if cmd != HeaderCommandRequest {
					t.Fatalf("command %d, want request", cmd)
				}
				var h RequestHeader
				if n, err := h.DecodeFrom(frame); err != nil || n != HeaderSize {
					t.Fatalf("DecodeFrom = %d, %v", n, err)
				}
				if h != *tc.req {
					t.Fatalf("decoded %+v\nwant    %+v", h, *tc.req)
				}
				if err := h.Validate(); err != nil {
					t.Fatalf("Validate: %v", err)
				}
				enc = h.AppendTo(nil, bodyLen)
			case tc.rep != nil:
				if cmd != HeaderCommandReply {
					t.Fatalf("command %d, want reply", cmd)
				}
				var h ReplyHeader
				if n, err := h.DecodeFrom(frame); err != nil || n != HeaderSize {
					t.Fatalf("DecodeFrom = %d, %v", n, err)
				}
				if h != *tc.rep {
					t.Fatalf("decoded %+v\nwant    %+v", h, *tc.rep)
				}
				enc = h.AppendTo(nil, bodyLen)
			default:
				if cmd != HeaderCommandEviction {
					t.Fatalf("command %d, want eviction", cmd)
				}
				var h EvictionHeader
				if n, err := h.DecodeFrom(frame); err != nil || n != HeaderSize {
					t.Fatalf("DecodeFrom = %d, %v", n, err)
				}
				if h != *tc.ev {
					t.Fatalf("decoded %+v\nwant    %+v", h, *tc.ev)
				}
				enc = h.AppendTo(nil, bodyLen)
			}
			if !bytes.Equal(enc, frame[:HeaderSize]) {
				t.Fatalf("re-encoded header differs\n got %x\nwant %x", enc, frame[:HeaderSize])
			}
		})
	}
	for _, name := range vectorNames {
		if strings.HasSuffix(name, "_frame") || strings.HasPrefix(name, "eviction_frame_") {
			if !covered[name] {
				t.Errorf("frame vector %q has no test case", name)
			}
		}
	}
}

// TestDecodeReplyVectors runs every reply and eviction vector through the
// §1.6 client algorithm.
func TestDecodeReplyVectors(t *testing.T) {
	tests := []struct {
		name        string
		wantErr     error // matched with errors.Is; nil = success
		wantPayload string
		wantStatus  Status // mapped status of an eviction
		wantResult  *ResultError
	}{
		{name: "login_register_reply_frame", wantPayload: "00000000" + "0500000000000000" + "002c0000" + "0c302e392e302d656467652e35"},
		{name: "ping_reply_frame", wantPayload: ""},
		{name: "error_reply_frame_status_1009", wantErr: StatusStreamIDNotFound},
		{name: "error_reply_frame_unauthenticated", wantErr: StatusUnauthenticated},
		{name: "error_reply_frame_create_stream_exists", wantErr: StatusStreamNameAlreadyExists, wantResult: &ResultError{Code: StatusStreamNameAlreadyExists}},
		{name: "eviction_frame_malformed_login", wantErr: StatusInvalidFormat, wantStatus: StatusInvalidFormat},
		{name: "eviction_frame_invalid_credentials", wantErr: StatusInvalidCredentials, wantStatus: StatusInvalidCredentials},
		{name: "eviction_frame_incompatible_protocol", wantErr: StatusIncompatibleProtocolVersion, wantStatus: StatusIncompatibleProtocolVersion},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			frame := vec(t, tc.name)
			rep, err := DecodeReply(frame)
			if tc.wantErr == nil {
				if err != nil {
					t.Fatalf("DecodeReply: %v", err)
				}
				if got := hex.EncodeToString(rep.Payload); got != tc.wantPayload {
					t.Fatalf("payload %s, want %s", got, tc.wantPayload)
				}
				return
			}
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("error %v, want errors.Is %v", err, tc.wantErr)
			}
			if tc.wantStatus != 0 {
				var ee *EvictionError
				if !errors.As(err, &ee) || rep.Evicted == nil || ee.Status() != tc.wantStatus || *rep.Evicted != ee.Header {
					t.Fatalf("eviction: err %v, reply %+v", err, rep)
				}
			}
			if tc.wantResult != nil {
				var re *ResultError
				if !errors.As(err, &re) || *re != *tc.wantResult {
					t.Fatalf("result error %v, want %+v", err, *tc.wantResult)
				}
			}
		})
	}
	// A request frame is not something a server sends.
	_, err := DecodeReply(vec(t, "ping_request_frame"))
	wantDecodeErr(t, err, wire.ErrUnknownDiscriminant)
}

func replyFrame(h ReplyHeader, body []byte) []byte {
	return append(h.AppendTo(nil, len(body)), body...)
}

func TestDecodeReply(t *testing.T) {
	u32 := func(v ...uint32) []byte {
		var b []byte
		for _, x := range v {
			b = binary.LittleEndian.AppendUint32(b, x)
		}
		return b
	}
	rejection := AppendResultError(nil, StatusStreamIDNotFound)
	tests := []struct {
		name        string
		frame       []byte
		wantErr     error
		wantPayload []byte
	}{
		{name: "send ok", frame: replyFrame(ReplyHeader{Operation: OperationSendMessages}, u32(0)), wantPayload: u32(0)},
		{name: "send empty body", frame: replyFrame(ReplyHeader{Operation: OperationSendMessages}, nil), wantErr: ErrEmptySendReply},
		{name: "send status", frame: replyFrame(ReplyHeader{Operation: OperationSendMessages, Status: 20}, nil), wantErr: Status(20)},
		{name: "register empty body", frame: replyFrame(ReplyHeader{Operation: OperationRegister}, nil), wantPayload: []byte{}},
		{name: "register rejected", frame: replyFrame(ReplyHeader{Operation: OperationRegister}, u32(1, 0, 57)), wantErr: Status(57)},
		{name: "register ok", frame: replyFrame(ReplyHeader{Operation: OperationRegister}, u32(0, 7)), wantPayload: u32(7)},
		{name: "logout not framed", frame: replyFrame(ReplyHeader{Operation: OperationLogout}, u32(1, 0, 9)), wantPayload: u32(1, 0, 9)},
		{name: "nonreplicated not framed", frame: replyFrame(ReplyHeader{Operation: OperationNonReplicated}, u32(1, 0, 9)), wantPayload: u32(1, 0, 9)},
		{name: "delete segments 138 empty", frame: replyFrame(ReplyHeader{Operation: OperationDeleteSegments}, nil), wantPayload: []byte{}},
		{name: "delete segments 68 ok", frame: replyFrame(ReplyHeader{Operation: OperationTruncatePartition}, u32(0)), wantPayload: []byte{}},
		{name: "delete segments 68 rejected", frame: replyFrame(ReplyHeader{Operation: OperationTruncatePartition}, u32(1, 0, 3007)), wantErr: Status(3007)},
		{name: "store offset ok", frame: replyFrame(ReplyHeader{Operation: OperationStoreConsumerOffset}, u32(0)), wantPayload: []byte{}},
		{name: "metadata rejected", frame: replyFrame(ReplyHeader{Operation: OperationCreateTopic}, rejection), wantErr: StatusStreamIDNotFound},
		{name: "metadata empty body", frame: replyFrame(ReplyHeader{Operation: OperationCreateTopic}, nil), wantErr: wire.ErrShortBuffer},
		{name: "metadata short count", frame: replyFrame(ReplyHeader{Operation: OperationDeleteTopic}, []byte{0, 0}), wantErr: wire.ErrShortBuffer},
		{name: "metadata short entries", frame: replyFrame(ReplyHeader{Operation: OperationDeleteTopic}, u32(2, 0, 0, 0)), wantErr: wire.ErrShortBuffer},
		{name: "metadata huge count", frame: replyFrame(ReplyHeader{Operation: OperationDeleteTopic}, u32(0xFFFFFFFF)), wantErr: wire.ErrShortBuffer},
		{name: "status with body", frame: replyFrame(ReplyHeader{Operation: OperationCreateStream, Status: 41}, u32(0)), wantErr: Status(41)},
		{name: "short frame", frame: make([]byte, 255), wantErr: wire.ErrShortBuffer},
		{name: "size mismatch", frame: append(replyFrame(ReplyHeader{Operation: OperationNonReplicated}, nil), 0), wantErr: wire.ErrConstraint},
		{name: "command 0", frame: make([]byte, 256), wantErr: wire.ErrConstraint}, // size 0 is checked first
		{name: "request command", frame: (&RequestHeader{Client: testClient, Operation: OperationNonReplicated}).AppendTo(nil, 0), wantErr: wire.ErrUnknownDiscriminant},
		{name: "eviction window 0", frame: (&EvictionHeader{Client: testClient, Reason: EvictionReasonIncompatibleProtocol}).AppendTo(nil, 0), wantErr: StatusUnauthenticated},
		{name: "eviction window inverted", frame: (&EvictionHeader{Client: testClient, Reason: EvictionReasonIncompatibleProtocol, ServerProtocolVersion: 11264, ServerProtocolVersionMin: 12288}).AppendTo(nil, 0), wantErr: StatusUnauthenticated},
		{name: "eviction unknown reason", frame: (&EvictionHeader{Client: testClient, Reason: 200}).AppendTo(nil, 0), wantErr: StatusInvalidCommand},
		{name: "eviction stale", frame: (&EvictionHeader{Client: testClient, Reason: EvictionReasonStaleClient}).AppendTo(nil, 0), wantErr: StatusStaleClient},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := DecodeReply(tc.frame)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("error %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("DecodeReply: %v", err)
			}
			if !bytes.Equal(rep.Payload, tc.wantPayload) || (rep.Payload == nil) != (tc.wantPayload == nil) {
				t.Fatalf("payload %x, want %x", rep.Payload, tc.wantPayload)
			}
		})
	}
}

func TestEvictionReasonStatus(t *testing.T) {
	want := map[EvictionReason]Status{
		EvictionReasonReserved: 3, EvictionReasonNoSession: 40, EvictionReasonClientReleaseTooLow: 3,
		EvictionReasonClientReleaseTooHigh: 3, EvictionReasonInvalidRequestOperation: 3, EvictionReasonInvalidRequestBody: 3,
		EvictionReasonInvalidRequestBodySize: 3, EvictionReasonSessionTooLow: 40, EvictionReasonSessionReleaseMismatch: 40,
		EvictionReasonInvalidCredentials: 42, EvictionReasonInvalidToken: 53, EvictionReasonUserInactive: 40,
		EvictionReasonSessionError: 40, EvictionReasonStaleClient: 30, EvictionReasonIncompatibleProtocol: 14003,
		EvictionReasonMalformedLogin: 4, 16: 3, 255: 3,
	}
	for r, s := range want {
		e := &EvictionError{Header: EvictionHeader{Reason: r, ServerProtocolVersion: Protocol011, ServerProtocolVersionMin: Protocol011}}
		if got := e.Status(); got != s {
			t.Errorf("reason %d: status %d, want %d", r, got, s)
		}
		if !errors.Is(e, s) || e.Error() == "" {
			t.Errorf("reason %d: errors.Is(%v, %d) false", r, e, s)
		}
	}
}

func TestPeekFrame(t *testing.T) {
	mk := func(size uint32, cmd uint8, n int) []byte {
		b := make([]byte, n)
		if n >= HeaderSize {
			binary.LittleEndian.PutUint32(b[hdrSizeOff:], size)
			b[hdrCommandOff] = cmd
		}
		return b
	}
	tests := []struct {
		name     string
		hdr      []byte
		max      uint32
		wantSize uint32
		wantCmd  HeaderCommand
		wantErr  error
	}{
		{name: "header only", hdr: mk(256, 8, 256), wantSize: 256, wantCmd: HeaderCommandReply},
		{name: "with body", hdr: mk(1000, 5, 256), wantSize: 1000, wantCmd: HeaderCommandRequest},
		{name: "default max", hdr: mk(MaxFrameSize, 13, 256), wantSize: MaxFrameSize, wantCmd: HeaderCommandEviction},
		{name: "above default max", hdr: mk(MaxFrameSize+1, 8, 256), wantErr: wire.ErrTooLarge},
		{name: "custom max", hdr: mk(4096, 8, 256), max: 4096, wantSize: 4096, wantCmd: HeaderCommandReply},
		{name: "above custom max", hdr: mk(4097, 8, 256), max: 4096, wantErr: wire.ErrTooLarge},
		{name: "size below header", hdr: mk(255, 8, 256), wantErr: wire.ErrConstraint},
		{name: "size zero", hdr: mk(0, 8, 256), wantErr: wire.ErrConstraint},
		{name: "command 0", hdr: mk(256, 0, 256), wantErr: wire.ErrUnknownDiscriminant},
		{name: "command 30", hdr: mk(256, 30, 256), wantErr: wire.ErrUnknownDiscriminant},
		{name: "command 29", hdr: mk(256, 29, 256), wantSize: 256, wantCmd: 29},
		{name: "short", hdr: mk(0, 0, 255), wantErr: wire.ErrShortBuffer},
		{name: "nil", hdr: nil, wantErr: wire.ErrShortBuffer},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			size, cmd, err := PeekFrame(tc.hdr, tc.max)
			if tc.wantErr != nil {
				wantDecodeErr(t, err, tc.wantErr)
				return
			}
			if err != nil || size != tc.wantSize || cmd != tc.wantCmd {
				t.Fatalf("PeekFrame = %d, %d, %v; want %d, %d", size, cmd, err, tc.wantSize, tc.wantCmd)
			}
		})
	}
}

func TestReadFrame(t *testing.T) {
	small := replyFrame(ReplyHeader{Request: 1, Operation: OperationNonReplicated}, []byte("hello"))
	bare := (&ReplyHeader{Request: 2}).AppendTo(nil, 0)
	big := replyFrame(ReplyHeader{Request: 3}, bytes.Repeat([]byte{0xAB}, 300<<10))
	truncated := replyFrame(ReplyHeader{}, []byte("hello"))[:260]
	tests := []struct {
		name    string
		stream  []byte
		buf     []byte
		max     uint32
		want    [][]byte
		wantErr error // after the frames in want
	}{
		{name: "empty stream", stream: nil, wantErr: io.EOF},
		{name: "one frame nil buf", stream: small, want: [][]byte{small}, wantErr: io.EOF},
		{name: "back to back", stream: concat(small, bare, big, small), want: [][]byte{small, bare, big, small}, wantErr: io.EOF},
		{name: "reused big buf", stream: concat(big, small), buf: make([]byte, 0, 1<<20), want: [][]byte{big, small}, wantErr: io.EOF},
		{name: "truncated body", stream: truncated, wantErr: io.ErrUnexpectedEOF},
		{name: "truncated header", stream: small[:100], wantErr: io.ErrUnexpectedEOF},
		{name: "too large", stream: small, max: 256, wantErr: wire.ErrTooLarge},
		{name: "bad size", stream: make([]byte, 256), wantErr: wire.ErrConstraint},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := bytes.NewReader(tc.stream)
			buf := tc.buf
			for i, want := range tc.want {
				frame, err := ReadFrame(r, buf, tc.max)
				if err != nil {
					t.Fatalf("frame %d: %v", i, err)
				}
				if !bytes.Equal(frame, want) {
					t.Fatalf("frame %d: %d bytes, want %d", i, len(frame), len(want))
				}
				if tc.buf != nil && cap(tc.buf) >= len(want) && &frame[0] != &tc.buf[:1][0] {
					t.Fatalf("frame %d: buffer not reused", i)
				}
				buf = frame
			}
			_, err := ReadFrame(r, buf, tc.max)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("final error %v, want %v", err, tc.wantErr)
			}
		})
	}
}

func concat(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// TestReadFrameHostileSize: a header claiming 64 MiB followed by a few bytes
// must not cost 64 MiB.
func TestReadFrameHostileSize(t *testing.T) {
	hdr := (&ReplyHeader{}).AppendTo(nil, MaxFrameSize-HeaderSize)
	stream := append(hdr, make([]byte, 1000)...)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := ReadFrame(bytes.NewReader(stream), nil, 0)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("error %v, want io.ErrUnexpectedEOF", err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 4<<20 {
		t.Fatalf("allocated %d bytes for a frame cut short after 1256 bytes", got)
	}
}

func TestSetFrameSize(t *testing.T) {
	frame := (&RequestHeader{Client: testClient, Operation: OperationNonReplicated}).AppendTo(nil, 0)
	frame = append(frame, "body"...)
	SetFrameSize(frame)
	if size, _, err := PeekFrame(frame, 0); err != nil || size != 260 {
		t.Fatalf("size %d, %v; want 260", size, err)
	}
	short := []byte{1, 2, 3}
	SetFrameSize(short) // no-op, no panic
	if !bytes.Equal(short, []byte{1, 2, 3}) {
		t.Fatal("SetFrameSize modified a short slice")
	}
}

func TestRequestHeaderValidate(t *testing.T) {
	tests := []struct {
		name      string
		h         RequestHeader
		wantErr   error
		wantField string
	}{
		{name: "register", h: RequestHeader{Client: testClient, Operation: OperationRegister}},
		{name: "ping before login", h: RequestHeader{Client: testClient, Operation: OperationNonReplicated, Code: 1}},
		{name: "read after login", h: RequestHeader{Client: testClient, Operation: OperationNonReplicated, Session: 5, Request: 3, Code: 100}},
		{name: "metadata", h: RequestHeader{Client: testClient, Operation: OperationCreateStream, Session: 5, Request: 1}},
		{name: "partition", h: RequestHeader{Client: testClient, Operation: OperationSendMessages, Session: 5, Request: 1}},
		{name: "logout", h: RequestHeader{Client: testClient, Operation: OperationLogout, Session: 5, Request: 1}},
		{name: "internal op defined", h: RequestHeader{Client: testClient, Operation: OperationTruncatePartition, Session: 5, Request: 1}},
		{name: "client zero", h: RequestHeader{Operation: OperationRegister}, wantErr: wire.ErrConstraint, wantField: "client"},
		{name: "client hi only", h: RequestHeader{Client: wire.U128{Hi: 1}, Operation: OperationRegister}},
		{name: "operation zero", h: RequestHeader{Client: testClient}, wantErr: wire.ErrUnknownDiscriminant, wantField: "operation"},
		{name: "operation 4", h: RequestHeader{Client: testClient, Operation: 4, Session: 1, Request: 1}, wantErr: wire.ErrUnknownDiscriminant, wantField: "operation"},
		{name: "operation 151", h: RequestHeader{Client: testClient, Operation: 151, Session: 1, Request: 1}, wantErr: wire.ErrUnknownDiscriminant, wantField: "operation"},
		{name: "operation 163", h: RequestHeader{Client: testClient, Operation: 163, Session: 1, Request: 1}, wantErr: wire.ErrUnknownDiscriminant, wantField: "operation"},
		{name: "register with session", h: RequestHeader{Client: testClient, Operation: OperationRegister, Session: 5}, wantErr: wire.ErrConstraint, wantField: "session"},
		{name: "register with request", h: RequestHeader{Client: testClient, Operation: OperationRegister, Request: 1}, wantErr: wire.ErrConstraint, wantField: "request"},
		{name: "metadata without session", h: RequestHeader{Client: testClient, Operation: OperationCreateStream, Request: 1}, wantErr: wire.ErrConstraint, wantField: "session"},
		{name: "send without request", h: RequestHeader{Client: testClient, Operation: OperationSendMessages, Session: 5}, wantErr: wire.ErrConstraint, wantField: "request"},
		{name: "logout without session", h: RequestHeader{Client: testClient, Operation: OperationLogout, Request: 1}, wantErr: wire.ErrConstraint, wantField: "session"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.h.Validate()
			if tc.wantErr == nil {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			wantDecodeErr(t, err, tc.wantErr)
			var de *wire.DecodeError
			errors.As(err, &de)
			if de.Field != tc.wantField {
				t.Fatalf("field %q, want %q", de.Field, tc.wantField)
			}
		})
	}
}

func TestHeaderRoundTrip(t *testing.T) {
	req := RequestHeader{
		Cluster: wire.U128{Lo: 1, Hi: 2}, View: 3, Release: 4, Replica: 5, Client: wire.U128{Lo: 6, Hi: 7},
		RequestChecksum: wire.U128{Lo: 8, Hi: 9}, Timestamp: 10, Request: 11, Operation: OperationJoinConsumerGroup,
		Session: 12, UserID: 13, Code: 14,
	}
	rep := ReplyHeader{
		Cluster: wire.U128{Lo: 1, Hi: 2}, View: 3, Release: 4, Replica: 5, RequestChecksum: wire.U128{Lo: 6, Hi: 7},
		Context: wire.U128{Lo: 8, Hi: 9}, Client: wire.U128{Lo: 10, Hi: 11}, Op: 12, Commit: 13, Timestamp: 14,
		Request: 15, Operation: OperationDeleteSegments, Status: 16,
	}
	ev := EvictionHeader{Client: wire.U128{Lo: 1, Hi: 2}, ServerProtocolVersion: 3, ServerProtocolVersionMin: 4, Reason: 5}
	prefix := []byte("prefix")

	b := req.AppendTo(bytes.Clone(prefix), 44)
	var req2 RequestHeader
	if _, err := req2.DecodeFrom(b[len(prefix):]); err != nil || req2 != req || !bytes.Equal(b[:len(prefix)], prefix) {
		t.Fatalf("request round trip: %+v, %v", req2, err)
	}
	if size, _, _ := PeekFrame(b[len(prefix):], 0); size != 300 {
		t.Fatalf("request size %d, want 300", size)
	}
	b = rep.AppendTo(nil, -5)
	var rep2 ReplyHeader
	if _, err := rep2.DecodeFrom(b); err != nil || rep2 != rep {
		t.Fatalf("reply round trip: %+v, %v", rep2, err)
	}
	if size, _, _ := PeekFrame(b, 0); size != 256 {
		t.Fatalf("negative bodyLen: size %d, want 256", size)
	}
	b = ev.AppendTo(nil, 0)
	var ev2 EvictionHeader
	if _, err := ev2.DecodeFrom(b); err != nil || ev2 != ev {
		t.Fatalf("eviction round trip: %+v, %v", ev2, err)
	}
	// Each decoder refuses the other commands and short input.
	if _, err := req2.DecodeFrom(b); !errors.Is(err, wire.ErrUnknownDiscriminant) {
		t.Fatalf("request decoder on eviction: %v", err)
	}
	if _, err := rep2.DecodeFrom(b); !errors.Is(err, wire.ErrUnknownDiscriminant) {
		t.Fatalf("reply decoder on eviction: %v", err)
	}
	if _, err := ev2.DecodeFrom(b[:255]); !errors.Is(err, wire.ErrShortBuffer) {
		t.Fatalf("eviction decoder on short input: %v", err)
	}
}

func TestHeaderAppendAllocs(t *testing.T) {
	h := RequestHeader{Client: testClient, Operation: OperationSendMessages, Session: 5, Request: 3}
	buf := make([]byte, 0, 512)
	allocs := testing.AllocsPerRun(100, func() {
		buf = h.AppendTo(buf[:0], 100)
		SetFrameSize(buf)
	})
	if allocs != 0 {
		t.Fatalf("AppendTo allocates %.1f times", allocs)
	}
}

func seedFrames(f *testing.F) {
	for _, name := range vectorNames {
		if strings.Contains(name, "_frame") {
			f.Add(vectorsByName[name])
		}
	}
	f.Add([]byte{})
	f.Add(make([]byte, 256))
}

// FuzzFrameHeaders: the three header decoders never panic, consume exactly
// 256 bytes on success, and decode(encode(decode(x))) == decode(x).
func FuzzFrameHeaders(f *testing.F) {
	vectors(f)
	seedFrames(f)
	f.Fuzz(func(t *testing.T, in []byte) {
		size, _, perr := PeekFrame(in, 0)
		bodyLen := 0
		if perr == nil {
			bodyLen = int(size) - HeaderSize
		}
		var req, req2 RequestHeader
		if n, err := req.DecodeFrom(in); err == nil {
			if n != HeaderSize || n > len(in) {
				t.Fatalf("consumed %d", n)
			}
			enc := req.AppendTo(nil, bodyLen)
			if _, err := req2.DecodeFrom(enc); err != nil || req2 != req {
				t.Fatalf("request not stable: %v", err)
			}
			_ = req.Validate()
		}
		var rep, rep2 ReplyHeader
		if n, err := rep.DecodeFrom(in); err == nil {
			if n != HeaderSize {
				t.Fatalf("consumed %d", n)
			}
			if _, err := rep2.DecodeFrom(rep.AppendTo(nil, bodyLen)); err != nil || rep2 != rep {
				t.Fatalf("reply not stable: %v", err)
			}
		}
		var ev, ev2 EvictionHeader
		if n, err := ev.DecodeFrom(in); err == nil {
			if n != HeaderSize {
				t.Fatalf("consumed %d", n)
			}
			if _, err := ev2.DecodeFrom(ev.AppendTo(nil, bodyLen)); err != nil || ev2 != ev {
				t.Fatalf("eviction not stable: %v", err)
			}
		}
	})
}

// FuzzDecodeReply: DecodeReply never panics, its payload lies inside the
// frame, and re-encoding a decoded reply decodes to the same outcome.
func FuzzDecodeReply(f *testing.F) {
	vectors(f)
	seedFrames(f)
	f.Add(replyFrame(ReplyHeader{Operation: OperationCreateStream}, AppendResultError(nil, 1012)))
	f.Add(replyFrame(ReplyHeader{Operation: OperationSendMessages}, nil))
	f.Fuzz(func(t *testing.T, in []byte) {
		rep, err := DecodeReply(in)
		if len(rep.Payload) > max(0, len(in)-HeaderSize) {
			t.Fatalf("payload of %d bytes from a %d-byte frame", len(rep.Payload), len(in))
		}
		if rep.Evicted != nil || len(in) < HeaderSize || in[hdrCommandOff] != uint8(HeaderCommandReply) {
			return
		}
		var de *wire.DecodeError
		if errors.As(err, &de) && de.Message == "reply" {
			return // the frame itself was rejected
		}
		again := replyFrame(rep.Header, in[HeaderSize:])
		rep2, err2 := DecodeReply(again)
		if rep2.Header != rep.Header || !bytes.Equal(rep2.Payload, rep.Payload) || (err == nil) != (err2 == nil) {
			t.Fatalf("re-encoded reply decodes differently: %v / %v", err, err2)
		}
		if err != nil && err.Error() != err2.Error() {
			t.Fatalf("errors differ: %v / %v", err, err2)
		}
	})
}
