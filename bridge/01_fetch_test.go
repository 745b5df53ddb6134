package bridge_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
	"github.com/kafka-iggy/kafka-iggy/codec/wire"
)

// fetchedRecord is one record of a Fetch response, with its absolute offset.
type fetchedRecord struct {
	offset    int64
	timestamp int64
	key       []byte
	value     []byte
	headers   []kmsg.Header
}

// decodeBatches walks record batches v2, checking each CRC32C and the
// header fields a consumer relies on.
func decodeBatches(t testing.TB, b []byte) (recs []fetchedRecord, batches int) {
	t.Helper()
	for len(b) > 0 {
		if len(b) < 61 {
			t.Fatalf("truncated batch header: %d bytes", len(b))
		}
		size := int(binary.BigEndian.Uint32(b[8:])) + 12
		if size > len(b) {
			t.Fatalf("batch of %d bytes in %d", size, len(b))
		}
		var rb kmsg.RecordBatch
		if err := rb.ReadFrom(b[:size]); err != nil {
			t.Fatal(err)
		}
		if got := crc32.Checksum(b[21:size], castagnoli); uint32(rb.CRC) != got {
			t.Fatalf("batch CRC %08x, computed %08x", uint32(rb.CRC), got)
		}
		if rb.Magic != 2 || rb.Attributes != 0 || rb.ProducerID != -1 || rb.FirstSequence != -1 {
			t.Fatalf("batch header %+v", rb)
		}
		rest := rb.Records
		for i := int32(0); i < rb.NumRecords; i++ {
			l, n := binary.Varint(rest)
			if n <= 0 || int(l)+n > len(rest) {
				t.Fatalf("record %d length", i)
			}
			var r kmsg.Record
			if err := r.ReadFrom(rest[:n+int(l)]); err != nil {
				t.Fatal(err)
			}
			rest = rest[n+int(l):]
			recs = append(recs, fetchedRecord{
				offset: rb.FirstOffset + int64(r.OffsetDelta), timestamp: rb.FirstTimestamp + r.TimestampDelta64,
				key: r.Key, value: r.Value, headers: r.Headers,
			})
		}
		if len(rest) != 0 {
			t.Fatalf("%d bytes after the records", len(rest))
		}
		if n := len(recs); n > 0 && recs[n-1].offset != rb.FirstOffset+int64(rb.LastOffsetDelta) {
			t.Fatalf("last offset delta %d, last record at %d", rb.LastOffsetDelta, recs[n-1].offset)
		}
		b = b[size:]
		batches++
	}
	return recs, batches
}

// fetchPart is one partition of a fetch request.
type fetchPart struct {
	topic     string
	topicID   [16]byte
	partition int32
	offset    int64
	maxBytes  int32
}

func fetchReq(maxWait, minBytes, maxBytes int32, parts ...fetchPart) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = maxWait, minBytes, maxBytes
	req.SessionEpoch = -1
	for _, p := range parts {
		if n := len(req.Topics); n == 0 || req.Topics[n-1].Topic != p.topic || req.Topics[n-1].TopicID != p.topicID {
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic, rt.TopicID = p.topic, p.topicID
			req.Topics = append(req.Topics, rt)
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = p.partition, p.offset, p.maxBytes
		rp.CurrentLeaderEpoch = -1
		rp.LogStartOffset = -1
		rt := &req.Topics[len(req.Topics)-1]
		rt.Partitions = append(rt.Partitions, rp)
	}
	return req
}

func (r *rawKafka) fetch(version int16, req *kmsg.FetchRequest) *kmsg.FetchResponse {
	r.t.Helper()
	return r.do(req, version).(*kmsg.FetchResponse)
}

// produceValues writes values as one batch and returns the base offset.
func (r *rawKafka) produceValues(topic string, partition int32, values ...[]byte) int64 {
	r.t.Helper()
	recs := make([]testRecord, len(values))
	for i, v := range values {
		recs[i] = testRecord{key: []byte{byte('a' + i%26)}, value: v, tsDelta: int64(i)}
	}
	rp := r.produceRaw(9, -1, topic, partition, buildBatch(1_700_000_000_000, 0, recs, nil, 0))
	if rp.ErrorCode != 0 {
		r.t.Fatalf("produce to %s/%d: error %d", topic, partition, rp.ErrorCode)
	}
	return rp.BaseOffset
}

