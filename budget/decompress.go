package budget

import (
	"context"
	"time"
)

// Bounds of the memory a Produce request's decompression draws from the
// process's memory budget (limits.memory_bytes).
const (
	// DecompressLimit bounds what one Produce request may
	// decompress to: 100 MiB, Kafka's socket.request.max.bytes default and
	// the front door's default frame limit (proxy.DefaultMaxFrameBytes).
	DecompressLimit = 100 << 20
	// decompressShare: one request decompresses at most a quarter
	// of the budget (and never more than DecompressLimit).
	decompressShare = 4
	// decompressWaitMax bounds the wait for that room; the
	// request's own timeout bounds it first.
	decompressWaitMax = 30 * time.Second
)

// DecompressAllowance is the DecompressBudget limit of a Kafka Produce
// request and the function that returns its memory. A request without
// compressed batches decompresses nothing and takes nothing. One with
// compressed batches first takes twice its limit from the memory budget (the
// decompressed records and the Iggy messages built from them), waiting
// for the room at most the request's timeout (30s at most): Kafka's
// message.max.bytes bounds the compressed batch only, so what it expands
// to must be bounded here, by the budget. A batch that decompresses past
// the limit is refused as too large (MESSAGE_TOO_LARGE, RecordsErrorCode).
// ok is false when the room did not come in time: the request is then
// answered REQUEST_TIMED_OUT (retriable, as Kafka's timeouts are) and
// nothing is written.
func (b *Budget) DecompressAllowance(ctx context.Context, compressed bool, timeoutMillis int32) (limit int, release func(), ok bool) {
	if b == nil || !compressed {
		return DecompressLimit, func() {}, true
	}
	want := min(int64(DecompressLimit), b.Total()/decompressShare)
	wait := min(time.Duration(max(timeoutMillis, 1000))*time.Millisecond, decompressWaitMax)
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	got, err := b.Acquire(wctx, 2*want)
	if err != nil {
		return 0, func() {}, false
	}
	return int(got / 2), func() { b.Release(got) }, true
}
