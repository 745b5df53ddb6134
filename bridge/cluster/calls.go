package cluster

// The forwarded calls: one declaration per groups.Service call (peercall.go
// derives the client stub, the owner's dispatch and the accepted frame
// kinds from it), next to the Router method that serves it. Adding a call
// is one entry here plus its body types in messages.go.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kafka-iggy/kafka-iggy/bridge/cgroups"
	"github.com/kafka-iggy/kafka-iggy/bridge/groups"
)

var _ groups.Service = (*Router)(nil)

// JoinGroup parks until the join phase completes.
var joinCall = register(&call[groups.JoinParams, groups.JoinResult]{
	kind: 10, name: "join", parks: true, seeds: true,
	group:  func(p *groups.JoinParams) string { return p.Group },
	params: joinParams, answer: joinResult,
	code: func(a *groups.JoinResult) int16 { return a.Code },
	pre: func(ctx context.Context, r *Router, k int, p *groups.JoinParams) (groups.JoinResult, bool) {
		loading := groups.JoinResult{Code: kerr.CoordinatorLoadInProgress.Code, MemberID: p.MemberID, Generation: -1}
		// A consumer-protocol group is served without seeding a classic one;
		// otherwise the group is seeded, then checked again with the classic
		// join started under the same lock (classicPre).
		if res, done := classicPre(ctx, r, k, p.Group, func(c *cgroups.Coordinator) (groups.JoinResult, bool) { return c.ClassicJoin(*p, nil) },
			loading); done || r.clocal == nil {
			return res, done
		}
		if !r.ensureSeeded(ctx, p.Group, k) {
			return loading, true
		}
		var wait func(context.Context) groups.JoinResult
		res, done := classicPre(ctx, r, k, p.Group, func(c *cgroups.Coordinator) (groups.JoinResult, bool) {
			return c.ClassicJoin(*p, func() { wait = r.local.StartJoin(*p) })
		}, loading)
		if wait != nil {
			return wait(ctx), true
		}
		return res, done
	},
	local: func(ctx context.Context, c *groups.Coordinator, p *groups.JoinParams) groups.JoinResult {
		return c.Join(ctx, *p)
	},
	fail: func(p *groups.JoinParams, code int16, _ failure) groups.JoinResult {
		return groups.JoinResult{Code: code, MemberID: p.MemberID, Generation: -1}
	},
})

// Join implements groups.Service.
func (r *Router) Join(ctx context.Context, p groups.JoinParams) groups.JoinResult {
	return do(ctx, r, joinCall, &p)
}

// SyncGroup parks until the leader's assignment arrives.
var syncCall = register(&call[groups.SyncParams, groups.SyncResult]{
	kind: 11, name: "sync", parks: true,
	group:  func(p *groups.SyncParams) string { return p.Group },
	params: syncParams, answer: syncResult,
	code: func(a *groups.SyncResult) int16 { return a.Code },
	pre: func(ctx context.Context, r *Router, k int, p *groups.SyncParams) (groups.SyncResult, bool) {
		var wait func(context.Context) groups.SyncResult
		res, done := classicPre(ctx, r, k, p.Group, func(c *cgroups.Coordinator) (groups.SyncResult, bool) {
			return c.ClassicSync(*p, func() { wait = r.local.StartSync(*p) })
		}, groups.SyncResult{Code: kerr.CoordinatorLoadInProgress.Code})
		if wait != nil {
			return wait(ctx), true
		}
		return res, done
	},
	local: func(ctx context.Context, c *groups.Coordinator, p *groups.SyncParams) groups.SyncResult {
		return c.Sync(ctx, *p)
	},
	fail: func(_ *groups.SyncParams, code int16, _ failure) groups.SyncResult {
		return groups.SyncResult{Code: code}
	},
})

// Sync implements groups.Service.
func (r *Router) Sync(ctx context.Context, p groups.SyncParams) groups.SyncResult {
	return do(ctx, r, syncCall, &p)
}

