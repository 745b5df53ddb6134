package records

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"math"
	"testing"

	"github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

const fuzzBudget = 1 << 20

// FuzzDecodeKafkaRecords feeds arbitrary bytes as a Produce partition's
// Records. Invariants: no panic; memory bounded by the budget; every
// yielded message has a valid user-headers block within the SDK limit, a
// non-empty payload, and maps back on Fetch without being skipped; without
// error the batch infos account for every message.
func FuzzDecodeKafkaRecords(f *testing.F) {
	recs := roundTripRecords()[:6]
	for _, codec := range []int{0, CodecGzip, CodecSnappy, -1, CodecLZ4, CodecZstd} {
		f.Add(tBatch(f, recs, tBatchOpts{codec: codec}))
	}
	two := append(tBatch(f, recs[:2], tBatchOpts{pid: 5, seq: 1}), tBatch(f, recs[2:4], tBatchOpts{})...)
	f.Add(two)
	f.Add(two[:len(two)-3])
	f.Add(append(tLegacy(0, 0, 0, []byte("k"), nil), tLegacy(1, 0, 5, nil, []byte("v"))...))
	f.Add(tLegacy(1, CodecGzip, 9, nil, tCompress(f, CodecGzip, tLegacy(1, 0, 7, nil, []byte("a")))))
	f.Add(tBatchRaw(f, []byte{0, 0, 0, 0, 2, 'v', 0xfe, 0xff, 0xff, 0xff, 0x0f}))
	f.Add([]byte{})
	var d Decoder
	var w BatchWriter
	w.OnSkip = func(off uint64, r SkipReason) { panic("mapped message skipped on fetch: " + r.String()) }
	f.Fuzz(func(t *testing.T, in []byte) {
		// As is, then with every CRC repaired so mutations reach the
		// record parser instead of stopping at the checksum.
		fuzzDecode(t, &d, &w, in)
		fuzzDecode(t, &d, &w, fuzzFixCRCs(bytes.Clone(in)))
	})
}

// fuzzFixCRCs recomputes the CRC of every top-level batch or legacy message
// whose length fits the input.
func fuzzFixCRCs(b []byte) []byte {
	for rest := b; len(rest) > kbMagic; {
		n := lmOverhead + int(int32(binary.BigEndian.Uint32(rest[kbLength:])))
		if n <= kbMagic || n > len(rest) {
			break
		}
		if rest[kbMagic] == 2 {
			if n >= kbHeaderSize {
				binary.BigEndian.PutUint32(rest[kbCRC:], crc32.Checksum(rest[kbCRCStart:n], castagnoli))
			}
		} else {
			binary.BigEndian.PutUint32(rest[lmOverhead:], crc32.ChecksumIEEE(rest[kbMagic:n]))
		}
		rest = rest[n:]
	}
	return b
}

func fuzzDecode(t *testing.T, d *Decoder, w *BatchWriter, in []byte) {
	{
		budget := NewDecompressBudget(fuzzBudget)
		d.Reset(in, budget)
		w.Begin(nil, math.MaxInt, true)
		n := uint64(0)
		for d.Next() {
			m := d.Message()
			if err := iggy.CheckTLV(m.Headers); err != nil || len(m.Headers) > recMaxUserHeaders {
				t.Fatalf("message %d: headers %d bytes: %v", n, len(m.Headers), err)
			}
			if len(m.Payload) == 0 {
				t.Fatalf("message %d: empty payload", n)
			}
			im := iggy.Message{Offset: n, OriginTimestamp: m.OriginTimestamp, Timestamp: 1, Payload: m.Payload, Headers: m.Headers}
			if err := w.Add(&im); err != nil {
				t.Fatalf("message %d: fetch: %v", n, err)
			}
			n++
		}
		if cap(d.z.out) > fuzzBudget || budget.Left() < 0 {
			t.Fatalf("output buffer %d, budget left %d", cap(d.z.out), budget.Left())
		}
		if d.Err() != nil {
			if ErrorCode(d.Err()) == -1 {
				t.Fatalf("unmapped error %v", d.Err())
			}
			return
		}
		total := 0
		for _, b := range d.Batches() {
			total += b.Records
		}
		if total != d.Count() || uint64(total) != n {
			t.Fatalf("infos %d records, %d messages", total, n)
		}
		if out := w.Finish(); n > 0 {
			tReadKafka(t, out)
		}
	}
}

// FuzzEnvelope: decode(encode(x)) == x for records built from the input,
// and any payload that decodes re-encodes to exactly itself (the layout is
// canonical).
func FuzzEnvelope(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{3, 1, 'k', 2, 'v', 'v', 0xff, 'h', 'x'})
	f.Add(appendRecordEnvelope(nil, &recView{key: []byte("k"), value: []byte("v"), headers: []recHeader{{name: []byte("a"), valueNull: true}, {name: []byte("a"), value: []byte{}}}}))
	f.Add(appendRecordEnvelope(nil, &recView{keyNull: true, valueNull: true}))
	f.Fuzz(func(t *testing.T, in []byte) {
		// Arbitrary bytes: parse, and if they parse, re-encode exactly.
		var v recView
		if _, err := parseRecordEnvelope(in, &v, nil); err == nil {
			if out := appendRecordEnvelope(nil, &v); !bytes.Equal(out, in) {
				t.Fatalf("re-encoded %x, input %x", out, in)
			}
		}
		// A record built from the input: encode, decode, compare.
		r := envelopeFromFuzz(in)
		enc := appendRecordEnvelope(nil, &r)
		if len(enc) != recEnvelopeSize(&r) {
			t.Fatalf("size %d, want %d", len(enc), recEnvelopeSize(&r))
		}
		var back recView
		if _, err := parseRecordEnvelope(enc, &back, nil); err != nil {
			t.Fatal(err)
		}
		if back.keyNull != r.keyNull || back.valueNull != r.valueNull || !bytes.Equal(back.key, r.key) || !bytes.Equal(back.value, r.value) || len(back.headers) != len(r.headers) {
			t.Fatalf("got %+v, want %+v", back, r)
		}
		for i := range r.headers {
			a, b := back.headers[i], r.headers[i]
			if !bytes.Equal(a.name, b.name) || !bytes.Equal(a.value, b.value) || a.valueNull != b.valueNull {
				t.Fatalf("header %d: got %+v, want %+v", i, a, b)
			}
		}
	})
}

