package groups

// A group and its members: the bookkeeping every phase uses (membership,
// protocol votes, state transitions). The caller holds g.mu.

import (
	"bytes"
	"slices"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// group is one classic group. Everything below mu is guarded by it.
type group struct {
	c  *Coordinator
	id string

	mu           sync.Mutex
	state        State
	prevState    State
	stateSince   time.Time
	generation   int32
	protocolType string // "" until the first member joined (simple groups keep "")
	protocol     string // chosen protocol of the generation; "" when Empty
	leader       string
	members      map[string]*member
	order        []string          // member ids in join order (leader election, listings)
	static       map[string]string // group.instance.id -> member id
	pending      map[string]*groupTimer
	pendingSync  map[string]struct{}
	votes        map[string]int // protocol name -> members supporting it
	awaitingJoin int            // members with a parked JoinGroup
	newMemberAdd bool           // a member joined during the initial delay
	subscribed   map[string]struct{}
	subsKnown    bool

	// adopting: the group moved here from another coordinator (Seed);
	// until adoptUntil, unknown member ids are members of the previous
	// coordinator, accepted on JoinGroup and told REBALANCE_IN_PROGRESS on
	// Heartbeat and OffsetCommit. adoptSeen holds those that showed up: the
	// first join phase waits for them (within adoptUntil), so a move costs
	// one rebalance.
	adopting   bool
	adoptUntil time.Time
	adoptSeen  map[string]struct{}

	timerSeq  uint64
	joinTimer groupTimer
	syncTimer groupTimer
	emptyTmr  groupTimer
}

// member is one member of a group.
type member struct {
	id               string
	instanceID       *string
	clientID         string
	clientHost       string
	sessionTimeout   time.Duration
	rebalanceTimeout time.Duration
	protocolType     string
	protocols        []Protocol
	assignment       []byte
	isNew            bool
	joinWait         chan<- JoinResult
	syncWait         chan<- SyncResult
	hb               groupTimer
}

func (m *member) static() bool { return m.instanceID != nil }

// metadataFor returns the member's metadata for a protocol.
func (m *member) metadataFor(name string) []byte {
	for _, p := range m.protocols {
		if p.Name == name {
			return p.Metadata
		}
	}
	return nil
}

// sameProtocols reports whether ps equals the member's protocols (names,
// order and metadata).
func (m *member) sameProtocols(ps []Protocol) bool {
	return slices.EqualFunc(m.protocols, ps, func(a, b Protocol) bool {
		return a.Name == b.Name && bytes.Equal(a.Metadata, b.Metadata)
	})
}

// heartbeatSatisfied: a member parked in JoinGroup or SyncGroup counts as
// alive, except a new member, which may expire while parked.
func (m *member) heartbeatSatisfied() bool {
	return !m.isNew && (m.joinWait != nil || m.syncWait != nil)
}

func (g *group) logInfo() *zerolog.Event {
	return g.c.log.Info().Str("group_id", g.id).Int32("generation", g.generation)
}

// validateMember checks a member id and, when given, its instance id.
func (g *group) validateMember(memberID string, instanceID *string) int16 {
	if instanceID != nil {
		cur, ok := g.static[*instanceID]
		if !ok {
			return kerr.UnknownMemberID.Code
		}
		if cur != memberID {
			return kerr.FencedInstanceID.Code
		}
	}
	if g.members[memberID] == nil {
		return kerr.UnknownMemberID.Code
	}
	return 0
}

// supportsProtocols reports whether a member with this protocol type and
// these protocols may join: the first member needs a type and a protocol;
// later ones the group's type and a protocol every member supports.
func (g *group) supportsProtocols(protocolType string, ps []Protocol) bool {
	if g.state == StateEmpty {
		return protocolType != "" && len(ps) > 0
	}
	if protocolType != g.protocolType {
		return false
	}
	for _, p := range ps {
		if g.votes[p.Name] == len(g.members) {
			return true
		}
	}
	return false
}

// selectProtocol chooses the generation's protocol: among the protocols all
// members support, each member votes for the first in its own list; most
// votes wins, ties going to the leader's preference.
func (g *group) selectProtocol() string {
	n := len(g.members)
	count := map[string]int{}
	for _, id := range g.order {
		for _, p := range g.members[id].protocols {
			if g.votes[p.Name] == n {
				count[p.Name]++
				break
			}
		}
	}
	best, bestVotes := "", -1
	pref := g.order
	if l := g.members[g.leader]; l != nil {
		pref = append([]string{l.id}, g.order...)
	}
	for _, id := range pref {
		for _, p := range g.members[id].protocols {
			if v, ok := count[p.Name]; ok && v > bestVotes {
				best, bestVotes = p.Name, v
			}
		}
	}
	return best
}

// full reports whether the group has groups.max_size members: a new member
// is then refused (GROUP_MAX_SIZE_REACHED), as Kafka's group.max.size does.
func (g *group) full() bool {
	return len(g.members) >= int(g.c.cfg.MaxSize)
}

// add puts a member into the group; reply non-nil means its JoinGroup is
// parked.
func (g *group) add(m *member, reply chan<- JoinResult) {
	if len(g.members) == 0 {
		g.protocolType = m.protocolType
	}
	if m.instanceID != nil {
		g.static[*m.instanceID] = m.id
	}
	if g.leader == "" {
		g.leader = m.id
	}
	g.members[m.id] = m
	g.c.liveMembers.Add(1)
	g.order = append(g.order, m.id)
	g.countVotes(m, 1)
	m.joinWait = reply
	if reply != nil {
		g.awaitingJoin++
	}
	g.removePending(m.id)
}

// remove takes a member out of the group; a parked SyncGroup of it is
// answered UNKNOWN_MEMBER_ID (its JoinGroup must be answered by the caller).
func (g *group) remove(id string) {
	m := g.members[id]
	if m == nil {
		return
	}
	g.disarm(&m.hb)
	g.countVotes(m, -1)
	if m.joinWait != nil {
		g.awaitingJoin--
		m.joinWait = nil
	}
	if m.syncWait != nil {
		sendSync(m.syncWait, SyncResult{Code: kerr.UnknownMemberID.Code})
		m.syncWait = nil
	}
	if m.instanceID != nil && g.static[*m.instanceID] == id {
		delete(g.static, *m.instanceID)
	}
	delete(g.members, id)
	g.c.liveMembers.Add(-1)
	g.order = slices.DeleteFunc(g.order, func(s string) bool { return s == id })
	delete(g.pendingSync, id)
	if g.leader == id {
		g.leader = ""
		if len(g.order) > 0 {
			g.leader = g.order[0]
		}
	}
}

func (g *group) countVotes(m *member, d int) {
	for _, p := range m.protocols {
		g.votes[p.Name] += d
		if g.votes[p.Name] <= 0 {
			delete(g.votes, p.Name)
		}
	}
}

// transition changes the state; an Empty group is forgotten after the
// retention unless something happens to it.
func (g *group) transition(to State) {
	g.prevState, g.state = g.state, to
	g.stateSince = g.c.clock.Now()
	if to == StateEmpty {
		g.armEmptyExpiry()
	} else {
		g.disarm(&g.emptyTmr)
	}
}

// kill marks the group Dead (counting it and its members out of the
// gauges the first time) and stops its timers; the caller removes it from
// the map.
func (g *group) kill() {
	if g.state != StateDead {
		g.c.liveGroups.Add(-1)
		g.c.liveMembers.Add(-int64(len(g.members)))
	}
	g.state = StateDead
	g.disarm(&g.joinTimer)
	g.disarm(&g.syncTimer)
	g.disarm(&g.emptyTmr)
	for id := range g.pending {
		g.removePending(id)
	}
	for _, m := range g.members {
		g.disarm(&m.hb)
	}
}

// computeSubscribed records, for a consumer group, the topics its members
// subscribe to in the chosen protocol (OffsetDelete consults it).
func (g *group) computeSubscribed() {
	g.subscribed, g.subsKnown = nil, false
	if g.protocolType != ConsumerProtocolType {
		return
	}
	subs := map[string]struct{}{}
	for _, m := range g.members {
		var md kmsg.ConsumerMemberMetadata
		if err := md.ReadFrom(m.metadataFor(g.protocol)); err != nil {
			return
		}
		for _, t := range md.Topics {
			subs[t] = struct{}{}
		}
	}
	g.subscribed, g.subsKnown = subs, true
}
