package iggy

import (
	"encoding/binary"
	"math"

	"github.com/valyala/bytebufferpool"
	"github.com/zeebo/xxh3"

	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
	"github.com/kafka-iggy/kafka-iggy/codec/wire"
)

// sendOverhead is the most bytes a SEND_MESSAGES frame carries besides its
// message frames: the 256-byte request header, the metadata (u32 length,
// two string identifiers of at most 2+255 bytes, a PartitionId partitioning
// of 6 bytes, the u32 message count) and the 256-byte batch header.
const sendOverhead = icodec.HeaderSize + 4 + 2*(2+icodec.LimitMaxNameLength) + 6 + 4 + icodec.BatchHeaderSize

// MaxMessageSize is the largest single message frame (48-byte header,
// payload and user headers) Messages.Add accepts, in bytes: what still fits
// one SEND_MESSAGES frame within Iggy's 64 MiB frame limit.
const MaxMessageSize = icodec.MaxFrameSize - sendOverhead

// Messages holds the message frames of one Send, built in place in a pooled
// buffer so that the bridge maps Kafka records straight into Iggy frames and
// the client writes those bytes to the socket without copying them again.
// Get one from Client.NewMessages, Add messages, then either hand it to
// Client.Send (which takes ownership and recycles it) or call Release.
//
// Frames are written as Iggy message frames (§4.2) whose offset_delta,
// timestamp_delta and checksum are left open: the client fills them in only
// once it knows which Iggy batch the frames leave in (several Sends to one
// partition may be coalesced into one batch), so each frame is hashed once.
// A Messages is not safe for concurrent use.
type Messages struct {
	pool  *bytebufferpool.Pool
	buf   *bytebufferpool.ByteBuffer
	n     uint32
	minTS uint64
	maxTS uint64
	sent  bool
}

// NewMessages returns an empty Messages whose buffer comes from the
// client's pool.
func (c *Client) NewMessages() *Messages {
	return &Messages{pool: &c.msgPool}
}

// Add appends one message: id (0 is kept as 0, §4.8), the producer's origin
// timestamp in µs since the epoch, the payload and the raw user-headers block
// (§2.8; not validated here, the server stores it as is). Origin timestamps
// may come in any order and may spread over more than the 2^32-1 µs one Iggy
// batch can carry: the client then splits the Send into several consecutive
// batches. Add fails with ErrMessageTooLarge when the frame would exceed
// MaxMessageSize, and with ErrMessagesSent after the Messages went to Send.
func (m *Messages) Add(id wire.U128, originTimestamp uint64, payload, userHeaders []byte) error {
	if m.sent {
		return ErrMessagesSent
	}
	size := uint64(icodec.MessageHeaderSize) + uint64(len(payload)) + uint64(len(userHeaders))
	if size > MaxMessageSize {
		return ErrMessageTooLarge
	}
	if m.n == math.MaxUint32 {
		return ErrMessageTooLarge
	}
	if m.buf == nil {
		m.buf = m.getBuf()
	}
	var hdr [icodec.MessageHeaderSize]byte
	// The checksum slot carries the origin timestamp until the batch is
	// sealed (sealBatch turns it into timestamp_delta and the checksum).
	binary.LittleEndian.PutUint64(hdr[icodec.MessageHeaderChecksumOffset:], originTimestamp)
	binary.LittleEndian.PutUint64(hdr[icodec.MessageHeaderIDOffset:], id.Lo)
	binary.LittleEndian.PutUint64(hdr[icodec.MessageHeaderIDOffset+8:], id.Hi)
	binary.LittleEndian.PutUint32(hdr[icodec.MessageHeaderUserHeadersLengthOffset:], uint32(len(userHeaders)))
	binary.LittleEndian.PutUint32(hdr[icodec.MessageHeaderPayloadLengthOffset:], uint32(len(payload)))
	b := append(m.buf.B, hdr[:]...)
	b = append(b, payload...)
	m.buf.B = append(b, userHeaders...)
	if m.n == 0 {
		m.minTS, m.maxTS = originTimestamp, originTimestamp
	} else {
		m.minTS, m.maxTS = min(m.minTS, originTimestamp), max(m.maxTS, originTimestamp)
	}
	m.n++
	return nil
}

// Len returns the number of messages added.
func (m *Messages) Len() int { return int(m.n) }

