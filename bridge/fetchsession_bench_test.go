package bridge_test

import "testing"

// BenchmarkFetchSession200Partitions: a consumer of 200 partitions of
// which one receives a record per fetch, with full fetches (every
// partition sent and answered) and with an incremental fetch session
// (only the partition whose offset moved sent, only it answered). One op
// is a produce of one record and the fetch that returns it, through the
// whole in-process stack (client encode/decode, gateway, embedded Iggy).
func BenchmarkFetchSession200Partitions(b *testing.B) {
	const parts = 200
	for _, mode := range []string{"full", "incremental"} {
		b.Run(mode, func(b *testing.B) {
			s := startStack(b, func(o *stackOpts) { o.bridge.Topics.DefaultPartitions = parts })
			rk := dialRaw(b, s.Addr)
			topic := "bench-" + mode
			createTopic(b, rk, topic)
			all := make([]fetchPart, parts)
			for i := range all {
				all[i] = fetchPart{topic: topic, partition: int32(i), maxBytes: 1 << 20}
			}
			req := fetchReq(0, 0, 1<<20, all...)
			req.SessionEpoch = 0
			if mode == "full" {
				req.SessionEpoch = -1
			}
			resp := rk.fetch(12, req)
			session, epoch := resp.SessionID, int32(1)
			next := int64(0)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				rk.produceValues(topic, 0, []byte("v"))
				if mode == "full" {
					all[0].offset = next
					req = fetchReq(0, 0, 1<<20, all...)
				} else {
					req = fetchReq(0, 0, 1<<20, fetchPart{topic: topic, partition: 0, offset: next, maxBytes: 1 << 20})
					req.SessionID, req.SessionEpoch = session, epoch
					epoch++
				}
				resp := rk.fetch(12, req)
				if resp.ErrorCode != 0 || len(resp.Topics) == 0 {
					b.Fatalf("fetch: error %d", resp.ErrorCode)
				}
				answered := 0
				for _, t := range resp.Topics {
					answered += len(t.Partitions)
				}
				if (mode == "full") != (answered == parts) || len(resp.Topics[0].Partitions[0].RecordBatches) == 0 {
					b.Fatalf("%s: %d partitions answered", mode, answered)
				}
				next++
			}
			b.StopTimer()
		})
	}
}
