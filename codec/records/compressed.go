package records

import "encoding/binary"

// Offsets in a record batch (v2) header, read to find its codec.
const (
	batchLengthAt     = 8  // int32: bytes after this field
	batchMagicAt      = 16 // int8
	batchAttributesAt = 21 // int16: codec in the low 3 bits
	batchHeadLen      = 12 // base offset + batch length
)

// Compressed reports whether any batch of a Produce partition's Records
// field names a compression codec (magic 0/1 message sets and v2 batches
// alike keep it in the low bits of their attributes; a message set's
// wrapper is checked through its first message only, which is where a
// compressed set says so). It reads headers only: a broken batch stops
// the walk (the decoder reports it).
func Compressed(b []byte) bool {
	for len(b) >= batchHeadLen+5 {
		n := int(int32(binary.BigEndian.Uint32(b[batchLengthAt:])))
		if n <= 0 {
			return false
		}
		var attrs byte
		switch magic := b[batchMagicAt]; {
		case magic >= 2 && len(b) > batchAttributesAt+1:
			attrs = b[batchAttributesAt+1]
		case magic < 2:
			attrs = b[batchMagicAt+1] // message set: crc(4) magic(1) attributes(1)
		}
		if attrs&0x07 != 0 {
			return true
		}
		if batchHeadLen+n > len(b) {
			return false
		}
		b = b[batchHeadLen+n:]
	}
	return false
}
