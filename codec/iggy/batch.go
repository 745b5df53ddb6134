package iggy

import (
	"encoding/binary"
	"errors"
	"math"
	"strconv"

	"github.com/kafka-iggy/kafka-iggy/codec/wire"
	"github.com/zeebo/xxh3"
)

// Byte offsets of the batch header (§4.1) and the message frame header
// (§4.2), bound to the generated layout constants.
const (
	batchPartitionIDOff     = BatchHeaderPartitionIDOffset     // u64; server-stamped
	batchBaseOffsetOff      = BatchHeaderBaseOffsetOffset      // u64; server-stamped
	batchBaseTimestampOff   = BatchHeaderBaseTimestampOffset   // u64; server-stamped
	batchOriginTimestampOff = BatchHeaderOriginTimestampOffset // u64; minimum origin timestamp
	batchLengthOff          = BatchHeaderBatchLengthOffset     // u64; 256 + blob length
	batchChecksumOff        = BatchHeaderBatchChecksumOffset   // u64
	batchMessageCountOff    = BatchHeaderMessageCountOffset    // u32
	batchReservedOff        = BatchHeaderReservedOffset        // 204 bytes, zero

	frameChecksumOff        = MessageHeaderChecksumOffset          // u64; XXH3 of frame[8:end]
	frameIDOff              = MessageHeaderIDOffset                // u128
	frameOffsetDeltaOff     = MessageHeaderOffsetDeltaOffset       // u32
	frameTimestampDeltaOff  = MessageHeaderTimestampDeltaOffset    // u32
	frameUserHeadersLenOff  = MessageHeaderUserHeadersLengthOffset // u32
	framePayloadLenOff      = MessageHeaderPayloadLengthOffset     // u32
	frameReservedOff        = MessageHeaderReservedOffset          // u64, zero
	frameChecksumCoverStart = MessageHeaderIDOffset                // the frame checksum covers frame[8:end]
)

// batchSumFieldsSize is the header part of the batch checksum input (§4.3):
// partition_id through batch_length as laid out, then message_count (the
// batch_checksum field between them is left out).
const batchSumFieldsSize = BatchHeaderBatchLengthOffset + BatchHeaderBatchLengthSize + BatchHeaderMessageCountSize

const (
	// MaxTimestampSpan is the largest spread of origin timestamps one batch
	// can carry, in µs (the u32 timestamp_delta, §4.2).
	MaxTimestampSpan = LimitMaxTimestampDelta
)

// zeroBatchHeader reserves the batch header in BatchBuilder.Begin.
var zeroBatchHeader [BatchHeaderSize]byte

// batchError is a BatchBuilder error that matches a wire sentinel and, when
// set, an Iggy Status.
type batchError struct {
	msg    string
	err    error
	status Status
}

// Error returns the message.
func (e *batchError) Error() string { return "iggy: " + e.msg }

// Unwrap returns the wire sentinel and, when set, the Status.
func (e *batchError) Unwrap() []error {
	if e.status == 0 {
		return []error{e.err}
	}
	return []error{e.err, e.status}
}

var (
	// ErrTimestampSpan is returned by BatchBuilder.Add when the message would
	// spread the batch's origin timestamps over more than MaxTimestampSpan µs.
	// It matches wire.ErrConstraint and StatusInvalidMessageTimestampDelta;
	// finish the batch and start a new one with the message.
	ErrTimestampSpan error = &batchError{msg: "origin timestamps span more than 2^32-1 µs in one batch", err: wire.ErrConstraint, status: StatusInvalidMessageTimestampDelta}
	// ErrEmptyBatch is returned by BatchBuilder.Finish for a batch without
	// messages (message_count must be >= 1). It matches wire.ErrConstraint.
	ErrEmptyBatch error = &batchError{msg: "batch has no messages", err: wire.ErrConstraint}
	// errFieldTooLarge: a payload or header block longer than a u32 can say.
	errFieldTooLarge error = &batchError{msg: "payload or user headers longer than 2^32-1 bytes", err: wire.ErrTooLarge}
	// errBuilderFinished: Add or Finish after Finish without Begin.
	errBuilderFinished = errors.New("iggy: BatchBuilder used after Finish without Begin")
)

