package records

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math"
	"runtime"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

// mapOne maps a batch of one record and returns the message.
func mapOne(t *testing.T, r tRec) (MappedMessage, []tPair) {
	t.Helper()
	var d Decoder
	d.Reset(tBatch(t, []tRec{r}, tBatchOpts{}), nil)
	if !d.Next() {
		t.Fatalf("no message: %v", d.Err())
	}
	m := d.Message()
	m.Payload = bytes.Clone(m.Payload)
	m.Headers = bytes.Clone(m.Headers)
	if d.Next() || d.Err() != nil {
		t.Fatalf("second message or error: %v", d.Err())
	}
	return m, tPairs(t, m.Headers)
}

const (
	raw = iggy.HeaderKindRaw
	str = iggy.HeaderKindString
)

func TestRecordMappingRules(t *testing.T) {
	v1 := tPair{raw, "kafka.v", "\x01"}
	env := tPair{raw, "kafka.envelope", "\x01"}
	k255, k256 := tRepeat('k', 255), tRepeat('k', 256)
	n247, n248 := strings.Repeat("n", 247), strings.Repeat("n", 248)
	v255, v256 := tRepeat('v', 255), tRepeat('v', 256)
	manyDup := make([]kmsg.Header, 20)
	for i := range manyDup {
		manyDup[i] = kmsg.Header{Key: string(rune('a' + i)), Value: []byte("x")}
	}
	manyDup[19].Key = "c"
	many := make([]kmsg.Header, 20)
	copy(many, manyDup)
	many[19].Key = "zz"
	huge := make([]kmsg.Header, 400) // 400 × (13+3 + 5+255) bytes > 100,000
	for i := range huge {
		huge[i] = kmsg.Header{Key: string([]byte{'h', byte('0' + i/100), byte('0' + i/10%10), byte('0' + i%10)}), Value: v255}
	}

	tests := []struct {
		name    string
		rec     tRec
		pairs   []tPair
		payload []byte // nil: the value
		origin  uint64
		envelop bool
	}{
		{"plain", tRec{Key: []byte("k1"), Value: []byte("v"), Headers: []kmsg.Header{{Key: "a", Value: []byte("1")}, {Key: "b", Value: []byte("22")}}, TS: 1700000000123},
			[]tPair{v1, {raw, "kafka.key", "k1"}, {raw, "kafka.h.a", "1"}, {raw, "kafka.h.b", "22"}}, nil, 1700000000123000, false},
		{"null key", tRec{Value: []byte("v"), TS: 5}, []tPair{v1}, nil, 5000, false},
		{"tombstone", tRec{Key: []byte("k"), TS: 5}, []tPair{v1, {raw, "kafka.key", "k"}, {str, "kafka.value", "null"}}, []byte{0}, 5000, false},
		{"empty value", tRec{Key: []byte("k"), Value: []byte{}, TS: 5}, []tPair{v1, {raw, "kafka.key", "k"}, {str, "kafka.value", "empty"}}, []byte{0}, 5000, false},
		{"timestamp -1", tRec{Value: []byte("v"), TS: -1}, []tPair{v1}, nil, 0, false},
		{"timestamp 0", tRec{Value: []byte("v"), TS: 0}, []tPair{v1, {str, "kafka.ts", "epoch"}}, nil, 0, false},
		{"key 255", tRec{Key: k255, Value: []byte("v"), TS: 1}, []tPair{v1, {raw, "kafka.key", string(k255)}}, nil, 1000, false},
		{"header name 247", tRec{Value: []byte("v"), Headers: []kmsg.Header{{Key: n247, Value: []byte("x")}}, TS: 1},
			[]tPair{v1, {raw, "kafka.h." + n247, "x"}}, nil, 1000, false},
		{"header value 255", tRec{Value: []byte("v"), Headers: []kmsg.Header{{Key: "a", Value: v255}}, TS: 1},
			[]tPair{v1, {raw, "kafka.h.a", string(v255)}}, nil, 1000, false},
		{"empty header name", tRec{Value: []byte("v"), Headers: []kmsg.Header{{Key: "", Value: []byte("x")}}, TS: 1},
			[]tPair{v1, {raw, "kafka.h.", "x"}}, nil, 1000, false},
		{"20 distinct headers", tRec{Value: []byte("v"), Headers: many, TS: 1}, nil, nil, 1000, false},
		// Envelope fallbacks.
		{"empty key", tRec{Key: []byte{}, Value: []byte("v"), TS: 1}, []tPair{v1, env}, nil, 1000, true},
		{"key 256", tRec{Key: k256, Value: []byte("v"), TS: 1}, []tPair{v1, env}, nil, 1000, true},
		{"header name 248", tRec{Value: []byte("v"), Headers: []kmsg.Header{{Key: n248, Value: []byte("x")}}, TS: 1}, []tPair{v1, env}, nil, 1000, true},
		{"header value null", tRec{Value: []byte("v"), Headers: []kmsg.Header{{Key: "a"}}, TS: 1}, []tPair{v1, env}, nil, 1000, true},
		{"header value empty", tRec{Value: []byte("v"), Headers: []kmsg.Header{{Key: "a", Value: []byte{}}}, TS: 1}, []tPair{v1, env}, nil, 1000, true},
		{"header value 256", tRec{Value: []byte("v"), Headers: []kmsg.Header{{Key: "a", Value: v256}}, TS: 1}, []tPair{v1, env}, nil, 1000, true},
		{"duplicate names", tRec{Value: []byte("v"), Headers: []kmsg.Header{{Key: "a", Value: []byte("1")}, {Key: "a", Value: []byte("2")}}, TS: 1}, []tPair{v1, env}, nil, 1000, true},
		{"duplicate among 20", tRec{Value: []byte("v"), Headers: manyDup, TS: 1}, []tPair{v1, env}, nil, 1000, true},
		{"header name not UTF-8", tRec{Value: []byte("v"), Headers: []kmsg.Header{{Key: "\xff", Value: []byte("x")}}, TS: 1}, []tPair{v1, env}, nil, 1000, true},
		{"headers over 100 KB", tRec{Value: []byte("v"), Headers: huge, TS: 1}, []tPair{v1, env}, nil, 1000, true},
		{"envelope at epoch", tRec{Key: []byte{}, TS: 0}, []tPair{v1, env, {str, "kafka.ts", "epoch"}}, nil, 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, pairs := mapOne(t, tc.rec)
			if tc.pairs != nil && !equalPairs(pairs, tc.pairs) {
				t.Errorf("headers\n got %q\nwant %q", pairs, tc.pairs)
			}
			if len(pairs) == 0 || pairs[0] != v1 {
				t.Errorf("kafka.v is not first: %q", pairs)
			}
			if err := iggy.CheckTLV(m.Headers); err != nil || len(m.Headers) > recMaxUserHeaders {
				t.Errorf("block %d bytes: %v", len(m.Headers), err)
			}
			if m.OriginTimestamp != tc.origin {
				t.Errorf("origin %d, want %d", m.OriginTimestamp, tc.origin)
			}
			if m.ID.IsZero() || (m.ID.Lo>>48)&0xf0 != 0x40 || m.ID.Hi&0xc0 != 0x80 {
				t.Errorf("id %x/%x is not a UUID v4", m.ID.Lo, m.ID.Hi)
			}
			switch {
			case tc.envelop:
				var v recView
				if _, err := parseRecordEnvelope(m.Payload, &v, nil); err != nil {
					t.Fatalf("envelope: %v", err)
				}
				if !tSameBytes(v.key, tc.rec.Key) || !tSameBytes(v.value, tc.rec.Value) || len(v.headers) != len(tc.rec.Headers) {
					t.Errorf("envelope content differs")
				}
				for i, h := range v.headers {
					if string(h.name) != tc.rec.Headers[i].Key || !tSameBytes(h.value, tc.rec.Headers[i].Value) || h.valueNull != (tc.rec.Headers[i].Value == nil) {
						t.Errorf("envelope header %d differs", i)
					}
				}
				if want := recEnvelopeSize(&v); want != len(m.Payload) {
					t.Errorf("envelope %d bytes, want %d", len(m.Payload), want)
				}
			case tc.payload != nil:
				if !bytes.Equal(m.Payload, tc.payload) {
					t.Errorf("payload %q, want %q", m.Payload, tc.payload)
				}
			default:
				if !bytes.Equal(m.Payload, tc.rec.Value) {
					t.Errorf("payload %q, want the value", m.Payload)
				}
			}
		})
	}
}

