package records

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafka-iggy/kafka-iggy/codec/iggy"
	"github.com/kafka-iggy/kafka-iggy/codec/wire"
)

// tTxnData is a transactional record's headers (mapping v1 + kafka.t).
func tTxnData(m TxnMark, key string) []byte {
	return hdrs("kafka.v", raw, "\x01", "kafka.key", raw, key, HeaderTxn, raw, AppendTxnMark(nil, m))
}

// tTxnMarker is an end marker's headers, exactly per the contract.
func tTxnMarker(m TxnMark, ctl byte, coordEpoch int32) []byte {
	return hdrs("kafka.v", raw, "\x01", HeaderControl, raw, []byte{ctl}, HeaderTxn, raw, AppendTxnMark(nil, m),
		HeaderCoordEpoch, raw, binary.LittleEndian.AppendUint32(nil, uint32(coordEpoch)))
}

// tKmsgBatches decodes record batches with franz-go's kmsg.
func tKmsgBatches(t *testing.T, b []byte) []kmsg.RecordBatch {
	t.Helper()
	var out []kmsg.RecordBatch
	for len(b) > 0 {
		var rb kmsg.RecordBatch
		if err := rb.ReadFrom(b); err != nil {
			t.Fatal(err)
		}
		n := int(rb.Length) + 12
		b = b[n:]
		out = append(out, rb)
	}
	return out
}

// tKmsgRecords decodes n records of a batch with kmsg.Record.
func tKmsgRecords(t *testing.T, n int, b []byte) []kmsg.Record {
	t.Helper()
	var out []kmsg.Record
	for range n {
		l, k := kbin.Varint(b)
		var r kmsg.Record
		if err := r.ReadFrom(b[:k+int(l)]); err != nil {
			t.Fatal(err)
		}
		b = b[k+int(l):]
		out = append(out, r)
	}
	return out
}

func TestFetchTransactionalBatches(t *testing.T) {
	a := TxnMark{ProducerID: 1<<62 | 5, Epoch: 3, Seq: 1}
	b := TxnMark{ProducerID: 1<<62 | 6, Epoch: 0, Seq: 9}
	plain := hdrs("kafka.v", raw, "\x01", "kafka.key", raw, "p")
	batch := tIggyBatch(t, 100, 5_000_000,
		tMsg{origin: 1000, payload: []byte("p0"), headers: plain},
		tMsg{origin: 2000, payload: []byte("a0"), headers: tTxnData(a, "ka")},
		tMsg{origin: 3000, payload: []byte("a1"), headers: tTxnData(a, "ka")},
		tMsg{origin: 4000, payload: []byte("b0"), headers: tTxnData(b, "kb")},
		tMsg{origin: 5000, payload: []byte{0}, headers: tTxnMarker(a, ControlCommit, 7)},
		tMsg{origin: 6000, payload: []byte{0}, headers: tTxnMarker(b, ControlAbort, 8)},
		tMsg{origin: 7000, payload: []byte("p1"), headers: plain},
	)
	w := BatchWriter{Sequence: func(id wire.U128) (int32, bool) { return int32(id.Lo) * 10, true }}
	out, st := tToKafka(t, &w, batch, math.MaxInt, true)
	if st.Records != 7 || st.Batches != 6 || st.NextOffset != 107 {
		t.Fatalf("stats %+v", st)
	}
	bs := tKmsgBatches(t, out)
	type want struct {
		base      int64
		lastDelta int32
		attrs     int16
		pid       int64
		epoch     int16
		seq       int32
		n         int32
	}
	wants := []want{
		{100, 0, 0, -1, -1, -1, 1},
		{101, 1, 0x10, a.ProducerID, 3, 20, 2}, // the ids are 1..7: message 2's seq 20
		{103, 0, 0x10, b.ProducerID, 0, 40, 1},
		{104, 0, 0x30, a.ProducerID, 3, -1, 1},
		{105, 0, 0x30, b.ProducerID, 0, -1, 1},
		{106, 0, 0, -1, -1, -1, 1},
	}
	if len(bs) != len(wants) {
		t.Fatalf("%d batches", len(bs))
	}
	for i, wnt := range wants {
		g := bs[i]
		got := want{g.FirstOffset, g.LastOffsetDelta, g.Attributes, g.ProducerID, g.ProducerEpoch, g.FirstSequence, g.NumRecords}
		if got != wnt {
			t.Errorf("batch %d: got %+v want %+v", i, got, wnt)
		}
	}
	// The control records, as Kafka's EndTransactionMarker.
	for i, c := range []struct {
		typ   int16
		epoch int32
	}{{1, 7}, {0, 8}} {
		recs := tKmsgRecords(t, 1, bs[3+i].Records)
		if len(recs) != 1 {
			t.Fatalf("control batch %d: %d records", i, len(recs))
		}
		var k kmsg.ControlRecordKey
		var v kmsg.EndTxnMarker
		if err := k.ReadFrom(recs[0].Key); err != nil || k.Version != 0 || int16(k.Type) != c.typ {
			t.Errorf("control key %d: %+v %v (% x)", i, k, err, recs[0].Key)
		}
		if err := v.ReadFrom(recs[0].Value); err != nil || v.Version != 0 || v.CoordinatorEpoch != c.epoch {
			t.Errorf("control value %d: %+v %v", i, v, err)
		}
	}
	// The data records keep their key and value and lose kafka.t.
	recs := tKmsgRecords(t, 2, bs[1].Records)
	if string(recs[0].Key) != "ka" || string(recs[1].Value) != "a1" || len(recs[0].Headers) != 0 {
		t.Errorf("txn records %+v", recs)
	}
	// Down-conversion (Fetch v0-v3) drops the markers, keeps the records.
	conv := DownConvert(append([]byte(nil), out...), 0, 1, math.MaxInt, true)
	n := 0
	for len(conv) >= 12 {
		n++
		conv = conv[12+int(binary.BigEndian.Uint32(conv[8:])):]
	}
	if n != 5 {
		t.Errorf("down-converted %d messages, want 5", n)
	}
}

