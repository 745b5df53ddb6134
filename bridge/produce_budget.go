package bridge

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafka-iggy/kafka-iggy/codec/records"
)

// Bounds of the memory a Produce request's decompression draws from the
// process's memory budget (limits.memory_bytes).
const (
	// produceDecompressBudget bounds what one Produce request may
	// decompress to: 100 MiB, Kafka's socket.request.max.bytes default and
	// the front door's default frame limit (proxy.DefaultMaxFrameBytes).
	produceDecompressBudget = 100 << 20
	// produceDecompressShare: one request decompresses at most a quarter
	// of the budget (and never more than produceDecompressBudget).
	produceDecompressShare = 4
	// produceDecompressWaitMax bounds the wait for that room; the
	// request's own timeout bounds it first.
	produceDecompressWaitMax = 30 * time.Second
)

// decompressAllowance is the DecompressBudget limit of a Produce request
// and the function that returns its memory. A request without compressed
// batches decompresses nothing and takes nothing. One with compressed
// batches first takes twice its limit from the memory budget (the
// decompressed records and the Iggy messages built from them), waiting
// for the room at most the request's timeout (30s at most): Kafka's
// message.max.bytes bounds the compressed batch only, so what it expands
// to must be bounded here, by the budget. A batch that decompresses past
// the limit is refused as too large (MESSAGE_TOO_LARGE, RecordsErrorCode).
// ok is false when the room did not come in time: the request is then
// answered REQUEST_TIMED_OUT (retriable, as Kafka's timeouts are) and
// nothing is written.
func (b *Bridge) decompressAllowance(ctx context.Context, req *kmsg.ProduceRequest) (limit int, release func(), ok bool) {
	if b.budget == nil || !produceCompressed(req) {
		return produceDecompressBudget, func() {}, true
	}
	want := min(int64(produceDecompressBudget), b.budget.Total()/produceDecompressShare)
	wait := min(time.Duration(max(req.TimeoutMillis, 1000))*time.Millisecond, produceDecompressWaitMax)
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	got, err := b.budget.Acquire(wctx, 2*want)
	if err != nil {
		return 0, func() {}, false
	}
	return int(got / 2), func() { b.budget.Release(got) }, true
}

// setProduceCodes answers every partition of resp with code.
func setProduceCodes(resp *kmsg.ProduceResponse, code int16) {
	for i := range resp.Topics {
		for j := range resp.Topics[i].Partitions {
			resp.Topics[i].Partitions[j].ErrorCode = code
		}
	}
}

// produceCompressed reports whether any batch of req names a compression
// codec (magic 0/1 message sets and v2 batches alike keep it in the low
// bits of their attributes; a message set's wrapper is checked through
// its first message only, which is where a compressed set says so).
func produceCompressed(req *kmsg.ProduceRequest) bool {
	for i := range req.Topics {
		for j := range req.Topics[i].Partitions {
			if records.Compressed(req.Topics[i].Partitions[j].Records) {
				return true
			}
		}
	}
	return false
}