// TestRecordUserHeaderBudgetEdge: a block of exactly 100,000 bytes is
// stored natively, one byte more takes the envelope (markers included in
// the count).
func TestRecordUserHeaderBudgetEdge(t *testing.T) {
	rec := func(last int) tRec {
		hs := make([]kmsg.Header, 361)
		for i := range hs {
			hs[i] = kmsg.Header{Key: string([]byte{'h', byte('0' + i/100), byte('0' + i/10%10), byte('0' + i%10)}), Value: tRepeat('v', 255)}
		}
		hs[360].Value = tRepeat('e', last)
		return tRec{Key: []byte("k"), Value: nil, Headers: hs, TS: 0} // tombstone at epoch: all markers
	}
	m, _ := mapOne(t, rec(1))
	last := 1 + recMaxUserHeaders - len(m.Headers)
	if last < 1 || last > 255 {
		t.Fatalf("base block %d bytes", len(m.Headers))
	}
	m, pairs := mapOne(t, rec(last))
	if len(m.Headers) != recMaxUserHeaders || len(pairs) != 1+1+1+1+361 {
		t.Fatalf("edge: %d bytes, %d pairs", len(m.Headers), len(pairs))
	}
	_, pairs = mapOne(t, rec(last+1))
	if len(pairs) != 3 || pairs[1].Key != "kafka.envelope" || pairs[2].Key != "kafka.ts" {
		t.Fatalf("over the edge: %q", pairs)
	}
}

