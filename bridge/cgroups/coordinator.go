package cgroups

import (
	"crypto/rand"
	"encoding/hex"
	"regexp"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
)

// HeartbeatParams is one ConsumerGroupHeartbeat. A nil field (and a
// negative RebalanceTimeout) means "unchanged since the last heartbeat".
type HeartbeatParams struct {
	Group            string
	MemberID         string
	MemberEpoch      int32
	InstanceID       *string
	RackID           *string
	RebalanceTimeout time.Duration
	SubscribedTopics []string // nil: unchanged
	SubscribedRegex  *string
	ServerAssignor   *string
	Owned            []TP // nil: unchanged (not reported)
	OwnedSet         bool
	ClientID         string
	ClientHost       string
	// NeedMemberID: the client generates its member id (v1+); an empty
	// one is invalid. Before v1 the coordinator generates it.
	NeedMemberID bool
}

// HeartbeatResult answers a heartbeat.
type HeartbeatResult struct {
	Code              int16
	Message           string
	MemberID          string
	MemberEpoch       int32
	HeartbeatInterval time.Duration
	// Assignment is set (HasAssignment) when the member must be told its
	// assignment: in a full heartbeat or when it changed.
	HasAssignment bool
	Assignment    []TP
}

// Coordinator holds the consumer-protocol groups of this process. Safe for
// concurrent use.
type Coordinator struct {
	cfg Config
	log zerolog.Logger
	now func() time.Time

	// classic is the classic coordinator groups migrate from and to
	// (classic.go); nil: no online migration.
	classic Classic

	mu     sync.Mutex
	groups map[string]*group
}

type group struct {
	id          string
	epoch       int32 // group epoch
	targetEpoch int32 // epoch of target
	assignor    string
	members     map[string]*member
	instances   map[string]string // instance id -> member id
	target      map[string]map[TP]struct{}
	owner       map[TP]string // who owns (assigned or revoking) each partition
	subscribed  map[string]int32
	// topics is the metadata of the latest heartbeat, which classic
	// members' joins assign from (nil: none since a restore).
	topics map[string]int32
}

func newGroup(id string) *group {
	return &group{id: id, assignor: Assignors[0], members: map[string]*member{}, instances: map[string]string{},
		target: map[string]map[TP]struct{}{}, owner: map[TP]string{}, subscribed: map[string]int32{}}
}

// New builds a Coordinator; now is its clock (nil: time.Now).
func New(cfg Config, log zerolog.Logger, now func() time.Time) *Coordinator {
	if now == nil {
		now = time.Now
	}
	return &Coordinator{cfg: cfg, log: log, now: now, groups: map[string]*group{}}
}

func fail(code *kerr.Error, msg string, p HeartbeatParams) HeartbeatResult {
	return HeartbeatResult{Code: code.Code, Message: msg, MemberID: p.MemberID, MemberEpoch: p.MemberEpoch}
}

