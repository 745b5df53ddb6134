package groups

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
)

// Unit tests of the group coordinator state machine (groups.go), driven by
// a fake clock: timers fire only inside groupFakeClock.Advance, on the test's
// goroutine, in time order.

type groupFakeClock struct {
	mu     sync.Mutex
	now    time.Time
	seq    int
	timers []*groupFakeTimer
}

type groupFakeTimer struct {
	at      time.Time
	seq     int
	f       func()
	stopped bool
	fired   bool
}

func newGroupFakeClock() *groupFakeClock { return &groupFakeClock{now: time.Unix(1_700_000_000, 0)} }

func (c *groupFakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *groupFakeClock) AfterFunc(d time.Duration, f func()) func() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	t := &groupFakeTimer{at: c.now.Add(d), seq: c.seq, f: f}
	c.timers = append(c.timers, t)
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		if t.fired || t.stopped {
			return false
		}
		t.stopped = true
		return true
	}
}

// Advance moves time forward by d, firing every timer due on the way.
func (c *groupFakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	target := c.now.Add(d)
	c.mu.Unlock()
	for {
		c.mu.Lock()
		var next *groupFakeTimer
		live := c.timers[:0]
		for _, t := range c.timers {
			if t.fired || t.stopped {
				continue
			}
			live = append(live, t)
			if !t.at.After(target) && (next == nil || t.at.Before(next.at) || (t.at.Equal(next.at) && t.seq < next.seq)) {
				next = t
			}
		}
		c.timers = live
		if next == nil {
			c.now = target
			c.mu.Unlock()
			return
		}
		if next.at.After(c.now) {
			c.now = next.at
		}
		next.fired = true
		c.mu.Unlock()
		next.f()
	}
}

type groupHarness struct {
	t   *testing.T
	c   *Coordinator
	clk *groupFakeClock
}

func newGroupHarness(t *testing.T) *groupHarness {
	clk := newGroupFakeClock()
	cfg := DefaultConfig() // 3s initial delay, 6s..30m sessions
	return &groupHarness{t: t, c: New(cfg, zerolog.Nop(), clk), clk: clk}
}

// joinP builds JoinGroup parameters: consumer protocol type, 10s session, 30s
// rebalance, v9 semantics; protocols by name, metadata "<name>/<label>".
func joinP(group, memberID, label string, protocols ...string) JoinParams {
	p := JoinParams{
		Group:            group,
		MemberID:         memberID,
		ClientID:         "client-" + label,
		ClientHost:       "/127.0.0.1",
		SessionTimeout:   10 * time.Second,
		RebalanceTimeout: 30 * time.Second,
		ProtocolType:     "consumer",
		RequireKnownID:   true,
		CanSkipAssign:    true,
	}
	for _, n := range protocols {
		p.Protocols = append(p.Protocols, Protocol{Name: n, Metadata: []byte(n + "/" + label)})
	}
	return p
}

func asStatic(p JoinParams, instance string) JoinParams {
	p.InstanceID = &instance
	return p
}

func (h *groupHarness) joinAsync(p JoinParams) chan JoinResult {
	ch := make(chan JoinResult, 1)
	h.c.join(p, ch)
	return ch
}

// joinNow joins and expects an immediate answer.
func (h *groupHarness) joinNow(p JoinParams) JoinResult {
	h.t.Helper()
	r, ok := pollReply(h.joinAsync(p))
	if !ok {
		h.t.Fatalf("join %+v: parked, want an immediate answer", p.MemberID)
	}
	return r
}

// memberID does the KIP-394 round trip and returns the assigned member id.
func (h *groupHarness) memberID(p JoinParams) string {
	h.t.Helper()
	r := h.joinNow(p)
	if r.Code != kerr.MemberIDRequired.Code || r.MemberID == "" {
		h.t.Fatalf("first join: code %d member %q, want MEMBER_ID_REQUIRED", r.Code, r.MemberID)
	}
	return r.MemberID
}

func (h *groupHarness) syncAsync(group, member string, gen int32, assign map[string][]byte) chan SyncResult {
	ch := make(chan SyncResult, 1)
	h.c.sync(SyncParams{Group: group, MemberID: member, Generation: gen, Assignments: assign}, ch)
	return ch
}

func (h *groupHarness) syncNow(group, member string, gen int32, assign map[string][]byte) SyncResult {
	h.t.Helper()
	r, ok := pollReply(h.syncAsync(group, member, gen, assign))
	if !ok {
		h.t.Fatalf("sync %s: parked, want an immediate answer", member)
	}
	return r
}

func (h *groupHarness) state(group string) string {
	d, ok := h.c.describe(group)
	if !ok {
		return "unknown"
	}
	return d.State
}

func pollReply[T any](ch chan T) (T, bool) {
	select {
	case r := <-ch:
		return r, true
	default:
		var zero T
		return zero, false
	}
}

func mustReply[T any](t *testing.T, ch chan T, what string) T {
	t.Helper()
	r, ok := pollReply(ch)
	if !ok {
		t.Fatalf("%s: no answer yet", what)
	}
	return r
}

func wantGroupCode(t *testing.T, what string, got, want int16) {
	t.Helper()
	if got != want {
		t.Errorf("%s: code %d (%v), want %d (%v)", what, got, kerr.ErrorForCode(got), want, kerr.ErrorForCode(want))
	}
}

// stableGroup forms a Stable group of n dynamic members (labels m0..) and
// returns their member ids in join order (the first is the leader).
func (h *groupHarness) stableGroup(group string, n int) []string {
	h.t.Helper()
	ids := make([]string, n)
	chans := make([]chan JoinResult, n)
	for i := range n {
		p := joinP(group, "", fmt.Sprint("m", i), "range")
		ids[i] = h.memberID(p)
		p.MemberID = ids[i]
		chans[i] = h.joinAsync(p)
	}
	h.clk.Advance(6 * time.Second) // a second member extends the 3s delay once
	var gen int32
	for i, ch := range chans {
		r := mustReply(h.t, ch, "join "+ids[i])
		if r.Code != 0 {
			h.t.Fatalf("join %d: code %d", i, r.Code)
		}
		gen = r.Generation
	}
	assign := map[string][]byte{}
	for _, id := range ids {
		assign[id] = []byte("assign-" + id)
	}
	syncs := make([]chan SyncResult, n)
	for i := n - 1; i >= 0; i-- { // followers first: they park
		var a map[string][]byte
		if i == 0 {
			a = assign
		}
		syncs[i] = h.syncAsync(group, ids[i], gen, a)
	}
	for i, ch := range syncs {
		r := mustReply(h.t, ch, "sync "+ids[i])
		if r.Code != 0 || string(r.Assignment) != "assign-"+ids[i] {
			h.t.Fatalf("sync %d: %+v", i, r)
		}
	}
	if s := h.state(group); s != "Stable" {
		h.t.Fatalf("state %s, want Stable", s)
	}
	return ids
}

