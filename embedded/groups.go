package embedded

// Server-side consumer-group assignment (reference §7.4). Everything here
// runs with Server.mu held.

import (
	"slices"
	"time"

	"github.com/kafka-iggy/kafka-iggy/codec/iggy"
	"github.com/kafka-iggy/kafka-iggy/codec/wire"
)

// group is a consumer group of a topic.
type group struct {
	id         uint32
	name       string
	topic      *topic
	members    []*member // ordered by slot
	generation uint64
	pending    []*revocation
	timeout    time.Duration // rebalance timeout of pending revocations
}

// member is one member of a group: a client id and the connection that
// joined with it.
type member struct {
	slot       uint32
	client     wire.U128
	conn       *conn
	partitions []uint32          // assigned, ascending; excludes pending revocations
	polled     map[uint32]uint64 // highest offset returned to this member per partition
}

// revocation is a partition moving from one member to another that waits
// for the old owner to commit what it polled (or for the timeout).
type revocation struct {
	partition uint32
	from, to  *member
	upTo      uint64
	deadline  time.Time
}

func (g *group) memberByClient(client wire.U128) *member {
	for _, m := range g.members {
		if m.client == client {
			return m
		}
	}
	return nil
}

// owns reports whether m may poll partition p (assigned to it).
func (m *member) owns(p uint32) bool { return slices.Contains(m.partitions, p) }

// mayCommit reports whether m may store an offset for partition p: it owns
// p or p is pending revocation away from it.
func (g *group) mayCommit(m *member, p uint32) bool {
	if m.owns(p) {
		return true
	}
	for _, r := range g.pending {
		if r.from == m && r.partition == p {
			return true
		}
	}
	return false
}

func (g *group) partitionIDs() []uint32 {
	ids := make([]uint32, len(g.topic.partitions))
	for i, p := range g.topic.partitions {
		ids[i] = p.id
	}
	return ids
}

// redistribute assigns every partition round-robin over the members
// (partition[i] → member[i mod n]) immediately, dropping pending
// revocations: leave, disconnect and partition-count changes.
func (g *group) redistribute() {
	g.pending = nil
	for _, m := range g.members {
		m.partitions = m.partitions[:0]
	}
	if n := len(g.members); n > 0 {
		for i, id := range g.partitionIDs() {
			m := g.members[i%n]
			m.partitions = append(m.partitions, id)
		}
	}
	for _, m := range g.members {
		for p := range m.polled {
			if !m.owns(p) {
				delete(m.polled, p)
			}
		}
	}
	g.generation++
}

