package iggy

import (
	"encoding/binary"
	"errors"
	"io"
	"strconv"

	"github.com/kafka-iggy/kafka-iggy/codec/wire"
)

// Byte offsets of the 256-byte frame headers (§1.3, §1.5, §1.7), bound to
// the generated layout constants. The common prefix (bytes 0..128) is the
// same in all three headers.
const (
	hdrClusterOff = RequestHeaderClusterOffset // u128, request and reply
	hdrSizeOff    = RequestHeaderSizeOffset    // u32, all headers: 256 + body length
	hdrViewOff    = RequestHeaderViewOffset    // u32, request and reply
	hdrReleaseOff = RequestHeaderReleaseOffset // u32, request and reply
	hdrCommandOff = RequestHeaderCommandOffset // u8, all headers
	hdrReplicaOff = RequestHeaderReplicaOffset // u8, request and reply

	hdrReqClientOff          = RequestHeaderClientOffset               // u128
	hdrReqRequestChecksumOff = RequestHeaderRequestChecksumOffset      // u128
	hdrReqTimestampOff       = RequestHeaderTimestampOffset            // u64
	hdrReqRequestOff         = RequestHeaderRequestOffset              // u64
	hdrReqOperationOff       = RequestHeaderOperationOffset            // u8
	hdrReqSessionOff         = RequestHeaderSessionOffset              // u64
	hdrReqUserIDOff          = RequestHeaderUserIDOffset               // u32
	hdrReqCodeOff            = RequestHeaderCodeOffset                 // u32, reserved[0..4], only for operation 2
	hdrReqIncarnationOff     = RequestHeaderPartitionIncarnationOffset // u64, 0.12 fence
	hdrReqOwnerGenOff        = RequestHeaderOwnerGenerationOffset      // u64, 0.12 fence
	hdrReqMinMetadataOpOff   = RequestHeaderMinimumMetadataOpOffset    // u64, 0.12 fence
	hdrRepIncarnationOff     = ReplyHeaderPartitionIncarnationOffset   // u64, 0.12 echo

	hdrRepRequestChecksumOff = ReplyHeaderRequestChecksumOffset // u128
	hdrRepContextOff         = ReplyHeaderContextOffset         // u128
	hdrRepClientOff          = ReplyHeaderClientOffset          // u128
	hdrRepOpOff              = ReplyHeaderOpOffset              // u64
	hdrRepCommitOff          = ReplyHeaderCommitOffset          // u64
	hdrRepTimestampOff       = ReplyHeaderTimestampOffset       // u64
	hdrRepRequestOff         = ReplyHeaderRequestOffset         // u64
	hdrRepOperationOff       = ReplyHeaderOperationOffset       // u8
	hdrRepStatusOff          = ReplyHeaderStatusOffset          // u32

	hdrEvClientOff           = EvictionHeaderClientOffset                   // u128
	hdrEvServerVersionOff    = EvictionHeaderServerProtocolVersionOffset    // u32
	hdrEvServerVersionMinOff = EvictionHeaderServerProtocolVersionMinOffset // u32
	hdrEvReasonOff           = EvictionHeaderReasonOffset                   // u8

	hdrMaxDefinedCommand = 29 // highest defined command discriminant (§1.2)
)

// The common prefix must agree across the three layouts: each line fails to
// compile (a negative constant converted to uint) if two offsets differ.
const (
	_ = uint(ReplyHeaderSizeOffset-RequestHeaderSizeOffset) + uint(RequestHeaderSizeOffset-ReplyHeaderSizeOffset)
	_ = uint(EvictionHeaderSizeOffset-RequestHeaderSizeOffset) + uint(RequestHeaderSizeOffset-EvictionHeaderSizeOffset)
	_ = uint(ReplyHeaderCommandOffset-RequestHeaderCommandOffset) + uint(RequestHeaderCommandOffset-ReplyHeaderCommandOffset)
	_ = uint(EvictionHeaderCommandOffset-RequestHeaderCommandOffset) + uint(RequestHeaderCommandOffset-EvictionHeaderCommandOffset)
)

const (
	// HeaderSize is the size of every frame header; a frame is a header and
	// a body of size-256 bytes (§1.2).
	HeaderSize = LimitHeaderSize
	// MaxFrameSize is the default upper bound of a frame's size field, header
	// included (64 MiB, §1.2, §4.7).
	MaxFrameSize = LimitMaxFrameSize
)

