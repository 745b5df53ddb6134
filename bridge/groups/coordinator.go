package groups

// The classic consumer-group coordinator (KAFKA-ON-IGGY §5), served by the
// JoinGroup, SyncGroup, Heartbeat, LeaveGroup, DescribeGroups, ListGroups and
// DeleteGroups handlers (11-16, 42) and consulted by the offsets code
// (validateCommit, offsetDeleteCheck).
//
// Model (Kafka's classic group protocol):
//   - A group moves Empty -> PreparingRebalance -> CompletingRebalance ->
//     Stable and back to PreparingRebalance on every membership or metadata
//     change; Dead only while it is being removed. Every completed join phase
//     increments the generation.
//   - JoinGroup requests park until the join phase completes: when every
//     known member has rejoined, when the rebalance timeout (the largest of
//     the members') passes, or, for the first rebalance of an empty group,
//     after groups.initial_rebalance_delay, extended while new members keep
//     arriving. Dynamic members that did not rejoin are dropped; static ones
//     (group.instance.id) stay.
//   - The protocol is chosen by vote: of the protocols every member supports,
//     each member votes for the first in its own preference order; most
//     votes wins. The leader alone receives the member list with each
//     member's metadata for that protocol and returns every assignment in its
//     SyncGroup; followers' SyncGroups park until then. Subscription and
//     assignment bytes are relayed untouched, so any client assignor works.
//   - Sessions: a member that sends no Heartbeat, JoinGroup or SyncGroup for
//     its session timeout is removed and a rebalance starts. A member that
//     does not send SyncGroup within the rebalance timeout after the join
//     phase is removed as well. A KIP-394 pending member id (JoinGroup v4+
//     without a member id) lapses after the session timeout.
//   - Static membership: a JoinGroup without member id but with a known
//     group.instance.id replaces the old member id (the old one is fenced:
//     FENCED_INSTANCE_ID) and, in a Stable group whose chosen protocol does
//     not change, gets the current generation and its previous assignment
//     back without a rebalance.
//   - Groups live in this process's memory. An Empty group is forgotten
//     after emptyGroupRetention (its committed offsets live in Iggy and are
//     not touched). The per-group data (groupSnapshot) is kept apart from the
//     parked requests and timers so a group can later move between sidecars.
//
// Locking: groupCoordinator.mu guards the groups map only; group.mu guards
// everything inside one group. Lock order: coordinator.mu before group.mu
// (lookup, creation, deletion, expiry of empty groups); code holding a
// group.mu never takes coordinator.mu. Timer callbacks take the locks
// themselves and check a per-timer sequence number, so a callback that lost
// the race with its cancellation does nothing. Replies to parked requests go
// to channels with one slot, sent without blocking while the lock is held.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// OffsetsDeleter deletes the committed offsets of a group; DeleteGroups
// calls it (the bridge's offsets code implements it). It returns
// ErrNoOffsets when nothing was stored for the group.
type OffsetsDeleter interface {
	DeleteGroupOffsets(ctx context.Context, group string) error
	// OffsetsErrorCode maps a failure of DeleteGroupOffsets to its Kafka
	// error code and the Iggy status code behind it (0 when none).
	OffsetsErrorCode(err error) (code int16, iggyCode uint32)
}

// ErrNoOffsets is what an OffsetsDeleter returns when the group has no
// committed offsets: DeleteGroups of a group this coordinator does not know
// then answers GROUP_ID_NOT_FOUND.
var ErrNoOffsets = errors.New("groups: group has no committed offsets")

const (
	// newMemberJoinTimeout bounds how long a new member's JoinGroup may stay
	// parked (Kafka's group.classic.new.member.join.timeout, 5 minutes).
	newMemberJoinTimeout = 5 * time.Minute
	// emptyGroupRetention is how long an Empty group stays in memory.
	emptyGroupRetention = 24 * time.Hour
	// ConsumerProtocolType is the protocol type of Kafka consumers.
	ConsumerProtocolType = "consumer"
	// AuthorizedOperations is the KIP-430 bitfield of what any client
	// may do on a group here (no ACLs): READ (3), DELETE (6), DESCRIBE (8).
	AuthorizedOperations int32 = 1<<3 | 1<<6 | 1<<8
)

