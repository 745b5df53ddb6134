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
type Mixed struct {
	*groups.Coordinator
	C *Coordinator
}

var _ groups.Service = Mixed{}

// Join implements groups.Service.
func (m Mixed) Join(ctx context.Context, p groups.JoinParams) groups.JoinResult {
	if r, held := m.C.ClassicJoin(p); held {
		return r
	}
	return m.Coordinator.Join(ctx, p)
}

// Sync implements groups.Service.
func (m Mixed) Sync(ctx context.Context, p groups.SyncParams) groups.SyncResult {
	if r, held := m.C.ClassicSync(p); held {
		return r
	}
	return m.Coordinator.Sync(ctx, p)
}

// Heartbeat implements groups.Service.
func (m Mixed) Heartbeat(ctx context.Context, group, memberID string, instanceID *string, generation int32) int16 {
	if code, held := m.C.ClassicHeartbeat(group, memberID, instanceID, generation); held {
		return code
	}
	return m.Coordinator.Heartbeat(ctx, group, memberID, instanceID, generation)
}

// Leave implements groups.Service.
func (m Mixed) Leave(ctx context.Context, group string, ids []groups.LeaveIdentity) (int16, []int16) {
	if codes, held := m.C.ClassicLeave(group, ids); held {
		return 0, codes
	}
	return m.Coordinator.Leave(ctx, group, ids)
}