func TestGroupJoinMemberIDRequiredAndInitialDelay(t *testing.T) {
	h := newGroupHarness(t)
	p := joinP("g", "", "a", "range")
	id := h.memberID(p)
	if h.state("g") != "Empty" {
		t.Fatalf("state %s after MEMBER_ID_REQUIRED", h.state("g"))
	}
	p.MemberID = id
	ch := h.joinAsync(p)
	if h.state("g") != "PreparingRebalance" {
		t.Fatalf("state %s", h.state("g"))
	}
	h.clk.Advance(2999 * time.Millisecond)
	if _, ok := pollReply(ch); ok {
		t.Fatal("join completed before the initial rebalance delay")
	}
	h.clk.Advance(time.Millisecond)
	r := mustReply(t, ch, "join")
	if r.Code != 0 || r.Generation != 1 || r.Leader != id || r.MemberID != id || r.Protocol != "range" || !r.HasProtocol ||
		r.ProtocolType != "consumer" || len(r.Members) != 1 || string(r.Members[0].Metadata) != "range/a" {
		t.Fatalf("join result %+v", r)
	}
	if h.state("g") != "CompletingRebalance" {
		t.Fatalf("state %s", h.state("g"))
	}

	// Before v4 the member joins at once without the round trip.
	p2 := joinP("g2", "", "b", "range")
	p2.RequireKnownID = false
	ch = h.joinAsync(p2)
	h.clk.Advance(3 * time.Second)
	if r := mustReply(t, ch, "v3 join"); r.Code != 0 || r.MemberID == "" || r.Generation != 1 {
		t.Fatalf("v3 join %+v", r)
	}
}

func TestGroupInitialDelayExtendsWhileMembersArrive(t *testing.T) {
	h := newGroupHarness(t)
	a := joinP("g", "", "a", "range")
	a.MemberID = h.memberID(a)
	cha := h.joinAsync(a)
	h.clk.Advance(2 * time.Second)
	b := joinP("g", "", "b", "range")
	b.MemberID = h.memberID(b)
	chb := h.joinAsync(b)
	h.clk.Advance(time.Second) // first delay over, a member arrived: extend by 3s
	if _, ok := pollReply(cha); ok {
		t.Fatal("join completed although a new member arrived during the delay")
	}
	h.clk.Advance(3 * time.Second)
	ra, rb := mustReply(t, cha, "join a"), mustReply(t, chb, "join b")
	if ra.Generation != 1 || rb.Generation != 1 || ra.Leader != a.MemberID || len(ra.Members) != 2 || len(rb.Members) != 0 {
		t.Fatalf("a %+v\nb %+v", ra, rb)
	}
}

func TestGroupProtocolSelection(t *testing.T) {
	for _, c := range []struct {
		name    string
		members [][]string
		want    string
	}{
		{"only common", [][]string{{"roundrobin", "range"}, {"range", "roundrobin"}, {"range"}}, "range"},
		{"most votes", [][]string{{"x", "y"}, {"y", "x"}, {"y", "x"}}, "y"},
		{"tie to leader", [][]string{{"x", "y"}, {"y", "x"}}, "x"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newGroupHarness(t)
			var chans []chan JoinResult
			for i, ps := range c.members {
				p := joinP("g", "", fmt.Sprint(i), ps...)
				p.MemberID = h.memberID(p)
				chans = append(chans, h.joinAsync(p))
			}
			h.clk.Advance(10 * time.Second)
			for i, ch := range chans {
				r := mustReply(t, ch, "join")
				if r.Code != 0 || r.Protocol != c.want {
					t.Fatalf("member %d: %+v, want protocol %s", i, r, c.want)
				}
				if i == 0 {
					for j, m := range r.Members {
						if want := c.want + "/" + fmt.Sprint(j); string(m.Metadata) != want {
							t.Errorf("member %d metadata %q, want %q", j, m.Metadata, want)
						}
					}
				}
			}
		})
	}
}

func TestGroupJoinValidation(t *testing.T) {
	h := newGroupHarness(t)
	wantGroupCode(t, "empty group id", h.joinNow(joinP("", "", "a", "range")).Code, kerr.InvalidGroupID.Code)
	short := joinP("g", "", "a", "range")
	short.SessionTimeout = 5 * time.Second
	wantGroupCode(t, "short session", h.joinNow(short).Code, kerr.InvalidSessionTimeout.Code)
	long := joinP("g", "", "a", "range")
	long.SessionTimeout = 31 * time.Minute
	wantGroupCode(t, "long session", h.joinNow(long).Code, kerr.InvalidSessionTimeout.Code)
	wantGroupCode(t, "unknown group with member id", h.joinNow(joinP("nope", "m-1", "a", "range")).Code, kerr.UnknownMemberID.Code)
	wantGroupCode(t, "no protocols", h.joinNow(joinP("g", "", "a")).Code, kerr.InconsistentGroupProtocol.Code)
	noType := joinP("g", "", "a", "range")
	noType.ProtocolType = ""
	wantGroupCode(t, "no protocol type", h.joinNow(noType).Code, kerr.InconsistentGroupProtocol.Code)

	ids := h.stableGroup("s", 1)
	other := joinP("s", "", "b", "roundrobin")
	wantGroupCode(t, "no common protocol", h.joinNow(other).Code, kerr.InconsistentGroupProtocol.Code)
	conn := joinP("s", "", "b", "range")
	conn.ProtocolType = "connect"
	wantGroupCode(t, "other protocol type", h.joinNow(conn).Code, kerr.InconsistentGroupProtocol.Code)
	wantGroupCode(t, "unknown member of known group", h.joinNow(joinP("s", "m-x", "b", "range")).Code, kerr.UnknownMemberID.Code)
	if h.state("s") != "Stable" {
		t.Fatalf("refused joins changed the group: %s", h.state("s"))
	}
	_ = ids
}

