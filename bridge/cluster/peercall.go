package cluster

// A forwarded call is declared once, as a call value (calls.go): its frame
// kind, its request and answer bodies, which group routes it, how the local
// coordinator serves it and what it answers when it cannot be served. From
// that one declaration follow the client side (do: serve locally or
// forward to the owner and decode the answer), the owner's side (serve:
// decode, check ownership, call the local coordinator, encode) and the
// frame kinds the link accepts (requestKind).

import (
	"context"
	"errors"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kafka-iggy/kafka-iggy/bridge/cgroups"
	"github.com/kafka-iggy/kafka-iggy/bridge/groups"
	"github.com/kafka-iggy/kafka-iggy/bridge/txn"
	"github.com/kafka-iggy/kafka-iggy/bridge/txnoffsets"
	"github.com/kafka-iggy/kafka-iggy/codec/wire"
)

// failure says why a call was not served, for answers that say it in
// words (DeleteGroups' error message).
type failure uint8

const (
	failMoving      failure = iota // shard PENDING, owner unknown, or the group not loaded yet
	failUnreachable                // forwarding to the owner failed
	failMalformed                  // the owner's answer was malformed
	failNotOwner                   // (at the owner) the shard is not ACTIVE here
)

// call declares one forwarded groups.Service call; P is its request body,
// R its answer.
type call[P, R any] struct {
	kind  uint8  // frame kind (10-127), unique
	name  string // in decoding errors: peer.<name>.request / .answer
	parks bool   // may wait for a rebalance: no peers.call_timeout
	seeds bool   // a group new to this coordinator is seeded first (ensureSeeded)
	// group routes the call; nil: every owner serves it for its own
	// groups (ListGroups' fan-out), without an ownership check.
	group  func(*P) string
	params func(field, *P)
	answer func(field, *R)
	code   func(*R) int16 // the answer's coordinator code (NOT_COORDINATOR is relayed)
	local  func(context.Context, *groups.Coordinator, *P) R
	// clocal, set instead of local, serves a consumer-protocol call with
	// the local bridge/cgroups coordinator (ccalls.go).
	clocal func(context.Context, *cgroups.Coordinator, *P) R
	// tlocal, set instead of local, serves a transaction call with the
	// local bridge/txn coordinator (tcalls.go).
	tlocal func(context.Context, *txn.Coordinator, *P) R
	// olocal, set instead of local, serves a pending-offsets call with the
	// local bridge/txnoffsets store (ocalls.go).
	olocal func(context.Context, txnoffsets.Service, *P) R
	fail   func(*P, int16, failure) R
	// check, when set, rejects an answer that does not fit its request.
	check func(*P, *R) error
	// pre, when set, runs at the owner before local; done means its answer
	// is the call's (the consumer-protocol checks of classic calls, which
	// the owner applies itself: no extra round trip).
	pre func(ctx context.Context, r *Router, k int, p *P) (res R, done bool)

	reqMsg, ansMsg string
}

// peerCall is a call as the link server dispatches it.
type peerCall interface {
	serve(ctx context.Context, r *Router, body []byte) ([]byte, error)
	// decode decodes a request (or an answer) body and returns its error
	// (the fuzz target runs it for every call).
	decode(body []byte, answer bool) error
}

// peerCalls holds every declared call by frame kind.
var peerCalls [kindResponse]peerCall

// register adds a call to the table; a kind declared twice or outside
// 10-127 is a programming error.
func register[P, R any](c *call[P, R]) *call[P, R] {
	if c.kind < 10 || c.kind >= kindResponse || c.kind == kindPart || peerCalls[c.kind] != nil {
		panic("cluster: peer call kind " + strconv.Itoa(int(c.kind)) + " invalid or declared twice")
	}
	c.reqMsg, c.ansMsg = "peer."+c.name+".request", "peer."+c.name+".answer"
	peerCalls[c.kind] = c
	return c
}

// requestKind reports whether k is a request the server serves.
func requestKind(k uint8) bool { return k < kindResponse && peerCalls[k] != nil }

