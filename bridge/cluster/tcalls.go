package cluster

// The forwarded calls of transactions (bridge/txn, issue 25; kinds 30-49;
// 37: EndTxn of transaction protocol v2):
// a transactional id is served by the owner of its shard, Shard(id, n) in
// the groups' shard space (an id and a group of one name share a shard,
// harmlessly). The state is in the decision log in Iggy, which the owner
// reads to its end before each decision: when a shard moves, its new owner
// continues from what the previous one wrote (its sweep finishes decided
// transactions and aborts timed-out ones of the ids it now owns).

import (
	"context"
	"slices"
	"strings"

	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
	"github.com/kafka-iggy/kafka-iggy/bridge/txn"
)

type txnReq struct {
	id    string
	pid   int64
	epoch int16
	group string // AddOffsetsToTxn
	flag  bool   // EndTxn: commit
	parts []txn.Partition
}

func txnReqBody(w field, p *txnReq) {
	w.str(&p.id, "txn.id")
	w.i64(&p.pid, "txn.producer_id")
	w.i16(&p.epoch, "txn.epoch")
	w.str(&p.group, "txn.group")
	w.boolean(&p.flag, "txn.commit")
	p.parts = sized(p.parts, w.count(len(p.parts), "txn.partitions", 8))
	for i := range p.parts {
		w.str(&p.parts[i].Topic, "txn.partition.topic")
		w.i32(&p.parts[i].Partition, "txn.partition.partition")
	}
}

func txnInitBody(w field, p *txn.InitParams) {
	w.str(&p.ID, "txn_init.id")
	w.i32(&p.TimeoutMs, "txn_init.timeout")
	w.i64(&p.ProducerID, "txn_init.producer_id")
	w.i16(&p.Epoch, "txn_init.epoch")
}

func txnInitResult(w field, r *txn.InitResult) {
	w.i16(&r.Code, "txn_init.code")
	w.i64(&r.ProducerID, "txn_init.producer_id")
	w.i16(&r.Epoch, "txn_init.epoch")
}

func txnAddResult(w field, r *txn.AddResult) {
	w.i16(&r.Code, "txn_add.code")
	r.Codes = sized(r.Codes, w.count(len(r.Codes), "txn_add.codes", 2))
	for i := range r.Codes {
		w.i16(&r.Codes[i], "txn_add.code")
	}
	seq := int32(r.Seq)
	w.i32(&seq, "txn_add.seq")
	r.Seq = uint32(seq)
	w.i16(&r.MarkEpoch, "txn_add.mark_epoch")
}

func txnParts(w field, ps *[]txn.Partition, f string) {
	*ps = sized(*ps, w.count(len(*ps), f, 8))
	for i := range *ps {
		w.str(&(*ps)[i].Topic, f+".topic")
		w.i32(&(*ps)[i].Partition, f+".partition")
	}
}

func txnDescription(w field, d *txn.Description) {
	w.i16(&d.Code, "txn_describe.code")
	w.str(&d.ID, "txn_describe.id")
	st := uint8(d.State)
	w.u8(&st, "txn_describe.state")
	d.State = txn.State(st)
	w.i64(&d.ProducerID, "txn_describe.producer_id")
	w.i16(&d.Epoch, "txn_describe.epoch")
	w.i32(&d.TimeoutMs, "txn_describe.timeout")
	w.i64(&d.StartMs, "txn_describe.start")
	txnParts(w, &d.Parts, "txn_describe.partitions")
}

type txnListAnswer struct {
	code int16
	list []txn.Description
}

func txnListBody(w field, a *txnListAnswer) {
	w.i16(&a.code, "txn_list.code")
	a.list = sized(a.list, w.count(len(a.list), "txn_list.ids", 24))
	for i := range a.list {
		txnDescription(w, &a.list[i])
	}
}

func txnView(w field, v *txn.View) {
	w.i16(&v.Code, "txn_view.code")
	w.i64(&v.ProducerID, "txn_view.producer_id")
	w.i16(&v.Epoch, "txn_view.epoch")
	w.boolean(&v.Open, "txn_view.open")
	seq := int32(v.Seq)
	w.i32(&seq, "txn_view.seq")
	v.Seq = uint32(seq)
	w.i16(&v.MarkEpoch, "txn_view.mark_epoch")
	txnParts(w, &v.Parts, "txn_view.partitions")
}

