package bridge_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"hash/crc32"
	"io"
	"net"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
	"github.com/kafka-iggy/kafka-iggy/codec/wire"
)

// rawKafka is a minimal Kafka client over TCP that sends any kmsg request
// at a chosen version: the tests need versions and bytes real clients
// never send.
type rawKafka struct {
	t    testing.TB
	conn net.Conn
	corr int32
}

func dialRaw(t testing.TB, addr string) *rawKafka {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return &rawKafka{t: t, conn: c}
}

// send writes req at version and returns its correlation id.
func (r *rawKafka) send(req kmsg.Request, version int16) int32 {
	r.t.Helper()
	req.SetVersion(version)
	r.corr++
	b := make([]byte, 4, 256)
	b = binary.BigEndian.AppendUint16(b, uint16(req.Key()))
	b = binary.BigEndian.AppendUint16(b, uint16(version))
	b = binary.BigEndian.AppendUint32(b, uint32(r.corr))
	b = binary.BigEndian.AppendUint16(b, 3)
	b = append(b, "raw"...)
	if req.IsFlexible() {
		b = append(b, 0) // no tagged fields
	}
	b = req.AppendTo(b)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	_ = r.conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := r.conn.Write(b); err != nil {
		r.t.Fatal(err)
	}
	return r.corr
}

// read reads one response into resp (of the request's key and version)
// and checks its correlation id.
func (r *rawKafka) read(resp kmsg.Response, corr int32, timeout time.Duration) {
	r.t.Helper()
	_ = r.conn.SetReadDeadline(time.Now().Add(timeout))
	var hdr [8]byte
	if _, err := io.ReadFull(r.conn, hdr[:]); err != nil {
		r.t.Fatalf("reading a response: %v", err)
	}
	size := binary.BigEndian.Uint32(hdr[:4])
	if got := int32(binary.BigEndian.Uint32(hdr[4:])); got != corr {
		r.t.Fatalf("correlation id %d, want %d", got, corr)
	}
	if size < 4 || size > 256<<20 {
		r.t.Fatalf("response size %d", size)
	}
	body := make([]byte, size-4)
	if _, err := io.ReadFull(r.conn, body); err != nil {
		r.t.Fatal(err)
	}
	if resp.IsFlexible() && resp.Key() != 18 {
		if len(body) == 0 || body[0] != 0 {
			r.t.Fatalf("response header tags: % x", body[:min(len(body), 8)])
		}
		body = body[1:]
	}
	if err := resp.ReadFrom(body); err != nil {
		r.t.Fatalf("decoding %T v%d: %v", resp, resp.GetVersion(), err)
	}
}

// do sends req at version and returns the decoded response.
func (r *rawKafka) do(req kmsg.Request, version int16) kmsg.Response {
	r.t.Helper()
	corr := r.send(req, version)
	resp := req.ResponseKind()
	resp.SetVersion(version)
	r.read(resp, corr, 15*time.Second)
	return resp
}

