// Record mapping, version 1 (docs/KAFKA-ON-IGGY.md §2): one Kafka
// record is one Iggy message, both directions, as pure functions without I/O.
//
// Produce (produce.go): Decoder walks the Records bytes of one
// Produce partition (record batches v2, or legacy message sets v0/v1),
// checks CRCs, decompresses under a DecompressBudget shared by the whole
// request, and yields one MappedMessage per Kafka record; mapInto adds them
// to an iggy.BatchBuilder and asks the caller to start a new Iggy batch when
// the origin timestamps would span more than iggy.MaxTimestampSpan.
//
// Fetch (fetch.go): BatchWriter turns a run of Iggy messages
// into Kafka record batches v2 (uncompressed, CreateTime, producer fields
// -1, CRC32C), restoring what the produce side stored, and skips (with a
// report) messages whose mapping marker it does not understand.
//
// The user headers the gateway writes on every message:
//
//	kafka.v        Raw    0x01                  mapping version, always first
//	kafka.key      Raw    the key               key of 1..255 bytes
//	kafka.value    String "null" | "empty"      null or empty value; payload is 0x00
//	kafka.ts       String "epoch"               CreateTime exactly 0 ms (origin 0)
//	kafka.h.<n>    Raw    the header value      Kafka header n, value 1..255 bytes
//	kafka.envelope Raw    0x01                  payload is the envelope (see below)
//
// Readers compare header keys and values by their bytes and ignore kinds.

// Package records is the Kafka record codec: record batches and legacy
// message sets to Iggy messages and back (records.go, produce.go,
// compress.go, fetch.go), and the Fetch response encoder that leaves
// record bytes in place for vectored writes (response.go). It knows no
// Iggy session: callers bring the bytes and take the results.
package records

import (
	"encoding/binary"
	"errors"
	"math"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
)

// mappingVersion is the value of the kafka.v user header the gateway
// writes on every message (mapping version 1).
const mappingVersion = 1

// Header names and limits of the mapping.
const (
	recHdrVersion  = "kafka.v"
	recHdrKey      = "kafka.key"
	recHdrValue    = "kafka.value"
	recHdrTS       = "kafka.ts"
	recHdrEnvelope = "kafka.envelope"
	recHdrPrefix   = "kafka.h."

	// recMaxField is the longest key or value of one Iggy user header.
	recMaxField = 255
	// recMaxHeaderName is the longest Kafka header name kafka.h.<n> can hold.
	recMaxHeaderName = recMaxField - len(recHdrPrefix)
	// recMaxUserHeaders is the SDKs' limit for a whole user-headers block.
	recMaxUserHeaders = 100_000
	// recTLVField is the fixed part of one TLV field: kind u8 + length u32.
	recTLVField = 5

	// recEnvelopeVersion is the layout version in the kafka.envelope header.
	recEnvelopeVersion = 1
	// recEnvelopeFixed is the size of an envelope without key, value and
	// headers: flags, key_len, value_len, header_count.
	recEnvelopeFixed = 13
	// recEnvelopeHeaderFixed is the fixed size of one envelope header:
	// name_len, value_present, value_len.
	recEnvelopeHeaderFixed = 9
	// Envelope flag bits.
	recEnvKeyPresent   = 1 << 0
	recEnvValuePresent = 1 << 1
)

// Marker values (strings for comparisons, bytes for builders, which copy
// them; never modified).
const (
	recStrNull  = "null"
	recStrEmpty = "empty"
	recStrEpoch = "epoch"
)

var (
	recValV1       = []byte{mappingVersion}
	recValEnvelope = []byte{recEnvelopeVersion}
	recValNull     = []byte(recStrNull)
	recValEmpty    = []byte(recStrEmpty)
	recValEpoch    = []byte(recStrEpoch)
	recPlaceholder = []byte{0}
)

