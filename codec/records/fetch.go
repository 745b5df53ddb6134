// Fetch side of the record mapping: Iggy messages -> Kafka record batches v2.

package records

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/valyala/bytebufferpool"

	"github.com/kafka-iggy/kafka-iggy/codec/iggy"
	"github.com/kafka-iggy/kafka-iggy/codec/wire"
)

// SkipReason says why BatchWriter left a message out.
type SkipReason uint8

// Reasons for skipping a message on Fetch. A skipped message leaves an
// offset gap the consumer steps over (as on a compacted topic).
const (
	// SkipUnknownVersion: kafka.v holds a mapping version other than 1.
	SkipUnknownVersion SkipReason = iota + 1
	// SkipBadMarker: a mapping header does not parse (kafka.v not one
	// byte or repeated, kafka.value not null/empty, kafka.ts not epoch or
	// with a nonzero origin timestamp, kafka.envelope not 0x01, kafka.key
	// repeated).
	SkipBadMarker
	// SkipBadHeaders: the user-headers block breaks the TLV rules (the
	// server stores it unvalidated).
	SkipBadHeaders
	// SkipBadEnvelope: kafka.envelope is set but the payload is not a
	// well-formed envelope.
	SkipBadEnvelope
)

// String names the reason for logs and metric labels.
func (r SkipReason) String() string {
	switch r {
	case SkipUnknownVersion:
		return "unknown_mapping_version"
	case SkipBadMarker:
		return "bad_marker"
	case SkipBadHeaders:
		return "bad_user_headers"
	case SkipBadEnvelope:
		return "bad_envelope"
	}
	return "unknown"
}

var (
	// ErrKafkaBatchFull is returned by BatchWriter.Add when the record
	// would take the batch past its byte limit. The message was not added.
	ErrKafkaBatchFull = errors.New("bridge: kafka batch full")
	// ErrKafkaBatchRange is returned by BatchWriter.Add when the
	// message's offset is too far from the batch's base offset for an int32
	// offset delta (or the batch holds 2^31-1 records): finish the batch and
	// add the message to a new one.
	ErrKafkaBatchRange = errors.New("bridge: message offset outside the kafka batch's range")
	// ErrFetchOffsetOrder is returned by BatchWriter.Add for a message
	// whose offset is not above the previous one's.
	ErrFetchOffsetOrder = errors.New("bridge: iggy message offsets not increasing")
	// ErrKafkaBatchSplit is returned by BatchWriter.Add when the message
	// belongs in a batch of its own kind: another transaction (producer id,
	// epoch or transaction), a transactional record after plain ones or the
	// reverse, or a transaction's end marker (a control batch of one
	// record). Nothing changed: finish the batch and add the message to a
	// new one.
	ErrKafkaBatchSplit = errors.New("bridge: message starts another kafka batch")
)