// validate is Kafka's check of a heartbeat before the group is looked at.
func (c *Coordinator) validate(p HeartbeatParams) (HeartbeatResult, bool) {
	inv := func(msg string) (HeartbeatResult, bool) { return fail(kerr.InvalidRequest, msg, p), false }
	switch {
	case p.Group == "":
		return inv("GroupId can't be empty.")
	case len(p.Group) > MaxGroupIDBytes:
		return fail(kerr.InvalidGroupID, "GroupId is longer than the 246 bytes its committed offsets' Iggy name has room for.", p), false
	case len(p.MemberID) > MaxMemberIDBytes:
		return inv("MemberId is longer than 255 bytes.")
	case p.InstanceID != nil && len(*p.InstanceID) > MaxMemberIDBytes:
		return inv("InstanceId is longer than 255 bytes.")
	case p.InstanceID != nil && *p.InstanceID == "":
		return inv("InstanceId can't be empty.")
	case p.RackID != nil && *p.RackID == "":
		return inv("RackId can't be empty.")
	case p.NeedMemberID && p.MemberID == "":
		return inv("MemberId can't be empty.")
	}
	switch e := p.MemberEpoch; {
	case e > 0 || e == leaveEpoch:
		if p.MemberID == "" {
			return inv("MemberId can't be empty.")
		}
	case e == joinEpoch:
		if p.RebalanceTimeout < 0 {
			return inv("RebalanceTimeoutMs must be provided in first request.")
		}
		if !p.OwnedSet || len(p.Owned) > 0 {
			return inv("TopicPartitions must be empty when (re-)joining.")
		}
		if p.SubscribedTopics == nil && p.SubscribedRegex == nil {
			return inv("SubscribedTopicNames or SubscribedTopicRegex must be set in first request.")
		}
	case e == staticLeaveEpoch:
		if p.MemberID == "" {
			return inv("MemberId can't be empty.")
		}
		if p.InstanceID == nil {
			return inv("InstanceId can't be null.")
		}
	default:
		return inv("MemberEpoch is invalid.")
	}
	if p.ServerAssignor != nil && !knownAssignor(*p.ServerAssignor) {
		return fail(kerr.UnsupportedAssignor, "ServerAssignor "+*p.ServerAssignor+" is not supported. Supported assignors: uniform, range.", p), false
	}
	return HeartbeatResult{}, true
}

// compileRegex compiles a subscription regex as a full match (Kafka
// matches the whole topic name); Go's regexp is RE2 like Kafka's RE2/J.
func compileRegex(s string) (*regexp.Regexp, error) {
	return regexp.Compile("^(?:" + s + ")$")
}

// Heartbeat serves a ConsumerGroupHeartbeat. topics is the metadata: every
// topic and its partition count (internal topics excluded).
func (c *Coordinator) Heartbeat(p HeartbeatParams, topics map[string]int32) HeartbeatResult {
	if r, ok := c.validate(p); !ok {
		return r
	}
	var re *regexp.Regexp
	if p.SubscribedRegex != nil && *p.SubscribedRegex != "" {
		var err error
		if re, err = compileRegex(*p.SubscribedRegex); err != nil {
			return fail(kerr.InvalidRegularExpression, err.Error(), p)
		}
	}
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sweep(now, p.Group)
	g := c.groups[p.Group]
	if g == nil {
		if p.MemberEpoch != joinEpoch {
			return fail(kerr.UnknownMemberID, "the group has no member "+p.MemberID, p)
		}
		var refused bool
		if g, refused = c.upgrade(p.Group, now); refused {
			return fail(kerr.GroupIDNotFound, "Group "+p.Group+" is not a consumer group", p)
		}
		if g == nil {
			g = newGroup(p.Group)
		}
		c.groups[p.Group] = g
	}
	g.topics = topics

	switch p.MemberEpoch {
	case leaveEpoch, staticLeaveEpoch:
		return c.leave(g, p)
	}

	var m *member
	start := g.epoch
	if p.MemberEpoch == joinEpoch {
		var r HeartbeatResult
		var ok bool
		if m, r, ok = c.joinMember(g, p); !ok {
			return r
		}
	} else {
		m = g.members[p.MemberID]
		if m == nil {
			return fail(kerr.UnknownMemberID, "the group has no member "+p.MemberID, p)
		}
		if p.InstanceID != nil && g.instances[*p.InstanceID] != m.id {
			return fail(kerr.FencedInstanceID, "instance "+*p.InstanceID+" belongs to another member", p)
		}
		if code, msg := checkEpoch(m, p); code != nil {
			return fail(code, msg, p)
		}
	}
	before := copySet(m.assigned)
	c.update(g, m, p, re, now)
	c.refreshMetadata(g, topics)
	g.bumpedOnce(start)
	if g.epoch > g.targetEpoch {
		c.computeTarget(g, topics)
	}
	var owned map[TP]struct{}
	if p.OwnedSet {
		owned = make(map[TP]struct{}, len(p.Owned))
		for _, tp := range p.Owned {
			owned[tp] = struct{}{}
		}
	}
	c.reconcile(g, m, owned, now)
	r := HeartbeatResult{MemberID: m.id, MemberEpoch: m.epoch, HeartbeatInterval: c.cfg.HeartbeatInterval}
	full := p.MemberEpoch == joinEpoch || (p.RebalanceTimeout >= 0 && p.SubscribedTopics != nil && p.OwnedSet)
	if full || !sameSet(before, m.assigned) {
		r.HasAssignment = true
		r.Assignment = sortedTPs(m.assigned)
	}
	return r
}

