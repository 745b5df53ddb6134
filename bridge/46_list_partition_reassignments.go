package bridge

// ListPartitionReassignments: v0
//
// Behavior:
//   - Every partition has this sidecar as its only replica and Iggy moves
//     no data between Kafka brokers, so no reassignment is ever in
//     progress: the answer lists no topic, whether the request names
//     topics or asks for all (null), as Kafka answers with none ongoing.
//
// Iggy commands: none.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *Bridge) listPartitionReassignmentsAPI() API {
	return API{Key: 46, Name: "ListPartitionReassignments", MinVersion: 0, MaxVersion: 0, Handle: b.handleListPartitionReassignments,
		ErrorCodes: errorCodes(func(r *kmsg.ListPartitionReassignmentsResponse, f func(int16)) { f(r.ErrorCode) })}
}

func init() { registerAPI((*Bridge).listPartitionReassignmentsAPI) }

func (b *Bridge) handleListPartitionReassignments(_ context.Context, rq *Request) (kmsg.Response, error) {
	resp := rq.Msg.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
	resp.Topics = []kmsg.ListPartitionReassignmentsResponseTopic{}
	return resp, nil
}