// BatchWriter builds Kafka record batches v2 from Iggy messages
// (mapping version 1 inverted, KAFKA-ON-IGGY §2):
//
//	w.Begin(dst, maxBytes, first)
//	for it.Next() {
//		m := it.Message()
//		if err := w.Add(&m); err != nil { ... ErrKafkaBatchFull: stop ... }
//	}
//	dst = w.Finish()
//
// or AppendBatches for exactly that. Batches have base offset = the first
// message's Iggy offset, offset deltas from the real offsets (gaps allowed),
// CreateTime, no compression, producer id/epoch/base sequence -1, partition
// leader epoch -1, and a CRC32C.
//
// A message with a kafka.v header of 0x01 is restored exactly: key, value
// (tombstone, empty), headers in their order, the timestamp (origin µs/1000;
// origin 0 is -1, or 0 with kafka.ts=epoch) and envelopes. Other keys in such
// a message (not written by the gateway) become headers under their own
// names. A message without kafka.v was written by an Iggy client: null key,
// the payload as value, every user header as a Kafka header under its own
// name with the raw value bytes whatever their kind, timestamp = origin
// µs/1000, or the append time when the origin is 0. A message whose marker
// does not parse is skipped: OnSkip is called, Skipped counts it, and the
// batch's lastOffsetDelta still covers it so the consumer moves past it. A
// batch whose every message was skipped is written with zero records (as
// compaction leaves them), which Kafka clients step over.
//
// The zero value is ready; it keeps scratch space between batches, so pool
// it and encoding allocates nothing per record in steady state. Not safe
// for concurrent use.
type BatchWriter struct {
	// OnSkip, when set, is called for every skipped message with its Iggy
	// offset; the caller counts it and logs it rate-limited.
	OnSkip func(offset uint64, reason SkipReason)
	// LogAppendTime flags the batches LogAppendTime (attribute bit 3) with
	// the largest record timestamp as their MaxTimestamp, which is what a
	// Kafka consumer then reads for every record: set it for a topic whose
	// message.timestamp.type is LogAppendTime (the gateway wrote its append
	// time as each record's timestamp).
	LogAppendTime bool
	// Sequence, when set, gives the Kafka sequence an idempotent producer's
	// Iggy message id carries (ok false for other ids): a transactional
	// batch's base sequence is its first record's (else -1).
	Sequence func(id wire.U128) (int32, bool)
	// Stop makes AppendBatches stop at the first message at or past
	// StopBefore (read_committed: the last stable offset);
	// BatchStats.Stopped then says so.
	Stop       bool
	StopBefore uint64
	// Drop, when set, leaves out a transaction's data record for which it
	// answers true (read_committed: a fenced producer's late writes,
	// bridge/txnread's Tracker.Late), as a skipped message is: an offset
	// gap the consumer steps over, but neither OnSkip nor Skipped counts it.
	Drop func(mark TxnMark, offset uint64) bool

	buf        []byte
	start      int
	limit      int
	atLeastOne bool
	n          int32 // records written
	seen       bool  // any message seen (written or skipped)
	base, last uint64
	firstTS    int64
	maxTS      int64
	skipped    int
	// The kind of the current batch (set by its first record): a
	// transaction's records (txnOn, txn), or its end marker (control).
	txn     TxnMark
	txnOn   bool
	control bool
	ctlOn   bool // the batch's first record is decided
	baseSeq int32
	ctlBuf  [10]byte // the control record's key (4) and value (6)

	view recView
	tlv  []recHeader // user headers of the current message
	env  []recHeader // envelope headers of the current message
}

// Begin starts a batch appended to dst. The batch will not grow past
// maxBytes (header included), except that with atLeastOne its first record
// is always taken, however large (Kafka's rule for the first batch of a
// Fetch response, so a consumer always makes progress). Use math.MaxInt for
// no limit.
func (w *BatchWriter) Begin(dst []byte, maxBytes int, atLeastOne bool) {
	w.start = len(dst)
	w.buf = append(dst, make([]byte, kbHeaderSize)...)
	w.limit, w.atLeastOne = maxBytes, atLeastOne
	w.n, w.seen, w.base, w.last = 0, false, 0, 0
	w.firstTS, w.maxTS = -1, -1
	w.skipped = 0
	w.txnOn, w.control, w.ctlOn, w.baseSeq = false, false, false, -1
}

// Len returns the number of records in the batch.
func (w *BatchWriter) Len() int { return int(w.n) }

// Skipped returns the number of messages skipped since Begin.
func (w *BatchWriter) Skipped() int { return w.skipped }

// Size returns the batch's size so far, header included.
func (w *BatchWriter) Size() int { return len(w.buf) - w.start }

// NextOffset returns the offset after the last message added or skipped
// (the offset a consumer fetches next), and false when none was.
func (w *BatchWriter) NextOffset() (uint64, bool) { return w.last + 1, w.seen }

