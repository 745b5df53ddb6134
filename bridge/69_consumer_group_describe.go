package bridge

// ConsumerGroupDescribe: v0-v1
//
// Behavior:
//   - Describes consumer-protocol (KIP-848) groups held by this instance's
//     bridge/cgroups coordinator: state (Empty, Assigning, Reconciling,
//     Stable), group epoch, assignment epoch, the assignor in use, and per
//     member its epoch, client, subscription (names; regex, "" for none), current
//     assignment and target assignment, topics named and identified.
//   - A group id not held: GROUP_ID_NOT_FOUND ("Group %s not found."); a
//     classic group of that id: GROUP_ID_NOT_FOUND ("Group %s is not a
//     consumer group."); an empty group id: INVALID_GROUP_ID.
//   - Authorized operations: none are computed (no ACLs); the field stays
//     at Kafka's "not requested" value.
//
// Version notes: v1 MemberType (1: a consumer-protocol member, 0: a classic
// member of an upgraded group).
//
// Iggy commands: GET_TOPIC (300), for the assigned topics' ids.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafka-iggy/kafka-iggy/bridge/cgroups"
)

func (b *Bridge) consumerGroupDescribeAPI() API {
	return API{Key: 69, Name: "ConsumerGroupDescribe", MinVersion: 0, MaxVersion: 1, Handle: b.handleConsumerGroupDescribe, ErrorCodes: errorCodes(consumerGroupDescribeErrorCodes)}
}

func init() { registerAPI((*Bridge).consumerGroupDescribeAPI) }

func (b *Bridge) handleConsumerGroupDescribe(ctx context.Context, rq *Request) (kmsg.Response, error) {
	req := rq.Msg.(*kmsg.ConsumerGroupDescribeRequest)
	resp := req.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
	ids := map[string][16]byte{}
	assignment := func(tps []cgroups.TP) kmsg.Assignment {
		a := kmsg.NewAssignment()
		a.TopicPartitions = []kmsg.AssignmentTopicPartition{}
		for i := 0; i < len(tps); {
			t := kmsg.NewAssignmentTopicPartition()
			t.Topic = tps[i].Topic
			id, ok := ids[t.Topic]
			if !ok {
				if info, err := b.lookupTopic(ctx, t.Topic); err == nil {
					id = topicID(info)
					ids[t.Topic] = id
				}
			}
			t.TopicID = id
			j := i
			for ; j < len(tps) && tps[j].Topic == t.Topic; j++ {
				t.Partitions = append(t.Partitions, tps[j].Partition)
			}
			a.TopicPartitions = append(a.TopicPartitions, t)
			i = j
		}
		return a
	}
	for _, id := range req.Groups {
		rg := kmsg.NewConsumerGroupDescribeResponseGroup()
		rg.Group = id
		d, ok, code := b.cgroups.Describe(ctx, id)
		switch {
		case id == "":
			rg.ErrorCode = kerr.InvalidGroupID.Code
		case code != 0:
			rg.ErrorCode = code
		case !ok:
			msg := "Group " + id + " not found."
			if _, classic, _ := b.groups.Describe(ctx, id); classic {
				msg = "Group " + id + " is not a consumer group."
			}
			rg.ErrorCode, rg.ErrorMessage = kerr.GroupIDNotFound.Code, &msg
		default:
			rg.State, rg.Epoch, rg.AssignmentEpoch, rg.AssignorName = d.State, d.Epoch, d.AssignmentEpoch, d.Assignor
			for _, m := range d.Members {
				rm := kmsg.NewConsumerGroupDescribeResponseGroupMember()
				rm.MemberID, rm.InstanceID, rm.RackID, rm.MemberEpoch = m.MemberID, m.InstanceID, m.RackID, m.MemberEpoch
				rm.ClientID, rm.ClientHost = m.ClientID, m.ClientHost
				rm.SubscribedTopics, rm.SubscribedTopicRegex = m.SubscribedTopics, m.SubscribedRegex
				if rm.SubscribedTopics == nil {
					rm.SubscribedTopics = []string{}
				}
				rm.Assignment, rm.TargetAssignment = assignment(m.Assignment), assignment(m.Target)
				rm.MemberType = 1
				if m.Classic {
					rm.MemberType = 0
				}
				rg.Members = append(rg.Members, rm)
			}
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp, nil
}

// consumerGroupDescribeErrorCodes walks a ConsumerGroupDescribe response
// for the metrics.
func consumerGroupDescribeErrorCodes(r *kmsg.ConsumerGroupDescribeResponse, f func(int16)) {
	for i := range r.Groups {
		f(r.Groups[i].ErrorCode)
	}
}
