package bridge_test

import (
	"bytes"
	"testing"
)

// BenchmarkFetchIsolation: one Fetch v11 of a partition holding 1,000
// records of 1 KiB that never saw a transaction, read whole from offset 0, at
// read_uncommitted and at read_committed (whose tracker has scanned the
// partition by the first op and then polls once per fetch for news).
func BenchmarkFetchIsolation(b *testing.B) {
	s := startStack(b)
	rk := dialRaw(b, s.Addr)
	const topic = "bench-isolation"
	createTopic(b, rk, topic)
	val := bytes.Repeat([]byte("x"), 1024)
	for range 10 {
		vals := make([][]byte, 100)
		for i := range vals {
			vals[i] = val
		}
		rk.produceValues(topic, 0, vals...)
	}
	for _, c := range []struct {
		name string
		iso  int8
	}{{"read_uncommitted", 0}, {"read_committed", 1}} {
		b.Run(c.name, func(b *testing.B) {
			req := fetchReq(0, 1, 4<<20, fetchPart{topic: topic, maxBytes: 4 << 20})
			req.IsolationLevel = c.iso
			for b.Loop() {
				rp := rk.fetch(11, req).Topics[0].Partitions[0]
				if rp.ErrorCode != 0 || rp.HighWatermark != 1000 || rp.LastStableOffset != 1000 || len(rp.RecordBatches) < 1000*1024 {
					b.Fatalf("fetch: code %d hw %d lso %d bytes %d", rp.ErrorCode, rp.HighWatermark, rp.LastStableOffset, len(rp.RecordBatches))
				}
			}
		})
	}
}
