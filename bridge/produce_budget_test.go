package bridge

import (
	"context"
	"encoding/binary"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafka-iggy/kafka-iggy/budget"
)

// produceWithCodec is a Produce of one v2 batch header naming codec.
func produceWithCodec(codec byte) *kmsg.ProduceRequest {
	b := make([]byte, 61)
	binary.BigEndian.PutUint32(b[8:], 49) // batch length
	b[16] = 2                             // magic
	b[22] = codec                         // attributes' low byte
	req := kmsg.NewPtrProduceRequest()
	req.TimeoutMillis = 1000
	rt := kmsg.NewProduceRequestTopic()
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = b
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// TestDecompressAllowanceDrawsFromBudget: a Produce without compressed
// batches takes nothing; one with takes twice a quarter of the budget
// until released; when the room cannot come the request is not served
// (ok false: REQUEST_TIMED_OUT).
func TestDecompressAllowanceDrawsFromBudget(t *testing.T) {
	const total = 64 << 20
	b := &Bridge{budget: budget.New(total)}
	ctx := context.Background()

	limit, release, ok := b.budget.DecompressAllowance(ctx, produceCompressed(produceWithCodec(0)), produceWithCodec(0).TimeoutMillis)
	if !ok || limit != budget.DecompressLimit || b.budget.InUse() != 0 {
		t.Fatalf("uncompressed: limit %d ok %v, %d in use", limit, ok, b.budget.InUse())
	}
	release()

	limit, release, ok = b.budget.DecompressAllowance(ctx, produceCompressed(produceWithCodec(1)), produceWithCodec(1).TimeoutMillis)
	if !ok || limit != total/4 || b.budget.InUse() != total/2 {
		t.Fatalf("gzip: limit %d ok %v, %d in use; want %d, %d", limit, ok, b.budget.InUse(), total/4, total/2)
	}
	release()
	if b.budget.InUse() != 0 {
		t.Fatalf("%d in use after release", b.budget.InUse())
	}

	b.budget.Charge(total) // the budget is all held
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, _, ok := b.budget.DecompressAllowance(cancelled, produceCompressed(produceWithCodec(4)), produceWithCodec(4).TimeoutMillis); ok {
		t.Fatal("served with no room in the budget")
	}
}
