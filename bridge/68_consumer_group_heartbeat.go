package bridge

// ConsumerGroupHeartbeat: v0-v1
//
// Behavior:
//   - The consumer group protocol of KIP-848 (group.protocol=consumer),
//     coordinated in memory by bridge/cgroups in this instance: member and
//     group epochs, the target assignment computed here by the "uniform"
//     (default) or "range" assignor (ServerAssignor), incremental
//     reconciliation (a partition goes to its new owner only after its
//     previous owner stopped reporting it), subscriptions by topic names
//     or by a regular expression (RE2, matched against whole topic names),
//     static members (InstanceID; epoch -2 leaves for the session timeout
//     and keeps the partitions), session timeout 45 s and heartbeat
//     interval 5 s (Kafka's defaults), a member that does not revoke
//     within its rebalance timeout is removed.
//   - Errors as Kafka's coordinator answers them: INVALID_REQUEST (empty
//     group id, member id (v1), instance or rack id; a join without
//     rebalance timeout, subscription or with owned partitions; an epoch
//     below -2), UNSUPPORTED_ASSIGNOR, INVALID_REGULAR_EXPRESSION,
//     UNKNOWN_MEMBER_ID (unknown member or group), FENCED_MEMBER_EPOCH (a
//     greater epoch, or a smaller one other than the previous with a subset
//     of the assignment), FENCED_INSTANCE_ID, UNRELEASED_INSTANCE_ID,
//     GROUP_MAX_SIZE_REACHED.
//   - Joining a group id that a live classic group of consumers holds
//     upgrades it (KIP-848's online migration, bridge/cgroups/classic.go):
//     the classic members stay, with their subscriptions and assignments,
//     served through JoinGroup, SyncGroup and Heartbeat against the
//     target assignment; when the last consumer-protocol member leaves,
//     the classic members remaining, it is a classic group again and
//     rebalances. A classic group of another protocol type (or one whose
//     ConsumerProtocol bytes do not decode): GROUP_ID_NOT_FOUND ("not a
//     consumer group").
//   - The metadata the assignment is computed from (every Kafka topic and
//     its partition count, and __consumer_offsets with one partition, which
//     a regex resolves as Kafka's does) is read from Iggy at most once a
//     second, and again at once after a topic is created, deleted or grown
//     through this sidecar; Iggy unreachable: COORDINATOR_NOT_AVAILABLE. Owned partitions of a topic
//     id no topic has are ignored (the topic is gone).
//   - Groups live in the memory of their coordinator: this sidecar alone,
//     or with peers.address set the sidecar that owns the group's shard
//     (bridge/cluster forwards the call with the metadata read here; same
//     behaviour). There the owner persists each group's state in Iggy and
//     the next owner restores it (bridge/cluster/cstore.go): members keep
//     their epochs and partitions through a move. A Bridge built
//     with Options.Groups but without Options.ConsumerGroups answers
//     UNSUPPORTED_VERSION, so no sidecar assigns on its own.
//
// Version notes: v1 SubscribedTopicRegex, and the client names its member
// id (KIP-1082); v0 gets a member id from the coordinator.
//
// Iggy commands: GET_TOPICS (301), GET_TOPIC (300).

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafka-iggy/kafka-iggy/bridge/cgroups"
	"github.com/kafka-iggy/kafka-iggy/bridge/groups"
	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
)

func (b *Bridge) consumerGroupHeartbeatAPI() API {
	return API{Key: 68, Name: "ConsumerGroupHeartbeat", MinVersion: 0, MaxVersion: 1, Handle: b.handleConsumerGroupHeartbeat, ErrorCodes: errorCodes(consumerGroupHeartbeatErrorCodes), Group: true}
}

func init() { registerAPI((*Bridge).consumerGroupHeartbeatAPI) }

