package groups

// The narrow interface bridge's group APIs call (JoinGroup 11, SyncGroup 14,
// Heartbeat 12, LeaveGroup 13, DescribeGroups 15, ListGroups 16,
// DeleteGroups 42, and the group checks of OffsetCommit 08 and
// OffsetDelete 47). The API files do not know where a group lives: the
// local Coordinator serves it from this process's memory, and
// bridge/cluster's Router sends it to the sidecar that owns the group's
// shard over the peer link behind the same calls.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Service serves the classic group protocol for the bridge.
type Service interface {
	// Join serves a JoinGroup; it blocks until the join phase completes,
	// ctx ends (COORDINATOR_NOT_AVAILABLE) or the coordinator resigns
	// (NOT_COORDINATOR).
	Join(ctx context.Context, p JoinParams) JoinResult
	// Sync serves a SyncGroup, blocking like Join.
	Sync(ctx context.Context, p SyncParams) SyncResult
	// Heartbeat serves a Heartbeat and returns its error code.
	Heartbeat(ctx context.Context, group, memberID string, instanceID *string, generation int32) int16
	// Leave serves a LeaveGroup: the request's code and one per identity.
	Leave(ctx context.Context, group string, ids []LeaveIdentity) (int16, []int16)
	// Describe returns the group; found is false when it is not known to
	// its coordinator; code is a coordinator error (NOT_COORDINATOR,
	// COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS) or 0.
	Describe(ctx context.Context, group string) (d Description, found bool, code int16)
	// List returns every group (sorted by id); code as for Describe.
	List(ctx context.Context) ([]Listing, int16)
	// Delete serves one group of a DeleteGroups (the group and its
	// committed offsets).
	Delete(ctx context.Context, group string) (code int16, msg string)
	// ValidateCommit checks an OffsetCommit against the group (see
	// validateCommit); known reports whether the group existed.
	ValidateCommit(ctx context.Context, group, memberID string, generation int32, instanceID *string) (code int16, known bool)
	// OffsetDeleteCheck tells OffsetDelete whether offsets of the group may
	// be deleted (see offsetDeleteCheck): all means every topic counts as
	// subscribed, else the subscribed topics are listed.
	OffsetDeleteCheck(ctx context.Context, group string) (code int16, all bool, subscribed []string)
	// Counts returns the groups and members held in this process.
	Counts() (groups, members int)
	// Drain resigns: parked and later JoinGroup/SyncGroup requests answer
	// NOT_COORDINATOR at once.
	Drain()
}

var _ Service = (*Coordinator)(nil)

// Join implements Service.
func (c *Coordinator) Join(ctx context.Context, p JoinParams) JoinResult {
	reply := make(chan JoinResult, 1)
	c.join(p, reply)
	select {
	case r := <-reply:
		return r
	case <-ctx.Done():
		return JoinResult{Code: kerr.CoordinatorNotAvailable.Code, MemberID: p.MemberID, Generation: -1}
	case <-c.draining:
		return JoinResult{Code: kerr.NotCoordinator.Code, MemberID: p.MemberID, Generation: -1}
	}
}

// Sync implements Service.
func (c *Coordinator) Sync(ctx context.Context, p SyncParams) SyncResult {
	reply := make(chan SyncResult, 1)
	c.sync(p, reply)
	select {
	case r := <-reply:
		return r
	case <-ctx.Done():
		return SyncResult{Code: kerr.CoordinatorNotAvailable.Code}
	case <-c.draining:
		return SyncResult{Code: kerr.NotCoordinator.Code}
	}
}

// Heartbeat implements Service.
func (c *Coordinator) Heartbeat(_ context.Context, group, memberID string, instanceID *string, generation int32) int16 {
	return c.heartbeat(group, memberID, instanceID, generation)
}

// Leave implements Service.
func (c *Coordinator) Leave(_ context.Context, group string, ids []LeaveIdentity) (int16, []int16) {
	return c.leave(group, ids)
}

// Describe implements Service.
func (c *Coordinator) Describe(_ context.Context, group string) (Description, bool, int16) {
	d, ok := c.describe(group)
	return d, ok, 0
}

// List implements Service.
func (c *Coordinator) List(context.Context) ([]Listing, int16) { return c.list(), 0 }

// Delete implements Service.
func (c *Coordinator) Delete(ctx context.Context, group string) (int16, string) {
	return c.deleteGroup(ctx, group)
}

// ValidateCommit implements Service.
func (c *Coordinator) ValidateCommit(_ context.Context, group, memberID string, generation int32, instanceID *string) (int16, bool) {
	c.mu.Lock()
	known := c.groups[group] != nil
	c.mu.Unlock()
	return c.validateCommit(group, memberID, generation, instanceID), known
}

// OffsetDeleteCheck implements Service.
func (c *Coordinator) OffsetDeleteCheck(_ context.Context, group string) (int16, bool, []string) {
	g := c.lockGroup(group, false)
	if g == nil {
		return kerr.GroupIDNotFound.Code, false, nil
	}
	defer g.mu.Unlock()
	switch {
	case g.state == StateEmpty:
		return 0, false, nil
	case g.protocolType != ConsumerProtocolType:
		return kerr.NonEmptyGroup.Code, false, nil
	case !g.subsKnown:
		return 0, true, nil
	}
	subs := make([]string, 0, len(g.subscribed))
	for t := range g.subscribed {
		subs = append(subs, t)
	}
	return 0, false, subs
}

// Counts implements Service.
func (c *Coordinator) Counts() (groups, members int) { return c.counts() }

// Drain implements Service.
func (c *Coordinator) Drain() { c.drainOnce.Do(func() { close(c.draining) }) }

// SetOffsets sets the deleter of committed offsets used by Delete; call it
// before serving.
func (c *Coordinator) SetOffsets(d OffsetsDeleter) { c.offsets = d }

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
	c.groups[group] = g
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
