package records

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"io"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/snappy/xerial"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

// tRec is a Kafka record in tests: nil Key/Value mean null, []byte{} empty;
// a header with a nil Value is a null header value.
type tRec struct {
	Key, Value []byte
	Headers    []kmsg.Header
	TS         int64 // ms
}

// tBatchOpts are the batch-level fields of a test batch v2.
type tBatchOpts struct {
	codec      int // Codec*; -1 = snappy raw (attribute 2)
	attrs      int16
	pid        int64
	epoch      int16
	seq        int32
	maxTS      *int64
	count      *int32 // override NumRecords
	lastDelta  *int32 // override LastOffsetDelta
	compressed func([]byte) []byte
}

// tRecordBytes encodes one record v2 with kmsg (an encoder independent of
// the code under test).
func tRecordBytes(r tRec, firstTS int64, i int) []byte {
	rec := kmsg.Record{TimestampDelta64: r.TS - firstTS, OffsetDelta: int32(i), Key: r.Key, Value: r.Value, Headers: r.Headers}
	if rec.TimestampDelta64 == 0 {
		rec.TimestampDelta = 0
	}
	body := rec.AppendTo(nil)
	rec.Length = int32(len(body) - 1) // Length 0 took one byte
	return rec.AppendTo(nil)
}

// tBatch builds a record batch v2 holding recs.
func tBatch(t testing.TB, recs []tRec, o tBatchOpts) []byte {
	t.Helper()
	var raw []byte
	var firstTS, maxTS int64 = -1, -1
	if len(recs) > 0 {
		firstTS = recs[0].TS
	}
	for i, r := range recs {
		raw = append(raw, tRecordBytes(r, firstTS, i)...)
		maxTS = max(maxTS, r.TS)
	}
	if o.maxTS != nil {
		maxTS = *o.maxTS
	}
	attrs := o.attrs
	switch {
	case o.codec == -1:
		raw = snappy.Encode(nil, raw)
		attrs |= CodecSnappy
	case o.codec != 0:
		raw = tCompress(t, o.codec, raw)
		attrs |= int16(o.codec)
	}
	if o.compressed != nil {
		raw = o.compressed(raw)
	}
	n := int32(len(recs))
	if o.count != nil {
		n = *o.count
	}
	lod := n - 1
	if o.lastDelta != nil {
		lod = *o.lastDelta
	}
	pid, epoch, seq := o.pid, o.epoch, o.seq
	if pid == 0 && epoch == 0 && seq == 0 {
		pid, epoch, seq = -1, -1, -1
	}
	b := kmsg.RecordBatch{
		FirstOffset: 0, PartitionLeaderEpoch: -1, Magic: 2, Attributes: attrs,
		LastOffsetDelta: lod, FirstTimestamp: firstTS, MaxTimestamp: maxTS,
		ProducerID: pid, ProducerEpoch: epoch, FirstSequence: seq, NumRecords: n, Records: raw,
	}
	out := b.AppendTo(nil)
	binary.BigEndian.PutUint32(out[8:], uint32(len(out)-12))
	binary.BigEndian.PutUint32(out[17:], crc32.Checksum(out[21:], crc32.MakeTable(crc32.Castagnoli)))
	return out
}

