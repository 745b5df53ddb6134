package cluster

// The forwarded calls of pending transactional offsets (bridge/txnoffsets,
// issue 25; kinds 50-59): the offsets TxnOffsetCommit holds for a group
// live at the owner of the group's shard, like the group, which persists
// every change in Iggy before it answers it and restores a group from there
// when it first serves it (txnoffsets.Durable over topic
// txnoffsets.<domain>, one partition per shard), so they survive an owner
// move.

import (
	"context"

	"github.com/kafka-iggy/kafka-iggy/bridge/txnoffsets"
)

// pendReq is the body of every pending-offsets request.
type pendReq struct {
	group string
	pid   int64
	epoch int16
	offs  []txnoffsets.Offset
}

func pendReqBody(w field, p *pendReq) {
	w.str(&p.group, "pend.group")
	w.i64(&p.pid, "pend.producer_id")
	w.i16(&p.epoch, "pend.epoch")
	p.offs = sized(p.offs, w.count(len(p.offs), "pend.offsets", 16))
	for i := range p.offs {
		w.str(&p.offs[i].Topic, "pend.offset.topic")
		w.i32(&p.offs[i].Partition, "pend.offset.partition")
		w.i64(&p.offs[i].Offset, "pend.offset.offset")
	}
}

// pendAnswer answers Pending (offsets) and Unstable (flags).
type pendAnswer struct {
	code  int16
	offs  []txnoffsets.Offset
	flags []bool
}

func pendAnswerBody(w field, a *pendAnswer) {
	w.i16(&a.code, "code")
	a.offs = sized(a.offs, w.count(len(a.offs), "pend.offsets", 16))
	for i := range a.offs {
		w.str(&a.offs[i].Topic, "pend.offset.topic")
		w.i32(&a.offs[i].Partition, "pend.offset.partition")
		w.i64(&a.offs[i].Offset, "pend.offset.offset")
	}
	a.flags = sized(a.flags, w.count(len(a.flags), "pend.flags", 1))
	for i := range a.flags {
		w.boolean(&a.flags[i], "pend.flag")
	}
}

func pendGroup(p *pendReq) string { return p.group }

func pendFail(_ *pendReq, code int16, _ failure) pendAnswer { return pendAnswer{code: code} }

var pendAddCall = register(&call[pendReq, codeAnswer]{
	kind: 50, name: "txn_offsets_add",
	group: pendGroup, params: pendReqBody, answer: codeBody,
	code: func(a *codeAnswer) int16 { return a.code },
	olocal: func(ctx context.Context, s txnoffsets.Service, p *pendReq) codeAnswer {
		return codeAnswer{s.Add(ctx, p.group, p.pid, p.epoch, p.offs)}
	},
	fail: func(_ *pendReq, code int16, _ failure) codeAnswer { return codeAnswer{code} },
})

var pendPendingCall = register(&call[pendReq, pendAnswer]{
	kind: 51, name: "txn_offsets_pending",
	group: pendGroup, params: pendReqBody, answer: pendAnswerBody,
	code: func(a *pendAnswer) int16 { return a.code },
	olocal: func(ctx context.Context, s txnoffsets.Service, p *pendReq) pendAnswer {
		offs, code := s.Pending(ctx, p.group, p.pid, p.epoch)
		return pendAnswer{code: code, offs: offs}
	},
	fail: pendFail,
})

var pendForgetCall = register(&call[pendReq, codeAnswer]{
	kind: 52, name: "txn_offsets_forget",
	group: pendGroup, params: pendReqBody, answer: codeBody,
	code: func(a *codeAnswer) int16 { return a.code },
	olocal: func(ctx context.Context, s txnoffsets.Service, p *pendReq) codeAnswer {
		return codeAnswer{s.Forget(ctx, p.group, p.pid, p.epoch)}
	},
	fail: func(_ *pendReq, code int16, _ failure) codeAnswer { return codeAnswer{code} },
})

var pendUnstableCall = register(&call[pendReq, pendAnswer]{
	kind: 53, name: "txn_offsets_unstable",
	group: pendGroup, params: pendReqBody, answer: pendAnswerBody,
	code: func(a *pendAnswer) int16 { return a.code },
	olocal: func(ctx context.Context, s txnoffsets.Service, p *pendReq) pendAnswer {
		flags, code := s.Unstable(ctx, p.group, p.offs)
		return pendAnswer{code: code, flags: flags}
	},
	fail: pendFail,
	check: func(p *pendReq, a *pendAnswer) error {
		if a.code == 0 && len(a.flags) != len(p.offs) {
			return errAnswerCount
		}
		return nil
	},
})

// WrapTxnOffsets makes the Router serve the pending transactional offsets
// of the groups this sidecar owns with local, and returns the
// txnoffsets.Service the bridge calls (bridge.Options.TxnOffsets).
func (r *Router) WrapTxnOffsets(local *txnoffsets.Pending) txnoffsets.Service {
	r.odur = txnoffsets.NewDurable(local, &txnoffsets.IggyStore{
		Client: r.own.data, Ref: r.own.txo,
		Partition: func(g string) uint32 { return uint32(Shard(g, r.own.count())) },
		Now:       func() int64 { return r.own.now().UnixMicro() },
	}, r.log)
	r.olocal = r.odur
	return offsetsRouter{r}
}

// offsetsRouter implements txnoffsets.Service over the Router.
type offsetsRouter struct{ r *Router }

var _ txnoffsets.Service = offsetsRouter{}

// Add implements txnoffsets.Service.
func (o offsetsRouter) Add(ctx context.Context, group string, pid int64, epoch int16, offs []txnoffsets.Offset) int16 {
	return do(ctx, o.r, pendAddCall, &pendReq{group, pid, epoch, offs}).code
}

// Pending implements txnoffsets.Service.
func (o offsetsRouter) Pending(ctx context.Context, group string, pid int64, epoch int16) ([]txnoffsets.Offset, int16) {
	a := do(ctx, o.r, pendPendingCall, &pendReq{group: group, pid: pid, epoch: epoch})
	return a.offs, a.code
}

// Forget implements txnoffsets.Service.
func (o offsetsRouter) Forget(ctx context.Context, group string, pid int64, epoch int16) int16 {
	return do(ctx, o.r, pendForgetCall, &pendReq{group: group, pid: pid, epoch: epoch}).code
}

// Unstable implements txnoffsets.Service.
func (o offsetsRouter) Unstable(ctx context.Context, group string, parts []txnoffsets.Offset) ([]bool, int16) {
	a := do(ctx, o.r, pendUnstableCall, &pendReq{group: group, offs: parts})
	return a.flags, a.code
}
