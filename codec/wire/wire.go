// Package wire holds the little-endian primitives every Iggy codec in this
// project is built from: append-style encoders (AppendU32LE, ...) and a sticky
// Reader whose first failure is kept as a structured *DecodeError naming the
// message, the field and the byte offset.
//
// Lengths read from the wire are always compared with the bytes present
// before anything is sliced or allocated, so a hostile length can never cause
// a large allocation or a panic.
package wire

import (
	"encoding/binary"
	"errors"
	"math"
	"strconv"
	"unicode/utf8"
)

// Sentinel errors wrapped by DecodeError; match them with errors.Is.
var (
	// ErrShortBuffer: a field needs more bytes than the input holds.
	ErrShortBuffer = errors.New("codec: short buffer")
	// ErrInvalidUTF8: a text field is not valid UTF-8.
	ErrInvalidUTF8 = errors.New("codec: invalid UTF-8")
	// ErrUnknownDiscriminant: an enum/kind byte has no defined meaning.
	ErrUnknownDiscriminant = errors.New("codec: unknown discriminant")
	// ErrConstraint: a value is outside the range the schema allows.
	ErrConstraint = errors.New("codec: constraint violated")
	// ErrTooLarge: a declared length exceeds a hard limit.
	ErrTooLarge = errors.New("codec: length too large")
	// ErrUnknownCommand: a command code is not in the command table.
	ErrUnknownCommand = errors.New("codec: unknown command")
	// ErrTrailingBytes: input continues after a message that must end exactly.
	ErrTrailingBytes = errors.New("codec: trailing bytes")
	// ErrChecksum: a checksum does not match the bytes it covers.
	ErrChecksum = errors.New("codec: checksum mismatch")
)

// DecodeError is the structured error of every decoder in this project.
type DecodeError struct {
	Message string // message being decoded, e.g. "create_topic.request"
	Field   string // dotted field path, e.g. "stream_id.value"
	Offset  int    // byte offset of the field in the decoded input
	Need    int    // bytes needed (short-buffer errors), else 0
	Have    int    // bytes present (short-buffer errors), else 0
	Detail  string // optional human detail (a value, a bound)
	Err     error  // one of the sentinels above
}

func (e *DecodeError) Error() string {
	s := e.Message
	if e.Field != "" {
		s += "." + e.Field
	}
	s += " at offset " + strconv.Itoa(e.Offset) + ": " + e.Err.Error()
	if e.Need > 0 || e.Have > 0 {
		s += " (need " + strconv.Itoa(e.Need) + ", have " + strconv.Itoa(e.Have) + ")"
	}
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// Unwrap returns the sentinel.
func (e *DecodeError) Unwrap() error { return e.Err }

// U128 is an unsigned 128-bit integer; on the wire the low 64 bits come first,
// then the high 64 bits, both little-endian.
type U128 struct{ Lo, Hi uint64 }

// IsZero reports whether u is 0.
func (u U128) IsZero() bool { return u.Lo == 0 && u.Hi == 0 }

// Reader decodes little-endian primitives from Src with a sticky error: after
// the first failure every read returns a zero value and Err keeps the first
// error. Paths and field names are joined only when an error is recorded, so
// successful decodes do not allocate for them.
type Reader struct {
	src []byte
	off int
	msg string
	err *DecodeError
}

// NewReader returns a Reader over src; msg names the message in errors.
func NewReader(src []byte, msg string) Reader { return Reader{src: src, msg: msg} }

// Off is the number of bytes consumed so far.
func (r *Reader) Off() int { return r.off }

// Remaining is the number of unread bytes.
func (r *Reader) Remaining() int { return len(r.src) - r.off }

// Failed reports whether a read has failed.
func (r *Reader) Failed() bool { return r.err != nil }

// Err returns the first error as an error value (nil when none).
func (r *Reader) Err() error {
	if r.err == nil {
		return nil
	}
	return r.err
}

// Fail records err for path.field at byte offset off unless an error is
// already recorded.
func (r *Reader) Fail(path, field string, off int, err error, detail string) {
	if r.err != nil {
		return
	}
	r.err = &DecodeError{Message: r.msg, Field: join(path, field), Offset: off, Err: err, Detail: detail}
	r.off = len(r.src)
}

func (r *Reader) short(path, field string, need int) {
	if r.err != nil {
		return
	}
	r.err = &DecodeError{Message: r.msg, Field: join(path, field), Offset: r.off, Need: need, Have: len(r.src) - r.off, Err: ErrShortBuffer}
	r.off = len(r.src)
}

func join(path, field string) string {
	switch {
	case path == "":
		return field
	case field == "":
		return path
	}
	return path + "." + field
}

// Join joins a field path the way Reader reports it; generated code uses it to
// build nested paths.
func Join(path, field string) string { return join(path, field) }

func (r *Reader) take(path, field string, n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.src)-r.off {
		r.short(path, field, n)
		return nil
	}
	b := r.src[r.off : r.off+n : r.off+n]
	r.off += n
	return b
}

// U8 reads one byte.
func (r *Reader) U8(path, field string) uint8 {
	b := r.take(path, field, 1)
	if b == nil {
		return 0
	}
	return b[0]
}