// State is a classic group's state.
type State uint8

const (
	StateEmpty State = iota
	StatePreparingRebalance
	StateCompletingRebalance
	StateStable
	StateDead
)

// String returns the state as Kafka names it (DescribeGroups, ListGroups).
func (s State) String() string {
	switch s {
	case StateEmpty:
		return "Empty"
	case StatePreparingRebalance:
		return "PreparingRebalance"
	case StateCompletingRebalance:
		return "CompletingRebalance"
	case StateStable:
		return "Stable"
	}
	return "Dead"
}

// Clock is the coordinator's time source; unit tests inject a fake.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine after d and returns a function
	// that cancels the call if it has not started.
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }
func (realClock) AfterFunc(d time.Duration, f func()) func() bool {
	return time.AfterFunc(d, f).Stop
}

// Protocol is one protocol a member supports, with its opaque metadata.
type Protocol struct {
	Name     string
	Metadata []byte
}

// JoinParams is a decoded JoinGroup request.
type JoinParams struct {
	Group            string
	MemberID         string
	InstanceID       *string
	ClientID         string
	ClientHost       string
	SessionTimeout   time.Duration
	RebalanceTimeout time.Duration
	ProtocolType     string
	Protocols        []Protocol
	RequireKnownID   bool // v4+: KIP-394 MEMBER_ID_REQUIRED round trip
	CanSkipAssign    bool // v9+: KIP-814 SkipAssignment understood
	Reason           string
}

// JoinMember is one entry of the leader's member list.
type JoinMember struct {
	MemberID   string
	InstanceID *string
	Metadata   []byte
}

// JoinResult is the answer to a JoinGroup.
type JoinResult struct {
	Code         int16
	MemberID     string
	Generation   int32
	HasProtocol  bool // false: protocol type and name are null
	ProtocolType string
	Protocol     string
	Leader       string
	SkipAssign   bool
	Members      []JoinMember
}

// SyncParams is a decoded SyncGroup request.
type SyncParams struct {
	Group        string
	MemberID     string
	InstanceID   *string
	Generation   int32
	ProtocolType *string // v5+, nil when absent
	Protocol     *string // v5+, nil when absent
	Assignments  map[string][]byte
}

// SyncResult is the answer to a SyncGroup.
type SyncResult struct {
	Code         int16
	HasProtocol  bool
	ProtocolType string
	Protocol     string
	Assignment   []byte
}

// LeaveIdentity is one member named in a LeaveGroup.
type LeaveIdentity struct {
	MemberID   string
	InstanceID *string
	Reason     string
}

// Description is a group as DescribeGroups shows it.
type Description struct {
	State        string
	ProtocolType string
	Protocol     string
	Members      []MemberDescription
}

type MemberDescription struct {
	MemberID   string
	InstanceID *string
	ClientID   string
	ClientHost string
	Metadata   []byte
	Assignment []byte
}

// Listing is a group as ListGroups shows it.
type Listing struct {
	Group        string
	ProtocolType string
	State        State
}

// Snapshot is the movable state of a group: what another coordinator
// needs to take the group over (parked requests and timers are not part of
// it; members must rejoin or heartbeat the new coordinator).
type Snapshot struct {
	ID           string
	Generation   int32
	ProtocolType string
	Protocol     string
	Leader       string
	// Rebalancing is true when the snapshot was taken during a rebalance:
	// the adopting coordinator starts a new one.
	Rebalancing bool
	Members     []MemberSnapshot
}

type MemberSnapshot struct {
	ID               string
	InstanceID       *string
	ClientID         string
	ClientHost       string
	SessionTimeout   time.Duration
	RebalanceTimeout time.Duration
	ProtocolType     string
	Protocols        []Protocol
	Assignment       []byte
}