func TestGroupSyncAndHeartbeat(t *testing.T) {
	h := newGroupHarness(t)
	a := joinP("g", "", "a", "range")
	a.MemberID = h.memberID(a)
	b := joinP("g", "", "b", "range")
	b.MemberID = h.memberID(b)
	cha, chb := h.joinAsync(a), h.joinAsync(b)
	h.clk.Advance(6 * time.Second)
	ra, _ := mustReply(t, cha, "a"), mustReply(t, chb, "b")

	wantGroupCode(t, "heartbeat while completing", h.c.heartbeat("g", b.MemberID, nil, 1), 0)
	wantGroupCode(t, "commit while completing", h.c.validateCommit("g", b.MemberID, 1, nil), kerr.RebalanceInProgress.Code)
	wantGroupCode(t, "sync wrong generation", h.syncNow("g", b.MemberID, 7, nil).Code, kerr.IllegalGeneration.Code)
	wantGroupCode(t, "sync unknown member", h.syncNow("g", "nobody", 1, nil).Code, kerr.UnknownMemberID.Code)
	wantGroupCode(t, "sync unknown group", h.syncNow("nope", b.MemberID, 1, nil).Code, kerr.UnknownMemberID.Code)
	wantGroupCode(t, "sync empty group id", h.syncNow("", b.MemberID, 1, nil).Code, kerr.InvalidGroupID.Code)
	bad := "roundrobin"
	ch := make(chan SyncResult, 1)
	h.c.sync(SyncParams{Group: "g", MemberID: b.MemberID, Generation: 1, Protocol: &bad}, ch)
	wantGroupCode(t, "sync other protocol", mustReply(t, ch, "sync v5").Code, kerr.InconsistentGroupProtocol.Code)

	follower := h.syncAsync("g", b.MemberID, 1, nil)
	if _, ok := pollReply(follower); ok {
		t.Fatal("follower sync answered before the leader's")
	}
	leader := h.syncNow("g", a.MemberID, ra.Generation, map[string][]byte{a.MemberID: []byte("A"), "stranger": []byte("X")})
	fr := mustReply(t, follower, "follower sync")
	if leader.Code != 0 || string(leader.Assignment) != "A" || fr.Code != 0 || len(fr.Assignment) != 0 ||
		!fr.HasProtocol || fr.Protocol != "range" || fr.ProtocolType != "consumer" {
		t.Fatalf("leader %+v follower %+v", leader, fr)
	}
	if h.state("g") != "Stable" {
		t.Fatalf("state %s", h.state("g"))
	}
	if r := h.syncNow("g", a.MemberID, 1, nil); r.Code != 0 || string(r.Assignment) != "A" {
		t.Fatalf("stable resync %+v", r)
	}
	wantGroupCode(t, "heartbeat", h.c.heartbeat("g", a.MemberID, nil, 1), 0)
	wantGroupCode(t, "heartbeat old generation", h.c.heartbeat("g", a.MemberID, nil, 0), kerr.IllegalGeneration.Code)
	wantGroupCode(t, "heartbeat unknown member", h.c.heartbeat("g", "x", nil, 1), kerr.UnknownMemberID.Code)
	wantGroupCode(t, "heartbeat unknown group", h.c.heartbeat("nope", "x", nil, 1), kerr.UnknownMemberID.Code)
	wantGroupCode(t, "heartbeat empty group id", h.c.heartbeat("", "x", nil, 1), kerr.InvalidGroupID.Code)
	inst := "i"
	wantGroupCode(t, "heartbeat unknown instance", h.c.heartbeat("g", a.MemberID, &inst, 1), kerr.UnknownMemberID.Code)
}

func TestGroupSessionTimeoutRemovesMember(t *testing.T) {
	h := newGroupHarness(t)
	ids := h.stableGroup("g", 2)
	for range 3 { // a heartbeats every 3s, b never
		h.clk.Advance(3 * time.Second)
		wantGroupCode(t, "a heartbeat", h.c.heartbeat("g", ids[0], nil, 1), 0)
	}
	h.clk.Advance(1 * time.Second) // b's 10s session is over
	if h.state("g") != "PreparingRebalance" {
		t.Fatalf("state %s after b's session expired", h.state("g"))
	}
	wantGroupCode(t, "a heartbeat during rebalance", h.c.heartbeat("g", ids[0], nil, 1), kerr.RebalanceInProgress.Code)
	wantGroupCode(t, "b heartbeat after expiry", h.c.heartbeat("g", ids[1], nil, 1), kerr.UnknownMemberID.Code)
	r := h.joinNow(joinP("g", ids[0], "m0", "range")) // the only member rejoined: done at once
	if r.Code != 0 || r.Generation != 2 || len(r.Members) != 1 || r.Leader != ids[0] {
		t.Fatalf("rejoin %+v", r)
	}
}

func TestGroupRebalanceTimeoutDropsLaggards(t *testing.T) {
	h := newGroupHarness(t)
	ids := h.stableGroup("g", 3)
	// The leader rejoins: a rebalance starts; m1 rejoins, m2 only heartbeats.
	ch0 := h.joinAsync(joinP("g", ids[0], "m0", "range"))
	ch1 := h.joinAsync(joinP("g", ids[1], "m1", "range"))
	for range 9 {
		h.clk.Advance(3 * time.Second)
		wantGroupCode(t, "m2 heartbeat", h.c.heartbeat("g", ids[2], nil, 1), kerr.RebalanceInProgress.Code)
	}
	if _, ok := pollReply(ch0); ok {
		t.Fatal("join phase ended before the rebalance timeout")
	}
	h.clk.Advance(3 * time.Second) // 30s rebalance timeout
	r0, r1 := mustReply(t, ch0, "m0"), mustReply(t, ch1, "m1")
	if r0.Generation != 2 || r1.Generation != 2 || len(r0.Members) != 2 {
		t.Fatalf("m0 %+v\nm1 %+v", r0, r1)
	}
	wantGroupCode(t, "m2 heartbeat after being dropped", h.c.heartbeat("g", ids[2], nil, 1), kerr.UnknownMemberID.Code)
}

func TestGroupRebalanceAnswersParkedSync(t *testing.T) {
	h := newGroupHarness(t)
	a := joinP("g", "", "a", "range")
	a.MemberID = h.memberID(a)
	b := joinP("g", "", "b", "range")
	b.MemberID = h.memberID(b)
	cha, chb := h.joinAsync(a), h.joinAsync(b)
	h.clk.Advance(6 * time.Second)
	mustReply(t, cha, "a")
	mustReply(t, chb, "b")
	parked := h.syncAsync("g", b.MemberID, 1, nil)
	// A third member arrives during CompletingRebalance.
	c := joinP("g", "", "c", "range")
	c.MemberID = h.memberID(c)
	chc := h.joinAsync(c)
	wantGroupCode(t, "parked follower sync", mustReply(t, parked, "b sync").Code, kerr.RebalanceInProgress.Code)
	wantGroupCode(t, "leader sync of the old generation", h.syncNow("g", a.MemberID, 1, nil).Code, kerr.RebalanceInProgress.Code)
	cha, chb = h.joinAsync(a), h.joinAsync(b)
	for i, ch := range []chan JoinResult{cha, chb, chc} {
		if r := mustReply(t, ch, "rejoin"); r.Code != 0 || r.Generation != 2 {
			t.Fatalf("member %d: %+v", i, r)
		}
	}
}

