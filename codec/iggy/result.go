package iggy

import (
	"encoding/binary"
	"strconv"

	"github.com/kafka-iggy/kafka-iggy/codec/wire"
)

// Layout of the result section at the start of a result-framed reply body
// (§1.6): [count u32][count × {index u32, result u32}][payload when count = 0].
const (
	resultCountSize = 4
	resultEntrySize = 8
)

// ResultError is a committed business rejection carried in the result
// section of a status-0 reply (§1.6). It matches errors.Is(err, Code).
type ResultError struct {
	Code  Status // the result code of the entry
	Index uint32 // the entry's index field (0 from today's servers)
}

// Error describes the rejection.
func (e *ResultError) Error() string {
	return "iggy: request rejected (result entry " + strconv.FormatUint(uint64(e.Index), 10) + "): " + e.Code.Error()
}

// Unwrap returns Code, so errors.Is and errors.As see the Status.
func (e *ResultError) Unwrap() error { return e.Code }

// AppendResultOK appends a successful result section (u32 count 0); the
// typed payload, if any, follows it.
func AppendResultOK(dst []byte) []byte { return wire.AppendU32LE(dst, 0) }

// AppendResultError appends a rejection result section as today's servers
// write it: count 1, entry {index 0, result code} (12 bytes, no payload).
func AppendResultError(dst []byte, code Status) []byte {
	dst = wire.AppendU32LE(dst, 1)
	dst = wire.AppendU32LE(dst, 0)
	return wire.AppendU32LE(dst, uint32(code))
}

// ParseResult parses the result section at the start of a result-framed
// reply body (§1.6). With count 0 it returns the payload that follows the
// count (aliasing body, possibly empty). With count >= 1 every claimed entry
// must be present; the first entry with a nonzero result becomes a
// *ResultError (servers write exactly one entry). If every entry's result is
// 0 the payload after the entries is returned. A body too short for the count
// or its entries is a *wire.DecodeError wrapping wire.ErrShortBuffer.
func ParseResult(body []byte) (payload []byte, err error) {
	if len(body) < resultCountSize {
		return nil, &wire.DecodeError{Message: "result", Field: "count", Need: resultCountSize, Have: len(body), Err: wire.ErrShortBuffer}
	}
	count := binary.LittleEndian.Uint32(body)
	need := uint64(resultCountSize) + uint64(count)*resultEntrySize
	if need > uint64(len(body)) {
		return nil, &wire.DecodeError{Message: "result", Field: "entries", Offset: resultCountSize,
			Need: int(min(need, uint64(MaxFrameSize)+1)) - resultCountSize, Have: len(body) - resultCountSize, Err: wire.ErrShortBuffer,
			Detail: "count " + strconv.FormatUint(uint64(count), 10)}
	}
	for i := uint32(0); i < count; i++ {
		e := body[resultCountSize+int(i)*resultEntrySize:]
		if code := binary.LittleEndian.Uint32(e[4:]); code != 0 {
			return nil, &ResultError{Code: Status(code), Index: binary.LittleEndian.Uint32(e)}
		}
	}
	return body[need:len(body):len(body)], nil
}
