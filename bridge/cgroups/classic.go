package cgroups

// Classic members inside a consumer group: KIP-848's online migration, as
// Kafka 4.4's group coordinator does it (group.consumer.migration.policy
// bidirectional).
//
//   - Upgrade: a consumer-protocol member joining (epoch 0) a group id that
//     a classic group of consumers with members holds takes that group
//     over (groups.Coordinator.Upgrade): the group epoch and every classic
//     member's epoch are the classic generation, each member's
//     subscription and assignment are decoded from its ConsumerProtocol
//     metadata and assignment bytes, the target assignment is the current
//     one; the joining member then bumps the epoch as any join does.
//   - The classic members stay classic: JoinGroup is answered at once
//     (never parked) with the member epoch as the generation, after the
//     member's assignment was reconciled against the target from the
//     owned partitions its subscription reports; SyncGroup hands the
//     member its assignment in the ConsumerProtocol format of its
//     metadata's version; Heartbeat answers REBALANCE_IN_PROGRESS when the
//     member must rejoin (a newer group epoch, partitions to revoke, or
//     partitions it waited for now free); LeaveGroup removes it. The
//     revocation rules are the consumer protocol's: a partition reaches
//     its new owner only after the classic owner rejoined without it.
//   - Downgrade: when the last consumer-protocol member leaves or is
//     removed and classic members remain, the group becomes a classic
//     group again (groups.Coordinator.Downgrade) at the group epoch, with
//     each member's target assignment, and rebalances.

import (
	"encoding/binary"
	"slices"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafka-iggy/kafka-iggy/bridge/groups"
)

// classicInfo is what a member using the classic protocol joined with.
type classicInfo struct {
	sessionTimeout time.Duration
	protocols      []groups.Protocol
	// joinDeadline: told to rejoin, the member must by then; syncDeadline:
	// joined, it must sync by then (its rebalance timeout, as Kafka's join
	// and sync timeouts of classic members; zero: none running).
	joinDeadline, syncDeadline time.Time
}

// classicExpired names the classic timeout m missed at now ("" none).
func (m *member) classicExpired(now time.Time) string {
	switch {
	case m.classic == nil:
	case !m.classic.joinDeadline.IsZero() && now.After(m.classic.joinDeadline):
		return "join_timeout"
	case !m.classic.syncDeadline.IsZero() && now.After(m.classic.syncDeadline):
		return "sync_timeout"
	}
	return ""
}

// mustRejoin starts the member's join timeout unless one runs.
func (m *member) mustRejoin(now time.Time) {
	if m.classic.joinDeadline.IsZero() {
		m.classic.joinDeadline = now.Add(m.rebalanceTimeout)
	}
}

// Classic is the classic coordinator a group migrates from and to.
type Classic interface {
	Upgrade(id string, accept func(*groups.Migrated) bool) (groups.Migrated, groups.UpgradeOutcome)
	Downgrade(mg groups.Migrated)
}

// SetClassic sets the classic coordinator of this process, enabling the
// online migration; call before serving.
func (c *Coordinator) SetClassic(cl Classic) { c.classic = cl }

// upgrade takes the live classic group of that id over; refused is true
// when a classic group with members holds it and may not be upgraded.
func (c *Coordinator) upgrade(id string, now time.Time) (g *group, refused bool) {
	if c.classic == nil {
		return nil, false
	}
	_, out := c.classic.Upgrade(id, func(mg *groups.Migrated) bool {
		if int32(len(mg.Members)) >= c.cfg.MaxSize {
			return false
		}
		var ok bool
		g, ok = c.fromClassic(mg, now)
		return ok
	})
	switch out {
	case groups.UpgradeRefused:
		return nil, true
	case groups.UpgradeDone:
		c.log.Info().Str("group", id).Int32("group_epoch", g.epoch).Int("members", len(g.members)).
			Msg("classic group upgraded to a consumer group")
		return g, false
	}
	return nil, false
}

