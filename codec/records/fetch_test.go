package records

import (
	"encoding/binary"
	"errors"
	"math"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafka-iggy/kafka-iggy/codec/iggy"
	"github.com/kafka-iggy/kafka-iggy/codec/wire"
)

// tMsg is an Iggy message to store in a test batch.
type tMsg struct {
	origin  uint64
	payload []byte
	headers []byte
}

// tIggyBatch builds one stored (stamped) Iggy batch.
func tIggyBatch(t testing.TB, baseOffset, appendTS uint64, msgs ...tMsg) []byte {
	t.Helper()
	var b iggy.BatchBuilder
	b.Begin(nil)
	for i, m := range msgs {
		if err := b.Add(wire.U128{Lo: uint64(i + 1)}, m.origin, m.payload, m.headers); err != nil {
			t.Fatal(err)
		}
	}
	out, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	iggy.StampBatch(out, 3, baseOffset, appendTS)
	return out
}

// hdrs builds a user-headers block from key, kind, value triples.
func hdrs(kv ...any) []byte {
	var out []byte
	for i := 0; i < len(kv); i += 3 {
		var v []byte
		switch x := kv[i+2].(type) {
		case string:
			v = []byte(x)
		case []byte:
			v = x
		}
		out = iggy.AppendHeader(out, kv[i].(string), kv[i+1].(iggy.HeaderKind), v)
	}
	return out
}

func TestFetchNativeIggyMessage(t *testing.T) {
	u64 := binary.LittleEndian.AppendUint64(nil, 42)
	batch := append(tIggyBatch(t, 7, 5_000_000,
		tMsg{origin: 1_700_000_000_123_456, payload: []byte("hello"),
			headers: hdrs("trace", str, "abc", "n", iggy.HeaderKindUint64, u64, "raw", raw, "\x00\x01")}),
		tIggyBatch(t, 8, 5_000_000,
			tMsg{origin: 0, payload: []byte("append time")},
			tMsg{origin: 9_000, payload: nil})...)
	var w BatchWriter
	out, st := tToKafka(t, &w, batch, math.MaxInt, true)
	if st.Records != 3 || st.Skipped != 0 || st.NextOffset != 10 {
		t.Fatalf("stats %+v", st)
	}
	got := tFlatten(tReadKafka(t, out))
	want := []tRec{
		{Key: nil, Value: []byte("hello"), TS: 1_700_000_000_123, Headers: []kmsg.Header{
			{Key: "trace", Value: []byte("abc")}, {Key: "n", Value: u64}, {Key: "raw", Value: []byte{0, 1}}}},
		{Key: nil, Value: []byte("append time"), TS: 5_000},
		{Key: nil, Value: []byte{}, TS: 9},
	}
	for i := range want {
		if got[i].Offset != 7+int64(i) {
			t.Errorf("offset %d", got[i].Offset)
		}
		tSameRecord(t, i, want[i], got[i])
	}
}

func TestFetchMappedExtraHeader(t *testing.T) {
	batch := tIggyBatch(t, 0, 1, tMsg{origin: 2000, payload: []byte("v"),
		headers: hdrs("kafka.v", raw, "\x01", "x-extra", str, "e", "kafka.h.a", raw, "1", "kafka.key", raw, "k")})
	var w BatchWriter
	out, _ := tToKafka(t, &w, batch, math.MaxInt, true)
	got := tFlatten(tReadKafka(t, out))
	tSameRecord(t, 0, tRec{Key: []byte("k"), Value: []byte("v"), TS: 2,
		Headers: []kmsg.Header{{Key: "x-extra", Value: []byte("e")}, {Key: "a", Value: []byte("1")}}}, got[0])
}

