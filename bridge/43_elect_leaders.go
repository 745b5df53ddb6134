package bridge

// ElectLeaders: v0-v2
//
// Behavior:
//   - Every partition has this sidecar as its only replica and leader, so
//     no election (preferred or unclean) can change anything: each existing
//     partition answers ELECTION_NOT_NEEDED (84), as Kafka answers for a
//     partition led by its preferred replica, with Kafka's message. A
//     partition beyond the topic's count answers UNKNOWN_TOPIC_OR_PARTITION
//     "No such partition as T-P", an unknown topic
//     UNKNOWN_TOPIC_OR_PARTITION "No such topic as T".
//   - Topics null (every partition): Kafka answers only the partitions an
//     election was tried for, leaving out those that need none: the answer
//     lists no partition.
//   - ElectionType (v1+) is not checked beyond that: both types need no
//     election. Iggy failures answer the retriable code of errors.go.
//
// Version notes: v1 ElectionType and a top-level error code; v2 flexible.
//
// Iggy commands: GET_TOPIC (300), cached.

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *Bridge) electLeadersAPI() API {
	return API{Key: 43, Name: "ElectLeaders", MinVersion: 0, MaxVersion: 2, Handle: b.handleElectLeaders, ErrorCodes: errorCodes(electLeadersErrorCodes)}
}

func init() { registerAPI((*Bridge).electLeadersAPI) }

func (b *Bridge) handleElectLeaders(ctx context.Context, rq *Request) (kmsg.Response, error) {
	req := rq.Msg.(*kmsg.ElectLeadersRequest)
	resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewElectLeadersResponseTopic()
		rt.Topic = t.Topic
		_, count, code := b.topicForAdmin(ctx, t.Topic, false)
		for _, p := range t.Partitions {
			rp := kmsg.NewElectLeadersResponseTopicPartition()
			rp.Partition = p
			var msg string
			switch {
			case code == kerr.UnknownTopicOrPartition.Code:
				rp.ErrorCode, msg = code, "No such topic as "+t.Topic
			case code != 0:
				rp.ErrorCode = code
			case p < 0 || p >= count:
				rp.ErrorCode, msg = kerr.UnknownTopicOrPartition.Code, fmt.Sprintf("No such partition as %s-%d", t.Topic, p)
			default:
				rp.ErrorCode, msg = kerr.ElectionNotNeeded.Code, "Leader election not needed for topic partition."
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

// electLeadersErrorCodes walks an ElectLeaders response for the metrics.
func electLeadersErrorCodes(r *kmsg.ElectLeadersResponse, f func(int16)) {
	f(r.ErrorCode)
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			f(p.ErrorCode)
		}
	}
}