// Add maps m into the batch as one record, or skips it (nil error, see
// OnSkip). It returns ErrKafkaBatchFull when the record does not fit the
// byte limit, ErrKafkaBatchRange when m cannot share this batch's base
// offset, ErrFetchOffsetOrder when m.Offset is not above the previous
// message's; in all three cases nothing changed.
func (w *BatchWriter) Add(m *iggy.Message) error {
	if w.seen {
		if m.Offset <= w.last {
			return ErrFetchOffsetOrder
		}
		if m.Offset-w.base > math.MaxInt32 || w.n == math.MaxInt32 {
			return ErrKafkaBatchRange
		}
	}
	if w.seen && w.control {
		return ErrKafkaBatchSplit // a control batch holds its marker alone
	}
	ts, reason := w.Decode(m)
	v := &w.view
	if reason == 0 && v.txnOn && v.txn.Control == 0 && w.Drop != nil && w.Drop(v.txn.Mark, m.Offset) {
		w.markSeen(m.Offset)
		return nil
	}
	if reason == 0 && w.ctlOn {
		if v.txnOn != w.txnOn || v.txn.Control != 0 || (v.txnOn && v.txn.Mark != w.txn) {
			return ErrKafkaBatchSplit
		}
	}
	if reason == 0 && v.txn.Control != 0 && w.seen {
		return ErrKafkaBatchSplit // markers start their own batch
	}
	if reason != 0 {
		w.markSeen(m.Offset)
		w.skipped++
		if w.OnSkip != nil {
			w.OnSkip(m.Offset, reason)
		}
		return nil
	}
	base := w.base
	if !w.seen {
		base = m.Offset
	}
	firstTS := w.firstTS
	if w.n == 0 {
		firstTS = ts
	}
	offDelta := int32(m.Offset - base)
	tsDelta := ts - firstTS

	body := 1 + kbin.VarlongLen(tsDelta) + kbin.VarintLen(offDelta) +
		recBytesLen(v.key, v.keyNull) + recBytesLen(v.value, v.valueNull) +
		kbin.VarintLen(int32(len(v.headers)))
	for i := range v.headers {
		h := &v.headers[i]
		body += recBytesLen(h.name, false) + recBytesLen(h.value, h.valueNull)
	}
	size := kbin.VarintLen(int32(body)) + body
	if (w.n > 0 || !w.atLeastOne) && w.Size()+size > w.limit {
		return ErrKafkaBatchFull
	}

	b := growBytes(w.buf, size)
	b = kbin.AppendVarint(b, int32(body))
	b = append(b, 0) // attributes
	b = kbin.AppendVarlong(b, tsDelta)
	b = kbin.AppendVarint(b, offDelta)
	b = recAppendBytes(b, v.key, v.keyNull)
	b = recAppendBytes(b, v.value, v.valueNull)
	b = kbin.AppendVarint(b, int32(len(v.headers)))
	for i := range v.headers {
		h := &v.headers[i]
		b = recAppendBytes(b, h.name, false)
		b = recAppendBytes(b, h.value, h.valueNull)
	}
	w.buf = b
	w.markSeen(m.Offset)
	if !w.ctlOn {
		w.ctlOn, w.txnOn, w.txn, w.control = true, v.txnOn, v.txn.Mark, v.txn.Control != 0
		if v.txnOn && !w.control && w.Sequence != nil {
			if seq, ok := w.Sequence(m.ID); ok {
				w.baseSeq = seq
			}
		}
	}
	w.firstTS = firstTS
	if w.n == 0 || ts > w.maxTS {
		w.maxTS = ts
	}
	w.n++
	return nil
}

func (w *BatchWriter) markSeen(off uint64) {
	if !w.seen {
		w.base, w.seen = off, true
	}
	w.last = off
}

// Finish completes the batch and returns dst (as given to Begin) extended
// by it. Without any message seen, or when an all-skipped (empty) batch
// does not fit the limit, dst is returned unchanged.
func (w *BatchWriter) Finish() []byte {
	if !w.seen || (w.n == 0 && !w.atLeastOne && kbHeaderSize > w.limit) {
		return w.buf[:w.start]
	}
	h := w.buf[w.start:]
	binary.BigEndian.PutUint64(h[kbBaseOffset:], w.base)
	binary.BigEndian.PutUint32(h[kbLength:], uint32(len(h)-kbLeaderEpoch))
	binary.BigEndian.PutUint32(h[kbLeaderEpoch:], math.MaxUint32) // -1
	h[kbMagic] = 2
	var attrs uint16
	if w.LogAppendTime {
		attrs = kbAttrLogAppendTime
	}
	pid, epoch, seq := uint64(math.MaxUint64), uint16(math.MaxUint16), uint32(math.MaxUint32) // -1
	if w.txnOn {
		attrs |= kbAttrTransactional
		pid, epoch = uint64(w.txn.ProducerID), uint16(w.txn.Epoch)
		if w.control {
			attrs |= kbAttrControl
		} else {
			seq = uint32(w.baseSeq)
		}
	}
	binary.BigEndian.PutUint16(h[kbAttributes:], attrs)
	binary.BigEndian.PutUint32(h[kbLastOffsetDelta:], uint32(w.last-w.base))
	binary.BigEndian.PutUint64(h[kbFirstTimestamp:], uint64(w.firstTS))
	binary.BigEndian.PutUint64(h[kbMaxTimestamp:], uint64(w.maxTS))
	binary.BigEndian.PutUint64(h[kbProducerID:], pid)
	binary.BigEndian.PutUint16(h[kbProducerEpoch:], epoch)
	binary.BigEndian.PutUint32(h[kbBaseSequence:], seq)
	binary.BigEndian.PutUint32(h[kbRecordCount:], uint32(w.n))
	binary.BigEndian.PutUint32(h[kbCRC:], crc32.Checksum(h[kbCRCStart:], castagnoli))
	return w.buf
}

