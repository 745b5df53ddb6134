package cgroups

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
)

type fakeClock struct{ t time.Time }

func (f *fakeClock) now() time.Time { return f.t }

func newTestCoordinator() (*Coordinator, *fakeClock) {
	clk := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	return New(DefaultConfig(), zerolog.Nop(), clk.now), clk
}

// client mimics a consumer: it owns what it was last assigned, except what
// it was asked to give up, which it drops at once (revoke then ack).
type client struct {
	id    string
	epoch int32
	owned []TP
}

func str(s string) *string { return &s }

func (cl *client) join(t *testing.T, c *Coordinator, topics map[string]int32, subs []string, assignor string) {
	t.Helper()
	p := HeartbeatParams{Group: "g", MemberID: cl.id, RebalanceTimeout: time.Minute, SubscribedTopics: subs, OwnedSet: true, Owned: []TP{}, NeedMemberID: true}
	if assignor != "" {
		p.ServerAssignor = str(assignor)
	}
	cl.apply(t, c.Heartbeat(p, topics))
}

func (cl *client) beat(t *testing.T, c *Coordinator, topics map[string]int32) HeartbeatResult {
	t.Helper()
	r := c.Heartbeat(HeartbeatParams{Group: "g", MemberID: cl.id, MemberEpoch: cl.epoch, RebalanceTimeout: -1,
		OwnedSet: true, Owned: slices.Clone(cl.owned), NeedMemberID: true}, topics)
	cl.apply(t, r)
	return r
}

func (cl *client) apply(t *testing.T, r HeartbeatResult) {
	t.Helper()
	if r.Code != 0 {
		t.Fatalf("%s: heartbeat code %d (%s)", cl.id, r.Code, r.Message)
	}
	cl.epoch = r.MemberEpoch
	if r.HasAssignment {
		cl.owned = slices.Clone(r.Assignment)
	}
}

// settle heartbeats every client until a round changes nothing, checking
// after every heartbeat that no partition has two owners.
func settle(t *testing.T, c *Coordinator, topics map[string]int32, cls []*client) {
	t.Helper()
	for round := 0; round < 20; round++ {
		changed := false
		for _, cl := range cls {
			e, o := cl.epoch, slices.Clone(cl.owned)
			cl.beat(t, c, topics)
			if e != cl.epoch || !slices.Equal(o, cl.owned) {
				changed = true
			}
			noOverlap(t, cls)
		}
		if !changed {
			return
		}
	}
	t.Fatal("the group did not settle in 20 rounds")
}

func noOverlap(t *testing.T, cls []*client) {
	t.Helper()
	seen := map[TP]string{}
	for _, cl := range cls {
		for _, tp := range cl.owned {
			if o, ok := seen[tp]; ok {
				t.Fatalf("%v owned by %s and %s", tp, o, cl.id)
			}
			seen[tp] = cl.id
		}
	}
}

func total(cls []*client) int {
	n := 0
	for _, cl := range cls {
		n += len(cl.owned)
	}
	return n
}

// Three members split 12 partitions 4/4/4 with no overlap; a fourth joins
// and every member ends with 3, none losing a partition it keeps, and no
// partition owned twice at any step (revoke before assign).
func TestReconcileIncremental(t *testing.T) {
	c, _ := newTestCoordinator()
	topics := map[string]int32{"t": 12, "other": 3}
	var cls []*client
	for i := range 3 {
		cl := &client{id: fmt.Sprint("m", i)}
		cl.join(t, c, topics, []string{"t"}, "")
		cls = append(cls, cl)
	}
	settle(t, c, topics, cls)
	for _, cl := range cls {
		if len(cl.owned) != 4 {
			t.Fatalf("%s owns %v, want 4 partitions", cl.id, cl.owned)
		}
	}
	before := map[string][]TP{}
	for _, cl := range cls {
		before[cl.id] = slices.Clone(cl.owned)
	}
	d, _ := c.Describe("g")
	if d.State != StateStable || d.Epoch != d.AssignmentEpoch {
		t.Fatalf("described %+v", d)
	}
	epoch := d.Epoch

	m3 := &client{id: "m3"}
	m3.join(t, c, topics, []string{"t"}, "")
	if len(m3.owned) != 0 {
		t.Fatalf("the new member got %v before anyone revoked", m3.owned)
	}
	cls = append(cls, m3)
	settle(t, c, topics, cls)
	for _, cl := range cls {
		if len(cl.owned) != 3 {
			t.Fatalf("%s owns %v, want 3", cl.id, cl.owned)
		}
		for _, tp := range cl.owned {
			if cl.id != "m3" && !slices.Contains(before[cl.id], tp) {
				t.Fatalf("%s gained %v: an old member should only give up partitions", cl.id, tp)
			}
		}
	}
	if total(cls) != 12 {
		t.Fatalf("%d partitions owned, want 12", total(cls))
	}
	if d, _ := c.Describe("g"); d.Epoch <= epoch || d.State != StateStable {
		t.Fatalf("after the join: %+v (epoch before %d)", d, epoch)
	}
}

