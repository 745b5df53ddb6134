package bridge

// LeaveGroup: v0-v5
//
// Behavior:
//   - Removes the named members (bridge/groups) and starts a rebalance of a
//     Stable or CompletingRebalance group (or completes a running join
//     phase that was only waiting for them). A member named by
//     group.instance.id alone (empty member id) is the current holder of
//     that instance id: how operators remove a static member.
//   - Empty group id: INVALID_GROUP_ID for the whole request. Unknown group
//     or member: UNKNOWN_MEMBER_ID per member; instance id mapped to
//     another member id: FENCED_INSTANCE_ID per member.
//
// Version notes: v1 ThrottleMillis; v0-v2 name one MemberID and answer its
// code as the request's error code; v3 a batch of Members (member id and
// instance id, KIP-345) answered one by one; v4 flexible; v5 Reason per
// member (logged).
//
// Iggy commands: none.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafka-iggy/kafka-iggy/bridge/groups"
)

func (b *Bridge) leaveGroupAPI() API {
	return API{Key: 13, Name: "LeaveGroup", MinVersion: 0, MaxVersion: 5, Handle: b.handleLeaveGroup, Completes: true, ErrorCodes: errorCodes(leaveGroupErrorCodes), Group: true}
}

func init() { registerAPI((*Bridge).leaveGroupAPI) }

func (b *Bridge) handleLeaveGroup(ctx context.Context, rq *Request) (kmsg.Response, error) {
	req := rq.Msg.(*kmsg.LeaveGroupRequest)
	resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)

	var ids []groups.LeaveIdentity
	if rq.Version < 3 {
		ids = []groups.LeaveIdentity{{MemberID: req.MemberID}}
	} else {
		ids = make([]groups.LeaveIdentity, len(req.Members))
		for i, m := range req.Members {
			ids[i] = groups.LeaveIdentity{MemberID: m.MemberID, InstanceID: m.InstanceID}
			if m.Reason != nil {
				ids[i].Reason = *m.Reason
			}
		}
	}
	top, codes := b.groups.Leave(ctx, req.Group, ids)
	resp.ErrorCode = top
	if rq.Version < 3 {
		if top == 0 && len(codes) == 1 {
			resp.ErrorCode = codes[0]
		}
		return resp, nil
	}
	if top != 0 {
		return resp, nil
	}
	resp.Members = make([]kmsg.LeaveGroupResponseMember, len(ids))
	for i, id := range ids {
		m := &resp.Members[i]
		*m = kmsg.NewLeaveGroupResponseMember()
		m.MemberID = id.MemberID
		m.InstanceID = id.InstanceID
		m.ErrorCode = codes[i]
	}
	return resp, nil
}

// leaveGroupErrorCodes walks a LeaveGroup response for the metrics.
func leaveGroupErrorCodes(r *kmsg.LeaveGroupResponse, f func(int16)) {
	f(r.ErrorCode)
	for _, m := range r.Members {
		f(m.ErrorCode)
	}
}
