package bridge_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
)

// TestProducerIDsUniqueAcrossSidecars: two sidecars on one Iggy server, and
// a third started after them (a restart), hand out disjoint producer ids:
// each leases its own block from Iggy.
func TestProducerIDsUniqueAcrossSidecars(t *testing.T) {
	a := startStack(t)
	b := startStack(t, func(o *stackOpts) { o.shared = a.Iggy })
	seen := map[int64]string{}
	initIDs := func(s *stack, who string, n int) {
		r := dialRaw(t, s.Addr)
		for range n {
			ip := r.do(kmsg.NewPtrInitProducerIDRequest(), 4).(*kmsg.InitProducerIDResponse)
			if ip.ErrorCode != 0 || ip.ProducerID < 0 {
				t.Fatalf("%s: %+v", who, ip)
			}
			if prev, dup := seen[ip.ProducerID]; dup {
				t.Fatalf("producer id %d handed out by %s and %s", ip.ProducerID, prev, who)
			}
			seen[ip.ProducerID] = who
		}
	}
	initIDs(a, "a", 50)
	initIDs(b, "b", 50)
	initIDs(a, "a", 50)
	c := startStack(t, func(o *stackOpts) { o.shared = a.Iggy })
	initIDs(c, "c (restart)", 50)
	// Three blocks were leased: the lease topic holds three messages.
	if msgs := iggyMessages(t, a.Client, iggy.TopicRef{Stream: "__kafka_iggy", Topic: "producer_ids"}, 0); len(msgs) != 3 {
		t.Fatalf("%d lease messages, want 3", len(msgs))
	}
}