// A member that leaves releases its partitions to the others; one whose
// session times out is removed by Sweep and likewise.
func TestLeaveAndSessionTimeout(t *testing.T) {
	c, clk := newTestCoordinator()
	topics := map[string]int32{"t": 6}
	a, b, x := &client{id: "a"}, &client{id: "b"}, &client{id: "c"}
	cls := []*client{a, b, x}
	for _, cl := range cls {
		cl.join(t, c, topics, []string{"t"}, "")
	}
	settle(t, c, topics, cls)
	r := c.Heartbeat(HeartbeatParams{Group: "g", MemberID: "c", MemberEpoch: leaveEpoch, RebalanceTimeout: -1}, topics)
	if r.Code != 0 || r.MemberEpoch != leaveEpoch {
		t.Fatalf("leave: %+v", r)
	}
	x.owned = nil
	settle(t, c, topics, cls[:2])
	if len(a.owned) != 3 || len(b.owned) != 3 {
		t.Fatalf("after the leave a=%v b=%v", a.owned, b.owned)
	}
	// b stops heartbeating; a keeps on.
	clk.t = clk.t.Add(30 * time.Second)
	a.beat(t, c, topics)
	clk.t = clk.t.Add(20 * time.Second)
	c.Sweep()
	if hasMember(c, "b") {
		t.Fatal("b outlived its session timeout")
	}
	settle(t, c, topics, cls[:1])
	if len(a.owned) != 6 {
		t.Fatalf("a owns %v after b timed out", a.owned)
	}
	if r := b.beatRaw(c, topics); r.Code != kerr.UnknownMemberID.Code {
		t.Fatalf("the timed-out member's heartbeat: %+v", r)
	}
}

func (cl *client) beatRaw(c *Coordinator, topics map[string]int32) HeartbeatResult {
	return c.Heartbeat(HeartbeatParams{Group: "g", MemberID: cl.id, MemberEpoch: cl.epoch, RebalanceTimeout: -1,
		OwnedSet: true, Owned: cl.owned, NeedMemberID: true}, topics)
}

// A member that does not revoke within its rebalance timeout is fenced out,
// and its partitions go to the member waiting for them.
func TestRebalanceTimeoutFences(t *testing.T) {
	c, clk := newTestCoordinator()
	topics := map[string]int32{"t": 4}
	a := &client{id: "a"}
	a.join(t, c, topics, []string{"t"}, "")
	settle(t, c, topics, []*client{a})
	b := &client{id: "b"}
	b.join(t, c, topics, []string{"t"}, "")
	// a is told to give up two partitions but keeps reporting all four.
	keep := slices.Clone(a.owned)
	r := a.beatRaw(c, topics)
	if r.Code != 0 || len(r.Assignment) != 2 {
		t.Fatalf("a's revocation: %+v", r)
	}
	r = a.beatRaw(c, topics) // still owns all four: the revocation is not acknowledged
	if r.Code != 0 || !slices.Equal(a.owned, keep) {
		t.Fatalf("a: %+v", r)
	}
	b.beat(t, c, topics)
	if len(b.owned) != 0 {
		t.Fatalf("b got %v while a still owns them", b.owned)
	}
	// Both keep their sessions alive; a still does not revoke.
	clk.t = clk.t.Add(30 * time.Second)
	b.beat(t, c, topics)
	a.beatRaw(c, topics)
	clk.t = clk.t.Add(31 * time.Second)
	c.Sweep()
	if hasMember(c, "a") {
		t.Fatal("a was not fenced after its rebalance timeout")
	}
	settle(t, c, topics, []*client{b})
	if len(b.owned) != 4 {
		t.Fatalf("b owns %v", b.owned)
	}
}

