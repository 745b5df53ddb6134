package bridge

// JoinGroup: v0-v9
//
// Behavior:
//   - The classic group protocol of bridge/groups, coordinated in memory by
//     this instance or, with peers.address set, by the sidecar of the domain
//     that owns the group's shard (bridge/cluster forwards the call and
//     relays the answer; same behaviour): the request parks until the group's join phase completes
//     (all members rejoined, the rebalance timeout, or the initial rebalance
//     delay of a new group), then every member gets the new generation, the
//     chosen protocol and the leader; the leader alone gets the member list
//     with each member's protocol metadata, relayed untouched.
//   - Empty group id: INVALID_GROUP_ID. Session timeout outside
//     groups.min_session_timeout..groups.max_session_timeout:
//     INVALID_SESSION_TIMEOUT. A member id the group does not know (or a
//     member id for a group that does not exist): UNKNOWN_MEMBER_ID.
//     Protocol type differing from the group's, or no protocol every member
//     supports (or none at all for the first member):
//     INCONSISTENT_GROUP_PROTOCOL.
//   - A group id that a consumer-protocol (KIP-848) group with members
//     holds (bridge/cgroups, upgraded while live or not): the member joins
//     that group as a classic member and is answered at once with its
//     member epoch as the generation and no leader (SyncGroup then hands
//     it the assignment the coordinator computed), as Kafka 4.4 does;
//     protocol type other than "consumer" or no protocol the group's
//     classic members support: INCONSISTENT_GROUP_PROTOCOL. An empty
//     consumer-protocol group is dropped and the classic group takes the
//     id, as Kafka converts it.
//   - A new member joining a group that has groups.max_size members
//     (Kafka's group.max.size; unlimited by default) is answered
//     GROUP_MAX_SIZE_REACHED; a known static instance rejoining is not new.
//   - Static members (v5+ group.instance.id): a known instance id joining
//     without member id replaces the old member id, whose requests then
//     answer FENCED_INSTANCE_ID; in a Stable group it gets the current
//     generation back without a rebalance.
//   - A protocol name repeated in one request counts once (its first
//     entry), so it cannot skew the vote.
//   - If the client connection closes while the request is parked, it
//     answers COORDINATOR_NOT_AVAILABLE (nobody reads it); the member stays
//     in the group as Kafka keeps it.
//   - When the instance shuts down (Bridge.Drain) a parked request answers
//     NOT_COORDINATOR at once, as a resigning Kafka coordinator does.
//
// Version notes: v1 RebalanceTimeoutMillis (v0 uses the session timeout);
// v2 ThrottleMillis; v4 a new dynamic member first gets MEMBER_ID_REQUIRED
// with its member id and must join again with it (KIP-394); v5 InstanceID
// (KIP-345); v6 flexible; v7 ProtocolType in the response and nullable
// Protocol; v8 Reason (logged); v9 SkipAssignment (KIP-814): a restarted
// static leader of a Stable group gets the member list with SkipAssignment
// set; before v9 it is told the previous leader id and acts as a follower.
//
// Iggy commands: none; across sidecars the owner's first touch of a group
// reads and raises its stored generation ceiling (GET_CONSUMER_OFFSET,
// POLL_MESSAGES, SEND_MESSAGES, STORE_CONSUMER_OFFSET on gens.<domain>).

import (
	"bytes"
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafka-iggy/kafka-iggy/bridge/groups"
)

func (b *Bridge) joinGroupAPI() API {
	return API{Key: 11, Name: "JoinGroup", MinVersion: 0, MaxVersion: 9, Handle: b.handleJoinGroup, ErrorCodes: errorCodes(joinGroupErrorCodes), Group: true}
}

func init() { registerAPI((*Bridge).joinGroupAPI) }

func (b *Bridge) handleJoinGroup(ctx context.Context, rq *Request) (kmsg.Response, error) {
	req := rq.Msg.(*kmsg.JoinGroupRequest)
	resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
	rebalance := req.RebalanceTimeoutMillis
	if rq.Version == 0 {
		rebalance = req.SessionTimeoutMillis
	}
	p := groups.JoinParams{
		Group:            req.Group,
		MemberID:         req.MemberID,
		InstanceID:       req.InstanceID,
		ClientHost:       groups.ClientHost(rq.Remote),
		SessionTimeout:   time.Duration(req.SessionTimeoutMillis) * time.Millisecond,
		RebalanceTimeout: time.Duration(rebalance) * time.Millisecond,
		ProtocolType:     req.ProtocolType,
		RequireKnownID:   rq.Version >= 4,
		CanSkipAssign:    rq.Version >= 9,
	}
	if rq.ClientID != nil {
		p.ClientID = *rq.ClientID
	}
	if req.Reason != nil {
		p.Reason = *req.Reason
	}
	// The metadata aliases the request buffer: copy it. A repeated
	// protocol name counts once (its first entry).
	p.Protocols = make([]groups.Protocol, 0, len(req.Protocols))
	seen := make(map[string]struct{}, len(req.Protocols))
	for _, pr := range req.Protocols {
		if _, dup := seen[pr.Name]; dup {
			continue
		}
		seen[pr.Name] = struct{}{}
		p.Protocols = append(p.Protocols, groups.Protocol{Name: pr.Name, Metadata: bytes.Clone(pr.Metadata)})
	}

	r := b.groups.Join(ctx, p)

	resp.ErrorCode = r.Code
	resp.Generation = r.Generation
	resp.MemberID = r.MemberID
	resp.LeaderID = r.Leader
	resp.SkipAssignment = r.SkipAssign
	if r.HasProtocol {
		pt, pn := r.ProtocolType, r.Protocol
		resp.ProtocolType = &pt
		resp.Protocol = &pn
	}
	if len(r.Members) > 0 {
		resp.Members = make([]kmsg.JoinGroupResponseMember, len(r.Members))
		for i, m := range r.Members {
			rm := &resp.Members[i]
			*rm = kmsg.NewJoinGroupResponseMember()
			rm.MemberID = m.MemberID
			rm.InstanceID = m.InstanceID
			rm.ProtocolMetadata = m.Metadata
		}
	}
	return resp, nil
}

// joinGroupErrorCodes walks a JoinGroup response for the metrics.
func joinGroupErrorCodes(r *kmsg.JoinGroupResponse, f func(int16)) {
	f(r.ErrorCode)
}