// Coordinator holds every group this instance coordinates.
type Coordinator struct {
	cfg   Config
	log   zerolog.Logger
	clock Clock
	// offsets deletes committed offsets on DeleteGroups; nil-safe. Set once
	// before the bridge serves (in New), never changed afterwards.
	offsets OffsetsDeleter
	// emptyRetention is emptyGroupRetention (tests shorten it).
	emptyRetention time.Duration

	// genHook is called with the group locked after every new generation
	// (bridge/cluster persists generations with it); nil when unused.
	genHook func(group string, generation int32)
	// draining is closed by Drain: parked and later JoinGroup/SyncGroup
	// requests answer NOT_COORDINATOR.
	draining  chan struct{}
	drainOnce sync.Once

	mu     sync.Mutex
	groups map[string]*group
}

func New(cfg Config, log zerolog.Logger, clock Clock) *Coordinator {
	if clock == nil {
		clock = realClock{}
	}
	return &Coordinator{
		cfg:            cfg,
		log:            log,
		clock:          clock,
		emptyRetention: emptyGroupRetention,
		draining:       make(chan struct{}),
		groups:         map[string]*group{},
	}
}

// groupTimer is one cancellable timer of a group; seq identifies the
// current arming (0: not armed).
type groupTimer struct {
	stop func() bool
	seq  uint64
}

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

// ----------------------------------------------------------------------
// Coordinator entry points. Each takes the group's lock and releases it
// before returning; replies to parked requests arrive on their channels.

// lockGroup returns the group, locked, creating it when create is set; nil
// when it does not exist. A group found Dead was removed meanwhile: look
// again.
func (c *Coordinator) lockGroup(id string, create bool) *group {
	for {
		c.mu.Lock()
		g := c.groups[id]
		if g == nil {
			if !create {
				c.mu.Unlock()
				return nil
			}
			g = c.newGroup(id)
			c.groups[id] = g
		}
		c.mu.Unlock()
		g.mu.Lock()
		if g.state != StateDead {
			return g
		}
		g.mu.Unlock()
	}
}

// newGroup builds an Empty group; the caller holds c.mu.
func (c *Coordinator) newGroup(id string) *group {
	g := &group{
		c:           c,
		id:          id,
		stateSince:  c.clock.Now(),
		members:     map[string]*member{},
		static:      map[string]string{},
		pending:     map[string]*groupTimer{},
		pendingSync: map[string]struct{}{},
		votes:       map[string]int{},
	}
	g.armEmptyExpiry()
	return g
}

