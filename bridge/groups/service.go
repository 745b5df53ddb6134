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
	// Counts returns the groups and members held in this process, from
	// gauges kept as groups change: it locks nothing, so the bridge reads
	// it after every group API.
	Counts() (groups, members int)
	// Drain resigns: parked and later JoinGroup/SyncGroup requests answer
	// NOT_COORDINATOR at once.
	Drain()
}

var _ Service = (*Coordinator)(nil)

// Join implements Service.
func (c *Coordinator) Join(ctx context.Context, p JoinParams) JoinResult {
	return c.StartJoin(p)(ctx)
}

// StartJoin serves the JoinGroup up to the point where it is answered or
// parked in the group, and returns the wait for its answer: the group's
// state changes at once, the wait may be long (Join is both). A caller
// that must decide which coordinator serves the call atomically with the
// call (cgroups.Mixed) starts it under its own lock and waits outside.
func (c *Coordinator) StartJoin(p JoinParams) func(context.Context) JoinResult {
	reply := make(chan JoinResult, 1)
	c.join(p, reply)
	return func(ctx context.Context) JoinResult { return c.awaitJoin(ctx, p, reply) }
}

func (c *Coordinator) awaitJoin(ctx context.Context, p JoinParams, reply chan JoinResult) JoinResult {
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
	return c.StartSync(p)(ctx)
}

// StartSync is StartJoin's SyncGroup.
func (c *Coordinator) StartSync(p SyncParams) func(context.Context) SyncResult {
	reply := make(chan SyncResult, 1)
	c.sync(p, reply)
	return func(ctx context.Context) SyncResult { return c.awaitSync(ctx, reply) }
}

func (c *Coordinator) awaitSync(ctx context.Context, reply chan SyncResult) SyncResult {
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
func (c *Coordinator) Counts() (groups, members int) {
	return int(c.liveGroups.Load()), int(c.liveMembers.Load())
}

// Drain implements Service.
func (c *Coordinator) Drain() { c.drainOnce.Do(func() { close(c.draining) }) }

// SetOffsets sets the deleter of committed offsets used by Delete; call it
// before serving.
func (c *Coordinator) SetOffsets(d OffsetsDeleter) { c.offsets = d }
