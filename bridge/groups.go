package bridge

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

// groupOffsetsDeleter deletes the committed offsets of a group; DeleteGroups
// calls it (the offsets code implements it). It returns
// errGroupOffsetsNotFound when nothing was stored for the group.
type groupOffsetsDeleter interface {
	deleteGroupOffsets(ctx context.Context, group string) error
}

// errGroupOffsetsNotFound is what a groupOffsetsDeleter returns when the
// group has no committed offsets: DeleteGroups of a group this coordinator
// does not know then answers GROUP_ID_NOT_FOUND.
var errGroupOffsetsNotFound = errors.New("bridge: group has no committed offsets")

const (
	// newMemberJoinTimeout bounds how long a new member's JoinGroup may stay
	// parked (Kafka's group.classic.new.member.join.timeout, 5 minutes).
	newMemberJoinTimeout = 5 * time.Minute
	// emptyGroupRetention is how long an Empty group stays in memory.
	emptyGroupRetention = 24 * time.Hour
	// consumerProtocolType is the protocol type of Kafka consumers.
	consumerProtocolType = "consumer"
	// groupAuthorizedOperations is the KIP-430 bitfield of what any client
	// may do on a group here (no ACLs): READ (3), DELETE (6), DESCRIBE (8).
	groupAuthorizedOperations int32 = 1<<3 | 1<<6 | 1<<8
)

// groupState is a classic group's state.
type groupState uint8

const (
	groupEmpty groupState = iota
	groupPreparingRebalance
	groupCompletingRebalance
	groupStable
	groupDead
)

// String returns the state as Kafka names it (DescribeGroups, ListGroups).
func (s groupState) String() string {
	switch s {
	case groupEmpty:
		return "Empty"
	case groupPreparingRebalance:
		return "PreparingRebalance"
	case groupCompletingRebalance:
		return "CompletingRebalance"
	case groupStable:
		return "Stable"
	}
	return "Dead"
}

