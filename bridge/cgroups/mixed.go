package cgroups

import (
	"context"

	"github.com/kafka-iggy/kafka-iggy/bridge/groups"
)

// Mixed is the groups.Service of a sidecar that coordinates every group
// itself: a classic call of a group the consumer protocol holds (upgraded
// while live, classic.go) is served by the consumer-protocol coordinator,
// every other one by the classic coordinator. Across sidecars the owner
// makes the same choice (bridge/cluster, the classic calls' pre hooks).
//
// The choice and the classic coordinator's part of the call are one step
// under the consumer-protocol coordinator's lock (the Classic* methods'
// classic argument), so a consumer-protocol member upgrading the group
// cannot slip in between: a new member's JoinGroup would otherwise create
// a classic group beside the upgraded one, a classic member's Heartbeat be
// told UNKNOWN_MEMBER_ID by the coordinator that just gave the group away.
// A JoinGroup or SyncGroup parked in the classic group waits outside the
// lock (an upgrade answers it REBALANCE_IN_PROGRESS).
type Mixed struct {
	*groups.Coordinator
	C *Coordinator
}

var _ groups.Service = Mixed{}

// Join implements groups.Service.
func (m Mixed) Join(ctx context.Context, p groups.JoinParams) groups.JoinResult {
	var wait func(context.Context) groups.JoinResult
	if r, held := m.C.ClassicJoin(p, func() { wait = m.Coordinator.StartJoin(p) }); held {
		return r
	}
	return wait(ctx)
}

// Sync implements groups.Service.
func (m Mixed) Sync(ctx context.Context, p groups.SyncParams) groups.SyncResult {
	var wait func(context.Context) groups.SyncResult
	if r, held := m.C.ClassicSync(p, func() { wait = m.Coordinator.StartSync(p) }); held {
		return r
	}
	return wait(ctx)
}

// Heartbeat implements groups.Service.
func (m Mixed) Heartbeat(ctx context.Context, group, memberID string, instanceID *string, generation int32) int16 {
	var classic int16
	code, held := m.C.ClassicHeartbeat(group, memberID, instanceID, generation, func() {
		classic = m.Coordinator.Heartbeat(ctx, group, memberID, instanceID, generation)
	})
	if held {
		return code
	}
	return classic
}

// Leave implements groups.Service.
func (m Mixed) Leave(ctx context.Context, group string, ids []groups.LeaveIdentity) (int16, []int16) {
	var top int16
	var classic []int16
	codes, held := m.C.ClassicLeave(group, ids, func() { top, classic = m.Coordinator.Leave(ctx, group, ids) })
	if held {
		return 0, codes
	}
	return top, classic
}
