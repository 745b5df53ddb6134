package groups

// The join phase of the classic protocol: JoinGroup of new, known and
// static members. The caller holds g.mu (except join, which takes it).

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// join serves a JoinGroup; the answer arrives on reply (one slot), at once
// or when the join phase completes.
func (c *Coordinator) join(p JoinParams, reply chan<- JoinResult) {
	fail := func(code int16) { sendJoin(reply, JoinResult{Code: code, MemberID: p.MemberID, Generation: -1}) }
	if p.Group == "" || len(p.Group) > MaxGroupIDBytes {
		fail(kerr.InvalidGroupID.Code)
		return
	}
	if p.SessionTimeout < c.cfg.MinSessionTimeout || p.SessionTimeout > c.cfg.MaxSessionTimeout {
		fail(kerr.InvalidSessionTimeout.Code)
		return
	}
	if p.RebalanceTimeout <= 0 {
		p.RebalanceTimeout = p.SessionTimeout
	}
	if max := c.cfg.MaxRebalanceTimeout; max > 0 && p.RebalanceTimeout > max {
		p.RebalanceTimeout = max
	}
	g := c.lockGroup(p.Group, p.MemberID == "")
	if g == nil {
		fail(kerr.UnknownMemberID.Code)
		return
	}
	defer g.mu.Unlock()
	if p.MemberID == "" {
		g.joinNewMember(p, reply)
		g.forgetIfUnused() // a refused first join leaves no group behind
	} else {
		g.joinExistingMember(p, reply)
	}
}

func (g *group) joinNewMember(p JoinParams, reply chan<- JoinResult) {
	if !g.supportsProtocols(p.ProtocolType, p.Protocols) {
		sendJoin(reply, JoinResult{Code: kerr.InconsistentGroupProtocol.Code, Generation: -1})
		return
	}
	replacing := false // a known static instance takes its old place
	if p.InstanceID != nil {
		_, replacing = g.static[*p.InstanceID]
	}
	if !replacing && g.full() {
		sendJoin(reply, JoinResult{Code: kerr.GroupMaxSizeReached.Code, Generation: -1})
		return
	}
	if p.InstanceID != nil {
		newID := newMemberID(*p.InstanceID)
		if old, ok := g.static[*p.InstanceID]; ok {
			g.replaceStaticMember(p, old, newID, reply)
			return
		}
		g.addMemberAndRebalance(p, newID, reply)
		return
	}
	newID := newMemberID(p.ClientID)
	if p.RequireKnownID {
		if max := g.c.cfg.MaxPendingMembers; max > 0 && g.c.pendingIDs.Load() >= int64(max) {
			g.c.log.Warn().Str("group_id", g.id).Int("max_pending_members", max).
				Msg("too many pending member ids: JoinGroup answered COORDINATOR_LOAD_IN_PROGRESS")
			sendJoin(reply, JoinResult{Code: kerr.CoordinatorLoadInProgress.Code, Generation: -1})
			return
		}
		t := &groupTimer{}
		g.c.pendingIDs.Add(1)
		g.pending[newID] = t
		g.arm(t, p.SessionTimeout, func() { g.expirePending(newID) })
		g.c.log.Debug().Str("group_id", g.id).Str("member_id", newID).Msg("member id required: new member must rejoin with it")
		sendJoin(reply, JoinResult{Code: kerr.MemberIDRequired.Code, MemberID: newID, Generation: -1})
		return
	}
	g.addMemberAndRebalance(p, newID, reply)
}