func equalPairs(a, b []tPair) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// roundTripRecords are the shapes KAFKA-ON-IGGY §2 must restore exactly.
func roundTripRecords() []tRec {
	base := int64(1_700_000_000_000)
	return []tRec{
		{Key: []byte("key"), Value: []byte("plain"), Headers: []kmsg.Header{{Key: "trace", Value: []byte("t0")}, {Key: "x", Value: []byte("y")}}, TS: base},
		{Key: []byte("gone"), Value: nil, TS: base + 1},                    // tombstone
		{Key: nil, Value: []byte{}, TS: base + 2},                          // empty value, null key
		{Key: tRepeat('K', 300), Value: []byte("large key"), TS: base + 3}, // envelope
		{Key: []byte("d"), Value: []byte("dup"), TS: base + 4, Headers: []kmsg.Header{ // envelope keeps both, in order
			{Key: "h", Value: []byte("first")}, {Key: "other", Value: []byte("o")}, {Key: "h", Value: []byte("second")}}},
		{Key: []byte("n"), Value: []byte("null header"), TS: base + 5, Headers: []kmsg.Header{{Key: "nil"}, {Key: "e", Value: []byte{}}}},
		{Key: []byte{}, Value: []byte("empty key"), TS: base + 6},
		{Key: []byte("e"), Value: []byte("epoch"), TS: 0},
		{Key: []byte("m"), Value: []byte("minus one"), TS: -1},
		{Key: []byte{}, Value: nil, TS: 0, Headers: []kmsg.Header{{Key: "a"}}}, // everything at once
		{Key: []byte("ts"), Value: []byte("earlier than first"), TS: base - 10},
		{Value: tRepeat('v', 70_000), Headers: []kmsg.Header{{Key: "big", Value: tRepeat('b', 255)}}, TS: base + 7},
	}
}