// createTopic creates a Kafka topic through Metadata auto-creation.
func createTopic(t testing.TB, rk *rawKafka, topic string) [16]byte {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	name := topic
	mt.Topic = &name
	req.Topics = append(req.Topics, mt)
	req.AllowAutoTopicCreation = true
	resp := rk.do(req, 12).(*kmsg.MetadataResponse)
	if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("metadata: %+v", resp.Topics)
	}
	return resp.Topics[0].TopicID
}

// TestFetchLongPollWokenByProduce: a fetch waiting with max_wait 5 s returns
// a record produced 100 ms later through the gateway well before the 5 s,
// with re-polling made too slow to be what answered it.
func TestFetchLongPollWokenByProduce(t *testing.T) {
	s := startStack(t, func(o *stackOpts) { o.bridge.Fetch.RepollInterval = time.Minute })
	rk := dialRaw(t, s.Addr)
	const topic = "longpoll"
	createTopic(t, rk, topic)
	producer := dialRaw(t, s.Addr)

	start := time.Now()
	produced := make(chan int64, 1)
	timer := time.AfterFunc(100*time.Millisecond, func() {
		rp := producer.produceRaw(9, 1, topic, 0, buildBatch(1_700_000_000_000, 0, []testRecord{{value: []byte("late")}}, nil, 0))
		produced <- rp.BaseOffset
	})
	defer timer.Stop()
	resp := rk.fetch(12, fetchReq(5000, 1, 1<<20, fetchPart{topic: topic, offset: 0, maxBytes: 1 << 20}))
	took := time.Since(start)
	p := resp.Topics[0].Partitions[0]
	recs, _ := decodeBatches(t, p.RecordBatches)
	t.Logf("long poll answered after %v (record produced at 100ms)", took)
	if p.ErrorCode != 0 || len(recs) != 1 || string(recs[0].value) != "late" || p.HighWatermark != 1 {
		t.Fatalf("fetch: error %d, records %+v, hw %d", p.ErrorCode, recs, p.HighWatermark)
	}
	if base := <-produced; base != 0 {
		t.Fatalf("produced at %d", base)
	}
	if took < 100*time.Millisecond || took > 2*time.Second {
		t.Fatalf("answered after %v", took)
	}
}

// TestFetchWakeReadsWrittenPartitions: a long poll over eight empty
// partitions, woken by a produce to one of them, reads that one partition
// again, not all eight (one Iggy poll, where it took eight), and answers
// its record.
func TestFetchWakeReadsWrittenPartitions(t *testing.T) {
	var cc callCounter
	s := startStack(t, func(o *stackOpts) {
		o.iggyMetrics = &cc
		o.bridge.Topics.DefaultPartitions = 8
		o.bridge.Fetch.RepollInterval = time.Minute // no interval pass within the test
	})
	rk := dialRaw(t, s.Addr)
	const topic = "wake-one"
	createTopic(t, rk, topic)
	var parts []fetchPart
	for p := range int32(8) {
		parts = append(parts, fetchPart{topic: topic, partition: p, maxBytes: 1 << 20})
	}
	// Idle fetches first: the second is what one pass over the eight
	// costs once the partitions' log starts are known.
	rk.fetch(12, fetchReq(0, 1, 1<<20, parts...))
	idle := cc.count("message.poll")
	rk.fetch(12, fetchReq(0, 1, 1<<20, parts...))
	before := cc.count("message.poll")
	idle = before - idle
	answered := make(chan *kmsg.FetchResponse, 1)
	go func() { answered <- rk.fetch(12, fetchReq(30_000, 1, 1<<20, parts...)) }()
	// The fetch's first pass polls every partition, finds nothing and
	// waits; then one partition is written.
	deadline := time.Now().Add(10 * time.Second)
	for onePass := cc.count("message.poll"); onePass-before < idle; onePass = cc.count("message.poll") {
		if time.Now().After(deadline) {
			t.Fatalf("the fetch's first pass made %d polls of %d", onePass-before, idle)
		}
		runtime.Gosched()
	}
	producer := dialRaw(t, s.Addr)
	producer.produceRaw(9, 1, topic, 5, buildBatch(1_700_000_000_000, 0, []testRecord{{value: []byte("woken")}}, nil, 0))
	var resp *kmsg.FetchResponse
	select {
	case resp = <-answered:
	case <-time.After(20 * time.Second):
		t.Fatal("the woken fetch did not answer")
	}
	if idle < 8 {
		t.Fatalf("an idle pass over eight partitions made %d polls", idle)
	}
	if n := cc.count("message.poll") - before; n != idle+1 {
		t.Errorf("%d Iggy polls for the woken fetch, want %d (%d in the first pass, then the written partition)", n, idle+1, idle)
	}
	for _, rp := range resp.Topics[0].Partitions {
		recs, _ := decodeBatches(t, rp.RecordBatches)
		want := 0
		if rp.Partition == 5 {
			want = 1
		}
		if rp.ErrorCode != 0 || len(recs) != want || int(rp.HighWatermark) != want {
			t.Errorf("partition %d: error %d, %d records, hw %d", rp.Partition, rp.ErrorCode, len(recs), rp.HighWatermark)
		}
	}
}