// ErrEmptySendReply is returned by DecodeReply for a SendMessages reply with
// status 0 and an empty body: the server answers a write on a dead session
// that way (§1.6 step 6).
var ErrEmptySendReply = errors.New("iggy: empty SEND_MESSAGES reply (session lost?)")

// zeroHeader is appended and then patched by the header encoders.
var zeroHeader [HeaderSize]byte

// RequestHeader is the client-to-server header, command 5 (§1.3). Fields a
// client always sends as zero (checksums, padding, reserved) are not kept.
type RequestHeader struct {
	Cluster         wire.U128 // offset 32; 0 from clients
	View            uint32    // offset 52; 0 from clients
	Release         uint32    // offset 56; 0 from clients
	Replica         uint8     // offset 61; 0 from clients
	Client          wire.U128 // offset 128; client identity, nonzero (§1.8.1)
	RequestChecksum wire.U128 // offset 144; 0 or XXH3-64(body) zero-extended (§1.8.4)
	Timestamp       uint64    // offset 160; informational, echoed in the reply
	Request         uint64    // offset 168; request number (§1.8.3)
	Operation       Operation // offset 176 (§1.4)
	Session         uint64    // offset 184; 0 before login and on Register (§1.8.2)
	UserID          uint32    // offset 192; ignored by the server
	Code            uint32    // offset 196; the command code, only for operation 2

	// The partition fence of 0.12 (zero at 0.11, where the bytes are reserved).
	PartitionIncarnation uint64 // offset 200
	OwnerGeneration      uint64 // offset 208
	MinimumMetadataOp    uint64 // offset 216
}

// AppendTo appends the 256-byte header of a frame whose body is bodyLen
// bytes: size = 256+bodyLen, command 5, the fields of h, zeros elsewhere. A
// negative bodyLen is treated as 0.
func (h *RequestHeader) AppendTo(dst []byte, bodyLen int) []byte {
	dst, b := appendHeader(dst, bodyLen, HeaderCommandRequest)
	putU128(b[hdrClusterOff:], h.Cluster)
	binary.LittleEndian.PutUint32(b[hdrViewOff:], h.View)
	binary.LittleEndian.PutUint32(b[hdrReleaseOff:], h.Release)
	b[hdrReplicaOff] = h.Replica
	putU128(b[hdrReqClientOff:], h.Client)
	putU128(b[hdrReqRequestChecksumOff:], h.RequestChecksum)
	binary.LittleEndian.PutUint64(b[hdrReqTimestampOff:], h.Timestamp)
	binary.LittleEndian.PutUint64(b[hdrReqRequestOff:], h.Request)
	b[hdrReqOperationOff] = uint8(h.Operation)
	binary.LittleEndian.PutUint64(b[hdrReqSessionOff:], h.Session)
	binary.LittleEndian.PutUint32(b[hdrReqUserIDOff:], h.UserID)
	binary.LittleEndian.PutUint32(b[hdrReqCodeOff:], h.Code)
	binary.LittleEndian.PutUint64(b[hdrReqIncarnationOff:], h.PartitionIncarnation)
	binary.LittleEndian.PutUint64(b[hdrReqOwnerGenOff:], h.OwnerGeneration)
	binary.LittleEndian.PutUint64(b[hdrReqMinMetadataOpOff:], h.MinimumMetadataOp)
	return dst
}

// DecodeFrom decodes the header at the start of src, which must hold at least
// 256 bytes with command 5 at byte 60. It does not look at the size field
// (PeekFrame does) and does not apply the server's rules (Validate does). It
// returns 256.
func (h *RequestHeader) DecodeFrom(src []byte) (int, error) {
	if err := checkHeader(src, HeaderCommandRequest, "request_header"); err != nil {
		return 0, err
	}
	*h = RequestHeader{
		Cluster:         getU128(src[hdrClusterOff:]),
		View:            binary.LittleEndian.Uint32(src[hdrViewOff:]),
		Release:         binary.LittleEndian.Uint32(src[hdrReleaseOff:]),
		Replica:         src[hdrReplicaOff],
		Client:          getU128(src[hdrReqClientOff:]),
		RequestChecksum: getU128(src[hdrReqRequestChecksumOff:]),
		Timestamp:       binary.LittleEndian.Uint64(src[hdrReqTimestampOff:]),
		Request:         binary.LittleEndian.Uint64(src[hdrReqRequestOff:]),
		Operation:       Operation(src[hdrReqOperationOff]),
		Session:         binary.LittleEndian.Uint64(src[hdrReqSessionOff:]),
		UserID:          binary.LittleEndian.Uint32(src[hdrReqUserIDOff:]),
		Code:            binary.LittleEndian.Uint32(src[hdrReqCodeOff:]),

		PartitionIncarnation: binary.LittleEndian.Uint64(src[hdrReqIncarnationOff:]),
		OwnerGeneration:      binary.LittleEndian.Uint64(src[hdrReqOwnerGenOff:]),
		MinimumMetadataOp:    binary.LittleEndian.Uint64(src[hdrReqMinMetadataOpOff:]),
	}
	return HeaderSize, nil
}

