package bridge

// OffsetForLeaderEpoch: v2-v4
//
// Behavior (consumers validating their position after a leader change,
// KIP-320):
//   - Every partition has leader epoch 0, the epoch Metadata reports on
//     every sidecar and across Iggy failovers, starting at offset 0. As
//     Kafka's leader epoch cache answers: LeaderEpoch 0 → epoch 0 and the
//     partition's end offset (the high watermark, from GET_TOPIC asked
//     afresh); -1 (undefined) or an epoch above 0 (unknown) → epoch -1 and
//     end offset -1, with no error; below -1 → that epoch and offset 0
//     (the start of the first known epoch).
//   - CurrentLeaderEpoch -1 is not checked; 0 is the current one; above 0
//     answers UNKNOWN_LEADER_EPOCH (75), any other negative value
//     FENCED_LEADER_EPOCH (74), both with epoch and end offset -1.
//   - Unknown topics and partitions answer UNKNOWN_TOPIC_OR_PARTITION with
//     -1; Iggy failures the retriable code of errors.go.
//
// Version notes: v0-v1 are not served (Kafka 4 serves v2+); v3 ReplicaID
// (not checked); v4 flexible.
//
// Iggy commands: GET_TOPIC (300), once per topic.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *Bridge) offsetForLeaderEpochAPI() API {
	return API{Key: 23, Name: "OffsetForLeaderEpoch", MinVersion: 2, MaxVersion: 4, Handle: b.handleOffsetForLeaderEpoch,
		ErrorCodes: errorCodes(offsetForLeaderEpochErrorCodes)}
}

func init() { registerAPI((*Bridge).offsetForLeaderEpochAPI) }

func (b *Bridge) handleOffsetForLeaderEpoch(ctx context.Context, rq *Request) (kmsg.Response, error) {
	req := rq.Msg.(*kmsg.OffsetForLeaderEpochRequest)
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetForLeaderEpochResponseTopic()
		rt.Topic = t.Topic
		info, count, code := b.topicForAdmin(ctx, t.Topic, true)
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			rp.Partition = p.Partition
			rp.LeaderEpoch, rp.EndOffset = -1, -1
			end, _, ok := partitionStats(info, p.Partition)
			switch {
			case code != 0:
				rp.ErrorCode = code
			case p.Partition < 0 || p.Partition >= count || !ok:
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case p.CurrentLeaderEpoch > 0:
				rp.ErrorCode = kerr.UnknownLeaderEpoch.Code
			case p.CurrentLeaderEpoch < -1:
				rp.ErrorCode = kerr.FencedLeaderEpoch.Code
			case p.LeaderEpoch == 0:
				rp.LeaderEpoch, rp.EndOffset = 0, end
			case p.LeaderEpoch < -1:
				rp.LeaderEpoch, rp.EndOffset = p.LeaderEpoch, 0
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

// offsetForLeaderEpochErrorCodes walks the response for the metrics.
func offsetForLeaderEpochErrorCodes(r *kmsg.OffsetForLeaderEpochResponse, f func(int16)) {
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			f(p.ErrorCode)
		}
	}
}