func TestFetchStopBefore(t *testing.T) {
	a := TxnMark{ProducerID: 9, Epoch: 1, Seq: 2}
	batch := tIggyBatch(t, 10, 1,
		tMsg{origin: 1000, payload: []byte("a0"), headers: tTxnData(a, "k")},
		tMsg{origin: 1000, payload: []byte("a1"), headers: tTxnData(a, "k")},
		tMsg{origin: 1000, payload: []byte("a2"), headers: tTxnData(a, "k")})
	w := BatchWriter{Stop: true, StopBefore: 12}
	out, st := tToKafka(t, &w, batch, math.MaxInt, true)
	if !st.Stopped || st.Records != 2 || st.NextOffset != 12 {
		t.Fatalf("stats %+v", st)
	}
	if bs := tKmsgBatches(t, out); len(bs) != 1 || bs[0].LastOffsetDelta != 1 {
		t.Fatalf("batches %+v", bs)
	}
}

func TestFetchBadTxnHeadersSkipped(t *testing.T) {
	m := AppendTxnMark(nil, TxnMark{ProducerID: 1})
	ce := binary.LittleEndian.AppendUint32(nil, 1)
	for name, h := range map[string][]byte{
		"short mark":        hdrs("kafka.v", raw, "\x01", HeaderTxn, raw, m[:13]),
		"two marks":         hdrs("kafka.v", raw, "\x01", HeaderTxn, raw, m, HeaderTxn, raw, m),
		"marker no mark":    hdrs("kafka.v", raw, "\x01", HeaderControl, raw, "C", HeaderCoordEpoch, raw, ce),
		"marker no epoch":   hdrs("kafka.v", raw, "\x01", HeaderControl, raw, "C", HeaderTxn, raw, m),
		"bad control":       hdrs("kafka.v", raw, "\x01", HeaderControl, raw, "X", HeaderTxn, raw, m, HeaderCoordEpoch, raw, ce),
		"epoch without ctl": hdrs("kafka.v", raw, "\x01", HeaderTxn, raw, m, HeaderCoordEpoch, raw, ce),
	} {
		var w BatchWriter
		_, st := tToKafka(t, &w, tIggyBatch(t, 0, 1, tMsg{payload: []byte{0}, headers: h}), math.MaxInt, true)
		if st.Skipped != 1 || st.Records != 0 {
			t.Errorf("%s: %+v", name, st)
		}
		if _, s := ReadTxnHeaders(h); s != TxnBad {
			t.Errorf("%s: ReadTxnHeaders %v", name, s)
		}
	}
}

