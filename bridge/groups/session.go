package groups

// Sessions and timers: Heartbeat, LeaveGroup, member and pending-id
// expiry, the retention of Empty groups, and the cancellable group timers
// they run on.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// heartbeat serves a Heartbeat and returns its error code.
func (c *Coordinator) heartbeat(groupID, memberID string, instanceID *string, generation int32) int16 {
	if groupID == "" {
		return kerr.InvalidGroupID.Code
	}
	g := c.lockGroup(groupID, false)
	if g == nil {
		return kerr.UnknownMemberID.Code
	}
	defer g.mu.Unlock()
	if g.adoptingNow() && g.members[memberID] == nil {
		// A member of the previous coordinator: rejoin (keeping its id).
		g.adoptSeen[memberID] = struct{}{}
		return kerr.RebalanceInProgress.Code
	}
	if code := g.validateMember(memberID, instanceID); code != 0 {
		return code
	}
	if generation != g.generation {
		return kerr.IllegalGeneration.Code
	}
	m := g.members[memberID]
	switch g.state {
	case StatePreparingRebalance:
		g.armHeartbeat(m, m.sessionTimeout)
		return kerr.RebalanceInProgress.Code
	case StateCompletingRebalance, StateStable:
		g.armHeartbeat(m, m.sessionTimeout)
		return 0
	}
	return kerr.UnknownMemberID.Code
}

// leave serves a LeaveGroup: the request's error code and one code per
// identity.
func (c *Coordinator) leave(groupID string, ids []LeaveIdentity) (int16, []int16) {
	codes := make([]int16, len(ids))
	if groupID == "" {
		return kerr.InvalidGroupID.Code, codes
	}
	g := c.lockGroup(groupID, false)
	if g == nil {
		for i := range codes {
			codes[i] = kerr.UnknownMemberID.Code
		}
		return 0, codes
	}
	defer g.mu.Unlock()
	left := 0
	for i, id := range ids {
		switch {
		case id.MemberID == "":
			cur, ok := "", false
			if id.InstanceID != nil {
				cur, ok = g.static[*id.InstanceID]
			}
			if !ok {
				codes[i] = kerr.UnknownMemberID.Code
				continue
			}
			g.removeLeaving(g.members[cur], id.Reason)
		case g.pending[id.MemberID] != nil:
			g.removePending(id.MemberID)
			g.logInfo().Str("member_id", id.MemberID).Msg("pending member left the group")
		default:
			if code := g.validateMember(id.MemberID, id.InstanceID); code != 0 {
				codes[i] = code
				continue
			}
			g.removeLeaving(g.members[id.MemberID], id.Reason)
		}
		left++
	}
	if left > 0 {
		switch g.state {
		case StateStable, StateCompletingRebalance:
			g.maybePrepareRebalanceOrCompleteJoin("members left the group")
		case StatePreparingRebalance:
			g.maybeCompleteJoinPhase()
		}
	}
	return 0, codes
}

// removeLeaving removes a member on LeaveGroup; its parked JoinGroup is
// answered UNKNOWN_MEMBER_ID.
func (g *group) removeLeaving(m *member, reason string) {
	if m == nil {
		return
	}
	g.logInfo().Str("member_id", m.id).Str("reason", reason).Msg("member left the group")
	g.completeJoin(m, JoinResult{Code: kerr.UnknownMemberID.Code, Generation: -1})
	g.remove(m.id)
}

// removePending forgets a KIP-394 pending member id.
func (g *group) removePending(id string) {
	if t := g.pending[id]; t != nil {
		g.disarm(t)
		delete(g.pending, id)
		g.c.pendingIDs.Add(-1)
	}
}

// expirePending runs when a pending member id was not used in time.
func (g *group) expirePending(id string) {
	if g.pending[id] == nil {
		return
	}
	g.removePending(id)
	g.c.log.Debug().Str("group_id", g.id).Str("member_id", id).Msg("pending member id expired")
	if g.state == StatePreparingRebalance && g.allJoined() {
		g.completeJoinPhase()
	}
	g.forgetIfUnused()
}

// forgetIfUnused forgets at once a group that never completed a rebalance
// and has no member and no pending member id: nothing of it is left
// (Kafka drops such a group, which has no offsets either, on its next
// cleanup).
func (g *group) forgetIfUnused() {
	if g.state == StateEmpty && g.generation == 0 && len(g.members) == 0 && len(g.pending) == 0 {
		g.armEmptyExpiryAfter(0)
	}
}

// expireMember runs when a member's session (or new-member join wait)
// ended without a heartbeat.
func (g *group) expireMember(id string) {
	m := g.members[id]
	if m == nil || m.heartbeatSatisfied() {
		return
	}
	g.logInfo().Str("member_id", id).Str("state", g.state.String()).Msg("member session expired, removing it")
	g.completeJoin(m, JoinResult{Code: kerr.UnknownMemberID.Code, Generation: -1})
	g.remove(id)
	switch g.state {
	case StateStable, StateCompletingRebalance:
		g.maybePrepareRebalanceOrCompleteJoin("member session expired")
	case StatePreparingRebalance:
		if g.allJoined() {
			g.completeJoinPhase()
		}
	}
}

func (g *group) armHeartbeat(m *member, d time.Duration) {
	id := m.id
	g.arm(&m.hb, d, func() { g.expireMember(id) })
}

// groupTimer is one cancellable timer of a group; seq identifies the
// current arming (0: not armed).
type groupTimer struct {
	stop func() bool
	seq  uint64
}

// arm (re)starts a timer whose callback runs fire under g.mu, unless the
// timer was re-armed or disarmed meanwhile or the group died.
func (g *group) arm(t *groupTimer, d time.Duration, fire func()) {
	g.disarm(t)
	g.timerSeq++
	seq := g.timerSeq
	t.seq = seq
	t.stop = g.c.clock.AfterFunc(d, func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		if t.seq != seq || g.state == StateDead {
			return
		}
		t.seq, t.stop = 0, nil
		fire()
	})
}

func (g *group) disarm(t *groupTimer) {
	if t.stop != nil {
		t.stop()
	}
	t.stop, t.seq = nil, 0
}

// armEmptyExpiry schedules the removal of the group from memory. Its
// callback takes coordinator.mu before group.mu (the lock order).
func (g *group) armEmptyExpiry() { g.armEmptyExpiryAfter(g.c.emptyRetention) }

// armEmptyExpiryAfter schedules the removal after d.
func (g *group) armEmptyExpiryAfter(d time.Duration) {
	g.disarm(&g.emptyTmr)
	g.timerSeq++
	seq := g.timerSeq
	g.emptyTmr.seq = seq
	c := g.c
	g.emptyTmr.stop = c.clock.AfterFunc(d, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.emptyTmr.seq != seq || g.state != StateEmpty {
			return
		}
		if len(g.pending) > 0 {
			g.armEmptyExpiry()
			return
		}
		g.kill()
		if c.groups[g.id] == g {
			delete(c.groups, g.id)
		}
		c.log.Debug().Str("group_id", g.id).Msg("empty group forgotten")
	})
}
