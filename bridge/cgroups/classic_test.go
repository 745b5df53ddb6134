package cgroups

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafka-iggy/kafka-iggy/bridge/groups"
)

// The online migration between the protocols (classic.go), against the
// real classic coordinator of bridge/groups.

var migTopics = map[string]int32{"t": 4}

func tp(p int32) TP { return TP{Topic: "t", Partition: p} }

// classicProtocols is a consumer's JoinGroup protocols: cooperative-sticky
// with ConsumerProtocol subscription v1 (topics and owned partitions).
func classicProtocols(owned []TP) []groups.Protocol {
	md := kmsg.NewConsumerMemberMetadata()
	md.Version = 1
	md.Topics = []string{"t"}
	for _, x := range owned {
		if n := len(md.OwnedPartitions); n == 0 || md.OwnedPartitions[n-1].Topic != x.Topic {
			o := kmsg.NewConsumerMemberMetadataOwnedPartition()
			o.Topic = x.Topic
			md.OwnedPartitions = append(md.OwnedPartitions, o)
		}
		o := &md.OwnedPartitions[len(md.OwnedPartitions)-1]
		o.Partitions = append(o.Partitions, x.Partition)
	}
	return []groups.Protocol{{Name: "cooperative-sticky", Metadata: md.AppendTo(nil)}}
}

func decodeAssignment(t *testing.T, b []byte) []TP {
	t.Helper()
	var a kmsg.ConsumerMemberAssignment
	if err := a.ReadFrom(b); err != nil {
		t.Fatalf("assignment does not decode: %v", err)
	}
	var out []TP
	for _, x := range a.Topics {
		for _, p := range x.Partitions {
			out = append(out, TP{Topic: x.Topic, Partition: p})
		}
	}
	slices.SortFunc(out, func(a, b TP) int { return int(a.Partition - b.Partition) })
	return out
}

func joinParams(id string, owned []TP) groups.JoinParams {
	return groups.JoinParams{Group: "g", MemberID: id, ClientID: "cl", SessionTimeout: 30 * time.Second, RebalanceTimeout: time.Minute,
		ProtocolType: groups.ConsumerProtocolType, Protocols: classicProtocols(owned)}
}

// migration is a classic coordinator, a consumer-protocol coordinator
// migrating between them, and the service the classic APIs call.
type migration struct {
	g   *groups.Coordinator
	c   *Coordinator
	clk *fakeClock
	svc Mixed
}

func newMigration() *migration {
	cfg := groups.DefaultConfig()
	cfg.InitialRebalanceDelay = time.Millisecond
	g := groups.New(cfg, zerolog.Nop(), nil)
	c, clk := newTestCoordinator()
	c.SetClassic(g)
	return &migration{g: g, c: c, clk: clk, svc: Mixed{Coordinator: g, C: c}}
}

// stableClassicGroup makes the classic group "g" Stable with two members,
// a owning t-0 and t-1, b owning t-2 and t-3; it returns their ids and the
// generation.
func (mi *migration) stableClassicGroup(t *testing.T) (a, b string, gen int32) {
	t.Helper()
	ctx := context.Background()
	ra := mi.svc.Join(ctx, joinParams("", nil))
	if ra.Code != 0 {
		t.Fatalf("first join: code %d", ra.Code)
	}
	a = ra.MemberID
	if r := mi.svc.Sync(ctx, groups.SyncParams{Group: "g", MemberID: a, Generation: ra.Generation,
		Assignments: map[string][]byte{a: encodeAssignment(setOf([]TP{tp(0), tp(1), tp(2), tp(3)}), nil)}}); r.Code != 0 {
		t.Fatalf("first sync: code %d", r.Code)
	}
	var wg sync.WaitGroup
	var rb, ra2 groups.JoinResult
	wg.Go(func() { rb = mi.svc.Join(ctx, joinParams("", nil)) })
	for mi.svc.Heartbeat(ctx, "g", a, nil, ra.Generation) != kerr.RebalanceInProgress.Code {
		time.Sleep(time.Millisecond) // polling the outcome: b's join started the rebalance
	}
	wg.Go(func() { ra2 = mi.svc.Join(ctx, joinParams(a, []TP{tp(0), tp(1), tp(2), tp(3)})) })
	wg.Wait()
	if ra2.Code != 0 || rb.Code != 0 || ra2.Generation != rb.Generation {
		t.Fatalf("second join phase: codes %d %d generations %d %d", ra2.Code, rb.Code, ra2.Generation, rb.Generation)
	}
	b, gen = rb.MemberID, rb.Generation
	leader, follower := a, b
	if rb.Leader == b {
		leader, follower = b, a
	}
	as := map[string][]byte{a: encodeAssignment(setOf([]TP{tp(0), tp(1)}), nil), b: encodeAssignment(setOf([]TP{tp(2), tp(3)}), nil)}
	for _, p := range []groups.SyncParams{{Group: "g", MemberID: leader, Generation: gen, Assignments: as}, {Group: "g", MemberID: follower, Generation: gen}} {
		if r := mi.svc.Sync(ctx, p); r.Code != 0 {
			t.Fatalf("sync of %s: code %d", p.MemberID, r.Code)
		}
	}
	return a, b, gen
}