// BatchBuilder builds one batch record (§4.1-§4.3) into a caller-owned
// buffer without allocating beyond that buffer's growth:
//
//	var b iggy.BatchBuilder
//	b.Begin(buf[:0])          // or after the SEND_MESSAGES metadata
//	for ... { if err := b.Add(id, ts, payload, headers); err != nil { ... } }
//	buf, err = b.Finish()
//
// Messages are written in Add order with offset_delta = 0, 1, 2, .... Origin
// timestamps may come in any order: Add stores each message's timestamp in
// its frame and Finish, once the minimum is known, rewrites them as
// timestamp_delta, then computes every frame checksum and the batch checksum
// in one pass. A BatchBuilder is reusable: Begin starts the next batch. The
// zero value is ready, as after Begin(nil).
type BatchBuilder struct {
	buf      []byte
	start    int // offset of the batch header in buf
	n        uint32
	minTS    uint64
	maxTS    uint64
	finished bool
	seal     BatchSealer
}

// Begin starts a new batch record appended after the bytes dst already holds
// (for instance the SEND_MESSAGES metadata of §4.4). It reserves the 256-byte
// batch header.
func (b *BatchBuilder) Begin(dst []byte) {
	b.start = len(dst)
	b.buf = append(dst, zeroBatchHeader[:]...)
	b.n, b.minTS, b.maxTS, b.finished = 0, 0, 0, false
}

// Add appends one message frame: the 48-byte header, payload, then the raw
// user-headers block (not validated; the server stores it as is). id 0 is
// written as 0 (official SDKs replace it with a random id first, §4.8).
// When the message would make the batch's origin timestamps span more than
// MaxTimestampSpan µs it is not added and Add returns ErrTimestampSpan.
func (b *BatchBuilder) Add(id wire.U128, originTimestamp uint64, payload, userHeaders []byte) error {
	if b.finished {
		return errBuilderFinished
	}
	if b.buf == nil {
		b.Begin(nil)
	}
	if uint64(len(payload)) > math.MaxUint32 || uint64(len(userHeaders)) > math.MaxUint32 {
		return errFieldTooLarge
	}
	if b.n == math.MaxUint32 {
		return &batchError{msg: "batch holds 2^32-1 messages", err: wire.ErrTooLarge}
	}
	lo, hi := originTimestamp, originTimestamp
	if b.n > 0 {
		lo, hi = min(lo, b.minTS), max(hi, b.maxTS)
		if hi-lo > MaxTimestampSpan {
			return ErrTimestampSpan
		}
	}
	b.minTS, b.maxTS = lo, hi

	b.buf = AppendOpenFrame(b.buf, id, originTimestamp, payload, userHeaders)
	b.n++
	return nil
}

// Len returns the number of messages added since Begin.
func (b *BatchBuilder) Len() int { return int(b.n) }

// Size returns the size of the batch record so far, header included (0
// before the first Begin or Add).
func (b *BatchBuilder) Size() int {
	if b.buf == nil {
		return 0
	}
	return len(b.buf) - b.start
}

// Span returns the spread of the origin timestamps added so far, in µs.
func (b *BatchBuilder) Span() uint64 { return b.maxTS - b.minTS }

// Finish completes the batch: origin_timestamp = the minimum origin
// timestamp, batch_length, message_count, every frame's timestamp_delta and
// checksum, and the batch checksum (the three server fields are zero). It
// returns the buffer given to Begin extended by the batch record; the record
// is the returned slice from the length dst had at Begin. A batch without
// messages gives ErrEmptyBatch. Call Begin before reusing the builder.
func (b *BatchBuilder) Finish() ([]byte, error) {
	if b.finished {
		return nil, errBuilderFinished
	}
	if b.n == 0 {
		return nil, ErrEmptyBatch
	}
	b.finished = true
	rec := b.buf[b.start:]
	segs := [1][]byte{rec[BatchHeaderSize:]}
	b.seal.Seal(rec[:BatchHeaderSize], segs[:], b.n, b.minTS)
	return b.buf, nil
}

// AppendOpenFrame appends one message frame (§4.2) whose offset_delta,
// timestamp_delta and checksum are still open: the checksum slot parks the
// origin timestamp (OpenFrameOrigin reads it back) until BatchSealer.Seal,
// once the frame's batch is known, fills all three. The payload, then the
// raw user-headers block follow the 48-byte header. Lengths must fit a u32
// (callers check their limits first).
func AppendOpenFrame(dst []byte, id wire.U128, originTimestamp uint64, payload, userHeaders []byte) []byte {
	var hdr [MessageHeaderSize]byte
	binary.LittleEndian.PutUint64(hdr[frameChecksumOff:], originTimestamp)
	putU128(hdr[frameIDOff:], id)
	binary.LittleEndian.PutUint32(hdr[frameUserHeadersLenOff:], uint32(len(userHeaders)))
	binary.LittleEndian.PutUint32(hdr[framePayloadLenOff:], uint32(len(payload)))
	dst = append(dst, hdr[:]...)
	dst = append(dst, payload...)
	return append(dst, userHeaders...)
}