// produceRaw sends one partition's records with a Produce at version and
// returns the partition's response.
func (r *rawKafka) produceRaw(version int16, acks int16, topic string, partition int32, records []byte) kmsg.ProduceResponseTopicPartition {
	r.t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Acks = acks
	req.TimeoutMillis = 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = partition
	rp.Records = records
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := r.do(req, version).(*kmsg.ProduceResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		r.t.Fatalf("produce response shape: %+v", resp)
	}
	return resp.Topics[0].Partitions[0]
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// testRecord is one record of a hand-built batch.
type testRecord struct {
	key, value []byte // nil = null
	headers    []kgo.RecordHeader
	tsDelta    int64
}

// buildBatch encodes a record batch v2 by hand: attrs carries the codec
// and flags, compress (when set) replaces the records section, count (when
// not 0) overrides the declared record count.
func buildBatch(firstTS int64, attrs int16, recs []testRecord, compress func([]byte) []byte, count int32) []byte {
	var body []byte
	for i, r := range recs {
		var rec []byte
		rec = append(rec, 0)
		rec = binary.AppendVarint(rec, r.tsDelta)
		rec = binary.AppendVarint(rec, int64(i))
		rec = appendVarBytes(rec, r.key)
		rec = appendVarBytes(rec, r.value)
		rec = binary.AppendVarint(rec, int64(len(r.headers)))
		for _, h := range r.headers {
			rec = appendVarBytes(rec, []byte(h.Key))
			rec = appendVarBytes(rec, h.Value)
		}
		body = binary.AppendVarint(body, int64(len(rec)))
		body = append(body, rec...)
	}
	if compress != nil {
		body = compress(body)
	}
	if count == 0 {
		count = int32(len(recs))
	}
	b := make([]byte, 61, 61+len(body))
	binary.BigEndian.PutUint64(b[0:], 0)
	binary.BigEndian.PutUint32(b[8:], uint32(49+len(body)))
	binary.BigEndian.PutUint32(b[12:], 0xffffffff)
	b[16] = 2
	binary.BigEndian.PutUint16(b[21:], uint16(attrs))
	binary.BigEndian.PutUint32(b[23:], uint32(max(count-1, 0)))
	binary.BigEndian.PutUint64(b[27:], uint64(firstTS))
	binary.BigEndian.PutUint64(b[35:], uint64(firstTS))
	binary.BigEndian.PutUint64(b[43:], 0xffffffffffffffff)
	binary.BigEndian.PutUint16(b[51:], 0xffff)
	binary.BigEndian.PutUint32(b[53:], 0xffffffff)
	binary.BigEndian.PutUint32(b[57:], uint32(count))
	b = append(b, body...)
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], castagnoli))
	return b
}

func appendVarBytes(b, v []byte) []byte {
	if v == nil {
		return binary.AppendVarint(b, -1)
	}
	b = binary.AppendVarint(b, int64(len(v)))
	return append(b, v...)
}

// legacyMessage encodes one magic 0/1 message (offset, size, crc, ...).
func legacyMessage(magic int8, ts int64, key, value []byte) []byte {
	var m []byte
	m = append(m, 0, 0, 0, 0, byte(magic), 0)
	if magic == 1 {
		m = binary.BigEndian.AppendUint64(m, uint64(ts))
	}
	m = appendLegacyBytes(m, key)
	m = appendLegacyBytes(m, value)
	binary.BigEndian.PutUint32(m, crc32.ChecksumIEEE(m[4:]))
	out := binary.BigEndian.AppendUint64(nil, 0)
	out = binary.BigEndian.AppendUint32(out, uint32(len(m)))
	return append(out, m...)
}

func appendLegacyBytes(b, v []byte) []byte {
	if v == nil {
		return binary.BigEndian.AppendUint32(b, 0xffffffff)
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(v)))
	return append(b, v...)
}

// iggyMessages reads a whole Iggy partition with an Iggy client, copying
// every message.
func iggyMessages(t testing.TB, cl *iggy.Client, ref iggy.TopicRef, partition uint32) []icodec.Message {
	t.Helper()
	var out []icodec.Message
	next := uint64(0)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		p, err := cl.Poll(ctx, &icodec.PollMessagesRequest{
			Consumer:    icodec.Consumer{Kind: icodec.ConsumerKindConsumer, ID: icodec.Identifier{Kind: icodec.IdentifierKindNumeric, Value: []byte{9, 0, 0, 0}}},
			StreamID:    ref.StreamID(),
			TopicID:     ref.TopicID(),
			PartitionID: icodec.OptionalPartition{Present: true, PartitionID: partition},
			Strategy:    icodec.PollingStrategy{Kind: icodec.PollingKindOffset, Value: next},
			Count:       1000,
		})
		cancel()
		if err != nil {
			t.Fatalf("iggy poll: %v", err)
		}
		n := 0
		it := p.Messages()
		for it.Next() {
			m := it.Message()
			m.Payload = bytes.Clone(m.Payload)
			m.Headers = bytes.Clone(m.Headers)
			out = append(out, m)
			next = m.Offset + 1
			n++
		}
		err = it.Err()
		p.Release()
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return out
		}
	}
}