// join serves a JoinGroup; the answer arrives on reply (one slot), at once
// or when the join phase completes.
func (c *Coordinator) join(p JoinParams, reply chan<- JoinResult) {
	fail := func(code int16) { sendJoin(reply, JoinResult{Code: code, MemberID: p.MemberID, Generation: -1}) }
	if p.Group == "" {
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
	g := c.lockGroup(p.Group, p.MemberID == "")
	if g == nil {
		fail(kerr.UnknownMemberID.Code)
		return
	}
	defer g.mu.Unlock()
	if p.MemberID == "" {
		g.joinNewMember(p, reply)
	} else {
		g.joinExistingMember(p, reply)
	}
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

// describe returns the group as DescribeGroups shows it; false when the
// group is not known here.
func (c *Coordinator) describe(groupID string) (Description, bool) {
	g := c.lockGroup(groupID, false)
	if g == nil {
		return Description{}, false
	}
	defer g.mu.Unlock()
	d := Description{State: g.state.String(), ProtocolType: g.protocolType}
	stable := g.state == StateStable
	if stable {
		d.Protocol = g.protocol
	}
	for _, id := range g.order {
		m := g.members[id]
		md := MemberDescription{MemberID: m.id, InstanceID: m.instanceID, ClientID: m.clientID, ClientHost: m.clientHost}
		if stable {
			md.Metadata = m.metadataFor(g.protocol)
			md.Assignment = m.assignment
		}
		d.Members = append(d.Members, md)
	}
	return d, true
}

// list returns every group, sorted by id.
func (c *Coordinator) list() []Listing {
	c.mu.Lock()
	gs := make([]*group, 0, len(c.groups))
	for _, g := range c.groups {
		gs = append(gs, g)
	}
	c.mu.Unlock()
	out := make([]Listing, 0, len(gs))
	for _, g := range gs {
		g.mu.Lock()
		if g.state != StateDead {
			out = append(out, Listing{Group: g.id, ProtocolType: g.protocolType, State: g.state})
		}
		g.mu.Unlock()
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Group < out[j].Group })
	return out
}

// deleteGroup serves one group of a DeleteGroups: an Empty group is removed
// from memory and its committed offsets are deleted (through c.offsets). A
// group unknown here may still have offsets in Iggy (after a restart): they
// are deleted too, and GROUP_ID_NOT_FOUND is answered only when there were
// none.
func (c *Coordinator) deleteGroup(ctx context.Context, groupID string) (int16, string) {
	if groupID == "" {
		return kerr.GroupIDNotFound.Code, "group id is empty"
	}
	c.mu.Lock()
	g := c.groups[groupID]
	known := g != nil
	if known {
		g.mu.Lock()
		if g.state != StateEmpty {
			state := g.state
			g.mu.Unlock()
			c.mu.Unlock()
			return kerr.NonEmptyGroup.Code, "group is " + state.String()
		}
		g.kill()
		delete(c.groups, groupID)
		g.mu.Unlock()
	}
	c.mu.Unlock()
	if known {
		c.log.Info().Str("group_id", groupID).Msg("group deleted")
	}
	if c.offsets == nil {
		if known {
			return 0, ""
		}
		return kerr.GroupIDNotFound.Code, "group " + groupID + " not found"
	}
	err := c.offsets.DeleteGroupOffsets(ctx, groupID)
	switch {
	case err == nil:
		return 0, ""
	case errors.Is(err, ErrNoOffsets):
		if known {
			return 0, ""
		}
		return kerr.GroupIDNotFound.Code, "group " + groupID + " not found"
	}
	code, icode := c.offsets.OffsetsErrorCode(err)
	c.log.Warn().Err(err).Str("group_id", groupID).Uint32("iggy_code", icode).Msg("deleting committed offsets failed")
	return code, "deleting committed offsets failed: " + err.Error()
}

// validateCommit checks an OffsetCommit against the group, as Kafka does,
// and returns the error code for the whole request: 0,
// ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID or
// REBALANCE_IN_PROGRESS.
//
//   - generation < 0 ("simple" or admin commits) is accepted when the group
//     is unknown (an Empty group without protocol type is then created, as
//     Kafka does) or Empty.
//   - otherwise the member id (and instance id) must be a current member
//     and the generation the current one; commits during
//     CompletingRebalance answer REBALANCE_IN_PROGRESS; commits during
//     PreparingRebalance from the still-current generation are accepted.
//   - an empty group id answers INVALID_GROUP_ID.
//   - an unknown group with generation >= 0 answers ILLEGAL_GENERATION
//     (Kafka answers GROUP_ID_NOT_FOUND instead from OffsetCommit v9 on; the
//     caller maps it).
func (c *Coordinator) validateCommit(groupID, memberID string, generation int32, instanceID *string) int16 {
	if groupID == "" {
		return kerr.InvalidGroupID.Code
	}
	g := c.lockGroup(groupID, generation < 0)
	if g == nil {
		return kerr.IllegalGeneration.Code
	}
	defer g.mu.Unlock()
	if generation < 0 && g.state == StateEmpty {
		g.armEmptyExpiry() // a group in use stays in memory
		return 0
	}
	if g.adoptingNow() && generation >= 0 && g.members[memberID] == nil {
		g.adoptSeen[memberID] = struct{}{}
		// A member of the previous coordinator: it rejoins first (its
		// records since the last accepted commit are delivered again).
		return kerr.RebalanceInProgress.Code
	}
	if generation >= 0 || memberID != "" || instanceID != nil {
		if code := g.validateMember(memberID, instanceID); code != 0 {
			return code
		}
		if generation != g.generation {
			return kerr.IllegalGeneration.Code
		}
	} else if g.state != StateEmpty {
		return kerr.UnknownMemberID.Code
	}
	if g.state == StateCompletingRebalance {
		return kerr.RebalanceInProgress.Code
	}
	return 0
}

// offsetDeleteCheck tells OffsetDelete whether offsets of the group may be
// deleted: code is GROUP_ID_NOT_FOUND for a group unknown here,
// NON_EMPTY_GROUP for a group with members that is not a consumer group, 0
// otherwise; subscribed (never nil) reports the topics members of a
// consumer group are subscribed to, whose offsets answer
// GROUP_SUBSCRIBED_TO_TOPIC.
func (c *Coordinator) offsetDeleteCheck(groupID string) (code int16, subscribed func(topic string) bool) {
	none := func(string) bool { return false }
	g := c.lockGroup(groupID, false)
	if g == nil {
		return kerr.GroupIDNotFound.Code, none
	}
	defer g.mu.Unlock()
	if g.state == StateEmpty {
		return 0, none
	}
	if g.protocolType != ConsumerProtocolType {
		return kerr.NonEmptyGroup.Code, none
	}
	if !g.subsKnown {
		return 0, func(string) bool { return true }
	}
	subs := make(map[string]struct{}, len(g.subscribed))
	for t := range g.subscribed {
		subs[t] = struct{}{}
	}
	return 0, func(t string) bool { _, ok := subs[t]; return ok }
}

// snapshot returns the movable state of a group; false when unknown.
func (c *Coordinator) snapshot(groupID string) (Snapshot, bool) {
	g := c.lockGroup(groupID, false)
	if g == nil {
		return Snapshot{}, false
	}
	defer g.mu.Unlock()
	s := Snapshot{
		ID:           g.id,
		Generation:   g.generation,
		ProtocolType: g.protocolType,
		Protocol:     g.protocol,
		Leader:       g.leader,
		Rebalancing:  g.state == StatePreparingRebalance || g.state == StateCompletingRebalance,
	}
	for _, id := range g.order {
		m := g.members[id]
		s.Members = append(s.Members, MemberSnapshot{
			ID: m.id, InstanceID: m.instanceID, ClientID: m.clientID, ClientHost: m.clientHost,
			SessionTimeout: m.sessionTimeout, RebalanceTimeout: m.rebalanceTimeout,
			ProtocolType: m.protocolType, Protocols: slices.Clone(m.protocols), Assignment: m.assignment,
		})
	}
	return s, true
}

// adopt installs a group taken over from another coordinator: Stable with
// its members (each gets a fresh session) or Empty, then a new rebalance
// when it moved in the middle of one. It fails when the group exists here.
func (c *Coordinator) adopt(s Snapshot) error {
	if s.ID == "" {
		return errors.New("groups: group snapshot without id")
	}
	c.mu.Lock()
	if c.groups[s.ID] != nil {
		c.mu.Unlock()
		return errors.New("groups: group " + s.ID + " already exists here")
	}
	g := c.newGroup(s.ID)
	c.groups[s.ID] = g
	g.mu.Lock()
	c.mu.Unlock()
	defer g.mu.Unlock()
	g.generation = s.Generation
	for _, ms := range s.Members {
		if ms.ID == "" || g.members[ms.ID] != nil || (ms.InstanceID != nil && g.static[*ms.InstanceID] != "") {
			continue
		}
		m := &member{
			id: ms.ID, instanceID: ms.InstanceID, clientID: ms.ClientID, clientHost: ms.ClientHost,
			sessionTimeout: ms.SessionTimeout, rebalanceTimeout: ms.RebalanceTimeout,
			protocolType: ms.ProtocolType, protocols: slices.Clone(ms.Protocols), assignment: ms.Assignment,
		}
		g.add(m, nil)
		g.armHeartbeat(m, m.sessionTimeout)
	}
	g.protocolType = s.ProtocolType
	if len(g.members) == 0 {
		return nil
	}
	if g.members[s.Leader] != nil {
		g.leader = s.Leader
	}
	g.protocol = s.Protocol
	if g.votes[g.protocol] != len(g.members) {
		g.protocol = g.selectProtocol()
	}
	g.computeSubscribed()
	g.transition(StateStable)
	if s.Rebalancing {
		g.prepareRebalance("group moved during a rebalance")
	}
	return nil
}

// ----------------------------------------------------------------------
// Group internals; the caller holds g.mu.

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
	g.order = append(g.order, m.id)
	g.countVotes(m, 1)
	m.joinWait = reply
	if reply != nil {
		g.awaitingJoin++
	}
	if t := g.pending[m.id]; t != nil {
		g.disarm(t)
		delete(g.pending, m.id)
	}
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
		t := &groupTimer{}
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

// full reports whether the group has groups.max_size members: a new member
// is then refused (GROUP_MAX_SIZE_REACHED), as Kafka's group.max.size does.
func (g *group) full() bool {
	return len(g.members) >= int(g.c.cfg.MaxSize)
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

// adoptionWindow is how long after a move unknown member ids are taken
// as members of the previous coordinator; adoptionPoll is how often the
// first join phase checks whether they all rejoined.
const (
	adoptionWindow = 10 * time.Second
	adoptionPoll   = 250 * time.Millisecond
)

func (g *group) adoptingNow() bool {
	return g.adopting && g.c.clock.Now().Before(g.adoptUntil)
}

// adoptMissing reports whether a member of the previous coordinator that
// showed up here has not joined yet.
func (g *group) adoptMissing() bool {
	for id := range g.adoptSeen {
		if m := g.members[id]; m == nil || m.joinWait == nil {
			return true
		}
	}
	return false
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
	}
}

// expirePending runs when a pending member id was not used in time.
func (g *group) expirePending(id string) {
	if g.pending[id] == nil {
		return
	}
	delete(g.pending, id)
	g.c.log.Debug().Str("group_id", g.id).Str("member_id", id).Msg("pending member id expired")
	if g.state == StatePreparingRebalance && g.allJoined() {
		g.completeJoinPhase()
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

// armEmptyExpiry schedules the removal of the group from memory. Its
// callback takes coordinator.mu before group.mu (the lock order).
func (g *group) armEmptyExpiry() {
	g.disarm(&g.emptyTmr)
	g.timerSeq++
	seq := g.timerSeq
	g.emptyTmr.seq = seq
	c := g.c
	g.emptyTmr.stop = c.clock.AfterFunc(c.emptyRetention, func() {
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

// kill marks the group Dead and stops its timers; the caller removes it
// from the map.
func (g *group) kill() {
	g.state = StateDead
	g.disarm(&g.joinTimer)
	g.disarm(&g.syncTimer)
	g.disarm(&g.emptyTmr)
	for _, t := range g.pending {
		g.disarm(t)
	}
	for _, m := range g.members {
		g.disarm(&m.hb)
	}
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

// sendJoin and sendSync deliver an answer without ever blocking: every
// reply channel has one slot and gets one answer.
func sendJoin(ch chan<- JoinResult, r JoinResult) {
	select {
	case ch <- r:
	default:
	}
}

func sendSync(ch chan<- SyncResult, r SyncResult) {
	select {
	case ch <- r:
	default:
	}
}

// newMemberID returns prefix-<random UUID>, as Kafka forms member ids
// (prefix: the client id, or the group.instance.id of a static member).
func newMemberID(prefix string) string {
	var u [16]byte
	_, _ = rand.Read(u[:])
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	var b strings.Builder
	b.Grow(len(prefix) + 37)
	b.WriteString(prefix)
	b.WriteByte('-')
	h := hex.EncodeToString(u[:])
	b.WriteString(h[0:8])
	b.WriteByte('-')
	b.WriteString(h[8:12])
	b.WriteByte('-')
	b.WriteString(h[12:16])
	b.WriteByte('-')
	b.WriteString(h[16:20])
	b.WriteByte('-')
	b.WriteString(h[20:])
	return b.String()
}

// counts returns the number of live groups and of their members (metrics).
func (c *Coordinator) counts() (groups, members int) {
	c.mu.Lock()
	gs := make([]*group, 0, len(c.groups))
	for _, g := range c.groups {
		gs = append(gs, g)
	}
	c.mu.Unlock()
	for _, g := range gs {
		g.mu.Lock()
		if g.state != StateDead {
			groups++
			members += len(g.members)
		}
		g.mu.Unlock()
	}
	return groups, members
}
