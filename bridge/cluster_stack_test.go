package bridge_test

import (
	"context"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
	"github.com/kafka-iggy/kafka-iggy/embedded"
	"github.com/kafka-iggy/kafka-iggy/embedded/embedtest"
)

// TestClusterRoutedProduceFetch: the sidecar is bootstrapped at node a of
// a two-node 0.12 cluster (two embedded servers answering as replicas 0
// and 1, embedded.Server.SetCluster) where partition 1 of topic "routed"
// has its primary on node b, which refuses nothing of it while a answers
// it with 89 NotPrimary. A Kafka producer writes to both partitions through
// the sidecar and a Kafka consumer reads them back through it: partition
// 1's records are on b and none on a.
func TestClusterRoutedProduceFetch(t *testing.T) {
	const topic = "routed"
	start := func() *embedded.Server {
		return embedtest.Start(t, "127.0.0.1:0", func(c *embedded.Config) { c.Protocol = "0.12" })
	}
	a, b := start(), start()
	nodes := []embedded.ClusterMember{
		{ReplicaID: 0, Name: "a", Addr: a.Addr().String(), Leader: true},
		{ReplicaID: 1, Name: "b", Addr: b.Addr().String()},
	}
	primary := func(_, tp string, p uint32) uint8 {
		if tp == topic && p == 1 {
			return 1
		}
		return 0 // everything else, the sidecar's own topics included, on a
	}
	a.SetCluster(&embedded.ClusterView{Self: 0, Nodes: nodes, View: 1, Primary: primary})
	b.SetCluster(&embedded.ClusterView{Self: 1, Nodes: nodes, View: 1, Primary: primary})

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ref := iggy.TopicRef{Stream: "kafka", Topic: topic}
	direct := func(addr string) *iggy.Client {
		cfg := iggy.DefaultConfig()
		cfg.Address, cfg.Protocol, cfg.PoolSize = addr, "0.12", 1
		cfg.FollowLeader, cfg.RoutePartitions = false, false
		c, err := iggy.New(cfg, zerolog.New(io.Discard))
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	da, db := direct(a.Addr().String()), direct(b.Addr().String())
	for _, d := range []*iggy.Client{da, db} { // the metadata a real cluster replicates
		if _, err := d.CreateStream(ctx, ref.Stream); err != nil {
			t.Fatal(err)
		}
		if _, err := d.CreateTopic(ctx, ref, 2, nil); err != nil {
			t.Fatal(err)
		}
	}

	s := startStack(t, func(o *stackOpts) {
		o.shared = a
		o.client.Protocol = "0.12"
		o.client.FollowLeader, o.client.RoutePartitions = true, true
	})
	pr := s.kgoClient(t, kgo.DisableIdempotentWrite(), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.DefaultProduceTopic(topic))
	var want [2][]string
	for i := range 6 {
		p := int32(i % 2)
		v := []string{"a0", "b1", "a2", "b3", "a4", "b5"}[i]
		if err := pr.ProduceSync(ctx, &kgo.Record{Partition: p, Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatalf("produce %s to partition %d: %v", v, p, err)
		}
		want[p] = append(want[p], v)
	}
	if got := payloads(iggyMessages(t, db, ref, 1)); !slices.Equal(got, want[1]) {
		t.Fatalf("partition 1 on b, its primary: %q, want %q", got, want[1])
	}
	if got := payloads(iggyMessages(t, da, ref, 0)); !slices.Equal(got, want[0]) {
		t.Fatalf("partition 0 on a, its primary: %q, want %q", got, want[0])
	}
	if n := messagesOnNode(ctx, t, da, ref, 1); n != 0 {
		t.Fatalf("partition 1 on a: %d messages, want none (b is its primary)", n)
	}

	co := s.kgoClient(t, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart(), 1: kgo.NewOffset().AtStart()}}))
	var got [2][]string
	for len(got[0])+len(got[1]) < 6 {
		fs := co.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %q before the deadline: %v", got, fs.Errors())
		}
		fs.EachRecord(func(r *kgo.Record) { got[r.Partition] = append(got[r.Partition], string(r.Value)) })
	}
	if !slices.Equal(got[0], want[0]) || !slices.Equal(got[1], want[1]) {
		t.Fatalf("consumed %q, want %q", got, want)
	}
	if peers := s.Client.PeerNodes(); !slices.Equal(peers, []string{b.Addr().String()}) {
		t.Fatalf("the sidecar's peer pools: %v, want only b", peers)
	}
}

func payloads(ms []icodec.Message) []string {
	out := make([]string, 0, len(ms))
	for _, m := range ms {
		out = append(out, string(m.Payload))
	}
	return out
}

// messagesOnNode is partition's message count on c's node (GET_TOPIC).
func messagesOnNode(ctx context.Context, t *testing.T, c *iggy.Client, ref iggy.TopicRef, partition uint32) uint64 {
	t.Helper()
	var d icodec.TopicDetails // fresh from the node, not the client's cache
	if err := c.Do(ctx, &icodec.GetTopicRequest{StreamID: ref.StreamID(), TopicID: ref.TopicID()}, &d); err != nil {
		t.Fatal(err)
	}
	for _, p := range d.Partitions {
		if p.ID == partition {
			return p.MessagesCount
		}
	}
	t.Fatalf("no partition %d", partition)
	return 0
}
