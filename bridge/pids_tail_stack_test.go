package bridge_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestProducerStateReadBackAcrossSidecars: a producer's batches written
// through one sidecar, followed by 100 records of another producer, are
// known to a second sidecar on the same server (as after a restart): the
// retry of the last batch is a duplicate at its offset, the next sequence
// is written, a gap is out of order. With a tail shorter than the other
// producer's records, the producer is unknown.
func TestProducerStateReadBackAcrossSidecars(t *testing.T) {
	a := startStack(t)
	ra := dialRaw(t, a.Addr)
	pid := ra.do(kmsg.NewPtrInitProducerIDRequest(), 4).(*kmsg.InitProducerIDResponse).ProducerID
	const topic = "readback"
	for seq := int32(0); seq < 10; seq += 5 {
		if p := ra.produceRaw(9, -1, topic, 0, idempotentBatch(pid, 0, seq, 5)); p.ErrorCode != 0 || p.BaseOffset != int64(seq) {
			t.Fatalf("batch at %d: %+v", seq, p)
		}
	}
	other := ra.do(kmsg.NewPtrInitProducerIDRequest(), 4).(*kmsg.InitProducerIDResponse).ProducerID
	for seq := int32(0); seq < 100; seq += 10 {
		if p := ra.produceRaw(9, -1, topic, 0, idempotentBatch(other, 0, seq, 10)); p.ErrorCode != 0 {
			t.Fatalf("other producer: %+v", p)
		}
	}

	b := startStack(t, func(o *stackOpts) { o.shared = a.Iggy })
	rb := dialRaw(t, b.Addr)
	if p := rb.produceRaw(9, -1, topic, 0, idempotentBatch(pid, 0, 5, 5)); p.ErrorCode != 0 || p.BaseOffset != 5 {
		t.Fatalf("retry through the second sidecar: %+v, want a duplicate at 5", p)
	}
	if p := rb.produceRaw(9, -1, topic, 0, idempotentBatch(pid, 0, 0, 5)); p.ErrorCode != 0 || p.BaseOffset != 0 {
		t.Fatalf("retry of the batch before: %+v, want a duplicate at 0", p)
	}
	if p := rb.produceRaw(9, -1, topic, 0, idempotentBatch(pid, 0, 12, 1)); p.ErrorCode != kerr.OutOfOrderSequenceNumber.Code {
		t.Fatalf("gap: %+v", p)
	}
	if p := rb.produceRaw(9, -1, topic, 0, idempotentBatch(pid, 0, 10, 2)); p.ErrorCode != 0 || p.BaseOffset != 110 {
		t.Fatalf("next batch: %+v, want offset 110", p)
	}

	// A third sidecar reading back only the last 50 messages: the producer's
	// last write is 100 messages back.
	other2 := rb.do(kmsg.NewPtrInitProducerIDRequest(), 4).(*kmsg.InitProducerIDResponse).ProducerID
	for seq := int32(0); seq < 100; seq += 10 {
		if p := rb.produceRaw(9, -1, topic, 0, idempotentBatch(other2, 0, seq, 10)); p.ErrorCode != 0 {
			t.Fatalf("third producer: %+v", p)
		}
	}
	c := startStack(t, func(o *stackOpts) {
		o.shared = a.Iggy
		o.bridge.Producer.RecoveryTailMessages = 50
	})
	rc := dialRaw(t, c.Addr)
	if p := rc.produceRaw(9, -1, topic, 0, idempotentBatch(pid, 0, 12, 1)); p.ErrorCode != kerr.UnknownProducerID.Code {
		t.Fatalf("producer beyond the tail: %+v, want UNKNOWN_PRODUCER_ID", p)
	}
}