// classicClient follows a classic member through joins and syncs.
type classicClient struct {
	id    string
	gen   int32
	owned []TP
}

// rejoin joins with what it owns and syncs; it returns the assignment.
func (cl *classicClient) rejoin(t *testing.T, mi *migration) {
	t.Helper()
	ctx := context.Background()
	r := mi.svc.Join(ctx, joinParams(cl.id, cl.owned))
	if r.Code != 0 || r.Leader != "" || len(r.Members) != 0 || r.Protocol != "cooperative-sticky" {
		t.Fatalf("%s: join in the consumer group: %+v", cl.id, r)
	}
	cl.id, cl.gen = r.MemberID, r.Generation
	s := mi.svc.Sync(ctx, groups.SyncParams{Group: "g", MemberID: cl.id, Generation: cl.gen})
	if s.Code != 0 {
		t.Fatalf("%s: sync in the consumer group: code %d", cl.id, s.Code)
	}
	cl.owned = decodeAssignment(t, s.Assignment)
}

func (cl *classicClient) heartbeat(mi *migration) int16 {
	return mi.svc.Heartbeat(context.Background(), "g", cl.id, nil, cl.gen)
}

func TestOnlineUpgradeAndDowngrade(t *testing.T) {
	mi := newMigration()
	a, b, gen := mi.stableClassicGroup(t)

	// A consumer-protocol member joins the live classic group: it becomes a
	// consumer group holding the classic members and their partitions.
	c := &client{id: "c"}
	c.join(t, mi.c, migTopics, []string{"t"}, "")
	if mi.g.Has("g") {
		t.Fatal("the classic coordinator still holds the upgraded group")
	}
	d, ok := mi.c.Describe("g")
	if !ok || len(d.Members) != 3 {
		t.Fatalf("upgraded group: %+v", d)
	}
	for _, m := range d.Members {
		want := map[string][]TP{a: {tp(0), tp(1)}, b: {tp(2), tp(3)}, "c": nil}[m.MemberID]
		if m.Classic != (m.MemberID != "c") || !slices.Equal(m.Assignment, want) {
			t.Fatalf("member %s: classic %v assignment %v, want %v", m.MemberID, m.Classic, m.Assignment, want)
		}
	}
	if len(c.owned) != 0 {
		t.Fatalf("c got %v before any classic member gave a partition up", c.owned)
	}

	// The classic members are told to rejoin; their join is answered at
	// once, the sync hands them their part, and a partition reaches c only
	// after its classic owner rejoined without it.
	ca, cb := &classicClient{id: a, gen: gen, owned: []TP{tp(0), tp(1)}}, &classicClient{id: b, gen: gen, owned: []TP{tp(2), tp(3)}}
	if code := ca.heartbeat(mi); code != kerr.RebalanceInProgress.Code {
		t.Fatalf("a's heartbeat after the upgrade: code %d, want REBALANCE_IN_PROGRESS", code)
	}
	if code := mi.c.ValidateCommitCode(a, gen); code != 0 {
		t.Fatalf("a's commit at its generation: code %d", code)
	}
	for round := 0; round < 6; round++ {
		for _, cl := range []*classicClient{ca, cb} {
			if code := cl.heartbeat(mi); code == kerr.RebalanceInProgress.Code {
				cl.rejoin(t, mi)
			} else if code != 0 {
				t.Fatalf("%s: heartbeat code %d", cl.id, code)
			}
		}
		c.beat(t, mi.c, migTopics)
		all := slices.Concat(ca.owned, cb.owned, c.owned)
		slices.SortFunc(all, func(a, b TP) int { return int(a.Partition - b.Partition) })
		if len(slices.Compact(slices.Clone(all))) != len(all) {
			t.Fatalf("a partition with two owners: a %v b %v c %v", ca.owned, cb.owned, c.owned)
		}
	}
	if len(ca.owned)+len(cb.owned)+len(c.owned) != 4 || len(c.owned) != 1 || ca.heartbeat(mi) != 0 || cb.heartbeat(mi) != 0 {
		t.Fatalf("after reconciliation: a %v b %v c %v", ca.owned, cb.owned, c.owned)
	}
	if code := mi.c.ValidateCommitCode(a, gen); code != kerr.IllegalGeneration.Code {
		t.Fatalf("a's commit at its old generation: code %d, want ILLEGAL_GENERATION", code)
	}

	// The persisted state keeps the classic members (an owner move).
	snap, _ := mi.c.Snapshot("g")
	moved, _ := newTestCoordinator()
	if err := moved.Restore("g", snap); err != nil {
		t.Fatal(err)
	}
	if r, held := moved.ClassicSync(groups.SyncParams{Group: "g", MemberID: ca.id, Generation: ca.gen}, nil); !held || r.Code != 0 ||
		!slices.Equal(decodeAssignment(t, r.Assignment), ca.owned) {
		t.Fatalf("sync at the next owner: held %v %+v", held, r)
	}

	// The last consumer-protocol member leaves: a classic group again, at
	// the group epoch, rebalancing.
	if r := mi.c.Heartbeat(HeartbeatParams{Group: "g", MemberID: "c", MemberEpoch: leaveEpoch, RebalanceTimeout: -1}, migTopics); r.Code != 0 {
		t.Fatalf("c's leave: code %d", r.Code)
	}
	if mi.c.Has("g") || !mi.g.Has("g") {
		t.Fatal("the group was not handed back to the classic coordinator")
	}
	if code := ca.heartbeat(mi); code != kerr.RebalanceInProgress.Code {
		t.Fatalf("a's heartbeat after the downgrade: code %d, want REBALANCE_IN_PROGRESS", code)
	}
	ctx := context.Background()
	var wg sync.WaitGroup
	var ja, jb groups.JoinResult
	wg.Go(func() { ja = mi.svc.Join(ctx, joinParams(ca.id, ca.owned)) })
	wg.Go(func() { jb = mi.svc.Join(ctx, joinParams(cb.id, cb.owned)) })
	wg.Wait()
	if ja.Code != 0 || jb.Code != 0 || ja.Generation <= ca.gen || (ja.Leader != ca.id && ja.Leader != cb.id) {
		t.Fatalf("classic join phase after the downgrade: %+v %+v", ja, jb)
	}
	if leader := map[string]groups.JoinResult{ca.id: ja, cb.id: jb}[ja.Leader]; len(leader.Members) != 2 {
		t.Fatalf("the classic leader got %d members, want 2", len(leader.Members))
	}
}