func TestFetchSkips(t *testing.T) {
	v1 := hdrs("kafka.v", raw, "\x01")
	tests := []struct {
		name   string
		msg    tMsg
		reason SkipReason
	}{
		{"version 2", tMsg{payload: []byte("x"), headers: hdrs("kafka.v", raw, "\x02")}, SkipUnknownVersion},
		{"version two bytes", tMsg{payload: []byte("x"), headers: hdrs("kafka.v", raw, "\x01\x00")}, SkipBadMarker},
		{"version twice", tMsg{payload: []byte("x"), headers: append(hdrs("kafka.v", raw, "\x01"), v1...)}, SkipBadMarker},
		{"value marker", tMsg{payload: []byte{0}, headers: append(v1, hdrs("kafka.value", str, "nil")...)}, SkipBadMarker},
		{"value marker twice", tMsg{payload: []byte{0}, headers: append(v1, hdrs("kafka.value", str, "null", "kafka.value", str, "null")...)}, SkipBadMarker},
		{"ts marker", tMsg{payload: []byte("x"), headers: append(v1, hdrs("kafka.ts", str, "zero")...)}, SkipBadMarker},
		{"epoch with origin", tMsg{origin: 5, payload: []byte("x"), headers: append(v1, hdrs("kafka.ts", str, "epoch")...)}, SkipBadMarker},
		{"envelope version", tMsg{payload: []byte("x"), headers: append(v1, hdrs("kafka.envelope", raw, "\x02")...)}, SkipBadMarker},
		{"key twice", tMsg{payload: []byte("x"), headers: append(v1, hdrs("kafka.key", raw, "a", "kafka.key", raw, "b")...)}, SkipBadMarker},
		{"odd TLV fields", tMsg{payload: []byte("x"), headers: iggy.AppendTLVField(nil, str, []byte("lonely"))}, SkipBadHeaders},
		{"TLV kind 0", tMsg{payload: []byte("x"), headers: []byte{0, 1, 0, 0, 0, 'a', 1, 1, 0, 0, 0, 'b'}}, SkipBadHeaders},
		{"bad envelope", tMsg{payload: []byte("not an envelope"), headers: append(v1, hdrs("kafka.envelope", raw, "\x01")...)}, SkipBadEnvelope},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			good := tMsg{origin: 1000, payload: []byte("ok"), headers: v1}
			batch := tIggyBatch(t, 100, 1, good, tc.msg, good)
			var w BatchWriter
			var skips []uint64
			w.OnSkip = func(off uint64, r SkipReason) {
				if r != tc.reason {
					t.Errorf("reason %v, want %v", r, tc.reason)
				}
				skips = append(skips, off)
			}
			out, st := tToKafka(t, &w, batch, math.MaxInt, true)
			if st.Records != 2 || st.Skipped != 1 || len(skips) != 1 || skips[0] != 101 || st.NextOffset != 103 {
				t.Fatalf("stats %+v skips %v", st, skips)
			}
			bs := tReadKafka(t, out)
			if len(bs) != 1 || bs[0].LastOffsetDelta != 2 || bs[0].Recs[0].Offset != 100 || bs[0].Recs[1].Offset != 102 {
				t.Fatalf("batch %+v", bs)
			}
		})
	}
	if SkipBadEnvelope.String() != "bad_envelope" || SkipReason(0).String() != "unknown" {
		t.Error("String")
	}
}

// TestFetchAllSkipped: a run of unreadable messages still moves the
// consumer: an empty batch whose lastOffsetDelta covers them.
func TestFetchAllSkipped(t *testing.T) {
	bad := tMsg{payload: []byte("x"), headers: hdrs("kafka.v", raw, "\x09")}
	batch := tIggyBatch(t, 40, 1, bad, bad, bad)
	var w BatchWriter
	out, st := tToKafka(t, &w, batch, math.MaxInt, false)
	if st.Records != 0 || st.Skipped != 3 || st.NextOffset != 43 || st.Batches != 1 {
		t.Fatalf("stats %+v", st)
	}
	bs := tReadKafka(t, out)
	if len(bs) != 1 || bs[0].NumRecords != 0 || bs[0].FirstOffset != 40 || bs[0].LastOffsetDelta != 2 || bs[0].FirstTimestamp != -1 || bs[0].MaxTimestamp != -1 {
		t.Fatalf("batch %+v", bs[0].RecordBatch)
	}
	// Nothing at all: no batch.
	empty := iggy.NewMessageIter(nil)
	got, st, err := w.AppendBatches([]byte("prefix"), &empty, math.MaxInt, true)
	if err != nil || string(got) != "prefix" || st.Consumed || st.Batches != 0 {
		t.Fatalf("%q %+v %v", got, st, err)
	}
}

