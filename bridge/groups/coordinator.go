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
//     after groups.empty_retention (its committed offsets live in Iggy and
//     are not touched), at once when it never completed a rebalance and
//     its last pending member id lapsed. Bounds: groups.max_size members
//     per group, groups.max_pending_members pending ids per sidecar,
//     groups.max_rebalance_timeout, group ids of MaxGroupIDBytes, member
//     ids of MaxMemberIDPrefixBytes + 37. A group that moves to another sidecar is not carried
//     over: its new coordinator seeds it with the stored generation and the
//     members rejoin (adoption.go).
//
// Locking: Coordinator.mu guards the groups map only; group.mu guards
// everything inside one group. Lock order: coordinator.mu before group.mu
// (lookup, creation, deletion, expiry of empty groups); code holding a
// group.mu never takes coordinator.mu. Timer callbacks take the locks
// themselves and check a per-timer sequence number, so a callback that lost
// the race with its cancellation does nothing. Replies to parked requests go
// to channels with one slot, sent without blocking while the lock is held.
//
// Files: coordinator.go (the Coordinator, its group map and gauges),
// params.go (call values), member.go (a group's members and state),
// join.go (JoinGroup), rebalance.go (join and sync phases), session.go
// (Heartbeat, LeaveGroup, expiry, timers), admin.go (describe, list,
// delete, commit checks), adoption.go (groups moving between sidecars),
// service.go (the Service interface).

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
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

// Coordinator holds every group this instance coordinates.
type Coordinator struct {
	cfg   Config
	log   zerolog.Logger
	clock Clock
	// offsets deletes committed offsets on DeleteGroups; nil-safe. Set once
	// before the bridge serves (in New), never changed afterwards.
	offsets OffsetsDeleter
	// emptyRetention is groups.empty_retention (tests shorten it).
	emptyRetention time.Duration
	// pendingIDs counts the KIP-394 pending member ids of every group
	// (groups.max_pending_members).
	pendingIDs atomic.Int64

	// genHook is called with the group locked after every new generation
	// (bridge/cluster persists generations with it); nil when unused.
	genHook func(group string, generation int32)
	// draining is closed by Drain: parked and later JoinGroup/SyncGroup
	// requests answer NOT_COORDINATOR.
	draining  chan struct{}
	drainOnce sync.Once

	mu     sync.Mutex
	groups map[string]*group

	// liveGroups and liveMembers are the metric gauges, adjusted where a
	// group enters the map (insert), dies (group.kill) or gains or loses a
	// member (group.add, group.remove), so Counts locks nothing.
	liveGroups  atomic.Int64
	liveMembers atomic.Int64
}

func New(cfg Config, log zerolog.Logger, clock Clock) *Coordinator {
	if clock == nil {
		clock = realClock{}
	}
	retention := cfg.EmptyRetention
	if retention <= 0 {
		retention = emptyGroupRetention
	}
	return &Coordinator{
		cfg:            cfg,
		log:            log,
		clock:          clock,
		emptyRetention: retention,
		draining:       make(chan struct{}),
		groups:         map[string]*group{},
	}
}

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
			c.insert(g)
		}
		c.mu.Unlock()
		g.mu.Lock()
		if g.state != StateDead {
			return g
		}
		g.mu.Unlock()
	}
}

// insert puts a new group into the map; the caller holds c.mu.
func (c *Coordinator) insert(g *group) {
	c.groups[g.id] = g
	c.liveGroups.Add(1)
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
	if len(prefix) > MaxMemberIDPrefixBytes {
		prefix = strings.ToValidUTF8(prefix[:MaxMemberIDPrefixBytes], "")
	}
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