var txnInitCall = register(&call[txn.InitParams, txn.InitResult]{
	kind: 30, name: "txn_init",
	group:  func(p *txn.InitParams) string { return p.ID },
	params: txnInitBody, answer: txnInitResult,
	code: func(a *txn.InitResult) int16 { return a.Code },
	tlocal: func(ctx context.Context, c *txn.Coordinator, p *txn.InitParams) txn.InitResult {
		return c.InitProducerID(ctx, *p)
	},
	fail: func(_ *txn.InitParams, code int16, _ failure) txn.InitResult {
		return txn.InitResult{Code: code, ProducerID: -1, Epoch: -1}
	},
})

var txnAddCall = register(&call[txnReq, txn.AddResult]{
	kind: 31, name: "txn_add_partitions",
	group:  func(p *txnReq) string { return p.id },
	params: txnReqBody, answer: txnAddResult,
	code: func(a *txn.AddResult) int16 { return a.Code },
	tlocal: func(ctx context.Context, c *txn.Coordinator, p *txnReq) txn.AddResult {
		return c.AddPartitions(ctx, p.id, p.pid, p.epoch, p.parts)
	},
	fail: func(_ *txnReq, code int16, _ failure) txn.AddResult { return txn.AddResult{Code: code} },
})

var txnAddOffsetsCall = register(&call[txnReq, codeAnswer]{
	kind: 32, name: "txn_add_offsets",
	group:  func(p *txnReq) string { return p.id },
	params: txnReqBody, answer: codeBody,
	code: func(a *codeAnswer) int16 { return a.code },
	tlocal: func(ctx context.Context, c *txn.Coordinator, p *txnReq) codeAnswer {
		return codeAnswer{c.AddOffsets(ctx, p.id, p.pid, p.epoch, p.group)}
	},
	fail: func(_ *txnReq, code int16, _ failure) codeAnswer { return codeAnswer{code} },
})

var txnEndCall = register(&call[txnReq, codeAnswer]{
	kind: 33, name: "txn_end",
	group:  func(p *txnReq) string { return p.id },
	params: txnReqBody, answer: codeBody,
	code: func(a *codeAnswer) int16 { return a.code },
	tlocal: func(ctx context.Context, c *txn.Coordinator, p *txnReq) codeAnswer {
		return codeAnswer{c.EndTxn(ctx, p.id, p.pid, p.epoch, p.flag)}
	},
	fail: func(_ *txnReq, code int16, _ failure) codeAnswer { return codeAnswer{code} },
})

func txnEndResult(w field, r *txn.EndResult) {
	w.i16(&r.Code, "txn_end2.code")
	w.i64(&r.ProducerID, "txn_end2.producer_id")
	w.i16(&r.Epoch, "txn_end2.epoch")
}

// EndTxn v5 (transaction protocol v2): the answer carries the producer id
// and epoch of the producer's next transaction.
var txnEndV2Call = register(&call[txnReq, txn.EndResult]{
	kind: 37, name: "txn_end_v2",
	group:  func(p *txnReq) string { return p.id },
	params: txnReqBody, answer: txnEndResult,
	code: func(a *txn.EndResult) int16 { return a.Code },
	tlocal: func(ctx context.Context, c *txn.Coordinator, p *txnReq) txn.EndResult {
		return c.EndTxnV2(ctx, p.id, p.pid, p.epoch, p.flag)
	},
	fail: func(_ *txnReq, code int16, _ failure) txn.EndResult {
		return txn.EndResult{Code: code, ProducerID: -1, Epoch: -1}
	},
})

var txnDescribeCall = register(&call[txnReq, txn.Description]{
	kind: 34, name: "txn_describe",
	group:  func(p *txnReq) string { return p.id },
	params: txnReqBody, answer: txnDescription,
	code: func(a *txn.Description) int16 { return a.Code },
	tlocal: func(ctx context.Context, c *txn.Coordinator, p *txnReq) txn.Description {
		return c.Describe(ctx, p.id)
	},
	fail: func(p *txnReq, code int16, _ failure) txn.Description { return txn.Description{Code: code, ID: p.id} },
})