// Sentinel errors of the record mapping; a *Error wraps exactly one
// of them. ErrorCode maps them to Kafka error codes.
var (
	// ErrCorruptRecords: the bytes do not parse (truncated batch, bad CRC,
	// a length running past its container, undecodable compressed data).
	ErrCorruptRecords = errors.New("bridge: corrupt records")
	// ErrInvalidRecords: the bytes parse but break a rule of the format
	// (record count not matching the records, lastOffsetDelta not count-1,
	// a negative length, nested compression, a batch without records).
	ErrInvalidRecords = errors.New("bridge: invalid records")
	// ErrControlBatch: a control batch (transaction marker) sent by a
	// client; brokers write those, clients never may.
	ErrControlBatch = errors.New("bridge: control batch from a client")
	// ErrTransactionalBatch: a transactional batch; the gateway supports no
	// transactions, and storing it as plain data would be wrong.
	ErrTransactionalBatch = errors.New("bridge: transactional batch (transactions are not supported)")
	// ErrTxnRefused: a transactional batch its transaction does not admit
	// (Decoder.Txn's code, in Error.Code: not in the producer's open
	// transaction, an old epoch).
	ErrTxnRefused = errors.New("bridge: transactional batch refused by its transaction")
	// ErrUnsupportedRecords: a format the gateway does not read (magic > 2,
	// LZ4 in magic 0 message sets with their non-standard frame checksum).
	ErrUnsupportedRecords = errors.New("bridge: unsupported record format")
	// ErrUnsupportedCompression: a compression codec outside none, gzip,
	// snappy, lz4, zstd (or zstd in a magic 0/1 message set).
	ErrUnsupportedCompression = errors.New("bridge: unsupported compression codec")
	// ErrDecompressBudget: decompressing would exceed the request's
	// DecompressBudget (or a declared record count could never fit in it).
	ErrDecompressBudget = errors.New("bridge: decompressed records exceed the request budget")
	// ErrRecordTimestamp: a record timestamp Iggy cannot hold: below -1 ms,
	// or beyond 2^64-1 µs.
	ErrRecordTimestamp = errors.New("bridge: record timestamp out of range")
)

// Error describes why a Produce partition's records were refused.
type Error struct {
	Batch  int    // index of the top-level batch (or legacy message) in the input
	Record int    // index of the record in that batch; -1 for the batch itself
	Offset int    // byte offset of that batch in the input
	Detail string // what exactly was wrong
	Err    error  // one of the Err* sentinels of this file
	Code   int16  // ErrTxnRefused: the Kafka error code
}

// Error formats the error with its position.
func (e *Error) Error() string {
	s := e.Err.Error() + " (batch " + strconv.Itoa(e.Batch) + " at byte " + strconv.Itoa(e.Offset)
	if e.Record >= 0 {
		s += ", record " + strconv.Itoa(e.Record)
	}
	s += ")"
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// Unwrap returns the sentinel.
func (e *Error) Unwrap() error { return e.Err }

// ErrorCode maps an error of the record mapping to the Kafka error
// code a Produce partition response carries: 0 for nil, CORRUPT_MESSAGE (2),
// INVALID_RECORD (87), UNSUPPORTED_FOR_MESSAGE_FORMAT (43),
// UNSUPPORTED_COMPRESSION_TYPE (76), MESSAGE_TOO_LARGE (10) for the budget,
// INVALID_TIMESTAMP (32); UNKNOWN_SERVER_ERROR (-1) for anything else.
func ErrorCode(err error) int16 {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, ErrTxnRefused):
		var e *Error
		if errors.As(err, &e) && e.Code != 0 {
			return e.Code
		}
		return kerr.InvalidTxnState.Code
	case errors.Is(err, ErrCorruptRecords):
		return kerr.CorruptMessage.Code
	case errors.Is(err, ErrInvalidRecords), errors.Is(err, ErrControlBatch):
		return kerr.InvalidRecord.Code
	case errors.Is(err, ErrTransactionalBatch), errors.Is(err, ErrUnsupportedRecords):
		return kerr.UnsupportedForMessageFormat.Code
	case errors.Is(err, ErrUnsupportedCompression):
		return kerr.UnsupportedCompressionType.Code
	case errors.Is(err, ErrDecompressBudget):
		return kerr.MessageTooLarge.Code
	case errors.Is(err, ErrRecordTimestamp):
		return kerr.InvalidTimestamp.Code
	}
	return kerr.UnknownServerError.Code
}

