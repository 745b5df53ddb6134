package cluster

// The peer-link wire format. Every frame is
//
//	size u32 (bytes after this field, at most peers.max_frame_bytes)
//	kind u8
//	id   u64 (request id; a response carries its request's id)
//	body
//
// little-endian, built from codec/wire's primitives. Strings are u32
// length + bytes; nullable strings and bytes are i32 length (-1: null) +
// bytes; lists are a u32 count. Encoders append; the decoder is
// codec/wire's sticky Reader: the first problem is kept as a
// *wire.DecodeError (message, field, offset) and every later read returns
// zero values, so a body is decoded straight through and checked once at
// the end.

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/kafka-iggy/kafka-iggy/codec/wire"
)

// Frame kinds of the handshake; the request kinds are the peer calls'
// (calls.go). A response is its request's kind with kindResponse set.
const (
	kindChallenge uint8 = 1 // server -> client: nonce
	kindHello     uint8 = 2 // client -> server: node, domain, nonce, proof
	kindWelcome   uint8 = 3 // server -> client: proof of the server
	// kindPart carries a part of a message larger than one frame: the
	// parts of one message share its id and travel in order, each of kind
	// kindPart (kindPart|kindResponse for an answer), and the message's
	// last part is a frame of its own kind. The receiver joins them, at
	// most peers.max_message_bytes per connection at once.
	kindPart uint8 = 70

	kindResponse      uint8  = 0x80
	handshakeMaxFrame        = 4096
	nonceSize                = 32
	macSize                  = 32
	protocolVersion   uint16 = 4 // 2: little-endian frames (codec/wire); 3: the OffsetCommit check of both protocols is kind 60 (kinds 22 and 24 gone); 4: cg_describe's members say whether they are classic
)

// frameMessage names the frame layer in decoding errors.
const frameMessage = "peer.frame"

// frameErr is a malformed-frame error outside a body (size, kind).
func frameErr(field, detail string, sentinel error) error {
	return &wire.DecodeError{Message: frameMessage, Field: field, Err: sentinel, Detail: detail}
}

// malformed reports whether err is a decoding failure of a peer frame.
func malformed(err error) bool {
	var de *wire.DecodeError
	return errors.As(err, &de)
}

// appendFrame appends a frame: header and body.
func appendFrame(b []byte, kind uint8, id uint64, body []byte) []byte {
	b = wire.AppendU32LE(b, uint32(1+8+len(body)))
	b = wire.AppendU8(b, kind)
	b = wire.AppendU64LE(b, id)
	return append(b, body...)
}

// appendMessage appends a message of any size as frames of at most
// maxFrame bytes (after the size field): kindPart frames, then the last
// part under kind.
func appendMessage(b []byte, kind uint8, id uint64, body []byte, maxFrame int) []byte {
	chunk := max(maxFrame-9, 1)
	for len(body) > chunk {
		b = appendFrame(b, kindPart|kind&kindResponse, id, body[:chunk])
		body = body[chunk:]
	}
	return appendFrame(b, kind, id, body)
}

// assembler joins the parts of messages larger than one frame, read from
// one connection; answers says which direction it reads (kindPart or
// kindPart|kindResponse).
type assembler struct {
	max     int // peers.max_message_bytes: the parts held at once
	answers bool
	parts   map[uint64][]byte
	held    int
}

// add takes one frame; it returns the whole message's body once its last
// part arrived (done), nothing while parts are being held.
func (a *assembler) add(kind uint8, id uint64, body []byte) (msg []byte, done bool, err error) {
	part := kindPart
	if a.answers {
		part |= kindResponse
	}
	if kind == part {
		if a.held+len(body) > a.max {
			return nil, false, frameErr("size", fmt.Sprintf("parts of messages held past %d bytes", a.max), wire.ErrTooLarge)
		}
		if a.parts == nil {
			a.parts = map[uint64][]byte{}
		}
		a.parts[id] = append(a.parts[id], body...)
		a.held += len(body)
		return nil, false, nil
	}
	held, ok := a.parts[id]
	if !ok {
		return body, true, nil
	}
	delete(a.parts, id)
	a.held -= len(held)
	if a.held+len(held)+len(body) > a.max {
		return nil, false, frameErr("size", fmt.Sprintf("a message past %d bytes", a.max), wire.ErrTooLarge)
	}
	return append(held, body...), true, nil
}

// parseHeader splits the part after the size field: kind, id, body.
func parseHeader(p []byte) (kind uint8, id uint64, body []byte, err error) {
	r := wire.NewReader(p, frameMessage)
	kind = r.U8("", "kind")
	id = r.U64LE("", "id")
	body = r.Rest("", "body")
	return kind, id, body, r.Err()
}

// ---- encoder ----

type enc struct{ b []byte }