// Validate applies the server's header rules of §1.3 (a real server drops a
// request that breaks one without replying). The error is a *wire.DecodeError
// naming the field and its header offset, wrapping wire.ErrConstraint, or
// wire.ErrUnknownDiscriminant for an undefined operation.
func (h *RequestHeader) Validate() error {
	fail := func(field string, off int, err error, detail string) error {
		return &wire.DecodeError{Message: "request_header", Field: field, Offset: off, Err: err, Detail: detail}
	}
	switch {
	case h.Client.IsZero():
		return fail("client", hdrReqClientOff, wire.ErrConstraint, "must be nonzero")
	case !h.Operation.Valid():
		return fail("operation", hdrReqOperationOff, wire.ErrUnknownDiscriminant, "value "+strconv.Itoa(int(h.Operation)))
	case h.Operation == OperationRegister && h.Session != 0:
		return fail("session", hdrReqSessionOff, wire.ErrConstraint, "must be 0 for Register")
	case h.Operation == OperationRegister && h.Request != 0:
		return fail("request", hdrReqRequestOff, wire.ErrConstraint, "must be 0 for Register")
	case h.Operation == OperationRegister || h.Operation == OperationNonReplicated:
		return nil
	case h.Session == 0:
		return fail("session", hdrReqSessionOff, wire.ErrConstraint, "must be nonzero for operation "+strconv.Itoa(int(h.Operation)))
	case h.Request == 0:
		return fail("request", hdrReqRequestOff, wire.ErrConstraint, "must be nonzero for operation "+strconv.Itoa(int(h.Operation)))
	}
	return nil
}

// ReplyHeader is the server-to-client header, command 8 (§1.5).
type ReplyHeader struct {
	Cluster         wire.U128 // offset 32; ignore
	View            uint32    // offset 52; ignore
	Release         uint32    // offset 56; ignore
	Replica         uint8     // offset 61; ignore
	RequestChecksum wire.U128 // offset 128; echo of the request's
	Context         wire.U128 // offset 144; 0
	Client          wire.U128 // offset 160; informational only
	Op              uint64    // offset 176; informational (log position or session)
	Commit          uint64    // offset 184; informational
	Timestamp       uint64    // offset 192; echo of the request's
	Request         uint64    // offset 200; echo of the request's request number
	Operation       Operation // offset 208; echo of the request's operation (§3.9)
	Status          Status    // offset 216; 0, or an error code and an empty body

	PartitionIncarnation uint64 // offset 224; 0.12: echo of the request's (zero at 0.11)
}

// AppendTo appends the 256-byte header of a reply whose body is bodyLen
// bytes: size = 256+bodyLen, command 8, the fields of h, zeros elsewhere. A
// negative bodyLen is treated as 0.
func (h *ReplyHeader) AppendTo(dst []byte, bodyLen int) []byte {
	dst, b := appendHeader(dst, bodyLen, HeaderCommandReply)
	putU128(b[hdrClusterOff:], h.Cluster)
	binary.LittleEndian.PutUint32(b[hdrViewOff:], h.View)
	binary.LittleEndian.PutUint32(b[hdrReleaseOff:], h.Release)
	b[hdrReplicaOff] = h.Replica
	putU128(b[hdrRepRequestChecksumOff:], h.RequestChecksum)
	putU128(b[hdrRepContextOff:], h.Context)
	putU128(b[hdrRepClientOff:], h.Client)
	binary.LittleEndian.PutUint64(b[hdrRepOpOff:], h.Op)
	binary.LittleEndian.PutUint64(b[hdrRepCommitOff:], h.Commit)
	binary.LittleEndian.PutUint64(b[hdrRepTimestampOff:], h.Timestamp)
	binary.LittleEndian.PutUint64(b[hdrRepRequestOff:], h.Request)
	b[hdrRepOperationOff] = uint8(h.Operation)
	binary.LittleEndian.PutUint32(b[hdrRepStatusOff:], uint32(h.Status))
	binary.LittleEndian.PutUint64(b[hdrRepIncarnationOff:], h.PartitionIncarnation)
	return dst
}