// fromClassic builds the consumer group of a classic one (Kafka's
// ConsumerGroup.fromClassicGroup); false when a member's ConsumerProtocol
// bytes do not decode.
func (c *Coordinator) fromClassic(mg *groups.Migrated, now time.Time) (*group, bool) {
	g := newGroup(mg.Group)
	g.epoch, g.targetEpoch = mg.Generation, mg.Generation
	for i := range mg.Members {
		mm := &mg.Members[i]
		var md kmsg.ConsumerMemberMetadata
		if err := md.ReadFrom(mm.Metadata(mg.Protocol)); err != nil {
			return nil, false
		}
		assigned := map[TP]struct{}{}
		if len(mm.Assignment) > 0 {
			var a kmsg.ConsumerMemberAssignment
			if err := a.ReadFrom(mm.Assignment); err != nil {
				return nil, false
			}
			for _, t := range a.Topics {
				for _, p := range t.Partitions {
					assigned[TP{Topic: t.Topic, Partition: p}] = struct{}{}
				}
			}
		}
		m := &member{id: mm.ID, instanceID: mm.InstanceID, rackID: md.Rack, clientID: mm.ClientID, clientHost: mm.ClientHost,
			epoch: mg.Generation, prevEpoch: mg.Generation, topics: sortedTopics(md.Topics), rebalanceTimeout: mm.RebalanceTimeout,
			assigned: assigned, sessionDeadline: now.Add(mm.SessionTimeout),
			classic: &classicInfo{sessionTimeout: mm.SessionTimeout, protocols: mm.Protocols}}
		g.members[m.id] = m
		if m.instanceID != nil {
			g.instances[*m.instanceID] = m.id
		}
		g.target[m.id] = copySet(assigned)
		g.own(m)
	}
	return g, true
}

func sortedTopics(ts []string) []string {
	t := slices.Clone(ts)
	sort.Strings(t)
	return slices.Compact(t)
}

// classicGroup returns the consumer group of a classic call, or nil when
// none holds the id (the classic coordinator serves the call); an empty
// one is dropped, as Kafka converts an empty group. The caller holds c.mu.
func (c *Coordinator) classicGroup(id string, now time.Time) *group {
	c.sweep(now, id)
	g := c.groups[id]
	if g != nil && len(g.members) == 0 {
		delete(c.groups, id)
		c.log.Info().Str("group", id).Msg("empty consumer group dropped")
		return nil
	}
	return g
}

// ClassicJoin serves a JoinGroup of a group the consumer protocol holds
// (Kafka's classicGroupJoinToConsumerGroup); held is false when no
// consumer group with members holds the id (an empty one is dropped), and
// then classic, when set, is called before the lock is released: the
// classic coordinator's part of the call cannot race a consumer-protocol
// member upgrading the group (which takes the same lock). The same goes
// for ClassicSync, ClassicHeartbeat and ClassicLeave.
func (c *Coordinator) ClassicJoin(p groups.JoinParams, classic func()) (r groups.JoinResult, held bool) {
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.classicGroup(p.Group, now)
	if g == nil {
		orClassic(classic)
		return groups.JoinResult{}, false
	}
	fail := func(e *kerr.Error, id string) (groups.JoinResult, bool) {
		return groups.JoinResult{Code: e.Code, MemberID: id, Generation: -1}, true
	}
	id, unknown := p.MemberID, p.MemberID == ""
	if unknown {
		id = newMemberID()
	}
	var md kmsg.ConsumerMemberMetadata
	if p.ProtocolType != groups.ConsumerProtocolType || len(p.Protocols) == 0 || !c.supportsProtocols(g, p.Protocols) ||
		md.ReadFrom(p.Protocols[0].Metadata) != nil {
		return fail(kerr.InconsistentGroupProtocol, p.MemberID)
	}
	if p.RequireKnownID && unknown && p.InstanceID == nil {
		return fail(kerr.MemberIDRequired, id)
	}
	start := g.epoch
	m := g.members[id]
	if p.InstanceID != nil {
		if oldID, ok := g.instances[*p.InstanceID]; ok && oldID != id {
			if !unknown {
				return fail(kerr.FencedInstanceID, p.MemberID)
			}
			old := g.members[oldID] // the instance comes back under a new id: it takes the old place
			g.release(old)
			delete(g.members, oldID)
			n := *old
			n.id, n.epoch, n.prevEpoch, n.state, n.revoking = id, 0, 0, stable, nil
			if t, ok := g.target[oldID]; ok {
				delete(g.target, oldID)
				g.target[id] = t
			}
			g.members[id], g.instances[*p.InstanceID] = &n, id
			g.own(&n)
			m = &n
		}
	}
	if m == nil {
		if int32(len(g.members)) >= c.cfg.MaxSize {
			return fail(kerr.GroupMaxSizeReached, id)
		}
		m = &member{id: id, assigned: map[TP]struct{}{}}
		g.members[id] = m
		if p.InstanceID != nil {
			g.instances[*p.InstanceID] = id
		}
		g.epoch++
		c.log.Info().Str("group", g.id).Str("member_id", id).Int32("group_epoch", g.epoch).Msg("consumer group classic member joined")
	} else if m.classic == nil {
		return fail(kerr.UnknownMemberID, p.MemberID)
	}
	rt := p.RebalanceTimeout
	c.update(g, m, HeartbeatParams{InstanceID: p.InstanceID, RackID: md.Rack, RebalanceTimeout: rt, SubscribedTopics: md.Topics,
		ClientID: p.ClientID, ClientHost: p.ClientHost}, nil, now)
	m.classic = &classicInfo{sessionTimeout: p.SessionTimeout, protocols: p.Protocols, syncDeadline: now.Add(m.rebalanceTimeout)}
	m.sessionDeadline = now.Add(p.SessionTimeout)
	topics := g.topics
	if topics == nil {
		topics = g.subscribed
	}
	c.refreshMetadata(g, topics)
	g.bumpedOnce(start)
	if g.epoch > g.targetEpoch {
		c.computeTarget(g, topics)
	}
	owned := make(map[TP]struct{}, len(md.OwnedPartitions))
	for _, t := range md.OwnedPartitions {
		for _, part := range t.Partitions {
			owned[TP{Topic: t.Topic, Partition: part}] = struct{}{}
		}
	}
	c.reconcile(g, m, owned, now)
	return groups.JoinResult{MemberID: m.id, Generation: m.epoch, HasProtocol: true, ProtocolType: groups.ConsumerProtocolType,
		Protocol: p.Protocols[0].Name}, true
}