func TestRecordRoundTrip(t *testing.T) {
	codecs := []struct {
		name  string
		codec int
	}{{"none", 0}, {"gzip", CodecGzip}, {"snappy-xerial", CodecSnappy}, {"snappy-raw", -1}, {"lz4", CodecLZ4}, {"zstd", CodecZstd}}
	recs := roundTripRecords()
	var d Decoder
	var w BatchWriter
	for _, c := range codecs {
		t.Run(c.name, func(t *testing.T) {
			batch := tBatch(t, recs, tBatchOpts{codec: c.codec})
			iggyBatches, infos, err := tToIggy(t, &d, batch, NewDecompressBudget(1<<20), 1000, 99_000_000)
			if err != nil {
				t.Fatal(err)
			}
			if len(infos) != 1 || infos[0].Records != len(recs) || int(infos[0].Compression) != max(c.codec, 0)+2*btoi(c.codec < 0) {
				t.Fatalf("infos %+v", infos)
			}
			kafka, st := tToKafka(t, &w, iggyBatches, math.MaxInt, true)
			if st.Records != len(recs) || st.Skipped != 0 || st.Full || st.NextOffset != 1000+uint64(len(recs)) {
				t.Fatalf("stats %+v", st)
			}
			got := tFlatten(tReadKafka(t, kafka))
			if len(got) != len(recs) {
				t.Fatalf("%d records back, want %d", len(got), len(recs))
			}
			for i := range recs {
				if got[i].Offset != 1000+int64(i) {
					t.Errorf("record %d offset %d", i, got[i].Offset)
				}
				tSameRecord(t, i, recs[i], got[i])
			}
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestRecordRoundTripKgoCompressor compresses with franz-go's producer
// compressor (what kgo clients send).
func TestRecordRoundTripKgoCompressor(t *testing.T) {
	recs := roundTripRecords()
	for _, c := range []kgo.CompressionCodec{kgo.GzipCompression(), kgo.SnappyCompression(), kgo.Lz4Compression(), kgo.ZstdCompression()} {
		comp, err := kgo.DefaultCompressor(c)
		if err != nil {
			t.Fatal(err)
		}
		var used kgo.CompressionCodecType
		batch := tBatch(t, recs, tBatchOpts{compressed: func(raw []byte) []byte {
			var buf bytes.Buffer
			out, codec := comp.Compress(&buf, raw)
			used = codec
			return bytes.Clone(out)
		}})
		batch = tSetCodec(batch, int(used))
		var d Decoder
		var w BatchWriter
		iggyBatches, _, err := tToIggy(t, &d, batch, NewDecompressBudget(1<<20), 0, 1)
		if err != nil {
			t.Fatalf("codec %d: %v", used, err)
		}
		kafka, _ := tToKafka(t, &w, iggyBatches, math.MaxInt, true)
		got := tFlatten(tReadKafka(t, kafka))
		if len(got) != len(recs) {
			t.Fatalf("codec %d: %d records", used, len(got))
		}
		for i := range recs {
			tSameRecord(t, i, recs[i], got[i])
		}
	}
}

// tSetCodec sets the codec bits of a batch and recomputes its CRC.
func tSetCodec(b []byte, codec int) []byte {
	attrs := binary.BigEndian.Uint16(b[kbAttributes:])&^kbAttrCodec | uint16(codec)
	binary.BigEndian.PutUint16(b[kbAttributes:], attrs)
	return tFixCRC(b)
}

func tFixCRC(b []byte) []byte {
	binary.BigEndian.PutUint32(b[kbCRC:], crc32.Checksum(b[kbCRCStart:], castagnoli))
	return b
}

func TestRecordBatchInfo(t *testing.T) {
	a := tBatch(t, []tRec{{Value: []byte("a"), TS: 1}, {Value: []byte("b"), TS: 2}}, tBatchOpts{pid: 77, epoch: 3, seq: 10})
	b := tBatch(t, []tRec{{Value: []byte("c"), TS: 3}}, tBatchOpts{codec: CodecGzip})
	legacy := tLegacy(1, 0, 4, nil, []byte("d"))
	var d Decoder
	_, infos, err := tToIggy(t, &d, append(append(append([]byte{}, a...), b...), legacy...), NewDecompressBudget(1<<20), 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	want := []BatchInfo{
		{FirstIndex: 0, Records: 2, Magic: 2, ProducerID: 77, ProducerEpoch: 3, BaseSequence: 10},
		{FirstIndex: 2, Records: 1, Magic: 2, Compression: 1, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1},
		{FirstIndex: 3, Records: 1, Magic: 1, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1},
	}
	if len(infos) != len(want) {
		t.Fatalf("infos %+v", infos)
	}
	for i := range want {
		if infos[i] != want[i] {
			t.Errorf("info %d: %+v, want %+v", i, infos[i], want[i])
		}
	}
	if !infos[0].Idempotent() || infos[1].Idempotent() || infos[2].Idempotent() {
		t.Error("Idempotent")
	}
	if d.Count() != 4 {
		t.Errorf("count %d", d.Count())
	}
}

func TestRecordLogAppendTime(t *testing.T) {
	recs := []tRec{{Value: []byte("a"), TS: 10}, {Value: []byte("b"), TS: 20}}
	batch := tBatch(t, recs, tBatchOpts{attrs: kbAttrLogAppendTime, maxTS: tI64(5000)})
	var d Decoder
	d.Reset(batch, nil)
	for d.Next() {
		if m := d.Message(); m.OriginTimestamp != 5_000_000 {
			t.Errorf("origin %d, want the batch's max timestamp", m.OriginTimestamp)
		}
	}
	if d.Err() != nil || d.Count() != 2 {
		t.Fatal(d.Err(), d.Count())
	}
}

// TestRecordSplit: a Kafka batch spanning more than 2^32-1 µs becomes
// several Iggy batches with one contiguous offset range.
func TestRecordSplit(t *testing.T) {
	hour := int64(3_600_000)
	const t0 = 1_700_000_000_000
	recs := []tRec{
		{Value: []byte("0"), TS: t0},
		{Value: []byte("1"), TS: t0 + hour},       // 60 min after 0: same batch
		{Value: []byte("2"), TS: t0 + 2*hour},     // 120 min after 0: new batch
		{Value: []byte("3"), TS: t0 + hour/2},     // 90 min before 2: new batch
		{Value: []byte("4"), TS: -1},              // origin 0: new batch
		{Value: []byte("5"), TS: 0},               // origin 0 too: same batch
		{Value: []byte("6"), TS: t0 + 2*hour + 1}, // new batch
	}
	var d Decoder
	iggyBatches, _, err := tToIggy(t, &d, tBatch(t, recs, tBatchOpts{}), nil, 500, 1)
	if err != nil {
		t.Fatal(err)
	}
	n, err := iggy.CountBatchMessages(iggyBatches)
	if err != nil || n != uint64(len(recs)) {
		t.Fatal(n, err)
	}
	var sizes []uint32
	for rest := iggyBatches; len(rest) > 0; {
		l := binary.LittleEndian.Uint64(rest[32:])
		sizes = append(sizes, iggy.BatchMessageCount(rest))
		rest = rest[l:]
	}
	if want := []uint32{2, 1, 1, 2, 1}; !equalU32(sizes, want) {
		t.Errorf("batch sizes %v, want %v", sizes, want)
	}
	it := iggy.NewMessageIter(iggyBatches)
	for i := 0; it.Next(); i++ {
		m := it.Message()
		if m.Offset != 500+uint64(i) || string(m.Payload) != string(recs[i].Value) {
			t.Errorf("message %d: offset %d payload %q", i, m.Offset, m.Payload)
		}
	}
	// Without a split callback the span is an error.
	var b iggy.BatchBuilder
	b.Begin(nil)
	if _, err := d.mapInto(&b, tBatch(t, recs, tBatchOpts{}), nil, nil); !errors.Is(err, iggy.ErrTimestampSpan) {
		t.Errorf("nil split: %v", err)
	}
}

func equalU32(a, b []uint32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestRecordDecodeErrors(t *testing.T) {
	good := func() []byte { return tBatch(t, []tRec{{Key: []byte("k"), Value: []byte("v"), TS: 1}}, tBatchOpts{}) }
	mutate := func(f func(b []byte) []byte) []byte { return f(good()) }
	tests := []struct {
		name string
		in   []byte
		want error
		code int16
	}{
		{"truncated header", good()[:20], ErrCorruptRecords, 2},
		{"truncated batch", good()[:65], ErrCorruptRecords, 2},
		{"length too small", mutate(func(b []byte) []byte { binary.BigEndian.PutUint32(b[8:], 10); return b }), ErrCorruptRecords, 2},
		{"bad crc", mutate(func(b []byte) []byte { b[len(b)-1] ^= 1; return b }), ErrCorruptRecords, 2},
		{"magic 3", mutate(func(b []byte) []byte { b[16] = 3; return b }), ErrUnsupportedRecords, 43},
		{"control batch", tBatch(t, []tRec{{Value: []byte("v")}}, tBatchOpts{attrs: kbAttrControl | kbAttrTransactional}), ErrControlBatch, 87},
		{"transactional batch", tBatch(t, []tRec{{Value: []byte("v")}}, tBatchOpts{attrs: kbAttrTransactional, pid: 1, seq: 0}), ErrTransactionalBatch, 43},
		{"codec 5", tBatch(t, []tRec{{Value: []byte("v")}}, tBatchOpts{attrs: 5}), ErrUnsupportedCompression, 76},
		{"count 0", tBatch(t, nil, tBatchOpts{}), ErrInvalidRecords, 87},
		{"count -1", tBatch(t, []tRec{{Value: []byte("v")}}, tBatchOpts{count: tI32(-1), lastDelta: tI32(-2)}), ErrInvalidRecords, 87},
		{"count 2^31-1", tBatch(t, []tRec{{Value: []byte("v")}}, tBatchOpts{count: tI32(math.MaxInt32), lastDelta: tI32(math.MaxInt32 - 1)}), ErrCorruptRecords, 2},
		{"count 2^31-1 gzip", tBatch(t, []tRec{{Value: []byte("v")}}, tBatchOpts{codec: CodecGzip, count: tI32(math.MaxInt32), lastDelta: tI32(math.MaxInt32 - 1)}), ErrDecompressBudget, 10},
		{"count exceeds records", tBatch(t, []tRec{{Value: []byte("v")}}, tBatchOpts{count: tI32(2)}), ErrCorruptRecords, 2},
		{"count below records", tBatch(t, []tRec{{Value: []byte("v")}, {Value: []byte("w")}, {Value: []byte("x")}}, tBatchOpts{count: tI32(2)}), ErrInvalidRecords, 87},
		{"lastOffsetDelta", tBatch(t, []tRec{{Value: []byte("v")}}, tBatchOpts{lastDelta: tI32(5)}), ErrInvalidRecords, 87},
		{"timestamp -2", tBatch(t, []tRec{{Value: []byte("v"), TS: -2}}, tBatchOpts{}), ErrRecordTimestamp, 32},
		{"timestamp too large", tBatch(t, []tRec{{Value: []byte("v"), TS: math.MaxInt64}}, tBatchOpts{}), ErrRecordTimestamp, 32},
		{"header count huge", tBatchRaw(t, []byte{0, 0, 0, 0, 2, 'v', 0xfe, 0xff, 0xff, 0xff, 0x0f}), ErrCorruptRecords, 2},
		{"key length -2", tBatchRaw(t, []byte{0, 0, 0, 3, 2, 'v', 0}), ErrCorruptRecords, 2},
		{"record trailing bytes", tBatchRaw(t, []byte{0, 0, 0, 1, 2, 'v', 0, 9}), ErrInvalidRecords, 87},
		{"gzip garbage", tBatch(t, []tRec{{Value: []byte("v")}}, tBatchOpts{codec: CodecGzip, compressed: func([]byte) []byte { return []byte("not gzip at all") }}), ErrCorruptRecords, 2},
		{"no budget", tBatch(t, []tRec{{Value: []byte("v")}}, tBatchOpts{codec: CodecZstd}), ErrDecompressBudget, 10},
		{"legacy bad crc", func() []byte { b := tLegacy(1, 0, 1, nil, []byte("v")); b[len(b)-1] ^= 1; return b }(), ErrCorruptRecords, 2},
		{"legacy zstd", tLegacy(1, CodecZstd, 1, nil, []byte("v")), ErrUnsupportedCompression, 76},
		{"legacy magic 0 lz4", tLegacy(0, CodecLZ4, 0, nil, tCompress(t, CodecLZ4, tLegacy(0, 0, 0, nil, []byte("v")))), ErrUnsupportedRecords, 43},
		{"legacy nested compression", tLegacy(1, CodecGzip, 1, nil, tCompress(t, CodecGzip, tLegacy(1, CodecGzip, 1, nil, []byte("x")))), ErrInvalidRecords, 87},
		{"legacy truncated", tLegacy(1, 0, 1, nil, []byte("value"))[:25], ErrCorruptRecords, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var d Decoder
			budget := NewDecompressBudget(1 << 20)
			if tc.name == "no budget" {
				budget = nil
			}
			d.Reset(tc.in, budget)
			for d.Next() {
			}
			err := d.Err()
			if !errors.Is(err, tc.want) {
				t.Fatalf("error %v, want %v", err, tc.want)
			}
			var re *Error
			if !errors.As(err, &re) || re.Err != tc.want {
				t.Errorf("not a *Error with the sentinel: %#v", err)
			}
			if got := ErrorCode(err); got != tc.code {
				t.Errorf("code %d, want %d", got, tc.code)
			}
		})
	}
	if ErrorCode(nil) != 0 || ErrorCode(errors.New("x")) != -1 {
		t.Error("ErrorCode nil/unknown")
	}
}

// tBatchRaw wraps raw record bytes (one record body without its length) in
// a batch of one record.
func tBatchRaw(t testing.TB, body []byte) []byte {
	t.Helper()
	rec := append([]byte{byte(len(body) << 1)}, body...)
	b := tBatch(t, []tRec{{Value: []byte("v")}}, tBatchOpts{})
	b = append(b[:kbHeaderSize:kbHeaderSize], rec...)
	binary.BigEndian.PutUint32(b[kbLength:], uint32(len(b)-12))
	return tFixCRC(b)
}

func TestRecordLegacyMessageSets(t *testing.T) {
	type legacyCase struct {
		name  string
		in    []byte
		want  []tRec // TS here is what Fetch gives back
		magic int8
	}
	m0 := append(tLegacy(0, 0, 0, []byte("k0"), []byte("v0")), tLegacy(0, 0, 0, nil, nil)...)
	m1 := append(tLegacy(1, 0, 1234, []byte("k1"), []byte("v1")), tLegacy(1, 0, 0, []byte{}, []byte{})...)
	inner1 := append(tLegacy(1, 0, 7, nil, []byte("a")), tLegacy(1, 0, 8, []byte("kb"), []byte("b"))...)
	inner0 := append(tLegacy(0, 0, 0, nil, []byte("a")), tLegacy(0, 0, 0, []byte("kb"), []byte("b"))...)
	tests := []legacyCase{
		{"magic 0", m0, []tRec{{Key: []byte("k0"), Value: []byte("v0"), TS: -1}, {TS: -1}}, 0},
		{"magic 1", m1, []tRec{{Key: []byte("k1"), Value: []byte("v1"), TS: 1234}, {Key: []byte{}, Value: []byte{}, TS: 0}}, 1},
		{"magic 1 gzip", tLegacy(1, CodecGzip, 9, nil, tCompress(t, CodecGzip, inner1)), []tRec{{Value: []byte("a"), TS: 7}, {Key: []byte("kb"), Value: []byte("b"), TS: 8}}, 1},
		{"magic 1 snappy", tLegacy(1, CodecSnappy, 9, nil, tCompress(t, CodecSnappy, inner1)), []tRec{{Value: []byte("a"), TS: 7}, {Key: []byte("kb"), Value: []byte("b"), TS: 8}}, 1},
		{"magic 1 lz4", tLegacy(1, CodecLZ4, 9, nil, tCompress(t, CodecLZ4, inner1)), []tRec{{Value: []byte("a"), TS: 7}, {Key: []byte("kb"), Value: []byte("b"), TS: 8}}, 1},
		{"magic 1 LogAppendTime", tLegacy(1, CodecGzip|lmAttrLogAppend, 99, nil, tCompress(t, CodecGzip, inner1)), []tRec{{Value: []byte("a"), TS: 99}, {Key: []byte("kb"), Value: []byte("b"), TS: 99}}, 1},
		{"magic 0 gzip", tLegacy(0, CodecGzip, 0, nil, tCompress(t, CodecGzip, inner0)), []tRec{{Value: []byte("a"), TS: -1}, {Key: []byte("kb"), Value: []byte("b"), TS: -1}}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var d Decoder
			var w BatchWriter
			ib, infos, err := tToIggy(t, &d, tc.in, NewDecompressBudget(1<<20), 0, 1)
			if err != nil {
				t.Fatal(err)
			}
			total := 0
			for _, in := range infos {
				total += in.Records
				if in.Magic != tc.magic || in.ProducerID != -1 {
					t.Errorf("info %+v", in)
				}
			}
			if total != len(tc.want) {
				t.Errorf("infos count %d records", total)
			}
			kafka, _ := tToKafka(t, &w, ib, math.MaxInt, true)
			got := tFlatten(tReadKafka(t, kafka))
			if len(got) != len(tc.want) {
				t.Fatalf("%d records", len(got))
			}
			for i := range tc.want {
				tSameRecord(t, i, tc.want[i], got[i])
			}
		})
	}
}

// TestRecordZipBomb: small compressed batches that expand far past the
// budget stop at the budget, and memory stays bounded by it.
func TestRecordZipBomb(t *testing.T) {
	const expanded = 16 << 20 // what the bombs decompress to: 64x the budget
	const budget = 256 << 10
	bomb := func(newW func(*bytes.Buffer) (interface {
		Write([]byte) (int, error)
		Close() error
	}, error)) []byte {
		var buf bytes.Buffer
		w, err := newW(&buf)
		if err != nil {
			t.Fatal(err)
		}
		zeros := make([]byte, 1<<20)
		for range expanded / len(zeros) {
			if _, err := w.Write(zeros); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	type wc = interface {
		Write([]byte) (int, error)
		Close() error
	}
	bombs := []struct {
		name  string
		codec int
		data  []byte
	}{
		{"gzip", CodecGzip, bomb(func(b *bytes.Buffer) (wc, error) { return gzip.NewWriterLevel(b, gzip.DefaultCompression) })},
		{"lz4", CodecLZ4, bomb(func(b *bytes.Buffer) (wc, error) {
			w := lz4.NewWriter(b)
			return w, w.Apply(lz4.BlockSizeOption(lz4.Block64Kb)) // Kafka's Java client writes 64 KiB blocks
		})},
		{"zstd", CodecZstd, bomb(func(b *bytes.Buffer) (wc, error) { return zstd.NewWriter(b, zstd.WithWindowSize(1<<20)) })},
		{"snappy", CodecSnappy, tCompress(t, CodecSnappy, make([]byte, expanded))},
	}
	for _, bb := range bombs {
		t.Run(bb.name, func(t *testing.T) {
			batch := tBatch(t, []tRec{{Value: []byte("v")}}, tBatchOpts{codec: bb.codec, compressed: func([]byte) []byte { return bb.data }})
			var d Decoder
			run := func() error {
				d.Reset(batch, NewDecompressBudget(budget))
				for d.Next() {
				}
				return d.Err()
			}
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			if err := run(); !errors.Is(err, ErrDecompressBudget) {
				t.Fatalf("error %v", err)
			}
			runtime.ReadMemStats(&after)
			// A fresh decoder: the output buffer (<= budget) plus the codec's
			// own state (window, blocks), nowhere near the expansion.
			first := after.TotalAlloc - before.TotalAlloc
			if first > budget+4<<20 {
				t.Errorf("first run allocated %d bytes", first)
			}
			runtime.GC()
			runtime.ReadMemStats(&before)
			for range 3 {
				if err := run(); !errors.Is(err, ErrDecompressBudget) {
					t.Fatal(err)
				}
			}
			runtime.ReadMemStats(&after)
			// The output buffer is reused and bounded by the budget; the
			// codecs' own buffers are bounded by window/block sizes.
			perRun := (after.TotalAlloc - before.TotalAlloc) / 3
			t.Logf("%s bomb: %d bytes expanding to %d; allocated %d bytes on the first run, %d per run after", bb.name, len(bb.data), expanded, first, perRun)
			if perRun > 2*budget {
				t.Errorf("allocated %d bytes per run for a %d-byte budget (input %d bytes)", perRun, budget, len(bb.data))
			}
			if cap(d.z.out) > budget {
				t.Errorf("output buffer cap %d > budget", cap(d.z.out))
			}
		})
	}
}

// TestRecordHugeCountNoAlloc: a batch declaring 2^31-1 records fails before
// anything is sized from the count.
func TestRecordHugeCountNoAlloc(t *testing.T) {
	for _, codec := range []int{0, CodecGzip} {
		batch := tBatch(t, []tRec{{Value: []byte("v")}}, tBatchOpts{codec: codec, count: tI32(math.MaxInt32), lastDelta: tI32(math.MaxInt32 - 1)})
		var d Decoder
		budget := NewDecompressBudget(64 << 20)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		d.Reset(batch, budget)
		if d.Next() || d.Err() == nil {
			t.Fatal("accepted")
		}
		runtime.ReadMemStats(&after)
		if n := after.TotalAlloc - before.TotalAlloc; n > 4<<10 {
			t.Errorf("codec %d: allocated %d bytes", codec, n)
		}
		if budget.Left() != 64<<20 {
			t.Errorf("budget charged: %d", budget.Left())
		}
	}
}

func TestDecompressBudgetShared(t *testing.T) {
	recs := []tRec{{Value: tRepeat('a', 10_000)}}
	batch := tBatch(t, recs, tBatchOpts{codec: CodecGzip})
	budget := NewDecompressBudget(25_000)
	var d Decoder
	for i, want := range []error{nil, nil, ErrDecompressBudget} {
		d.Reset(batch, budget)
		for d.Next() {
		}
		if !errors.Is(d.Err(), want) && d.Err() != want {
			t.Fatalf("partition %d: %v, want %v", i, d.Err(), want)
		}
	}
	if budget.Left() >= 10_000 {
		t.Errorf("left %d", budget.Left())
	}
	var nilBudget *DecompressBudget
	if nilBudget.Left() != 0 || !nilBudget.charge(0) || nilBudget.charge(1) {
		t.Error("nil budget")
	}
	if NewDecompressBudget(-5).Left() != 0 {
		t.Error("negative budget")
	}
}

// TestRecordDecoderSteadyStateAllocs: mapping allocates nothing per record
// once the decoder's scratch has grown.
func TestRecordDecoderSteadyStateAllocs(t *testing.T) {
	for _, codec := range []int{0, CodecGzip, CodecSnappy, CodecLZ4, CodecZstd} {
		batch := benchKafkaBatch(t, codec)
		var d Decoder
		var b iggy.BatchBuilder
		buf := make([]byte, 0, 256<<10)
		run := func() {
			b.Begin(buf[:0])
			if n, err := d.mapInto(&b, batch, NewDecompressBudget(1<<20), nil); err != nil || n != 100 {
				t.Fatal(n, err)
			}
		}
		run()
		allocs := testing.AllocsPerRun(20, run)
		// One allocation is the budget itself; compressed codecs may add
		// a few per batch (never per record).
		if allocs > 6 {
			t.Errorf("codec %d: %.1f allocs per 100-record batch", codec, allocs)
		}
	}
}