// TestFetchLongPollRepolls: a write made directly to Iggy (no local produce
// to wake the fetch) is found by the periodic re-poll: by polling the one
// partition, and, for a fetch of two partitions of one topic, by checking
// the topic's end offsets.
func TestFetchLongPollRepolls(t *testing.T) {
	s := startStack(t, func(o *stackOpts) { o.bridge.Topics.DefaultPartitions = 2 }) // re-poll interval: 50 ms
	rk := dialRaw(t, s.Addr)
	for _, c := range []struct {
		name      string
		partition int32   // written to
		fetched   []int32 // fetched
	}{{"one partition", 0, []int32{0}}, {"two partitions", 1, []int32{0, 1}}} {
		t.Run(c.name, func(t *testing.T) {
			topic := "repoll-" + strconv.Itoa(len(c.fetched))
			createTopic(t, rk, topic)
			start := time.Now()
			timer := time.AfterFunc(100*time.Millisecond, func() {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				m := s.Client.NewMessages()
				_ = m.Add(wire.U128{Lo: 1}, 1_700_000_000_000_000, []byte("native"), nil)
				_, _ = s.Client.Send(ctx, iggy.TopicRef{Stream: "kafka", Topic: topic}, uint32(c.partition), m)
			})
			defer timer.Stop()
			var parts []fetchPart
			for _, p := range c.fetched {
				parts = append(parts, fetchPart{topic: topic, partition: p, maxBytes: 1 << 20})
			}
			resp := rk.fetch(11, fetchReq(5000, 1, 1<<20, parts...))
			took := time.Since(start)
			rp := resp.Topics[0].Partitions[len(c.fetched)-1]
			recs, _ := decodeBatches(t, rp.RecordBatches)
			t.Logf("re-poll answered after %v (message written at 100ms)", took)
			if rp.Partition != c.partition || len(recs) != 1 || string(recs[0].value) != "native" || recs[0].key != nil || rp.HighWatermark != 1 {
				t.Fatalf("partition %d: records %+v hw %d", rp.Partition, recs, rp.HighWatermark)
			}
			if took > 2*time.Second {
				t.Fatalf("answered after %v", took)
			}
		})
	}
}

// TestFetchIdleWaitsMaxWait: with nothing to read, the fetch answers after
// max_wait with no records and no error.
func TestFetchIdleWaitsMaxWait(t *testing.T) {
	s := startStack(t)
	rk := dialRaw(t, s.Addr)
	const topic = "idle"
	createTopic(t, rk, topic)
	start := time.Now()
	resp := rk.fetch(12, fetchReq(300, 1, 1<<20, fetchPart{topic: topic, offset: 0, maxBytes: 1 << 20}))
	took := time.Since(start)
	p := resp.Topics[0].Partitions[0]
	t.Logf("idle fetch answered after %v (max_wait 300ms)", took)
	if p.ErrorCode != 0 || len(p.RecordBatches) != 0 || p.HighWatermark != 0 || p.LastStableOffset != 0 || p.LogStartOffset != 0 {
		t.Fatalf("partition %+v", p)
	}
	if took < 290*time.Millisecond || took > 3*time.Second {
		t.Fatalf("answered after %v", took)
	}
	// max_wait 0 answers at once.
	start = time.Now()
	rk.fetch(12, fetchReq(0, 1, 1<<20, fetchPart{topic: topic, offset: 0, maxBytes: 1 << 20}))
	if took := time.Since(start); took > time.Second {
		t.Fatalf("max_wait 0 answered after %v", took)
	}
}