func TestFetchMaxBytes(t *testing.T) {
	var msgs []tMsg
	for range 5 {
		msgs = append(msgs, tMsg{origin: 1000, payload: tRepeat('p', 1000), headers: hdrs("kafka.v", raw, "\x01")})
	}
	batch := tIggyBatch(t, 0, 1, msgs...)
	var w BatchWriter
	// One record: length (2) + attributes, deltas, null key (4) + value
	// length (2) + 1000 + header count (1).
	const rec = 1009
	tests := []struct {
		name       string
		limit      int
		atLeastOne bool
		records    int
		full       bool
	}{
		{"two fit", kbHeaderSize + 2*rec + 100, false, 2, true},
		{"exactly three", kbHeaderSize + 3*rec, false, 3, true},
		{"all", math.MaxInt, false, 5, false},
		{"first oversize taken", 10, true, 1, true},
		{"first oversize refused", 10, false, 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, st := tToKafka(t, &w, batch, tc.limit, tc.atLeastOne)
			if st.Records != tc.records || st.Full != tc.full {
				t.Fatalf("stats %+v", st)
			}
			if tc.records == 0 {
				if len(out) != 0 || st.Consumed {
					t.Fatalf("wrote %d bytes, stats %+v", len(out), st)
				}
				return
			}
			if tc.records > 1 && len(out) > tc.limit {
				t.Errorf("%d bytes over the %d limit", len(out), tc.limit)
			}
			if st.NextOffset != uint64(tc.records) {
				t.Errorf("next offset %d", st.NextOffset)
			}
			if got := tFlatten(tReadKafka(t, out)); len(got) != tc.records {
				t.Errorf("%d records", len(got))
			}
		})
	}
}

func TestFetchOffsetGapsAndRange(t *testing.T) {
	v1 := hdrs("kafka.v", raw, "\x01")
	m := tMsg{origin: 3000, payload: []byte("x"), headers: v1}
	far := uint64(10) + math.MaxInt32 + 5
	polled := append(append(tIggyBatch(t, 10, 1, m, m), tIggyBatch(t, 20, 2, m)...), tIggyBatch(t, far, 3, m)...)
	var w BatchWriter
	out, st := tToKafka(t, &w, polled, math.MaxInt, true)
	if st.Batches != 2 || st.Records != 4 || st.NextOffset != far+1 {
		t.Fatalf("stats %+v", st)
	}
	bs := tReadKafka(t, out)
	var offs []int64
	for _, r := range tFlatten(bs) {
		offs = append(offs, r.Offset)
	}
	if len(offs) != 4 || offs[0] != 10 || offs[1] != 11 || offs[2] != 20 || offs[3] != int64(far) || bs[0].LastOffsetDelta != 10 {
		t.Fatalf("offsets %v, lastOffsetDelta %d", offs, bs[0].LastOffsetDelta)
	}

	w.Begin(nil, math.MaxInt, true)
	a := iggy.Message{Offset: 5, Payload: []byte("x"), Headers: v1}
	if err := w.Add(&a); err != nil {
		t.Fatal(err)
	}
	if err := w.Add(&a); !errors.Is(err, ErrFetchOffsetOrder) {
		t.Fatalf("same offset: %v", err)
	}
	b := a
	b.Offset = 5 + math.MaxInt32 + 1
	if err := w.Add(&b); !errors.Is(err, ErrKafkaBatchRange) {
		t.Fatalf("far offset: %v", err)
	}
	if w.Len() != 1 {
		t.Fatal(w.Len())
	}
}

func TestKafkaBatchWriterSteadyStateAllocs(t *testing.T) {
	polled := benchIggyPoll(t)
	var w BatchWriter
	dst := make([]byte, 0, 256<<10)
	run := func() {
		it := iggy.NewMessageIter(polled)
		out, st, err := w.AppendBatches(dst[:0], &it, math.MaxInt, true)
		if err != nil || st.Records != 100 || len(out) == 0 {
			t.Fatal(st, err)
		}
	}
	run()
	if allocs := testing.AllocsPerRun(50, run); allocs != 0 {
		t.Errorf("%.1f allocs per 100-message poll", allocs)
	}
}