// OpenFrameOrigin returns the origin timestamp an open frame (written by
// AppendOpenFrame, not sealed yet) parks in its checksum slot.
func OpenFrameOrigin(frame []byte) uint64 {
	return binary.LittleEndian.Uint64(frame[frameChecksumOff:])
}

// ReopenFrames turns the frames of blob, sealed (BatchSealer.Seal) in a
// batch whose smallest origin timestamp was minTS, back into open frames:
// each origin timestamp returns to the checksum slot, so the frames can be
// sealed again into another batch (a send a node refused unadmitted, sent
// to another node). The offset and timestamp deltas are left; the next
// Seal overwrites them.
func ReopenFrames(blob []byte, minTS uint64) {
	for off := 0; off < len(blob); {
		f := blob[off:]
		end := frameEnd(f)
		if end < 0 {
			return
		}
		ts := minTS + uint64(binary.LittleEndian.Uint32(f[frameTimestampDeltaOff:]))
		binary.LittleEndian.PutUint64(f[frameChecksumOff:], ts)
		off += end
	}
}

// FrameLen returns the length of the message frame at the start of blob
// (header, payload and user headers) when it fits in blob, else -1.
func FrameLen(blob []byte) int { return frameEnd(blob) }

// BatchSealer completes a batch record (§4.1-§4.3) whose open frames
// (AppendOpenFrame) lie in one or more segments, for instance the buffers
// of several coalesced sends: it numbers the frames, turns their origin
// timestamps into timestamp deltas, computes every frame checksum and the
// batch checksum in one pass, in place, and fills the batch header. The
// zero value is ready; a BatchSealer is reusable and not safe for
// concurrent use. It allocates nothing.
type BatchSealer struct {
	h    xxh3.Hasher
	sums [256]byte
}

// Seal fills the 256-byte batch header hdr (the three server fields zero)
// for the frames in segs: count frames in total, minTS the smallest origin
// timestamp among them. A frame that does not fit its segment ends that
// segment's walk (only a caller scribbling on the frames can cause it).
func (s *BatchSealer) Seal(hdr []byte, segs [][]byte, count uint32, minTS uint64) {
	blob := 0
	for _, seg := range segs {
		blob += len(seg)
	}
	clear(hdr[:BatchHeaderSize])
	length := uint64(BatchHeaderSize + blob)
	binary.LittleEndian.PutUint64(hdr[batchOriginTimestampOff:], minTS)
	binary.LittleEndian.PutUint64(hdr[batchLengthOff:], length)
	binary.LittleEndian.PutUint32(hdr[batchMessageCountOff:], count)

	s.h.Reset()
	hashBatchFields(&s.h, hdr, length, count)
	k := 0
	idx := uint32(0)
	for _, seg := range segs {
		for off := 0; off < len(seg); {
			f := seg[off:]
			end := frameEnd(f)
			if end < 0 {
				break
			}
			ts := binary.LittleEndian.Uint64(f[frameChecksumOff:])
			binary.LittleEndian.PutUint32(f[frameOffsetDeltaOff:], idx)
			binary.LittleEndian.PutUint32(f[frameTimestampDeltaOff:], uint32(ts-minTS))
			sum := xxh3.Hash(f[frameChecksumCoverStart:end])
			binary.LittleEndian.PutUint64(f[frameChecksumOff:], sum)
			binary.LittleEndian.PutUint64(s.sums[k:], sum)
			if k += 8; k == len(s.sums) {
				s.h.Write(s.sums[:])
				k = 0
			}
			idx++
			off += end
		}
	}
	s.h.Write(s.sums[:k])
	binary.LittleEndian.PutUint64(hdr[batchChecksumOff:], s.h.Sum64())
}