// TestFetchOffsetsAndErrors: offsets, watermarks and the errors of §3.
func TestFetchOffsetsAndErrors(t *testing.T) {
	s := startStack(t)
	rk := dialRaw(t, s.Addr)
	const topic = "offsets"
	id := createTopic(t, rk, topic)
	values := make([][]byte, 10)
	for i := range values {
		values[i] = bytes.Repeat([]byte{byte('0' + i)}, 1000)
	}
	if base := rk.produceValues(topic, 0, values...); base != 0 {
		t.Fatalf("base %d", base)
	}
	one := func(version int16, p fetchPart) kmsg.FetchResponseTopicPartition {
		t.Helper()
		if p.maxBytes == 0 {
			p.maxBytes = 1 << 20
		}
		resp := rk.fetch(version, fetchReq(0, 1, 1<<20, p))
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("response shape %+v", resp)
		}
		return resp.Topics[0].Partitions[0]
	}

	p := one(12, fetchPart{topic: topic, offset: 0})
	recs, _ := decodeBatches(t, p.RecordBatches)
	if p.ErrorCode != 0 || len(recs) != 10 || p.HighWatermark != 10 || p.LastStableOffset != 10 || p.LogStartOffset != 0 {
		t.Fatalf("from 0: error %d, %d records, hw %d lso %d ls %d", p.ErrorCode, len(recs), p.HighWatermark, p.LastStableOffset, p.LogStartOffset)
	}
	for i, r := range recs {
		if r.offset != int64(i) || !bytes.Equal(r.value, values[i]) || r.timestamp != 1_700_000_000_000+int64(i) {
			t.Fatalf("record %d: offset %d ts %d", i, r.offset, r.timestamp)
		}
	}
	// From the middle: the batch starts at the fetch offset.
	p = one(12, fetchPart{topic: topic, offset: 3})
	recs, _ = decodeBatches(t, p.RecordBatches)
	if len(recs) != 7 || recs[0].offset != 3 || binary.BigEndian.Uint64(p.RecordBatches) != 3 {
		t.Fatalf("from 3: %d records, first %+v", len(recs), recs[0].offset)
	}
	// Partition max bytes: whole records within the limit, at least one.
	p = one(12, fetchPart{topic: topic, offset: 0, maxBytes: 2500})
	recs, _ = decodeBatches(t, p.RecordBatches)
	if len(recs) != 2 || len(p.RecordBatches) > 2500 {
		t.Fatalf("max 2500: %d records in %d bytes", len(recs), len(p.RecordBatches))
	}
	p = one(12, fetchPart{topic: topic, offset: 4, maxBytes: 1})
	recs, _ = decodeBatches(t, p.RecordBatches)
	if len(recs) != 1 || recs[0].offset != 4 {
		t.Fatalf("max 1: %+v", recs)
	}
	// At the end: nothing, no error. Past it, or negative: out of range.
	p = one(12, fetchPart{topic: topic, offset: 10})
	if p.ErrorCode != 0 || len(p.RecordBatches) != 0 || p.RecordBatches == nil || p.HighWatermark != 10 {
		t.Fatalf("at the end: %+v", p)
	}
	for _, off := range []int64{11, 1000, -1} {
		p = one(12, fetchPart{topic: topic, offset: off})
		if p.ErrorCode != kerr.OffsetOutOfRange.Code || p.HighWatermark != -1 || len(p.RecordBatches) != 0 {
			t.Fatalf("offset %d: %+v", off, p)
		}
	}
	// Unknown topic or partition.
	if p = one(12, fetchPart{topic: "nope", offset: 0}); p.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("unknown topic: %d", p.ErrorCode)
	}
	if p = one(12, fetchPart{topic: topic, partition: 7, offset: 0}); p.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("unknown partition: %d", p.ErrorCode)
	}
	// v13+: topics by id.
	for _, v := range []int16{13, 16, 18} {
		resp := rk.fetch(v, fetchReq(0, 1, 1<<20, fetchPart{topicID: id, offset: 8, maxBytes: 1 << 20}))
		recs, _ = decodeBatches(t, resp.Topics[0].Partitions[0].RecordBatches)
		if resp.Topics[0].TopicID != id || len(recs) != 2 || recs[0].offset != 8 {
			t.Fatalf("v%d by id: %+v", v, resp.Topics[0])
		}
	}
	resp := rk.fetch(13, fetchReq(0, 1, 1<<20, fetchPart{topicID: [16]byte{1, 2, 3}, maxBytes: 1 << 20}))
	if resp.Topics[0].Partitions[0].ErrorCode != kerr.UnknownTopicID.Code {
		t.Fatalf("unknown id: %+v", resp.Topics[0].Partitions[0])
	}
	// Sessions (fetchsession_test.go): epoch 0 creates one; unknown ids
	// are refused.
	req := fetchReq(0, 1, 1<<20, fetchPart{topic: topic, offset: 0, maxBytes: 1 << 20})
	req.SessionID, req.SessionEpoch = 0, 0
	if resp := rk.fetch(7, req); resp.ErrorCode != 0 || resp.SessionID <= 0 || len(resp.Topics[0].Partitions[0].RecordBatches) == 0 {
		t.Fatalf("session create: %d %d", resp.ErrorCode, resp.SessionID)
	}
	req.SessionID, req.SessionEpoch = 12, 1
	if resp := rk.fetch(7, req); resp.ErrorCode != kerr.FetchSessionIDNotFound.Code {
		t.Fatalf("session 12: %d", resp.ErrorCode)
	}
	req.SessionID, req.SessionEpoch = 0, 3
	if resp := rk.fetch(12, req); resp.ErrorCode != kerr.FetchSessionIDNotFound.Code || len(resp.Topics) != 0 {
		t.Fatalf("epoch 3: %d", resp.ErrorCode)
	}
	// Both isolation levels read the same.
	req = fetchReq(0, 1, 1<<20, fetchPart{topic: topic, offset: 0, maxBytes: 1 << 20})
	req.IsolationLevel = 1
	if resp := rk.fetch(11, req); len(resp.Topics[0].Partitions[0].RecordBatches) == 0 || resp.Topics[0].Partitions[0].LastStableOffset != 10 {
		t.Fatalf("read committed: %+v", resp.Topics[0].Partitions[0])
	}
}

