package groups

// Groups that move between coordinators (bridge/cluster): seeding a group
// taken over with its stored generation, accepting the previous
// coordinator's member ids for a while, and dropping the groups of a shard
// this sidecar no longer owns.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Has reports whether the group is held here.
func (c *Coordinator) Has(group string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.groups[group] != nil
}

// Seed creates an Empty group at the given generation unless the group is
// already held; its next rebalance gets generation+1. A coordinator that
// takes a group over from another sidecar seeds it with the generation
// persisted in Iggy, so generations never go backwards across moves. It
// reports whether the group was created.
//
// adopting says the group existed at another coordinator: for 10 s
// JoinGroup accepts the member ids of the previous coordinator (members
// keep their ids), their Heartbeat and OffsetCommit answer
// REBALANCE_IN_PROGRESS so they rejoin, and the first join phase waits
// (within those 10 s) until every such member that showed up has joined,
// so a move costs one rebalance.
func (c *Coordinator) Seed(group string, generation int32, adopting bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.groups[group] != nil {
		return false
	}
	g := c.newGroup(group)
	g.generation = generation
	g.adopting = adopting
	g.adoptUntil = c.clock.Now().Add(adoptionWindow)
	g.adoptSeen = map[string]struct{}{}
	c.insert(g)
	return true
}

// SetGenerationHook sets a function called, with the group locked, after
// every new generation of a group; it must not block. Call before serving.
func (c *Coordinator) SetGenerationHook(f func(group string, generation int32)) { c.genHook = f }

// Generation returns the group's current generation; false when not held.
func (c *Coordinator) Generation(group string) (int32, bool) {
	g := c.lockGroup(group, false)
	if g == nil {
		return 0, false
	}
	defer g.mu.Unlock()
	return g.generation, true
}

// Drop forgets every group for which match returns true, as a Kafka
// coordinator unloading a partition does: parked JoinGroup and SyncGroup
// requests answer NOT_COORDINATOR at once, timers stop, and the members
// find the group again at its new coordinator. It returns how many groups
// were dropped.
func (c *Coordinator) Drop(match func(group string) bool) int {
	c.mu.Lock()
	var gs []*group
	for id, g := range c.groups {
		if match(id) {
			gs = append(gs, g)
			delete(c.groups, id)
		}
	}
	c.mu.Unlock()
	for _, g := range gs {
		g.mu.Lock()
		for _, m := range g.members {
			if m.joinWait != nil {
				sendJoin(m.joinWait, JoinResult{Code: kerr.NotCoordinator.Code, MemberID: m.id, Generation: -1})
				m.joinWait = nil
			}
			if m.syncWait != nil {
				sendSync(m.syncWait, SyncResult{Code: kerr.NotCoordinator.Code})
				m.syncWait = nil
			}
		}
		g.kill()
		g.mu.Unlock()
	}
	return len(gs)
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