// reconcile moves m towards its target; owned is what it reported owning
// (nil: not reported).
func (c *Coordinator) reconcile(g *group, m *member, owned map[TP]struct{}, now time.Time) {
	prevState := m.state
	g.release(m)
	m.reconcile(g.targetEpoch, g.target[m.id], owned, func(tp TP) bool {
		o, ok := g.owner[tp]
		return ok && o != m.id
	})
	g.own(m)
	if m.state == unrevokedPartitions && prevState != unrevokedPartitions {
		m.revokeDeadline = now.Add(m.rebalanceTimeout)
	}
	if m.state != prevState {
		c.log.Debug().Str("group", g.id).Str("member_id", m.id).Int32("member_epoch", m.epoch).
			Str("member_state", m.state.String()).Msg("consumer group member reconciling")
	}
}

// checkEpoch is Kafka's member epoch check: a greater epoch is fenced; a
// smaller one is accepted only when it is the previous epoch and the member
// owns a subset of its assignment (the response with the new epoch was
// lost).
func checkEpoch(m *member, p HeartbeatParams) (*kerr.Error, string) {
	switch {
	case p.MemberEpoch > m.epoch:
		return kerr.FencedMemberEpoch, "the member epoch is greater than the coordinator's"
	case p.MemberEpoch < m.epoch:
		if p.MemberEpoch != m.prevEpoch || !p.OwnedSet {
			return kerr.FencedMemberEpoch, "the member epoch is smaller than the coordinator's"
		}
		for _, tp := range p.Owned {
			if _, ok := m.assigned[tp]; !ok {
				return kerr.FencedMemberEpoch, "the member epoch is smaller than the coordinator's"
			}
		}
	}
	return nil, ""
}

// joinMember finds or creates the member of an epoch-0 heartbeat.
func (c *Coordinator) joinMember(g *group, p HeartbeatParams) (*member, HeartbeatResult, bool) {
	id := p.MemberID
	if id == "" {
		id = newMemberID()
	}
	if p.InstanceID != nil {
		if oldID, ok := g.instances[*p.InstanceID]; ok {
			old := g.members[oldID]
			if old.epoch != staticLeaveEpoch && oldID != id {
				return nil, fail(kerr.UnreleasedInstanceID, "static member "+*p.InstanceID+" has not left the group", p), false
			}
			// The instance comes back under a new member id: it takes the
			// old member's place and assignment, with no rebalance.
			g.release(old)
			delete(g.members, oldID)
			n := *old
			n.id, n.epoch, n.prevEpoch, n.state, n.revoking = id, 0, 0, stable, nil
			if t, ok := g.target[oldID]; ok {
				delete(g.target, oldID)
				g.target[id] = t
			}
			g.members[id] = &n
			g.instances[*p.InstanceID] = id
			g.own(&n)
			c.log.Info().Str("group", g.id).Str("member_id", id).Str("previous_member_id", oldID).
				Str("instance_id", *p.InstanceID).Msg("consumer group static member replaced")
			return &n, HeartbeatResult{}, true
		}
	}
	if old := g.members[id]; old != nil {
		// A member rejoining (after a fence) starts again from nothing.
		c.removeMember(g, old, "rejoin")
	}
	if int32(len(g.members)) >= c.cfg.MaxSize {
		return nil, fail(kerr.GroupMaxSizeReached, "the consumer group has reached its maximum size", p), false
	}
	m := &member{id: id, assigned: map[TP]struct{}{}}
	g.members[id] = m
	if p.InstanceID != nil {
		g.instances[*p.InstanceID] = id
	}
	g.epoch++
	c.log.Info().Str("group", g.id).Str("member_id", id).Int32("group_epoch", g.epoch).Msg("consumer group member joined")
	return m, HeartbeatResult{}, true
}

