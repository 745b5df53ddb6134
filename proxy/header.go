package proxy

import (
	"encoding/binary"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Request header layout (after the size prefix):
//
//	v1: api_key int16 | api_version int16 | correlation_id int32 | client_id nullable string (int16 length, -1 = null)
//	v2: v1 followed by a tagged-field section (uvarint count, then per field uvarint tag, uvarint size, bytes)
//
// v2 is used exactly when the request body version is flexible (KIP-482),
// which kmsg reports through Request.IsFlexible. v0 (no client id) is only
// used by ControlledShutdown v0, which is never served.

// headerPrefixSize is api_key + api_version + correlation_id.
const headerPrefixSize = 8

// parseHeaderPrefix reads the fixed part of a request header, which is all
// the front door needs to decide whether it serves the request.
func parseHeaderPrefix(frame []byte) (key, version int16, corrID int32, err error) {
	if len(frame) < headerPrefixSize {
		return 0, 0, 0, ErrBadHeader
	}
	key = int16(binary.BigEndian.Uint16(frame[0:]))
	version = int16(binary.BigEndian.Uint16(frame[2:]))
	corrID = int32(binary.BigEndian.Uint32(frame[4:]))
	return key, version, corrID, nil
}

// parseHeaderRest reads the client id (and, for a flexible request, skips
// the tagged fields) that follow the prefix. clientID aliases frame; null
// reports a null client id. bodyOff is the offset of the request body.
// Every length is checked against the bytes present before it is used.
func parseHeaderRest(frame []byte, flexible bool) (clientID []byte, null bool, bodyOff int, err error) {
	off := headerPrefixSize
	if len(frame)-off < 2 {
		return nil, false, 0, ErrBadHeader
	}
	l := int16(binary.BigEndian.Uint16(frame[off:]))
	off += 2
	switch {
	case l == -1:
		null = true
	case l < -1:
		return nil, false, 0, ErrBadHeader
	default:
		if len(frame)-off < int(l) {
			return nil, false, 0, ErrBadHeader
		}
		clientID = frame[off : off+int(l) : off+int(l)]
		off += int(l)
	}
	if flexible {
		n, ok := skipTags(frame[off:])
		if !ok {
			return nil, false, 0, ErrBadHeader
		}
		off += n
	}
	return clientID, null, off, nil
}

// skipTags skips a tagged-field section and returns its length.
func skipTags(b []byte) (int, bool) {
	count, off, ok := uvarint32(b)
	if !ok {
		return 0, false
	}
	for i := uint32(0); i < count; i++ {
		_, n, ok := uvarint32(b[off:])
		if !ok {
			return 0, false
		}
		off += n
		size, n, ok := uvarint32(b[off:])
		if !ok {
			return 0, false
		}
		off += n
		if uint64(len(b)-off) < uint64(size) {
			return 0, false
		}
		off += int(size)
	}
	return off, true
}

// uvarint32 decodes Kafka's unsigned varint (LEB128, at most 5 bytes, value
// within uint32).
func uvarint32(b []byte) (v uint32, n int, ok bool) {
	var shift uint
	for i := 0; i < 5; i++ {
		if i >= len(b) {
			return 0, 0, false
		}
		c := b[i]
		if i == 4 && c > 0x0f {
			return 0, 0, false // overflows 32 bits
		}
		v |= uint32(c&0x7f) << shift
		if c < 0x80 {
			return v, i + 1, true
		}
		shift += 7
	}
	return 0, 0, false
}

// appendResponseHeader appends a response's size placeholder and header:
// header v0 is the correlation id; header v1 adds an empty tagged-field
// section. v1 is used when the request was flexible, except for
// ApiVersions, whose response header is always v0. The size is patched by
// finishFrame once the body is appended.
func appendResponseHeader(dst []byte, corrID int32, flexible bool, key int16) []byte {
	dst = append(dst, 0, 0, 0, 0)
	dst = binary.BigEndian.AppendUint32(dst, uint32(corrID))
	if flexible && key != kmsg.ApiVersions.Int16() {
		dst = append(dst, 0)
	}
	return dst
}

// finishFrame patches the size prefix of the frame that starts at start.
func finishFrame(b []byte, start int) bool {
	size := len(b) - start - FrameHeaderSize
	if size < 0 || uint64(size) > uint64(maxInt32) {
		return false
	}
	binary.BigEndian.PutUint32(b[start:], uint32(size))
	return true
}

// finishFrameSized patches the size prefix at the start of b for a frame
// whose body is b's bytes after the prefix plus extra bytes written from
// elsewhere (spliced blocks).
func finishFrameSized(b []byte, extra int) bool {
	size := len(b) - FrameHeaderSize + extra
	if len(b) < FrameHeaderSize || extra < 0 || uint64(size) > uint64(maxInt32) {
		return false
	}
	binary.BigEndian.PutUint32(b, uint32(size))
	return true
}

const maxInt32 = 1<<31 - 1