// TestFetchSmallLogs: the current_offset ambiguity of empty and one-message
// partitions.
func TestFetchSmallLogs(t *testing.T) {
	s := startStack(t)
	rk := dialRaw(t, s.Addr)
	createTopic(t, rk, "empty")
	createTopic(t, rk, "single")
	rk.produceValues("single", 0, []byte("x"))
	cases := []struct {
		topic  string
		offset int64
		code   int16
		hw     int64
		n      int
	}{
		{"empty", 0, 0, 0, 0},
		{"empty", 1, kerr.OffsetOutOfRange.Code, -1, 0},
		{"single", 0, 0, 1, 1},
		{"single", 1, 0, 1, 0},
		{"single", 2, kerr.OffsetOutOfRange.Code, -1, 0},
	}
	for _, c := range cases {
		resp := rk.fetch(12, fetchReq(0, 1, 1<<20, fetchPart{topic: c.topic, offset: c.offset, maxBytes: 1 << 20}))
		p := resp.Topics[0].Partitions[0]
		recs, _ := decodeBatches(t, p.RecordBatches)
		if p.ErrorCode != c.code || p.HighWatermark != c.hw || len(recs) != c.n {
			t.Errorf("%s at %d: error %d hw %d records %d, want %d %d %d", c.topic, c.offset, p.ErrorCode, p.HighWatermark, len(recs), c.code, c.hw, c.n)
		}
	}
}