// DecompressBudget bounds the bytes that decompression may produce for one
// Produce request: create one per request with the request's frame limit
// (a request can then never expand past what the client could have sent
// uncompressed) and pass the same pointer for every partition. Every byte a
// compressed batch decompresses to is charged and never refunded. A nil
// budget is an empty one: compressed batches fail, uncompressed ones pass.
// Not safe for concurrent use.
type DecompressBudget struct{ left int }

// NewDecompressBudget returns a budget of n bytes (negative counts as 0).
func NewDecompressBudget(n int) *DecompressBudget { return &DecompressBudget{left: max(n, 0)} }

// Left returns the bytes still available.
func (b *DecompressBudget) Left() int {
	if b == nil {
		return 0
	}
	return b.left
}

// charge takes n bytes from the budget; it reports false (and takes
// nothing) when fewer are left.
func (b *DecompressBudget) charge(n int) bool {
	if n == 0 {
		return true
	}
	if b == nil || n > b.left {
		return false
	}
	b.left -= n
	return true
}

// recHeader is one Kafka record header as the mapping sees it; slices alias
// the input.
type recHeader struct {
	name, value []byte
	valueNull   bool
}

// recView is one Kafka record's key, value and headers; slices alias the
// input or a scratch buffer.
type recView struct {
	key, value         []byte
	keyNull, valueNull bool
	headers            []recHeader
	txn                TxnInfo // the transaction headers (Fetch; issue 25)
	txnOn              bool    // HeaderTxn present
}

// recEnvelopeSize returns the encoded size of v's envelope.
func recEnvelopeSize(v *recView) int {
	n := recEnvelopeFixed + len(v.key) + len(v.value)
	for i := range v.headers {
		n += recEnvelopeHeaderFixed + len(v.headers[i].name) + len(v.headers[i].value)
	}
	return n
}

// appendRecordEnvelope appends the envelope layout of §2 (all integers
// little-endian):
//
//	u8 flags (bit0 key present, bit1 value present) | u32 key_len | key |
//	u32 value_len | value | u32 header_count |
//	per header: u32 name_len | name | u8 value_present | u32 value_len | value
//
// Lengths of absent fields are 0. The caller guarantees every length fits a
// u32 (records come from frames far smaller than 4 GiB).
func appendRecordEnvelope(dst []byte, v *recView) []byte {
	dst = growBytes(dst, recEnvelopeSize(v))
	var flags byte
	if !v.keyNull {
		flags |= recEnvKeyPresent
	}
	if !v.valueNull {
		flags |= recEnvValuePresent
	}
	dst = append(dst, flags)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(v.key)))
	dst = append(dst, v.key...)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(v.value)))
	dst = append(dst, v.value...)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(v.headers)))
	for i := range v.headers {
		h := &v.headers[i]
		dst = binary.LittleEndian.AppendUint32(dst, uint32(len(h.name)))
		dst = append(dst, h.name...)
		if h.valueNull {
			dst = append(dst, 0)
		} else {
			dst = append(dst, 1)
		}
		dst = binary.LittleEndian.AppendUint32(dst, uint32(len(h.value)))
		dst = append(dst, h.value...)
	}
	return dst
}

// errEnvelope is the (static) reason an envelope does not parse; callers
// report it as a skip, so it carries no position.
var errEnvelope = errors.New("bridge: malformed record envelope")

