package iggy

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
	"github.com/kafka-iggy/kafka-iggy/embedded"
)

// fakeCluster is two embedded 0.12 servers answering as replicas 0 (a, the
// metadata leader) and 1 (b) of one cluster; primary[p] is the replica
// leading partition p of every topic. Nothing is replicated between them.
type fakeCluster struct {
	a, b    *embedded.Server
	primary [2]atomic.Uint32
}

func startFakeCluster(t *testing.T) *fakeCluster {
	fc := &fakeCluster{a: startEmbeddedProtocol(t, "0.12"), b: startEmbeddedProtocol(t, "0.12")}
	fc.primary[1].Store(1) // partition 0 on a, partition 1 on b
	nodes := []embedded.ClusterMember{
		{ReplicaID: 0, Name: "a", Addr: fc.a.Addr().String(), Leader: true},
		{ReplicaID: 1, Name: "b", Addr: fc.b.Addr().String()},
	}
	primary := func(_, _ string, p uint32) uint8 { return uint8(fc.primary[p%2].Load()) }
	fc.a.SetCluster(&embedded.ClusterView{Self: 0, Nodes: nodes, View: 1, Primary: primary})
	fc.b.SetCluster(&embedded.ClusterView{Self: 1, Nodes: nodes, View: 1, Primary: primary})
	return fc
}

// direct is a client of one node that neither follows the leader nor routes.
func direct(t *testing.T, addr string) *Client {
	cfg := testConfig(addr)
	cfg.Protocol = "0.12"
	cfg.RoutePartitions = false
	return startClient(t, cfg)
}

// sidecarConfig is a routing client bootstrapped at addr.
func sidecarConfig(addr string) Config {
	cfg := testConfig(addr)
	cfg.Protocol = "0.12"
	cfg.FollowLeader = true
	cfg.RoutePartitions = true
	cfg.PoolSize = 2
	cfg.MaxBatchMessages = 2 // a 3-message send leaves as two batches
	return cfg
}

func sendRouted(ctx context.Context, t *testing.T, c *Client, tr TopicRef, partition uint32, payload string) (int64, error) {
	t.Helper()
	m := c.NewMessages()
	if err := m.Add(randID(), uint64(time.Now().UnixMicro()), []byte(payload), nil); err != nil {
		t.Fatal(err)
	}
	return c.Send(ctx, tr, partition, m)
}

func pollAll(ctx context.Context, c *Client, tr TopicRef, partition uint32) ([]string, error) {
	p, err := c.Poll(ctx, &icodec.PollMessagesRequest{
		Consumer: icodec.Consumer{Kind: icodec.ConsumerKindConsumer, ID: icodec.Identifier{Kind: icodec.IdentifierKindNumeric, Value: []byte{7, 0, 0, 0}}},
		StreamID: tr.StreamID(), TopicID: tr.TopicID(),
		PartitionID: icodec.OptionalPartition{Present: true, PartitionID: partition},
		Strategy:    icodec.PollingStrategy{Kind: icodec.PollingKindOffset, Value: 0}, Count: 100,
	})
	if err != nil {
		return nil, err
	}
	defer p.Release()
	var out []string
	for it := p.Messages(); it.Next(); {
		out = append(out, string(it.Message().Payload))
	}
	return out, nil
}

// messagesOn is partition's message count on the node of c (GET_TOPIC).
func messagesOn(ctx context.Context, t *testing.T, c *Client, tr TopicRef, partition uint32) uint64 {
	t.Helper()
	var d icodec.TopicDetails
	if err := c.Do(ctx, &icodec.GetTopicRequest{StreamID: tr.StreamID(), TopicID: tr.TopicID()}, &d); err != nil {
		t.Fatal(err)
	}
	for _, p := range d.Partitions {
		if p.ID == partition {
			return p.MessagesCount
		}
	}
	t.Fatalf("no partition %d in %+v", partition, d)
	return 0
}

