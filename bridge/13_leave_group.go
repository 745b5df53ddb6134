package bridge

// LeaveGroup: v0-v5
//
// Behavior:
//   - Removes the named members (groups.go) and starts a rebalance of a
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
)

func (b *Bridge) leaveGroupAPI() API {
	return API{Key: 13, Name: "LeaveGroup", MinVersion: 0, MaxVersion: 5, Handle: b.handleLeaveGroup, Completes: true, ErrorCodes: errorCodes(leaveGroupErrorCodes), Group: true}
}

// leaveGroupErrorCodes walks a LeaveGroup response for the metrics.
func leaveGroupErrorCodes(r *kmsg.LeaveGroupResponse, f func(int16)) {
	f(r.ErrorCode)
	for _, m := range r.Members {
		f(m.ErrorCode)
	}
}

func init() { registerAPI((*Bridge).leaveGroupAPI) }

func (b *Bridge) handleLeaveGroup(_ context.Context, rq *Request) (kmsg.Response, error) {
	req := rq.Msg.(*kmsg.LeaveGroupRequest)
	resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)

	var ids []leaveIdentity
	if rq.Version < 3 {
		ids = []leaveIdentity{{memberID: req.MemberID}}
	} else {
		ids = make([]leaveIdentity, len(req.Members))
		for i, m := range req.Members {
			ids[i] = leaveIdentity{memberID: m.MemberID, instanceID: m.InstanceID}
			if m.Reason != nil {
				ids[i].reason = *m.Reason
			}
		}
	}
	top, codes := b.groups.leave(req.Group, ids)
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
		m.MemberID = id.memberID
		m.InstanceID = id.instanceID
		m.ErrorCode = codes[i]
	}
	return resp, nil
}