// BatchStats describes what AppendBatches did.
type BatchStats struct {
	Batches    int    // Kafka batches appended
	Records    int    // records in them
	Skipped    int    // messages skipped (see SkipReason)
	NextOffset uint64 // offset after the last message consumed (valid when Consumed)
	Consumed   bool   // at least one message was added or skipped
	Full       bool   // stopped at the byte limit with messages left in the iterator
	Stopped    bool   // stopped at StopBefore
	Txn        bool   // a transactional or control batch was appended
}

// AppendBatches appends to dst Kafka batches built from the messages of it,
// within maxBytes in total (header bytes included), with Kafka's rule that
// atLeastOne makes the first record go in whatever its size. Normally that
// is one batch; a new one starts only when offsets outgrow an int32 delta.
// When a record does not fit, the message is left out and stats.Full is
// set: the iterator has consumed it, so the caller resumes from
// stats.NextOffset (the consumer's next fetch does exactly that). An error
// of the iterator is returned with the batches built so far.
func (w *BatchWriter) AppendBatches(dst []byte, it *iggy.MessageIter, maxBytes int, atLeastOne bool) ([]byte, BatchStats, error) {
	var st BatchStats
	used := 0
	w.Begin(dst, maxBytes, atLeastOne)
	var m iggy.Message
	pending := false
	for {
		if !pending {
			if !it.Next() {
				break
			}
			m = it.Message()
		}
		pending = false
		if w.Stop && m.Offset >= w.StopBefore {
			st.Stopped = true
			break
		}
		err := w.Add(&m)
		if err == nil {
			continue
		}
		if err == ErrKafkaBatchRange || err == ErrKafkaBatchSplit { // own sentinels: identity is enough
			dst, used = w.finishInto(&st, used)
			w.Begin(dst, maxBytes-used, false)
			pending = true
			continue
		}
		if err == ErrKafkaBatchFull {
			st.Full = true
			break
		}
		dst, _ = w.finishInto(&st, used)
		return dst, st, err
	}
	dst, _ = w.finishInto(&st, used)
	return dst, st, it.Err()
}

// finishInto finishes the current batch, adds it to st and returns the
// extended buffer and the bytes used so far.
func (w *BatchWriter) finishInto(st *BatchStats, used int) ([]byte, int) {
	before := w.start
	out := w.Finish()
	if len(out) > before {
		st.Batches++
		used += len(out) - before
	}
	st.Records += int(w.n)
	st.Txn = st.Txn || (w.txnOn && len(out) > before)
	st.Skipped += w.skipped
	if next, ok := w.NextOffset(); ok {
		st.NextOffset, st.Consumed = next, true
	}
	return out, used
}

// Decode fills w.view from m and returns the Kafka timestamp (ms), or the
// reason to skip m.
func (w *BatchWriter) Decode(m *iggy.Message) (int64, SkipReason) {
	v := &w.view
	*v = recView{}
	tlv := w.tlv[:0]
	it := iggy.NewHeaderIter(m.Headers)
	version := -1 // index of kafka.v in tlv
	for it.Next() {
		_, k := it.Key()
		_, val := it.Value()
		if string(k) == recHdrVersion {
			if version >= 0 {
				w.tlv = tlv
				return 0, SkipBadMarker
			}
			version = len(tlv)
		}
		tlv = append(tlv, recHeader{name: k, value: val})
	}
	w.tlv = tlv
	if it.Err() != nil {
		return 0, SkipBadHeaders
	}
	if version < 0 {
		// Written by an Iggy client.
		v.value, v.keyNull, v.headers = m.Payload, true, tlv
		ts := m.OriginTimestamp
		if ts == 0 {
			ts = m.Timestamp
		}
		return int64(ts / 1000), 0
	}
	switch ver := tlv[version].value; {
	case len(ver) != 1:
		return 0, SkipBadMarker
	case ver[0] != mappingVersion:
		return 0, SkipUnknownVersion
	}
	return w.decodeV1(m, tlv)
}

