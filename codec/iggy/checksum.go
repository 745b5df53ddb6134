package iggy

import (
	"encoding/binary"
	"math/bits"

	"github.com/zeebo/xxh3"
)

// XXH3 returns the standard 64-bit XXH3 hash of b with seed 0 and the default
// secret: the message and batch checksums of §4.3 and the request_checksum
// of §1.8.4.
func XXH3(b []byte) uint64 { return xxh3.Hash(b) }

// XXH32 constants (the public xxHash specification).
const (
	xxh32Prime1 uint32 = 0x9E3779B1
	xxh32Prime2 uint32 = 0x85EBCA77
	xxh32Prime3 uint32 = 0xC2B2AE3D
	xxh32Prime4 uint32 = 0x27D4EB2F
	xxh32Prime5 uint32 = 0x165667B1
)

// XXH32 returns the 32-bit xxHash of b with the given seed. Iggy uses it with
// seed 0 for string consumer ids (§2.3) and MessagesKey partitioning (§2.5).
// No module the project may use exports plain XXH32, so it is implemented
// here from the public algorithm description; it does not allocate.
func XXH32(b []byte, seed uint32) uint32 {
	n := len(b)
	var acc uint32
	if n >= 16 {
		v1 := seed + xxh32Prime1 + xxh32Prime2
		v2 := seed + xxh32Prime2
		v3 := seed
		v4 := seed - xxh32Prime1
		for len(b) >= 16 {
			v1 = xxh32Round(v1, binary.LittleEndian.Uint32(b))
			v2 = xxh32Round(v2, binary.LittleEndian.Uint32(b[4:]))
			v3 = xxh32Round(v3, binary.LittleEndian.Uint32(b[8:]))
			v4 = xxh32Round(v4, binary.LittleEndian.Uint32(b[12:]))
			b = b[16:]
		}
		acc = bits.RotateLeft32(v1, 1) + bits.RotateLeft32(v2, 7) + bits.RotateLeft32(v3, 12) + bits.RotateLeft32(v4, 18)
	} else {
		acc = seed + xxh32Prime5
	}
	acc += uint32(n)
	for len(b) >= 4 {
		acc = bits.RotateLeft32(acc+binary.LittleEndian.Uint32(b)*xxh32Prime3, 17) * xxh32Prime4
		b = b[4:]
	}
	for _, c := range b {
		acc = bits.RotateLeft32(acc+uint32(c)*xxh32Prime5, 11) * xxh32Prime1
	}
	acc ^= acc >> 15
	acc *= xxh32Prime2
	acc ^= acc >> 13
	acc *= xxh32Prime3
	acc ^= acc >> 16
	return acc
}

func xxh32Round(acc, lane uint32) uint32 {
	return bits.RotateLeft32(acc+lane*xxh32Prime2, 13) * xxh32Prime1
}