// iggyHeaders returns a message's user headers in order.
func iggyHeaders(t testing.TB, block []byte) [][2]string {
	t.Helper()
	var out [][2]string
	it := icodec.NewHeaderIter(block)
	for it.Next() {
		_, k := it.Key()
		_, v := it.Value()
		out = append(out, [2]string{string(k), string(v)})
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// consumeAll reads n records of topic partition from offset 0 with a kgo
// consumer.
func consumeAll(t testing.TB, s *stack, topic string, partition int32, n int, opts ...kgo.Opt) []*kgo.Record {
	t.Helper()
	opts = append([]kgo.Opt{
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {partition: kgo.NewOffset().At(0)}}),
		kgo.FetchMaxWait(500 * time.Millisecond),
	}, opts...)
	cl := s.kgoClient(t, opts...)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records: %v", len(out), n, ctx.Err())
		}
		fs.EachError(func(tp string, p int32, err error) {
			t.Fatalf("fetch %s/%d: %v", tp, p, err)
		})
		out = append(out, fs.Records()...)
	}
	return out
}

// roundTripRecords covers the mapping's cases: keys (null, empty, short,
// longer than 255 bytes), values (null, empty, plain), headers (none,
// duplicate names, null and empty values), timestamps (ordinary, exactly 0).
func roundTripRecords() []*kgo.Record {
	long := bytes.Repeat([]byte("k"), 300)
	ts := time.UnixMilli(1_700_000_000_123)
	return []*kgo.Record{
		{Key: []byte("key-1"), Value: []byte("value-1"), Timestamp: ts},
		{Key: nil, Value: []byte("no key"), Timestamp: ts.Add(time.Millisecond)},
		{Key: []byte{}, Value: []byte("empty key"), Timestamp: ts},
		{Key: long, Value: []byte("long key"), Timestamp: ts},
		{Key: []byte("tombstone"), Value: nil, Timestamp: ts},
		{Key: []byte("empty"), Value: []byte{}, Timestamp: ts},
		{Key: []byte("h"), Value: []byte("headers"), Timestamp: ts, Headers: []kgo.RecordHeader{
			{Key: "a", Value: []byte("1")}, {Key: "b", Value: []byte("2")}, {Key: "a", Value: []byte("3")},
		}},
		{Key: []byte("h2"), Value: []byte("odd headers"), Timestamp: ts, Headers: []kgo.RecordHeader{
			{Key: "null", Value: nil}, {Key: "empty", Value: []byte{}},
		}},
		{Key: []byte("epoch"), Value: []byte("ts 0"), Timestamp: time.UnixMilli(0)},
		{Key: []byte("big"), Value: bytes.Repeat([]byte("v"), 100_000), Timestamp: ts.Add(-time.Hour)},
	}
}

func sameRecord(t testing.TB, i int, want, got *kgo.Record) {
	t.Helper()
	if (want.Key == nil) != (got.Key == nil) || !bytes.Equal(want.Key, got.Key) {
		t.Errorf("record %d: key %q (nil %v), want %q (nil %v)", i, trunc(got.Key), got.Key == nil, trunc(want.Key), want.Key == nil)
	}
	if (want.Value == nil) != (got.Value == nil) || !bytes.Equal(want.Value, got.Value) {
		t.Errorf("record %d: value %q (nil %v), want %q (nil %v)", i, trunc(got.Value), got.Value == nil, trunc(want.Value), want.Value == nil)
	}
	if !got.Timestamp.Equal(want.Timestamp) {
		t.Errorf("record %d: timestamp %v, want %v", i, got.Timestamp.UnixMilli(), want.Timestamp.UnixMilli())
	}
	if len(got.Headers) != len(want.Headers) {
		t.Errorf("record %d: headers %v, want %v", i, got.Headers, want.Headers)
		return
	}
	for j := range want.Headers {
		w, g := want.Headers[j], got.Headers[j]
		if w.Key != g.Key || (w.Value == nil) != (g.Value == nil) || !bytes.Equal(w.Value, g.Value) {
			t.Errorf("record %d header %d: %q=%q (nil %v), want %q=%q (nil %v)", i, j, g.Key, g.Value, g.Value == nil, w.Key, w.Value, w.Value == nil)
		}
	}
}

