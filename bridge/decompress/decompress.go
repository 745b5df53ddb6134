// Package decompress bounds the memory a Produce request's decompression
// draws from the process's memory budget (limits.memory_bytes).
package decompress

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafka-iggy/kafka-iggy/budget"
	"github.com/kafka-iggy/kafka-iggy/codec/records"
)

// Bounds of the memory a Produce request's decompression draws from the
// process's memory budget (limits.memory_bytes).
const (
	// RequestBudget bounds what one Produce request may
	// decompress to: 100 MiB, Kafka's socket.request.max.bytes default and
	// the front door's default frame limit (proxy.DefaultMaxFrameBytes).
	RequestBudget = 100 << 20
	// share: one request decompresses at most a quarter
	// of the budget (and never more than RequestBudget).
	share = 4
	// waitMax bounds the wait for that room; the
	// request's own timeout bounds it first.
	waitMax = 30 * time.Second
)

// Allowance is the DecompressBudget limit of a Produce request
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
func Allowance(ctx context.Context, b *budget.Budget, req *kmsg.ProduceRequest) (limit int, release func(), ok bool) {
	if b == nil || !compressed(req) {
		return RequestBudget, func() {}, true
	}
	want := min(int64(RequestBudget), b.Total()/share)
	wait := min(time.Duration(max(req.TimeoutMillis, 1000))*time.Millisecond, waitMax)
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	got, err := b.Acquire(wctx, 2*want)
	if err != nil {
		return 0, func() {}, false
	}
	return int(got / 2), func() { b.Release(got) }, true
}

// compressed reports whether any batch of req names a compression
// codec (magic 0/1 message sets and v2 batches alike keep it in the low
// bits of their attributes; a message set's wrapper is checked through
// its first message only, which is where a compressed set says so).
func compressed(req *kmsg.ProduceRequest) bool {
	for i := range req.Topics {
		for j := range req.Topics[i].Partitions {
			if records.Compressed(req.Topics[i].Partitions[j].Records) {
				return true
			}
		}
	}
	return false
}
