package bridge

// AlterPartitionAssignments: v0-v1
//
// Behavior (KIP-455 reassignments, as Kafka's controller validates them
// for a cluster of one broker, this sidecar):
//   - Replicas null cancels a reassignment: none is ever in progress, so
//     NO_REASSIGNMENT_IN_PROGRESS (85).
//   - A replica list is checked as Kafka checks a manual assignment, in
//     broker id order: empty → INVALID_REPLICA_ASSIGNMENT (39) "...includes
//     an empty replica list."; a broker other than this one → "...includes
//     broker N, but no such broker is registered."; this broker twice →
//     "...includes the broker N more than once.". The one valid list,
//     [this broker], is the current assignment: NONE, nothing changes.
//   - An unknown topic answers UNKNOWN_TOPIC_OR_PARTITION "Unable to find a
//     topic named T.", a partition beyond its count UNKNOWN_TOPIC_OR_PARTITION.
//     Iggy failures answer the retriable code of errors.go.
//
// Version notes: v1 AllowReplicationFactorChange (KIP-860): no list that
// changes the replication factor is valid here anyway.
//
// Iggy commands: GET_TOPIC (300), cached.

import (
	"context"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *Bridge) alterPartitionAssignmentsAPI() API {
	return API{Key: 45, Name: "AlterPartitionAssignments", MinVersion: 0, MaxVersion: 1, Handle: b.handleAlterPartitionAssignments,
		ErrorCodes: errorCodes(alterPartitionAssignmentsErrorCodes)}
}

func init() { registerAPI((*Bridge).alterPartitionAssignmentsAPI) }

func (b *Bridge) handleAlterPartitionAssignments(ctx context.Context, rq *Request) (kmsg.Response, error) {
	req := rq.Msg.(*kmsg.AlterPartitionAssignmentsRequest)
	resp := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
	self := b.self().NodeID
	for _, t := range req.Topics {
		rt := kmsg.NewAlterPartitionAssignmentsResponseTopic()
		rt.Topic = t.Topic
		_, count, code := b.topicForAdmin(ctx, t.Topic, false)
		for _, p := range t.Partitions {
			rp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
			rp.Partition = p.Partition
			var msg string
			switch {
			case code == kerr.UnknownTopicOrPartition.Code:
				rp.ErrorCode, msg = code, "Unable to find a topic named "+t.Topic+"."
			case code != 0:
				rp.ErrorCode = code
			case p.Partition < 0 || p.Partition >= count:
				rp.ErrorCode, msg = kerr.UnknownTopicOrPartition.Code, fmt.Sprintf("Unable to find partition %s:%d.", t.Topic, p.Partition)
			case p.Replicas == nil:
				rp.ErrorCode = kerr.NoReassignmentInProgress.Code
			default:
				rp.ErrorCode, msg = reassignmentProblem(p.Replicas, self)
			}
			if msg != "" {
				rp.ErrorMessage = &msg
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

// reassignmentProblem checks a manual replica list in broker id order, as
// Kafka's controller does, against a cluster whose one broker is self.
func reassignmentProblem(replicas []int32, self int32) (int16, string) {
	if len(replicas) == 0 {
		return kerr.InvalidReplicaAssignment.Code, "The manual partition assignment includes an empty replica list."
	}
	sorted := slices.Sorted(slices.Values(replicas))
	for i, r := range sorted {
		if r != self {
			return kerr.InvalidReplicaAssignment.Code, fmt.Sprintf("The manual partition assignment includes broker %d, but no such broker is registered.", r)
		}
		if i > 0 {
			return kerr.InvalidReplicaAssignment.Code, fmt.Sprintf("The manual partition assignment includes the broker %d more than once.", r)
		}
	}
	return 0, ""
}

// alterPartitionAssignmentsErrorCodes walks the response for the metrics.
func alterPartitionAssignmentsErrorCodes(r *kmsg.AlterPartitionAssignmentsResponse, f func(int16)) {
	f(r.ErrorCode)
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			f(p.ErrorCode)
		}
	}
}