func TestReadTxnHeaders(t *testing.T) {
	m := TxnMark{ProducerID: 77, Epoch: 2, Seq: 5}
	if info, s := ReadTxnHeaders(tTxnData(m, "k")); s != TxnData || info.Mark != m {
		t.Fatalf("data: %v %+v", s, info)
	}
	if info, s := ReadTxnHeaders(tTxnMarker(m, ControlAbort, -3)); s != TxnMarker || info.Mark != m || info.Control != ControlAbort || info.CoordEpoch != -3 {
		t.Fatalf("marker: %v %+v", s, info)
	}
	if _, s := ReadTxnHeaders(hdrs("kafka.v", raw, "\x01")); s != TxnNone {
		t.Fatalf("plain: %v", s)
	}
	if _, s := ReadTxnHeaders(hdrs(HeaderTxn, raw, AppendTxnMark(nil, m))); s != TxnNone {
		t.Fatalf("no kafka.v: %v", s)
	}
	if _, s := ReadTxnHeaders(nil); s != TxnNone {
		t.Fatalf("none: %v", s)
	}
}

func FuzzReadTxnHeaders(f *testing.F) {
	m := TxnMark{ProducerID: 77, Epoch: 2, Seq: 5}
	f.Add(tTxnData(m, "k"))
	f.Add(tTxnMarker(m, ControlCommit, 1))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, h []byte) {
		info, s := ReadTxnHeaders(h)
		if s == TxnMarker && info.Control != ControlCommit && info.Control != ControlAbort {
			t.Fatalf("marker with control %q", info.Control)
		}
		// BatchWriter agrees: a marker is one control record, a bad one skipped.
		var w BatchWriter
		var bb iggy.BatchBuilder
		bb.Begin(nil)
		if err := bb.Add(wire.U128{Lo: 1}, 0, []byte{0}, h); err != nil {
			return
		}
		out, err := bb.Finish()
		if err != nil {
			return
		}
		iggy.StampBatch(out, 0, 0, 1)
		it := iggy.NewMessageIter(out)
		res, st, err := w.AppendBatches(nil, &it, math.MaxInt, true)
		if err != nil {
			return
		}
		if s == TxnMarker {
			bs := tKmsgBatches(t, res)
			if st.Records != 1 || len(bs) != 1 || bs[0].Attributes&0x30 != 0x30 {
				t.Fatalf("marker not a control batch: %+v", st)
			}
		}
		if s == TxnBad && st.Records != 0 {
			t.Fatalf("bad txn headers not skipped: %+v", st)
		}
	})
}

// TestFetchDropsLateTxnRecords: Drop leaves a transaction's data records
// out as offset gaps inside the batches (never a marker or a plain
// record); a batch of dropped records only is written empty, so the
// consumer steps past it.
func TestFetchDropsLateTxnRecords(t *testing.T) {
	z := TxnMark{ProducerID: 5, Epoch: 0, Seq: 1}
	n := TxnMark{ProducerID: 5, Epoch: 2, Seq: 2}
	batch := tIggyBatch(t, 10, 5_000_000,
		tMsg{origin: 1000, payload: []byte{0}, headers: tTxnMarker(z, ControlAbort, 0)},
		tMsg{origin: 2000, payload: []byte("z0"), headers: tTxnData(z, "k")},
		tMsg{origin: 3000, payload: []byte("n0"), headers: tTxnData(n, "k")},
		tMsg{origin: 4000, payload: []byte("z1"), headers: tTxnData(z, "k")},
		tMsg{origin: 5000, payload: []byte("n1"), headers: tTxnData(n, "k")},
		tMsg{origin: 6000, payload: []byte("z2"), headers: tTxnData(z, "k")},
	)
	w := BatchWriter{Drop: func(m TxnMark, off uint64) bool { return m == z && off > 10 }}
	out, st := tToKafka(t, &w, batch, math.MaxInt, true)
	if st.NextOffset != 16 || st.Skipped != 0 {
		t.Fatalf("stats %+v", st)
	}
	var vals []string
	last := int64(-1)
	for _, b := range tKmsgBatches(t, out) {
		for _, r := range tKmsgRecords(t, int(b.NumRecords), b.Records) {
			if b.Attributes&0x20 == 0 {
				vals = append(vals, string(r.Value))
			}
		}
		last = b.FirstOffset + int64(b.LastOffsetDelta)
	}
	if len(vals) != 2 || vals[0] != "n0" || vals[1] != "n1" || last != 15 {
		t.Fatalf("records %v, last offset covered %d", vals, last)
	}
}