// parseRecordEnvelope decodes an envelope into v, reusing scratch for the
// headers (the returned slice is scratch grown). Slices alias payload. The
// layout must fill payload exactly, flags may only use bits 0 and 1,
// value_present must be 0 or 1, absent fields must have length 0, and the
// header count is checked against the bytes left before scratch grows.
func parseRecordEnvelope(payload []byte, v *recView, scratch []recHeader) ([]recHeader, error) {
	*v = recView{}
	p := payload
	if len(p) < recEnvelopeFixed {
		return scratch, errEnvelope
	}
	flags := p[0]
	if flags&^(recEnvKeyPresent|recEnvValuePresent) != 0 {
		return scratch, errEnvelope
	}
	p = p[1:]
	var ok bool
	if v.key, p, ok = envelopeField(p, flags&recEnvKeyPresent != 0); !ok {
		return scratch, errEnvelope
	}
	v.keyNull = flags&recEnvKeyPresent == 0
	if v.value, p, ok = envelopeField(p, flags&recEnvValuePresent != 0); !ok {
		return scratch, errEnvelope
	}
	v.valueNull = flags&recEnvValuePresent == 0
	if len(p) < 4 {
		return scratch, errEnvelope
	}
	count := binary.LittleEndian.Uint32(p)
	p = p[4:]
	if uint64(count) > uint64(len(p)/recEnvelopeHeaderFixed) {
		return scratch, errEnvelope
	}
	hs := growHeaders(scratch[:0], int(count))
	for range count {
		if len(p) < 4 {
			return hs, errEnvelope
		}
		n := binary.LittleEndian.Uint32(p)
		p = p[4:]
		if uint64(n) > uint64(len(p)) {
			return hs, errEnvelope
		}
		name := p[:n:n]
		p = p[n:]
		if len(p) < 1 || p[0] > 1 {
			return hs, errEnvelope
		}
		present := p[0] == 1
		var val []byte
		if val, p, ok = envelopeField(p[1:], present); !ok {
			return hs, errEnvelope
		}
		hs = append(hs, recHeader{name: name, value: val, valueNull: !present})
	}
	if len(p) != 0 {
		return hs, errEnvelope
	}
	v.headers = hs
	return hs, nil
}

// envelopeField reads u32 length + bytes; an absent field must have length
// 0 (and then yields nil).
func envelopeField(p []byte, present bool) (field, rest []byte, ok bool) {
	if len(p) < 4 {
		return nil, p, false
	}
	n := binary.LittleEndian.Uint32(p)
	p = p[4:]
	if uint64(n) > uint64(len(p)) || (!present && n != 0) {
		return nil, p, false
	}
	if !present {
		return nil, p, true
	}
	return p[:n:n], p[n:], true
}

// growBytes returns b with room for n more bytes.
func growBytes(b []byte, n int) []byte {
	if n <= cap(b)-len(b) {
		return b
	}
	nb := make([]byte, len(b), len(b)+max(n, len(b)))
	copy(nb, b)
	return nb
}

// growHeaders returns hs with room for n more headers. Callers bound n by
// the bytes that must hold them first.
func growHeaders(hs []recHeader, n int) []recHeader {
	if n <= cap(hs)-len(hs) {
		return hs
	}
	nh := make([]recHeader, len(hs), len(hs)+max(n, len(hs)))
	copy(nh, hs)
	return nh
}

// recOriginFromMillis maps a Kafka CreateTime (ms) to an Iggy origin
// timestamp (µs): -1 (no timestamp) -> 0; exactly 0 -> 0 with the epoch
// marker; below -1 or past 2^64-1 µs -> not ok.
func recOriginFromMillis(ms int64) (origin uint64, epoch, ok bool) {
	switch {
	case ms == -1:
		return 0, false, true
	case ms == 0:
		return 0, true, true
	case ms < -1 || uint64(ms) > math.MaxUint64/1000:
		return 0, false, false
	}
	return uint64(ms) * 1000, false, true
}