// hashBatchFields writes the header part of the batch checksum input (§4.3):
// partition_id, base_offset, base_timestamp, origin_timestamp as in rec,
// then length and count as given.
func hashBatchFields(h *xxh3.Hasher, rec []byte, length uint64, count uint32) {
	var f [batchSumFieldsSize]byte
	copy(f[:batchLengthOff], rec[batchPartitionIDOff:batchLengthOff])
	binary.LittleEndian.PutUint64(f[batchLengthOff:], length)
	binary.LittleEndian.PutUint32(f[batchLengthOff+BatchHeaderBatchLengthSize:], count)
	h.Write(f[:])
}

// frameEnd returns the length of the frame at the start of blob (header,
// payload and user headers) when it fits in blob, else -1.
func frameEnd(blob []byte) int {
	if len(blob) < MessageHeaderSize {
		return -1
	}
	n := uint64(MessageHeaderSize) + uint64(binary.LittleEndian.Uint32(blob[framePayloadLenOff:])) +
		uint64(binary.LittleEndian.Uint32(blob[frameUserHeadersLenOff:]))
	if n > uint64(len(blob)) {
		return -1
	}
	return int(n)
}

// batchSum computes the batch checksum of a record whose frames are
// rec[from:to] (count frames, already known to tile), with length as the
// batch_length to hash. It stops quietly at a frame that does not fit.
func batchSum(rec []byte, from, to int, length uint64, count uint32) uint64 {
	var h xxh3.Hasher
	hashBatchFields(&h, rec, length, count)
	var sums [256]byte
	k := 0
	for off := from; off < to; {
		n := frameEnd(rec[off:to])
		if n < 0 {
			break
		}
		copy(sums[k:k+8], rec[off+frameChecksumOff:])
		if k += 8; k == len(sums) {
			h.Write(sums[:])
			k = 0
		}
		off += n
	}
	h.Write(sums[:k])
	return h.Sum64()
}

func batchErr(field string, off int, err error, detail string) error {
	return &wire.DecodeError{Message: "batch", Field: field, Offset: off, Err: err, Detail: detail}
}

// CheckBatch applies the server's admission checks 2-6 of §4.5 to a single
// batch record that must fill b exactly: batch_length >= 256 and equal to
// len(b), reserved header bytes zero, every frame's reserved bytes zero and
// lengths within the blob, frames tiling the blob, their number equal to
// message_count, message_count >= 1, every frame checksum and the batch
// checksum. The batch checksum is computed over the three server fields as
// they are in the header (zero from a producer), so a stamped stored batch
// passes too. The error is a *wire.DecodeError wrapping wire.ErrShortBuffer,
// wire.ErrTrailingBytes, wire.ErrConstraint or wire.ErrChecksum.
func CheckBatch(b []byte) error {
	if len(b) < BatchHeaderSize {
		return &wire.DecodeError{Message: "batch", Field: "header", Need: BatchHeaderSize, Have: len(b), Err: wire.ErrShortBuffer}
	}
	length := binary.LittleEndian.Uint64(b[batchLengthOff:])
	switch {
	case length < BatchHeaderSize:
		return batchErr("batch_length", batchLengthOff, wire.ErrConstraint, "batch_length "+strconv.FormatUint(length, 10)+" below 256")
	case length > uint64(len(b)):
		return &wire.DecodeError{Message: "batch", Field: "batch_length", Offset: batchLengthOff, Need: int(min(length, math.MaxInt32)), Have: len(b), Err: wire.ErrShortBuffer}
	case length < uint64(len(b)):
		return batchErr("batch_length", batchLengthOff, wire.ErrTrailingBytes, strconv.Itoa(len(b)-int(length))+" bytes after the batch")
	}
	for i := batchReservedOff; i < BatchHeaderSize; i++ {
		if b[i] != 0 {
			return batchErr("reserved", i, wire.ErrConstraint, "reserved header byte not zero")
		}
	}
	count := binary.LittleEndian.Uint32(b[batchMessageCountOff:])
	if count == 0 {
		return batchErr("message_count", batchMessageCountOff, wire.ErrConstraint, "message_count 0")
	}
	var h xxh3.Hasher
	hashBatchFields(&h, b, length, count)
	var sums [256]byte
	k := 0
	frames := uint32(0)
	for off := BatchHeaderSize; off < len(b); {
		n := frameEnd(b[off:])
		if n < 0 {
			if len(b)-off < MessageHeaderSize {
				return &wire.DecodeError{Message: "batch", Field: "frame[" + strconv.FormatUint(uint64(frames), 10) + "]", Offset: off, Need: MessageHeaderSize, Have: len(b) - off, Err: wire.ErrShortBuffer}
			}
			return batchErr("frame["+strconv.FormatUint(uint64(frames), 10)+"].payload_length", off+framePayloadLenOff, wire.ErrShortBuffer, "payload and user headers run past the batch")
		}
		f := b[off : off+n]
		if binary.LittleEndian.Uint64(f[frameReservedOff:]) != 0 {
			return batchErr("frame["+strconv.FormatUint(uint64(frames), 10)+"].reserved", off+frameReservedOff, wire.ErrConstraint, "reserved frame bytes not zero")
		}
		if got, want := binary.LittleEndian.Uint64(f[frameChecksumOff:]), xxh3.Hash(f[frameChecksumCoverStart:]); got != want {
			return batchErr("frame["+strconv.FormatUint(uint64(frames), 10)+"].checksum", off+frameChecksumOff, wire.ErrChecksum,
				"have "+strconv.FormatUint(got, 16)+", computed "+strconv.FormatUint(want, 16))
		}
		copy(sums[k:k+8], f[frameChecksumOff:])
		if k += 8; k == len(sums) {
			h.Write(sums[:])
			k = 0
		}
		frames++
		off += n
	}
	if frames != count {
		return batchErr("message_count", batchMessageCountOff, wire.ErrConstraint,
			"message_count "+strconv.FormatUint(uint64(count), 10)+" but "+strconv.FormatUint(uint64(frames), 10)+" frames")
	}
	h.Write(sums[:k])
	if got, want := binary.LittleEndian.Uint64(b[batchChecksumOff:]), h.Sum64(); got != want {
		return batchErr("batch_checksum", batchChecksumOff, wire.ErrChecksum,
			"have "+strconv.FormatUint(got, 16)+", computed "+strconv.FormatUint(want, 16))
	}
	return nil
}