// DecodeFrom decodes the header at the start of src, which must hold at least
// 256 bytes with command 8 at byte 60. It does not look at the size field.
// It returns 256.
func (h *ReplyHeader) DecodeFrom(src []byte) (int, error) {
	if err := checkHeader(src, HeaderCommandReply, "reply_header"); err != nil {
		return 0, err
	}
	*h = ReplyHeader{
		Cluster:              getU128(src[hdrClusterOff:]),
		View:                 binary.LittleEndian.Uint32(src[hdrViewOff:]),
		Release:              binary.LittleEndian.Uint32(src[hdrReleaseOff:]),
		Replica:              src[hdrReplicaOff],
		RequestChecksum:      getU128(src[hdrRepRequestChecksumOff:]),
		Context:              getU128(src[hdrRepContextOff:]),
		Client:               getU128(src[hdrRepClientOff:]),
		Op:                   binary.LittleEndian.Uint64(src[hdrRepOpOff:]),
		Commit:               binary.LittleEndian.Uint64(src[hdrRepCommitOff:]),
		Timestamp:            binary.LittleEndian.Uint64(src[hdrRepTimestampOff:]),
		Request:              binary.LittleEndian.Uint64(src[hdrRepRequestOff:]),
		Operation:            Operation(src[hdrRepOperationOff]),
		Status:               Status(binary.LittleEndian.Uint32(src[hdrRepStatusOff:])),
		PartitionIncarnation: binary.LittleEndian.Uint64(src[hdrRepIncarnationOff:]),
	}
	return HeaderSize, nil
}

// EvictionHeader is the header-only, session-terminal Eviction frame,
// command 13 (§1.7).
type EvictionHeader struct {
	Client                   wire.U128       // offset 128; the evicted session's client id
	ServerProtocolVersion    ProtocolVersion // offset 144; highest accepted (reason 14 only)
	ServerProtocolVersionMin ProtocolVersion // offset 148; lowest accepted (reason 14 only)
	Reason                   EvictionReason  // offset 255
}

// AppendTo appends a 256-byte eviction header: size = 256+bodyLen (an
// eviction has no body, so callers pass 0), command 13, the fields of h,
// zeros elsewhere.
func (h *EvictionHeader) AppendTo(dst []byte, bodyLen int) []byte {
	dst, b := appendHeader(dst, bodyLen, HeaderCommandEviction)
	putU128(b[hdrEvClientOff:], h.Client)
	binary.LittleEndian.PutUint32(b[hdrEvServerVersionOff:], uint32(h.ServerProtocolVersion))
	binary.LittleEndian.PutUint32(b[hdrEvServerVersionMinOff:], uint32(h.ServerProtocolVersionMin))
	b[hdrEvReasonOff] = uint8(h.Reason)
	return dst
}

// DecodeFrom decodes the header at the start of src, which must hold at least
// 256 bytes with command 13 at byte 60. Cluster, view and replica values a
// server may put in the common prefix are ignored. It returns 256.
func (h *EvictionHeader) DecodeFrom(src []byte) (int, error) {
	if err := checkHeader(src, HeaderCommandEviction, "eviction_header"); err != nil {
		return 0, err
	}
	*h = EvictionHeader{
		Client:                   getU128(src[hdrEvClientOff:]),
		ServerProtocolVersion:    ProtocolVersion(binary.LittleEndian.Uint32(src[hdrEvServerVersionOff:])),
		ServerProtocolVersionMin: ProtocolVersion(binary.LittleEndian.Uint32(src[hdrEvServerVersionMinOff:])),
		Reason:                   EvictionReason(src[hdrEvReasonOff]),
	}
	return HeaderSize, nil
}

// EvictionError is the error DecodeReply returns for an Eviction frame. It
// matches errors.Is(err, s) for the Status s it maps to.
type EvictionError struct {
	Header EvictionHeader
}

// Status maps the reason to the client-side error code of §1.7, including the
// rule that an IncompatibleProtocol eviction with an empty or inverted
// version window maps to Unauthenticated.
func (e *EvictionError) Status() Status {
	if e.Header.Reason == EvictionReasonIncompatibleProtocol &&
		(e.Header.ServerProtocolVersion == 0 || e.Header.ServerProtocolVersionMin > e.Header.ServerProtocolVersion) {
		return StatusUnauthenticated
	}
	return e.Header.Reason.Status()
}