// Bool reads one byte; any nonzero value is true.
func (r *Reader) Bool(path, field string) bool { return r.U8(path, field) != 0 }

// Flag reads one byte; only 1 is true (the optional-partition rule).
func (r *Reader) Flag(path, field string) bool { return r.U8(path, field) == 1 }

// U16LE reads a little-endian uint16.
func (r *Reader) U16LE(path, field string) uint16 {
	b := r.take(path, field, 2)
	if b == nil {
		return 0
	}
	return binary.LittleEndian.Uint16(b)
}

// U32LE reads a little-endian uint32.
func (r *Reader) U32LE(path, field string) uint32 {
	b := r.take(path, field, 4)
	if b == nil {
		return 0
	}
	return binary.LittleEndian.Uint32(b)
}

// U64LE reads a little-endian uint64.
func (r *Reader) U64LE(path, field string) uint64 {
	b := r.take(path, field, 8)
	if b == nil {
		return 0
	}
	return binary.LittleEndian.Uint64(b)
}

// U128LE reads a little-endian 128-bit integer (low half first).
func (r *Reader) U128LE(path, field string) U128 {
	b := r.take(path, field, 16)
	if b == nil {
		return U128{}
	}
	return U128{Lo: binary.LittleEndian.Uint64(b), Hi: binary.LittleEndian.Uint64(b[8:])}
}

// I8 reads a signed byte.
func (r *Reader) I8(path, field string) int8 { return int8(r.U8(path, field)) }

// I16LE reads a little-endian int16.
func (r *Reader) I16LE(path, field string) int16 { return int16(r.U16LE(path, field)) }

// I32LE reads a little-endian int32.
func (r *Reader) I32LE(path, field string) int32 { return int32(r.U32LE(path, field)) }

// I64LE reads a little-endian int64.
func (r *Reader) I64LE(path, field string) int64 { return int64(r.U64LE(path, field)) }

// F32LE reads a little-endian IEEE-754 float32.
func (r *Reader) F32LE(path, field string) float32 { return math.Float32frombits(r.U32LE(path, field)) }

// F64LE reads a little-endian IEEE-754 float64.
func (r *Reader) F64LE(path, field string) float64 { return math.Float64frombits(r.U64LE(path, field)) }

// Bytes returns the next n bytes without copying; the slice aliases the
// input. n is checked against the remaining input before slicing.
func (r *Reader) Bytes(path, field string, n int) []byte { return r.take(path, field, n) }

// Rest returns every unread byte without copying.
func (r *Reader) Rest(path, field string) []byte {
	if r.err != nil {
		return nil
	}
	b := r.src[r.off:len(r.src):len(r.src)]
	r.off = len(r.src)
	return b
}

// UTF8 returns the next n bytes as a string after checking they are valid
// UTF-8. The string is a copy.
func (r *Reader) UTF8(path, field string, n int) string {
	start := r.off
	b := r.take(path, field, n)
	if b == nil {
		return ""
	}
	if !utf8.Valid(b) {
		r.Fail(path, field, start, ErrInvalidUTF8, "")
		return ""
	}
	return string(b)
}

// AppendU8 appends one byte.
func AppendU8(dst []byte, v uint8) []byte { return append(dst, v) }

// AppendBool appends 1 for true and 0 for false.
func AppendBool(dst []byte, v bool) []byte {
	if v {
		return append(dst, 1)
	}
	return append(dst, 0)
}

// AppendU16LE appends a little-endian uint16.
func AppendU16LE(dst []byte, v uint16) []byte { return binary.LittleEndian.AppendUint16(dst, v) }

// AppendU32LE appends a little-endian uint32.
func AppendU32LE(dst []byte, v uint32) []byte { return binary.LittleEndian.AppendUint32(dst, v) }

// AppendU64LE appends a little-endian uint64.
func AppendU64LE(dst []byte, v uint64) []byte { return binary.LittleEndian.AppendUint64(dst, v) }

// AppendU128LE appends a 128-bit integer, low half first.
func AppendU128LE(dst []byte, v U128) []byte {
	dst = binary.LittleEndian.AppendUint64(dst, v.Lo)
	return binary.LittleEndian.AppendUint64(dst, v.Hi)
}

// AppendI8 appends a signed byte.
func AppendI8(dst []byte, v int8) []byte { return append(dst, uint8(v)) }

// AppendI16LE appends a little-endian int16.
func AppendI16LE(dst []byte, v int16) []byte { return AppendU16LE(dst, uint16(v)) }

// AppendI32LE appends a little-endian int32.
func AppendI32LE(dst []byte, v int32) []byte { return AppendU32LE(dst, uint32(v)) }

// AppendI64LE appends a little-endian int64.
func AppendI64LE(dst []byte, v int64) []byte { return AppendU64LE(dst, uint64(v)) }

// AppendF32LE appends a little-endian float32.
func AppendF32LE(dst []byte, v float32) []byte { return AppendU32LE(dst, math.Float32bits(v)) }

// AppendF64LE appends a little-endian float64.
func AppendF64LE(dst []byte, v float64) []byte { return AppendU64LE(dst, math.Float64bits(v)) }