func TestGroupSyncTimeoutRemovesSilentMember(t *testing.T) {
	h := newGroupHarness(t)
	a := joinP("g", "", "a", "range")
	a.MemberID = h.memberID(a)
	b := joinP("g", "", "b", "range")
	b.MemberID = h.memberID(b)
	cha, chb := h.joinAsync(a), h.joinAsync(b)
	h.clk.Advance(6 * time.Second)
	mustReply(t, cha, "a")
	mustReply(t, chb, "b")
	h.syncNow("g", a.MemberID, 1, map[string][]byte{a.MemberID: []byte("A"), b.MemberID: []byte("B")})
	for range 10 { // a keeps its session; b never syncs
		h.clk.Advance(3 * time.Second)
		h.c.heartbeat("g", a.MemberID, nil, 1)
	}
	if h.state("g") != "PreparingRebalance" {
		t.Fatalf("state %s after the sync timeout", h.state("g"))
	}
	wantGroupCode(t, "b after the sync timeout", h.c.heartbeat("g", b.MemberID, nil, 1), kerr.UnknownMemberID.Code)
}

func TestGroupLeave(t *testing.T) {
	h := newGroupHarness(t)
	ids := h.stableGroup("g", 3)
	top, codes := h.c.leave("g", []LeaveIdentity{{MemberID: ids[2]}, {MemberID: "stranger"}, {MemberID: ids[2]}})
	if top != 0 || !slices.Equal(codes, []int16{0, kerr.UnknownMemberID.Code, kerr.UnknownMemberID.Code}) {
		t.Fatalf("leave: %d %v", top, codes)
	}
	if h.state("g") != "PreparingRebalance" {
		t.Fatalf("state %s", h.state("g"))
	}
	ch0 := h.joinAsync(joinP("g", ids[0], "m0", "range"))
	// The last member still expected leaves: the join phase completes.
	if _, codes := h.c.leave("g", []LeaveIdentity{{MemberID: ids[1]}}); codes[0] != 0 {
		t.Fatalf("leave m1: %v", codes)
	}
	if r := mustReply(t, ch0, "m0 rejoin"); r.Code != 0 || r.Generation != 2 || len(r.Members) != 1 {
		t.Fatalf("m0 %+v", r)
	}
	top, codes = h.c.leave("nope", []LeaveIdentity{{MemberID: "x"}})
	if top != 0 || codes[0] != kerr.UnknownMemberID.Code {
		t.Fatalf("unknown group: %d %v", top, codes)
	}
	if top, _ := h.c.leave("", nil); top != kerr.InvalidGroupID.Code {
		t.Fatalf("empty group id: %d", top)
	}
	// The last member leaves: Empty with a new generation.
	h.syncNow("g", ids[0], 2, nil)
	h.c.leave("g", []LeaveIdentity{{MemberID: ids[0]}})
	if d, _ := h.c.describe("g"); d.State != "Empty" || len(d.Members) != 0 {
		t.Fatalf("after the last leave: %+v", d)
	}
	wantGroupCode(t, "simple commit to the empty group", h.c.validateCommit("g", "", -1, nil), 0)
}

func TestGroupLeavePendingMember(t *testing.T) {
	h := newGroupHarness(t)
	ids := h.stableGroup("g", 1)
	pend := h.memberID(joinP("g", "", "p", "range"))
	if _, codes := h.c.leave("g", []LeaveIdentity{{MemberID: pend}}); codes[0] != 0 {
		t.Fatalf("leave pending: %v", codes)
	}
	wantGroupCode(t, "pending id after leaving", h.joinNow(joinP("g", pend, "p", "range")).Code, kerr.UnknownMemberID.Code)
	// As in Kafka, a successful leave of a Stable group rebalances it, even
	// when only a pending id left.
	wantGroupCode(t, "stable member", h.c.heartbeat("g", ids[0], nil, 1), kerr.RebalanceInProgress.Code)
}

func TestGroupPendingMemberExpires(t *testing.T) {
	h := newGroupHarness(t)
	ids := h.stableGroup("g", 1)
	pend := h.memberID(joinP("g", "", "p", "range"))     // a pending member holds the join phase
	ch := h.joinAsync(joinP("g", ids[0], "m0", "range")) // leader rejoin: rebalance
	if _, ok := pollReply(ch); ok {
		t.Fatal("join phase completed with a pending member outstanding")
	}
	h.clk.Advance(10 * time.Second) // its session timeout
	if r := mustReply(t, ch, "rejoin"); r.Code != 0 || r.Generation != 2 || len(r.Members) != 1 {
		t.Fatalf("rejoin %+v", r)
	}
	wantGroupCode(t, "expired pending id", h.joinNow(joinP("g", pend, "p", "range")).Code, kerr.UnknownMemberID.Code)
}

func TestGroupStaticMemberRestartWithoutRebalance(t *testing.T) {
	h := newGroupHarness(t)
	var ids []string
	var chans []chan JoinResult
	for _, inst := range []string{"a", "b", "c"} {
		// Static members skip MEMBER_ID_REQUIRED.
		chans = append(chans, h.joinAsync(asStatic(joinP("g", "", inst, "range"), inst)))
	}
	h.clk.Advance(6 * time.Second)
	for _, ch := range chans {
		r := mustReply(t, ch, "static join")
		if r.Code != 0 || r.Generation != 1 {
			t.Fatalf("static join %+v", r)
		}
		ids = append(ids, r.MemberID)
	}
	assign := map[string][]byte{ids[0]: []byte("A"), ids[1]: []byte("B"), ids[2]: []byte("C")}
	h.syncNow("g", ids[0], 1, assign)
	for _, id := range ids[1:] {
		h.syncNow("g", id, 1, nil)
	}

	// b restarts: it joins with its instance id and no member id.
	r := h.joinNow(asStatic(joinP("g", "", "b", "range"), "b"))
	if r.Code != 0 || r.Generation != 1 || r.MemberID == ids[1] || r.Leader != ids[0] || len(r.Members) != 0 || r.SkipAssign {
		t.Fatalf("restarted follower %+v", r)
	}
	if h.state("g") != "Stable" {
		t.Fatalf("state %s: the restart caused a rebalance", h.state("g"))
	}
	inst := "b"
	wantGroupCode(t, "old id heartbeat", h.c.heartbeat("g", ids[1], &inst, 1), kerr.FencedInstanceID.Code)
	wantGroupCode(t, "old id commit", h.c.validateCommit("g", ids[1], 1, &inst), kerr.FencedInstanceID.Code)
	ch := make(chan SyncResult, 1)
	h.c.sync(SyncParams{Group: "g", MemberID: r.MemberID, InstanceID: &inst, Generation: 1}, ch)
	if s := mustReply(t, ch, "sync"); s.Code != 0 || string(s.Assignment) != "B" {
		t.Fatalf("restarted sync %+v", s)
	}
	wantGroupCode(t, "other member heartbeat", h.c.heartbeat("g", ids[2], nil, 1), 0)
	wantGroupCode(t, "new id commit", h.c.validateCommit("g", r.MemberID, 1, &inst), 0)

	// The leader restarts: v9 gets the member list with SkipAssignment;
	// older versions are told the previous leader id.
	r = h.joinNow(asStatic(joinP("g", "", "a", "range"), "a"))
	if r.Code != 0 || r.Generation != 1 || r.Leader != r.MemberID || !r.SkipAssign || len(r.Members) != 3 {
		t.Fatalf("restarted leader v9 %+v", r)
	}
	newLeader := r.MemberID
	old := asStatic(joinP("g", "", "a", "range"), "a")
	old.CanSkipAssign = false
	r = h.joinNow(old)
	if r.Code != 0 || r.Generation != 1 || r.Leader != newLeader || r.SkipAssign || len(r.Members) != 0 {
		t.Fatalf("restarted leader v8 %+v", r)
	}
	if h.state("g") != "Stable" {
		t.Fatalf("state %s", h.state("g"))
	}

	// A restart that keeps the group's protocol choice does not rebalance
	// (range is still the only protocol all members support)...
	if r := h.joinNow(asStatic(joinP("g", "", "c", "roundrobin", "range"), "c")); r.Code != 0 || r.Generation != 1 {
		t.Fatalf("restart with more protocols %+v", r)
	}
	// ...one that changes it does.
	solo := h.joinAsync(asStatic(joinP("solo", "", "s", "range", "roundrobin"), "s"))
	h.clk.Advance(3 * time.Second)
	sr := mustReply(t, solo, "solo")
	h.syncNow("solo", sr.MemberID, 1, nil)
	r = h.joinNow(asStatic(joinP("solo", "", "s", "roundrobin", "range"), "s"))
	if r.Code != 0 || r.Generation != 2 || r.Protocol != "roundrobin" {
		t.Fatalf("restart with another preferred protocol %+v", r)
	}
}