func trunc(b []byte) []byte { return b[:min(len(b), 20)] }

// TestProduceConsumeCodecs: a kgo producer writes every mapping case with
// each codec; a kgo consumer reads back exactly what was written, at the
// offsets the producer was given, which are the Iggy offsets of the same
// messages; an Iggy client sees native messages.
func TestProduceConsumeCodecs(t *testing.T) {
	s := startStack(t)
	codecs := []struct {
		name     string
		codec    kgo.CompressionCodec
		versions *kversion.Versions // nil: the newest the gateway serves
	}{
		{"none", kgo.NoCompression(), nil},
		{"gzip", kgo.GzipCompression(), nil},
		{"snappy", kgo.SnappyCompression(), nil},
		{"lz4", kgo.Lz4Compression(), nil},
		{"zstd", kgo.ZstdCompression(), nil},
		// Kafka 2.0 (Produce v6, Fetch v8, not flexible) and 0.10.1
		// (magic 1 message sets both ways: Produce v2, Fetch v3).
		{"kafka-2.0-snappy", kgo.SnappyCompression(), kversion.V2_0_0()},
		{"kafka-0.10-gzip", kgo.GzipCompression(), kversion.V0_10_1()},
	}
	for _, c := range codecs {
		t.Run(c.name, func(t *testing.T) {
			topic := "codec-" + c.name
			opts := []kgo.Opt{kgo.DisableIdempotentWrite(), kgo.ProducerBatchCompression(c.codec),
				kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(50 * time.Millisecond),
				kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation()}
			var consumeOpts []kgo.Opt
			if c.versions != nil {
				opts = append(opts, kgo.MaxVersions(c.versions))
				consumeOpts = append(consumeOpts, kgo.MaxVersions(c.versions))
			}
			pr := s.kgoClient(t, opts...)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			want := roundTripRecords()
			if c.versions != nil && c.versions.HasKey(0) {
				if v, _ := c.versions.LookupMaxKeyVersion(0); v < 3 {
					// Message sets have no headers.
					for _, r := range want {
						r.Headers = nil
					}
				}
			}
			res := pr.ProduceSync(ctx, want...)
			if err := res.FirstErr(); err != nil {
				t.Fatal(err)
			}
			offsets := make([]int64, len(want))
			for i, r := range res {
				offsets[i] = r.Record.Offset
			}
			got := consumeAll(t, s, topic, 0, len(want), consumeOpts...)
			if len(got) != len(want) {
				t.Fatalf("consumed %d records, want %d", len(got), len(want))
			}
			for i := range want {
				sameRecord(t, i, want[i], got[i])
				if got[i].Offset != offsets[i] {
					t.Errorf("record %d: consumed at offset %d, produced at %d", i, got[i].Offset, offsets[i])
				}
			}

			// The Iggy view: the same offsets, native messages.
			msgs := iggyMessages(t, s.Client, iggy.TopicRef{Stream: "kafka", Topic: topic}, 0)
			if len(msgs) != len(want) {
				t.Fatalf("iggy holds %d messages, want %d", len(msgs), len(want))
			}
			for i, m := range msgs {
				if int64(m.Offset) != offsets[i] {
					t.Errorf("message %d at iggy offset %d, kafka offset %d", i, m.Offset, offsets[i])
				}
			}
			first := msgs[0]
			if string(first.Payload) != "value-1" {
				t.Errorf("iggy payload %q", first.Payload)
			}
			hs := iggyHeaders(t, first.Headers)
			if !slices.Contains(hs, [2]string{"kafka.v", "\x01"}) || !slices.Contains(hs, [2]string{"kafka.key", "key-1"}) {
				t.Errorf("iggy headers %q", hs)
			}
			if first.OriginTimestamp != uint64(want[0].Timestamp.UnixMilli())*1000 {
				t.Errorf("origin timestamp %d", first.OriginTimestamp)
			}
			hs = iggyHeaders(t, msgs[6].Headers)
			if len(want[6].Headers) > 0 && !slices.Contains(hs, [2]string{"kafka.envelope", "\x01"}) {
				t.Errorf("duplicate header names not in an envelope: %q", hs)
			}
		})
	}
}