func (b *Bridge) handleConsumerGroupHeartbeat(ctx context.Context, rq *Request) (kmsg.Response, error) {
	req := rq.Msg.(*kmsg.ConsumerGroupHeartbeatRequest)
	resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
	answer := func(code int16, msg string) (kmsg.Response, error) {
		resp.ErrorCode, resp.ErrorMessage = code, &msg
		return resp, nil
	}

	if !b.cgroupsServed {
		return answer(kerr.UnsupportedVersion.Code, "consumer-protocol groups are not coordinated across sidecars yet (peers.address is set): use group.protocol=classic")
	}
	p := cgroups.HeartbeatParams{
		Group:            req.Group,
		MemberID:         req.MemberID,
		MemberEpoch:      req.MemberEpoch,
		InstanceID:       req.InstanceID,
		RackID:           req.RackID,
		RebalanceTimeout: time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond,
		SubscribedTopics: req.SubscribedTopicNames,
		SubscribedRegex:  req.SubscribedTopicRegex,
		ServerAssignor:   req.ServerAssignor,
		ClientHost:       groups.ClientHost(rq.Remote),
		NeedMemberID:     rq.Version >= 1,
	}
	if req.RebalanceTimeoutMillis < 0 {
		p.RebalanceTimeout = -1
	}
	if rq.ClientID != nil {
		p.ClientID = *rq.ClientID
	}

	// The metadata: every Kafka topic (with __consumer_offsets, one
	// partition, as Kafka's regex resolution sees it), its partition count
	// and id; a view at most a second old, dropped by a topic change here.
	md, err := b.cgMeta.Get(time.Now(), func() (cgroups.Metadata, error) {
		names, err := b.listTopics(ctx)
		md := cgroups.Metadata{Counts: map[string]int32{consumerOffsetsTopic: 1}, IDs: map[string][16]byte{consumerOffsetsTopic: internalTopicID(consumerOffsetsTopic)}}
		for _, n := range names {
			if info, err := b.lookupTopic(ctx, n); err == nil && !isInternalTopic(n) { // else deleted since it was listed
				md.Counts[n], md.IDs[n] = int32(info.PartitionsCount), topicID(info)
			}
		}
		return md, err
	})
	if err != nil {
		return answer(kerr.CoordinatorNotAvailable.Code, "reading the topics from Iggy failed")
	}
	if req.Topics != nil {
		p.OwnedSet = true
		p.Owned = []cgroups.TP{}
		for _, t := range req.Topics {
			name, info, err := consumerOffsetsTopic, &iggy.TopicInfo{}, error(nil)
			if t.TopicID != md.IDs[consumerOffsetsTopic] {
				name, info, err = b.topicIDs.Lookup(ctx, t.TopicID, receivedAt(rq))
			}
			if err != nil {
				return answer(kerr.CoordinatorNotAvailable.Code, "resolving a topic id in Iggy failed")
			}
			if info == nil {
				continue
			}
			for _, part := range t.Partitions {
				p.Owned = append(p.Owned, cgroups.TP{Topic: name, Partition: part})
			}
		}
	}

	r := b.cgroups.Heartbeat(ctx, p, md.Counts)
	resp.ErrorCode = r.Code
	if r.Code != 0 {
		resp.ErrorMessage = &r.Message
		b.log.Debug().Str("group", req.Group).Str("member_id", req.MemberID).Int32("member_epoch", req.MemberEpoch).
			Int16("error_code", r.Code).Str("error_message", r.Message).Msg("consumer group heartbeat refused")
		return resp, nil
	}
	id := r.MemberID
	resp.MemberID = &id
	resp.MemberEpoch = r.MemberEpoch
	resp.HeartbeatIntervalMillis = int32(r.HeartbeatInterval / time.Millisecond)
	if r.HasAssignment {
		a := kmsg.NewConsumerGroupHeartbeatResponseAssignment()
		a.Topics = []kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic{}
		for i := 0; i < len(r.Assignment); {
			t := kmsg.NewConsumerGroupHeartbeatResponseAssignmentTopic()
			t.TopicID = md.IDs[r.Assignment[i].Topic]
			j := i
			for ; j < len(r.Assignment) && r.Assignment[j].Topic == r.Assignment[i].Topic; j++ {
				t.Partitions = append(t.Partitions, r.Assignment[j].Partition)
			}
			a.Topics = append(a.Topics, t)
			i = j
		}
		resp.Assignment = &a
	}
	return resp, nil
}

// consumerGroupHeartbeatErrorCodes walks a ConsumerGroupHeartbeat response
// for the metrics.
func consumerGroupHeartbeatErrorCodes(r *kmsg.ConsumerGroupHeartbeatResponse, f func(int16)) {
	f(r.ErrorCode)
}
