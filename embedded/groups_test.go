package embedded

import (
	"slices"
	"testing"
	"time"

	"github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

// eventually waits (bounded) for cond, which observes state the server
// changes asynchronously (a disconnect, a timer).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

type groupRef struct{ stream, topic, group iggy.Identifier }

func (c *tclient) sync(g groupRef) (uint64, []uint32, bool) {
	c.t.Helper()
	body := c.ok(c.call(iggy.CodeSyncConsumerGroup, &iggy.SyncConsumerGroupRequest{StreamID: g.stream, TopicID: g.topic, GroupID: g.group}))
	if len(body) == 0 {
		return 0, nil, false
	}
	var resp iggy.SyncConsumerGroupResponse
	if _, err := resp.DecodeFrom(body); err != nil {
		c.t.Fatal(err)
	}
	return resp.Generation, resp.Partitions, true
}

func (c *tclient) join(g groupRef) {
	c.t.Helper()
	c.ok(c.meta(iggy.OperationJoinConsumerGroup, &iggy.JoinConsumerGroupRequest{StreamID: g.stream, TopicID: g.topic, GroupID: g.group}))
}

func (c *tclient) groupPoll(g groupRef, partition *uint32, count uint32, auto bool) polled {
	c.t.Helper()
	return c.poll(pollReq(iggy.Consumer{Kind: iggy.ConsumerKindConsumerGroup, ID: g.group}, g.stream, g.topic, partition, iggy.PollingKindNext, 0, count, auto))
}

func (c *tclient) groupStore(g groupRef, partition uint32, offset uint64) reply {
	c.t.Helper()
	return c.meta(iggy.OperationStoreConsumerOffset, &iggy.StoreConsumerOffsetRequest{
		Consumer: iggy.Consumer{Kind: iggy.ConsumerKindConsumerGroup, ID: g.group}, StreamID: g.stream, TopicID: g.topic,
		PartitionID: iggy.OptionalPartition{Present: true, PartitionID: partition}, Offset: offset, Ack: iggy.AckLevelQuorum})
}

func groupFixture(t *testing.T, s *Server, partitions uint32) (*tclient, groupRef) {
	c := root(t, s)
	c.createStream("s")
	c.createTopic(numID(0), "t", partitions, nil)
	for p := range partitions {
		c.send(numID(0), numID(0), p, "a", "b", "c")
	}
	c.ok(c.meta(iggy.OperationCreateConsumerGroup, &iggy.CreateConsumerGroupRequest{StreamID: numID(0), TopicID: numID(0), Name: "g"}))
	return c, groupRef{numID(0), numID(0), nameID("g")}
}

// TestConsumerGroupAssignment checks §7.4: join, balance, generations,
// ownership on poll and commit, leave and disconnect.
func TestConsumerGroupAssignment(t *testing.T) {
	s := startServer(t, nil)
	admin, g := groupFixture(t, s, 4)
	a, b := root(t, s), root(t, s)

	a.join(g)
	a.join(g) // idempotent
	gen1, parts, ok := a.sync(g)
	if !ok || !slices.Equal(parts, []uint32{0, 1, 2, 3}) {
		t.Fatalf("a alone: %v %v", parts, ok)
	}
	if _, _, ok := b.sync(g); ok {
		t.Fatal("non-member got an assignment")
	}
	b.join(g)
	gen2, pa, _ := a.sync(g)
	_, pb, _ := b.sync(g)
	if gen2 <= gen1 || len(pa) != 2 || len(pb) != 2 || slices.ContainsFunc(pa, func(p uint32) bool { return slices.Contains(pb, p) }) {
		t.Fatalf("balanced: gen %d→%d a %v b %v", gen1, gen2, pa, pb)
	}

	// Polling: own partition served, foreign partition → re-sync sentinel,
	// no partition → empty poll for partition 0.
	if p := a.groupPoll(g, &pa[0], 10, false); p.partition != pa[0] || len(p.offsets) != 3 {
		t.Fatalf("own partition poll %+v", p)
	}
	if p := a.groupPoll(g, &pb[0], 10, false); p.partition != iggy.LimitPollResyncPartitionID || p.count != 0 {
		t.Fatalf("foreign partition poll %+v", p)
	}
	if p := a.groupPoll(g, nil, 10, false); p.partition != 0 || p.count != 0 {
		t.Fatalf("group poll without partition %+v", p)
	}
	unknown := groupRef{g.stream, g.topic, nameID("nope")}
	if p := a.groupPoll(unknown, &pa[0], 10, false); p.partition != iggy.LimitPollResyncPartitionID {
		t.Fatalf("unknown group poll %+v", p)
	}
	// Committing: own partition fine, foreign one 20; anybody reads.
	a.ok(a.groupStore(g, pa[0], 1))
	if r := a.groupStore(g, pb[0], 1); r.status() != iggy.StatusResourceNotFound {
		t.Fatalf("commit on a foreign partition: status %d", r.status())
	}
	gco := admin.ok(admin.call(iggy.CodeGetConsumerOffset, &iggy.GetConsumerOffsetRequest{Consumer: iggy.Consumer{Kind: iggy.ConsumerKindConsumerGroup, ID: g.group},
		StreamID: g.stream, TopicID: g.topic, PartitionID: iggy.OptionalPartition{Present: true, PartitionID: pa[0]}}))
	var off iggy.GetConsumerOffsetResponse
	if _, err := off.DecodeFrom(gco); err != nil || off.StoredOffset != 1 {
		t.Fatalf("group offset %+v %v", off, err)
	}
	// Next for the group resumes at stored + 1.
	if p := a.groupPoll(g, &pa[0], 10, true); !slices.Equal(p.offsets, []uint64{2}) {
		t.Fatalf("group next %v", p.offsets)
	}

	// GET_ME lists the membership; GET_CONSUMER_GROUP lists both members.
	var me iggy.ClientDetails
	if _, err := me.DecodeFrom(a.ok(a.call(iggy.CodeGetMe, nil))); err != nil || me.ConsumerGroupsCount != 1 {
		t.Fatalf("get_me %+v %v", me, err)
	}
	var d iggy.ConsumerGroupDetails
	if _, err := d.DecodeFrom(admin.ok(admin.call(iggy.CodeGetConsumerGroup, &iggy.GetConsumerGroupRequest{StreamID: g.stream, TopicID: g.topic, GroupID: g.group}))); err != nil ||
		d.MembersCount != 2 || d.Members[0].MemberID != 0 || d.Members[1].MemberID != 1 {
		t.Fatalf("group details %+v %v", d, err)
	}

	// Leave: the rest is redistributed round-robin.
	b.ok(b.meta(iggy.OperationLeaveConsumerGroup, &iggy.LeaveConsumerGroupRequest{StreamID: g.stream, TopicID: g.topic, GroupID: g.group}))
	if _, parts, _ := a.sync(g); !slices.Equal(parts, []uint32{0, 1, 2, 3}) {
		t.Fatalf("after leave %v", parts)
	}
	// Disconnect drops the member.
	b.join(g)
	genBefore, _, _ := a.sync(g)
	conns := s.ConnCount()
	_ = b.nc.Close()
	eventually(t, "the disconnected member to be dropped", func() bool { return s.ConnCount() == conns-1 })
	if gen, parts, _ := a.sync(g); gen <= genBefore || !slices.Equal(parts, []uint32{0, 1, 2, 3}) {
		t.Fatalf("after disconnect gen %d parts %v", gen, parts)
	}
	// Adding partitions rebalances too.
	admin.ok(admin.meta(iggy.OperationCreatePartitions, &iggy.CreatePartitionsRequest{StreamID: g.stream, TopicID: g.topic, PartitionsCount: 1}))
	if _, parts, _ := a.sync(g); len(parts) != 5 {
		t.Fatalf("after create_partitions %v", parts)
	}
}

// TestPendingRevocation: a partition with polled-but-uncommitted messages
// moves only once its old owner commits (or after the rebalance timeout).
func TestPendingRevocation(t *testing.T) {
	for _, viaTimeout := range []bool{false, true} {
		name := "commit"
		if viaTimeout {
			name = "timeout"
		}
		t.Run(name, func(t *testing.T) {
			s := startServer(t, func(c *Config) {
				c.HeartbeatInterval = 2 * time.Second
				if viaTimeout {
					c.RebalanceTimeout = 10 * time.Millisecond
				}
			})
			_, g := groupFixture(t, s, 2)
			a, b := root(t, s), root(t, s)
			a.join(g)
			if p := a.groupPoll(g, ptr(uint32(1)), 10, false); len(p.offsets) != 3 {
				t.Fatalf("poll %+v", p)
			}
			b.join(g)
			_, pa, _ := a.sync(g)
			_, pb, _ := b.sync(g)
			if !slices.Equal(pa, []uint32{0}) || len(pb) != 0 {
				t.Fatalf("during revocation a %v b %v", pa, pb)
			}
			// The old owner may still commit but no longer poll it.
			if p := a.groupPoll(g, ptr(uint32(1)), 10, false); p.partition != iggy.LimitPollResyncPartitionID {
				t.Fatalf("poll of a revoked partition %+v", p)
			}
			if viaTimeout {
				eventually(t, "the revocation timeout", func() bool { _, pb, _ := b.sync(g); return slices.Equal(pb, []uint32{1}) })
				return
			}
			a.ok(a.groupStore(g, 1, 1))
			if _, pb, _ := b.sync(g); len(pb) != 0 {
				t.Fatalf("moved before the owner caught up: %v", pb)
			}
			a.ok(a.groupStore(g, 1, 2))
			if _, pb, _ := b.sync(g); !slices.Equal(pb, []uint32{1}) {
				t.Fatalf("after the commit b %v", pb)
			}
			if r := a.groupStore(g, 1, 2); r.status() != iggy.StatusResourceNotFound {
				t.Fatalf("commit after the move: status %d", r.status())
			}
		})
	}
}

// TestStaleClient: a silent group member gets an unsolicited
// Eviction(StaleClient) and loses its membership; the connection stays.
func TestStaleClient(t *testing.T) {
	s := startServer(t, func(c *Config) { c.HeartbeatInterval = 100 * time.Millisecond })
	admin, g := groupFixture(t, s, 2)
	m := root(t, s)
	m.join(g)
	r, err := m.tryRecv(5 * time.Second)
	if err != nil || r.evicted == nil || r.evicted.Reason != iggy.EvictionReasonStaleClient || r.evicted.Client != m.client {
		t.Fatalf("want an unsolicited StaleClient eviction, got %+v %v", r.evicted, err)
	}
	var d iggy.ConsumerGroupDetails
	if _, err := d.DecodeFrom(admin.ok(admin.call(iggy.CodeGetConsumerGroup, &iggy.GetConsumerGroupRequest{StreamID: g.stream, TopicID: g.topic, GroupID: g.group}))); err != nil || d.MembersCount != 0 {
		t.Fatalf("evicted member still listed: %+v %v", d, err)
	}
	if n := s.ConnCount(); n != 2 { // admin (not a member: never evicted) and m
		t.Fatalf("ConnCount %d", n)
	}
	// The session is gone.
	m.writeRaw(frame(ptr(m.header(iggy.OperationJoinConsumerGroup, m.next)), encode(&iggy.JoinConsumerGroupRequest{StreamID: g.stream, TopicID: g.topic, GroupID: g.group})))
	expect{ch: chEviction, reason: iggy.EvictionReasonNoSession}.check(t, m)
}

// TestExternalGroups checks consumer kind 3 behind Config.ExternalGroups:
// no range check, no fence, no polling, no pinning, deleted with the group.
func TestExternalGroups(t *testing.T) {
	s := startServer(t, func(c *Config) { c.ExternalGroups = true })
	c := root(t, s)
	c.createStream("s")
	c.createTopic(numID(0), "t", 1, iggy.Options{opt("segment_size", iggy.HeaderKindUint64, u64(1<<20))})
	ext := iggy.Consumer{Kind: iggy.ConsumerKindExternalGroup, ID: nameID("kafka.cg.x")}
	part0 := iggy.OptionalPartition{Present: true}
	store := func(consumer iggy.Consumer, offset uint64) reply {
		return c.meta(iggy.OperationStoreConsumerOffset, &iggy.StoreConsumerOffsetRequest{Consumer: consumer, StreamID: numID(0), TopicID: numID(0), PartitionID: part0, Offset: offset, Ack: iggy.AckLevelQuorum})
	}
	get := func(consumer iggy.Consumer) []byte {
		return c.ok(c.call(iggy.CodeGetConsumerOffset, &iggy.GetConsumerOffsetRequest{Consumer: consumer, StreamID: numID(0), TopicID: numID(0), PartitionID: part0}))
	}
	c.ok(store(ext, 1000)) // empty partition, beyond current: accepted
	var off iggy.GetConsumerOffsetResponse
	if _, err := off.DecodeFrom(get(ext)); err != nil || off.StoredOffset != 1000 {
		t.Fatalf("external offset %+v %v", off, err)
	}
	// Separate from a single consumer with the same name.
	if body := get(iggy.Consumer{Kind: iggy.ConsumerKindConsumer, ID: nameID("kafka.cg.x")}); len(body) != 0 {
		t.Fatalf("kind 1 sees the external offset: %x", body)
	}
	if r := c.call(iggy.CodePollMessages, pollReq(ext, numID(0), numID(0), ptr(uint32(0)), iggy.PollingKindNext, 0, 1, false)); r.status() != iggy.StatusInvalidCommand {
		t.Fatalf("external group poll: status %d", r.status())
	}

	// Not pinning: with only an external offset at 0 old segments go.
	big := string(make([]byte, 600<<10))
	for range 3 {
		c.send(numID(0), numID(0), 0, big)
	}
	c.ok(store(ext, 0))
	if r := c.meta(iggy.OperationDeleteSegments, &iggy.DeleteSegmentsRequest{StreamID: numID(0), TopicID: numID(0), SegmentsCount: 1}); r.hdr.Operation != iggy.OperationTruncatePartition {
		t.Fatalf("external offset pinned the segment (reply operation %d)", r.hdr.Operation)
	}
	// A single consumer's offset does pin.
	c.send(numID(0), numID(0), 0, big, big)
	c.ok(store(single(1), 2))
	segments := func() uint32 {
		td, _ := c.getTopic(numID(0), numID(0))
		return td.Partitions[0].SegmentsCount
	}
	// Acknowledged as the real server does (op 68, success), kept back by
	// the consumer barrier...
	if r := c.meta(iggy.OperationDeleteSegments, &iggy.DeleteSegmentsRequest{StreamID: numID(0), TopicID: numID(0), SegmentsCount: 1}); r.hdr.Operation != iggy.OperationTruncatePartition {
		t.Fatalf("reply operation %d", r.hdr.Operation)
	} else {
		c.ok(r)
	}
	if n := segments(); n != 2 { // sealed [2..4] (the second send was one batch), active empty
		t.Fatalf("pinned segment deleted: %d segments", n)
	}
	// ...and deleted once the offset reaches its end.
	c.ok(store(single(1), 3))
	if n := segments(); n != 2 {
		t.Fatalf("segment deleted below its end: %d segments", n)
	}
	c.ok(store(single(1), 4))
	if n := segments(); n != 1 {
		t.Fatalf("released segment kept: %d segments", n)
	}

	// Deleted with the consumer group of the same name.
	c.ok(c.meta(iggy.OperationCreateConsumerGroup, &iggy.CreateConsumerGroupRequest{StreamID: numID(0), TopicID: numID(0), Name: "kafka.cg.x"}))
	c.ok(c.meta(iggy.OperationDeleteConsumerGroup, &iggy.DeleteConsumerGroupRequest{StreamID: numID(0), TopicID: numID(0), GroupID: nameID("kafka.cg.x")}))
	if body := get(ext); len(body) != 0 {
		t.Fatalf("external offset survived its group: %x", body)
	}
}