func (e *enc) u8(v uint8)          { e.b = wire.AppendU8(e.b, v) }
func (e *enc) i16(v int16)         { e.b = wire.AppendI16LE(e.b, v) }
func (e *enc) u16(v uint16)        { e.b = wire.AppendU16LE(e.b, v) }
func (e *enc) i32(v int32)         { e.b = wire.AppendI32LE(e.b, v) }
func (e *enc) u32(v uint32)        { e.b = wire.AppendU32LE(e.b, v) }
func (e *enc) i64(v int64)         { e.b = wire.AppendI64LE(e.b, v) }
func (e *enc) dur(d time.Duration) { e.b = wire.AppendI64LE(e.b, int64(d)) }
func (e *enc) boolean(v bool)      { e.b = wire.AppendBool(e.b, v) }
func (e *enc) str(s string)        { e.u32(uint32(len(s))); e.b = append(e.b, s...) }
func (e *enc) raw(v []byte)        { e.b = append(e.b, v...) }
func (e *enc) nstr(s *string) {
	if s == nil {
		e.i32(-1)
		return
	}
	e.i32(int32(len(*s)))
	e.b = append(e.b, *s...)
}
func (e *enc) bytes(v []byte) {
	if v == nil {
		e.i32(-1)
		return
	}
	e.i32(int32(len(v)))
	e.b = append(e.b, v...)
}

// ---- decoder: codec/wire's sticky Reader plus the link's composites ----

type dec struct{ r wire.Reader }

// newDec decodes body; msg names it in errors (e.g. "peer.join.request").
func newDec(body []byte, msg string) *dec { return &dec{r: wire.NewReader(body, msg)} }

// fail records a constraint violation of field f at the current offset.
func (d *dec) fail(f, why string) { d.r.Fail("", f, d.r.Off(), wire.ErrConstraint, why) }

func (d *dec) u8(f string) uint8   { return d.r.U8("", f) }
func (d *dec) i16(f string) int16  { return d.r.I16LE("", f) }
func (d *dec) u16(f string) uint16 { return d.r.U16LE("", f) }
func (d *dec) i32(f string) int32  { return d.r.I32LE("", f) }
func (d *dec) u32(f string) uint32 { return d.r.U32LE("", f) }
func (d *dec) i64(f string) int64  { return d.r.I64LE("", f) }

// take returns the next n bytes, aliasing the input.
func (d *dec) take(f string, n int) []byte { return d.r.Bytes("", f, n) }

func (d *dec) dur(f string) time.Duration {
	v := d.r.I64LE("", f)
	if v < 0 {
		d.fail(f, "negative duration")
		return 0
	}
	return time.Duration(v)
}

func (d *dec) boolean(f string) bool {
	switch d.u8(f) {
	case 0:
		return false
	case 1:
		return true
	}
	d.fail(f, "boolean not 0 or 1")
	return false
}

func (d *dec) str(f string) string {
	n := d.u32(f)
	if d.r.Failed() {
		return ""
	}
	return string(d.take(f, int(n)))
}

// length reads the i32 length of a nullable field: -1 for null (ok false).
func (d *dec) length(f string) (int, bool) {
	n := d.i32(f)
	if d.r.Failed() || n == -1 {
		return 0, false
	}
	if n < -1 {
		d.fail(f, "length "+strconv.Itoa(int(n)))
		return 0, false
	}
	return int(n), true
}

func (d *dec) nstr(f string) *string {
	n, ok := d.length(f)
	if !ok {
		return nil
	}
	v := d.take(f, n)
	if d.r.Failed() {
		return nil
	}
	s := string(v)
	return &s
}

func (d *dec) bytes(f string) []byte {
	n, ok := d.length(f)
	if !ok {
		return nil
	}
	v := d.take(f, n)
	if d.r.Failed() {
		return nil
	}
	return append([]byte{}, v...)
}

// count reads a list count whose elements take at least min bytes each, so
// a count cannot claim more elements than the bytes left could hold.
func (d *dec) count(f string, min int) int {
	n := d.u32(f)
	if d.r.Failed() {
		return 0
	}
	if uint64(n)*uint64(min) > uint64(d.r.Remaining()) {
		d.r.Fail("", f, d.r.Off(), wire.ErrTooLarge, "count "+strconv.Itoa(int(n))+" cannot fit in "+strconv.Itoa(d.r.Remaining())+" bytes")
		return 0
	}
	return int(n)
}

// done returns the first error, or one for trailing bytes.
func (d *dec) done() error {
	if !d.r.Failed() && d.r.Remaining() != 0 {
		d.r.Fail("", "", d.r.Off(), wire.ErrTrailingBytes, strconv.Itoa(d.r.Remaining())+" bytes")
	}
	return d.r.Err()
}
