package producers

// Producer state carried in Iggy (KAFKA-ON-IGGY §4): every message written
// for an idempotent Kafka batch gets a deterministic Iggy message id that
// names its producer id, epoch and sequence, so the sidecar (any sidecar,
// after any restart) can rebuild a producer's last sequences from the
// partition's tail (tail.go), and a native Iggy consumer can tell
// which Kafka producer wrote a message.
//
// The id is an RFC 9562 UUID version 8 (custom): its 16 bytes are Iggy's
// u128 in little-endian order, as for the random v4 ids of other records
// (records_produce.go newID), so no id of one kind can be taken for the
// other (their version nibbles differ). Layout of the u128 (Lo = bits
// 0-63, Hi = bits 64-127):
//
//	Lo bits  0-30  sequence (31 bits, Kafka sequences are >= 0)
//	Lo bits 31-45  producer epoch (15 bits, epochs are >= 0)
//	Lo bit  46     producer id bit 62
//	Lo bit  47     0
//	Lo bits 48-51  0xA (tag)
//	Lo bits 52-55  0x8 (UUID version 8)
//	Lo bits 56-63  0x6B ('k', tag)
//	Hi bits  0-5   producer id bits 0-5
//	Hi bits  6-7   0b10 (UUID variant)
//	Hi bits  8-63  producer id bits 6-61
//
// As bytes (wire order): byte 6 = 0x8A, byte 7 = 'k', and byte 8's two top
// bits 10.

import "github.com/kafka-iggy/kafka-iggy/codec/wire"

const (
	pidIDTag     = 0x6b8a << 48 // 'k', version 8, 0xA
	pidIDVariant = 0x80         // Hi bits 6-7 = 10
	pidIDSeqMask = 1<<31 - 1    // 31 bits
	pidIDEpMask  = 1<<15 - 1    // 15 bits
	pidIDBit62   = 1 << 46      // Lo bit carrying producer id bit 62
	pidIDLoTags  = 0xffff << 48 // all of Lo's tag bits
	pidIDHiLow   = 0x3f         // producer id bits 0-5 in Hi
	pidIDHiVar   = 0xc0         // Hi's variant bits
	pidIDLoSpare = 1 << 47      // always 0
)

// MessageID is the Iggy message id of the record with sequence seq of
// producer pid at epoch epoch. pid, epoch and seq must be >= 0.
func MessageID(pid int64, epoch int16, seq int32) wire.U128 {
	p := uint64(pid)
	lo := uint64(seq)&pidIDSeqMask | uint64(epoch)&pidIDEpMask<<31 | pidIDTag
	if p&(1<<62) != 0 {
		lo |= pidIDBit62
	}
	hi := p&pidIDHiLow | pidIDVariant | (p>>6)<<8
	return wire.U128{Lo: lo, Hi: hi}
}

// parsePIDMessageID reads back what MessageID encoded; ok is false for
// any other id.
func parsePIDMessageID(id wire.U128) (pid int64, epoch int16, seq int32, ok bool) {
	if id.Lo&pidIDLoTags != pidIDTag || id.Lo&pidIDLoSpare != 0 || id.Hi&pidIDHiVar != pidIDVariant {
		return 0, 0, 0, false
	}
	p := id.Hi&pidIDHiLow | (id.Hi>>8)<<6
	if id.Lo&pidIDBit62 != 0 {
		p |= 1 << 62
	}
	return int64(p), int16(id.Lo >> 31 & pidIDEpMask), int32(id.Lo & pidIDSeqMask), true
}

// SeqAdd is seq + n on Kafka's sequence ring (wrapping past MaxInt32 to 0).
func SeqAdd(seq int32, n int) int32 {
	return int32((int64(seq) + int64(n)) % (1 << 31))
}

// SequenceOf returns the Kafka sequence a MessageID carries; ok is false for
// any other id.
func SequenceOf(id wire.U128) (int32, bool) {
	_, _, seq, ok := parsePIDMessageID(id)
	return seq, ok
}