// TestProduceIggyNativeConsumed: a message an Iggy client wrote reads as a
// record with null key, payload as value and its user headers as headers.
func TestProduceIggyNativeConsumed(t *testing.T) {
	s := startStack(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const topic = "native"
	// Create the topic through Metadata auto-creation.
	admin := s.kgoClient(t)
	mreq := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	name := topic
	mt.Topic = &name
	mreq.Topics = append(mreq.Topics, mt)
	mreq.AllowAutoTopicCreation = true
	if _, err := mreq.RequestWith(ctx, admin); err != nil {
		t.Fatal(err)
	}
	var hdrs []byte
	hdrs = icodec.AppendHeader(hdrs, "trace", icodec.HeaderKindString, []byte("abc"))
	hdrs = icodec.AppendHeader(hdrs, "n", icodec.HeaderKindRaw, []byte{1, 2})
	msgs := s.Client.NewMessages()
	const origin = 1_700_000_000_456_789
	if err := msgs.Add(wire.U128{Lo: 7}, origin, []byte("from iggy"), hdrs); err != nil {
		t.Fatal(err)
	}
	base, err := s.Client.Send(ctx, iggy.TopicRef{Stream: "kafka", Topic: topic}, 0, msgs)
	if err != nil || base != 0 {
		t.Fatalf("send: %d %v", base, err)
	}
	got := consumeAll(t, s, topic, 0, 1)
	r := got[0]
	if r.Key != nil || string(r.Value) != "from iggy" || r.Offset != 0 || r.Timestamp.UnixMilli() != origin/1000 {
		t.Fatalf("record %+v", r)
	}
	want := []kgo.RecordHeader{{Key: "trace", Value: []byte("abc")}, {Key: "n", Value: []byte{1, 2}}}
	if len(r.Headers) != 2 || r.Headers[0].Key != want[0].Key || !bytes.Equal(r.Headers[0].Value, want[0].Value) ||
		r.Headers[1].Key != want[1].Key || !bytes.Equal(r.Headers[1].Value, want[1].Value) {
		t.Fatalf("headers %+v", r.Headers)
	}
}

// TestProduceVersionsAndRefusals drives Produce at chosen versions with
// hand-built bytes.
func TestProduceVersionsAndRefusals(t *testing.T) {
	s := startStack(t)
	rk := dialRaw(t, s.Addr)
	const topic = "refusals"
	ok := buildBatch(1_700_000_000_000, 0, []testRecord{{key: []byte("k"), value: []byte("v")}}, nil, 0)
	if rp := rk.produceRaw(7, -1, topic, 0, ok); rp.ErrorCode != 0 || rp.BaseOffset != 0 {
		t.Fatalf("first produce: %+v", rp)
	}
	legacy := append(legacyMessage(1, 1_700_000_000_000, []byte("k1"), []byte("v1")), legacyMessage(0, 0, nil, []byte("v0"))...)

	cases := []struct {
		name    string
		version int16
		acks    int16
		records []byte
		code    int16
		base    int64
	}{
		{"v2 accepts magic 0/1 message sets", 2, 1, legacy, 0, 1},
		{"v0 accepts a record batch", 0, 1, ok, 0, 3},
		{"v13 flexible", 9, -1, ok, 0, 4},
		{"v3 refuses magic 1", 3, 1, legacy, kerr.InvalidRecord.Code, -1},
		{"v3 refuses two batches", 3, 1, append(slices.Clone(ok), ok...), kerr.InvalidRecord.Code, -1},
		{"v3 refuses no batch", 3, 1, []byte{}, kerr.InvalidRecord.Code, -1},
		{"invalid acks", 7, 2, ok, kerr.InvalidRequiredAcks.Code, -1},
		{"zstd below v7", 6, 1, buildBatch(1, 4, []testRecord{{value: []byte("v")}}, zstdCompress, 0), kerr.UnsupportedCompressionType.Code, -1},
		{"transactional", 7, 1, buildBatch(1, 0x10, []testRecord{{value: []byte("v")}}, nil, 0), kerr.UnsupportedForMessageFormat.Code, -1},
		{"control", 7, 1, buildBatch(1, 0x20, []testRecord{{value: []byte("v")}}, nil, 0), kerr.InvalidRecord.Code, -1},
		{"bad crc", 7, 1, func() []byte { b := slices.Clone(ok); b[len(b)-1] ^= 1; return b }(), kerr.CorruptMessage.Code, -1},
		{"2^31-1 records declared", 7, 1, buildBatch(1, 0, []testRecord{{value: []byte("v")}}, nil, 1<<31-1), -2, -1},
		{"-2^31 records declared", 7, 1, buildBatch(1, 0, []testRecord{{value: []byte("v")}}, nil, -1<<31), -2, -1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rp := rk.produceRaw(c.version, c.acks, topic, 0, c.records)
			switch {
			case c.code == -2: // any refusal
				if rp.ErrorCode == 0 {
					t.Fatalf("accepted: %+v", rp)
				}
			case rp.ErrorCode != c.code:
				t.Fatalf("error %d, want %d (%v)", rp.ErrorCode, c.code, rp.ErrorMessage)
			}
			if rp.BaseOffset != c.base {
				t.Fatalf("base offset %d, want %d", rp.BaseOffset, c.base)
			}
			if c.version >= 8 && rp.ErrorCode != 0 && rp.ErrorMessage == nil {
				t.Errorf("no error message")
			}
		})
	}

	// Unknown partition, invalid name, missing topic without auto-create.
	if rp := rk.produceRaw(7, 1, topic, 5, ok); rp.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("partition 5: %+v", rp)
	}
	if rp := rk.produceRaw(7, 1, "bad/name", 0, ok); rp.ErrorCode != kerr.InvalidTopicException.Code {
		t.Errorf("bad name: %+v", rp)
	}

	// acks=0: no response; the next request's answer comes next.
	rk.send(func() kmsg.Request {
		req := kmsg.NewPtrProduceRequest()
		req.Acks = 0
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = ok
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return req
	}(), 7)
	// The front door runs a connection's requests concurrently, so the
	// write may land after the next request is answered: wait for it.
	deadline := time.Now().Add(10 * time.Second)
	for {
		corr2 := rk.send(listOffsetsReq(topic, 0, -1), 5)
		resp := kmsg.NewPtrListOffsetsResponse()
		resp.SetVersion(5)
		rk.read(resp, corr2, 10*time.Second) // checks that no reply to corr came first
		if resp.Topics[0].Partitions[0].Offset == 6 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after acks=0: %+v", resp.Topics[0].Partitions[0])
		}
		time.Sleep(10 * time.Millisecond)
	}

	// acks=0 with a failed partition: the connection closes, as on Kafka.
	rk2 := dialRaw(t, s.Addr)
	bad := kmsg.NewPtrProduceRequest()
	bad.Acks = 0
	bt := kmsg.NewProduceRequestTopic()
	bt.Topic = topic
	bp := kmsg.NewProduceRequestTopicPartition()
	bp.Partition, bp.Records = 5, ok
	bt.Partitions = append(bt.Partitions, bp)
	bad.Topics = append(bad.Topics, bt)
	rk2.send(bad, 7)
	_ = rk2.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := rk2.conn.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("acks=0 failure: read %d bytes, %v; want the connection closed", n, err)
	}

	// Iggy holds exactly the accepted records, in order.
	msgs := iggyMessages(t, s.Client, iggy.TopicRef{Stream: "kafka", Topic: topic}, 0)
	if len(msgs) != 6 {
		t.Fatalf("iggy holds %d messages, want 6", len(msgs))
	}
	if string(msgs[1].Payload) != "v1" || string(msgs[2].Payload) != "v0" || msgs[1].OriginTimestamp != 1_700_000_000_000_000 {
		t.Errorf("legacy messages: %q %q %d", msgs[1].Payload, msgs[2].Payload, msgs[1].OriginTimestamp)
	}
}

