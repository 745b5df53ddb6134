package bridge

// FindCoordinator: v0-v6
//
// Behavior:
//   - Group keys (type 0; v0 has no type): this instance, at its advertised
//     host and port (b.self()), for every group: the local coordinator
//     (bridge/groups) or, across sidecars, the cluster router that forwards
//     the group's requests to its owner (bridge/cluster), so clients only
//     ever talk to their own sidecar. JoinGroup refuses an empty group id
//     with INVALID_GROUP_ID.
//   - Transaction keys (type 1): this instance too, as for groups: the
//     transaction APIs are forwarded to the coordinator of the
//     transactional id (bridge/txn; across sidecars the owner of its
//     shard), and the producer's writes are ordered against its EndTxn
//     here.
//   - Any other key type (2 = share groups, v6; unknown values):
//     INVALID_REQUEST (42), as a Kafka broker answers for a key type it does
//     not serve (share groups disabled, or an unknown type).
//   - Every failed key carries NodeID -1, Host "", Port -1 (Kafka's "no
//     node") and an error message (v1+).
//
// Version notes: v1 CoordinatorType, ThrottleMillis, ErrorMessage; v3
// flexible; v4 batched CoordinatorKeys answered per key in Coordinators;
// v5 no wire change (transaction error codes); v6 share-group key type.
//
// Iggy commands: none.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Coordinator key types.
const (
	coordinatorGroup       int8 = 0
	coordinatorTransaction int8 = 1
)

// findCoordinatorCharge is the row's memory charge (API.FrameCharge): a
// 2-byte key answers a coordinator entry (struct ~100 bytes).
const findCoordinatorCharge = 64

func (b *Bridge) findCoordinatorAPI() API {
	return API{Key: 10, Name: "FindCoordinator", MinVersion: 0, MaxVersion: 6, Handle: b.handleFindCoordinator, FrameCharge: findCoordinatorCharge, ErrorCodes: errorCodes(findCoordinatorErrorCodes)}
}

func init() { registerAPI((*Bridge).findCoordinatorAPI) }

func (b *Bridge) handleFindCoordinator(_ context.Context, rq *Request) (kmsg.Response, error) {
	req := rq.Msg.(*kmsg.FindCoordinatorRequest)
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	keyType := coordinatorGroup
	if rq.Version >= 1 {
		keyType = req.CoordinatorType
	}
	self := b.self()
	code, msg := coordinatorAnswer(keyType)
	if rq.Version < 4 {
		resp.ErrorCode = code
		resp.NodeID, resp.Host, resp.Port = -1, "", -1
		if code == 0 {
			resp.NodeID, resp.Host, resp.Port = self.NodeID, self.Host, self.Port
		} else if rq.Version >= 1 {
			resp.ErrorMessage = &msg
		}
		return resp, nil
	}
	resp.Coordinators = make([]kmsg.FindCoordinatorResponseCoordinator, len(req.CoordinatorKeys))
	for i, key := range req.CoordinatorKeys {
		c := &resp.Coordinators[i]
		*c = kmsg.NewFindCoordinatorResponseCoordinator()
		c.Key = key
		c.ErrorCode = code
		if code == 0 {
			c.NodeID, c.Host, c.Port = self.NodeID, self.Host, self.Port
			continue
		}
		c.NodeID, c.Host, c.Port = -1, "", -1
		c.ErrorMessage = &msg
	}
	return resp, nil
}

// coordinatorAnswer is the error code and message for a key type; 0 for
// the group keys this instance coordinates.
func coordinatorAnswer(keyType int8) (int16, string) {
	switch keyType {
	case coordinatorGroup, coordinatorTransaction:
		return 0, ""
	}
	return kerr.InvalidRequest.Code, "coordinator key type not served by this gateway"
}

// findCoordinatorErrorCodes walks a FindCoordinator response for the metrics.
func findCoordinatorErrorCodes(r *kmsg.FindCoordinatorResponse, f func(int16)) {
	f(r.ErrorCode)
	for _, c := range r.Coordinators {
		f(c.ErrorCode)
	}
}