// decodeV1 inverts mapping version 1 for a message whose headers are tlv.
func (w *BatchWriter) decodeV1(m *iggy.Message, tlv []recHeader) (int64, SkipReason) {
	v := &w.view
	v.keyNull = true
	v.value = m.Payload
	var haveKey, haveValue, epoch, envelope, coordEpoch bool
	out := tlv[:0] // Kafka headers, compacted in place (never ahead of the reader)
	for i := range tlv {
		h := tlv[i]
		switch string(h.name) {
		case recHdrVersion:
		case recHdrKey:
			if haveKey {
				return 0, SkipBadMarker
			}
			haveKey, v.key, v.keyNull = true, h.value, false
		case recHdrValue:
			if haveValue {
				return 0, SkipBadMarker
			}
			haveValue = true
			switch string(h.value) {
			case recStrNull:
				v.value, v.valueNull = nil, true
			case recStrEmpty:
				v.value = m.Payload[:0]
			default:
				return 0, SkipBadMarker
			}
		case recHdrTS:
			if epoch || string(h.value) != recStrEpoch {
				return 0, SkipBadMarker
			}
			epoch = true
		case recHdrEnvelope:
			if envelope || len(h.value) != 1 || h.value[0] != recEnvelopeVersion {
				return 0, SkipBadMarker
			}
			envelope = true
		case HeaderTxn:
			mark, ok := ParseTxnMark(h.value)
			if v.txnOn || !ok {
				return 0, SkipBadMarker
			}
			v.txn.Mark, v.txnOn = mark, true
		case HeaderControl:
			if v.txn.Control != 0 || len(h.value) != 1 || (h.value[0] != ControlCommit && h.value[0] != ControlAbort) {
				return 0, SkipBadMarker
			}
			v.txn.Control = h.value[0]
		case HeaderCoordEpoch:
			if coordEpoch || len(h.value) != 4 {
				return 0, SkipBadMarker
			}
			coordEpoch, v.txn.CoordEpoch = true, int32(binary.LittleEndian.Uint32(h.value))
		default:
			if len(h.name) >= len(recHdrPrefix) && string(h.name[:len(recHdrPrefix)]) == recHdrPrefix {
				h.name = h.name[len(recHdrPrefix):]
			}
			out = append(out, h)
		}
	}
	v.headers = out
	switch {
	case v.txn.Control != 0 && (!v.txnOn || !coordEpoch):
		return 0, SkipBadMarker
	case v.txn.Control != 0:
		// A transaction's end marker: one control record, as Kafka writes
		// it (key: version 0, type; value: version 0, coordinator epoch).
		c := AppendControlValue(AppendControlKey(w.ctlBuf[:0], v.txn.Control), v.txn.CoordEpoch)
		v.key, v.keyNull, v.value, v.valueNull, v.headers = c[:4], false, c[4:], false, out[:0]
	case coordEpoch:
		return 0, SkipBadMarker
	}
	var ts int64 = -1
	switch {
	case epoch && m.OriginTimestamp != 0:
		return 0, SkipBadMarker
	case epoch:
		ts = 0
	case m.OriginTimestamp != 0:
		ts = int64(m.OriginTimestamp / 1000)
	}
	if envelope {
		var err error
		if w.env, err = parseRecordEnvelope(m.Payload, v, w.env); err != nil {
			return 0, SkipBadEnvelope
		}
	}
	return ts, 0
}

// recBytesLen is the encoded size of Kafka varint-length bytes.
func recBytesLen(b []byte, null bool) int {
	if null {
		return kbin.VarintLen(-1)
	}
	return kbin.VarintLen(int32(len(b))) + len(b)
}

// recAppendBytes appends Kafka varint-length bytes (-1 for null).
func recAppendBytes(dst, b []byte, null bool) []byte {
	if null {
		return kbin.AppendVarint(dst, -1)
	}
	dst = kbin.AppendVarint(dst, int32(len(b)))
	return append(dst, b...)
}