// Epoch checks: a greater epoch is fenced, the previous epoch with a subset
// of the assignment is accepted (lost response), an unknown member answers
// UNKNOWN_MEMBER_ID.
func TestFencing(t *testing.T) {
	c, _ := newTestCoordinator()
	topics := map[string]int32{"t": 2}
	a := &client{id: "a"}
	a.join(t, c, topics, []string{"t"}, "")
	b := &client{id: "b"}
	b.join(t, c, topics, []string{"t"}, "")
	settle(t, c, topics, []*client{a, b})
	e := a.epoch
	prev := c.groups["g"].members["a"].prevEpoch
	if r := c.Heartbeat(HeartbeatParams{Group: "g", MemberID: "a", MemberEpoch: e + 1, RebalanceTimeout: -1}, topics); r.Code != kerr.FencedMemberEpoch.Code {
		t.Fatalf("greater epoch: %+v", r)
	}
	if r := c.Heartbeat(HeartbeatParams{Group: "g", MemberID: "a", MemberEpoch: prev, RebalanceTimeout: -1, OwnedSet: true, Owned: a.owned}, topics); r.Code != 0 || r.MemberEpoch != e || prev <= 0 {
		t.Fatalf("previous epoch with a subset: %+v", r)
	}
	if r := c.Heartbeat(HeartbeatParams{Group: "g", MemberID: "a", MemberEpoch: prev, RebalanceTimeout: -1, OwnedSet: true, Owned: []TP{{"t", 5}}}, topics); r.Code != kerr.FencedMemberEpoch.Code {
		t.Fatalf("previous epoch, not a subset: %+v", r)
	}
	if r := c.Heartbeat(HeartbeatParams{Group: "g", MemberID: "zz", MemberEpoch: 3, RebalanceTimeout: -1}, topics); r.Code != kerr.UnknownMemberID.Code {
		t.Fatalf("unknown member: %+v", r)
	}
	if r := c.Heartbeat(HeartbeatParams{Group: "nope", MemberID: "zz", MemberEpoch: 3, RebalanceTimeout: -1}, topics); r.Code != kerr.UnknownMemberID.Code {
		t.Fatalf("unknown group: %+v", r)
	}
}

// Invalid requests answer INVALID_REQUEST, UNSUPPORTED_ASSIGNOR or
// INVALID_REGULAR_EXPRESSION before the group is touched.
func TestValidation(t *testing.T) {
	c, _ := newTestCoordinator()
	base := HeartbeatParams{Group: "g", MemberID: "a", RebalanceTimeout: time.Minute, SubscribedTopics: []string{"t"}, OwnedSet: true, Owned: []TP{}, NeedMemberID: true}
	for name, tc := range map[string]struct {
		mod  func(*HeartbeatParams)
		code int16
	}{
		"empty group":        {func(p *HeartbeatParams) { p.Group = "" }, kerr.InvalidRequest.Code},
		"empty member id v1": {func(p *HeartbeatParams) { p.MemberID = "" }, kerr.InvalidRequest.Code},
		"no rebalance":       {func(p *HeartbeatParams) { p.RebalanceTimeout = -1 }, kerr.InvalidRequest.Code},
		"owned on join":      {func(p *HeartbeatParams) { p.Owned = []TP{{"t", 0}} }, kerr.InvalidRequest.Code},
		"no subscription":    {func(p *HeartbeatParams) { p.SubscribedTopics = nil }, kerr.InvalidRequest.Code},
		"bad epoch":          {func(p *HeartbeatParams) { p.MemberEpoch = -3 }, kerr.InvalidRequest.Code},
		"static leave no id": {func(p *HeartbeatParams) { p.MemberEpoch = staticLeaveEpoch }, kerr.InvalidRequest.Code},
		"unknown assignor":   {func(p *HeartbeatParams) { p.ServerAssignor = str("sticky") }, kerr.UnsupportedAssignor.Code},
		"bad regex":          {func(p *HeartbeatParams) { p.SubscribedRegex = str("(") }, kerr.InvalidRegularExpression.Code},
		"empty instance id":  {func(p *HeartbeatParams) { p.InstanceID = str("") }, kerr.InvalidRequest.Code},
		"group id too long":  {func(p *HeartbeatParams) { p.Group = strings.Repeat("g", MaxGroupIDBytes+1) }, kerr.InvalidGroupID.Code},
		"member id too long": {func(p *HeartbeatParams) { p.MemberID = strings.Repeat("m", 32767) }, kerr.InvalidRequest.Code},
		"instance too long":  {func(p *HeartbeatParams) { p.InstanceID = str(strings.Repeat("i", 256)) }, kerr.InvalidRequest.Code},
	} {
		p := base
		tc.mod(&p)
		if r := c.Heartbeat(p, nil); r.Code != tc.code {
			t.Errorf("%s: code %d, want %d", name, r.Code, tc.code)
		}
	}
	if n, _ := c.Counts(); n != 0 {
		t.Fatalf("an invalid request created %d groups", n)
	}
	// Before v1 the coordinator names the member.
	p := base
	p.MemberID, p.NeedMemberID = "", false
	if r := c.Heartbeat(p, map[string]int32{"t": 1}); r.Code != 0 || r.MemberID == "" {
		t.Fatalf("v0 join: %+v", r)
	}
}