func TestGroupStaticMemberFencedWhileParked(t *testing.T) {
	h := newGroupHarness(t)
	var rs []JoinResult
	var chans []chan JoinResult
	for _, inst := range []string{"a", "b", "c"} {
		chans = append(chans, h.joinAsync(asStatic(joinP("g", "", inst, "range"), inst)))
	}
	h.clk.Advance(6 * time.Second)
	for _, ch := range chans {
		rs = append(rs, mustReply(t, ch, "join"))
	}
	h.syncNow("g", rs[0].MemberID, 1, nil)
	h.syncNow("g", rs[1].MemberID, 1, nil)
	h.syncNow("g", rs[2].MemberID, 1, nil)

	// a rejoins (leader: rebalance); b's old process parks its rejoin (c
	// has not rejoined yet), then a new process with b's instance id
	// takes over.
	cha := h.joinAsync(asStatic(joinP("g", rs[0].MemberID, "a", "range"), "a"))
	parked := h.joinAsync(asStatic(joinP("g", rs[1].MemberID, "b", "range"), "b"))
	if _, ok := pollReply(parked); ok {
		t.Fatal("parked rejoin answered early")
	}
	nb := h.joinAsync(asStatic(joinP("g", "", "b", "range"), "b"))
	wantGroupCode(t, "fenced parked join", mustReply(t, parked, "old b").Code, kerr.FencedInstanceID.Code)
	chc := h.joinAsync(asStatic(joinP("g", rs[2].MemberID, "c", "range"), "c"))
	ra, rnb, rc := mustReply(t, cha, "a"), mustReply(t, nb, "new b"), mustReply(t, chc, "c")
	if ra.Generation != 2 || rnb.Generation != 2 || rc.Generation != 2 || rnb.MemberID == rs[1].MemberID || len(ra.Members) != 3 {
		t.Fatalf("a %+v\nnew b %+v\nc %+v", ra, rnb, rc)
	}
	wantGroupCode(t, "old member id with the instance", h.joinNow(asStatic(joinP("g", rs[1].MemberID, "b", "range"), "b")).Code,
		kerr.FencedInstanceID.Code)
	inst := "b"
	wantGroupCode(t, "old member id heartbeat", h.c.heartbeat("g", rs[1].MemberID, &inst, 2), kerr.FencedInstanceID.Code)
}

func TestGroupStaticMemberSurvivesRebalanceUntilSessionEnds(t *testing.T) {
	h := newGroupHarness(t)
	cha := h.joinAsync(asStatic(joinP("g", "", "a", "range"), "a"))
	chb := h.joinAsync(asStatic(joinP("g", "", "b", "range"), "b"))
	h.clk.Advance(6 * time.Second)
	ra, rb := mustReply(t, cha, "a"), mustReply(t, chb, "b")
	h.syncNow("g", ra.MemberID, 1, nil)
	h.syncNow("g", rb.MemberID, 1, nil)
	// a rejoins; b is away (process down): the join phase ends at the
	// rebalance timeout, keeping b.
	cha = h.joinAsync(asStatic(joinP("g", ra.MemberID, "a", "range"), "a"))
	h.clk.Advance(9 * time.Second)
	h.c.heartbeat("g", ra.MemberID, nil, 1)
	h.clk.Advance(1 * time.Second) // b's session (10s) ends
	if d, _ := h.c.describe("g"); len(d.Members) != 1 {
		t.Fatalf("b not removed at session end: %+v", d)
	}
	if r := mustReply(t, cha, "a"); r.Code != 0 || r.Generation != 2 || len(r.Members) != 1 {
		t.Fatalf("a %+v", r)
	}
}

func TestGroupLeaveByInstanceID(t *testing.T) {
	h := newGroupHarness(t)
	cha := h.joinAsync(asStatic(joinP("g", "", "a", "range"), "a"))
	h.clk.Advance(3 * time.Second)
	ra := mustReply(t, cha, "a")
	inst, other := "a", "zz"
	_, codes := h.c.leave("g", []LeaveIdentity{{InstanceID: &other}, {InstanceID: &inst}})
	if !slices.Equal(codes, []int16{kerr.UnknownMemberID.Code, 0}) {
		t.Fatalf("codes %v", codes)
	}
	if d, _ := h.c.describe("g"); d.State != "Empty" {
		t.Fatalf("state %s", d.State)
	}
	wantGroupCode(t, "removed member", h.c.heartbeat("g", ra.MemberID, &inst, 1), kerr.UnknownMemberID.Code)
}

func TestGroupSupersededJoin(t *testing.T) {
	h := newGroupHarness(t)
	ids := h.stableGroup("g", 2)
	first := h.joinAsync(joinP("g", ids[1], "m1", "range", "roundrobin")) // changed metadata: rebalance
	second := h.joinAsync(joinP("g", ids[1], "m1", "range", "roundrobin"))
	wantGroupCode(t, "superseded join", mustReply(t, first, "first").Code, kerr.RebalanceInProgress.Code)
	h.joinAsync(joinP("g", ids[0], "m0", "range"))
	if r := mustReply(t, second, "second"); r.Code != 0 || r.Generation != 2 {
		t.Fatalf("second %+v", r)
	}
}