// BatchMessageCount returns the message_count field of the batch header at
// the start of b, or 0 when b is shorter than the field.
func BatchMessageCount(b []byte) uint32 {
	if len(b) < batchMessageCountOff+4 {
		return 0
	}
	return binary.LittleEndian.Uint32(b[batchMessageCountOff:])
}

// CheckBatches walks zero or more batch records back to back (a poll reply
// after its 16-byte prefix, §4.6) and checks their structure only: each
// record's batch_length is >= 256 and within the input, its frames tile its
// blob exactly and their number equals its message_count; the records fill b
// exactly. Checksums are not required. A MessageIter over input that passes
// CheckBatches yields every message without error.
func CheckBatches(b []byte) error {
	_, err := CountBatchMessages(b)
	return err
}

// CountBatchMessages is CheckBatches that also returns the total number of
// messages, to compare with a poll reply's count field.
func CountBatchMessages(b []byte) (uint64, error) {
	var total uint64
	for off := 0; off < len(b); {
		rec, count, err := nextRecord(b[off:], off)
		if err != nil {
			return total, err
		}
		frames := uint32(0)
		for foff := BatchHeaderSize; foff < len(rec); {
			n := frameEnd(rec[foff:])
			if n < 0 {
				return total, &wire.DecodeError{Message: "batches", Field: "frame", Offset: off + foff, Err: wire.ErrShortBuffer, Detail: "frame runs past its batch"}
			}
			frames++
			foff += n
		}
		if frames != count {
			return total, &wire.DecodeError{Message: "batches", Field: "message_count", Offset: off + batchMessageCountOff, Err: wire.ErrConstraint,
				Detail: "message_count " + strconv.FormatUint(uint64(count), 10) + " but " + strconv.FormatUint(uint64(frames), 10) + " frames"}
		}
		total += uint64(count)
		off += len(rec)
	}
	return total, nil
}

// nextRecord returns the batch record at the start of rest (bounded by its
// batch_length) and its message_count; off is rest's offset in the input,
// for errors.
func nextRecord(rest []byte, off int) ([]byte, uint32, error) {
	if len(rest) < BatchHeaderSize {
		return nil, 0, &wire.DecodeError{Message: "batches", Field: "header", Offset: off, Need: BatchHeaderSize, Have: len(rest), Err: wire.ErrShortBuffer}
	}
	length := binary.LittleEndian.Uint64(rest[batchLengthOff:])
	if length < BatchHeaderSize {
		return nil, 0, &wire.DecodeError{Message: "batches", Field: "batch_length", Offset: off + batchLengthOff, Err: wire.ErrConstraint,
			Detail: "batch_length " + strconv.FormatUint(length, 10) + " below 256"}
	}
	if length > uint64(len(rest)) {
		return nil, 0, &wire.DecodeError{Message: "batches", Field: "batch_length", Offset: off + batchLengthOff,
			Need: int(min(length, math.MaxInt32)), Have: len(rest), Err: wire.ErrShortBuffer}
	}
	return rest[:length:length], binary.LittleEndian.Uint32(rest[batchMessageCountOff:]), nil
}

