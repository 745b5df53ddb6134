package bridge

// DeleteGroups: v0-v3
//
// Behavior:
//   - Each named group, in order: a group with members (any state but
//     Empty) answers NON_EMPTY_GROUP; an Empty group is removed from memory
//     and its committed offsets are deleted from Iggy (groupOffsetsDeleter,
//     the offsets code). A group not known here (after a restart, say) may
//     still have offsets in Iggy: they are deleted too, and
//     GROUP_ID_NOT_FOUND is answered only when there were none. An empty
//     group id answers GROUP_ID_NOT_FOUND, as Kafka does.
//   - A consumer-protocol (KIP-848) group (bridge/cgroups) with members
//     answers NON_EMPTY_GROUP too; an empty one is dropped and its offsets
//     deleted as above.
//   - An Iggy failure while deleting offsets answers the offsets scope's
//     code of errors.go (retriable COORDINATOR_LOAD_IN_PROGRESS for
//     transient failures); the group is already gone from memory, so a
//     retry deletes the offsets.
//
// Version notes: v1 ThrottleMillis; v2 flexible; v3 ErrorMessage
// (KIP-1043).
//
// Iggy commands: none of its own; the offsets code's DeleteGroupOffsets
// (bridge/offsets) scans the group's topics (GET_TOPICS 301, GET_TOPIC 300,
// GET_CONSUMER_OFFSET 120, GET_CONSUMER_GROUP 600), deletes each offset
// (DELETE_CONSUMER_OFFSET 122; in consumer mode the zero marker
// kafka.cz.<group> and the main key) and, in external-group mode, the
// Iggy consumer group kafka.cg.<group> (DELETE_CONSUMER_GROUP 603).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *Bridge) deleteGroupsAPI() API {
	return API{Key: 42, Name: "DeleteGroups", MinVersion: 0, MaxVersion: 3, Handle: b.handleDeleteGroups, Completes: true, ErrorCodes: errorCodes(deleteGroupsErrorCodes), Group: true}
}

func init() { registerAPI((*Bridge).deleteGroupsAPI) }

func (b *Bridge) handleDeleteGroups(ctx context.Context, rq *Request) (kmsg.Response, error) {
	req := rq.Msg.(*kmsg.DeleteGroupsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	resp.Groups = make([]kmsg.DeleteGroupsResponseGroup, len(req.Groups))
	for i, id := range req.Groups {
		rg := &resp.Groups[i]
		*rg = kmsg.NewDeleteGroupsResponseGroup()
		rg.Group = id
		busy, dropped := b.cgroups.Release(ctx, id)
		if busy { // a consumer-protocol group with members
			rg.ErrorCode = kerr.NonEmptyGroup.Code
			if rq.Version >= 3 {
				msg := "The group is not empty."
				rg.ErrorMessage = &msg
			}
			continue
		}
		code, msg := b.groups.Delete(ctx, id)
		if dropped && code == kerr.GroupIDNotFound.Code { // the emptied consumer-protocol group was the group
			code = 0
		}
		rg.ErrorCode = code
		if code != 0 && rq.Version >= 3 {
			rg.ErrorMessage = &msg
		}
	}
	return resp, nil
}

// deleteGroupsErrorCodes walks a DeleteGroups response for the metrics.
func deleteGroupsErrorCodes(r *kmsg.DeleteGroupsResponse, f func(int16)) {
	for _, g := range r.Groups {
		f(g.ErrorCode)
	}
}
