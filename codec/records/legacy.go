// Produce side, legacy message sets: magic 0 and 1 messages (a set of
// one when uncompressed; a compressed wrapper's inner set decompressed and
// walked), decoded into the same mapped messages as record batches v2.

package records

import (
	"encoding/binary"
	"hash/crc32"
	"strconv"
)

// enterLegacy starts a top-level magic 0/1 message: an uncompressed one is
// decoded by nextLegacy as a set of one; a compressed wrapper is checked
// and its inner message set decompressed.
func (d *Decoder) enterLegacy(magic int8) error {
	src := d.src
	m, n, lerr := parseLegacyMessage(src)
	if lerr != nil {
		return d.batchErr(lerr.sentinel, lerr.detail)
	}
	entry := src[:n:n]
	d.src = src[n:]
	codec := int(m.attrs & lmAttrCodec)
	d.batches = append(d.batches, BatchInfo{
		FirstIndex: d.total, Magic: magic, Compression: int8(codec),
		ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1,
	})
	d.mode, d.inner, d.logAppend = recModeLegacy, false, false
	if codec == CodecNone {
		d.recs = entry
		return nil
	}
	switch {
	case codec > CodecLZ4:
		return d.batchErr(ErrUnsupportedCompression, "codec "+strconv.Itoa(codec)+" in a magic "+strconv.Itoa(int(magic))+" message")
	case codec == CodecLZ4 && magic == 0:
		return d.batchErr(ErrUnsupportedRecords, "lz4 in magic 0 (non-standard frame checksum)")
	case m.valueNull:
		return d.batchErr(ErrInvalidRecords, "compressed wrapper without a value")
	}
	inner, err := d.z.decompress(codec, m.value, d.budget)
	if err != nil {
		return d.decompressErr(err)
	}
	if len(inner) == 0 {
		return d.batchErr(ErrInvalidRecords, "compressed wrapper without inner messages")
	}
	d.recs, d.inner = inner, true
	if magic == 1 && m.attrs&lmAttrLogAppend != 0 {
		d.logAppend, d.appendTS = true, m.ts
	}
	return nil
}

// nextLegacy decodes and maps the next legacy message of d.recs.
func (d *Decoder) nextLegacy() error {
	m, n, lerr := parseLegacyMessage(d.recs)
	if lerr != nil {
		return d.recErr(lerr.sentinel, lerr.detail)
	}
	d.recs = d.recs[n:]
	if d.inner && m.attrs&lmAttrCodec != 0 {
		return d.recErr(ErrInvalidRecords, "nested compression")
	}
	d.batches[len(d.batches)-1].Records++
	v := &d.view
	*v = recView{key: m.key, keyNull: m.keyNull, value: m.value, valueNull: m.valueNull}
	ts := m.ts
	if d.logAppend {
		ts = d.appendTS
	}
	return d.emit(ts)
}

// legacyMsg is one decoded magic 0/1 message.
type legacyMsg struct {
	attrs              byte
	ts                 int64 // -1 for magic 0
	key, value         []byte
	keyNull, valueNull bool
}

// Static parse failures of legacy messages; the decoder reports their
// sentinel and detail in a *Error.
var (
	errLegacyTruncated = &legacyErr{ErrCorruptRecords, "truncated message"}
	errLegacySize      = &legacyErr{ErrCorruptRecords, "message size"}
	errLegacyCRC       = &legacyErr{ErrCorruptRecords, "CRC32 mismatch"}
	errLegacyMagic     = &legacyErr{ErrInvalidRecords, "magic other than 0/1 in a message set"}
	errLegacyField     = &legacyErr{ErrCorruptRecords, "key or value length"}
	errLegacyTrailing  = &legacyErr{ErrCorruptRecords, "bytes after the value"}
)

// legacyErr is a static legacy parse failure: the sentinel to report and
// what was wrong.
type legacyErr struct {
	sentinel error
	detail   string
}

// parseLegacyMessage decodes the message at the start of b (offset, size,
// then the message) and returns it with its total size.
func parseLegacyMessage(b []byte) (legacyMsg, int, *legacyErr) {
	var m legacyMsg
	if len(b) < lmOverhead {
		return m, 0, errLegacyTruncated
	}
	size := int32(binary.BigEndian.Uint32(b[8:]))
	if size < lmMinV0 {
		return m, 0, errLegacySize
	}
	total := lmOverhead + int(size)
	if total > len(b) {
		return m, 0, errLegacyTruncated
	}
	msg := b[lmOverhead:total]
	magic := msg[4]
	if magic > 1 {
		return m, 0, errLegacyMagic
	}
	if magic == 1 && size < lmMinV1 {
		return m, 0, errLegacySize
	}
	if crc32.ChecksumIEEE(msg[4:]) != binary.BigEndian.Uint32(msg) {
		return m, 0, errLegacyCRC
	}
	m.attrs = msg[5]
	p := msg[6:]
	m.ts = -1
	if magic == 1 {
		m.ts = int64(binary.BigEndian.Uint64(p))
		p = p[8:]
	}
	var ok bool
	if m.key, m.keyNull, p, ok = legacyBytes(p); !ok {
		return m, 0, errLegacyField
	}
	if m.value, m.valueNull, p, ok = legacyBytes(p); !ok {
		return m, 0, errLegacyField
	}
	if len(p) != 0 {
		return m, 0, errLegacyTrailing
	}
	return m, total, nil
}

// legacyBytes reads int32-length bytes (-1 = null).
func legacyBytes(p []byte) (field []byte, null bool, rest []byte, ok bool) {
	if len(p) < 4 {
		return nil, false, p, false
	}
	l := int32(binary.BigEndian.Uint32(p))
	p = p[4:]
	switch {
	case l == -1:
		return nil, true, p, true
	case l < 0 || int(l) > len(p):
		return nil, false, p, false
	}
	return p[:l:l], false, p[l:], true
}
