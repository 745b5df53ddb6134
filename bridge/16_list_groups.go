package bridge

// ListGroups: v0-v5
//
// Behavior:
//   - Every group this instance coordinates (bridge/groups) and, across
//     sidecars, every group of the domain (the router asks every owner and
//     merges; an owner that cannot be reached answers
//     COORDINATOR_NOT_AVAILABLE), sorted by id, with
//     its protocol type ("" for groups that only commit offsets). Groups
//     live in memory: after a restart, or once an Empty group was
//     forgotten, a group whose offsets are still in Iggy is not listed.
//   - StatesFilter (v4+): only groups in one of the named states (Empty,
//     PreparingRebalance, CompletingRebalance, Stable, Dead), compared
//     without regard to case or surrounding spaces; empty lists all.
//   - TypesFilter (v5+): every group here is "classic"; a filter without
//     "classic" (any case) lists nothing; empty lists all.
//
// Version notes: v1 ThrottleMillis; v3 flexible; v4 StatesFilter and
// GroupState (KIP-518); v5 TypesFilter and GroupType (KIP-848).
//
// Iggy commands: none.

import (
	"context"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// classicGroupType is the KIP-848 type of every group served here.
const classicGroupType = "classic"

func (b *Bridge) listGroupsAPI() API {
	return API{Key: 16, Name: "ListGroups", MinVersion: 0, MaxVersion: 5, Handle: b.handleListGroups, ErrorCodes: errorCodes(listGroupsErrorCodes)}
}

func init() { registerAPI((*Bridge).listGroupsAPI) }

func (b *Bridge) handleListGroups(ctx context.Context, rq *Request) (kmsg.Response, error) {
	req := rq.Msg.(*kmsg.ListGroupsRequest)
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)

	if rq.Version >= 5 && len(req.TypesFilter) > 0 && !containsFoldTrim(req.TypesFilter, classicGroupType) {
		resp.Groups = []kmsg.ListGroupsResponseGroup{}
		return resp, nil
	}
	var states []string
	if rq.Version >= 4 {
		states = req.StatesFilter
	}
	resp.Groups = []kmsg.ListGroupsResponseGroup{}
	listed, code := b.groups.List(ctx)
	if code != 0 {
		resp.ErrorCode = code
		return resp, nil
	}
	for _, g := range listed {
		if len(states) > 0 && !containsFoldTrim(states, g.State.String()) {
			continue
		}
		lg := kmsg.NewListGroupsResponseGroup()
		lg.Group = g.Group
		lg.ProtocolType = g.ProtocolType
		lg.GroupState = g.State.String()
		lg.GroupType = classicGroupType
		resp.Groups = append(resp.Groups, lg)
	}
	return resp, nil
}

// containsFoldTrim reports whether any of list equals s, ignoring case and
// surrounding spaces.
func containsFoldTrim(list []string, s string) bool {
	for _, v := range list {
		if strings.EqualFold(strings.TrimSpace(v), s) {
			return true
		}
	}
	return false
}

// listGroupsErrorCodes walks a ListGroups response for the metrics.
func listGroupsErrorCodes(r *kmsg.ListGroupsResponse, f func(int16)) {
	f(r.ErrorCode)
}
