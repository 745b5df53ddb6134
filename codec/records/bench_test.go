package records

import (
	"math"
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

// benchRecords: 100 records of 1 KiB, each with a 16-byte key and 2 headers.
func benchRecords() []tRec {
	recs := make([]tRec, 100)
	for i := range recs {
		val := tRepeat(byte('a'+i%26), 1024)
		recs[i] = tRec{
			Key:   []byte("key-" + strconv.Itoa(1_000_000_000_000+i)),
			Value: val,
			Headers: []kmsg.Header{
				{Key: "trace-id", Value: []byte("0af7651916cd43dd8448eb211c80319c")},
				{Key: "content-type", Value: []byte("application/json")},
			},
			TS: 1_700_000_000_000 + int64(i),
		}
	}
	return recs
}

func benchKafkaBatch(t testing.TB, codec int) []byte {
	return tBatch(t, benchRecords(), tBatchOpts{codec: codec, pid: 1, epoch: 0, seq: 0})
}

// benchIggyPoll returns the stored Iggy batch the 100 records map to (the
// records part of a poll reply).
func benchIggyPoll(t testing.TB) []byte {
	var d Decoder
	out, _, err := tToIggy(t, &d, benchKafkaBatch(t, 0), nil, 1_000_000, 1_700_000_000_000_000)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// BenchmarkMapKafkaToIggy: one Produce partition (100 × 1 KiB records, key
// and 2 headers) mapped into one Iggy batch. MB/s counts uncompressed
// record bytes.
func BenchmarkMapKafkaToIggy(b *testing.B) {
	uncompressed := len(benchKafkaBatch(b, 0)) - kbHeaderSize
	for _, c := range []struct {
		name  string
		codec int
	}{{"none", 0}, {"gzip", CodecGzip}, {"snappy", CodecSnappy}, {"lz4", CodecLZ4}, {"zstd", CodecZstd}} {
		b.Run(c.name, func(b *testing.B) {
			batch := benchKafkaBatch(b, c.codec)
			var d Decoder
			var ib iggy.BatchBuilder
			buf := make([]byte, 0, 256<<10)
			budget := NewDecompressBudget(0)
			b.SetBytes(int64(uncompressed))
			b.ReportAllocs()
			for b.Loop() {
				*budget = DecompressBudget{left: 1 << 20}
				ib.Begin(buf[:0])
				if _, err := d.mapInto(&ib, batch, budget, nil); err != nil {
					b.Fatal(err)
				}
				out, err := ib.Finish()
				if err != nil {
					b.Fatal(err)
				}
				buf = out
			}
		})
	}
}

// BenchmarkIggyToKafka: a poll reply of 100 mapped messages turned into one
// Kafka record batch. MB/s counts the Iggy batch bytes.
func BenchmarkIggyToKafka(b *testing.B) {
	polled := benchIggyPoll(b)
	var w BatchWriter
	dst := make([]byte, 0, 256<<10)
	b.SetBytes(int64(len(polled)))
	b.ReportAllocs()
	for b.Loop() {
		it := iggy.NewMessageIter(polled)
		out, st, err := w.AppendBatches(dst[:0], &it, math.MaxInt, true)
		if err != nil || st.Records != 100 {
			b.Fatal(st, err)
		}
		dst = out
	}
}

// BenchmarkIggyToKafkaNative: the same for 100 messages an Iggy client
// wrote (2 String headers, no mapping marker).
func BenchmarkIggyToKafkaNative(b *testing.B) {
	var msgs []tMsg
	h := hdrs("trace-id", str, "0af7651916cd43dd8448eb211c80319c", "content-type", str, "application/json")
	for i := range 100 {
		msgs = append(msgs, tMsg{origin: 1_700_000_000_000_000 + uint64(i), payload: tRepeat('x', 1024), headers: h})
	}
	polled := tIggyBatch(b, 0, 1, msgs...)
	var w BatchWriter
	dst := make([]byte, 0, 256<<10)
	b.SetBytes(int64(len(polled)))
	b.ReportAllocs()
	for b.Loop() {
		it := iggy.NewMessageIter(polled)
		out, _, err := w.AppendBatches(dst[:0], &it, math.MaxInt, true)
		if err != nil {
			b.Fatal(err)
		}
		dst = out
	}
}

// BenchmarkIggyToKafkaTxn: 100 mapped 1 KiB messages of 10 transactions (10
// records each, kafka.t) and their 10 commit markers: 20 Kafka batches, 10
// of them control batches.
func BenchmarkIggyToKafkaTxn(b *testing.B) {
	var msgs []tMsg
	for txn := range 10 {
		m := TxnMark{ProducerID: 1<<62 | int64(txn), Epoch: 1, Seq: uint32(txn)}
		for range 10 {
			msgs = append(msgs, tMsg{origin: 1_700_000_000_000_000, payload: tRepeat('x', 1024), headers: tTxnData(m, "key-0123456789")})
		}
		msgs = append(msgs, tMsg{origin: 1_700_000_000_000_000, payload: []byte{0}, headers: tTxnMarker(m, ControlCommit, 1)})
	}
	polled := tIggyBatch(b, 0, 1, msgs...)
	var w BatchWriter
	dst := make([]byte, 0, 256<<10)
	b.SetBytes(int64(len(polled)))
	b.ReportAllocs()
	for b.Loop() {
		it := iggy.NewMessageIter(polled)
		out, st, err := w.AppendBatches(dst[:0], &it, math.MaxInt, true)
		if err != nil || st.Records != 110 || st.Batches != 20 {
			b.Fatal(st, err)
		}
		dst = out
	}
}
