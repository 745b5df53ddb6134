package cgroups

// The narrow interface bridge's consumer-protocol APIs call
// (ConsumerGroupHeartbeat 68, ConsumerGroupDescribe 69, and the group
// checks of OffsetCommit 08, OffsetFetch 09, JoinGroup 11, DescribeGroups
// 15, ListGroups 16, DeleteGroups 42). The local Coordinator serves it from
// this process's memory; bridge/cluster's Router sends a group's calls to
// the sidecar that owns the group's shard over the peer link.

import "context"

// Service serves the consumer group protocol for the bridge. code results
// are coordinator errors (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE,
// COORDINATOR_LOAD_IN_PROGRESS) or 0.
type Service interface {
	// Heartbeat serves a ConsumerGroupHeartbeat; topics is the metadata
	// (every topic and its partition count).
	Heartbeat(ctx context.Context, p HeartbeatParams, topics map[string]int32) HeartbeatResult
	// Describe returns the group; found is false when it is not held.
	Describe(ctx context.Context, group string) (d Description, found bool, code int16)
	// List returns every group, sorted by id.
	List(ctx context.Context) ([]Listing, int16)
	// ValidateCommit checks an OffsetCommit (see Coordinator.ValidateCommit).
	// Across sidecars it is one call to the group's owner, which applies the
	// classic checks too when no consumer-protocol group holds the id, and
	// isGroup is then always true (the answer is final).
	ValidateCommit(ctx context.Context, group, memberID string, instanceID *string, epoch int32, version int16) (code int16, isGroup bool)
	// ValidateFetch checks an OffsetFetch (see Coordinator.ValidateFetch).
	ValidateFetch(ctx context.Context, group string, memberID *string, epoch int32) (code int16, isGroup bool)
	// Release gives the group id up for a classic join or a delete (see
	// Coordinator.Release). Across sidecars it is false at once: the owner
	// applies it within the JoinGroup or DeleteGroups it serves.
	Release(ctx context.Context, group string) (busy, dropped bool)
	// Holds reports whether a consumer-protocol group holds the id, as
	// DescribeGroups and a consumer-protocol join of a classic group check
	// it. Across sidecars it is false at once: the owner answers
	// DescribeGroups' GROUP_ID_NOT_FOUND and the join's conflict itself.
	Holds(ctx context.Context, group string) bool
	// Counts returns the groups and members held in this process.
	Counts() (groups, members int)
}

var _ Service = Local{}

// Local serves Service from a Coordinator of this process.
type Local struct{ C *Coordinator }

// Heartbeat implements Service.
func (l Local) Heartbeat(_ context.Context, p HeartbeatParams, topics map[string]int32) HeartbeatResult {
	return l.C.Heartbeat(p, topics)
}

// Describe implements Service.
func (l Local) Describe(_ context.Context, group string) (Description, bool, int16) {
	d, ok := l.C.Describe(group)
	return d, ok, 0
}

// List implements Service.
func (l Local) List(context.Context) ([]Listing, int16) { return l.C.List(), 0 }

// ValidateCommit implements Service.
func (l Local) ValidateCommit(_ context.Context, group, memberID string, _ *string, epoch int32, version int16) (int16, bool) {
	return l.C.ValidateCommit(group, memberID, epoch, version)
}

// ValidateFetch implements Service.
func (l Local) ValidateFetch(_ context.Context, group string, memberID *string, epoch int32) (int16, bool) {
	return l.C.ValidateFetch(group, memberID, epoch)
}

// Release implements Service.
func (l Local) Release(_ context.Context, group string) (bool, bool) { return l.C.Release(group) }

// Holds implements Service.
func (l Local) Holds(_ context.Context, group string) bool { return l.C.Has(group) }

// Counts implements Service.
func (l Local) Counts() (int, int) { return l.C.Counts() }