// A regular expression subscribes to every topic it matches in full, and a
// topic created later that matches joins the assignment.
func TestRegexSubscription(t *testing.T) {
	c, _ := newTestCoordinator()
	topics := map[string]int32{"orders-eu": 2, "orders-us": 2, "xorders-eu": 5}
	a := &client{id: "a"}
	r := c.Heartbeat(HeartbeatParams{Group: "g", MemberID: "a", RebalanceTimeout: time.Minute, SubscribedRegex: str("orders-.*"), OwnedSet: true, Owned: []TP{}, NeedMemberID: true}, topics)
	a.apply(t, r)
	settle(t, c, topics, []*client{a})
	if len(a.owned) != 4 {
		t.Fatalf("owned %v, want the 4 partitions of orders-eu and orders-us", a.owned)
	}
	topics["orders-ap"] = 3
	settle(t, c, topics, []*client{a})
	if len(a.owned) != 7 {
		t.Fatalf("owned %v after orders-ap appeared", a.owned)
	}
}

// A static member that leaves with epoch -2 keeps its partitions; coming
// back under a new member id it gets them back without a rebalance, and
// the old member id is unknown. A second live member with the same
// instance id answers UNRELEASED_INSTANCE_ID.
func TestStaticMembership(t *testing.T) {
	c, _ := newTestCoordinator()
	topics := map[string]int32{"t": 4}
	join := func(id string) HeartbeatResult {
		return c.Heartbeat(HeartbeatParams{Group: "g", MemberID: id, InstanceID: str("i1"), RebalanceTimeout: time.Minute, SubscribedTopics: []string{"t"}, OwnedSet: true, Owned: []TP{}, NeedMemberID: true}, topics)
	}
	a := &client{id: "a"}
	a.apply(t, join("a"))
	b := &client{id: "b"}
	b.join(t, c, topics, []string{"t"}, "")
	settle(t, c, topics, []*client{a, b})
	kept := slices.Clone(a.owned)
	d, _ := c.Describe("g")
	if r := join("a2"); r.Code != kerr.UnreleasedInstanceID.Code {
		t.Fatalf("second live instance: %+v", r)
	}
	if r := c.Heartbeat(HeartbeatParams{Group: "g", MemberID: "a", InstanceID: str("i1"), MemberEpoch: staticLeaveEpoch, RebalanceTimeout: -1}, topics); r.Code != 0 || r.MemberEpoch != staticLeaveEpoch {
		t.Fatalf("static leave: %+v", r)
	}
	a2 := &client{id: "a2"}
	a2.apply(t, join("a2"))
	if !slices.Equal(a2.owned, kept) {
		t.Fatalf("the returning instance got %v, had %v", a2.owned, kept)
	}
	if d2, _ := c.Describe("g"); d2.Epoch != d.Epoch {
		t.Fatalf("group epoch moved from %d to %d on a static rejoin", d.Epoch, d2.Epoch)
	}
	if r := a.beatRaw(c, topics); r.Code != kerr.UnknownMemberID.Code {
		t.Fatalf("the replaced member id: %+v", r)
	}
}