// update applies what the heartbeat changes; a changed subscription or
// assignor bumps the group epoch.
func (c *Coordinator) update(g *group, m *member, p HeartbeatParams, re *regexp.Regexp, now time.Time) {
	m.sessionDeadline = now.Add(c.cfg.SessionTimeout)
	if p.InstanceID != nil {
		m.instanceID = p.InstanceID
	}
	if p.RackID != nil {
		m.rackID = p.RackID
	}
	if p.RebalanceTimeout >= 0 {
		m.rebalanceTimeout = p.RebalanceTimeout
	}
	m.clientID, m.clientHost = p.ClientID, p.ClientHost
	changed := false
	if p.SubscribedTopics != nil {
		t := slices.Clone(p.SubscribedTopics)
		sort.Strings(t)
		t = slices.Compact(t)
		if !slices.Equal(t, m.topics) {
			m.topics, changed = t, true
		}
	}
	if p.SubscribedRegex != nil && *p.SubscribedRegex != m.regex {
		m.regex, m.re, changed = *p.SubscribedRegex, re, true
	}
	if p.ServerAssignor != nil && *p.ServerAssignor != m.assignor {
		m.assignor, changed = *p.ServerAssignor, true
	}
	if changed {
		g.epoch++
	}
}

// bumpedOnce makes the bumps of one request one (a member joining with a
// new subscription to topics new to the group is one new group epoch, as
// Kafka bumps it once per heartbeat); start is the epoch the request found.
func (g *group) bumpedOnce(start int32) {
	if g.epoch > start {
		g.epoch = start + 1
	}
}

// refreshMetadata bumps the group epoch when a subscribed topic appears,
// goes or changes its partition count.
func (c *Coordinator) refreshMetadata(g *group, topics map[string]int32) {
	now := map[string]int32{}
	for t, n := range topics {
		for _, m := range g.members {
			if m.subscribes(t) {
				now[t] = n
				break
			}
		}
	}
	if len(now) != len(g.subscribed) || !sameCounts(now, g.subscribed) {
		g.subscribed = now
		g.epoch++
	}
}

func sameCounts(a, b map[string]int32) bool {
	for t, n := range a {
		if m, ok := b[t]; !ok || m != n {
			return false
		}
	}
	return true
}

// computeTarget computes the target assignment of the group epoch with the
// assignor most members ask for (the default when none asks).
func (c *Coordinator) computeTarget(g *group, topics map[string]int32) {
	votes := map[string]int{}
	for _, m := range g.members {
		if m.assignor != "" {
			votes[m.assignor]++
		}
	}
	g.assignor = Assignors[0]
	for _, name := range Assignors {
		if votes[name] > votes[g.assignor] {
			g.assignor = name
		}
	}
	in := assignInput{members: map[string][]string{}, topics: g.subscribed, prev: g.target}
	for id, m := range g.members {
		var subs []string
		for t := range g.subscribed {
			if m.subscribes(t) {
				subs = append(subs, t)
			}
		}
		sort.Strings(subs)
		in.members[id] = subs
	}
	g.target = assign(g.assignor, in)
	g.targetEpoch = g.epoch
	c.log.Info().Str("group", g.id).Int32("group_epoch", g.epoch).Str("assignor", g.assignor).
		Int("members", len(g.members)).Msg("consumer group target assignment computed")
}