// DownConvert rewrites the record batches v2 in dst[from:] (as
// BatchWriter writes them: uncompressed) as a message set of magic 0
// (Fetch v0-v1) or 1 (Fetch v2-v3), as Kafka down-converts for old
// consumers: one message per record, offset and key and value kept, magic 1
// with the record's CreateTime, headers dropped (the old formats have
// none). Messages that would take the set past limit are left out (the
// consumer fetches them next time), except the first one with atLeastOne.
func DownConvert(dst []byte, from int, magic int8, limit int, atLeastOne bool) []byte {
	tmp := convertPool.Get()
	defer convertPool.Put(tmp)
	out := tmp.B[:0]
	in := dst[from:]
	n := 0
	for len(in) >= kbHeaderSize {
		size := int(binary.BigEndian.Uint32(in[kbLength:])) + kbLeaderEpoch
		if size < kbHeaderSize || size > len(in) {
			break
		}
		batch := in[:size]
		in = in[size:]
		if binary.BigEndian.Uint16(batch[kbAttributes:])&kbAttrControl != 0 {
			continue // transaction markers: the old formats have none (Kafka drops them too)
		}
		base := int64(binary.BigEndian.Uint64(batch[kbBaseOffset:]))
		firstTS := int64(binary.BigEndian.Uint64(batch[kbFirstTimestamp:]))
		recs := batch[kbHeaderSize:]
		for len(recs) > 0 {
			length, k := kbin.Varint(recs)
			if k <= 0 || length < 0 || int(length) > len(recs)-k {
				break
			}
			rec := recs[k : k+int(length)]
			recs = recs[k+int(length):]
			key, value, tsDelta, offDelta, ok := parseOwnRecord(rec)
			if !ok {
				break
			}
			before := len(out)
			out = appendLegacyMessage(out, magic, base+int64(offDelta), firstTS+tsDelta, key, value)
			if len(out) > limit && (n > 0 || !atLeastOne) {
				out = out[:before]
				in = nil
				break
			}
			n++
		}
	}
	dst = append(dst[:from], out...)
	tmp.B = out
	return dst
}

// parseOwnRecord reads one record v2 body as BatchWriter writes it;
// null key or value come back as nil.
func parseOwnRecord(rec []byte) (key, value []byte, tsDelta int64, offDelta int32, ok bool) {
	if len(rec) < 1 {
		return nil, nil, 0, 0, false
	}
	rec = rec[1:] // attributes
	var k int
	if tsDelta, k = kbin.Varlong(rec); k <= 0 {
		return nil, nil, 0, 0, false
	}
	rec = rec[k:]
	if offDelta, k = kbin.Varint(rec); k <= 0 {
		return nil, nil, 0, 0, false
	}
	rec = rec[k:]
	if key, rec, ok = ownVarBytes(rec); !ok {
		return nil, nil, 0, 0, false
	}
	if value, _, ok = ownVarBytes(rec); !ok {
		return nil, nil, 0, 0, false
	}
	return key, value, tsDelta, offDelta, true
}

// ownVarBytes reads varint-length bytes (-1 = nil).
func ownVarBytes(b []byte) ([]byte, []byte, bool) {
	n, k := kbin.Varint(b)
	if k <= 0 || n < -1 || int(n) > len(b)-k {
		return nil, b, false
	}
	b = b[k:]
	if n < 0 {
		return nil, b, true
	}
	return b[:n:n], b[n:], true
}

// appendLegacyMessage appends one message of magic 0 or 1 with its offset
// and size prefix: crc (IEEE) | magic | attributes | [timestamp] | key |
// value, lengths as int32 (-1 = null).
func appendLegacyMessage(dst []byte, magic int8, offset, ts int64, key, value []byte) []byte {
	size := 4 + 1 + 1 + 4 + len(key) + 4 + len(value)
	if magic == 1 {
		size += 8
	}
	dst = binary.BigEndian.AppendUint64(dst, uint64(offset))
	dst = binary.BigEndian.AppendUint32(dst, uint32(size))
	crcAt := len(dst)
	dst = append(dst, 0, 0, 0, 0, byte(magic), 0)
	if magic == 1 {
		dst = binary.BigEndian.AppendUint64(dst, uint64(ts))
	}
	dst = appendLegacyBytes(dst, key)
	dst = appendLegacyBytes(dst, value)
	binary.BigEndian.PutUint32(dst[crcAt:], crc32.ChecksumIEEE(dst[crcAt+4:]))
	return dst
}

func appendLegacyBytes(dst, b []byte) []byte {
	if b == nil {
		return binary.BigEndian.AppendUint32(dst, math.MaxUint32) // -1
	}
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(b)))
	return append(dst, b...)
}

// convertPool holds DownConvert's scratch buffers.
var convertPool bytebufferpool.Pool