func TestClassicJoinIntoConsumerGroup(t *testing.T) {
	mi := newMigration()
	c := &client{id: "c"}
	c.join(t, mi.c, migTopics, []string{"t"}, "")
	settle(t, mi.c, migTopics, []*client{c})
	ctx := context.Background()

	p := joinParams("", nil)
	p.RequireKnownID = true
	r := mi.svc.Join(ctx, p)
	if r.Code != kerr.MemberIDRequired.Code || r.MemberID == "" {
		t.Fatalf("new classic member without id: %+v, want MEMBER_ID_REQUIRED", r)
	}
	wrong := joinParams(r.MemberID, nil)
	wrong.ProtocolType = "connect"
	if r := mi.svc.Join(ctx, wrong); r.Code != kerr.InconsistentGroupProtocol.Code {
		t.Fatalf("join of another protocol type: code %d, want INCONSISTENT_GROUP_PROTOCOL", r.Code)
	}
	d := &classicClient{id: r.MemberID}
	d.rejoin(t, mi)
	if len(d.owned) != 0 {
		t.Fatalf("d got %v while c still owns every partition", d.owned)
	}
	for round := 0; round < 4 && len(d.owned) == 0; round++ {
		c.beat(t, mi.c, migTopics)
		if d.heartbeat(mi) == kerr.RebalanceInProgress.Code {
			d.rejoin(t, mi)
		}
	}
	if len(d.owned) != 2 || len(c.owned) != 2 {
		t.Fatalf("after reconciliation: c %v d %v, want two each", c.owned, d.owned)
	}
	if r, _ := mi.c.ClassicSync(groups.SyncParams{Group: "g", MemberID: d.id, Generation: d.gen - 1}, nil); r.Code != kerr.IllegalGeneration.Code {
		t.Fatalf("sync at another generation: code %d, want ILLEGAL_GENERATION", r.Code)
	}
	if code := mi.svc.Heartbeat(ctx, "g", "c", nil, c.epoch); code != kerr.UnknownMemberID.Code {
		t.Fatalf("classic heartbeat of a consumer-protocol member: code %d, want UNKNOWN_MEMBER_ID", code)
	}
	// d leaves with LeaveGroup; c is alone and consumer: no downgrade.
	if top, codes := mi.svc.Leave(ctx, "g", []groups.LeaveIdentity{{MemberID: d.id}}); top != 0 || codes[0] != 0 {
		t.Fatalf("leave: %d %v", top, codes)
	}
	settle(t, mi.c, migTopics, []*client{c})
	if len(c.owned) != 4 || mi.g.Has("g") {
		t.Fatalf("after d left: c owns %v, classic holds the group %v", c.owned, mi.g.Has("g"))
	}
}