// TestFetchResponseMaxBytes: the response limit spans partitions, and the
// first record of the first non-empty partition always comes back.
func TestFetchResponseMaxBytes(t *testing.T) {
	s := startStack(t, func(o *stackOpts) { o.bridge.Topics.DefaultPartitions = 2 })
	rk := dialRaw(t, s.Addr)
	const topic = "twoparts"
	createTopic(t, rk, topic)
	big := bytes.Repeat([]byte("b"), 5000)
	rk.produceValues(topic, 0, big, big)
	rk.produceValues(topic, 1, big, big)
	both := []fetchPart{{topic: topic, partition: 0, maxBytes: 1 << 20}, {topic: topic, partition: 1, maxBytes: 1 << 20}}
	resp := rk.fetch(12, fetchReq(0, 1, 100, both...))
	r0, _ := decodeBatches(t, resp.Topics[0].Partitions[0].RecordBatches)
	r1, _ := decodeBatches(t, resp.Topics[0].Partitions[1].RecordBatches)
	if len(r0) != 1 || len(r1) != 0 || resp.Topics[0].Partitions[1].HighWatermark != 2 {
		t.Fatalf("max_bytes 100: %d and %d records, hw %d", len(r0), len(r1), resp.Topics[0].Partitions[1].HighWatermark)
	}
	resp = rk.fetch(12, fetchReq(0, 1, 12000, both...))
	r0, _ = decodeBatches(t, resp.Topics[0].Partitions[0].RecordBatches)
	r1, _ = decodeBatches(t, resp.Topics[0].Partitions[1].RecordBatches)
	total := len(resp.Topics[0].Partitions[0].RecordBatches) + len(resp.Topics[0].Partitions[1].RecordBatches)
	if len(r0) != 2 || len(r1) != 0 || total > 12000 {
		t.Fatalf("max_bytes 12000: %d and %d records in %d bytes", len(r0), len(r1), total)
	}
	// min_bytes above what is there: the fetch waits max_wait, then answers.
	start := time.Now()
	resp = rk.fetch(12, fetchReq(200, 1<<20, 1<<20, both...))
	if took := time.Since(start); took < 190*time.Millisecond || len(resp.Topics[0].Partitions[1].RecordBatches) == 0 {
		t.Fatalf("min_bytes: answered after %v", took)
	}
}

// TestFetchOldVersions: Fetch v0-v3 answer message sets (magic 0, then 1),
// with the right offsets, keys, values and timestamps.
func TestFetchOldVersions(t *testing.T) {
	s := startStack(t)
	rk := dialRaw(t, s.Addr)
	const topic = "old"
	createTopic(t, rk, topic)
	rk.produceValues(topic, 0, []byte("v0"), nil, []byte("v2"))
	for _, v := range []int16{0, 1, 2, 3} {
		resp := rk.fetch(v, fetchReq(0, 1, 1<<20, fetchPart{topic: topic, offset: 1, maxBytes: 1 << 20}))
		p := resp.Topics[0].Partitions[0]
		b := p.RecordBatches
		wantMagic := byte(0)
		if v >= 2 {
			wantMagic = 1
		}
		var got []string
		for off := int64(1); len(b) > 0; off++ {
			if len(b) < 12 {
				t.Fatalf("v%d: truncated", v)
			}
			o := int64(binary.BigEndian.Uint64(b))
			size := int(binary.BigEndian.Uint32(b[8:]))
			m := b[12 : 12+size]
			b = b[12+size:]
			if o != off || m[4] != wantMagic || crc32.ChecksumIEEE(m[4:]) != binary.BigEndian.Uint32(m) {
				t.Fatalf("v%d: message at %d (want %d), magic %d", v, o, off, m[4])
			}
			m = m[6:]
			if wantMagic == 1 {
				if ts := int64(binary.BigEndian.Uint64(m)); ts != 1_700_000_000_000+off {
					t.Fatalf("v%d: timestamp %d", v, ts)
				}
				m = m[8:]
			}
			kl := int32(binary.BigEndian.Uint32(m))
			m = m[4+max(kl, 0):]
			vl := int32(binary.BigEndian.Uint32(m))
			if vl < 0 {
				got = append(got, "<nil>")
			} else {
				got = append(got, string(m[4:4+vl]))
			}
		}
		if p.HighWatermark != 3 || len(got) != 2 || got[0] != "<nil>" || got[1] != "v2" {
			t.Fatalf("v%d: hw %d values %q", v, p.HighWatermark, got)
		}
	}
}

