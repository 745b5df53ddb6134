package bridge

// SyncGroup: v0-v5
//
// Behavior:
//   - After the join phase, the leader sends every member's assignment
//     (opaque bytes, relayed untouched); followers' requests park until it
//     does, then each member gets its own assignment (empty if the leader
//     gave none) and the group is Stable. In a Stable group the member's
//     current assignment comes back at once.
//   - Empty group id: INVALID_GROUP_ID. Unknown group, Empty group or
//     unknown member: UNKNOWN_MEMBER_ID; instance id mapped to another
//     member id: FENCED_INSTANCE_ID; generation other than the current:
//     ILLEGAL_GENERATION; group rebalancing again (or a rebalance started
//     while parked): REBALANCE_IN_PROGRESS.
//   - If the client connection closes while the request is parked, it
//     answers COORDINATOR_NOT_AVAILABLE (nobody reads it).
//   - When the instance shuts down (Bridge.Drain) a parked request answers
//     NOT_COORDINATOR at once, as a resigning Kafka coordinator does.
//
// Version notes: v1 ThrottleMillis; v3 InstanceID (KIP-345); v4 flexible;
// v5 ProtocolType and Protocol: when sent they must equal the group's
// (else INCONSISTENT_GROUP_PROTOCOL) and the response carries them.
//
// Iggy commands: none.

import (
	"bytes"
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafka-iggy/kafka-iggy/bridge/groups"
)

func (b *Bridge) syncGroupAPI() API {
	return API{Key: 14, Name: "SyncGroup", MinVersion: 0, MaxVersion: 5, Handle: b.handleSyncGroup, ErrorCodes: errorCodes(syncGroupErrorCodes), Group: true}
}

func init() { registerAPI((*Bridge).syncGroupAPI) }

func (b *Bridge) handleSyncGroup(ctx context.Context, rq *Request) (kmsg.Response, error) {
	req := rq.Msg.(*kmsg.SyncGroupRequest)
	resp := req.ResponseKind().(*kmsg.SyncGroupResponse)

	p := groups.SyncParams{
		Group:        req.Group,
		MemberID:     req.MemberID,
		InstanceID:   req.InstanceID,
		Generation:   req.Generation,
		ProtocolType: req.ProtocolType,
		Protocol:     req.Protocol,
	}
	if len(req.GroupAssignment) > 0 {
		// The assignments alias the request buffer: copy them.
		p.Assignments = make(map[string][]byte, len(req.GroupAssignment))
		for _, a := range req.GroupAssignment {
			p.Assignments[a.MemberID] = bytes.Clone(a.MemberAssignment)
		}
	}

	r := b.groups.Sync(ctx, p)

	resp.ErrorCode = r.Code
	resp.MemberAssignment = r.Assignment
	if resp.MemberAssignment == nil {
		resp.MemberAssignment = []byte{}
	}
	if r.HasProtocol && rq.Version >= 5 {
		pt, pn := r.ProtocolType, r.Protocol
		resp.ProtocolType = &pt
		resp.Protocol = &pn
	}
	return resp, nil
}

// syncGroupErrorCodes walks a SyncGroup response for the metrics.
func syncGroupErrorCodes(r *kmsg.SyncGroupResponse, f func(int16)) {
	f(r.ErrorCode)
}