func zstdCompress(b []byte) []byte {
	var c kgo.CompressionCodec = kgo.ZstdCompression()
	comp, err := kgo.DefaultCompressor(c)
	if err != nil {
		panic(err)
	}
	out, _ := comp.Compress(new(bytes.Buffer), b)
	return bytes.Clone(out)
}

// gzipBomb returns gzip data that expands to n MiB of zeros: one member of
// 1 MiB repeated (a gzip stream may hold many members).
func gzipBomb(n int) []byte {
	var one bytes.Buffer
	w, _ := gzip.NewWriterLevel(&one, gzip.BestCompression)
	_, _ = w.Write(make([]byte, 1<<20))
	_ = w.Close()
	return bytes.Repeat(one.Bytes(), n)
}

// TestProduceBombs: a zip bomb and batches declaring 2^31 records are
// refused, the gateway stays up and allocates a bounded amount.
func TestProduceBombs(t *testing.T) {
	s := startStack(t)
	rk := dialRaw(t, s.Addr)
	const topic = "bombs"
	const expandMiB = 1024 // 1 GiB of zeros in about 1 MiB
	bomb := buildBatch(1, 1, []testRecord{{value: []byte("v")}}, func([]byte) []byte { return gzipBomb(expandMiB) }, 0)
	if len(bomb) > 4<<20 {
		t.Fatalf("bomb of %d bytes", len(bomb))
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	rp := rk.produceRaw(9, 1, topic, 0, bomb)
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	if rp.ErrorCode != kerr.MessageTooLarge.Code || rp.BaseOffset != -1 {
		t.Fatalf("zip bomb: %+v", rp)
	}
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("zip bomb (%d bytes, expanding to %d MiB): refused in %v, %d MiB allocated by the process meanwhile", len(bomb), expandMiB, took, alloc>>20)
	// The request budget (100 MiB) bounds the output buffer; doubling
	// growth allocates about twice that in total. Nowhere near 1 GiB.
	if alloc > 320<<20 {
		t.Errorf("allocated %d MiB for a refused bomb", alloc>>20)
	}

	for _, count := range []int32{1<<31 - 1, -1 << 31} {
		for _, codec := range []int16{0, 1} {
			var comp func([]byte) []byte
			if codec == 1 {
				comp = gzipBytes
			}
			b := buildBatch(1, codec, []testRecord{{value: []byte("v")}}, comp, count)
			runtime.ReadMemStats(&before)
			rp := rk.produceRaw(9, 1, topic, 0, b)
			runtime.ReadMemStats(&after)
			if rp.ErrorCode == 0 {
				t.Fatalf("count %d codec %d accepted", count, codec)
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8<<20 {
				t.Errorf("count %d codec %d: %d bytes allocated", count, codec, alloc)
			}
		}
	}
	// Still serving.
	ok := buildBatch(1_700_000_000_000, 0, []testRecord{{value: []byte("after")}}, nil, 0)
	if rp := rk.produceRaw(9, 1, topic, 0, ok); rp.ErrorCode != 0 || rp.BaseOffset != 0 {
		t.Fatalf("after the bombs: %+v", rp)
	}
}

func gzipBytes(b []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	_, _ = w.Write(b)
	_ = w.Close()
	return buf.Bytes()
}

// TestProduceSplitsLongSpan: one Kafka batch whose timestamps span more
// than 71.6 minutes is stored (split into Iggy batches) under one offset
// range, and reads back with its timestamps.
func TestProduceSplitsLongSpan(t *testing.T) {
	s := startStack(t)
	rk := dialRaw(t, s.Addr)
	const topic = "span"
	hour := int64(time.Hour / time.Millisecond)
	recs := []testRecord{
		{value: []byte("a"), tsDelta: 0},
		{value: []byte("b"), tsDelta: 2 * hour},
		{value: []byte("c"), tsDelta: hour},
		{value: []byte("d"), tsDelta: 5 * hour},
	}
	first := int64(1_700_000_000_000)
	rp := rk.produceRaw(9, -1, topic, 0, buildBatch(first, 0, recs, nil, 0))
	if rp.ErrorCode != 0 || rp.BaseOffset != 0 {
		t.Fatalf("produce: %+v", rp)
	}
	got := consumeAll(t, s, topic, 0, len(recs))
	for i, r := range got {
		if r.Offset != int64(i) || string(r.Value) != string(recs[i].value) || r.Timestamp.UnixMilli() != first+recs[i].tsDelta {
			t.Errorf("record %d: offset %d value %q ts %d", i, r.Offset, r.Value, r.Timestamp.UnixMilli())
		}
	}
}

// listOffsetsReq builds a ListOffsets request for one partition.
func listOffsetsReq(topic string, partition int32, ts int64) *kmsg.ListOffsetsRequest {
	req := kmsg.NewPtrListOffsetsRequest()
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition = partition
	rp.Timestamp = ts
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// TestProduceKeepsOrderInFlight: a producer with several Produce requests
// in flight on one connection (max.in.flight > 1, no retries) must find its
// records in the partition in the order it sent them, as on Kafka, which
// serves one request of a connection at a time (so does the front door).
func TestProduceKeepsOrderInFlight(t *testing.T) {
	s := startStack(t)
	const topic = "ordered"
	pr := s.kgoClient(t, kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation(), kgo.DisableIdempotentWrite(),
		kgo.MaxProduceRequestsInflightPerBroker(5), kgo.ProducerLinger(0), kgo.ProducerBatchMaxBytes(2000),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const n = 5000
	var wg sync.WaitGroup
	offsets := make([]int64, n)
	for i := range n {
		wg.Add(1)
		pr.Produce(ctx, &kgo.Record{Value: []byte(strconv.Itoa(i))}, func(r *kgo.Record, err error) {
			if err != nil {
				t.Error(err)
			}
			offsets[i] = r.Offset
			wg.Done()
		})
	}
	wg.Wait()
	for i, off := range offsets {
		if off != int64(i) {
			t.Fatalf("record %d stored at offset %d", i, off)
		}
	}
}

// BenchmarkProduceConsume measures the data path end to end: a kgo producer
// writes b.N records of 100 bytes (linger 5 ms, one partition), then a kgo
// consumer reads them back.
func BenchmarkProduceConsume(b *testing.B) {
	s := startStack(b)
	topic := "bench-" + strconv.Itoa(b.N)
	pr := s.kgoClient(b, kgo.DisableIdempotentWrite(), kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation(),
		kgo.ProducerLinger(5*time.Millisecond), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	value := bytes.Repeat([]byte("x"), 100)
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for range b.N {
		wg.Add(1)
		pr.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				b.Error(err)
			}
			wg.Done()
		})
	}
	wg.Wait()
	produced := time.Since(start)
	start = time.Now()
	got := consumeAll(b, s, topic, 0, b.N)
	consumed := time.Since(start)
	b.StopTimer()
	if len(got) < b.N {
		b.Fatalf("consumed %d", len(got))
	}
	b.ReportMetric(float64(b.N)/produced.Seconds(), "produced/s")
	b.ReportMetric(float64(b.N)/consumed.Seconds(), "consumed/s")
}
