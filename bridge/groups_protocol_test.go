package bridge_test

import (
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Integration tests of the group coordinator APIs over the whole stack with
// raw requests at chosen versions (FindCoordinator 10, JoinGroup 11,
// Heartbeat 12, LeaveGroup 13, SyncGroup 14, DescribeGroups 15, ListGroups
// 16, DeleteGroups 42).

// grpStack starts a stack with a short initial rebalance delay and short
// session timeouts allowed.
func grpStack(t *testing.T) *stack {
	return startStack(t, func(o *stackOpts) {
		o.bridge.Groups.InitialRebalanceDelay = 30 * time.Millisecond
		o.bridge.Groups.MinSessionTimeout = 300 * time.Millisecond
	})
}

func grpStr(s string) *string { return &s }

// grpJoinReq builds a JoinGroup of protocol type "consumer" with one
// protocol "range" whose metadata is meta.
func grpJoinReq(group, member string, instance *string, session time.Duration, meta string) *kmsg.JoinGroupRequest {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Group = group
	req.MemberID = member
	req.InstanceID = instance
	req.SessionTimeoutMillis = int32(session / time.Millisecond)
	req.RebalanceTimeoutMillis = 5000
	req.ProtocolType = "consumer"
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name = "range"
	p.Metadata = []byte(meta)
	req.Protocols = append(req.Protocols, p)
	return req
}

// grpJoin joins at version v, doing the KIP-394 round trip when the
// version asks for it, and returns the (first successful) answer.
func grpJoin(t *testing.T, rk *rawKafka, v int16, req *kmsg.JoinGroupRequest) *kmsg.JoinGroupResponse {
	t.Helper()
	resp := rk.do(req, v).(*kmsg.JoinGroupResponse)
	if resp.ErrorCode == kerr.MemberIDRequired.Code {
		if v < 4 || req.InstanceID != nil || resp.MemberID == "" {
			t.Fatalf("v%d: MEMBER_ID_REQUIRED %+v", v, resp)
		}
		req.MemberID = resp.MemberID
		resp = rk.do(req, v).(*kmsg.JoinGroupResponse)
	} else if v >= 4 && req.MemberID == "" && req.InstanceID == nil {
		t.Fatalf("v%d: first join answered %d, want MEMBER_ID_REQUIRED", v, resp.ErrorCode)
	}
	return resp
}

func grpSync(rk *rawKafka, v int16, group, member string, gen int32, assign map[string]string) *kmsg.SyncGroupResponse {
	req := kmsg.NewPtrSyncGroupRequest()
	req.Group, req.MemberID, req.Generation = group, member, gen
	for id, a := range assign {
		ga := kmsg.NewSyncGroupRequestGroupAssignment()
		ga.MemberID, ga.MemberAssignment = id, []byte(a)
		req.GroupAssignment = append(req.GroupAssignment, ga)
	}
	if v >= 5 {
		req.ProtocolType, req.Protocol = grpStr("consumer"), grpStr("range")
	}
	return rk.do(req, v).(*kmsg.SyncGroupResponse)
}

func grpHeartbeat(rk *rawKafka, v int16, group, member string, gen int32, instance *string) int16 {
	req := kmsg.NewPtrHeartbeatRequest()
	req.Group, req.MemberID, req.Generation, req.InstanceID = group, member, gen, instance
	return rk.do(req, v).(*kmsg.HeartbeatResponse).ErrorCode
}

func grpDescribe(rk *rawKafka, v int16, groups ...string) *kmsg.DescribeGroupsResponse {
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Groups = groups
	req.IncludeAuthorizedOperations = v >= 3
	return rk.do(req, v).(*kmsg.DescribeGroupsResponse)
}

func grpList(rk *rawKafka, v int16, states, types []string) map[string]kmsg.ListGroupsResponseGroup {
	req := kmsg.NewPtrListGroupsRequest()
	req.StatesFilter, req.TypesFilter = states, types
	resp := rk.do(req, v).(*kmsg.ListGroupsResponse)
	out := map[string]kmsg.ListGroupsResponseGroup{}
	for _, g := range resp.Groups {
		out[g.Group] = g
	}
	return out
}

func grpLeave(rk *rawKafka, v int16, group, member string, instance *string) *kmsg.LeaveGroupResponse {
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Group = group
	if v < 3 {
		req.MemberID = member
	} else {
		m := kmsg.NewLeaveGroupRequestMember()
		m.MemberID, m.InstanceID = member, instance
		req.Members = append(req.Members, m)
	}
	return rk.do(req, v).(*kmsg.LeaveGroupResponse)
}

func grpDelete(rk *rawKafka, v int16, groups ...string) *kmsg.DeleteGroupsResponse {
	req := kmsg.NewPtrDeleteGroupsRequest()
	req.Groups = groups
	return rk.do(req, v).(*kmsg.DeleteGroupsResponse)
}

func TestGroupsFindCoordinatorIsSelf(t *testing.T) {
	s := grpStack(t)
	rk := dialRaw(t, s.Addr)
	host, port, _ := net.SplitHostPort(s.Addr)
	p, _ := strconv.Atoi(port)
	for v := int16(0); v <= 6; v++ {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorKey = "grp"
		req.CoordinatorKeys = []string{"grp-a", "grp-b"}
		resp := rk.do(req, v).(*kmsg.FindCoordinatorResponse)
		if v < 4 {
			if resp.ErrorCode != 0 || resp.NodeID != 0 || resp.Host != host || resp.Port != int32(p) {
				t.Errorf("v%d: %+v", v, resp)
			}
			continue
		}
		if len(resp.Coordinators) != 2 {
			t.Fatalf("v%d: %+v", v, resp)
		}
		for i, c := range resp.Coordinators {
			if c.Key != req.CoordinatorKeys[i] || c.ErrorCode != 0 || c.NodeID != 0 || c.Host != host || c.Port != int32(p) {
				t.Errorf("v%d key %d: %+v", v, i, c)
			}
		}
	}
	txn := kmsg.NewPtrFindCoordinatorRequest()
	txn.CoordinatorType = 1
	txn.CoordinatorKeys = []string{"txn"}
	if c := rk.do(txn, 4).(*kmsg.FindCoordinatorResponse).Coordinators[0]; c.ErrorCode != 0 || c.NodeID != 0 || c.Host != host || c.Port != int32(p) {
		t.Errorf("transaction key: %+v", c)
	}
}

// TestGroupsEveryVersion runs one member through a whole group life at
// every version of every coordinator API.
func TestGroupsEveryVersion(t *testing.T) {
	s := grpStack(t)
	rk := dialRaw(t, s.Addr)
	for v := int16(0); v <= 9; v++ {
		group := fmt.Sprint("ver-", v)
		jr := grpJoinReq(group, "", nil, 10*time.Second, "meta")
		join := grpJoin(t, rk, v, jr)
		if join.ErrorCode != 0 || join.Generation != 1 || join.LeaderID != join.MemberID || join.MemberID == "" ||
			len(join.Members) != 1 || string(join.Members[0].ProtocolMetadata) != "meta" || join.Protocol == nil || *join.Protocol != "range" {
			t.Fatalf("join v%d: %+v", v, join)
		}
		if v >= 7 && (join.ProtocolType == nil || *join.ProtocolType != "consumer") {
			t.Errorf("join v%d protocol type %v", v, join.ProtocolType)
		}
		me := join.MemberID

		sv := v % 6
		sync := grpSync(rk, sv, group, me, 1, map[string]string{me: "assign"})
		if sync.ErrorCode != 0 || string(sync.MemberAssignment) != "assign" {
			t.Fatalf("sync v%d: %+v", sv, sync)
		}
		if sv >= 5 && (sync.Protocol == nil || *sync.Protocol != "range") {
			t.Errorf("sync v%d protocol %v", sv, sync.Protocol)
		}
		if code := grpHeartbeat(rk, v%5, group, me, 1, nil); code != 0 {
			t.Errorf("heartbeat v%d: %d", v%5, code)
		}
		if code := grpHeartbeat(rk, v%5, group, me, 2, nil); code != kerr.IllegalGeneration.Code {
			t.Errorf("heartbeat v%d wrong generation: %d", v%5, code)
		}

		dv := v % 7
		d := grpDescribe(rk, dv, group)
		if len(d.Groups) != 1 || d.Groups[0].State != "Stable" || d.Groups[0].Protocol != "range" || d.Groups[0].ProtocolType != "consumer" ||
			len(d.Groups[0].Members) != 1 || string(d.Groups[0].Members[0].MemberAssignment) != "assign" ||
			d.Groups[0].Members[0].ClientID != "raw" || d.Groups[0].Members[0].ClientHost == "" {
			t.Fatalf("describe v%d: %+v", dv, d)
		}
		if dv >= 3 && d.Groups[0].AuthorizedOperations != 328 {
			t.Errorf("describe v%d authorized operations %d", dv, d.Groups[0].AuthorizedOperations)
		}

		lv := v % 6
		if l := grpList(rk, lv, nil, nil); l[group].ProtocolType != "consumer" {
			t.Errorf("list v%d: %+v", lv, l)
		} else if lv >= 4 && l[group].GroupState != "Stable" {
			t.Errorf("list v%d state %q", lv, l[group].GroupState)
		} else if lv >= 5 && l[group].GroupType != "classic" {
			t.Errorf("list v%d type %q", lv, l[group].GroupType)
		}
		if lv >= 4 {
			if _, ok := grpList(rk, lv, []string{" stable"}, nil)[group]; !ok {
				t.Errorf("list v%d: state filter stable misses the group", lv)
			}
			if _, ok := grpList(rk, lv, []string{"Empty"}, nil)[group]; ok {
				t.Errorf("list v%d: state filter Empty lists a stable group", lv)
			}
		}
		if lv >= 5 {
			if _, ok := grpList(rk, lv, nil, []string{"Classic"})[group]; !ok {
				t.Errorf("list v%d: type filter classic misses the group", lv)
			}
			if l := grpList(rk, lv, nil, []string{"consumer"}); len(l) != 0 {
				t.Errorf("list v%d: type filter consumer lists %v", lv, l)
			}
		}

		gv := v % 4
		if del := grpDelete(rk, gv, group); del.Groups[0].ErrorCode != kerr.NonEmptyGroup.Code {
			t.Errorf("delete v%d of a stable group: %+v", gv, del.Groups[0])
		}
		lev := v % 6
		leave := grpLeave(rk, lev, group, me, nil)
		if leave.ErrorCode != 0 || (lev >= 3 && (len(leave.Members) != 1 || leave.Members[0].ErrorCode != 0)) {
			t.Fatalf("leave v%d: %+v", lev, leave)
		}
		if l := grpList(rk, 4, []string{"empty"}, nil); l[group].GroupState != "Empty" {
			t.Errorf("after leave: %+v", l[group])
		}
		if leave := grpLeave(rk, lev, group, me, nil); (lev < 3 && leave.ErrorCode != kerr.UnknownMemberID.Code) ||
			(lev >= 3 && leave.Members[0].ErrorCode != kerr.UnknownMemberID.Code) {
			t.Errorf("second leave v%d: %+v", lev, leave)
		}
		if del := grpDelete(rk, gv, group); del.Groups[0].ErrorCode != 0 || del.Groups[0].Group != group {
			t.Errorf("delete v%d: %+v", gv, del.Groups[0])
		}
		d = grpDescribe(rk, dv, group)
		if d.Groups[0].State != "Dead" || (dv >= 6) != (d.Groups[0].ErrorCode == kerr.GroupIDNotFound.Code) {
			t.Errorf("describe v%d after delete: %+v", dv, d.Groups[0])
		}
		if del := grpDelete(rk, gv, group); del.Groups[0].ErrorCode != kerr.GroupIDNotFound.Code || (gv >= 3) != (del.Groups[0].ErrorMessage != nil) {
			t.Errorf("delete v%d of a deleted group: %+v", gv, del.Groups[0])
		}
	}
}

// grpSyncReq builds a SyncGroup v5 request.
func grpSyncReq(group, member string, gen int32, instance *string, assign map[string]string) *kmsg.SyncGroupRequest {
	req := kmsg.NewPtrSyncGroupRequest()
	req.Group, req.MemberID, req.Generation, req.InstanceID = group, member, gen, instance
	req.ProtocolType, req.Protocol = grpStr("consumer"), grpStr("range")
	for id, a := range assign {
		ga := kmsg.NewSyncGroupRequestGroupAssignment()
		ga.MemberID, ga.MemberAssignment = id, []byte(a)
		req.GroupAssignment = append(req.GroupAssignment, ga)
	}
	return req
}

// TestGroupsRebalanceOverTheWire: parked JoinGroup and SyncGroup requests
// over real connections, and a session that really expires.
func TestGroupsRebalanceOverTheWire(t *testing.T) {
	s := grpStack(t)
	ra, rb := dialRaw(t, s.Addr), dialRaw(t, s.Addr)
	const g = "wire"
	a := grpJoin(t, ra, 9, grpJoinReq(g, "", nil, 10*time.Second, "a"))
	if sync := grpSync(ra, 5, g, a.MemberID, 1, map[string]string{a.MemberID: "A1"}); sync.ErrorCode != 0 {
		t.Fatalf("a sync %+v", sync)
	}

	// b joins: its JoinGroup parks until a rejoins.
	jb := grpJoinReq(g, "", nil, 800*time.Millisecond, "b")
	first := rb.do(jb, 9).(*kmsg.JoinGroupResponse)
	if first.ErrorCode != kerr.MemberIDRequired.Code {
		t.Fatalf("b first join %+v", first)
	}
	jb.MemberID = first.MemberID
	corrB := rb.send(jb, 9)
	deadline := time.Now().Add(5 * time.Second)
	for grpHeartbeat(ra, 4, g, a.MemberID, 1, nil) != kerr.RebalanceInProgress.Code {
		if time.Now().After(deadline) {
			t.Fatal("a never saw the rebalance")
		}
		time.Sleep(10 * time.Millisecond)
	}
	a2 := ra.do(grpJoinReq(g, a.MemberID, nil, 10*time.Second, "a"), 9).(*kmsg.JoinGroupResponse)
	b2 := kmsg.NewPtrJoinGroupResponse()
	b2.SetVersion(9)
	rb.read(b2, corrB, 10*time.Second)
	if a2.ErrorCode != 0 || b2.ErrorCode != 0 || a2.Generation != 2 || b2.Generation != 2 || a2.LeaderID != a.MemberID ||
		len(a2.Members) != 2 || len(b2.Members) != 0 || b2.MemberID != first.MemberID {
		t.Fatalf("rejoin:\na %+v\nb %+v", a2, b2)
	}

	// b's SyncGroup parks until the leader's brings the assignments.
	corrSB := rb.send(grpSyncReq(g, b2.MemberID, 2, nil, nil), 5)
	if sa := grpSync(ra, 5, g, a.MemberID, 2, map[string]string{a.MemberID: "A2", b2.MemberID: "B2"}); sa.ErrorCode != 0 || string(sa.MemberAssignment) != "A2" {
		t.Fatalf("a sync %+v", sa)
	}
	sb := kmsg.NewPtrSyncGroupResponse()
	sb.SetVersion(5)
	rb.read(sb, corrSB, 10*time.Second)
	if sb.ErrorCode != 0 || string(sb.MemberAssignment) != "B2" {
		t.Fatalf("b sync %+v", sb)
	}

	// b falls silent: after its 800ms session a sees a rebalance and ends
	// up alone in generation 3.
	start := time.Now()
	deadline = start.Add(10 * time.Second)
	for grpHeartbeat(ra, 4, g, a.MemberID, 2, nil) != kerr.RebalanceInProgress.Code {
		if time.Now().After(deadline) {
			t.Fatal("b's session never expired")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if waited := time.Since(start); waited < 700*time.Millisecond {
		t.Errorf("b removed after %v, before its session timeout", waited)
	}
	a3 := ra.do(grpJoinReq(g, a.MemberID, nil, 10*time.Second, "a"), 9).(*kmsg.JoinGroupResponse)
	if a3.ErrorCode != 0 || a3.Generation != 3 || len(a3.Members) != 1 {
		t.Fatalf("a alone %+v", a3)
	}
	if code := grpHeartbeat(rb, 4, g, b2.MemberID, 2, nil); code != kerr.UnknownMemberID.Code {
		t.Errorf("b after expiry: %d", code)
	}
}

// TestGroupsStaticRestartOverTheWire: a static member's new process gets
// the current generation and its assignment back; the old process is
// fenced.
func TestGroupsStaticRestartOverTheWire(t *testing.T) {
	s := grpStack(t)
	ra, rb := dialRaw(t, s.Addr), dialRaw(t, s.Addr)
	const g = "static-wire"
	ia, ib := grpStr("inst-a"), grpStr("inst-b")
	corrA := ra.send(grpJoinReq(g, "", ia, 10*time.Second, "a"), 5)
	corrB := rb.send(grpJoinReq(g, "", ib, 10*time.Second, "b"), 5)
	a, b := kmsg.NewPtrJoinGroupResponse(), kmsg.NewPtrJoinGroupResponse()
	a.SetVersion(5)
	b.SetVersion(5)
	ra.read(a, corrA, 10*time.Second)
	rb.read(b, corrB, 10*time.Second)
	if a.ErrorCode != 0 || b.ErrorCode != 0 || a.Generation != 1 || b.Generation != 1 {
		t.Fatalf("static joins:\na %+v\nb %+v", a, b)
	}
	leader, follower, lr, fr, li, fi := a, b, ra, rb, ia, ib
	if b.LeaderID == b.MemberID {
		leader, follower, lr, fr, li, fi = b, a, rb, ra, ib, ia
	}
	corrF := fr.send(grpSyncReq(g, follower.MemberID, 1, fi, nil), 5)
	if sl := lr.do(grpSyncReq(g, leader.MemberID, 1, li, map[string]string{leader.MemberID: "L", follower.MemberID: "F"}), 5).(*kmsg.SyncGroupResponse); sl.ErrorCode != 0 {
		t.Fatalf("leader sync %+v", sl)
	}
	sf := kmsg.NewPtrSyncGroupResponse()
	sf.SetVersion(5)
	fr.read(sf, corrF, 10*time.Second)

	// The follower's process restarts (new connection, no member id).
	rn := dialRaw(t, s.Addr)
	n := rn.do(grpJoinReq(g, "", fi, 10*time.Second, string(fr.conn.LocalAddr().String())), 5).(*kmsg.JoinGroupResponse)
	if n.ErrorCode != 0 || n.Generation != 1 || n.MemberID == follower.MemberID || n.LeaderID != leader.MemberID {
		t.Fatalf("restarted join %+v", n)
	}
	if ns := rn.do(grpSyncReq(g, n.MemberID, 1, fi, nil), 5).(*kmsg.SyncGroupResponse); ns.ErrorCode != 0 || string(ns.MemberAssignment) != "F" {
		t.Fatalf("restarted sync %+v", ns)
	}
	if code := grpHeartbeat(fr, 4, g, follower.MemberID, 1, fi); code != kerr.FencedInstanceID.Code {
		t.Errorf("old process heartbeat: %d", code)
	}
	if code := grpHeartbeat(lr, 4, g, leader.MemberID, 1, li); code != 0 {
		t.Errorf("leader heartbeat after the restart: %d (a rebalance?)", code)
	}
	d := grpDescribe(rn, 5, g).Groups[0]
	if d.State != "Stable" || len(d.Members) != 2 {
		t.Fatalf("describe %+v", d)
	}
	for _, m := range d.Members {
		if m.InstanceID == nil {
			t.Errorf("member %s without instance id", m.MemberID)
		}
	}
	// An operator removes the static member by instance id alone.
	if l := grpLeave(rn, 5, g, "", fi); l.ErrorCode != 0 || l.Members[0].ErrorCode != 0 {
		t.Fatalf("leave by instance id %+v", l)
	}
	if code := grpHeartbeat(lr, 4, g, leader.MemberID, 1, li); code != kerr.RebalanceInProgress.Code {
		t.Errorf("leader heartbeat after the static member left: %d", code)
	}
}

// A JoinGroup parked for a rebalance answers NOT_COORDINATOR as soon as the
// instance drains, instead of holding the drain until its rebalance
// timeout.
func TestDrainAnswersParkedJoinGroup(t *testing.T) {
	s := startStack(t, func(o *stackOpts) {
		o.bridge.Groups.InitialRebalanceDelay = 0
		o.bridge.Groups.MinSessionTimeout = 300 * time.Millisecond
	})
	first, second := dialRaw(t, s.Addr), dialRaw(t, s.Addr)
	if r := first.do(grpJoinReq("drain-g", "", nil, 10*time.Second, "m"), 3).(*kmsg.JoinGroupResponse); r.ErrorCode != 0 {
		t.Fatalf("first join: %+v", r)
	}
	// A second member makes the group rebalance: its JoinGroup parks until
	// the first member rejoins, which it never does (rebalance timeout 5 s).
	corr := second.send(grpJoinReq("drain-g", "", nil, 10*time.Second, "m"), 3)
	s.Bridge.Drain()
	jr := kmsg.NewPtrJoinGroupResponse()
	jr.SetVersion(3)
	second.read(jr, corr, 3*time.Second) // an answer well before the rebalance timeout
	if jr.ErrorCode != kerr.NotCoordinator.Code {
		t.Errorf("parked JoinGroup after Drain: %v, want NOT_COORDINATOR", kerr.ErrorForCode(jr.ErrorCode))
	}
}

// groups.max_size (Kafka's group.max.size): a new member of a full group
// gets GROUP_MAX_SIZE_REACHED, before and after the KIP-394 member id
// round trip; the members in it keep their places.
func TestGroupMaxSize(t *testing.T) {
	s := startStack(t, func(o *stackOpts) {
		o.bridge.Groups.InitialRebalanceDelay = 0
		o.bridge.Groups.MinSessionTimeout = 300 * time.Millisecond
		o.bridge.Groups.MaxSize = 1
	})
	first, second := dialRaw(t, s.Addr), dialRaw(t, s.Addr)
	r := grpJoin(t, first, 5, grpJoinReq("full-g", "", nil, 10*time.Second, "m"))
	if r.ErrorCode != 0 {
		t.Fatalf("first join: %+v", r)
	}
	for _, v := range []int16{3, 5} { // v3: no member id round trip; v5: KIP-394
		if got := second.do(grpJoinReq("full-g", "", nil, 10*time.Second, "m"), v).(*kmsg.JoinGroupResponse); got.ErrorCode != kerr.GroupMaxSizeReached.Code {
			t.Errorf("v%d: second member: %v, want GROUP_MAX_SIZE_REACHED", v, kerr.ErrorForCode(got.ErrorCode))
		}
	}
	if code := grpHeartbeat(first, 3, "full-g", r.MemberID, r.Generation, nil); code != 0 {
		t.Errorf("the member in the group: heartbeat %v", kerr.ErrorForCode(code))
	}
}
