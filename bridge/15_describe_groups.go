package bridge

// DescribeGroups: v0-v6
//
// Behavior:
//   - Each requested group as this instance coordinates it (bridge/groups):
//     state, protocol type and members (member id, instance id, client id,
//     client host). A Stable group also shows its protocol and each
//     member's metadata and assignment; other states show them empty, as
//     Kafka does.
//   - A group not coordinated here whose committed offsets are in Iggy
//     (after a restart, or once an Empty group was forgotten) is "Empty"
//     with protocol type "" and no members, as Kafka describes a group it
//     knows from its offsets alone; so kafka-consumer-groups --describe
//     shows its offsets and lag. Finding them is the OffsetFetch scan of
//     every topic (bridge/offsets); when Iggy cannot answer the group gets
//     COORDINATOR_LOAD_IN_PROGRESS. A group with neither is state "Dead"
//     with no members (error 0), or GROUP_ID_NOT_FOUND with a message from
//     v6 on.
//   - A consumer-protocol (KIP-848) group is described as Kafka 4 does:
//     state "Dead", no members, and from v6 GROUP_ID_NOT_FOUND ("Group %s
//     is not a classic group."); ConsumerGroupDescribe (69) shows it.
//   - AuthorizedOperations (v3+, when asked): READ, DELETE and DESCRIBE,
//     since the gateway has no ACLs; -2^31 when not asked.
//
// Version notes: v1 ThrottleMillis; v3 IncludeAuthorizedOperations
// (KIP-430); v4 InstanceID per member; v5 flexible; v6 ErrorMessage and
// GROUP_ID_NOT_FOUND for unknown groups (KIP-1043).
//
// Iggy commands: for a group not coordinated here, those of the OffsetFetch
// scan (GET_TOPICS, GET_TOPIC, GET_CONSUMER_OFFSET, GET_CONSUMER_GROUP).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafka-iggy/kafka-iggy/bridge/groups"
	"github.com/kafka-iggy/kafka-iggy/bridge/offsets"
)

// describeGroupsCharge is the row's memory charge (API.FrameCharge): a
// 3-byte group name answers a described group (struct ~160 bytes).
const describeGroupsCharge = 64

func (b *Bridge) describeGroupsAPI() API {
	return API{Key: 15, Name: "DescribeGroups", MinVersion: 0, MaxVersion: 6, Handle: b.handleDescribeGroups, FrameCharge: describeGroupsCharge, ErrorCodes: errorCodes(describeGroupsErrorCodes)}
}

func init() { registerAPI((*Bridge).describeGroupsAPI) }

func (b *Bridge) handleDescribeGroups(ctx context.Context, rq *Request) (kmsg.Response, error) {
	req := rq.Msg.(*kmsg.DescribeGroupsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	resp.Groups = make([]kmsg.DescribeGroupsResponseGroup, len(req.Groups))
	for i, id := range req.Groups {
		rg := &resp.Groups[i]
		*rg = kmsg.NewDescribeGroupsResponseGroup()
		rg.Group = id
		if rq.Version >= 3 && req.IncludeAuthorizedOperations {
			rg.AuthorizedOperations = groups.AuthorizedOperations
		}
		d, ok, ccode := b.groups.Describe(ctx, id)
		if ccode == kerr.GroupIDNotFound.Code || b.cgroups.Holds(ctx, id) { // a consumer-protocol group (across sidecars its owner says so)
			rg.State = groups.StateDead.String()
			if rq.Version >= 6 {
				msg := "Group " + id + " is not a classic group."
				rg.ErrorCode, rg.ErrorMessage = kerr.GroupIDNotFound.Code, &msg
			}
			continue
		}
		if ccode != 0 {
			rg.ErrorCode = ccode
			continue
		}
		if !ok && offsets.ValidGroupID(id) {
			switch stored, _, err := b.offsets.Scan(ctx, id); {
			case err != nil:
				b.log.Warn().Err(err).Str("group_id", id).Uint32("iggy_code", iggyCode(err)).Msg("describe groups: reading committed offsets failed")
				rg.ErrorCode = kerr.CoordinatorLoadInProgress.Code
				continue
			case len(stored) > 0:
				rg.State = groups.StateEmpty.String()
				rg.Members = []kmsg.DescribeGroupsResponseGroupMember{}
				continue
			}
		}
		if !ok {
			rg.State = groups.StateDead.String()
			if rq.Version >= 6 {
				rg.ErrorCode = kerr.GroupIDNotFound.Code
				msg := "group " + id + " not found"
				rg.ErrorMessage = &msg
			}
			continue
		}
		rg.State = d.State
		rg.ProtocolType = d.ProtocolType
		rg.Protocol = d.Protocol
		rg.Members = make([]kmsg.DescribeGroupsResponseGroupMember, len(d.Members))
		for j, m := range d.Members {
			rm := &rg.Members[j]
			*rm = kmsg.NewDescribeGroupsResponseGroupMember()
			rm.MemberID = m.MemberID
			rm.InstanceID = m.InstanceID
			rm.ClientID = m.ClientID
			rm.ClientHost = m.ClientHost
			rm.ProtocolMetadata = nonNilBytes(m.Metadata)
			rm.MemberAssignment = nonNilBytes(m.Assignment)
		}
	}
	return resp, nil
}

// nonNilBytes returns b, or an empty slice for nil (Kafka's empty bytes).
func nonNilBytes(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// describeGroupsErrorCodes walks a DescribeGroups response for the metrics.
func describeGroupsErrorCodes(r *kmsg.DescribeGroupsResponse, f func(int16)) {
	for _, g := range r.Groups {
		f(g.ErrorCode)
	}
}
