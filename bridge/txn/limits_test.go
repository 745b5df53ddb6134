package txn

import (
	"context"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
)

// TestMaxIDs: with transactions.max_ids 2, a third new transactional id is
// answered COORDINATOR_LOAD_IN_PROGRESS (retriable) while the known ids are
// still served, by this coordinator and by a new owner that replayed the
// log; once an id without a transaction is idle past id_expiration it is
// dropped to make room (one in a transaction is not), and the new id gets
// a producer id.
func TestMaxIDs(t *testing.T) {
	cl := iggyFor(t, "mx", 1)
	ref := func(topic string) iggy.TopicRef { return iggy.TopicRef{Stream: "kafka", Topic: topic} }
	var ids pids
	cfg := DefaultConfig()
	cfg.MaxIDs = 2
	ctx := context.Background()
	clock := time.Now()
	c := New(cfg, Deps{Client: cl, Ref: ref, NewProducerID: ids.next}, zerolog.Nop())
	c.now = func() time.Time { return clock }
	init := func(c *Coordinator, id string) InitResult {
		return c.InitProducerID(ctx, InitParams{ID: id, TimeoutMs: 60000, ProducerID: -1, Epoch: -1})
	}
	a, b := init(c, "a"), init(c, "b")
	if a.Code != 0 || b.Code != 0 {
		t.Fatalf("a %+v, b %+v", a, b)
	}
	if r := init(c, "c"); r.Code != kerr.CoordinatorLoadInProgress.Code {
		t.Fatalf("a third id at max_ids 2: %+v, want COORDINATOR_LOAD_IN_PROGRESS", r)
	}
	if r := init(c, "a"); r.Code != 0 || r.ProducerID != a.ProducerID || r.Epoch != a.Epoch+1 {
		t.Fatalf("a known id at the bound: %+v, want producer %d epoch %d", r, a.ProducerID, a.Epoch+1)
	}
	// b opens a transaction: not evictable, however old.
	if add := c.AddPartitions(ctx, "b", b.ProducerID, b.Epoch, []Partition{{"mx", 0}}); add.Code != 0 {
		t.Fatalf("add: %+v", add)
	}

	// A new owner replays the log: the bound holds there too.
	c2 := New(cfg, Deps{Client: cl, Ref: ref, NewProducerID: ids.next}, zerolog.Nop())
	c2.now = func() time.Time { return clock }
	if r := init(c2, "c"); r.Code != kerr.CoordinatorLoadInProgress.Code {
		t.Fatalf("a third id at a new owner: %+v, want COORDINATOR_LOAD_IN_PROGRESS", r)
	}

	// Past id_expiration: a (no transaction) makes room for c; b stays.
	clock = clock.Add(cfg.IDExpiration + time.Minute)
	cr := init(c2, "c")
	if cr.Code != 0 {
		t.Fatalf("c after a expired: %+v", cr)
	}
	if d := c2.Describe(ctx, "a"); d.Code != kerr.TransactionalIDNotFound.Code {
		t.Fatalf("a after its eviction: %+v", d)
	}
	if d := c2.Describe(ctx, "b"); d.Code != 0 || d.State != Ongoing {
		t.Fatalf("b (in a transaction) after the eviction: %+v", d)
	}
	if r := init(c2, "d"); r.Code != kerr.CoordinatorLoadInProgress.Code {
		t.Fatalf("d with b and c held: %+v, want COORDINATOR_LOAD_IN_PROGRESS", r)
	}
	// The first coordinator, reading the log, agrees.
	if d := c.Describe(ctx, "c"); d.Code != 0 || d.ProducerID != cr.ProducerID {
		t.Fatalf("c at the first coordinator: %+v", d)
	}
}
