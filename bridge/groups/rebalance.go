package groups

// Rebalances: preparing one, completing the join phase, and the sync phase
// (SyncGroup, the leader's assignment, members that never sync). The
// caller holds g.mu (except sync, which takes it).

import (
	"slices"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// maybePrepareRebalanceOrCompleteJoin starts a rebalance when the group may
// start one, or else tries to finish the running join phase.
func (g *group) maybePrepareRebalanceOrCompleteJoin(reason string) {
	switch g.state {
	case StateStable, StateCompletingRebalance, StateEmpty:
		g.prepareRebalance(reason)
	default:
		g.maybeCompleteJoinPhase()
	}
}

// maybeCompleteJoinPhase finishes the join phase once every member has
// rejoined (never during the initial delay).
func (g *group) maybeCompleteJoinPhase() {
	if g.state == StatePreparingRebalance && g.prevState != StateEmpty && g.allJoined() {
		g.completeJoinPhase()
	}
}

func (g *group) allJoined() bool {
	return len(g.members) == g.awaitingJoin && len(g.pending) == 0
}

// rebalanceTimeout is the largest rebalance timeout of the members.
func (g *group) rebalanceTimeout() time.Duration {
	var d time.Duration
	for _, m := range g.members {
		d = max(d, m.rebalanceTimeout)
	}
	return d
}

// prepareRebalance moves the group to PreparingRebalance: parked SyncGroups
// are answered REBALANCE_IN_PROGRESS, and the join phase ends when all
// members rejoined or the rebalance timeout passes (an Empty group waits
// the initial delay first).
func (g *group) prepareRebalance(reason string) {
	if g.state == StateCompletingRebalance {
		for _, m := range g.members {
			m.assignment = nil
		}
		g.propagate(kerr.RebalanceInProgress.Code)
	}
	clear(g.pendingSync)
	g.disarm(&g.syncTimer)
	initial := g.state == StateEmpty
	if initial {
		delay := g.c.cfg.InitialRebalanceDelay
		remaining := max(g.rebalanceTimeout()-delay, 0)
		g.arm(&g.joinTimer, delay, func() { g.initialDelayPassed(delay, remaining) })
	}
	g.transition(StatePreparingRebalance)
	g.logInfo().Str("reason", reason).Int("members", len(g.members)).Msg("preparing to rebalance group")
	if initial {
		return
	}
	if g.allJoined() {
		g.completeJoinPhase()
		return
	}
	g.arm(&g.joinTimer, g.rebalanceTimeout(), g.completeJoinPhase)
}

// initialDelayPassed extends the initial delay while new members keep
// joining and the largest rebalance timeout allows it.
func (g *group) initialDelayPassed(delay, remaining time.Duration) {
	if g.state != StatePreparingRebalance {
		return
	}
	if g.adoptingNow() && g.adoptMissing() {
		// Members of the previous coordinator are still on their way.
		g.arm(&g.joinTimer, adoptionPoll, func() { g.initialDelayPassed(delay, remaining) })
		return
	}
	if g.newMemberAdd && remaining > 0 {
		g.newMemberAdd = false
		next := min(g.c.cfg.InitialRebalanceDelay, remaining)
		left := max(remaining-delay, 0)
		g.arm(&g.joinTimer, next, func() { g.initialDelayPassed(next, left) })
		return
	}
	g.completeJoinPhase()
}

// completeJoinPhase ends the join phase: dynamic members that did not
// rejoin are dropped, the generation advances, the protocol is chosen and
// every parked JoinGroup is answered (the leader's with the member list).
func (g *group) completeJoinPhase() {
	if g.state != StatePreparingRebalance {
		return
	}
	g.disarm(&g.joinTimer)
	var dropped []string
	for _, id := range slices.Clone(g.order) {
		if m := g.members[id]; m.joinWait == nil && !m.static() {
			g.remove(id)
			dropped = append(dropped, id)
		}
	}
	if len(dropped) > 0 {
		g.logInfo().Strs("member_ids", dropped).Msg("removed members that did not rejoin")
	}
	if !g.electJoinedLeader() && len(g.members) > 0 {
		// Nobody rejoined (only absent static members are left): wait for
		// their sessions to end.
		g.arm(&g.joinTimer, g.rebalanceTimeout(), g.completeJoinPhase)
		return
	}
	g.generation++
	if h := g.c.genHook; h != nil {
		h(g.id, g.generation)
	}
	if len(g.members) == 0 {
		g.protocol = ""
		g.computeSubscribed()
		g.transition(StateEmpty)
		clear(g.pendingSync)
		g.logInfo().Msg("group is empty")
		return
	}
	g.protocol = g.selectProtocol()
	g.computeSubscribed()
	g.transition(StateCompletingRebalance)
	clear(g.pendingSync)
	g.logInfo().Int("members", len(g.members)).Str("protocol", g.protocol).Str("leader", g.leader).
		Msg("join phase complete, awaiting assignment")
	for _, id := range g.order {
		m := g.members[id]
		g.completeJoin(m, g.joinAnswer(m.id, m.id == g.leader, g.leader, false))
		g.armHeartbeat(m, m.sessionTimeout)
		m.isNew = false
		g.pendingSync[m.id] = struct{}{}
	}
	gen := g.generation
	g.arm(&g.syncTimer, g.rebalanceTimeout(), func() { g.syncTimedOut(gen) })
}

// electJoinedLeader keeps the leader if it rejoined, else picks the first
// member that did; false when nobody rejoined.
func (g *group) electJoinedLeader() bool {
	l := g.members[g.leader]
	if l == nil {
		return false
	}
	if l.joinWait != nil {
		return true
	}
	for _, id := range g.order {
		if g.members[id].joinWait != nil {
			g.leader = id
			return true
		}
	}
	return false
}

// sync serves a SyncGroup; the answer arrives on reply.
func (c *Coordinator) sync(p SyncParams, reply chan<- SyncResult) {
	fail := func(code int16) { sendSync(reply, SyncResult{Code: code}) }
	if p.Group == "" {
		fail(kerr.InvalidGroupID.Code)
		return
	}
	g := c.lockGroup(p.Group, false)
	if g == nil {
		fail(kerr.UnknownMemberID.Code)
		return
	}
	defer g.mu.Unlock()
	if g.state == StateEmpty {
		fail(kerr.UnknownMemberID.Code)
		return
	}
	if code := g.validateMember(p.MemberID, p.InstanceID); code != 0 {
		fail(code)
		return
	}
	if p.Generation != g.generation {
		fail(kerr.IllegalGeneration.Code)
		return
	}
	if (p.ProtocolType != nil && *p.ProtocolType != g.protocolType) || (p.Protocol != nil && *p.Protocol != g.protocol) {
		fail(kerr.InconsistentGroupProtocol.Code)
		return
	}
	m := g.members[p.MemberID]
	switch g.state {
	case StatePreparingRebalance:
		fail(kerr.RebalanceInProgress.Code)
	case StateCompletingRebalance:
		if m.syncWait != nil {
			sendSync(m.syncWait, SyncResult{Code: kerr.RebalanceInProgress.Code})
		}
		m.syncWait = reply
		g.removePendingSync(m.id)
		if m.id != g.leader {
			return
		}
		missing := 0
		for _, id := range g.order {
			a, ok := p.Assignments[id]
			if !ok {
				missing++
			}
			g.members[id].assignment = a
		}
		g.logInfo().Str("member_id", m.id).Int("members", len(g.members)).Int("without_assignment", missing).
			Msg("group assignment received from leader")
		g.propagate(0)
		g.transition(StateStable)
	case StateStable:
		g.removePendingSync(m.id)
		sendSync(reply, SyncResult{HasProtocol: true, ProtocolType: g.protocolType, Protocol: g.protocol, Assignment: m.assignment})
	}
}

// removePendingSync notes that a member sent its SyncGroup.
func (g *group) removePendingSync(id string) {
	delete(g.pendingSync, id)
	if len(g.pendingSync) == 0 || (g.state != StateCompletingRebalance && g.state != StateStable) {
		g.disarm(&g.syncTimer)
	}
}

// propagate answers every parked SyncGroup with code (and, for 0, each
// member's assignment) and restarts their sessions.
func (g *group) propagate(code int16) {
	for _, id := range g.order {
		m := g.members[id]
		if m.syncWait == nil {
			continue
		}
		r := SyncResult{Code: code}
		if code == 0 {
			r.HasProtocol, r.ProtocolType, r.Protocol, r.Assignment = true, g.protocolType, g.protocol, m.assignment
		}
		sendSync(m.syncWait, r)
		m.syncWait = nil
		g.armHeartbeat(m, m.sessionTimeout)
	}
}

// syncTimedOut removes the members that did not send SyncGroup within the
// rebalance timeout after the join phase, and rebalances.
func (g *group) syncTimedOut(gen int32) {
	if gen != g.generation || (g.state != StateCompletingRebalance && g.state != StateStable) || len(g.pendingSync) == 0 {
		return
	}
	ids := make([]string, 0, len(g.pendingSync))
	for id := range g.pendingSync {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		if m := g.members[id]; m != nil {
			g.completeJoin(m, JoinResult{Code: kerr.UnknownMemberID.Code, Generation: -1})
		}
		g.remove(id)
	}
	g.logInfo().Strs("member_ids", ids).Msg("removed members that did not sync")
	g.prepareRebalance("members did not sync in time")
}
