package iggy

import (
	"math"

	"github.com/valyala/bytebufferpool"

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
// Frames are written as open Iggy message frames (icodec.AppendOpenFrame:
// offset_delta, timestamp_delta and checksum left open): the client seals
// them (icodec.BatchSealer) only once it knows which Iggy batch the frames
// leave in (several Sends to one partition may be coalesced into one
// batch), so each frame is hashed once.
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
	// An open frame: the batch it leaves in is sealed later
	// (icodec.BatchSealer, in the session).
	m.buf.B = icodec.AppendOpenFrame(m.buf.B, id, originTimestamp, payload, userHeaders)
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