// TestFetchLogStartAfterRetention: once Iggy dropped old segments, the log
// start moves: fetching below it is out of range, ListOffsets earliest and
// the fetch's LogStartOffset report it.
func TestFetchLogStartAfterRetention(t *testing.T) {
	s := startStack(t)
	rk := dialRaw(t, s.Addr)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const topic = "retained"
	ref := iggy.TopicRef{Stream: "kafka", Topic: topic}
	if _, err := s.Client.CreateStream(ctx, "kafka"); err != nil && !errors.Is(err, icodec.StatusStreamNameAlreadyExists) {
		t.Fatal(err)
	}
	seg := icodec.Option{Key: "segment_size", Kind: icodec.HeaderKindUint64, Value: binary.LittleEndian.AppendUint64(nil, 1<<20)}
	if _, err := s.Client.CreateTopic(ctx, ref, 1, icodec.Options{seg}); err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte("r"), 600<<10)
	for range 4 {
		rk.produceValues(topic, 0, big)
	}
	if err := s.Client.Do(ctx, &icodec.DeleteSegmentsRequest{StreamID: ref.StreamID(), TopicID: ref.TopicID(), PartitionID: 0, SegmentsCount: 1}, nil); err != nil {
		t.Fatal(err)
	}
	lo := rk.do(listOffsetsReq(topic, 0, -2), 7).(*kmsg.ListOffsetsResponse)
	start := lo.Topics[0].Partitions[0].Offset
	if start <= 0 || start >= 4 {
		t.Fatalf("log start after deleting a segment: %d", start)
	}
	resp := rk.fetch(12, fetchReq(0, 1, 1<<20, fetchPart{topic: topic, offset: 0, maxBytes: 1 << 20}))
	if p := resp.Topics[0].Partitions[0]; p.ErrorCode != kerr.OffsetOutOfRange.Code {
		t.Fatalf("below the log start: %+v", p.ErrorCode)
	}
	resp = rk.fetch(12, fetchReq(0, 1, 4<<20, fetchPart{topic: topic, offset: start, maxBytes: 4 << 20}))
	p := resp.Topics[0].Partitions[0]
	recs, _ := decodeBatches(t, p.RecordBatches)
	if p.ErrorCode != 0 || p.LogStartOffset != start || p.HighWatermark != 4 || len(recs) != int(4-start) || recs[0].offset != start {
		t.Fatalf("at the log start %d: error %d ls %d hw %d, %d records", start, p.ErrorCode, p.LogStartOffset, p.HighWatermark, len(recs))
	}
}