// Error describes the eviction.
func (e *EvictionError) Error() string {
	s := "iggy: session evicted (reason " + strconv.Itoa(int(e.Header.Reason))
	if e.Header.Reason == EvictionReasonIncompatibleProtocol {
		s += ", server accepts " + e.Header.ServerProtocolVersionMin.String() + ".." + e.Header.ServerProtocolVersion.String()
	}
	return s + "): " + e.Status().Error()
}

// Unwrap returns the mapped Status, so errors.Is and errors.As see it.
func (e *EvictionError) Unwrap() error { return e.Status() }

// Reply is a decoded server frame (§1.6). Payload aliases the frame.
type Reply struct {
	Header  ReplyHeader     // zero for an eviction
	Evicted *EvictionHeader // non-nil for an Eviction frame
	Payload []byte          // the typed payload after any result section
}

// DecodeReply decodes one complete frame received by a client, following the
// client algorithm of §1.6:
//
//   - Eviction (command 13): Reply.Evicted is set and the error is an
//     *EvictionError.
//   - Any command other than 8 or 13, a size field that does not equal
//     len(frame), or a frame outside 256..MaxFrameSize: a *wire.DecodeError
//     (a protocol error; drop the connection).
//   - Nonzero status: the error is that Status (the body is ignored).
//   - Result-framed operation (or Register with a non-empty body): the result
//     section is parsed as by ParseResult; a rejection is a *ResultError, a
//     truncated section a *wire.DecodeError.
//   - SendMessages with status 0 and an empty body: ErrEmptySendReply.
//
// Reply.Header is filled whenever the frame is a reply, also on error. The
// caller checks the echoed Request against the request in flight (step 3).
func DecodeReply(frame []byte) (Reply, error) {
	var rep Reply
	if len(frame) < HeaderSize {
		return rep, &wire.DecodeError{Message: "reply", Field: "header", Need: HeaderSize, Have: len(frame), Err: wire.ErrShortBuffer}
	}
	size := binary.LittleEndian.Uint32(frame[hdrSizeOff:])
	if size < HeaderSize || size > MaxFrameSize || uint64(size) != uint64(len(frame)) {
		return rep, &wire.DecodeError{Message: "reply", Field: "size", Offset: hdrSizeOff, Err: wire.ErrConstraint,
			Detail: "size " + strconv.FormatUint(uint64(size), 10) + " for a frame of " + strconv.Itoa(len(frame)) + " bytes"}
	}
	switch HeaderCommand(frame[hdrCommandOff]) {
	case HeaderCommandEviction:
		ev := new(EvictionHeader)
		if _, err := ev.DecodeFrom(frame); err != nil {
			return rep, err
		}
		rep.Evicted = ev
		return rep, &EvictionError{Header: *ev}
	case HeaderCommandReply:
	default:
		return rep, &wire.DecodeError{Message: "reply", Field: "command", Offset: hdrCommandOff, Err: wire.ErrUnknownDiscriminant,
			Detail: "command " + strconv.Itoa(int(frame[hdrCommandOff])) + " from a server"}
	}
	if _, err := rep.Header.DecodeFrom(frame); err != nil {
		return rep, err
	}
	if rep.Header.Status != 0 {
		return rep, rep.Header.Status
	}
	body := frame[HeaderSize:len(frame):len(frame)]
	op := rep.Header.Operation
	switch {
	case op.ResultFramed() || (op.ResultFramedWhenBody() && len(body) > 0):
		payload, err := ParseResult(body)
		if err != nil {
			return rep, err
		}
		rep.Payload = payload
	case op == OperationSendMessages && len(body) == 0:
		return rep, ErrEmptySendReply
	default:
		rep.Payload = body
	}
	return rep, nil
}