// envelopeFromFuzz carves a record out of in: byte 0 = flags, then
// length-prefixed (1 byte) key, value and headers.
func envelopeFromFuzz(in []byte) recView {
	take := func() []byte {
		if len(in) == 0 {
			return nil
		}
		n := min(int(in[0]), len(in)-1)
		out := in[1 : 1+n]
		in = in[1+n:]
		return out
	}
	var r recView
	flags := byte(0)
	if len(in) > 0 {
		flags, in = in[0], in[1:]
	}
	r.keyNull, r.valueNull = flags&1 != 0, flags&2 != 0
	if k := take(); !r.keyNull {
		r.key = k
	}
	if v := take(); !r.valueNull {
		r.value = v
	}
	for i := 0; len(in) > 0; i++ {
		h := recHeader{name: take()}
		if flags&(4<<(i%5)) != 0 {
			h.valueNull = true
		} else {
			h.value = take()
		}
		r.headers = append(r.headers, h)
	}
	return r
}

// FuzzKafkaBatchWriter: arbitrary payloads, user-header blocks and
// timestamps never panic and always give batches kmsg reads back.
func FuzzKafkaBatchWriter(f *testing.F) {
	f.Add([]byte("payload"), hdrs("kafka.v", raw, "\x01", "kafka.key", raw, "k"), uint64(5000), uint64(0))
	f.Add([]byte{0}, hdrs("kafka.v", raw, "\x01", "kafka.value", str, "null", "kafka.ts", str, "epoch"), uint64(0), uint64(1))
	f.Add(appendRecordEnvelope(nil, &recView{key: []byte{}, headers: []recHeader{{name: []byte("n")}}}), hdrs("kafka.v", raw, "\x01", "kafka.envelope", raw, "\x01"), uint64(1), uint64(2))
	f.Add([]byte("native"), hdrs("a", iggy.HeaderKindUint32, "\x01\x02\x03\x04"), uint64(0), uint64(math.MaxUint64))
	f.Add([]byte{}, []byte{1, 2, 3}, uint64(math.MaxUint64), uint64(7))
	var w BatchWriter
	f.Fuzz(func(t *testing.T, payload, headers []byte, origin, appendTS uint64) {
		w.Begin(nil, math.MaxInt, true)
		skipped := 0
		w.OnSkip = func(uint64, SkipReason) { skipped++ }
		for i := range 3 {
			m := iggy.Message{Offset: uint64(10 + 2*i), OriginTimestamp: origin, Timestamp: appendTS, Payload: payload, Headers: headers}
			if err := w.Add(&m); err != nil {
				t.Fatal(err)
			}
		}
		if skipped != w.Skipped() || skipped+w.Len() != 3 {
			t.Fatalf("skipped %d, len %d", skipped, w.Len())
		}
		bs := tReadKafka(t, w.Finish())
		if len(bs) != 1 || bs[0].FirstOffset != 10 || bs[0].LastOffsetDelta != 4 || len(bs[0].Recs) != w.Len() {
			t.Fatalf("batches %+v", bs)
		}
	})
}

// TestEnvelopeLayout pins the byte layout of §2 with a hand-written vector.
func TestEnvelopeLayout(t *testing.T) {
	v := recView{key: []byte("K"), valueNull: true, headers: []recHeader{{name: []byte("h"), value: []byte("xy")}, {name: []byte("n"), valueNull: true}}}
	want := []byte{
		0x01,       // flags: key present, value absent
		1, 0, 0, 0, // key_len
		'K',
		0, 0, 0, 0, // value_len
		2, 0, 0, 0, // header_count
		1, 0, 0, 0, 'h', 1, 2, 0, 0, 0, 'x', 'y',
		1, 0, 0, 0, 'n', 0, 0, 0, 0, 0,
	}
	if got := appendRecordEnvelope(nil, &v); !bytes.Equal(got, want) {
		t.Fatalf("got  %x\nwant %x", got, want)
	}
	bad := [][]byte{
		append([]byte{0x04}, want[1:]...),                     // unknown flag
		want[:len(want)-1],                                    // truncated
		append(bytes.Clone(want), 0),                          // trailing byte
		{0, 1, 0, 0, 0, 'k', 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, // absent key with a length
		binary.LittleEndian.AppendUint32([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0}, math.MaxUint32), // header count beyond the bytes
	}
	for i, b := range bad {
		var back recView
		if _, err := parseRecordEnvelope(b, &back, nil); err == nil {
			t.Errorf("bad envelope %d accepted", i)
		}
	}
}