func (g *group) joinExistingMember(p JoinParams, reply chan<- JoinResult) {
	fail := func(code int16) { sendJoin(reply, JoinResult{Code: code, MemberID: p.MemberID, Generation: -1}) }
	if !g.supportsProtocols(p.ProtocolType, p.Protocols) {
		fail(kerr.InconsistentGroupProtocol.Code)
		return
	}
	if g.adoptingNow() && g.members[p.MemberID] == nil && (p.InstanceID == nil || g.static[*p.InstanceID] == "") {
		g.adoptSeen[p.MemberID] = struct{}{}
		// The group moved here from another coordinator: a member of the
		// previous coordinator rejoins under its member id (and instance
		// id), so cooperative members keep their partitions.
		if g.full() {
			fail(kerr.GroupMaxSizeReached.Code)
			return
		}
		g.addMemberAndRebalance(p, p.MemberID, reply)
		return
	}
	if g.pending[p.MemberID] != nil {
		if p.InstanceID != nil {
			// Pending ids are only handed to dynamic members.
			fail(kerr.UnknownMemberID.Code)
			return
		}
		if g.full() {
			fail(kerr.GroupMaxSizeReached.Code)
			return
		}
		g.addMemberAndRebalance(p, p.MemberID, reply)
		return
	}
	if code := g.validateMember(p.MemberID, p.InstanceID); code != 0 {
		fail(code)
		return
	}
	m := g.members[p.MemberID]
	switch g.state {
	case StatePreparingRebalance:
		g.updateMember(m, p, reply)
		g.maybePrepareRebalanceOrCompleteJoin("member rejoined during rebalance")
	case StateCompletingRebalance:
		if m.sameProtocols(p.Protocols) {
			// The member lost its JoinGroup answer: give it again.
			sendJoin(reply, g.joinAnswer(m.id, m.id == g.leader, g.leader, false))
			return
		}
		g.updateMember(m, p, reply)
		g.maybePrepareRebalanceOrCompleteJoin("member metadata changed during rebalance")
	case StateStable:
		if m.id == g.leader || !m.sameProtocols(p.Protocols) {
			reason := "member metadata changed"
			if m.id == g.leader {
				reason = "leader rejoined"
			}
			g.updateMember(m, p, reply)
			g.maybePrepareRebalanceOrCompleteJoin(reason)
			return
		}
		sendJoin(reply, g.joinAnswer(m.id, false, g.leader, false))
	default:
		fail(kerr.UnknownMemberID.Code)
	}
}

func (g *group) addMemberAndRebalance(p JoinParams, id string, reply chan<- JoinResult) {
	m := &member{
		id:               id,
		instanceID:       p.InstanceID,
		clientID:         p.ClientID,
		clientHost:       p.ClientHost,
		sessionTimeout:   p.SessionTimeout,
		rebalanceTimeout: p.RebalanceTimeout,
		protocolType:     p.ProtocolType,
		protocols:        p.Protocols,
		isNew:            true,
	}
	if g.state == StatePreparingRebalance && g.prevState == StateEmpty {
		g.newMemberAdd = true
	}
	g.add(m, reply)
	// A new member cannot heartbeat while its JoinGroup is parked; bound
	// the wait instead.
	g.armHeartbeat(m, newMemberJoinTimeout)
	ev := g.logInfo().Str("member_id", id).Str("state", g.state.String())
	if p.InstanceID != nil {
		ev = ev.Str("group_instance_id", *p.InstanceID)
	}
	ev.Str("reason", p.Reason).Msg("member joined the group")
	g.maybePrepareRebalanceOrCompleteJoin("new member joined")
}