// PeekFrame reads the size and command of the frame whose header starts hdr
// (at least 256 bytes) and checks 256 <= size <= max (max 0 means
// MaxFrameSize). It rejects command 0 and commands above 29 (undefined, §1.2)
// with wire.ErrUnknownDiscriminant; which defined commands a peer may send is
// the caller's decision. A size below 256 wraps wire.ErrConstraint, above max
// wire.ErrTooLarge.
func PeekFrame(hdr []byte, max uint32) (size uint32, cmd HeaderCommand, err error) {
	if len(hdr) < HeaderSize {
		return 0, 0, &wire.DecodeError{Message: "frame", Field: "header", Need: HeaderSize, Have: len(hdr), Err: wire.ErrShortBuffer}
	}
	if max == 0 {
		max = MaxFrameSize
	}
	size = binary.LittleEndian.Uint32(hdr[hdrSizeOff:])
	cmd = HeaderCommand(hdr[hdrCommandOff])
	switch {
	case size < HeaderSize:
		return size, cmd, &wire.DecodeError{Message: "frame", Field: "size", Offset: hdrSizeOff, Err: wire.ErrConstraint,
			Detail: "size " + strconv.FormatUint(uint64(size), 10) + " below 256"}
	case size > max:
		return size, cmd, &wire.DecodeError{Message: "frame", Field: "size", Offset: hdrSizeOff, Err: wire.ErrTooLarge,
			Detail: "size " + strconv.FormatUint(uint64(size), 10) + " above " + strconv.FormatUint(uint64(max), 10)}
	case cmd == 0 || cmd > hdrMaxDefinedCommand:
		return size, cmd, &wire.DecodeError{Message: "frame", Field: "command", Offset: hdrCommandOff, Err: wire.ErrUnknownDiscriminant,
			Detail: "command " + strconv.Itoa(int(cmd))}
	}
	return size, cmd, nil
}

// readFrameStep is the first capacity ReadFrame grows an undersized buffer
// to; it then doubles. Growing with the bytes actually received keeps a peer
// that announces a large frame and sends little from costing the full size.
const readFrameStep = 64 << 10

// ReadFrame reads one whole frame from r into buf's storage and returns it
// (header and body). When buf's capacity is too small it grows it
// step by step as bytes arrive, never beyond the validated size. max is as
// for PeekFrame. A clean end of stream before the first byte returns io.EOF;
// a frame cut short returns io.ErrUnexpectedEOF; a bad header returns the
// PeekFrame error.
func ReadFrame(r io.Reader, buf []byte, max uint32) ([]byte, error) {
	if cap(buf) < HeaderSize {
		buf = make([]byte, HeaderSize)
	}
	buf = buf[:HeaderSize]
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, err
	}
	size, _, err := PeekFrame(buf, max)
	if err != nil {
		return nil, err
	}
	total := int(size)
	have := HeaderSize
	for have < total {
		if cap(buf) == have {
			next := 2 * have
			if next < readFrameStep {
				next = readFrameStep
			}
			if next > total {
				next = total
			}
			grown := make([]byte, have, next)
			copy(grown, buf)
			buf = grown
		}
		end := min(cap(buf), total)
		buf = buf[:end]
		if _, err := io.ReadFull(r, buf[have:end]); err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		have = end
	}
	return buf[:total], nil
}

// SetFrameSize writes len(frame) into the size field (offset 48) of the frame
// header at the start of frame, for encoders that append the body after the
// header. It does nothing when frame is shorter than a header.
func SetFrameSize(frame []byte) {
	if len(frame) < HeaderSize {
		return
	}
	binary.LittleEndian.PutUint32(frame[hdrSizeOff:], uint32(len(frame)))
}

func appendHeader(dst []byte, bodyLen int, cmd HeaderCommand) ([]byte, []byte) {
	if bodyLen < 0 {
		bodyLen = 0
	}
	dst = append(dst, zeroHeader[:]...)
	b := dst[len(dst)-HeaderSize:]
	binary.LittleEndian.PutUint32(b[hdrSizeOff:], uint32(HeaderSize+bodyLen))
	b[hdrCommandOff] = uint8(cmd)
	return dst, b
}

func checkHeader(src []byte, want HeaderCommand, msg string) error {
	if len(src) < HeaderSize {
		return &wire.DecodeError{Message: msg, Need: HeaderSize, Have: len(src), Err: wire.ErrShortBuffer}
	}
	if got := HeaderCommand(src[hdrCommandOff]); got != want {
		return &wire.DecodeError{Message: msg, Field: "command", Offset: hdrCommandOff, Err: wire.ErrUnknownDiscriminant,
			Detail: "command " + strconv.Itoa(int(got)) + ", want " + strconv.Itoa(int(want))}
	}
	return nil
}

func putU128(b []byte, v wire.U128) {
	binary.LittleEndian.PutUint64(b, v.Lo)
	binary.LittleEndian.PutUint64(b[8:], v.Hi)
}

func getU128(b []byte) wire.U128 {
	return wire.U128{Lo: binary.LittleEndian.Uint64(b), Hi: binary.LittleEndian.Uint64(b[8:])}
}