// rebalanceOnJoin runs after a member joined, as the real server's
// rebalance_cooperative does (core/metadata/src/stm/consumer_group.rs at
// the 0.9 line): the generation grows; partitions nobody holds go
// round-robin to members holding none; then, only when some member is idle
// (holds nothing and is not the target of a pending move), every member
// above its fair share (partitions/members, the first `remainder` members
// in slot order allowed one more) gives its last partitions, dealt
// round-robin over the idle members: at once when the owner has no
// polled-but-uncommitted messages on it, else as a pending revocation that
// completes when the owner's commit catches up or the timeout passes.
func (g *group) rebalanceOnJoin(now time.Time) {
	g.generation++
	ids := g.partitionIDs()
	n := len(g.members)
	if n == 0 || len(ids) == 0 {
		return
	}
	held := make(map[uint32]bool, len(ids))
	revokingFrom := make(map[*member]bool)
	target := make(map[*member]bool)
	for _, m := range g.members {
		for _, p := range m.partitions {
			held[p] = true
		}
	}
	for _, r := range g.pending {
		held[r.partition] = true
		revokingFrom[r.from] = true
		target[r.to] = true
	}
	// Step 1: unassigned partitions to members holding none (a member
	// whose partitions are all pending revocation still holds them).
	var idle []*member
	for _, m := range g.members {
		if len(m.partitions) == 0 && !revokingFrom[m] {
			idle = append(idle, m)
		}
	}
	if len(idle) > 0 {
		i := 0
		for _, id := range ids {
			if !held[id] {
				m := idle[i%len(idle)]
				m.partitions = append(m.partitions, id)
				i++
			}
		}
		for _, m := range idle {
			slices.Sort(m.partitions)
		}
	}
	// Step 2: excess of over-assigned members to idle ones.
	fair, remainder := len(ids)/n, len(ids)%n
	idle = idle[:0]
	for _, m := range g.members {
		if len(m.partitions) == 0 && !revokingFrom[m] && !target[m] {
			idle = append(idle, m)
		}
	}
	if len(idle) == 0 {
		return
	}
	type move struct {
		p    uint32
		from *member
	}
	var excess []move
	for _, m := range g.members {
		effective := len(m.partitions) // pending revocations are not in partitions here
		allowed := fair
		if remainder > 0 {
			allowed++
		}
		if effective <= allowed {
			if effective > fair {
				remainder--
			}
			continue
		}
		if remainder > 0 && effective > fair {
			remainder--
		}
		for k := 0; k < effective-allowed; k++ {
			excess = append(excess, move{m.partitions[len(m.partitions)-1-k], m})
		}
	}
	for i, mv := range excess {
		to := idle[i%len(idle)]
		if g.clean(mv.from, mv.p) {
			mv.from.partitions = slices.DeleteFunc(mv.from.partitions, func(p uint32) bool { return p == mv.p })
			to.partitions = append(to.partitions, mv.p)
			slices.Sort(to.partitions)
			delete(mv.from.polled, mv.p)
		} else {
			mv.from.partitions = slices.DeleteFunc(mv.from.partitions, func(p uint32) bool { return p == mv.p })
			g.pending = append(g.pending, &revocation{partition: mv.p, from: mv.from, to: to, upTo: mv.from.polled[mv.p], deadline: now.Add(g.timeout)})
		}
	}
}

// clean reports whether m has no polled-but-uncommitted messages on p.
func (g *group) clean(m *member, p uint32) bool {
	polled, ok := m.polled[p]
	if !ok {
		return true
	}
	part := g.topic.partitionByID(p)
	if part == nil {
		return true
	}
	part.omu.Lock()
	committed, ok := part.offsets[offsetKey{Kind: iggy.ConsumerKindConsumerGroup, ID: g.id}]
	part.omu.Unlock()
	return ok && committed >= polled
}

// settle completes the pending revocations whose old owner caught up, left,
// or whose deadline passed (now zero: deadlines are not checked). It
// reports whether the assignment changed.
func (g *group) settle(now time.Time) bool {
	changed := false
	kept := g.pending[:0]
	for _, r := range g.pending {
		fromGone := !slices.Contains(g.members, r.from)
		expired := !now.IsZero() && !now.Before(r.deadline)
		if !fromGone && !expired && !g.clean(r.from, r.partition) {
			kept = append(kept, r)
			continue
		}
		to := r.to
		if !slices.Contains(g.members, to) {
			to = g.leastLoaded()
		}
		if to != nil {
			to.partitions = append(to.partitions, r.partition)
			slices.Sort(to.partitions)
		}
		delete(r.from.polled, r.partition)
		changed = true
	}
	clear(g.pending[len(kept):])
	g.pending = kept
	if changed {
		g.generation++
	}
	return changed
}

func (g *group) leastLoaded() *member {
	var best *member
	for _, m := range g.members {
		if best == nil || len(m.partitions) < len(best.partitions) {
			best = m
		}
	}
	return best
}

// notePolled records that m was served messages up to offset last on p.
func (m *member) notePolled(p uint32, last uint64) {
	if cur, ok := m.polled[p]; !ok || last > cur {
		m.polled[p] = last
	}
}

// resetPolled forgets polled positions (after a purge offsets restart).
func (g *group) resetPolled() {
	for _, m := range g.members {
		clear(m.polled)
	}
}