func TestUpgradeRefusedForOtherProtocolTypes(t *testing.T) {
	mi := newMigration()
	p := joinParams("", nil)
	p.ProtocolType = "connect"
	if r := mi.svc.Join(context.Background(), p); r.Code != 0 {
		t.Fatalf("connect join: code %d", r.Code)
	}
	r := mi.c.Heartbeat(HeartbeatParams{Group: "g", MemberID: "c", RebalanceTimeout: time.Minute, SubscribedTopics: []string{"t"},
		OwnedSet: true, Owned: []TP{}, NeedMemberID: true}, migTopics)
	if r.Code != kerr.GroupIDNotFound.Code || !mi.g.Has("g") || mi.c.Has("g") {
		t.Fatalf("consumer-protocol join of a connect group: code %d, want GROUP_ID_NOT_FOUND and the classic group kept", r.Code)
	}
}

// ValidateCommitCode is ValidateCommit of group "g" for a classic member
// (OffsetCommit v8).
func (c *Coordinator) ValidateCommitCode(memberID string, gen int32) int16 {
	code, _ := c.ValidateCommit("g", memberID, gen, 8)
	return code
}

func TestClassicMemberJoinAndSyncTimeouts(t *testing.T) {
	mi := newMigration()
	c := &client{id: "c"}
	c.join(t, mi.c, migTopics, []string{"t"}, "")
	d := &classicClient{id: "d"}
	d.rejoin(t, mi) // rebalance timeout one minute
	e := &client{id: "e"}
	e.join(t, mi.c, migTopics, []string{"t"}, "")
	if code := d.heartbeat(mi); code != kerr.RebalanceInProgress.Code {
		t.Fatalf("d's heartbeat after e joined: code %d, want REBALANCE_IN_PROGRESS", code)
	}
	// d keeps heartbeating but never rejoins: removed after its rebalance
	// timeout, as Kafka's join timeout removes it.
	for _, step := range []time.Duration{20 * time.Second, 20 * time.Second, 21 * time.Second} {
		mi.clk.t = mi.clk.t.Add(step)
		c.beat(t, mi.c, migTopics)
		e.beat(t, mi.c, migTopics)
		d.heartbeat(mi)
	}
	if hasMember(mi.c, "d") {
		t.Fatal("d is still a member after its join timeout")
	}
	e.beat(t, mi.c, migTopics)

	// f (session timeout two minutes) joins but never syncs: removed after
	// its rebalance timeout.
	p := joinParams("f", nil)
	p.SessionTimeout = 2 * time.Minute
	r := mi.svc.Join(context.Background(), p)
	if r.Code != 0 || !hasMember(mi.c, "f") {
		t.Fatalf("f's join: %+v", r)
	}
	mi.clk.t = mi.clk.t.Add(40 * time.Second)
	c.beat(t, mi.c, migTopics)
	if !hasMember(mi.c, "f") {
		t.Fatal("f was removed before its sync timeout")
	}
	mi.clk.t = mi.clk.t.Add(21 * time.Second)
	c.beatRaw(mi.c, migTopics)
	if hasMember(mi.c, "f") {
		t.Fatal("f is still a member after its sync timeout")
	}
}

