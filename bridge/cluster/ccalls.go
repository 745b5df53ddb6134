package cluster

// The forwarded calls of the consumer group protocol (KIP-848,
// bridge/cgroups): a consumer-protocol group is served by the owner of its
// shard like a classic one. consumerRouter is the cgroups.Service the
// bridge calls (Router.WrapConsumer); each call is one entry of the table
// (peercall.go) served by the local cgroups coordinator at the owner. The
// owner persists each group's state in Iggy around every call (cstore.go),
// so when a shard moves the new owner goes on from it: members keep their
// epochs and partitions.

import (
	"context"
	"slices"
	"sort"

	"github.com/kafka-iggy/kafka-iggy/bridge/cgroups"
	"github.com/kafka-iggy/kafka-iggy/bridge/groups"
	"github.com/twmb/franz-go/pkg/kerr"
)

var cgHeartbeatCall = register(&call[cgHeartbeatReq, cgroups.HeartbeatResult]{
	kind: 19, name: "cg_heartbeat",
	group:  func(p *cgHeartbeatReq) string { return p.p.Group },
	params: cgHeartbeatBody, answer: cgHeartbeatResult,
	code: func(a *cgroups.HeartbeatResult) int16 { return a.Code },
	clocal: func(_ context.Context, c *cgroups.Coordinator, p *cgHeartbeatReq) cgroups.HeartbeatResult {
		return c.Heartbeat(p.p, p.topicMap())
	},
	fail: func(p *cgHeartbeatReq, code int16, _ failure) cgroups.HeartbeatResult {
		return cgroups.HeartbeatResult{Code: code, MemberID: p.p.MemberID, MemberEpoch: p.p.MemberEpoch}
	},
})

var cgDescribeCall = register(&call[groupReq, cgDescribeAnswer]{
	kind: 20, name: "cg_describe",
	group:  func(p *groupReq) string { return p.group },
	params: groupReqBody, answer: cgDescribeBody,
	code: func(a *cgDescribeAnswer) int16 { return a.code },
	clocal: func(_ context.Context, c *cgroups.Coordinator, p *groupReq) cgDescribeAnswer {
		d, found := c.Describe(p.group)
		return cgDescribeAnswer{d: d, found: found}
	},
	fail: func(_ *groupReq, code int16, _ failure) cgDescribeAnswer { return cgDescribeAnswer{code: code} },
})

// ListGroups' consumer-protocol part: every owner answers for its own.
var cgListCall = register(&call[listReq, cgListAnswer]{
	kind: 21, name: "cg_list",
	params: listReqBody, answer: cgListBody,
	code: func(a *cgListAnswer) int16 { return a.code },
	clocal: func(_ context.Context, c *cgroups.Coordinator, _ *listReq) cgListAnswer {
		return cgListAnswer{groups: c.List()}
	},
	fail: func(_ *listReq, code int16, _ failure) cgListAnswer { return cgListAnswer{code: code} },
})

// The group check of an OffsetCommit, consumer-protocol and classic in one
// call: the owner applies the consumer-protocol group's member checks when
// one holds the id, the classic coordinator's otherwise (Router.ValidateCommit
// and the bridge's GROUP_ID_NOT_FOUND for v9+ with the group unknown).
var cgCommitCall = register(&call[commitCheckReq, validateAnswer]{
	kind: 60, name: "commit_check", seeds: true,
	group:  func(p *commitCheckReq) string { return p.group },
	params: commitCheckBody, answer: validateBody,
	code: func(a *validateAnswer) int16 { return a.code },
	pre: func(ctx context.Context, r *Router, k int, p *commitCheckReq) (validateAnswer, bool) {
		type v struct {
			code int16
			is   bool
		}
		res, ok := cserve(ctx, r, p.group, k, func() v {
			code, is := r.clocal.ValidateCommit(p.group, p.memberID, p.generation, p.version)
			return v{code, is}
		})
		if !ok {
			return validateAnswer{code: kerr.CoordinatorLoadInProgress.Code}, true
		}
		return validateAnswer{code: res.code, known: true}, res.is
	},
	local: func(ctx context.Context, c *groups.Coordinator, p *commitCheckReq) validateAnswer {
		code, known := c.ValidateCommit(ctx, p.group, p.memberID, p.generation, p.instanceID)
		if code == kerr.IllegalGeneration.Code && p.version >= 9 && !known {
			code = kerr.GroupIDNotFound.Code
		}
		return validateAnswer{code, known}
	},
	fail: func(_ *commitCheckReq, code int16, _ failure) validateAnswer { return validateAnswer{code: code} },
})

var cgFetchCall = register(&call[cgValidateReq, cgValidateAnswer]{
	kind: 23, name: "cg_validate_fetch",
	group:  func(p *cgValidateReq) string { return p.group },
	params: cgValidateBody, answer: cgValidateAnswerBody,
	code: func(a *cgValidateAnswer) int16 { return a.code },
	clocal: func(_ context.Context, c *cgroups.Coordinator, p *cgValidateReq) cgValidateAnswer {
		code, is := c.ValidateFetch(p.group, p.memberID, p.epoch)
		return cgValidateAnswer{code, is}
	},
	fail: func(_ *cgValidateReq, code int16, _ failure) cgValidateAnswer { return cgValidateAnswer{code, true} },
})