// join adds the client of c's session to g (idempotent per client id).
func (s *Server) join(g *group, c *conn, client wire.U128) {
	if g.memberByClient(client) != nil {
		return
	}
	used := make(map[uint32]bool, len(g.members))
	for _, m := range g.members {
		used[m.slot] = true
	}
	slot := uint32(0)
	for used[slot] {
		slot++
	}
	m := &member{slot: slot, client: client, conn: c, polled: map[uint32]uint64{}}
	g.members = append(g.members, m)
	slices.SortFunc(g.members, func(a, b *member) int { return int(a.slot) - int(b.slot) })
	if c.groups == nil {
		c.groups = map[*group]struct{}{}
	}
	c.groups[g] = struct{}{}
	g.rebalanceOnJoin(s.now())
}

// leave removes client from g and redistributes; false when not a member.
func (s *Server) leave(g *group, client wire.U128) bool {
	m := g.memberByClient(client)
	if m == nil {
		return false
	}
	g.members = slices.DeleteFunc(g.members, func(x *member) bool { return x == m })
	if !s.stillMember(m.conn, g) {
		delete(m.conn.groups, g)
	}
	g.redistribute()
	return true
}

// stillMember reports whether c holds another membership of g.
func (s *Server) stillMember(c *conn, g *group) bool {
	for _, m := range g.members {
		if m.conn == c {
			return true
		}
	}
	return false
}

// leaveAllGroups removes every membership held through c (disconnect,
// logout, eviction).
func (s *Server) leaveAllGroups(c *conn) {
	for g := range c.groups {
		before := len(g.members)
		g.members = slices.DeleteFunc(g.members, func(m *member) bool { return m.conn == c })
		if len(g.members) != before {
			g.redistribute()
		}
	}
	clear(c.groups)
}

// dropGroupMembers ends every membership of g (group or topic deleted).
func (s *Server) dropGroupMembers(g *group) {
	for _, m := range g.members {
		delete(m.conn.groups, g)
	}
	g.members = nil
	g.pending = nil
}

// sweepStale evicts consumer-group members silent for more than 1.2 ×
// the heartbeat interval and completes expired pending revocations.
func (s *Server) sweepStale() {
	now := s.now()
	limit := s.cfg.HeartbeatInterval * 12 / 10
	type victim struct {
		c      *conn
		client wire.U128
	}
	var victims []victim
	s.mu.Lock()
	for _, c := range s.conns {
		if len(c.groups) == 0 || c.sess == nil {
			continue
		}
		if now.Sub(time.Unix(0, c.lastSeen.Load())) > limit {
			victims = append(victims, victim{c, c.sess.client})
			s.endSession(c)
		}
	}
	for _, st := range s.streams {
		for _, t := range st.topics {
			for _, g := range t.groups {
				if len(g.pending) > 0 {
					g.settle(now)
				}
			}
		}
	}
	s.mu.Unlock()
	for _, v := range victims {
		v.c.log.Info().Str("close_reason", "stale_client").Msg("evicting a silent consumer-group member")
		v.c.writeEviction(v.client, iggy.EvictionReasonStaleClient)
	}
}

// groupDetails encodes the wire view of a group with its members.
func groupDetails(g *group) iggy.ConsumerGroupDetails {
	d := iggy.ConsumerGroupDetails{ConsumerGroupResponse: groupResponse(g)}
	for _, m := range g.members {
		d.Members = append(d.Members, iggy.ConsumerGroupMember{MemberID: m.slot, Partitions: slices.Clone(m.partitions)})
	}
	return d
}

func groupResponse(g *group) iggy.ConsumerGroupResponse {
	return iggy.ConsumerGroupResponse{
		ID:              g.id,
		PartitionsCount: uint32(len(g.topic.partitions)),
		MembersCount:    uint32(len(g.members)),
		Name:            g.name,
	}
}