// TestFetchBrokerMaxBytes: fetch.max_bytes caps what the client asks (a
// consumer asking 1000 MiB gets at most the cap, the first record always),
// v0-v2 fetches (no MaxBytes) included; a MinBytes above the cap is lowered
// to it, so the long poll answers as soon as the cap's worth is there; and
// DescribeConfigs lists it as the broker's fetch.max.bytes.
func TestFetchBrokerMaxBytes(t *testing.T) {
	const capBytes = 12000
	s := startStack(t, func(o *stackOpts) {
		o.bridge.Topics.DefaultPartitions = 2
		o.bridge.Fetch.MaxBytes = capBytes
	})
	rk := dialRaw(t, s.Addr)
	const topic = "capped"
	createTopic(t, rk, topic)
	big := bytes.Repeat([]byte("c"), 5000)
	rk.produceValues(topic, 0, big, big, big, big)
	rk.produceValues(topic, 1, big, big, big, big)
	huge := int32(1000 << 20)
	both := []fetchPart{{topic: topic, partition: 0, maxBytes: huge}, {topic: topic, partition: 1, maxBytes: huge}}
	size := func(resp *kmsg.FetchResponse) (n, recs int) {
		for _, p := range resp.Topics[0].Partitions {
			n += len(p.RecordBatches)
		}
		r, _ := decodeBatches(t, resp.Topics[0].Partitions[0].RecordBatches)
		return n, len(r)
	}
	start := time.Now()
	resp := rk.fetch(12, fetchReq(5000, huge, huge, both...))
	if n, recs := size(resp); n > capBytes || recs != 2 || time.Since(start) > 4*time.Second {
		t.Fatalf("v12 asking 1000 MiB: %d bytes, %d records of partition 0 after %v (cap %d)", n, recs, time.Since(start), capBytes)
	}
	// Fetch v2 has no MaxBytes (message sets, magic 1): the cap alone.
	resp = rk.fetch(2, fetchReq(0, 1, 0, both...))
	if n := len(resp.Topics[0].Partitions[0].RecordBatches) + len(resp.Topics[0].Partitions[1].RecordBatches); n == 0 || n > capBytes {
		t.Fatalf("v2: %d bytes (cap %d)", n, capBytes)
	}
	// A single record larger than the cap still comes back whole (KIP-74).
	const topic2 = "capped-big"
	createTopic(t, rk, topic2)
	rk.produceValues(topic2, 0, bytes.Repeat([]byte("d"), 3*capBytes))
	resp = rk.fetch(12, fetchReq(0, 1, huge, fetchPart{topic: topic2, partition: 0, maxBytes: huge}))
	if r, _ := decodeBatches(t, resp.Topics[0].Partitions[0].RecordBatches); len(r) != 1 || len(r[0].value) != 3*capBytes {
		t.Fatalf("record larger than the cap: %d records", len(r))
	}

	req := kmsg.NewPtrDescribeConfigsRequest()
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName, rr.ConfigNames = kmsg.ConfigResourceTypeBroker, "0", []string{"fetch.max.bytes"}
	req.Resources = append(req.Resources, rr)
	dc := rk.do(req, 4).(*kmsg.DescribeConfigsResponse)
	if c := dc.Resources[0].Configs; len(c) != 1 || *c[0].Value != strconv.Itoa(capBytes) || c[0].Source != kmsg.ConfigSourceStaticBrokerConfig || !c[0].ReadOnly {
		t.Fatalf("describe broker fetch.max.bytes: %+v", c)
	}
}

// TestFetchSessionlessAndZeroMaxBytes: a Fetch with session id -1 and
// epoch -1 (a client that keeps no fetch session) is a full fetch answered
// with the data and session id 0, at every session version; and a Fetch
// whose max_bytes and partition max_bytes are 0 still carries the first
// record, whole (KIP-74), in a batch that decodes.
func TestFetchSessionlessAndZeroMaxBytes(t *testing.T) {
	s := startStack(t)
	rk := dialRaw(t, s.Addr)
	const topic = "sessionless"
	id := createTopic(t, rk, topic)
	big := bytes.Repeat([]byte("z"), 3000)
	rk.produceValues(topic, 0, []byte("one"), []byte("two"), []byte("three"))
	rk.produceValues(topic, 0, big)
	for _, v := range []int16{7, 12, 16} {
		req := fetchReq(0, 1, 1<<20, fetchPart{topic: topic, topicID: id, maxBytes: 1 << 20})
		req.SessionID, req.SessionEpoch = -1, -1
		resp := rk.fetch(v, req)
		if resp.ErrorCode != 0 || resp.SessionID != 0 || len(resp.Topics) != 1 {
			t.Fatalf("v%d sessionless: error %d, session %d, %d topics", v, resp.ErrorCode, resp.SessionID, len(resp.Topics))
		}
		if recs, _ := decodeBatches(t, resp.Topics[0].Partitions[0].RecordBatches); len(recs) != 4 {
			t.Fatalf("v%d sessionless: %d records", v, len(recs))
		}
	}
	for _, tc := range []struct {
		offset int64
		want   string
	}{{0, "one"}, {3, string(big)}} {
		for _, v := range []int16{4, 12} {
			resp := rk.fetch(v, fetchReq(0, 0, 0, fetchPart{topic: topic, offset: tc.offset, maxBytes: 0}))
			p := resp.Topics[0].Partitions[0]
			recs, _ := decodeBatches(t, p.RecordBatches)
			if p.ErrorCode != 0 || len(recs) != 1 || recs[0].offset != tc.offset || string(recs[0].value) != tc.want || p.HighWatermark != 4 {
				t.Fatalf("v%d max_bytes 0 at %d: error %d, %d records, hw %d", v, tc.offset, p.ErrorCode, len(recs), p.HighWatermark)
			}
		}
	}
}