// A classic JoinGroup and Heartbeat racing a consumer-protocol member's
// upgrade of the live classic group: the check "does a consumer group hold
// the id" and the classic coordinator's call are one step (Mixed), so the
// id never ends up held by both coordinators (a new classic group created
// beside the upgraded one) and a classic member of the upgraded group is
// never told UNKNOWN_MEMBER_ID by the classic coordinator that just gave
// the group away. Run under -race.
func TestMixedClassicCallsRacingUpgrade(t *testing.T) {
	mi := newMigration()
	ctx := context.Background()
	for i := range 300 {
		id := fmt.Sprintf("race-%d", i)
		p := joinParams("", nil)
		p.Group = id
		ra := mi.svc.Join(ctx, p)
		if ra.Code != 0 {
			t.Fatalf("%s: first join: code %d", id, ra.Code)
		}
		a := ra.MemberID
		if r := mi.svc.Sync(ctx, groups.SyncParams{Group: id, MemberID: a, Generation: ra.Generation,
			Assignments: map[string][]byte{a: encodeAssignment(setOf([]TP{tp(0), tp(1), tp(2), tp(3)}), nil)}}); r.Code != 0 {
			t.Fatalf("%s: first sync: code %d", id, r.Code)
		}
		var wg sync.WaitGroup
		var joined groups.JoinResult
		var beat int16
		wg.Go(func() { joined = mi.svc.Join(ctx, p) })
		wg.Go(func() { beat = mi.svc.Heartbeat(ctx, id, a, nil, ra.Generation) })
		wg.Go(func() {
			r := mi.c.Heartbeat(HeartbeatParams{Group: id, MemberID: "c", RebalanceTimeout: time.Minute, SubscribedTopics: []string{"t"},
				OwnedSet: true, Owned: []TP{}, NeedMemberID: true}, migTopics)
			if r.Code != 0 {
				t.Errorf("%s: consumer-protocol join: code %d", id, r.Code)
			}
		})
		wg.Wait()
		if mi.g.Has(id) && mi.c.Has(id) {
			t.Fatalf("%s: both coordinators hold the group (new classic member: %+v)", id, joined)
		}
		if beat != 0 && beat != kerr.RebalanceInProgress.Code {
			t.Fatalf("%s: the classic member's heartbeat during the upgrade: code %d", id, beat)
		}
		if joined.Code != 0 && joined.Code != kerr.RebalanceInProgress.Code {
			t.Fatalf("%s: the new classic member's join during the upgrade: %+v", id, joined)
		}
	}
}

// One heartbeat is one new group epoch however many things it changes (a
// new member, its subscription, topics new to the group), as Kafka bumps
// it: the first member of a new group is at epoch 1, the second at 2, and
// a consumer-protocol member upgrading a classic group of generation G
// makes it G+1.
func TestOneEpochPerHeartbeat(t *testing.T) {
	c, _ := newTestCoordinator()
	for i, id := range []string{"a", "b"} {
		(&client{id: id}).join(t, c, migTopics, []string{"t"}, "")
		if d, _ := c.Describe("g"); d.Epoch != int32(i+1) {
			t.Fatalf("after %s joined: group epoch %d, want %d", id, d.Epoch, i+1)
		}
	}
	mi := newMigration()
	_, _, gen := mi.stableClassicGroup(t)
	(&client{id: "c"}).join(t, mi.c, migTopics, []string{"t"}, "")
	if d, _ := mi.c.Describe("g"); d.Epoch != gen+1 {
		t.Fatalf("the upgraded group at epoch %d, want the classic generation %d + 1", d.Epoch, gen)
	}
}