// groupClock is the coordinator's time source; unit tests inject a fake.
type groupClock interface {
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

// groupProtocol is one protocol a member supports, with its opaque metadata.
type groupProtocol struct {
	Name     string
	Metadata []byte
}

// joinParams is a decoded JoinGroup request.
type joinParams struct {
	group            string
	memberID         string
	instanceID       *string
	clientID         string
	clientHost       string
	sessionTimeout   time.Duration
	rebalanceTimeout time.Duration
	protocolType     string
	protocols        []groupProtocol
	requireKnownID   bool // v4+: KIP-394 MEMBER_ID_REQUIRED round trip
	canSkipAssign    bool // v9+: KIP-814 SkipAssignment understood
	reason           string
}

// joinMember is one entry of the leader's member list.
type joinMember struct {
	memberID   string
	instanceID *string
	metadata   []byte
}

// joinResult is the answer to a JoinGroup.
type joinResult struct {
	code         int16
	memberID     string
	generation   int32
	hasProtocol  bool // false: protocol type and name are null
	protocolType string
	protocol     string
	leader       string
	skipAssign   bool
	members      []joinMember
}

// syncParams is a decoded SyncGroup request.
type syncParams struct {
	group        string
	memberID     string
	instanceID   *string
	generation   int32
	protocolType *string // v5+, nil when absent
	protocol     *string // v5+, nil when absent
	assignments  map[string][]byte
}

// syncResult is the answer to a SyncGroup.
type syncResult struct {
	code         int16
	hasProtocol  bool
	protocolType string
	protocol     string
	assignment   []byte
}

// leaveIdentity is one member named in a LeaveGroup.
type leaveIdentity struct {
	memberID   string
	instanceID *string
	reason     string
}

// groupDescription is a group as DescribeGroups shows it.
type groupDescription struct {
	state        string
	protocolType string
	protocol     string
	members      []memberDescription
}

type memberDescription struct {
	memberID   string
	instanceID *string
	clientID   string
	clientHost string
	metadata   []byte
	assignment []byte
}

// groupListing is a group as ListGroups shows it.
type groupListing struct {
	group        string
	protocolType string
	state        groupState
}

// groupSnapshot is the movable state of a group: what another coordinator
// needs to take the group over (parked requests and timers are not part of
// it; members must rejoin or heartbeat the new coordinator).
type groupSnapshot struct {
	ID           string
	Generation   int32
	ProtocolType string
	Protocol     string
	Leader       string
	// Rebalancing is true when the snapshot was taken during a rebalance:
	// the adopting coordinator starts a new one.
	Rebalancing bool
	Members     []memberSnapshot
}

type memberSnapshot struct {
	ID               string
	InstanceID       *string
	ClientID         string
	ClientHost       string
	SessionTimeout   time.Duration
	RebalanceTimeout time.Duration
	ProtocolType     string
	Protocols        []groupProtocol
	Assignment       []byte
}

// groupCoordinator holds every group this instance coordinates.
type groupCoordinator struct {
	cfg   GroupsConfig
	log   zerolog.Logger
	clock groupClock
	// offsets deletes committed offsets on DeleteGroups; nil-safe. Set once
	// before the bridge serves (in New), never changed afterwards.
	offsets groupOffsetsDeleter
	// emptyRetention is emptyGroupRetention (tests shorten it).
	emptyRetention time.Duration

	mu     sync.Mutex
	groups map[string]*group
}

func newGroupCoordinator(cfg GroupsConfig, log zerolog.Logger, clock groupClock) *groupCoordinator {
	if clock == nil {
		clock = realClock{}
	}
	return &groupCoordinator{
		cfg:            cfg,
		log:            log,
		clock:          clock,
		emptyRetention: emptyGroupRetention,
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
	c  *groupCoordinator
	id string

	mu           sync.Mutex
	state        groupState
	prevState    groupState
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
	protocols        []groupProtocol
	assignment       []byte
	isNew            bool
	joinWait         chan<- joinResult
	syncWait         chan<- syncResult
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
func (m *member) sameProtocols(ps []groupProtocol) bool {
	return slices.EqualFunc(m.protocols, ps, func(a, b groupProtocol) bool {
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
func (c *groupCoordinator) lockGroup(id string, create bool) *group {
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
		if g.state != groupDead {
			return g
		}
		g.mu.Unlock()
	}
}

// newGroup builds an Empty group; the caller holds c.mu.
func (c *groupCoordinator) newGroup(id string) *group {
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
func (c *groupCoordinator) join(p joinParams, reply chan<- joinResult) {
	fail := func(code int16) { sendJoin(reply, joinResult{code: code, memberID: p.memberID, generation: -1}) }
	if p.group == "" {
		fail(kerr.InvalidGroupID.Code)
		return
	}
	if p.sessionTimeout < c.cfg.MinSessionTimeout || p.sessionTimeout > c.cfg.MaxSessionTimeout {
		fail(kerr.InvalidSessionTimeout.Code)
		return
	}
	if p.rebalanceTimeout <= 0 {
		p.rebalanceTimeout = p.sessionTimeout
	}
	g := c.lockGroup(p.group, p.memberID == "")
	if g == nil {
		fail(kerr.UnknownMemberID.Code)
		return
	}
	defer g.mu.Unlock()
	if p.memberID == "" {
		g.joinNewMember(p, reply)
	} else {
		g.joinExistingMember(p, reply)
	}
}

// sync serves a SyncGroup; the answer arrives on reply.
func (c *groupCoordinator) sync(p syncParams, reply chan<- syncResult) {
	fail := func(code int16) { sendSync(reply, syncResult{code: code}) }
	if p.group == "" {
		fail(kerr.InvalidGroupID.Code)
		return
	}
	g := c.lockGroup(p.group, false)
	if g == nil {
		fail(kerr.UnknownMemberID.Code)
		return
	}
	defer g.mu.Unlock()
	if g.state == groupEmpty {
		fail(kerr.UnknownMemberID.Code)
		return
	}
	if code := g.validateMember(p.memberID, p.instanceID); code != 0 {
		fail(code)
		return
	}
	if p.generation != g.generation {
		fail(kerr.IllegalGeneration.Code)
		return
	}
	if (p.protocolType != nil && *p.protocolType != g.protocolType) || (p.protocol != nil && *p.protocol != g.protocol) {
		fail(kerr.InconsistentGroupProtocol.Code)
		return
	}
	m := g.members[p.memberID]
	switch g.state {
	case groupPreparingRebalance:
		fail(kerr.RebalanceInProgress.Code)
	case groupCompletingRebalance:
		if m.syncWait != nil {
			sendSync(m.syncWait, syncResult{code: kerr.RebalanceInProgress.Code})
		}
		m.syncWait = reply
		g.removePendingSync(m.id)
		if m.id != g.leader {
			return
		}
		missing := 0
		for _, id := range g.order {
			a, ok := p.assignments[id]
			if !ok {
				missing++
			}
			g.members[id].assignment = a
		}
		g.logInfo().Str("member_id", m.id).Int("members", len(g.members)).Int("without_assignment", missing).
			Msg("group assignment received from leader")
		g.propagate(0)
		g.transition(groupStable)
	case groupStable:
		g.removePendingSync(m.id)
		sendSync(reply, syncResult{hasProtocol: true, protocolType: g.protocolType, protocol: g.protocol, assignment: m.assignment})
	}
}

// heartbeat serves a Heartbeat and returns its error code.
func (c *groupCoordinator) heartbeat(groupID, memberID string, instanceID *string, generation int32) int16 {
	if groupID == "" {
		return kerr.InvalidGroupID.Code
	}
	g := c.lockGroup(groupID, false)
	if g == nil {
		return kerr.UnknownMemberID.Code
	}
	defer g.mu.Unlock()
	if code := g.validateMember(memberID, instanceID); code != 0 {
		return code
	}
	if generation != g.generation {
		return kerr.IllegalGeneration.Code
	}
	m := g.members[memberID]
	switch g.state {
	case groupPreparingRebalance:
		g.armHeartbeat(m, m.sessionTimeout)
		return kerr.RebalanceInProgress.Code
	case groupCompletingRebalance, groupStable:
		g.armHeartbeat(m, m.sessionTimeout)
		return 0
	}
	return kerr.UnknownMemberID.Code
}

// leave serves a LeaveGroup: the request's error code and one code per
// identity.
func (c *groupCoordinator) leave(groupID string, ids []leaveIdentity) (int16, []int16) {
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
		case id.memberID == "":
			cur, ok := "", false
			if id.instanceID != nil {
				cur, ok = g.static[*id.instanceID]
			}
			if !ok {
				codes[i] = kerr.UnknownMemberID.Code
				continue
			}
			g.removeLeaving(g.members[cur], id.reason)
		case g.pending[id.memberID] != nil:
			g.removePending(id.memberID)
			g.logInfo().Str("member_id", id.memberID).Msg("pending member left the group")
		default:
			if code := g.validateMember(id.memberID, id.instanceID); code != 0 {
				codes[i] = code
				continue
			}
			g.removeLeaving(g.members[id.memberID], id.reason)
		}
		left++
	}
	if left > 0 {
		switch g.state {
		case groupStable, groupCompletingRebalance:
			g.maybePrepareRebalanceOrCompleteJoin("members left the group")
		case groupPreparingRebalance:
			g.maybeCompleteJoinPhase()
		}
	}
	return 0, codes
}

// describe returns the group as DescribeGroups shows it; false when the
// group is not known here.
func (c *groupCoordinator) describe(groupID string) (groupDescription, bool) {
	g := c.lockGroup(groupID, false)
	if g == nil {
		return groupDescription{}, false
	}
	defer g.mu.Unlock()
	d := groupDescription{state: g.state.String(), protocolType: g.protocolType}
	stable := g.state == groupStable
	if stable {
		d.protocol = g.protocol
	}
	for _, id := range g.order {
		m := g.members[id]
		md := memberDescription{memberID: m.id, instanceID: m.instanceID, clientID: m.clientID, clientHost: m.clientHost}
		if stable {
			md.metadata = m.metadataFor(g.protocol)
			md.assignment = m.assignment
		}
		d.members = append(d.members, md)
	}
	return d, true
}

// list returns every group, sorted by id.
func (c *groupCoordinator) list() []groupListing {
	c.mu.Lock()
	gs := make([]*group, 0, len(c.groups))
	for _, g := range c.groups {
		gs = append(gs, g)
	}
	c.mu.Unlock()
	out := make([]groupListing, 0, len(gs))
	for _, g := range gs {
		g.mu.Lock()
		if g.state != groupDead {
			out = append(out, groupListing{group: g.id, protocolType: g.protocolType, state: g.state})
		}
		g.mu.Unlock()
	}
	sort.Slice(out, func(i, j int) bool { return out[i].group < out[j].group })
	return out
}

// deleteGroup serves one group of a DeleteGroups: an Empty group is removed
// from memory and its committed offsets are deleted (through c.offsets). A
// group unknown here may still have offsets in Iggy (after a restart): they
// are deleted too, and GROUP_ID_NOT_FOUND is answered only when there were
// none.
func (c *groupCoordinator) deleteGroup(ctx context.Context, groupID string) (int16, string) {
	if groupID == "" {
		return kerr.GroupIDNotFound.Code, "group id is empty"
	}
	c.mu.Lock()
	g := c.groups[groupID]
	known := g != nil
	if known {
		g.mu.Lock()
		if g.state != groupEmpty {
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
	err := c.offsets.deleteGroupOffsets(ctx, groupID)
	switch {
	case err == nil:
		return 0, ""
	case errors.Is(err, errGroupOffsetsNotFound):
		if known {
			return 0, ""
		}
		return kerr.GroupIDNotFound.Code, "group " + groupID + " not found"
	}
	code := kafkaCode(err, scopeOffsets)
	c.log.Warn().Err(err).Str("group_id", groupID).Uint32("iggy_code", iggyCode(err)).Msg("deleting committed offsets failed")
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
func (c *groupCoordinator) validateCommit(groupID, memberID string, generation int32, instanceID *string) int16 {
	if groupID == "" {
		return kerr.InvalidGroupID.Code
	}
	g := c.lockGroup(groupID, generation < 0)
	if g == nil {
		return kerr.IllegalGeneration.Code
	}
	defer g.mu.Unlock()
	if generation < 0 && g.state == groupEmpty {
		g.armEmptyExpiry() // a group in use stays in memory
		return 0
	}
	if generation >= 0 || memberID != "" || instanceID != nil {
		if code := g.validateMember(memberID, instanceID); code != 0 {
			return code
		}
		if generation != g.generation {
			return kerr.IllegalGeneration.Code
		}
	} else if g.state != groupEmpty {
		return kerr.UnknownMemberID.Code
	}
	if g.state == groupCompletingRebalance {
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
func (c *groupCoordinator) offsetDeleteCheck(groupID string) (code int16, subscribed func(topic string) bool) {
	none := func(string) bool { return false }
	g := c.lockGroup(groupID, false)
	if g == nil {
		return kerr.GroupIDNotFound.Code, none
	}
	defer g.mu.Unlock()
	if g.state == groupEmpty {
		return 0, none
	}
	if g.protocolType != consumerProtocolType {
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
func (c *groupCoordinator) snapshot(groupID string) (groupSnapshot, bool) {
	g := c.lockGroup(groupID, false)
	if g == nil {
		return groupSnapshot{}, false
	}
	defer g.mu.Unlock()
	s := groupSnapshot{
		ID:           g.id,
		Generation:   g.generation,
		ProtocolType: g.protocolType,
		Protocol:     g.protocol,
		Leader:       g.leader,
		Rebalancing:  g.state == groupPreparingRebalance || g.state == groupCompletingRebalance,
	}
	for _, id := range g.order {
		m := g.members[id]
		s.Members = append(s.Members, memberSnapshot{
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
func (c *groupCoordinator) adopt(s groupSnapshot) error {
	if s.ID == "" {
		return errors.New("bridge: group snapshot without id")
	}
	c.mu.Lock()
	if c.groups[s.ID] != nil {
		c.mu.Unlock()
		return errors.New("bridge: group " + s.ID + " already exists here")
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
	g.transition(groupStable)
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
func (g *group) supportsProtocols(protocolType string, ps []groupProtocol) bool {
	if g.state == groupEmpty {
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
func (g *group) add(m *member, reply chan<- joinResult) {
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
		sendSync(m.syncWait, syncResult{code: kerr.UnknownMemberID.Code})
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
func (g *group) completeJoin(m *member, r joinResult) bool {
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
func (g *group) updateMember(m *member, p joinParams, reply chan<- joinResult) {
	g.countVotes(m, -1)
	m.protocols = p.protocols
	g.countVotes(m, 1)
	m.rebalanceTimeout = p.rebalanceTimeout
	m.sessionTimeout = p.sessionTimeout
	switch {
	case m.joinWait != nil && reply != nil:
		// A newer JoinGroup of the same member supersedes the parked one.
		sendJoin(m.joinWait, joinResult{code: kerr.RebalanceInProgress.Code, memberID: m.id, generation: -1})
	case m.joinWait == nil && reply != nil:
		g.awaitingJoin++
	case m.joinWait != nil && reply == nil:
		g.awaitingJoin--
	}
	m.joinWait = reply
}

func (g *group) joinNewMember(p joinParams, reply chan<- joinResult) {
	if !g.supportsProtocols(p.protocolType, p.protocols) {
		sendJoin(reply, joinResult{code: kerr.InconsistentGroupProtocol.Code, generation: -1})
		return
	}
	replacing := false // a known static instance takes its old place
	if p.instanceID != nil {
		_, replacing = g.static[*p.instanceID]
	}
	if !replacing && g.full() {
		sendJoin(reply, joinResult{code: kerr.GroupMaxSizeReached.Code, generation: -1})
		return
	}
	if p.instanceID != nil {
		newID := newMemberID(*p.instanceID)
		if old, ok := g.static[*p.instanceID]; ok {
			g.replaceStaticMember(p, old, newID, reply)
			return
		}
		g.addMemberAndRebalance(p, newID, reply)
		return
	}
	newID := newMemberID(p.clientID)
	if p.requireKnownID {
		t := &groupTimer{}
		g.pending[newID] = t
		g.arm(t, p.sessionTimeout, func() { g.expirePending(newID) })
		g.c.log.Debug().Str("group_id", g.id).Str("member_id", newID).Msg("member id required: new member must rejoin with it")
		sendJoin(reply, joinResult{code: kerr.MemberIDRequired.Code, memberID: newID, generation: -1})
		return
	}
	g.addMemberAndRebalance(p, newID, reply)
}

func (g *group) joinExistingMember(p joinParams, reply chan<- joinResult) {
	fail := func(code int16) { sendJoin(reply, joinResult{code: code, memberID: p.memberID, generation: -1}) }
	if !g.supportsProtocols(p.protocolType, p.protocols) {
		fail(kerr.InconsistentGroupProtocol.Code)
		return
	}
	if g.pending[p.memberID] != nil {
		if p.instanceID != nil {
			// Pending ids are only handed to dynamic members.
			fail(kerr.UnknownMemberID.Code)
			return
		}
		if g.full() {
			fail(kerr.GroupMaxSizeReached.Code)
			return
		}
		g.addMemberAndRebalance(p, p.memberID, reply)
		return
	}
	if code := g.validateMember(p.memberID, p.instanceID); code != 0 {
		fail(code)
		return
	}
	m := g.members[p.memberID]
	switch g.state {
	case groupPreparingRebalance:
		g.updateMember(m, p, reply)
		g.maybePrepareRebalanceOrCompleteJoin("member rejoined during rebalance")
	case groupCompletingRebalance:
		if m.sameProtocols(p.protocols) {
			// The member lost its JoinGroup answer: give it again.
			sendJoin(reply, g.joinAnswer(m.id, m.id == g.leader, g.leader, false))
			return
		}
		g.updateMember(m, p, reply)
		g.maybePrepareRebalanceOrCompleteJoin("member metadata changed during rebalance")
	case groupStable:
		if m.id == g.leader || !m.sameProtocols(p.protocols) {
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
func (g *group) joinAnswer(memberID string, withMembers bool, leader string, skip bool) joinResult {
	r := joinResult{
		memberID:     memberID,
		generation:   g.generation,
		hasProtocol:  true,
		protocolType: g.protocolType,
		protocol:     g.protocol,
		leader:       leader,
		skipAssign:   skip,
	}
	if withMembers {
		r.members = make([]joinMember, 0, len(g.order))
		for _, id := range g.order {
			m := g.members[id]
			r.members = append(r.members, joinMember{memberID: m.id, instanceID: m.instanceID, metadata: m.metadataFor(g.protocol)})
		}
	}
	return r
}

// full reports whether the group has groups.max_size members: a new member
// is then refused (GROUP_MAX_SIZE_REACHED), as Kafka's group.max.size does.
func (g *group) full() bool {
	return len(g.members) >= int(g.c.cfg.MaxSize)
}

func (g *group) addMemberAndRebalance(p joinParams, id string, reply chan<- joinResult) {
	m := &member{
		id:               id,
		instanceID:       p.instanceID,
		clientID:         p.clientID,
		clientHost:       p.clientHost,
		sessionTimeout:   p.sessionTimeout,
		rebalanceTimeout: p.rebalanceTimeout,
		protocolType:     p.protocolType,
		protocols:        p.protocols,
		isNew:            true,
	}
	if g.state == groupPreparingRebalance && g.prevState == groupEmpty {
		g.newMemberAdd = true
	}
	g.add(m, reply)
	// A new member cannot heartbeat while its JoinGroup is parked; bound
	// the wait instead.
	g.armHeartbeat(m, newMemberJoinTimeout)
	ev := g.logInfo().Str("member_id", id).Str("state", g.state.String())
	if p.instanceID != nil {
		ev = ev.Str("group_instance_id", *p.instanceID)
	}
	ev.Str("reason", p.reason).Msg("member joined the group")
	g.maybePrepareRebalanceOrCompleteJoin("new member joined")
}

// replaceStaticMember gives a known group.instance.id a new member id; the
// old id's parked requests are answered FENCED_INSTANCE_ID.
func (g *group) replaceStaticMember(p joinParams, oldID, newID string, reply chan<- joinResult) {
	old := g.members[oldID]
	if old == nil {
		// The static map and the members disagree: should not happen;
		// treat it as a new static member.
		delete(g.static, *p.instanceID)
		g.addMemberAndRebalance(p, newID, reply)
		return
	}
	prevLeader := g.leader
	g.completeJoin(old, joinResult{code: kerr.FencedInstanceID.Code, memberID: oldID, generation: -1})
	if old.syncWait != nil {
		sendSync(old.syncWait, syncResult{code: kerr.FencedInstanceID.Code})
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
	g.static[*p.instanceID] = newID
	g.armHeartbeat(nm, nm.sessionTimeout)
	g.logInfo().Str("member_id", newID).Str("old_member_id", oldID).Str("group_instance_id", *p.instanceID).
		Str("state", g.state.String()).Msg("static member rejoined with a new member id")

	g.updateMember(nm, p, reply)
	switch g.state {
	case groupStable:
		if g.selectProtocol() != g.protocol {
			g.maybePrepareRebalanceOrCompleteJoin("static member rejoined with other protocols")
			return
		}
		// Same protocol: no rebalance; the member gets the current
		// generation and, through SyncGroup, its previous assignment.
		var r joinResult
		if p.canSkipAssign {
			lead := newID == g.leader
			r = g.joinAnswer(newID, lead, g.leader, lead)
		} else {
			// Older clients would run the assignor if named leader: name
			// the previous leader id, so this member acts as a follower.
			r = g.joinAnswer(newID, false, prevLeader, false)
		}
		g.completeJoin(nm, r)
	case groupCompletingRebalance:
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
	case groupStable, groupCompletingRebalance, groupEmpty:
		g.prepareRebalance(reason)
	default:
		g.maybeCompleteJoinPhase()
	}
}

// maybeCompleteJoinPhase finishes the join phase once every member has
// rejoined (never during the initial delay).
func (g *group) maybeCompleteJoinPhase() {
	if g.state == groupPreparingRebalance && g.prevState != groupEmpty && g.allJoined() {
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
	if g.state == groupCompletingRebalance {
		for _, m := range g.members {
			m.assignment = nil
		}
		g.propagate(kerr.RebalanceInProgress.Code)
	}
	clear(g.pendingSync)
	g.disarm(&g.syncTimer)
	initial := g.state == groupEmpty
	if initial {
		delay := g.c.cfg.InitialRebalanceDelay
		remaining := max(g.rebalanceTimeout()-delay, 0)
		g.arm(&g.joinTimer, delay, func() { g.initialDelayPassed(delay, remaining) })
	}
	g.transition(groupPreparingRebalance)
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
	if g.state != groupPreparingRebalance {
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
	if g.state != groupPreparingRebalance {
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
	if len(g.members) == 0 {
		g.protocol = ""
		g.computeSubscribed()
		g.transition(groupEmpty)
		clear(g.pendingSync)
		g.logInfo().Msg("group is empty")
		return
	}
	g.protocol = g.selectProtocol()
	g.computeSubscribed()
	g.transition(groupCompletingRebalance)
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
	if gen != g.generation || (g.state != groupCompletingRebalance && g.state != groupStable) || len(g.pendingSync) == 0 {
		return
	}
	ids := make([]string, 0, len(g.pendingSync))
	for id := range g.pendingSync {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		if m := g.members[id]; m != nil {
			g.completeJoin(m, joinResult{code: kerr.UnknownMemberID.Code, generation: -1})
		}
		g.remove(id)
	}
	g.logInfo().Strs("member_ids", ids).Msg("removed members that did not sync")
	g.prepareRebalance("members did not sync in time")
}

// removePendingSync notes that a member sent its SyncGroup.
func (g *group) removePendingSync(id string) {
	delete(g.pendingSync, id)
	if len(g.pendingSync) == 0 || (g.state != groupCompletingRebalance && g.state != groupStable) {
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
		r := syncResult{code: code}
		if code == 0 {
			r.hasProtocol, r.protocolType, r.protocol, r.assignment = true, g.protocolType, g.protocol, m.assignment
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
	g.completeJoin(m, joinResult{code: kerr.UnknownMemberID.Code, generation: -1})
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
	if g.state == groupPreparingRebalance && g.allJoined() {
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
	g.completeJoin(m, joinResult{code: kerr.UnknownMemberID.Code, generation: -1})
	g.remove(id)
	switch g.state {
	case groupStable, groupCompletingRebalance:
		g.maybePrepareRebalanceOrCompleteJoin("member session expired")
	case groupPreparingRebalance:
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
func (g *group) transition(to groupState) {
	g.prevState, g.state = g.state, to
	g.stateSince = g.c.clock.Now()
	if to == groupEmpty {
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
		if g.emptyTmr.seq != seq || g.state != groupEmpty {
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
	g.state = groupDead
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
		if t.seq != seq || g.state == groupDead {
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
	if g.protocolType != consumerProtocolType {
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
func sendJoin(ch chan<- joinResult, r joinResult) {
	select {
	case ch <- r:
	default:
	}
}

func sendSync(ch chan<- syncResult, r syncResult) {
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
func (c *groupCoordinator) counts() (groups, members int) {
	c.mu.Lock()
	gs := make([]*group, 0, len(c.groups))
	for _, g := range c.groups {
		gs = append(gs, g)
	}
	c.mu.Unlock()
	for _, g := range gs {
		g.mu.Lock()
		if g.state != groupDead {
			groups++
			members += len(g.members)
		}
		g.mu.Unlock()
	}
	return groups, members
}