func TestGroupRejoinWithSameMetadataWhileCompleting(t *testing.T) {
	h := newGroupHarness(t)
	a := joinP("g", "", "a", "range")
	a.MemberID = h.memberID(a)
	b := joinP("g", "", "b", "range")
	b.MemberID = h.memberID(b)
	cha, chb := h.joinAsync(a), h.joinAsync(b)
	h.clk.Advance(6 * time.Second)
	mustReply(t, cha, "a")
	mustReply(t, chb, "b")
	// Both lost their answers and ask again: same generation, no rebalance.
	ra, rb := h.joinNow(a), h.joinNow(b)
	if ra.Generation != 1 || len(ra.Members) != 2 || rb.Generation != 1 || len(rb.Members) != 0 {
		t.Fatalf("a %+v\nb %+v", ra, rb)
	}
	if h.state("g") != "CompletingRebalance" {
		t.Fatalf("state %s", h.state("g"))
	}
	// A follower of a Stable group with unchanged metadata: same answer.
	h.syncNow("g", a.MemberID, 1, nil)
	if r := h.joinNow(b); r.Generation != 1 || r.Code != 0 || h.state("g") != "Stable" {
		t.Fatalf("stable follower rejoin %+v, state %s", r, h.state("g"))
	}
}

func TestGroupValidateCommit(t *testing.T) {
	h := newGroupHarness(t)
	wantGroupCode(t, "simple commit, unknown group", h.c.validateCommit("simple", "", -1, nil), 0)
	if l := h.c.list(); len(l) != 1 || l[0].Group != "simple" || l[0].ProtocolType != "" || l[0].State != StateEmpty {
		t.Fatalf("simple group listing %+v", l)
	}
	wantGroupCode(t, "generation commit, unknown group", h.c.validateCommit("nope", "m", 3, nil), kerr.IllegalGeneration.Code)
	wantGroupCode(t, "empty group id", h.c.validateCommit("", "", -1, nil), kerr.InvalidGroupID.Code)
	wantGroupCode(t, "member commit to an empty group", h.c.validateCommit("simple", "m", 0, nil), kerr.UnknownMemberID.Code)

	ids := h.stableGroup("g", 2)
	wantGroupCode(t, "member commit", h.c.validateCommit("g", ids[1], 1, nil), 0)
	wantGroupCode(t, "stale generation", h.c.validateCommit("g", ids[1], 0, nil), kerr.IllegalGeneration.Code)
	wantGroupCode(t, "unknown member", h.c.validateCommit("g", "x", 1, nil), kerr.UnknownMemberID.Code)
	wantGroupCode(t, "simple commit to an active group", h.c.validateCommit("g", "", -1, nil), kerr.UnknownMemberID.Code)
	inst := "i"
	wantGroupCode(t, "unknown instance", h.c.validateCommit("g", ids[1], 1, &inst), kerr.UnknownMemberID.Code)
	h.joinAsync(joinP("g", ids[0], "m0", "range")) // rebalance: commits of generation 1 still count
	wantGroupCode(t, "commit while preparing", h.c.validateCommit("g", ids[1], 1, nil), 0)
}

type fakeOffsetsDeleter struct {
	mu      sync.Mutex
	deleted []string
	err     error
}

func (d *fakeOffsetsDeleter) OffsetsErrorCode(error) (int16, uint32) {
	return kerr.UnknownServerError.Code, 0
}

func (d *fakeOffsetsDeleter) DeleteGroupOffsets(_ context.Context, group string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.deleted = append(d.deleted, group)
	return d.err
}

func TestGroupDelete(t *testing.T) {
	h := newGroupHarness(t)
	ctx := context.Background()
	if code, _ := h.c.deleteGroup(ctx, "nope"); code != kerr.GroupIDNotFound.Code {
		t.Fatalf("unknown group without offsets code: %d", code)
	}
	h.stableGroup("busy", 1)
	h.c.validateCommit("simple", "", -1, nil)
	del := &fakeOffsetsDeleter{}
	h.c.offsets = del
	if code, msg := h.c.deleteGroup(ctx, "busy"); code != kerr.NonEmptyGroup.Code || msg == "" {
		t.Fatalf("busy: %d %q", code, msg)
	}
	if code, _ := h.c.deleteGroup(ctx, "simple"); code != 0 {
		t.Fatalf("simple: %d", code)
	}
	if _, ok := h.c.describe("simple"); ok {
		t.Fatal("deleted group still known")
	}
	// Unknown here but with offsets in Iggy (after a restart).
	if code, _ := h.c.deleteGroup(ctx, "restarted"); code != 0 {
		t.Fatalf("restarted: %d", code)
	}
	del.err = ErrNoOffsets
	if code, _ := h.c.deleteGroup(ctx, "never"); code != kerr.GroupIDNotFound.Code {
		t.Fatalf("never: %d", code)
	}
	del.err = fmt.Errorf("send: %w", iggy.ErrClosed)
	if code, _ := h.c.deleteGroup(ctx, "failing"); code == 0 {
		t.Fatal("failing deletion answered 0")
	}
	if code, _ := h.c.deleteGroup(ctx, ""); code != kerr.GroupIDNotFound.Code {
		t.Fatalf("empty id: %d", code)
	}
	if !slices.Equal(del.deleted, []string{"simple", "restarted", "never", "failing"}) {
		t.Fatalf("deleter calls %v", del.deleted)
	}
}

func TestGroupEmptyGroupIsForgotten(t *testing.T) {
	h := newGroupHarness(t)
	h.c.emptyRetention = time.Hour
	h.c.validateCommit("simple", "", -1, nil)
	ids := h.stableGroup("g", 1)
	h.c.leave("g", []LeaveIdentity{{MemberID: ids[0]}})
	h.clk.Advance(59 * time.Minute)
	h.c.validateCommit("simple", "", -1, nil) // in use: kept longer
	h.clk.Advance(time.Minute)
	if l := h.c.list(); len(l) != 1 || l[0].Group != "simple" {
		t.Fatalf("after an hour: %+v", l)
	}
	h.clk.Advance(time.Hour)
	if l := h.c.list(); len(l) != 0 {
		t.Fatalf("after two hours: %+v", l)
	}
	// A forgotten group starts again from generation 1.
	ids = h.stableGroup("g", 1)
	wantGroupCode(t, "new generation 1", h.c.heartbeat("g", ids[0], nil, 1), 0)
}

