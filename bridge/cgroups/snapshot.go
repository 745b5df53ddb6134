package cgroups

// A group's state as its coordinator persists it, so that the next
// coordinator of the group (after an owner move) goes on from the same
// epochs and assignment instead of starting the group again: the group
// epoch, the target assignment and its epoch, the subscriptions, and every
// member's epochs, reconciliation state and owned and revoking partitions.
// Deadlines are not kept: a restored member's session (and revocation)
// timers start again at the restore. The encoding is JSON with sorted
// members and partitions, so the same state always encodes to the same
// bytes (the caller writes only what changed).

import (
	"encoding/json"
	"errors"
	"sort"
	"time"

	"github.com/kafka-iggy/kafka-iggy/bridge/groups"
)

// snapshotVersion is the format written.
const snapshotVersion = 1

type snapshot struct {
	V           int              `json:"v"`
	Group       string           `json:"group"`
	Deleted     bool             `json:"deleted,omitempty"`
	Epoch       int32            `json:"epoch,omitempty"`
	TargetEpoch int32            `json:"target_epoch,omitempty"`
	Assignor    string           `json:"assignor,omitempty"`
	Subscribed  map[string]int32 `json:"subscribed,omitempty"`
	Members     []snapshotMember `json:"members,omitempty"`
}

type snapshotMember struct {
	ID          string   `json:"id"`
	InstanceID  *string  `json:"instance_id,omitempty"`
	RackID      *string  `json:"rack_id,omitempty"`
	ClientID    string   `json:"client_id,omitempty"`
	ClientHost  string   `json:"client_host,omitempty"`
	Epoch       int32    `json:"epoch"`
	PrevEpoch   int32    `json:"prev_epoch"`
	State       int8     `json:"state,omitempty"`
	Topics      []string `json:"topics,omitempty"`
	Regex       string   `json:"regex,omitempty"`
	Assignor    string   `json:"assignor,omitempty"`
	RebalanceMs int64    `json:"rebalance_timeout_ms"`
	Assigned    []TP     `json:"assigned,omitempty"`
	Revoking    []TP     `json:"revoking,omitempty"`
	Target      []TP     `json:"target,omitempty"`
	// Classic is set for a member using the classic protocol.
	Classic *snapshotClassic `json:"classic,omitempty"`
}

type snapshotClassic struct {
	SessionMs int64              `json:"session_timeout_ms"`
	Protocols []snapshotProtocol `json:"protocols"`
}

type snapshotProtocol struct {
	Name     string `json:"name"`
	Metadata []byte `json:"metadata"`
}

// Snapshot encodes the group's state; held is false when no group of that
// id is held here (deleted, dropped or never created).
func (c *Coordinator) Snapshot(id string) (b []byte, held bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.groups[id]
	if g == nil {
		return nil, false
	}
	s := snapshot{V: snapshotVersion, Group: id, Epoch: g.epoch, TargetEpoch: g.targetEpoch, Assignor: g.assignor, Subscribed: g.subscribed}
	for _, m := range g.members {
		var cl *snapshotClassic
		if m.classic != nil {
			cl = &snapshotClassic{SessionMs: m.classic.sessionTimeout.Milliseconds()}
			for _, p := range m.classic.protocols {
				cl.Protocols = append(cl.Protocols, snapshotProtocol{p.Name, p.Metadata})
			}
		}
		s.Members = append(s.Members, snapshotMember{
			ID: m.id, InstanceID: m.instanceID, RackID: m.rackID, ClientID: m.clientID, ClientHost: m.clientHost,
			Epoch: m.epoch, PrevEpoch: m.prevEpoch, State: int8(m.state), Topics: m.topics, Regex: m.regex,
			Assignor: m.assignor, RebalanceMs: m.rebalanceTimeout.Milliseconds(),
			Assigned: sortedTPs(m.assigned), Revoking: sortedTPs(m.revoking), Target: sortedTPs(g.target[m.id]), Classic: cl,
		})
	}
	sort.Slice(s.Members, func(i, j int) bool { return s.Members[i].ID < s.Members[j].ID })
	b, _ = json.Marshal(s) // plain data: cannot fail
	return b, true
}

// Tombstone is the record of a group that is gone (deleted, or dropped
// empty for a classic group of the same id).
func Tombstone(id string) []byte {
	b, _ := json.Marshal(snapshot{V: snapshotVersion, Group: id, Deleted: true})
	return b
}

// errSnapshot: a record that is not a snapshot of the group asked for.
var errSnapshot = errors.New("cgroups: not a snapshot of this group")

// Restore installs a group from its snapshot unless a group of that id is
// held already (which wins). A tombstone restores nothing. Every member's
// session starts now; a member revoking partitions gets its rebalance
// timeout again from now.
func (c *Coordinator) Restore(id string, b []byte) error {
	var s snapshot
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	if s.Group != id || s.V != snapshotVersion {
		return errSnapshot
	}
	if s.Deleted {
		return nil
	}
	now := c.now()
	g := &group{id: id, epoch: s.Epoch, targetEpoch: s.TargetEpoch, assignor: s.Assignor, members: map[string]*member{},
		instances: map[string]string{}, target: map[string]map[TP]struct{}{}, owner: map[TP]string{}, subscribed: s.Subscribed}
	if g.assignor == "" {
		g.assignor = Assignors[0]
	}
	if g.subscribed == nil {
		g.subscribed = map[string]int32{}
	}
	for _, sm := range s.Members {
		m := &member{id: sm.ID, instanceID: sm.InstanceID, rackID: sm.RackID, clientID: sm.ClientID, clientHost: sm.ClientHost,
			epoch: sm.Epoch, prevEpoch: sm.PrevEpoch, state: memberState(sm.State), topics: sm.Topics, regex: sm.Regex,
			assignor: sm.Assignor, rebalanceTimeout: time.Duration(sm.RebalanceMs) * time.Millisecond,
			assigned: setOf(sm.Assigned), sessionDeadline: now.Add(c.cfg.SessionTimeout)}
		if cl := sm.Classic; cl != nil {
			m.classic = &classicInfo{sessionTimeout: time.Duration(cl.SessionMs) * time.Millisecond}
			for _, p := range cl.Protocols {
				m.classic.protocols = append(m.classic.protocols, groups.Protocol{Name: p.Name, Metadata: p.Metadata})
			}
			if len(m.classic.protocols) == 0 {
				return errSnapshot
			}
			m.sessionDeadline = now.Add(m.classic.sessionTimeout)
		}
		if len(sm.Revoking) > 0 {
			m.revoking = setOf(sm.Revoking)
		}
		if m.state == unrevokedPartitions {
			m.revokeDeadline = now.Add(m.rebalanceTimeout)
		}
		if m.regex != "" {
			re, err := compileRegex(m.regex)
			if err != nil {
				return err
			}
			m.re = re
		}
		g.members[m.id] = m
		if m.instanceID != nil {
			g.instances[*m.instanceID] = m.id
		}
		if sm.Target != nil || s.TargetEpoch > 0 {
			g.target[m.id] = setOf(sm.Target)
		}
		g.own(m)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.groups[id] == nil {
		c.groups[id] = g
		c.log.Info().Str("group", id).Int32("group_epoch", g.epoch).Int("members", len(g.members)).
			Msg("consumer group restored from its persisted state")
	}
	return nil
}

// Has reports whether a group of that id is held here.
func (c *Coordinator) Has(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.groups[id] != nil
}

func setOf(tps []TP) map[TP]struct{} {
	out := make(map[TP]struct{}, len(tps))
	for _, tp := range tps {
		out[tp] = struct{}{}
	}
	return out
}
