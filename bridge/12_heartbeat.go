package bridge

// Heartbeat: v0-v4
//
// Behavior:
//   - Restarts the member's session timer (bridge/groups). Answers 0 in a
//     Stable or CompletingRebalance group, REBALANCE_IN_PROGRESS while the
//     group prepares a rebalance (the member must rejoin).
//   - Empty group id: INVALID_GROUP_ID. Unknown group or member:
//     UNKNOWN_MEMBER_ID; instance id mapped to another member id:
//     FENCED_INSTANCE_ID; generation other than the current:
//     ILLEGAL_GENERATION.
//
// Version notes: v1 ThrottleMillis; v3 InstanceID (KIP-345); v4 flexible.
//
// Iggy commands: none.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *Bridge) heartbeatAPI() API {
	return API{Key: 12, Name: "Heartbeat", MinVersion: 0, MaxVersion: 4, Handle: b.handleHeartbeat, ErrorCodes: errorCodes(heartbeatErrorCodes), Group: true}
}

func init() { registerAPI((*Bridge).heartbeatAPI) }

func (b *Bridge) handleHeartbeat(ctx context.Context, rq *Request) (kmsg.Response, error) {
	req := rq.Msg.(*kmsg.HeartbeatRequest)
	resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
	resp.ErrorCode = b.groups.Heartbeat(ctx, req.Group, req.MemberID, req.InstanceID, req.Generation)
	return resp, nil
}

// heartbeatErrorCodes walks a Heartbeat response for the metrics.
func heartbeatErrorCodes(r *kmsg.HeartbeatResponse, f func(int16)) {
	f(r.ErrorCode)
}