func TestGroupDescribeAndOffsetDeleteCheck(t *testing.T) {
	h := newGroupHarness(t)
	meta := func(topics ...string) []byte {
		m := kmsg.ConsumerMemberMetadata{Version: 0, Topics: topics}
		return m.AppendTo(nil)
	}
	a := joinP("g", "", "a")
	a.Protocols = []Protocol{{Name: "range", Metadata: meta("t1", "t2")}}
	a.MemberID = h.memberID(a)
	b := joinP("g", "", "b")
	b.Protocols = []Protocol{{Name: "range", Metadata: meta("t3")}}
	b.MemberID = h.memberID(b)
	cha, chb := h.joinAsync(a), h.joinAsync(b)
	if d, _ := h.c.describe("g"); d.State != "PreparingRebalance" || d.Protocol != "" || len(d.Members) != 2 || d.Members[0].Metadata != nil {
		t.Fatalf("preparing: %+v", d)
	}
	h.clk.Advance(6 * time.Second)
	mustReply(t, cha, "a")
	mustReply(t, chb, "b")
	h.syncAsync("g", b.MemberID, 1, nil)
	h.syncNow("g", a.MemberID, 1, map[string][]byte{a.MemberID: []byte("A"), b.MemberID: []byte("B")})
	d, _ := h.c.describe("g")
	if d.State != "Stable" || d.Protocol != "range" || d.ProtocolType != "consumer" || len(d.Members) != 2 ||
		d.Members[0].MemberID != a.MemberID || string(d.Members[1].Assignment) != "B" || d.Members[0].ClientID != "client-a" ||
		d.Members[0].ClientHost != "/127.0.0.1" {
		t.Fatalf("stable: %+v", d)
	}
	ctx := context.Background()
	code, all, subs := h.c.OffsetDeleteCheck(ctx, "g")
	if slices.Sort(subs); code != 0 || all || !slices.Equal(subs, []string{"t1", "t2", "t3"}) {
		t.Fatalf("offset delete check: %d %v %v", code, all, subs)
	}
	if code, _, _ := h.c.OffsetDeleteCheck(ctx, "nope"); code != kerr.GroupIDNotFound.Code {
		t.Fatalf("unknown: %d", code)
	}
	h.c.validateCommit("simple", "", -1, nil)
	if code, all, subs := h.c.OffsetDeleteCheck(ctx, "simple"); code != 0 || all || len(subs) != 0 {
		t.Fatalf("simple: %d %v %v", code, all, subs)
	}
	// A non-consumer group with members refuses offset deletion.
	c := joinP("conn", "", "c", "x")
	c.ProtocolType = "connect"
	c.MemberID = h.memberID(c)
	h.joinAsync(c)
	if code, _, _ := h.c.OffsetDeleteCheck(ctx, "conn"); code != kerr.NonEmptyGroup.Code {
		t.Fatalf("connect group: %d", code)
	}
}

// checkGroupInvariants verifies every group's bookkeeping, and that the
// gauges Counts reads agree with the groups and members held.
func checkGroupInvariants(t *testing.T, c *Coordinator) {
	t.Helper()
	c.mu.Lock()
	gs := make([]*group, 0, len(c.groups))
	for _, g := range c.groups {
		gs = append(gs, g)
	}
	c.mu.Unlock()
	liveGroups, liveMembers := 0, 0
	for _, g := range gs {
		g.mu.Lock()
		if g.state != StateDead {
			liveGroups++
			liveMembers += len(g.members)
		}
		waiting := 0
		votes := map[string]int{}
		for _, id := range g.order {
			m := g.members[id]
			if m == nil {
				t.Fatalf("group %s: order names %s, not a member", g.id, id)
			}
			if m.joinWait != nil {
				waiting++
			}
			for _, p := range m.protocols {
				votes[p.Name]++
			}
			if m.instanceID != nil && g.static[*m.instanceID] != id {
				t.Fatalf("group %s: static map disagrees for %s", g.id, id)
			}
		}
		if len(g.order) != len(g.members) || waiting != g.awaitingJoin {
			t.Fatalf("group %s: %d ordered, %d members, %d waiting, awaitingJoin %d", g.id, len(g.order), len(g.members), waiting, g.awaitingJoin)
		}
		for n, v := range votes {
			if g.votes[n] != v {
				t.Fatalf("group %s: votes %v, want %v", g.id, g.votes, votes)
			}
		}
		if (g.leader == "") != (len(g.members) == 0) || (g.leader != "" && g.members[g.leader] == nil) {
			t.Fatalf("group %s: leader %q of %d members", g.id, g.leader, len(g.members))
		}
		if g.state == StateEmpty && len(g.members) != 0 {
			t.Fatalf("group %s: Empty with members", g.id)
		}
		g.mu.Unlock()
	}
	if g, m := c.Counts(); g != liveGroups || m != liveMembers {
		t.Fatalf("Counts() = %d groups, %d members; held: %d, %d", g, m, liveGroups, liveMembers)
	}
}

// simClient is a simulated group member for TestGroupRandomOperations: it
// mostly follows the protocol (rejoins with its member id, syncs and
// heartbeats with its generation) and sometimes does not.
type simClient struct {
	group    string
	instance *string
	memberID string
	gen      int32
	leader   bool
	members  []string
	join     chan JoinResult
	sync     chan SyncResult
}

// TestGroupRandomOperations drives simulated clients, random requests and
// time through the coordinator and checks its bookkeeping after every
// step: no panic, no lost member, every parked request answered at most
// once, everything answered in the end.
func TestGroupRandomOperations(t *testing.T) {
	for seed := range uint64(4) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { randomGroupRun(t, seed) })
	}
}