// Size returns the bytes of all message frames added (headers included).
func (m *Messages) Size() int {
	if m.buf == nil {
		return 0
	}
	return len(m.buf.B)
}

// Span returns the spread of the origin timestamps added, in µs.
func (m *Messages) Span() uint64 { return m.maxTS - m.minTS }

// Reset empties m for reuse, keeping its buffer. It must not be called after
// m went to Send.
func (m *Messages) Reset() {
	if m.sent {
		return
	}
	if m.buf != nil {
		m.buf.B = m.buf.B[:0]
	}
	m.n, m.minTS, m.maxTS = 0, 0, 0
}

// Release returns m's buffer to the pool. Call it only for a Messages that
// was not handed to Send; Send releases what it takes.
func (m *Messages) Release() {
	if m.buf != nil && m.pool != nil {
		m.pool.Put(m.buf)
	}
	m.buf = nil
	m.n, m.minTS, m.maxTS = 0, 0, 0
}

func (m *Messages) getBuf() *bytebufferpool.ByteBuffer {
	if m.pool == nil {
		return &bytebufferpool.ByteBuffer{}
	}
	return m.pool.Get()
}

// frames returns the message frames.
func (m *Messages) frames() []byte {
	if m.buf == nil {
		return nil
	}
	return m.buf.B
}

// frameLen returns the length of the message frame at the start of b
// (header, payload, user headers). Frames built by Add always fit.
func frameLen(b []byte) int {
	return icodec.MessageHeaderSize +
		int(binary.LittleEndian.Uint32(b[icodec.MessageHeaderPayloadLengthOffset:])) +
		int(binary.LittleEndian.Uint32(b[icodec.MessageHeaderUserHeadersLengthOffset:]))
}

// batchSealer completes an Iggy batch whose frames come from one or more
// Messages buffers: it numbers the frames, turns their origin timestamps into
// timestamp deltas, computes every frame checksum and the batch checksum
// (§4.3), all in one pass over the frames, in place.
type batchSealer struct {
	h    *xxh3.Hasher
	sums [256]byte
}

// seal fills the 256-byte batch header hdr for the frames in segs (count
// frames in total, origin timestamps from minTS) and patches the frames.
// blobLen is the total length of segs.
func (s *batchSealer) seal(hdr []byte, segs [][]byte, count uint32, minTS uint64, blobLen int) {
	clear(hdr[:icodec.BatchHeaderSize])
	length := uint64(icodec.BatchHeaderSize + blobLen)
	binary.LittleEndian.PutUint64(hdr[icodec.BatchHeaderOriginTimestampOffset:], minTS)
	binary.LittleEndian.PutUint64(hdr[icodec.BatchHeaderBatchLengthOffset:], length)
	binary.LittleEndian.PutUint32(hdr[icodec.BatchHeaderMessageCountOffset:], count)

	if s.h == nil {
		s.h = xxh3.New()
	}
	s.h.Reset()
	// partition_id, base_offset, base_timestamp (zero), origin_timestamp,
	// batch_length, message_count.
	var f [44]byte
	binary.LittleEndian.PutUint64(f[24:], minTS)
	binary.LittleEndian.PutUint64(f[32:], length)
	binary.LittleEndian.PutUint32(f[40:], count)
	_, _ = s.h.Write(f[:])

	k := 0
	idx := uint32(0)
	for _, seg := range segs {
		for off := 0; off < len(seg); {
			fr := seg[off:]
			n := frameLen(fr)
			ts := binary.LittleEndian.Uint64(fr[icodec.MessageHeaderChecksumOffset:])
			binary.LittleEndian.PutUint32(fr[icodec.MessageHeaderOffsetDeltaOffset:], idx)
			binary.LittleEndian.PutUint32(fr[icodec.MessageHeaderTimestampDeltaOffset:], uint32(ts-minTS))
			sum := xxh3.Hash(fr[icodec.MessageHeaderIDOffset:n])
			binary.LittleEndian.PutUint64(fr[icodec.MessageHeaderChecksumOffset:], sum)
			binary.LittleEndian.PutUint64(s.sums[k:], sum)
			if k += 8; k == len(s.sums) {
				_, _ = s.h.Write(s.sums[:])
				k = 0
			}
			idx++
			off += n
		}
	}
	_, _ = s.h.Write(s.sums[:k])
	binary.LittleEndian.PutUint64(hdr[icodec.BatchHeaderBatchChecksumOffset:], s.h.Sum64())
}
