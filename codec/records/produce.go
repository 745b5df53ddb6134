// Produce side of the record mapping: Kafka records -> Iggy messages.

package records

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"hash/crc32"
	mrand "math/rand/v2"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kbin"

	"github.com/kafka-iggy/kafka-iggy/codec/iggy"
	"github.com/kafka-iggy/kafka-iggy/codec/wire"
)

// BatchHeaderSize is the size of a record batch v2's header (the bytes
// before its first record).
const BatchHeaderSize = kbHeaderSize

// Layout of a record batch v2 (offsets from the batch start, big-endian).
const (
	kbBaseOffset      = 0  // int64
	kbLength          = 8  // int32: bytes after this field
	kbLeaderEpoch     = 12 // int32
	kbMagic           = 16 // int8; also the magic of a legacy message
	kbCRC             = 17 // uint32 CRC32C of bytes [21:]
	kbAttributes      = 21 // int16
	kbLastOffsetDelta = 23 // int32
	kbFirstTimestamp  = 27 // int64
	kbMaxTimestamp    = 35 // int64
	kbProducerID      = 43 // int64
	kbProducerEpoch   = 51 // int16
	kbBaseSequence    = 53 // int32
	kbRecordCount     = 57 // int32
	kbHeaderSize      = 61 // records follow
	kbCRCStart        = kbAttributes

	// Attribute bits of a record batch v2.
	kbAttrCodec         = 0x07
	kbAttrLogAppendTime = 0x08
	kbAttrTransactional = 0x10
	kbAttrControl       = 0x20

	// kbMinRecord is the smallest record v2: length, attributes, timestamp
	// delta, offset delta, key length, value length, header count.
	kbMinRecord = 7
	// kbMinHeader is the smallest record header: name length, value length.
	kbMinHeader = 2

	// Legacy message (magic 0/1) layout: offset int64, size int32, then the
	// message: crc uint32 (IEEE, of the rest), magic, attributes,
	// [timestamp int64 in v1], key bytes (int32 length), value bytes.
	lmOverhead      = 12 // offset + size
	lmMinV0         = 14 // crc + magic + attributes + 2 lengths
	lmMinV1         = 22 // lmMinV0 + timestamp
	lmAttrCodec     = 0x07
	lmAttrLogAppend = 0x08
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// BatchInfo is what the bridge needs of one Kafka batch of a Produce
// partition after mapping, without parsing it again. A legacy (magic 0/1)
// top-level message counts as one batch with no producer fields.
type BatchInfo struct {
	FirstIndex    int   // index of the batch's first message among all mapped messages of the input
	Records       int   // number of records = Iggy messages the batch mapped to
	Magic         int8  // 0, 1 or 2
	Compression   int8  // codec: 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd
	ProducerID    int64 // -1 when none
	ProducerEpoch int16 // -1 when none
	BaseSequence  int32 // sequence of the first record, -1 when none
	Transactional bool  // the batch's transactional attribute (accepted only with Decoder.Txn)
}

// Idempotent reports whether the batch came from an idempotent producer
// (a v2 batch with a producer id and a base sequence).
func (b *BatchInfo) Idempotent() bool {
	return b.Magic == 2 && b.ProducerID >= 0 && b.BaseSequence >= 0
}

// MappedMessage is one Kafka record mapped to an Iggy message, ready for
// iggy.BatchBuilder.Add. Payload and Headers alias the input or the
// decoder's scratch buffers and are valid until the next call of Next.
type MappedMessage struct {
	ID              wire.U128 // random UUID v4 (see Decoder)
	OriginTimestamp uint64    // µs; 0 for Kafka timestamps -1 and 0
	Payload         []byte
	Headers         []byte // user-headers block, kafka.v first
}

// Decoder states.
const (
	recModeIdle   = iota // between top-level entries
	recModeV2            // records of a v2 batch
	recModeLegacy        // legacy messages (a top-level one, or a wrapper's inner set)
)

// Decoder maps the Records bytes of one Produce partition to Iggy
// messages (mapping version 1, KAFKA-ON-IGGY §2). Use it as an iterator:
//
//	d.Reset(records, budget)
//	for d.Next() {
//		m := d.Message()
//		err := builder.Add(m.ID, m.OriginTimestamp, m.Payload, m.Headers)
//		...
//	}
//	if err := d.Err(); err != nil { ... ErrorCode(err) ... }
//	infos := d.Batches()
//
// or let mapInto do exactly that. The zero value is ready; a Decoder
// keeps its scratch buffers and codec readers between inputs, so pool it
// (sync.Pool) and mapping allocates nothing per record in steady state. It
// is not safe for concurrent use.
//
// Input: record batches v2 back to back (CRC32C checked, codecs none, gzip,
// snappy in xerial framing or raw, lz4 frames, zstd), and magic 0/1 message
// sets (CRC32 checked, gzip/snappy/lz4 wrappers; lz4 only in magic 1, whose
// frames follow the LZ4 standard). Control and transactional batches are
// refused. Every length and count is checked against the bytes that must
// hold it before anything is sized from it, and decompression stops at the
// budget.
//
// Timestamps: CreateTime t ms becomes origin t*1000 µs; -1 becomes 0; exactly
// 0 becomes 0 plus kafka.ts=epoch (so Fetch can tell the two apart). A batch
// flagged LogAppendTime (brokers set it; a client should not) carries its
// append time in MaxTimestamp, which is what a Kafka consumer would see on
// every record, so every record of such a batch gets MaxTimestamp. In a magic 1
// wrapper flagged LogAppendTime the inner records get the wrapper's timestamp.
// Magic 0 has no timestamps (-1).
//
// Message ids are random UUID v4 values, as the Iggy SDKs write, from a
// ChaCha8 generator seeded once per decoder from crypto/rand. A deterministic
// id from (producer id, sequence) was considered and rejected: producer ids
// restart from the same counter after a gateway restart, so a server with
// id deduplication enabled would drop new records as duplicates; producer
// dedup happens in the bridge with BatchInfo instead.
type Decoder struct {
	src      []byte // top-level input not yet entered
	in       []byte // the whole input (for offsets in errors)
	budget   *DecompressBudget
	batchIdx int // index of the current top-level entry
	batchOff int // its byte offset in the input
	recIdx   int // index of the current record in its batch

	mode      int
	recs      []byte // records (v2) or messages (legacy) not yet decoded
	left      int    // v2: records still to decode
	firstTS   int64  // v2: FirstTimestamp
	appendTS  int64  // timestamp forced on every record (LogAppendTime), valid when logAppend
	logAppend bool
	stamp     bool  // the topic is LogAppendTime: every record gets stampTS
	stampTS   int64 // ms, valid when stamp
	inner     bool  // legacy: recs is a wrapper's inner set

	batches []BatchInfo
	total   int
	msg     MappedMessage
	err     error

	z     recDecompressor
	view  recView
	hdrs  []recHeader
	sortd []recHeader
	uh    []byte
	env   []byte
	kbuf  []byte
	rng   *mrand.ChaCha8

	// Txn, when set, admits transactional batches (otherwise refused with
	// ErrTransactionalBatch): it is asked once per transactional batch
	// with the batch's producer id and epoch and returns the mark every
	// record of the batch carries in HeaderTxn, or a Kafka error code
	// refusing the batch (ErrTxnRefused, Error.Code).
	Txn     func(producerID int64, epoch int16) (TxnMark, int16)
	txnMark []byte // HeaderTxn value of the current batch; nil when not transactional
}

// Reset starts decoding records, charging decompression to budget (see
// DecompressBudget; nil means no decompression allowed). records is not
// modified and must stay unchanged while messages are in use.
func (d *Decoder) Reset(records []byte, budget *DecompressBudget) {
	d.src, d.in, d.budget = records, records, budget
	d.batchIdx, d.batchOff, d.recIdx = -1, 0, 0
	d.mode, d.recs, d.left, d.inner = recModeIdle, nil, 0, false
	d.batches = d.batches[:0]
	d.total = 0
	d.msg = MappedMessage{}
	d.err = nil
	d.stamp = false
}

// StampAppendTime makes every record of the input get timestamp ms (after
// Reset): the append time of a LogAppendTime topic, which replaces the
// producer's CreateTime as a Kafka broker replaces it.
func (d *Decoder) StampAppendTime(ms int64) {
	d.stamp, d.stampTS = true, ms
}

// Next decodes the next record and reports whether there is one; false at
// the end of the input or on the first error (see Err).
func (d *Decoder) Next() bool {
	if d.err != nil {
		return false
	}
	for {
		switch d.mode {
		case recModeV2:
			if d.left > 0 {
				if err := d.nextV2(); err != nil {
					d.fail(err)
					return false
				}
				return true
			}
			if len(d.recs) != 0 {
				d.fail(d.batchErr(ErrInvalidRecords, strconv.Itoa(len(d.recs))+" bytes after the declared records"))
				return false
			}
			d.mode = recModeIdle
		case recModeLegacy:
			if len(d.recs) > 0 {
				if err := d.nextLegacy(); err != nil {
					d.fail(err)
					return false
				}
				return true
			}
			d.mode = recModeIdle
		}
		if len(d.src) == 0 {
			d.msg = MappedMessage{}
			d.trim()
			return false
		}
		if err := d.enter(); err != nil {
			d.fail(err)
			return false
		}
	}
}

func (d *Decoder) fail(err error) {
	d.err = err
	d.msg = MappedMessage{}
	d.trim()
}

// trim drops scratch buffers too large to keep in a pooled decoder (one
// huge record must not pin its size for the decoder's lifetime).
func (d *Decoder) trim() {
	d.z.trim()
	if cap(d.env) > recMaxRetained {
		d.env = nil
	}
	if cap(d.uh) > recMaxRetained {
		d.uh = nil
	}
	if cap(d.hdrs) > recMaxRetainedHeaders {
		d.hdrs, d.sortd = nil, nil
	}
}

// Message returns the current mapped message (valid until the next Next).
func (d *Decoder) Message() MappedMessage { return d.msg }

// Err returns the first error: a *Error wrapping one of the Err*
// sentinels of records.go.
func (d *Decoder) Err() error { return d.err }

// Batches returns one BatchInfo per top-level batch entered so far;
// complete once Next returned false without error. The slice is reused by
// the next Reset.
func (d *Decoder) Batches() []BatchInfo { return d.batches }

// Count returns the number of messages yielded since Reset.
func (d *Decoder) Count() int { return d.total }

// mapInto decodes records (as Reset) and adds every mapped message to b,
// which the caller has begun. When a message would make b's origin
// timestamps span more than iggy.MaxTimestampSpan µs, mapInto calls split(b):
// split must finish b (keeping the batch bytes; they are to be sent before
// the next ones, so the offsets stay one contiguous range) and Begin it
// again, and mapInto then adds the message to the fresh batch. With a nil
// split such a message fails with iggy.ErrTimestampSpan. mapInto returns
// the number of messages added; on error the caller discards every batch
// of the request (nothing is half-mapped on purpose). Batches reports the
// Kafka batches afterwards.
func (d *Decoder) mapInto(b *iggy.BatchBuilder, records []byte, budget *DecompressBudget, split func(*iggy.BatchBuilder) error) (int, error) {
	d.Reset(records, budget)
	n := 0
	for d.Next() {
		m := &d.msg
		err := b.Add(m.ID, m.OriginTimestamp, m.Payload, m.Headers)
		// ErrTimestampSpan is a sentinel pointer; identity is enough here.
		if err == iggy.ErrTimestampSpan && split != nil && b.Len() > 0 {
			if err = split(b); err == nil {
				err = b.Add(m.ID, m.OriginTimestamp, m.Payload, m.Headers)
			}
		}
		if err != nil {
			return n, err
		}
		n++
	}
	return n, d.err
}

// batchErr builds a *Error about the current batch itself.
func (d *Decoder) batchErr(sentinel error, detail string) error {
	return &Error{Batch: d.batchIdx, Record: -1, Offset: d.batchOff, Detail: detail, Err: sentinel}
}

// recErr builds a *Error about the current record.
func (d *Decoder) recErr(sentinel error, detail string) error {
	return &Error{Batch: d.batchIdx, Record: d.recIdx, Offset: d.batchOff, Detail: detail, Err: sentinel}
}

// enter starts the next top-level entry: a v2 batch or a legacy message.
func (d *Decoder) enter() error {
	d.batchIdx++
	d.batchOff = len(d.in) - len(d.src)
	d.recIdx = 0
	d.txnMark = nil
	if len(d.src) <= kbMagic {
		return d.batchErr(ErrCorruptRecords, "truncated batch header: "+strconv.Itoa(len(d.src))+" bytes")
	}
	switch magic := int8(d.src[kbMagic]); magic {
	case 2:
		return d.enterV2()
	case 0, 1:
		return d.enterLegacy(magic)
	default:
		return d.batchErr(ErrUnsupportedRecords, "magic "+strconv.Itoa(int(magic)))
	}
}

// enterV2 checks a record batch v2 and positions the decoder on its records.
func (d *Decoder) enterV2() error {
	src := d.src
	if len(src) < kbHeaderSize {
		return d.batchErr(ErrCorruptRecords, "truncated batch header: "+strconv.Itoa(len(src))+" bytes")
	}
	length := int32(binary.BigEndian.Uint32(src[kbLength:]))
	if length < kbHeaderSize-kbLeaderEpoch {
		return d.batchErr(ErrCorruptRecords, "batch length "+strconv.Itoa(int(length)))
	}
	total := kbLeaderEpoch + int(length)
	if total > len(src) {
		return d.batchErr(ErrCorruptRecords, "batch length "+strconv.Itoa(int(length))+" runs past the input ("+strconv.Itoa(len(src)-kbLeaderEpoch)+" bytes)")
	}
	b := src[:total:total]
	d.src = src[total:]
	if got, want := crc32.Checksum(b[kbCRCStart:], castagnoli), binary.BigEndian.Uint32(b[kbCRC:]); got != want {
		return d.batchErr(ErrCorruptRecords, "CRC32C mismatch")
	}
	attrs := binary.BigEndian.Uint16(b[kbAttributes:])
	if attrs&kbAttrControl != 0 {
		return d.batchErr(ErrControlBatch, "")
	}
	if attrs&kbAttrTransactional != 0 {
		if d.Txn == nil {
			return d.batchErr(ErrTransactionalBatch, "")
		}
		m, code := d.Txn(int64(binary.BigEndian.Uint64(b[kbProducerID:])), int16(binary.BigEndian.Uint16(b[kbProducerEpoch:])))
		if code != 0 {
			e := d.batchErr(ErrTxnRefused, "").(*Error)
			e.Code = code
			return e
		}
		d.txnMark = AppendTxnMark(make([]byte, 0, TxnMarkLen), m)
	}
	codec := int(attrs & kbAttrCodec)
	if codec > CodecZstd {
		return d.batchErr(ErrUnsupportedCompression, "codec "+strconv.Itoa(codec))
	}
	count := int32(binary.BigEndian.Uint32(b[kbRecordCount:]))
	if count <= 0 {
		return d.batchErr(ErrInvalidRecords, "record count "+strconv.Itoa(int(count)))
	}
	if lod := int32(binary.BigEndian.Uint32(b[kbLastOffsetDelta:])); lod != count-1 {
		return d.batchErr(ErrInvalidRecords, "lastOffsetDelta "+strconv.Itoa(int(lod))+" with "+strconv.Itoa(int(count))+" records")
	}
	recs := b[kbHeaderSize:]
	if codec != CodecNone {
		// Fail fast: the records could never fit in what is left of the
		// budget, so do not decompress at all.
		if int64(count)*kbMinRecord > int64(d.budget.Left()) {
			return d.batchErr(ErrDecompressBudget, strconv.Itoa(int(count))+" records cannot fit in the "+strconv.Itoa(d.budget.Left())+" bytes left")
		}
		out, err := d.z.decompress(codec, recs, d.budget)
		if err != nil {
			return d.decompressErr(err)
		}
		recs = out
	}
	if int64(count)*kbMinRecord > int64(len(recs)) {
		return d.batchErr(ErrCorruptRecords, strconv.Itoa(int(count))+" records cannot fit in "+strconv.Itoa(len(recs))+" bytes")
	}
	d.batches = append(d.batches, BatchInfo{
		FirstIndex:    d.total,
		Records:       int(count),
		Magic:         2,
		Compression:   int8(codec),
		ProducerID:    int64(binary.BigEndian.Uint64(b[kbProducerID:])),
		ProducerEpoch: int16(binary.BigEndian.Uint16(b[kbProducerEpoch:])),
		BaseSequence:  int32(binary.BigEndian.Uint32(b[kbBaseSequence:])),
		Transactional: d.txnMark != nil,
	})
	d.mode, d.recs, d.left = recModeV2, recs, int(count)
	d.firstTS = int64(binary.BigEndian.Uint64(b[kbFirstTimestamp:]))
	d.logAppend = attrs&kbAttrLogAppendTime != 0
	d.appendTS = int64(binary.BigEndian.Uint64(b[kbMaxTimestamp:]))
	return nil
}

func (d *Decoder) decompressErr(err error) error {
	switch {
	case errors.Is(err, errBudget):
		return d.batchErr(ErrDecompressBudget, "budget "+strconv.Itoa(d.budget.Left())+" bytes")
	case errors.Is(err, ErrUnsupportedCompression):
		return d.batchErr(ErrUnsupportedCompression, "")
	}
	return d.batchErr(ErrCorruptRecords, "decompress: "+err.Error())
}

// nextV2 decodes and maps the next record of a v2 batch.
func (d *Decoder) nextV2() error {
	b := d.recs
	length, n := kbin.Varint(b)
	if n <= 0 || length < 0 || int(length) > len(b)-n {
		return d.recErr(ErrCorruptRecords, "record length")
	}
	body := b[n : n+int(length)]
	d.recs = b[n+int(length):]
	d.left--

	v := &d.view
	*v = recView{}
	if len(body) < 1 {
		return d.recErr(ErrCorruptRecords, "empty record")
	}
	body = body[1:] // attributes: unused
	tsDelta, n := kbin.Varlong(body)
	if n <= 0 {
		return d.recErr(ErrCorruptRecords, "timestamp delta")
	}
	body = body[n:]
	if _, n = kbin.Varint(body); n <= 0 { // offset delta: Iggy assigns offsets
		return d.recErr(ErrCorruptRecords, "offset delta")
	}
	body = body[n:]
	var ok bool
	if v.key, v.keyNull, body, ok = recVarintBytes(body); !ok {
		return d.recErr(ErrCorruptRecords, "key")
	}
	if v.value, v.valueNull, body, ok = recVarintBytes(body); !ok {
		return d.recErr(ErrCorruptRecords, "value")
	}
	count, n := kbin.Varint(body)
	if n <= 0 || count < 0 {
		return d.recErr(ErrCorruptRecords, "header count")
	}
	body = body[n:]
	if int(count) > len(body)/kbMinHeader {
		return d.recErr(ErrCorruptRecords, strconv.Itoa(int(count))+" headers cannot fit in "+strconv.Itoa(len(body))+" bytes")
	}
	hs := growHeaders(d.hdrs[:0], int(count))
	for range count {
		var h recHeader
		var null bool
		if h.name, null, body, ok = recVarintBytes(body); !ok || null {
			d.hdrs = hs
			return d.recErr(ErrCorruptRecords, "header name")
		}
		if h.value, h.valueNull, body, ok = recVarintBytes(body); !ok {
			d.hdrs = hs
			return d.recErr(ErrCorruptRecords, "header value")
		}
		hs = append(hs, h)
	}
	d.hdrs = hs
	v.headers = hs
	if len(body) != 0 {
		return d.recErr(ErrInvalidRecords, strconv.Itoa(len(body))+" bytes after the record's headers")
	}
	ts := d.appendTS
	if !d.logAppend {
		var carry bool
		if ts, carry = recAddTimestamp(d.firstTS, tsDelta); carry {
			return d.recErr(ErrRecordTimestamp, "timestamp overflows")
		}
	}
	return d.emit(ts)
}

// recAddTimestamp adds a signed delta, reporting int64 overflow.
func recAddTimestamp(base, delta int64) (int64, bool) {
	s := base + delta
	return s, (base >= 0) == (delta >= 0) && (s >= 0) != (base >= 0)
}

// recVarintBytes reads Kafka varint-length bytes: -1 is null, other
// negative lengths and lengths past the end are not ok.
func recVarintBytes(b []byte) (field []byte, null bool, rest []byte, ok bool) {
	l, n := kbin.Varint(b)
	if n <= 0 || l < -1 {
		return nil, false, b, false
	}
	b = b[n:]
	if l == -1 {
		return nil, true, b, true
	}
	if int(l) > len(b) {
		return nil, false, b, false
	}
	return b[:l:l], false, b[l:], true
}

// emit maps d.view with Kafka timestamp ts (ms) into d.msg.
func (d *Decoder) emit(ts int64) error {
	if d.stamp {
		ts = d.stampTS
	}
	origin, epoch, ok := recOriginFromMillis(ts)
	if !ok {
		return d.recErr(ErrRecordTimestamp, "timestamp "+strconv.FormatInt(ts, 10)+" ms")
	}
	v := &d.view
	uh := iggy.AppendHeader(d.uh[:0], recHdrVersion, iggy.HeaderKindRaw, recValV1)
	var payload []byte
	if d.needsEnvelope(v, epoch) {
		uh = iggy.AppendHeader(uh, recHdrEnvelope, iggy.HeaderKindRaw, recValEnvelope)
		if epoch {
			uh = iggy.AppendHeader(uh, recHdrTS, iggy.HeaderKindString, recValEpoch)
		}
		d.env = appendRecordEnvelope(d.env[:0], v)
		payload = d.env
	} else {
		if !v.keyNull {
			uh = iggy.AppendHeader(uh, recHdrKey, iggy.HeaderKindRaw, v.key)
		}
		switch {
		case v.valueNull:
			uh = iggy.AppendHeader(uh, recHdrValue, iggy.HeaderKindString, recValNull)
			payload = recPlaceholder
		case len(v.value) == 0:
			uh = iggy.AppendHeader(uh, recHdrValue, iggy.HeaderKindString, recValEmpty)
			payload = recPlaceholder
		default:
			payload = v.value
		}
		if epoch {
			uh = iggy.AppendHeader(uh, recHdrTS, iggy.HeaderKindString, recValEpoch)
		}
		for i := range v.headers {
			h := &v.headers[i]
			d.kbuf = append(append(d.kbuf[:0], recHdrPrefix...), h.name...)
			uh = iggy.AppendTLVField(uh, iggy.HeaderKindString, d.kbuf)
			uh = iggy.AppendTLVField(uh, iggy.HeaderKindRaw, h.value)
		}
	}
	if d.txnMark != nil {
		uh = iggy.AppendHeader(uh, HeaderTxn, iggy.HeaderKindRaw, d.txnMark)
	}
	d.uh = uh
	d.msg = MappedMessage{ID: d.NewID(), OriginTimestamp: origin, Payload: payload, Headers: uh}
	d.total++
	d.recIdx++
	return nil
}

// Sizes of the marker pairs in a user-headers block.
const (
	recSizeVersion = 2*recTLVField + len(recHdrVersion) + 1
	recSizeValue   = 2*recTLVField + len(recHdrValue)
	recSizeTS      = 2*recTLVField + len(recHdrTS) + len(recStrEpoch)
	recSizeKey     = 2*recTLVField + len(recHdrKey)
	recSizeHeader  = 2*recTLVField + len(recHdrPrefix)
	recSizeTxn     = 2*recTLVField + len(HeaderTxn) + TxnMarkLen
	// recDupSortMin is the header count from which duplicate names are
	// found by sorting a copy instead of comparing every pair.
	recDupSortMin = 16
)

// needsEnvelope reports whether v cannot be stored natively (§2): a key
// present but empty or over 255 bytes; a header whose kafka.h.<name> key
// would exceed 255 bytes or is not UTF-8 (Iggy keys are String-kinded); a
// header value null, empty or over 255 bytes; two headers with one name;
// or a user-headers block over 100,000 bytes (computed exactly: the block
// emit would write).
func (d *Decoder) needsEnvelope(v *recView, epoch bool) bool {
	if !v.keyNull && (len(v.key) == 0 || len(v.key) > recMaxField) {
		return true
	}
	size := recSizeVersion
	if !v.keyNull {
		size += recSizeKey + len(v.key)
	}
	switch {
	case v.valueNull:
		size += recSizeValue + len(recStrNull)
	case len(v.value) == 0:
		size += recSizeValue + len(recStrEmpty)
	}
	if epoch {
		size += recSizeTS
	}
	if d.txnMark != nil {
		size += recSizeTxn
	}
	for i := range v.headers {
		h := &v.headers[i]
		if len(h.name) > recMaxHeaderName || h.valueNull || len(h.value) == 0 || len(h.value) > recMaxField {
			return true
		}
		size += recSizeHeader + len(h.name) + len(h.value)
	}
	if size > recMaxUserHeaders {
		return true
	}
	for i := range v.headers {
		if !utf8.Valid(v.headers[i].name) {
			return true
		}
	}
	return d.hasDuplicateNames(v.headers)
}

// hasDuplicateNames reports whether two headers share a name: pairwise for
// few headers, else by sorting a copy (O(n log n), no allocation once the
// scratch has grown).
func (d *Decoder) hasDuplicateNames(hs []recHeader) bool {
	if len(hs) < recDupSortMin {
		for i := 1; i < len(hs); i++ {
			for j := range i {
				if bytes.Equal(hs[i].name, hs[j].name) {
					return true
				}
			}
		}
		return false
	}
	d.sortd = append(d.sortd[:0], hs...)
	slices.SortFunc(d.sortd, func(a, b recHeader) int { return bytes.Compare(a.name, b.name) })
	for i := 1; i < len(d.sortd); i++ {
		if bytes.Equal(d.sortd[i].name, d.sortd[i-1].name) {
			return true
		}
	}
	return false
}

// NewID returns a random UUID v4 as Iggy's u128 (the UUID's bytes are the
// little-endian wire bytes, as the SDKs' Uuid::to_u128_le gives).
func (d *Decoder) NewID() wire.U128 {
	if d.rng == nil {
		var seed [32]byte
		_, _ = rand.Read(seed[:]) // never fails (Go 1.24+)
		d.rng = mrand.NewChaCha8(seed)
	}
	lo, hi := d.rng.Uint64(), d.rng.Uint64()
	lo = lo&^(0xf0<<48) | 0x40<<48 // byte 6: version 4
	hi = hi&^0xc0 | 0x80           // byte 8: variant 10
	return wire.U128{Lo: lo, Hi: hi}
}