// TestPartitionRouting: a client bootstrapped at node a of a two-node 0.12
// cluster produces to, polls and stores offsets of partition 1, whose
// primary is node b: the records land on b (a has none and refuses the
// partition with 89), come back through the client, and the offset is on
// b. When the primary moves, the request on the old route is refused
// unadmitted and sent again along the new route (sends too: the session
// hands the refused messages back).
func TestPartitionRouting(t *testing.T) {
	fc := startFakeCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	da, db := direct(t, fc.a.Addr().String()), direct(t, fc.b.Addr().String())
	tr := TopicRef{Stream: "routed", Topic: "events"}
	for _, d := range []*Client{da, db} { // the "replicated" metadata, by hand
		if _, err := d.CreateStream(ctx, tr.Stream); err != nil {
			t.Fatal(err)
		}
		if _, err := d.CreateTopic(ctx, tr, 2, nil); err != nil {
			t.Fatal(err)
		}
	}

	c := startClient(t, sidecarConfig(fc.a.Addr().String()))
	for i, want := range []uint32{0, 1, 0, 1} {
		if base, err := sendRouted(ctx, t, c, tr, want, "m"+string(rune('0'+i))); err != nil || base != int64(i/2) {
			t.Fatalf("send %d to partition %d: base %d, %v", i, want, base, err)
		}
	}
	if n := messagesOn(ctx, t, da, tr, 0); n != 2 {
		t.Fatalf("partition 0 on a (its primary): %d messages, want 2", n)
	}
	if n := messagesOn(ctx, t, db, tr, 1); n != 2 {
		t.Fatalf("partition 1 on b (its primary): %d messages, want 2", n)
	}
	if n := messagesOn(ctx, t, da, tr, 1); n != 0 {
		t.Fatalf("partition 1 on a: %d messages, want 0 (b is its primary)", n)
	}
	if _, err := pollAll(ctx, da, tr, 1); !errors.Is(err, icodec.StatusNotPrimary) {
		t.Fatalf("a polled partition 1 without the route: %v, want 89 NotPrimary", err)
	}
	got, err := pollAll(ctx, c, tr, 1)
	if err != nil || !slices.Equal(got, []string{"m1", "m3"}) {
		t.Fatalf("routed poll of partition 1: %q, %v", got, err)
	}
	consumer := icodec.Consumer{Kind: icodec.ConsumerKindConsumer, ID: icodec.Identifier{Kind: icodec.IdentifierKindNumeric, Value: []byte{9, 0, 0, 0}}}
	if err := c.StoreOffset(ctx, tr, 1, consumer, 1); err != nil {
		t.Fatalf("routed store offset: %v", err)
	}
	if off, found, err := db.GetOffset(ctx, tr, 1, consumer); err != nil || !found || off.StoredOffset != 1 {
		t.Fatalf("offset on b: %+v %v %v", off, found, err)
	}
	if off, found, err := c.GetOffset(ctx, tr, 1, consumer); err != nil || !found || off.StoredOffset != 1 {
		t.Fatalf("routed get offset: %+v %v %v", off, found, err)
	}
	if peers := c.PeerNodes(); !slices.Equal(peers, []string{fc.b.Addr().String()}) {
		t.Fatalf("peer pools %v, want only b", peers)
	}

	// Partition 1 moves to a. The cached route still names b, which
	// refuses unadmitted; the send goes again along the new route to a.
	fc.primary[1].Store(0)
	if base, err := sendRouted(ctx, t, c, tr, 1, "moved"); err != nil || base != 0 {
		t.Fatalf("send on the stale route: base %d, %v (want a's partition 1, base 0)", base, err)
	}
	if n := messagesOn(ctx, t, da, tr, 1); n != 1 {
		t.Fatalf("partition 1 on a after the move: %d messages, want 1", n)
	}
	if n := messagesOn(ctx, t, db, tr, 1); n != 2 {
		t.Fatalf("partition 1 on b after the move: %d messages, want the 2 from before", n)
	}
	// Back to b, with a send split into batches (max_batch_messages 2): the
	// first batch is refused by a and the whole send goes to b.
	fc.primary[1].Store(1)
	m := c.NewMessages()
	for _, v := range []string{"s0", "s1", "s2"} {
		if err := m.Add(randID(), uint64(time.Now().UnixMicro()), []byte(v), nil); err != nil {
			t.Fatal(err)
		}
	}
	if base, err := c.Send(ctx, tr, 1, m); err != nil || base != 2 {
		t.Fatalf("split send after the move back: base %d, %v (want b's offset 2)", base, err)
	}
	if got, err := pollAll(ctx, db, tr, 1); err != nil || !slices.Equal(got, []string{"m1", "m3", "s0", "s1", "s2"}) {
		t.Fatalf("partition 1 on b: %q, %v", got, err)
	}
	// Partition 0 moves to b: a poll on the stale route is refused by a and
	// tried again at once along the new route (b's partition 0 is empty).
	fc.primary[0].Store(1)
	if got, err := pollAll(ctx, c, tr, 0); err != nil || len(got) != 0 {
		t.Fatalf("poll after partition 0 moved to b: %q, %v (want b's empty partition)", got, err)
	}
}

// opMetrics records the operations the client sent.
type opMetrics struct {
	NopMetrics
	mu  sync.Mutex
	ops map[string]int
}

func (m *opMetrics) Request(op string, _ time.Duration, _ error) {
	m.mu.Lock()
	m.ops[op]++
	m.mu.Unlock()
}

func (m *opMetrics) count(op string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ops[op]
}

// TestPartitionRoutingOneNode: on a one-node 0.12 server (the embedded
// default) partition requests cost no GET_PARTITION_ROUTE and open no peer
// pool.
func TestPartitionRoutingOneNode(t *testing.T) {
	srv := startEmbeddedProtocol(t, "0.12")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m := &opMetrics{ops: map[string]int{}}
	c := startClient(t, sidecarConfig(srv.Addr().String()), WithMetrics(m))
	tr := TopicRef{Stream: "single", Topic: "t"}
	if _, err := c.CreateStream(ctx, tr.Stream); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateTopic(ctx, tr, 2, nil); err != nil {
		t.Fatal(err)
	}
	for p := range uint32(2) {
		if _, err := sendRouted(ctx, t, c, tr, p, "x"); err != nil {
			t.Fatal(err)
		}
		if got, err := pollAll(ctx, c, tr, p); err != nil || len(got) != 1 {
			t.Fatalf("poll %d: %q %v", p, got, err)
		}
	}
	meta, _ := icodec.LookupCommand(icodec.CodeGetPartitionRoute)
	if n := m.count(meta.WireName); n != 0 {
		t.Fatalf("%d %s requests on a one-node server", n, meta.WireName)
	}
	if n := m.count("message.send"); n != 2 {
		t.Fatalf("%d sends recorded, want 2 (the metrics see the requests)", n)
	}
	if peers := c.PeerNodes(); len(peers) != 0 {
		t.Fatalf("peer pools %v on a one-node server", peers)
	}
}