// ListTransactions: every owner answers for its own ids.
var txnListCall = register(&call[listReq, txnListAnswer]{
	kind: 35, name: "txn_list",
	params: listReqBody, answer: txnListBody,
	code: func(a *txnListAnswer) int16 { return a.code },
	tlocal: func(ctx context.Context, c *txn.Coordinator, _ *listReq) txnListAnswer {
		l, code := c.List(ctx)
		return txnListAnswer{code, l}
	},
	fail: func(_ *listReq, code int16, _ failure) txnListAnswer { return txnListAnswer{code: code} },
})

var txnProducerCall = register(&call[txnReq, txn.View]{
	kind: 36, name: "txn_producer",
	group:  func(p *txnReq) string { return p.id },
	params: txnReqBody, answer: txnView,
	code: func(a *txn.View) int16 { return a.Code },
	tlocal: func(ctx context.Context, c *txn.Coordinator, p *txnReq) txn.View {
		return c.Producer(ctx, p.id)
	},
	fail: func(_ *txnReq, code int16, _ failure) txn.View { return txn.View{Code: code} },
})

// WrapTxn is the bridge.Options.Transactions hook: it keeps the local
// transaction coordinator (its sweep limited to the ids of the shards
// this sidecar owns) and returns the service that routes each
// transactional id to its owner.
func (r *Router) WrapTxn(local *txn.Coordinator) txn.Service {
	r.tlocal = local
	local.SetLog(iggy.TopicRef{Stream: r.opts.Coordination.Stream, Topic: "txn." + r.opts.Coordination.Domain})
	local.SetOwns(func(id string) bool { _, ok := r.owned(id); return ok }, func(id string) int { return Shard(id, r.own.count()) })
	return txnRouter{r}
}

// txnRouter implements txn.Service over the Router.
type txnRouter struct{ r *Router }

var _ txn.Service = txnRouter{}

// InitProducerID implements txn.Service.
func (tr txnRouter) InitProducerID(ctx context.Context, p txn.InitParams) txn.InitResult {
	return do(ctx, tr.r, txnInitCall, &p)
}

// AddPartitions implements txn.Service.
func (tr txnRouter) AddPartitions(ctx context.Context, id string, pid int64, epoch int16, parts []txn.Partition) txn.AddResult {
	return do(ctx, tr.r, txnAddCall, &txnReq{id: id, pid: pid, epoch: epoch, parts: parts})
}

// AddOffsets implements txn.Service.
func (tr txnRouter) AddOffsets(ctx context.Context, id string, pid int64, epoch int16, group string) int16 {
	return do(ctx, tr.r, txnAddOffsetsCall, &txnReq{id: id, pid: pid, epoch: epoch, group: group}).code
}

// EndTxn implements txn.Service.
func (tr txnRouter) EndTxn(ctx context.Context, id string, pid int64, epoch int16, commit bool) int16 {
	return do(ctx, tr.r, txnEndCall, &txnReq{id: id, pid: pid, epoch: epoch, flag: commit}).code
}

// EndTxnV2 implements txn.Service.
func (tr txnRouter) EndTxnV2(ctx context.Context, id string, pid int64, epoch int16, commit bool) txn.EndResult {
	return do(ctx, tr.r, txnEndV2Call, &txnReq{id: id, pid: pid, epoch: epoch, flag: commit})
}

// Describe implements txn.Service.
func (tr txnRouter) Describe(ctx context.Context, id string) txn.Description {
	return do(ctx, tr.r, txnDescribeCall, &txnReq{id: id})
}

// Producer implements txn.Service.
func (tr txnRouter) Producer(ctx context.Context, id string) txn.View {
	return do(ctx, tr.r, txnProducerCall, &txnReq{id: id})
}

// List implements txn.Service: this sidecar's ids and every other owner's.
func (tr txnRouter) List(ctx context.Context) ([]txn.Description, int16) {
	r := tr.r
	out, code := r.tlocal.List(ctx)
	if code != 0 {
		return nil, code
	}
	code = r.eachOtherOwner(ctx, func(k int, p *peerClient) int16 {
		a := txnListCall.remote(ctx, r, k, p, &listReq{})
		out = append(out, a.list...)
		return a.code
	})
	if code != 0 {
		return nil, code
	}
	slices.SortFunc(out, func(a, b txn.Description) int { return strings.Compare(a.ID, b.ID) })
	return slices.CompactFunc(out, func(a, b txn.Description) bool { return a.ID == b.ID }), 0
}