// leave serves epochs -1 (leave) and -2 (a static member leaves for now
// and keeps its partitions until its session times out).
func (c *Coordinator) leave(g *group, p HeartbeatParams) HeartbeatResult {
	m := g.members[p.MemberID]
	if m == nil {
		return fail(kerr.UnknownMemberID, "the group has no member "+p.MemberID, p)
	}
	switch {
	case p.MemberEpoch == staticLeaveEpoch:
		m.epoch = staticLeaveEpoch
		c.log.Info().Str("group", g.id).Str("member_id", m.id).Msg("consumer group static member left temporarily")
	case c.canDowngrade(g, m):
		c.downgrade(g, m)
	default:
		c.removeMember(g, m, "leave")
	}
	return HeartbeatResult{MemberID: p.MemberID, MemberEpoch: p.MemberEpoch, HeartbeatInterval: c.cfg.HeartbeatInterval}
}

// removeMember takes a member out of the group and bumps the group epoch.
func (c *Coordinator) removeMember(g *group, m *member, reason string) {
	g.release(m)
	delete(g.members, m.id)
	delete(g.target, m.id)
	if m.instanceID != nil && g.instances[*m.instanceID] == m.id {
		delete(g.instances, *m.instanceID)
	}
	g.epoch++
	c.log.Info().Str("group", g.id).Str("member_id", m.id).Str("reason", reason).Int32("group_epoch", g.epoch).
		Msg("consumer group member removed")
}

// release forgets what m owns in the group's ownership map.
func (g *group) release(m *member) {
	for tp := range m.assigned {
		if g.owner[tp] == m.id {
			delete(g.owner, tp)
		}
	}
	for tp := range m.revoking {
		if g.owner[tp] == m.id {
			delete(g.owner, tp)
		}
	}
}

// own records what m owns.
func (g *group) own(m *member) {
	for tp := range m.assigned {
		g.owner[tp] = m.id
	}
	for tp := range m.revoking {
		g.owner[tp] = m.id
	}
}

// Sweep removes the members whose session timed out, and the members that
// did not revoke partitions within their rebalance timeout (fenced, as
// Kafka fences them). Every Heartbeat, Describe and List sweeps first, so
// no timer is needed: a timed-out member's partitions matter only to the
// heartbeats of the members that take them over.
func (c *Coordinator) Sweep() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sweep(c.now(), "")
}

// sweep removes timed-out members. A removal that downgrades the group to
// a classic one happens only within a call of that group (serving), which
// persists the change across sidecars; elsewhere it waits for one.
func (c *Coordinator) sweep(now time.Time, serving string) {
	for _, g := range c.groups {
		for _, m := range g.members {
			reason := ""
			switch {
			case now.After(m.sessionDeadline):
				reason = "session_timeout"
			case m.state == unrevokedPartitions && now.After(m.revokeDeadline):
				reason = "rebalance_timeout"
			case m.classicExpired(now) != "":
				reason = m.classicExpired(now)
			default:
				continue
			}
			if c.canDowngrade(g, m) {
				if g.id == serving {
					c.downgrade(g, m)
					break
				}
				continue
			}
			c.removeMember(g, m, reason)
		}
	}
}

// Counts returns the groups and members held.
func (c *Coordinator) Counts() (groups, members int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, g := range c.groups {
		members += len(g.members)
	}
	return len(c.groups), members
}

func newMemberID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func copySet(s map[TP]struct{}) map[TP]struct{} {
	out := make(map[TP]struct{}, len(s))
	for tp := range s {
		out[tp] = struct{}{}
	}
	return out
}

func sameSet(a, b map[TP]struct{}) bool {
	if len(a) != len(b) {
		return false
	}
	for tp := range a {
		if _, ok := b[tp]; !ok {
			return false
		}
	}
	return true
}
