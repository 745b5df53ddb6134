package bridge_test

import (
	"encoding/binary"
	"hash/crc32"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
)

// idempotentBatch is a record batch v2 of n records from producer pid
// (epoch, first sequence seq).
func idempotentBatch(pid int64, epoch int16, seq int32, n int) []byte {
	recs := make([]testRecord, n)
	for i := range recs {
		recs[i] = testRecord{value: []byte{byte('a' + i)}}
	}
	b := buildBatch(1700000000000, 0, recs, nil, 0)
	binary.BigEndian.PutUint64(b[43:], uint64(pid))
	binary.BigEndian.PutUint16(b[51:], uint16(epoch))
	binary.BigEndian.PutUint32(b[53:], uint32(seq))
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], castagnoli))
	return b
}

// TestIdempotentProduce: a retried batch returns its original offsets and
// is stored once; a sequence gap answers OUT_OF_ORDER_SEQUENCE_NUMBER.
func TestIdempotentProduce(t *testing.T) {
	s := offsetsStack(t, true, "auto")
	offTopic(t, s, "idem", 1, nil)
	r := dialRaw(t, s.Addr)
	ip := r.do(kmsg.NewPtrInitProducerIDRequest(), 4).(*kmsg.InitProducerIDResponse)
	if ip.ErrorCode != 0 {
		t.Fatal(ip.ErrorCode)
	}
	pid := ip.ProducerID

	first := idempotentBatch(pid, 0, 0, 3)
	if p := r.produceRaw(9, -1, "idem", 0, first); p.ErrorCode != 0 || p.BaseOffset != 0 {
		t.Fatalf("first batch: %+v", p)
	}
	p := r.produceRaw(9, -1, "idem", 0, first)
	if p.ErrorCode != 0 || p.BaseOffset != 0 {
		t.Fatalf("retried batch: %+v, want base offset 0", p)
	}
	if p := r.produceRaw(9, -1, "idem", 0, idempotentBatch(pid, 0, 3, 2)); p.ErrorCode != 0 || p.BaseOffset != 3 {
		t.Fatalf("next batch: %+v", p)
	}
	if p := r.produceRaw(9, -1, "idem", 0, idempotentBatch(pid, 0, 10, 1)); p.ErrorCode != kerr.OutOfOrderSequenceNumber.Code {
		t.Fatalf("sequence gap: %+v", p)
	}
	if p := r.produceRaw(9, -1, "idem", 0, idempotentBatch(pid, 1, 0, 1)); p.ErrorCode != 0 || p.BaseOffset != 5 {
		t.Fatalf("new epoch: %+v", p)
	}
	if p := r.produceRaw(9, -1, "idem", 0, idempotentBatch(pid, 0, 5, 1)); p.ErrorCode != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("old epoch: %+v", p)
	}
	if msgs := iggyMessages(t, s.Client, iggy.TopicRef{Stream: "kafka", Topic: "idem"}, 0); len(msgs) != 6 {
		t.Fatalf("Iggy holds %d messages, want 6 (no duplicates)", len(msgs))
	}

	// A real idempotent producer pipelining small batches (5 requests in
	// flight, franz-go's default for idempotence): every record lands once,
	// in order.
	offTopic(t, s, "idem-pipe", 1, nil)
	cl := s.kgoClient(t, kgo.ProducerLinger(0), kgo.ProducerBatchMaxBytes(512),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx := offCtx(t)
	const n = 1500
	var wg sync.WaitGroup
	var failed atomic.Int32
	for i := 0; i < n; i++ {
		wg.Add(1)
		cl.Produce(ctx, &kgo.Record{Topic: "idem-pipe", Value: []byte(strconv.Itoa(i))}, func(_ *kgo.Record, err error) {
			if err != nil {
				failed.Add(1)
			}
			wg.Done()
		})
	}
	wg.Wait()
	if f := failed.Load(); f != 0 {
		t.Fatalf("%d records failed", f)
	}
	msgs := iggyMessages(t, s.Client, iggy.TopicRef{Stream: "kafka", Topic: "idem-pipe"}, 0)
	if len(msgs) != n {
		t.Fatalf("Iggy holds %d messages, want %d", len(msgs), n)
	}
	for i, m := range msgs {
		if string(m.Payload) != strconv.Itoa(i) {
			t.Fatalf("message %d is %q: out of order", i, m.Payload)
		}
	}
}