func randomGroupRun(t *testing.T, seed uint64) {
	h := newGroupHarness(t)
	h.c.emptyRetention = 2 * time.Minute
	rng := rand.New(rand.NewPCG(seed, 7))
	groups := []string{"g1", "g2"}
	instances := []string{"i1", "i2", "i3"}
	protos := [][]string{{"range"}, {"range", "roundrobin"}, {"roundrobin", "range"}, {"sticky", "range"}}
	var clients []*simClient
	for i := range 8 {
		c := &simClient{group: groups[i%2]}
		if i < 3 {
			c.instance = &instances[i]
		}
		clients = append(clients, c)
	}
	var allJoins []chan JoinResult
	stable := 0
	for step := range 3000 {
		c := clients[rng.IntN(len(clients))]
		// Collect answers.
		for _, cl := range clients {
			if cl.join != nil {
				if r, ok := pollReply(cl.join); ok {
					cl.join = nil
					switch r.Code {
					case 0:
						cl.memberID, cl.gen, cl.leader = r.MemberID, r.Generation, r.Leader == r.MemberID
						cl.members = cl.members[:0]
						for _, m := range r.Members {
							cl.members = append(cl.members, m.MemberID)
						}
					case kerr.MemberIDRequired.Code:
						cl.memberID = r.MemberID
					case kerr.UnknownMemberID.Code, kerr.FencedInstanceID.Code:
						cl.memberID = ""
					}
				}
			}
			if cl.sync != nil {
				if r, ok := pollReply(cl.sync); ok {
					cl.sync = nil
					if r.Code == 0 {
						stable++
					}
				}
			}
		}
		switch op := rng.IntN(12); {
		case op < 3 && c.join == nil:
			p := joinP(c.group, c.memberID, fmt.Sprint(step), protos[rng.IntN(len(protos))]...)
			p.InstanceID = c.instance
			p.RequireKnownID = rng.IntN(5) != 0
			p.CanSkipAssign = rng.IntN(2) == 0
			c.join = h.joinAsync(p)
			allJoins = append(allJoins, c.join)
		case op < 5 && c.sync == nil:
			var assign map[string][]byte
			if c.leader {
				assign = map[string][]byte{}
				for _, m := range c.members {
					assign[m] = []byte("a-" + m)
				}
			}
			c.sync = make(chan SyncResult, 1)
			h.c.sync(SyncParams{Group: c.group, MemberID: c.memberID, InstanceID: c.instance, Generation: c.gen, Assignments: assign}, c.sync)
		case op < 7:
			if h.c.heartbeat(c.group, c.memberID, c.instance, c.gen) == kerr.UnknownMemberID.Code && c.join == nil {
				c.memberID = ""
			}
		case op == 7:
			if rng.IntN(2) == 0 || c.instance == nil {
				h.c.leave(c.group, []LeaveIdentity{{MemberID: c.memberID, InstanceID: c.instance}})
			}
			c.memberID, c.join, c.sync = "", nil, nil // restart (a static member keeps its instance id)
		case op == 8:
			// Noise: stale or foreign ids and generations.
			other := clients[rng.IntN(len(clients))]
			h.c.heartbeat(c.group, other.memberID, c.instance, int32(rng.IntN(5)))
			h.c.validateCommit(c.group, other.memberID, int32(rng.IntN(5))-1, other.instance)
			ch := make(chan SyncResult, 1)
			h.c.sync(SyncParams{Group: c.group, MemberID: other.memberID, Generation: int32(rng.IntN(5))}, ch)
		case op == 9:
			h.c.deleteGroup(context.Background(), c.group)
			h.c.describe(c.group)
			h.c.list()
			h.c.OffsetDeleteCheck(context.Background(), c.group)
		default:
			h.clk.Advance(time.Duration(rng.IntN(4000)) * time.Millisecond)
		}
		checkGroupInvariants(t, h.c)
	}
	if stable == 0 {
		t.Error("no SyncGroup ever succeeded: the simulation does not exercise the protocol")
	}
	// Everyone leaves; after the timeouts every parked request has had
	// exactly one answer and the groups are forgotten.
	for _, c := range clients {
		h.c.leave(c.group, []LeaveIdentity{{MemberID: c.memberID, InstanceID: c.instance}})
	}
	h.clk.Advance(10 * time.Minute)
	for i, ch := range allJoins {
		if len(ch) > 1 {
			t.Fatalf("join %d answered twice", i)
		}
	}
	checkGroupInvariants(t, h.c)
	for _, c := range clients {
		if c.join != nil && len(c.join) == 0 {
			t.Errorf("a parked join of %s was never answered", c.memberID)
		}
		if c.sync != nil && len(c.sync) == 0 {
			t.Errorf("a parked sync of %s was never answered", c.memberID)
		}
	}
	if l := h.c.list(); len(l) != 0 {
		t.Fatalf("groups left after settling: %+v", l)
	}
}

func TestGroupDeleteErrorCodeIsRetriable(t *testing.T) {
	h := newGroupHarness(t)
	h.c.offsets = &fakeOffsetsDeleter{err: errors.New("unexpected")}
	if code, msg := h.c.deleteGroup(context.Background(), "x"); code != kerr.UnknownServerError.Code || msg == "" {
		t.Fatalf("opaque failure: %d %q", code, msg)
	}
}

// A group taken over from another coordinator (Seed with adopting): the
// previous coordinator's members are told to rejoin, rejoin under their own
// member ids, the first join phase waits for every one that showed up, and
// the new generation continues above the seeded one: one rebalance.
func TestGroupAdoptedAfterMove(t *testing.T) {
	h := newGroupHarness(t)
	if !h.c.Seed("g", 100, true) {
		t.Fatal("seed refused")
	}
	if h.c.Seed("g", 5, true) {
		t.Fatal("second seed accepted")
	}
	wantGroupCode(t, "heartbeat of a previous member", h.c.heartbeat("g", "m-a", nil, 7), kerr.RebalanceInProgress.Code)
	wantGroupCode(t, "commit of a previous member", h.c.validateCommit("g", "m-b", 7, nil), kerr.RebalanceInProgress.Code)
	a := h.joinAsync(joinP("g", "m-a", "a", "range"))
	h.clk.Advance(3 * time.Second) // the initial delay: m-b showed up but has not joined
	if _, ok := pollReply(a); ok {
		t.Fatal("join phase completed without m-b")
	}
	b := h.joinAsync(joinP("g", "m-b", "b", "range"))
	h.clk.Advance(4 * time.Second) // a member joined during the delay: extended once
	ra, rb := mustReply(t, a, "join m-a"), mustReply(t, b, "join m-b")
	if ra.Code != 0 || rb.Code != 0 || ra.MemberID != "m-a" || rb.MemberID != "m-b" || ra.Generation != 101 || len(ra.Members)+len(rb.Members) != 2 {
		t.Fatalf("joins: %+v %+v", ra, rb)
	}
	// After the window an unknown id is unknown again.
	h.clk.Advance(10 * time.Second)
	wantGroupCode(t, "heartbeat after the window", h.c.heartbeat("g", "m-x", nil, 101), kerr.UnknownMemberID.Code)
}

// The gauges follow groups and members as they come and go (joins,
// sessions ending, seeding, Drop, DeleteGroups, Empty groups forgotten)
// without Counts locking anything.
func TestGroupGauges(t *testing.T) {
	h := newGroupHarness(t)
	want := func(what string, groups, members int) {
		t.Helper()
		checkGroupInvariants(t, h.c)
		if g, m := h.c.Counts(); g != groups || m != members {
			t.Fatalf("%s: Counts() = %d, %d; want %d, %d", what, g, m, groups, members)
		}
	}
	want("nothing", 0, 0)
	h.stableGroup("a", 3)
	want("one group of three", 1, 3)
	h.stableGroup("b", 1)
	h.c.Seed("c", 7, true)
	want("seeded", 3, 4)
	h.c.Drop(func(g string) bool { return g == "a" || g == "c" })
	h.c.Drop(func(g string) bool { return g == "a" }) // already gone: counted once
	want("dropped", 1, 1)
	h.clk.Advance(time.Minute) // b's member stops heartbeating
	want("session ended", 1, 0)
	if code, _ := h.c.Delete(context.Background(), "b"); code != 0 {
		t.Fatalf("delete: %d", code)
	}
	want("deleted", 0, 0)
	h.c.validateCommit("simple", "", -1, nil)
	want("simple group", 1, 0)
	h.c.emptyRetention = time.Second
	h.c.validateCommit("simple", "", -1, nil) // re-arms the expiry with the short retention
	h.clk.Advance(2 * time.Second)
	want("empty group forgotten", 0, 0)
}