// do serves a call of groups.Service: locally when this sidecar owns the
// group's shard, else at the owner over the peer link.
func do[P, R any](ctx context.Context, r *Router, c *call[P, R], p *P) R {
	kind, k, peer := r.route(ctx, c.group(p))
	switch kind {
	case routeLocal:
		return c.serveLocal(ctx, r, k, p)
	case routeRemote:
		return c.remote(ctx, r, k, peer, p)
	}
	return c.fail(p, routeCode(kind), failMoving)
}

// serveLocal calls the local coordinator for a group of shard k, which
// this sidecar owns.
func (c *call[P, R]) serveLocal(ctx context.Context, r *Router, k int, p *P) R {
	if c.pre != nil { // before seeding: a consumer-protocol group gets no classic one
		if res, done := c.pre(ctx, r, k, p); done {
			return res
		}
	}
	if c.seeds {
		if g := c.group(p); g != "" && !r.ensureSeeded(ctx, g, k) {
			return c.fail(p, kerr.CoordinatorLoadInProgress.Code, failMoving)
		}
	}
	if c.clocal != nil && c.group != nil {
		if g := c.group(p); g != "" {
			res, ok := cserve(ctx, r, g, k, func() R { return c.clocal(ctx, r.clocal, p) })
			if !ok {
				return c.fail(p, kerr.CoordinatorLoadInProgress.Code, failMoving)
			}
			return res
		}
	}
	return c.callLocal(ctx, r, p)
}

// callLocal calls the local coordinator the call is for.
func (c *call[P, R]) callLocal(ctx context.Context, r *Router, p *P) R {
	if c.clocal != nil {
		return c.clocal(ctx, r.clocal, p)
	}
	if c.tlocal != nil {
		return c.tlocal(ctx, r.tlocal, p)
	}
	if c.olocal != nil {
		return c.olocal(ctx, r.olocal, p)
	}
	return c.local(ctx, r.local, p)
}

// remote sends the call to the owner of shard k and decodes its answer; a
// failed call or a malformed answer becomes fail's answer.
func (c *call[P, R]) remote(ctx context.Context, r *Router, k int, peer *peerClient, p *P) R {
	var e enc
	c.params(encField{&e}, p)
	body, code := r.forward(ctx, k, peer, c.kind, e.b, c.parks)
	if code != 0 {
		return c.fail(p, code, failUnreachable)
	}
	d := newDec(body, c.ansMsg)
	var res R
	c.answer(decField{d}, &res)
	err := d.done()
	if err == nil && c.check != nil {
		err = c.check(p, &res)
	}
	if err != nil {
		return c.fail(p, r.badAnswer(peer, err), failMalformed)
	}
	r.relayed(k, c.code(&res))
	return res
}

func (c *call[P, R]) decode(body []byte, answer bool) error {
	if answer {
		d := newDec(body, c.ansMsg)
		c.answer(decField{d}, new(R))
		return d.done()
	}
	d := newDec(body, c.reqMsg)
	c.params(decField{d}, new(P))
	return d.done()
}

// serve answers a forwarded request at the owner: straight to the local
// coordinator when the group's shard is ACTIVE here, NOT_COORDINATOR
// otherwise (the caller forgets this owner and looks it up again). An
// error means the request was malformed.
func (c *call[P, R]) serve(ctx context.Context, r *Router, body []byte) ([]byte, error) {
	d := newDec(body, c.reqMsg)
	var p P
	c.params(decField{d}, &p)
	if err := d.done(); err != nil {
		return nil, err
	}
	var res R
	if c.group == nil {
		res = c.callLocal(ctx, r, &p)
	} else if k, ok := r.owned(c.group(&p)); ok {
		res = c.serveLocal(ctx, r, k, &p)
	} else {
		res = c.fail(&p, kerr.NotCoordinator.Code, failNotOwner)
	}
	var e enc
	c.answer(encField{&e}, &res)
	return e.b, nil
}

// serve answers one forwarded request of any kind (the link's handler).
func (r *Router) serve(ctx context.Context, kind uint8, body []byte) ([]byte, error) {
	if !requestKind(kind) {
		return nil, frameErr("kind", strconv.Itoa(int(kind))+" is not a request", wire.ErrUnknownDiscriminant)
	}
	return peerCalls[kind].serve(ctx, r, body)
}

// errAnswerCount: a LeaveGroup answer whose codes do not match its members.
var errAnswerCount = errors.New("cluster: leave: answer count differs")