// tCompress compresses with klauspost/pierrec directly (xerial framing for
// snappy, as the Java client writes it).
func tCompress(t testing.TB, codec int, raw []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	var w io.WriteCloser
	switch codec {
	case CodecGzip:
		w = gzip.NewWriter(&buf)
	case CodecSnappy:
		return xerial.Encode(nil, raw)
	case CodecLZ4:
		w = lz4.NewWriter(&buf)
	case CodecZstd:
		zw, err := zstd.NewWriter(&buf)
		if err != nil {
			t.Fatal(err)
		}
		w = zw
	default:
		t.Fatalf("codec %d", codec)
	}
	if _, err := w.Write(raw); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// tLegacy builds one magic 0/1 message (offset, size, crc, ...).
func tLegacy(magic int8, attrs int8, ts int64, key, value []byte) []byte {
	if magic == 0 {
		m := kmsg.MessageV0{Magic: 0, Attributes: attrs, Key: key, Value: value}
		out := m.AppendTo(nil)
		return tLegacyFix(out)
	}
	m := kmsg.MessageV1{Magic: 1, Attributes: attrs, Timestamp: ts, Key: key, Value: value}
	return tLegacyFix(m.AppendTo(nil))
}

func tLegacyFix(out []byte) []byte {
	binary.BigEndian.PutUint32(out[8:], uint32(len(out)-12))
	binary.BigEndian.PutUint32(out[12:], crc32.ChecksumIEEE(out[16:]))
	return out
}

// tKafkaRecord is one record read back from a Kafka batch by kmsg.
type tKafkaRecord struct {
	Offset int64
	TS     int64
	Key    []byte
	Value  []byte
	Hdrs   []kmsg.Header
}

// tKafkaBatch is a batch read back by kmsg, records decoded.
type tKafkaBatch struct {
	kmsg.RecordBatch
	Recs []tKafkaRecord
}

// tReadKafka parses Kafka batches with kmsg and checks CRC and lengths
// independently of the code under test.
func tReadKafka(t testing.TB, b []byte) []tKafkaBatch {
	t.Helper()
	var out []tKafkaBatch
	for len(b) > 0 {
		if len(b) < 61 {
			t.Fatalf("trailing %d bytes", len(b))
		}
		n := 12 + int(int32(binary.BigEndian.Uint32(b[8:])))
		if n > len(b) {
			t.Fatalf("batch length %d > %d", n, len(b))
		}
		var kb tKafkaBatch
		if err := kb.ReadFrom(b[:n]); err != nil {
			t.Fatal(err)
		}
		if got := crc32.Checksum(b[21:n], crc32.MakeTable(crc32.Castagnoli)); got != uint32(kb.CRC) {
			t.Fatalf("crc %x want %x", got, uint32(kb.CRC))
		}
		if kb.Magic != 2 || kb.Attributes != 0 || kb.ProducerID != -1 || kb.ProducerEpoch != -1 || kb.FirstSequence != -1 {
			t.Fatalf("batch fields %+v", kb.RecordBatch)
		}
		recs := kb.Records
		for i := int32(0); i < kb.NumRecords; i++ {
			l, ln := binary.Varint(recs)
			if ln <= 0 || int(l)+ln > len(recs) {
				t.Fatalf("record %d length", i)
			}
			var r kmsg.Record
			if err := r.ReadFrom(recs[:ln+int(l)]); err != nil {
				t.Fatal(err)
			}
			recs = recs[ln+int(l):]
			if r.OffsetDelta < 0 || r.OffsetDelta > kb.LastOffsetDelta {
				t.Fatalf("offset delta %d outside 0..%d", r.OffsetDelta, kb.LastOffsetDelta)
			}
			kb.Recs = append(kb.Recs, tKafkaRecord{
				Offset: kb.FirstOffset + int64(r.OffsetDelta), TS: kb.FirstTimestamp + r.TimestampDelta64,
				Key: r.Key, Value: r.Value, Hdrs: r.Headers,
			})
		}
		if len(recs) != 0 {
			t.Fatalf("%d bytes after records", len(recs))
		}
		out = append(out, kb)
		b = b[n:]
	}
	return out
}

// tPair is one user header as read back from an Iggy message.
type tPair struct {
	Kind iggy.HeaderKind
	Key  string
	Val  string
}

func tPairs(t testing.TB, block []byte) []tPair {
	t.Helper()
	var out []tPair
	it := iggy.NewHeaderIter(block)
	for it.Next() {
		kk, k := it.Key()
		vk, v := it.Value()
		if kk != iggy.HeaderKindString {
			t.Fatalf("key kind %d", kk)
		}
		out = append(out, tPair{vk, string(k), string(v)})
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// tToIggy maps records through Decoder.mapInto into stamped Iggy
// batches (as a server would store them) starting at baseOffset, and
// returns them back to back with the batch infos.
func tToIggy(t testing.TB, d *Decoder, records []byte, budget *DecompressBudget, baseOffset, appendTS uint64) ([]byte, []BatchInfo, error) {
	t.Helper()
	var out []byte
	var b iggy.BatchBuilder
	b.Begin(nil)
	next := baseOffset
	flush := func(b *iggy.BatchBuilder) error {
		n := b.Len()
		rec, err := b.Finish()
		if err != nil {
			return err
		}
		iggy.StampBatch(rec, 0, next, appendTS)
		appendTS++
		next += uint64(n)
		out = append(out, rec...)
		b.Begin(nil)
		return nil
	}
	n, err := d.mapInto(&b, records, budget, flush)
	if err != nil {
		return nil, d.Batches(), err
	}
	if n > 0 {
		if err := flush(&b); err != nil {
			t.Fatal(err)
		}
	}
	if err := iggy.CheckBatches(out); err != nil {
		t.Fatal(err)
	}
	return out, d.Batches(), nil
}

// tToKafka runs stamped Iggy batches through BatchWriter.AppendBatches.
func tToKafka(t testing.TB, w *BatchWriter, batches []byte, maxBytes int, atLeastOne bool) ([]byte, BatchStats) {
	t.Helper()
	it := iggy.NewMessageIter(batches)
	out, st, err := w.AppendBatches(nil, &it, maxBytes, atLeastOne)
	if err != nil {
		t.Fatal(err)
	}
	return out, st
}

// tFlatten returns every record of the batches.
func tFlatten(bs []tKafkaBatch) []tKafkaRecord {
	var out []tKafkaRecord
	for _, b := range bs {
		out = append(out, b.Recs...)
	}
	return out
}

// tSameBytes compares with null (nil) and empty kept apart.
func tSameBytes(a, b []byte) bool { return (a == nil) == (b == nil) && bytes.Equal(a, b) }

// tSameRecord compares a sent record with one read back.
func tSameRecord(t testing.TB, i int, want tRec, got tKafkaRecord) {
	t.Helper()
	if !tSameBytes(want.Key, got.Key) {
		t.Errorf("record %d: key %q (nil %v), want %q (nil %v)", i, got.Key, got.Key == nil, want.Key, want.Key == nil)
	}
	if !tSameBytes(want.Value, got.Value) {
		t.Errorf("record %d: value len %d (nil %v), want len %d (nil %v)", i, len(got.Value), got.Value == nil, len(want.Value), want.Value == nil)
	}
	if want.TS != got.TS {
		t.Errorf("record %d: timestamp %d, want %d", i, got.TS, want.TS)
	}
	if len(want.Headers) != len(got.Hdrs) {
		t.Fatalf("record %d: %d headers, want %d", i, len(got.Hdrs), len(want.Headers))
	}
	for j := range want.Headers {
		if want.Headers[j].Key != got.Hdrs[j].Key || !tSameBytes(want.Headers[j].Value, got.Hdrs[j].Value) {
			t.Errorf("record %d header %d: %q=%q (nil %v), want %q=%q (nil %v)", i, j,
				got.Hdrs[j].Key, got.Hdrs[j].Value, got.Hdrs[j].Value == nil,
				want.Headers[j].Key, want.Headers[j].Value, want.Headers[j].Value == nil)
		}
	}
}

func tI32(v int32) *int32 { return &v }
func tI64(v int64) *int64 { return &v }

// tRepeat returns n bytes of c.
func tRepeat(c byte, n int) []byte { return bytes.Repeat([]byte{c}, n) }