// replaceStaticMember gives a known group.instance.id a new member id; the
// old id's parked requests are answered FENCED_INSTANCE_ID.
func (g *group) replaceStaticMember(p JoinParams, oldID, newID string, reply chan<- JoinResult) {
	old := g.members[oldID]
	if old == nil {
		// The static map and the members disagree: should not happen;
		// treat it as a new static member.
		delete(g.static, *p.InstanceID)
		g.addMemberAndRebalance(p, newID, reply)
		return
	}
	prevLeader := g.leader
	g.completeJoin(old, JoinResult{Code: kerr.FencedInstanceID.Code, MemberID: oldID, Generation: -1})
	if old.syncWait != nil {
		sendSync(old.syncWait, SyncResult{Code: kerr.FencedInstanceID.Code})
		old.syncWait = nil
	}
	g.disarm(&old.hb)
	nm := &member{
		id:               newID,
		instanceID:       old.instanceID,
		clientID:         old.clientID,
		clientHost:       old.clientHost,
		sessionTimeout:   old.sessionTimeout,
		rebalanceTimeout: old.rebalanceTimeout,
		protocolType:     old.protocolType,
		protocols:        old.protocols,
		assignment:       old.assignment,
	}
	delete(g.members, oldID)
	g.members[newID] = nm
	if i := slices.Index(g.order, oldID); i >= 0 {
		g.order[i] = newID
	}
	if _, ok := g.pendingSync[oldID]; ok {
		delete(g.pendingSync, oldID)
		g.pendingSync[newID] = struct{}{}
	}
	if g.leader == oldID {
		g.leader = newID
	}
	g.static[*p.InstanceID] = newID
	g.armHeartbeat(nm, nm.sessionTimeout)
	g.logInfo().Str("member_id", newID).Str("old_member_id", oldID).Str("group_instance_id", *p.InstanceID).
		Str("state", g.state.String()).Msg("static member rejoined with a new member id")

	g.updateMember(nm, p, reply)
	switch g.state {
	case StateStable:
		if g.selectProtocol() != g.protocol {
			g.maybePrepareRebalanceOrCompleteJoin("static member rejoined with other protocols")
			return
		}
		// Same protocol: no rebalance; the member gets the current
		// generation and, through SyncGroup, its previous assignment.
		var r JoinResult
		if p.CanSkipAssign {
			lead := newID == g.leader
			r = g.joinAnswer(newID, lead, g.leader, lead)
		} else {
			// Older clients would run the assignor if named leader: name
			// the previous leader id, so this member acts as a follower.
			r = g.joinAnswer(newID, false, prevLeader, false)
		}
		g.completeJoin(nm, r)
	case StateCompletingRebalance:
		// The leader may have assigned to the old id: start over.
		g.prepareRebalance("static member rejoined during rebalance")
	default:
		g.maybeCompleteJoinPhase()
	}
}

// updateMember records a rejoining member's protocols and timeouts and
// parks its JoinGroup (reply) or clears the parked one (nil).
func (g *group) updateMember(m *member, p JoinParams, reply chan<- JoinResult) {
	g.countVotes(m, -1)
	m.protocols = p.Protocols
	g.countVotes(m, 1)
	m.rebalanceTimeout = p.RebalanceTimeout
	m.sessionTimeout = p.SessionTimeout
	switch {
	case m.joinWait != nil && reply != nil:
		// A newer JoinGroup of the same member supersedes the parked one.
		sendJoin(m.joinWait, JoinResult{Code: kerr.RebalanceInProgress.Code, MemberID: m.id, Generation: -1})
	case m.joinWait == nil && reply != nil:
		g.awaitingJoin++
	case m.joinWait != nil && reply == nil:
		g.awaitingJoin--
	}
	m.joinWait = reply
}

// completeJoin answers a member's parked JoinGroup, if any.
func (g *group) completeJoin(m *member, r JoinResult) bool {
	if m.joinWait == nil {
		return false
	}
	sendJoin(m.joinWait, r)
	m.joinWait = nil
	g.awaitingJoin--
	return true
}

// joinAnswer is a successful JoinGroup answer for the current generation;
// withMembers adds the member list (the leader's answer).
func (g *group) joinAnswer(memberID string, withMembers bool, leader string, skip bool) JoinResult {
	r := JoinResult{
		MemberID:     memberID,
		Generation:   g.generation,
		HasProtocol:  true,
		ProtocolType: g.protocolType,
		Protocol:     g.protocol,
		Leader:       leader,
		SkipAssign:   skip,
	}
	if withMembers {
		r.Members = make([]JoinMember, 0, len(g.order))
		for _, id := range g.order {
			m := g.members[id]
			r.Members = append(r.Members, JoinMember{MemberID: m.id, InstanceID: m.instanceID, Metadata: m.metadataFor(g.protocol)})
		}
	}
	return r
}