// StampBatch performs the server's stamping of a checked batch record (§4.5):
// partition_id, base_offset and base_timestamp are written and the batch
// checksum is recomputed; frames are untouched. b must have passed
// CheckBatch; on other input it never panics but the result is unspecified.
func StampBatch(b []byte, partitionID uint32, baseOffset, baseTimestamp uint64) {
	if len(b) < BatchHeaderSize {
		return
	}
	binary.LittleEndian.PutUint64(b[batchPartitionIDOff:], uint64(partitionID))
	binary.LittleEndian.PutUint64(b[batchBaseOffsetOff:], baseOffset)
	binary.LittleEndian.PutUint64(b[batchBaseTimestampOff:], baseTimestamp)
	length := binary.LittleEndian.Uint64(b[batchLengthOff:])
	end := len(b)
	if length >= BatchHeaderSize && length < uint64(end) {
		end = int(length)
	}
	sum := batchSum(b, BatchHeaderSize, end, length, binary.LittleEndian.Uint32(b[batchMessageCountOff:]))
	binary.LittleEndian.PutUint64(b[batchChecksumOff:], sum)
}

// AppendBatchSlice appends to dst a batch record holding only the frames
// with index from..to-1 (positions in the batch, not offset deltas) of the
// stored batch record b, as a server serves a partial batch on a poll
// (§4.6): batch_length, message_count and batch_checksum are rewritten;
// partition_id, base_offset, base_timestamp and origin_timestamp are kept,
// and the frames are copied unchanged. to is clamped to the number of frames
// present; when no frame is selected (or b is not a well-formed record)
// nothing is appended.
func AppendBatchSlice(dst, b []byte, from, to uint32) []byte {
	if len(b) < BatchHeaderSize || from >= to {
		return dst
	}
	length := binary.LittleEndian.Uint64(b[batchLengthOff:])
	if length < BatchHeaderSize || length > uint64(len(b)) {
		return dst
	}
	rec := b[:length]
	start, end := -1, -1
	idx := uint32(0)
	for off := BatchHeaderSize; off < len(rec) && idx < to; idx++ {
		n := frameEnd(rec[off:])
		if n < 0 {
			break
		}
		if idx == from {
			start = off
		}
		off += n
		end = off
	}
	if start < 0 {
		return dst
	}
	count := min(idx, to) - from
	newLen := uint64(BatchHeaderSize + end - start)
	hdrAt := len(dst)
	dst = append(dst, rec[:BatchHeaderSize]...)
	dst = append(dst, rec[start:end]...)
	out := dst[hdrAt:]
	binary.LittleEndian.PutUint64(out[batchLengthOff:], newLen)
	binary.LittleEndian.PutUint32(out[batchMessageCountOff:], count)
	binary.LittleEndian.PutUint64(out[batchChecksumOff:], batchSum(out, BatchHeaderSize, len(out), newLen, count))
	return dst
}

// Message is one message as a reader reports it (§4.2). Payload and Headers
// alias the input of the MessageIter.
type Message struct {
	Offset          uint64    // batch base_offset + offset_delta
	Timestamp       uint64    // server append time: the batch's base_timestamp
	OriginTimestamp uint64    // producer time: batch origin_timestamp + timestamp_delta
	ID              wire.U128 // producer-chosen id (§4.8)
	Checksum        uint64    // the frame's XXH3 checksum field
	PartitionID     uint32    // the batch's stamped partition_id
	Payload         []byte
	Headers         []byte // raw user-headers block (§2.8), unvalidated
}