// The range assignor gives contiguous ranges per topic; the uniform one
// balances across topics and keeps owners.
func TestAssignors(t *testing.T) {
	in := assignInput{members: map[string][]string{"a": {"x", "y"}, "b": {"x", "y"}}, topics: map[string]int32{"x": 3, "y": 3}}
	r := assign("range", in)
	want := map[TP]struct{}{{"x", 0}: {}, {"x", 1}: {}, {"y", 0}: {}, {"y", 1}: {}}
	if !sameSet(r["a"], want) || len(r["b"]) != 2 {
		t.Fatalf("range: %v", r)
	}
	u := assign("uniform", in)
	if len(u["a"]) != 3 || len(u["b"]) != 3 {
		t.Fatalf("uniform: %v", u)
	}
	// Sticky: a third member takes from both, each keeps the rest.
	in.members["c"] = []string{"x", "y"}
	in.prev = u
	u2 := assign("uniform", in)
	for _, id := range []string{"a", "b"} {
		if len(u2[id]) != 2 {
			t.Fatalf("uniform with 3: %v", u2)
		}
		for tp := range u2[id] {
			if _, ok := u[id][tp]; !ok {
				t.Fatalf("%s gained %v", id, tp)
			}
		}
	}
	// Heterogeneous: b alone subscribes to y.
	in = assignInput{members: map[string][]string{"a": {"x"}, "b": {"x", "y"}}, topics: map[string]int32{"x": 4, "y": 2}}
	u = assign("uniform", in)
	if len(u["a"]) != 3 || len(u["b"]) != 3 {
		t.Fatalf("heterogeneous uniform: %v", u)
	}
	for tp := range u["a"] {
		if tp.Topic != "x" {
			t.Fatalf("a got %v it does not subscribe to", tp)
		}
	}
}

// The members' ServerAssignor picks the assignor.
func TestServerAssignorChoice(t *testing.T) {
	c, _ := newTestCoordinator()
	topics := map[string]int32{"t": 4}
	a := &client{id: "a"}
	a.join(t, c, topics, []string{"t"}, "range")
	if d, _ := c.Describe("g"); d.Assignor != "range" {
		t.Fatalf("assignor %q", d.Assignor)
	}
}

func hasMember(c *Coordinator, id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.groups["g"].members[id] != nil
}

// OffsetCommit and OffsetFetch of a consumer-protocol group: the member
// epoch must be the member's current one.
func TestOffsetChecks(t *testing.T) {
	c, _ := newTestCoordinator()
	topics := map[string]int32{"t": 2}
	if _, cg := c.ValidateCommit("g", "a", 1, 9); cg {
		t.Fatal("an unknown group is not a consumer-protocol group")
	}
	a := &client{id: "a"}
	a.join(t, c, topics, []string{"t"}, "")
	for _, tc := range []struct {
		member  string
		epoch   int32
		version int16
		code    int16
	}{
		{"a", a.epoch, 9, 0},
		{"a", a.epoch - 1, 9, kerr.StaleMemberEpoch.Code},
		{"a", a.epoch + 1, 9, kerr.StaleMemberEpoch.Code},
		{"a", a.epoch, 8, kerr.UnsupportedVersion.Code},
		{"b", a.epoch, 9, kerr.UnknownMemberID.Code},
		{"", -1, 9, kerr.UnknownMemberID.Code}, // the group has members
	} {
		if code, cg := c.ValidateCommit("g", tc.member, tc.epoch, tc.version); !cg || code != tc.code {
			t.Errorf("commit %+v: code %d", tc, code)
		}
	}
	if code, _ := c.ValidateFetch("g", nil, -1); code != 0 {
		t.Errorf("admin fetch: %d", code)
	}
	if code, _ := c.ValidateFetch("g", str("a"), a.epoch-1); code != kerr.StaleMemberEpoch.Code {
		t.Errorf("stale fetch: %d", code)
	}
	if code, _ := c.ValidateFetch("g", str("a"), a.epoch); code != 0 {
		t.Errorf("fetch: %d", code)
	}
	c.Heartbeat(HeartbeatParams{Group: "g", MemberID: "a", MemberEpoch: leaveEpoch, RebalanceTimeout: -1}, topics)
	if code, cg := c.ValidateCommit("g", "", -1, 9); !cg || code != 0 {
		t.Errorf("admin commit to the empty group: %d", code)
	}
}
