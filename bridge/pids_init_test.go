package bridge

import (
	"context"
	"testing"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafka-iggy/kafka-iggy/bridge/producers"
)

func TestHandleInitProducerID(t *testing.T) {
	// Ids from the clock-seeded allocator of instance 3 (no leaser): the
	// instance is the id's bits above its 47-bit counter.
	b := &Bridge{log: zerolog.Nop(), pids: producers.NewLocal(producers.Config{InstanceID: 3, MaxTrackedProducers: 10}, zerolog.Nop())}
	seen := map[int64]bool{}
	for v := int16(0); v <= 5; v++ {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.SetVersion(v)
		req.ProducerID, req.ProducerEpoch = 12345, 3 // ignored without a transactional id
		r, err := b.handleInitProducerID(context.Background(), &Request{Key: 22, Version: v, Msg: req})
		if err != nil {
			t.Fatal(err)
		}
		resp := r.(*kmsg.InitProducerIDResponse)
		if resp.ErrorCode != 0 || resp.ProducerEpoch != 0 || resp.ProducerID < 0 || seen[resp.ProducerID] || resp.ProducerID>>47 != 3 {
			t.Fatalf("v%d: %+v", v, resp)
		}
		seen[resp.ProducerID] = true

		txn := ""
		req.TransactionalID = &txn
		r, _ = b.handleInitProducerID(context.Background(), &Request{Key: 22, Version: v, Msg: req})
		resp = r.(*kmsg.InitProducerIDResponse)
		if resp.ErrorCode != kerr.InvalidRequest.Code || resp.ProducerID != -1 || resp.ProducerEpoch != -1 {
			t.Fatalf("v%d transactional: %+v", v, resp)
		}
	}
}
