package iggy

import (
	"strconv"

	"github.com/kafka-iggy/kafka-iggy/codec/wire"
)

// ProtocolVersion is a packed protocol version (§2.14):
// major<<20 | minor<<10 | patch, 10 bits each, top two bits zero. Integer
// order equals semantic-version order.
type ProtocolVersion uint32

const (
	versionFieldBits = 10
	versionFieldMask = 1<<versionFieldBits - 1
)

// PackVersion packs major.minor.patch. Each part keeps only its low 10 bits
// (0..1023); ParseProtocolVersion rejects larger parts instead.
func PackVersion(major, minor, patch uint32) ProtocolVersion {
	return ProtocolVersion((major&versionFieldMask)<<(2*versionFieldBits) |
		(minor&versionFieldMask)<<versionFieldBits |
		patch&versionFieldMask)
}

// Major returns bits 20..29.
func (v ProtocolVersion) Major() uint32 {
	return uint32(v) >> (2 * versionFieldBits) & versionFieldMask
}

// Minor returns bits 10..19.
func (v ProtocolVersion) Minor() uint32 { return uint32(v) >> versionFieldBits & versionFieldMask }

// Patch returns bits 0..9.
func (v ProtocolVersion) Patch() uint32 { return uint32(v) & versionFieldMask }

// String formats v as "major.minor.patch", e.g. "0.11.0".
func (v ProtocolVersion) String() string {
	var b [32]byte
	s := strconv.AppendUint(b[:0], uint64(v.Major()), 10)
	s = append(s, '.')
	s = strconv.AppendUint(s, uint64(v.Minor()), 10)
	s = append(s, '.')
	s = strconv.AppendUint(s, uint64(v.Patch()), 10)
	return string(s)
}

// ParseProtocolVersion parses "major.minor.patch" or "major.minor" (patch 0),
// each part a decimal number 0..1023 without sign or spaces. Errors are
// *wire.DecodeError wrapping wire.ErrConstraint with the offset of the bad
// character.
func ParseProtocolVersion(s string) (ProtocolVersion, error) {
	var parts [3]uint32
	n, digits, start := 0, 0, 0
	fail := func(off int, detail string) (ProtocolVersion, error) {
		return 0, &wire.DecodeError{Message: "protocol_version", Offset: off, Err: wire.ErrConstraint, Detail: detail}
	}
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == '.' {
			if digits == 0 {
				return fail(i, "empty version part in "+strconv.Quote(s))
			}
			n++
			if i == len(s) {
				break
			}
			if n == len(parts) {
				return fail(i, "more than three version parts in "+strconv.Quote(s))
			}
			digits, start = 0, i+1
			continue
		}
		c := s[i]
		if c < '0' || c > '9' {
			return fail(i, "unexpected character in "+strconv.Quote(s))
		}
		parts[n] = parts[n]*10 + uint32(c-'0')
		digits++
		if parts[n] > versionFieldMask {
			return fail(start, "version part above 1023 in "+strconv.Quote(s))
		}
	}
	if n < 2 {
		return fail(len(s), "need major.minor[.patch], got "+strconv.Quote(s))
	}
	return PackVersion(parts[0], parts[1], parts[2]), nil
}

// Compatible implements the server's version gate at login (§1.10): a client
// version is accepted when client >= min and the client's major.minor is not
// newer than the server's (any patch).
func Compatible(client, min, server ProtocolVersion) bool {
	return client >= min && client>>versionFieldBits <= server>>versionFieldBits
}
