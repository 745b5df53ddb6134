package txn

import (
	"context"
	"testing"

	"github.com/rs/zerolog"

	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
)

// BenchmarkTxnCycle is one transaction on the embedded Iggy server:
// AddPartitionsToTxn of two partitions and a committing EndTxn (the
// decision, two markers, the Complete record).
func BenchmarkTxnCycle(b *testing.B) {
	cl := iggyFor(b, "bc", 2)
	ref := func(topic string) iggy.TopicRef { return iggy.TopicRef{Stream: "kafka", Topic: topic} }
	var ids pids
	cfg := DefaultConfig()
	ctx := context.Background()
	c := New(cfg, Deps{Client: cl, Ref: ref, NewProducerID: ids.next}, zerolog.Nop())
	r := c.InitProducerID(ctx, InitParams{ID: "b", TimeoutMs: 60000, ProducerID: -1, Epoch: -1})
	if r.Code != 0 {
		b.Fatal(r)
	}
	b.ResetTimer()
	for range b.N {
		if a := c.AddPartitions(ctx, "b", r.ProducerID, r.Epoch, []Partition{{"bc", 0}, {"bc", 1}}); a.Code != 0 {
			b.Fatal(a)
		}
		if code := c.EndTxn(ctx, "b", r.ProducerID, r.Epoch, true); code != 0 {
			b.Fatal(code)
		}
	}
}