// MessageIter walks the messages of zero or more batch records back to back
// (a poll reply body after its 16-byte prefix, §4.6) without allocating:
//
//	it := iggy.NewMessageIter(body[16:])
//	for it.Next() {
//		m := it.Message()
//		...
//	}
//	if err := it.Err(); err != nil { ... }
//
// It checks the same structure as CheckBatches as it goes; checksums are not
// verified (ChecksumOK does that on demand).
type MessageIter struct {
	rest    []byte // records not yet entered
	consume int    // bytes of the input consumed by entered records
	blob    []byte // frames of the current record not yet yielded
	left    uint32 // frames the current record still claims
	part    uint32 // current record's partition_id, base_offset,
	base    uint64 // base_timestamp and origin_timestamp
	baseTS  uint64
	origin  uint64
	frame   []byte
	msg     Message
	err     error
}

// NewMessageIter returns an iterator over the batch records in batches.
func NewMessageIter(batches []byte) MessageIter { return MessageIter{rest: batches} }

// Next advances to the next message and reports whether there is one. It
// returns false at the end of the input or on the first structural error.
func (it *MessageIter) Next() bool {
	if it.err != nil {
		return false
	}
	for len(it.blob) == 0 {
		if it.left != 0 {
			it.fail(&wire.DecodeError{Message: "batches", Field: "message_count", Offset: it.consume, Err: wire.ErrConstraint,
				Detail: strconv.FormatUint(uint64(it.left), 10) + " frames missing at the end of a batch"})
			return false
		}
		if len(it.rest) == 0 {
			it.frame, it.msg = nil, Message{}
			return false
		}
		rec, count, err := nextRecord(it.rest, it.consume)
		if err != nil {
			it.fail(err)
			return false
		}
		it.part = uint32(binary.LittleEndian.Uint64(rec[batchPartitionIDOff:]))
		it.base = binary.LittleEndian.Uint64(rec[batchBaseOffsetOff:])
		it.baseTS = binary.LittleEndian.Uint64(rec[batchBaseTimestampOff:])
		it.origin = binary.LittleEndian.Uint64(rec[batchOriginTimestampOff:])
		it.blob = rec[BatchHeaderSize:]
		it.left = count
		it.rest = it.rest[len(rec):]
		it.consume += BatchHeaderSize
	}
	n := frameEnd(it.blob)
	if n < 0 {
		it.fail(&wire.DecodeError{Message: "batches", Field: "frame", Offset: it.consume, Err: wire.ErrShortBuffer, Detail: "frame runs past its batch"})
		return false
	}
	if it.left == 0 {
		it.fail(&wire.DecodeError{Message: "batches", Field: "message_count", Offset: it.consume, Err: wire.ErrConstraint, Detail: "more frames than message_count"})
		return false
	}
	f := it.blob[:n:n]
	plen := int(binary.LittleEndian.Uint32(f[framePayloadLenOff:]))
	m := &it.msg
	m.Offset = it.base + uint64(binary.LittleEndian.Uint32(f[frameOffsetDeltaOff:]))
	m.Timestamp = it.baseTS
	m.OriginTimestamp = it.origin + uint64(binary.LittleEndian.Uint32(f[frameTimestampDeltaOff:]))
	m.ID = getU128(f[frameIDOff:])
	m.Checksum = binary.LittleEndian.Uint64(f[frameChecksumOff:])
	m.PartitionID = it.part
	m.Payload = f[MessageHeaderSize : MessageHeaderSize+plen : MessageHeaderSize+plen]
	m.Headers = f[MessageHeaderSize+plen:]
	it.frame = f
	it.blob = it.blob[n:]
	it.left--
	it.consume += n
	return true
}

func (it *MessageIter) fail(err error) {
	it.err = err
	it.frame, it.msg = nil, Message{}
}

// Message returns the current message (zero after Next returned false).
func (it *MessageIter) Message() Message { return it.msg }

// Frame returns the raw frame bytes (header, payload, user headers) of the
// current message, aliasing the input.
func (it *MessageIter) Frame() []byte { return it.frame }

// ChecksumOK reports whether the current message's checksum field matches
// XXH3 of its frame (§4.3).
func (it *MessageIter) ChecksumOK() bool {
	if len(it.frame) < MessageHeaderSize {
		return false
	}
	return binary.LittleEndian.Uint64(it.frame[frameChecksumOff:]) == xxh3.Hash(it.frame[frameChecksumCoverStart:])
}

// Offset returns the number of input bytes consumed so far (whole batch
// headers and the frames yielded).
func (it *MessageIter) Offset() int { return it.consume }

// Err returns the first structural error, or nil.
func (it *MessageIter) Err() error { return it.err }
