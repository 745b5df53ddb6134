package cluster

// The peer-link wire format. Every frame is
//
//	size u32 (bytes after this field, at most peers.max_frame_bytes)
//	kind u8
//	id   u64 (request id; a response carries its request's id)
//	body
//
// big-endian. Strings are u32 length + bytes; nullable strings and bytes
// are i32 length (-1: null) + bytes; lists are a u32 count. Encoders
// append; the decoder is sticky: the first problem is kept (with the field
// it happened in) and every later read returns zero values, so a body is
// decoded straight through and checked once at the end.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// Frame kinds. A response is its request's kind with kindResponse set.
const (
	kindChallenge uint8 = 1 // server -> client: nonce
	kindHello     uint8 = 2 // client -> server: node, domain, nonce, proof
	kindWelcome   uint8 = 3 // server -> client: proof of the server

	kindJoin          uint8  = 10
	kindSync          uint8  = 11
	kindHeartbeat     uint8  = 12
	kindLeave         uint8  = 13
	kindDescribe      uint8  = 14
	kindList          uint8  = 15
	kindDelete        uint8  = 16
	kindValidate      uint8  = 17
	kindOffsetDelete  uint8  = 18
	kindResponse      uint8  = 0x80
	frameHeaderSize          = 4 + 1 + 8
	handshakeMaxFrame        = 4096
	nonceSize                = 32
	macSize                  = 32
	protocolVersion   uint16 = 1
)

// requestKind reports whether k is a request the server serves.
func requestKind(k uint8) bool { return k >= kindJoin && k <= kindOffsetDelete }

// errFrame is the class of every malformed-frame error.
var errFrame = errors.New("cluster: malformed peer frame")

// frameError is a decoding failure: the field and what was wrong.
type frameError struct {
	field string
	why   string
}

func (e *frameError) Error() string {
	return "cluster: malformed peer frame: " + e.field + ": " + e.why
}
func (e *frameError) Unwrap() error { return errFrame }

// appendFrame appends a frame header for a body of n bytes.
func appendFrame(b []byte, kind uint8, id uint64, body []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(1+8+len(body)))
	b = append(b, kind)
	b = binary.BigEndian.AppendUint64(b, id)
	return append(b, body...)
}

// parseHeader splits the part after the size field: kind, id, body.
func parseHeader(p []byte) (kind uint8, id uint64, body []byte, err error) {
	if len(p) < 9 {
		return 0, 0, nil, &frameError{"header", fmt.Sprintf("%d bytes, want at least 9", len(p))}
	}
	return p[0], binary.BigEndian.Uint64(p[1:9]), p[9:], nil
}

// ---- encoder ----

type enc struct{ b []byte }

func (e *enc) u8(v uint8)   { e.b = append(e.b, v) }
func (e *enc) i16(v int16)  { e.b = binary.BigEndian.AppendUint16(e.b, uint16(v)) }
func (e *enc) u16(v uint16) { e.b = binary.BigEndian.AppendUint16(e.b, v) }
func (e *enc) i32(v int32)  { e.b = binary.BigEndian.AppendUint32(e.b, uint32(v)) }
func (e *enc) u32(v uint32) { e.b = binary.BigEndian.AppendUint32(e.b, v) }
func (e *enc) i64(v int64)  { e.b = binary.BigEndian.AppendUint64(e.b, uint64(v)) }
func (e *enc) u64(v uint64) { e.b = binary.BigEndian.AppendUint64(e.b, v) }
func (e *enc) dur(d time.Duration) {
	e.i64(int64(d))
}
func (e *enc) boolean(v bool) {
	if v {
		e.u8(1)
	} else {
		e.u8(0)
	}
}
func (e *enc) str(s string) { e.u32(uint32(len(s))); e.b = append(e.b, s...) }
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
func (e *enc) raw(v []byte) { e.b = append(e.b, v...) }

// ---- sticky decoder ----

type dec struct {
	b   []byte
	err error
}

func (d *dec) fail(field, why string) {
	if d.err == nil {
		d.err = &frameError{field, why}
	}
	d.b = nil
}

func (d *dec) take(field string, n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > len(d.b) {
		d.fail(field, fmt.Sprintf("needs %d bytes, %d left", n, len(d.b)))
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

func (d *dec) u8(f string) uint8 {
	if v := d.take(f, 1); v != nil {
		return v[0]
	}
	return 0
}
func (d *dec) i16(f string) int16 {
	if v := d.take(f, 2); v != nil {
		return int16(binary.BigEndian.Uint16(v))
	}
	return 0
}
func (d *dec) u16(f string) uint16 {
	if v := d.take(f, 2); v != nil {
		return binary.BigEndian.Uint16(v)
	}
	return 0
}
func (d *dec) i32(f string) int32 {
	if v := d.take(f, 4); v != nil {
		return int32(binary.BigEndian.Uint32(v))
	}
	return 0
}
func (d *dec) u32(f string) uint32 {
	if v := d.take(f, 4); v != nil {
		return binary.BigEndian.Uint32(v)
	}
	return 0
}
func (d *dec) i64(f string) int64 {
	if v := d.take(f, 8); v != nil {
		return int64(binary.BigEndian.Uint64(v))
	}
	return 0
}
func (d *dec) u64(f string) uint64 { return uint64(d.i64(f)) }
func (d *dec) dur(f string) time.Duration {
	v := d.i64(f)
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
	if d.err != nil {
		return ""
	}
	if uint64(n) > uint64(len(d.b)) {
		d.fail(f, fmt.Sprintf("length %d exceeds the %d bytes left", n, len(d.b)))
		return ""
	}
	return string(d.take(f, int(n)))
}
func (d *dec) nstr(f string) *string {
	n := d.i32(f)
	if d.err != nil || n == -1 {
		return nil
	}
	if n < -1 || int64(n) > int64(len(d.b)) {
		d.fail(f, fmt.Sprintf("length %d invalid with %d bytes left", n, len(d.b)))
		return nil
	}
	s := string(d.take(f, int(n)))
	return &s
}
func (d *dec) bytes(f string) []byte {
	n := d.i32(f)
	if d.err != nil || n == -1 {
		return nil
	}
	if n < -1 || int64(n) > int64(len(d.b)) {
		d.fail(f, fmt.Sprintf("length %d invalid with %d bytes left", n, len(d.b)))
		return nil
	}
	return append([]byte{}, d.take(f, int(n))...)
}

// count reads a list count whose elements take at least min bytes each, so
// a count cannot claim more elements than the bytes left could hold.
func (d *dec) count(f string, min int) int {
	n := d.u32(f)
	if d.err != nil {
		return 0
	}
	if uint64(n)*uint64(min) > uint64(len(d.b)) {
		d.fail(f, fmt.Sprintf("count %d cannot fit in %d bytes", n, len(d.b)))
		return 0
	}
	return int(n)
}

// done returns the first error, or one for trailing bytes.
func (d *dec) done() error {
	if d.err == nil && len(d.b) != 0 {
		d.err = &frameError{"body", fmt.Sprintf("%d trailing bytes", len(d.b))}
	}
	return d.err
}