var heartbeatCall = register(&call[memberReq, codeAnswer]{
	kind: 12, name: "heartbeat",
	group:  func(p *memberReq) string { return p.group },
	params: memberReqBody, answer: codeBody,
	code: func(a *codeAnswer) int16 { return a.code },
	pre: func(ctx context.Context, r *Router, k int, p *memberReq) (codeAnswer, bool) {
		return classicPre(ctx, r, k, p.group, func(c *cgroups.Coordinator) (codeAnswer, bool) {
			var classic int16
			code, held := c.ClassicHeartbeat(p.group, p.memberID, p.instanceID, p.generation, func() {
				classic = r.local.Heartbeat(ctx, p.group, p.memberID, p.instanceID, p.generation)
			})
			if !held {
				code = classic
			}
			return codeAnswer{code}, true
		}, codeAnswer{kerr.CoordinatorLoadInProgress.Code})
	},
	local: func(ctx context.Context, c *groups.Coordinator, p *memberReq) codeAnswer {
		return codeAnswer{c.Heartbeat(ctx, p.group, p.memberID, p.instanceID, p.generation)}
	},
	fail: func(_ *memberReq, code int16, _ failure) codeAnswer { return codeAnswer{code} },
})

// Heartbeat implements groups.Service.
func (r *Router) Heartbeat(ctx context.Context, group, memberID string, instanceID *string, generation int32) int16 {
	return do(ctx, r, heartbeatCall, &memberReq{group, memberID, instanceID, generation}).code
}

var leaveCall = register(&call[leaveReq, leaveAnswer]{
	kind: 13, name: "leave",
	group:  func(p *leaveReq) string { return p.group },
	params: leaveBody, answer: leaveAnswerBody,
	code: func(a *leaveAnswer) int16 { return a.top },
	pre: func(ctx context.Context, r *Router, k int, p *leaveReq) (leaveAnswer, bool) {
		return classicPre(ctx, r, k, p.group, func(c *cgroups.Coordinator) (leaveAnswer, bool) {
			var classic leaveAnswer
			codes, held := c.ClassicLeave(p.group, p.ids, func() { classic.top, classic.codes = r.local.Leave(ctx, p.group, p.ids) })
			if !held {
				return classic, true
			}
			return leaveAnswer{0, codes}, true
		}, leaveAnswer{kerr.CoordinatorLoadInProgress.Code, make([]int16, len(p.ids))})
	},
	local: func(ctx context.Context, c *groups.Coordinator, p *leaveReq) leaveAnswer {
		top, codes := c.Leave(ctx, p.group, p.ids)
		return leaveAnswer{top, codes}
	},
	fail: func(p *leaveReq, code int16, _ failure) leaveAnswer {
		return leaveAnswer{code, make([]int16, len(p.ids))}
	},
	check: func(p *leaveReq, a *leaveAnswer) error {
		if len(a.codes) != len(p.ids) {
			return errAnswerCount
		}
		return nil
	},
})

// Leave implements groups.Service.
func (r *Router) Leave(ctx context.Context, group string, ids []groups.LeaveIdentity) (int16, []int16) {
	a := do(ctx, r, leaveCall, &leaveReq{group, ids})
	return a.top, a.codes
}

var describeCall = register(&call[groupReq, describeAnswer]{
	kind: 14, name: "describe",
	group:  func(p *groupReq) string { return p.group },
	params: groupReqBody, answer: describeBody,
	code: func(a *describeAnswer) int16 { return a.code },
	pre: func(ctx context.Context, r *Router, k int, p *groupReq) (describeAnswer, bool) {
		switch held, ok := holdsPre(ctx, r, k, p.group); {
		case !ok:
			return describeAnswer{code: kerr.CoordinatorLoadInProgress.Code}, true
		case held: // a consumer-protocol group: the bridge answers "not a classic group"
			return describeAnswer{code: kerr.GroupIDNotFound.Code}, true
		}
		return describeAnswer{}, false
	},
	local: func(ctx context.Context, c *groups.Coordinator, p *groupReq) describeAnswer {
		d, found, code := c.Describe(ctx, p.group)
		return describeAnswer{d, found, code}
	},
	fail: func(_ *groupReq, code int16, _ failure) describeAnswer { return describeAnswer{code: code} },
})

// Describe implements groups.Service.
func (r *Router) Describe(ctx context.Context, group string) (groups.Description, bool, int16) {
	a := do(ctx, r, describeCall, &groupReq{group})
	return a.desc, a.found, a.code
}