// WrapConsumer is the bridge.Options.ConsumerGroups hook: it keeps the
// local consumer-protocol coordinator and returns the service that routes
// each group to its owner.
func (r *Router) WrapConsumer(local *cgroups.Coordinator) cgroups.Service {
	r.clocal = local
	return consumerRouter{r}
}

// consumerRouter implements cgroups.Service over the Router.
type consumerRouter struct{ r *Router }

var _ cgroups.Service = consumerRouter{}

// Heartbeat implements cgroups.Service.
func (cr consumerRouter) Heartbeat(ctx context.Context, p cgroups.HeartbeatParams, topics map[string]int32) cgroups.HeartbeatResult {
	return do(ctx, cr.r, cgHeartbeatCall, newCGHeartbeatReq(p, topics))
}

// Describe implements cgroups.Service.
func (cr consumerRouter) Describe(ctx context.Context, group string) (cgroups.Description, bool, int16) {
	a := do(ctx, cr.r, cgDescribeCall, &groupReq{group})
	return a.d, a.found, a.code
}

// List implements cgroups.Service: this sidecar's groups and every other
// owner's, merged.
func (cr consumerRouter) List(ctx context.Context) ([]cgroups.Listing, int16) {
	r := cr.r
	out := r.clocal.List()
	code := r.eachOtherOwner(ctx, func(k int, p *peerClient) int16 {
		a := cgListCall.remote(ctx, r, k, p, &listReq{})
		out = append(out, a.groups...)
		return a.code
	})
	if code != 0 {
		return nil, code
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Group < out[j].Group })
	return slices.CompactFunc(out, func(a, b cgroups.Listing) bool { return a.Group == b.Group }), 0
}

// ValidateCommit implements cgroups.Service: one call to the owner, whose
// answer covers both protocols.
func (cr consumerRouter) ValidateCommit(ctx context.Context, group, memberID string, instanceID *string, epoch int32, version int16) (int16, bool) {
	a := do(ctx, cr.r, cgCommitCall, &commitCheckReq{group: group, memberID: memberID, instanceID: instanceID, generation: epoch, version: version})
	return a.code, true
}

// ValidateFetch implements cgroups.Service.
func (cr consumerRouter) ValidateFetch(ctx context.Context, group string, memberID *string, epoch int32) (int16, bool) {
	a := do(ctx, cr.r, cgFetchCall, &cgValidateReq{group: group, memberID: memberID, epoch: epoch})
	return a.code, a.isGroup
}

// Release implements cgroups.Service: false, the owner releases the id
// within the JoinGroup or DeleteGroups call (releasePre).
func (consumerRouter) Release(context.Context, string) (bool, bool) { return false, false }

// Holds implements cgroups.Service: false, the owner's DescribeGroups
// answers GROUP_ID_NOT_FOUND for a consumer-protocol group (holdsPre).
func (consumerRouter) Holds(context.Context, string) bool { return false }

// releasePre is the owner's consumer-protocol check of a classic JoinGroup
// or DeleteGroups: busy when a consumer-protocol group with members holds
// the id; dropped when an empty one held it (dropped here, its tombstone
// persisted).
func releasePre(ctx context.Context, r *Router, k int, group string) (busy, dropped, ok bool) {
	if r.clocal == nil {
		return false, false, true
	}
	type rel struct{ busy, dropped bool }
	res, ok := cserve(ctx, r, group, k, func() rel {
		b, d := r.clocal.Release(group)
		return rel{b, d}
	})
	return res.busy, res.dropped, ok
}

// classicPre serves at the owner a classic call (JoinGroup, SyncGroup,
// Heartbeat, LeaveGroup) of a group the consumer protocol holds, the
// group's persisted state loaded first and written after (cserve); done is
// false when f says no consumer-protocol group with members holds the id
// (an empty one was dropped). The calls' f hands the cgroups Classic*
// method the classic coordinator's part of the call, which it runs under
// the same lock when it does not serve the call itself (cgroups.Mixed):
// a consumer-protocol member upgrading the group cannot come in between.
func classicPre[R any](ctx context.Context, r *Router, k int, group string, f func(*cgroups.Coordinator) (R, bool), loading R) (res R, done bool) {
	if r.clocal == nil {
		return res, false
	}
	type served struct {
		res  R
		held bool
	}
	out, ok := cserve(ctx, r, group, k, func() served {
		v, held := f(r.clocal)
		return served{v, held}
	})
	if !ok {
		return loading, true
	}
	return out.res, out.held
}

// holdsPre reports at the owner whether a consumer-protocol group holds the
// id.
func holdsPre(ctx context.Context, r *Router, k int, group string) (held, ok bool) {
	if r.clocal == nil {
		return false, true
	}
	return cserve(ctx, r, group, k, func() bool { return r.clocal.Has(group) })
}

// Counts implements cgroups.Service (this sidecar's own groups).
func (cr consumerRouter) Counts() (int, int) { return cr.r.clocal.Counts() }
