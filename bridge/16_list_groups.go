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
//   - Consumer-protocol (KIP-848) groups held by this instance's
//     bridge/cgroups coordinator are listed too: protocol type and group
//     type "consumer", states Empty, Assigning, Reconciling, Stable.
//   - TypesFilter (v5+): "classic" lists the groups of bridge/groups,
//     "consumer" those of bridge/cgroups (any case); empty lists all.
//
// Version notes: v1 ThrottleMillis; v3 flexible; v4 StatesFilter and
// GroupState (KIP-518); v5 TypesFilter and GroupType (KIP-848).
//
// Iggy commands: none.

import (
	"context"
	"slices"
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

	typeFilter := rq.Version >= 5 && len(req.TypesFilter) > 0
	classic := !typeFilter || containsFoldTrim(req.TypesFilter, classicGroupType)
	consumer := !typeFilter || containsFoldTrim(req.TypesFilter, "consumer")
	var states []string
	if rq.Version >= 4 {
		states = req.StatesFilter
	}
	resp.Groups = []kmsg.ListGroupsResponseGroup{}
	if consumer { // consumer-protocol (KIP-848) groups held here
		cls, code := b.cgroups.List(ctx)
		if code != 0 {
			resp.ErrorCode = code
			return resp, nil
		}
		for _, g := range cls {
			if len(states) == 0 || containsFoldTrim(states, g.State) {
				lg := kmsg.NewListGroupsResponseGroup()
				lg.Group, lg.ProtocolType, lg.GroupState, lg.GroupType = g.Group, "consumer", g.State, "consumer"
				resp.Groups = append(resp.Groups, lg)
			}
		}
	}
	if !classic {
		return resp, nil
	}
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
	slices.SortFunc(resp.Groups, func(x, y kmsg.ListGroupsResponseGroup) int { return strings.Compare(x.Group, y.Group) })
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