// orClassic calls the classic coordinator's part of a call, if any; the
// caller holds c.mu (lock order: this coordinator's, then the classic
// one's, as Upgrade and Downgrade take them).
func orClassic(classic func()) {
	if classic != nil {
		classic()
	}
}

// supportsProtocols: a classic member may join when some protocol it
// names is one every classic member of the group supports.
func (c *Coordinator) supportsProtocols(g *group, ps []groups.Protocol) bool {
	for _, p := range ps {
		all := true
		for _, m := range g.members {
			if m.classic != nil && !slices.ContainsFunc(m.classic.protocols, func(q groups.Protocol) bool { return q.Name == p.Name }) {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

// classicMember finds the classic member a Sync, Heartbeat or Leave names.
func classicMember(g *group, memberID string, instanceID *string) (*member, int16) {
	var m *member
	if instanceID != nil {
		mid, ok := g.instances[*instanceID]
		if !ok {
			return nil, kerr.UnknownMemberID.Code
		}
		if memberID != "" && mid != memberID {
			return nil, kerr.FencedInstanceID.Code
		}
		m = g.members[mid]
	} else {
		m = g.members[memberID]
	}
	if m == nil || m.classic == nil {
		return nil, kerr.UnknownMemberID.Code
	}
	return m, 0
}

// ClassicSync serves a SyncGroup of a classic member of a consumer group
// (Kafka's classicGroupSyncToConsumerGroup): its current assignment in the
// ConsumerProtocol format of its metadata's version.
func (c *Coordinator) ClassicSync(p groups.SyncParams, classic func()) (r groups.SyncResult, held bool) {
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.classicGroup(p.Group, now)
	if g == nil {
		orClassic(classic)
		return groups.SyncResult{}, false
	}
	m, code := classicMember(g, p.MemberID, p.InstanceID)
	switch {
	case code != 0:
		return groups.SyncResult{Code: code}, true
	case p.Generation != m.epoch:
		return groups.SyncResult{Code: kerr.IllegalGeneration.Code}, true
	case (p.ProtocolType != nil && *p.ProtocolType != groups.ConsumerProtocolType) ||
		(p.Protocol != nil && !slices.ContainsFunc(m.classic.protocols, func(q groups.Protocol) bool { return q.Name == *p.Protocol })):
		return groups.SyncResult{Code: kerr.InconsistentGroupProtocol.Code}, true
	case g.epoch > m.epoch && m.state != unrevokedPartitions:
		m.mustRejoin(now)
		return groups.SyncResult{Code: kerr.RebalanceInProgress.Code}, true
	}
	m.sessionDeadline = now.Add(m.classic.sessionTimeout)
	m.classic.syncDeadline = time.Time{}
	name := m.classic.protocols[0].Name
	if p.Protocol != nil {
		name = *p.Protocol
	}
	return groups.SyncResult{HasProtocol: true, ProtocolType: groups.ConsumerProtocolType, Protocol: name,
		Assignment: encodeAssignment(m.assigned, m.classic.protocols[0].Metadata)}, true
}

// ClassicHeartbeat serves a Heartbeat of a classic member of a consumer
// group (Kafka's classicGroupHeartbeatToConsumerGroup).
func (c *Coordinator) ClassicHeartbeat(group, memberID string, instanceID *string, generation int32, classic func()) (code int16, held bool) {
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.classicGroup(group, now)
	if g == nil {
		orClassic(classic)
		return 0, false
	}
	m, code := classicMember(g, memberID, instanceID)
	switch {
	case code != 0:
		return code, true
	case generation != m.epoch:
		return kerr.IllegalGeneration.Code, true
	}
	m.sessionDeadline = now.Add(m.classic.sessionTimeout)
	if m.epoch < g.epoch || m.state == unrevokedPartitions || (m.state == unreleasedPartitions && !g.waitingOnUnreleased(m)) {
		m.mustRejoin(now)
		return kerr.RebalanceInProgress.Code, true
	}
	return 0, true
}

// waitingOnUnreleased reports whether a partition of m's target is still
// owned by another member.
func (g *group) waitingOnUnreleased(m *member) bool {
	for tp := range g.target[m.id] {
		if _, ok := m.assigned[tp]; ok {
			continue
		}
		if o, ok := g.owner[tp]; ok && o != m.id {
			return true
		}
	}
	return false
}

// ClassicLeave serves a LeaveGroup of a consumer group (Kafka's
// classicGroupLeaveToConsumerGroup): each named classic member leaves.
func (c *Coordinator) ClassicLeave(group string, ids []groups.LeaveIdentity, classic func()) (codes []int16, held bool) {
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.classicGroup(group, now)
	if g == nil {
		orClassic(classic)
		return nil, false
	}
	codes = make([]int16, len(ids))
	for i, id := range ids {
		m, code := classicMember(g, id.MemberID, id.InstanceID)
		if code != 0 {
			codes[i] = code
			continue
		}
		c.removeMember(g, m, "leave_group")
	}
	return codes, true
}

// canDowngrade reports whether m leaving leaves only classic members
// (Kafka's validateOnlineDowngradeWithFencedMember).
func (c *Coordinator) canDowngrade(g *group, m *member) bool {
	if c.classic == nil || m.classic != nil || len(g.members) <= 1 {
		return false
	}
	for _, o := range g.members {
		if o != m && o.classic == nil {
			return false
		}
	}
	return true
}

// downgrade hands the group without m back to the classic coordinator
// (Kafka's convertToClassicGroup) and forgets it here.
func (c *Coordinator) downgrade(g *group, m *member) {
	mg := groups.Migrated{Group: g.id, Generation: g.epoch}
	ids := make([]string, 0, len(g.members))
	for id := range g.members {
		if id != m.id {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	for _, id := range ids {
		o := g.members[id]
		mg.Members = append(mg.Members, groups.MigratedMember{ID: o.id, InstanceID: o.instanceID, ClientID: o.clientID, ClientHost: o.clientHost,
			SessionTimeout: o.classic.sessionTimeout, RebalanceTimeout: o.rebalanceTimeout, Protocols: o.classic.protocols,
			Assignment: encodeAssignment(g.target[id], o.classic.protocols[0].Metadata)})
	}
	delete(c.groups, g.id)
	c.classic.Downgrade(mg)
	c.log.Info().Str("group", g.id).Str("member_id", m.id).Int32("group_epoch", g.epoch).Int("members", len(mg.Members)).
		Msg("consumer group downgraded to a classic group: its last consumer-protocol member left")
}

// encodeAssignment is a ConsumerProtocol assignment of the version of the
// member's subscription metadata.
func encodeAssignment(set map[TP]struct{}, metadata []byte) []byte {
	a := kmsg.NewConsumerMemberAssignment()
	if len(metadata) >= 2 {
		a.Version = min(max(int16(binary.BigEndian.Uint16(metadata)), 0), 3)
	}
	for _, tp := range sortedTPs(set) {
		if n := len(a.Topics); n == 0 || a.Topics[n-1].Topic != tp.Topic {
			t := kmsg.NewConsumerMemberAssignmentTopic()
			t.Topic = tp.Topic
			a.Topics = append(a.Topics, t)
		}
		t := &a.Topics[len(a.Topics)-1]
		t.Partitions = append(t.Partitions, tp.Partition)
	}
	return a.AppendTo(nil)
}