// ListGroups: every owner answers for its own groups (Router.List fans out).
var listCall = register(&call[listReq, listAnswer]{
	kind: 15, name: "list",
	params: listReqBody, answer: listBody,
	code: func(a *listAnswer) int16 { return a.code },
	local: func(ctx context.Context, c *groups.Coordinator, _ *listReq) listAnswer {
		ls, code := c.List(ctx)
		return listAnswer{ls, code}
	},
	fail: func(_ *listReq, code int16, _ failure) listAnswer { return listAnswer{code: code} },
})

var deleteCall = register(&call[groupReq, deleteAnswer]{
	kind: 16, name: "delete",
	group:  func(p *groupReq) string { return p.group },
	params: groupReqBody, answer: deleteBody,
	code: func(a *deleteAnswer) int16 { return a.code },
	pre: func(ctx context.Context, r *Router, k int, p *groupReq) (deleteAnswer, bool) {
		switch busy, dropped, ok := releasePre(ctx, r, k, p.group); {
		case !ok:
			return deleteAnswer{kerr.CoordinatorLoadInProgress.Code, "the group's coordinator is loading it"}, true
		case busy: // a consumer-protocol group with members
			return deleteAnswer{kerr.NonEmptyGroup.Code, "The group is not empty."}, true
		case dropped: // the emptied consumer-protocol group was the group: its offsets go too
			if code, msg := r.local.Delete(ctx, p.group); code != kerr.GroupIDNotFound.Code {
				return deleteAnswer{code, msg}, true
			}
			return deleteAnswer{}, true
		}
		return deleteAnswer{}, false
	},
	local: func(ctx context.Context, c *groups.Coordinator, p *groupReq) deleteAnswer {
		code, msg := c.Delete(ctx, p.group)
		return deleteAnswer{code, msg}
	},
	fail: func(_ *groupReq, code int16, why failure) deleteAnswer {
		return deleteAnswer{code, [...]string{
			failMoving:      "the group's coordinator is moving",
			failUnreachable: "the group's coordinator could not be reached",
			failMalformed:   "malformed answer from the group's coordinator",
			failNotOwner:    "this sidecar no longer coordinates the group",
		}[why]}
	},
})

// Delete implements groups.Service.
func (r *Router) Delete(ctx context.Context, group string) (int16, string) {
	a := do(ctx, r, deleteCall, &groupReq{group})
	return a.code, a.msg
}

// ValidateCommit: the group check of an OffsetCommit.
var validateCall = register(&call[memberReq, validateAnswer]{
	kind: 17, name: "validate", seeds: true,
	group:  func(p *memberReq) string { return p.group },
	params: memberReqBody, answer: validateBody,
	code: func(a *validateAnswer) int16 { return a.code },
	local: func(ctx context.Context, c *groups.Coordinator, p *memberReq) validateAnswer {
		code, known := c.ValidateCommit(ctx, p.group, p.memberID, p.generation, p.instanceID)
		return validateAnswer{code, known}
	},
	fail: func(_ *memberReq, code int16, _ failure) validateAnswer { return validateAnswer{code: code} },
})

// ValidateCommit implements groups.Service.
func (r *Router) ValidateCommit(ctx context.Context, group, memberID string, generation int32, instanceID *string) (int16, bool) {
	a := do(ctx, r, validateCall, &memberReq{group, memberID, instanceID, generation})
	return a.code, a.known
}

// OffsetDeleteCheck: the group check of an OffsetDelete.
var offsetDeleteCall = register(&call[groupReq, offsetDeleteAnswer]{
	kind: 18, name: "offset_delete",
	group:  func(p *groupReq) string { return p.group },
	params: groupReqBody, answer: offsetDeleteBody,
	code: func(a *offsetDeleteAnswer) int16 { return a.code },
	local: func(ctx context.Context, c *groups.Coordinator, p *groupReq) offsetDeleteAnswer {
		code, all, subs := c.OffsetDeleteCheck(ctx, p.group)
		return offsetDeleteAnswer{code, all, subs}
	},
	fail: func(_ *groupReq, code int16, _ failure) offsetDeleteAnswer { return offsetDeleteAnswer{code: code} },
})

// OffsetDeleteCheck implements groups.Service.
func (r *Router) OffsetDeleteCheck(ctx context.Context, group string) (int16, bool, []string) {
	a := do(ctx, r, offsetDeleteCall, &groupReq{group})
	return a.code, a.all, a.subscribed
}
