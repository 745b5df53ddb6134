package cluster

// Router is the groups.Service of a sidecar in a coordination domain: a
// group whose shard this sidecar owns (ACTIVE) is served by the local
// coordinator; a group of a PENDING shard answers
// COORDINATOR_LOAD_IN_PROGRESS; any other group is forwarded over the peer
// link to the announced owner and its answer relayed. The Kafka client only
// ever talks to its local sidecar (FindCoordinator answers this sidecar).
//
// Error translation towards the client: owner unknown or unreachable ->
// COORDINATOR_NOT_AVAILABLE; the owner's connection dropped during the call
// -> NOT_COORDINATOR; the owner answered NOT_COORDINATOR -> relayed, and
// the cached owner forgotten. All three make Kafka clients look the
// coordinator up again (localhost) and retry.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kafka-iggy/kafka-iggy/bridge/cgroups"
	"github.com/kafka-iggy/kafka-iggy/bridge/groups"
	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
	"github.com/kafka-iggy/kafka-iggy/bridge/txn"
	"github.com/kafka-iggy/kafka-iggy/bridge/txnoffsets"
)

// Options build a Router.
type Options struct {
	Peers        PeersConfig
	Coordination CoordinationConfig
	// Control is a dedicated Iggy client with one session: its membership
	// in the Iggy group is this sidecar's claim on shards.
	Control *iggy.Client
	// Data is the sidecar's Iggy pool (announcements, generations).
	Data *iggy.Client
	Log  zerolog.Logger
	// Node names this sidecar (unique per process; HOSTNAME + a random
	// suffix when empty).
	Node string
}

// Router implements groups.Service across the sidecars of a domain.
type Router struct {
	opts   Options
	log    zerolog.Logger
	local  *groups.Coordinator
	clocal *cgroups.Coordinator // consumer-protocol groups (ccalls.go); nil until WrapConsumer
	cst    cstore               // their persisted state (cstore.go)
	tlocal *txn.Coordinator     // transactional ids (tcalls.go); nil until WrapTxn
	olocal txnoffsets.Service   // pending transactional offsets (ocalls.go); nil until WrapTxnOffsets
	odur   *txnoffsets.Durable  // olocal persisted in txnoffsets.<domain>
	own    *ownership
	secret []byte
	ln     net.Listener
	tls    *peerTLS // nil: no peer TLS
	srv    *linkServer
	addr   string // advertised peer address

	seedMu  sync.Mutex
	ceiling map[string]int32 // groups seeded here -> stored generation ceiling

	peersMu sync.Mutex
	peers   map[string]*peerClient

	cancel    context.CancelFunc
	done      chan struct{}
	closeOnce sync.Once
}

// NewRouter validates the configuration, binds the peer listener and
// returns a Router; Start runs it once the local coordinator exists.
func NewRouter(o Options) (*Router, error) {
	if err := Validate(o.Peers, o.Coordination); err != nil {
		return nil, err
	}
	secret, err := o.Peers.LoadSecret()
	if err != nil {
		return nil, err
	}
	var ptls *peerTLS
	if t := o.Peers.TLS; t.Enabled {
		if ptls, err = newPeerTLS(t, o.Log); err != nil {
			return nil, err
		}
	}
	ln, err := net.Listen("tcp", o.Peers.Address)
	if err != nil {
		return nil, fmt.Errorf("peers.address: %w", err)
	}
	addr, err := o.Peers.Advertised(ln.Addr().(*net.TCPAddr).Port)
	if err != nil {
		_ = ln.Close()
		return nil, err
	}
	if o.Node == "" {
		o.Node = nodeName()
	}
	r := &Router{opts: o, log: o.Log, secret: secret, tls: ptls, ln: ln, addr: addr, ceiling: map[string]int32{}, peers: map[string]*peerClient{}, done: make(chan struct{})}
	r.own = &ownership{
		cfg: o.Coordination, log: o.Log, ctl: o.Control, data: o.Data, node: o.Node, addr: addr,
		coord:  iggy.TopicRef{Stream: o.Coordination.Stream, Topic: "coord." + o.Coordination.Domain},
		gens:   iggy.TopicRef{Stream: o.Coordination.Stream, Topic: "gens." + o.Coordination.Domain},
		cgs:    iggy.TopicRef{Stream: o.Coordination.Stream, Topic: "cgroups." + o.Coordination.Domain},
		txo:    iggy.TopicRef{Stream: o.Coordination.Stream, Topic: "txnoffsets." + o.Coordination.Domain},
		onLoss: r.shardLost,
	}
	return r, nil
}

// Addr is the bound peer listener.
func (r *Router) Addr() net.Addr { return r.ln.Addr() }

// Advertised is the peer address announced to the domain.
func (r *Router) Advertised() string { return r.addr }

// Wrap is the bridge.Options.Groups hook: it keeps the local coordinator
// and returns the Router.
func (r *Router) Wrap(local *groups.Coordinator) groups.Service {
	r.local = local
	local.SetGenerationHook(r.generationChanged)
	return r
}

// Start serves the peer listener and runs the ownership loop until Close.
// Setup of the Iggy objects is retried until it succeeds.
func (r *Router) Start() {
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	r.srv = &linkServer{ln: r.ln, secret: r.secret, domain: r.opts.Coordination.Domain, maxFrame: r.opts.Peers.MaxFrameBytes,
		maxMessage: r.opts.Peers.MaxMessageBytes, hsTime: r.opts.Peers.HandshakeTimeout, maxConns: r.opts.Peers.MaxConnections, maxInflight: r.opts.Peers.MaxInflightCalls,
		idle: r.opts.Peers.IdleTimeout, log: r.log, handle: r.serve, conns: map[net.Conn]struct{}{}}
	if r.tls != nil {
		r.srv.tls = r.tls.server
	}
	go r.srv.serve()
	go func() {
		defer close(r.done)
		for {
			err := r.own.setup(ctx)
			if err == nil {
				break
			}
			r.log.Warn().Err(err).Msg("coordination: setting up the domain's Iggy objects failed; retrying")
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
		}
		r.log.Info().Str("domain", r.opts.Coordination.Domain).Int("shards", r.own.count()).Str("peer_address", r.addr).
			Str("node", r.opts.Node).Msg("coordination: sidecar in the domain")
		r.own.run(ctx)
	}()
}

// Close releases every owned shard (release markers: the next owners start
// at once), leaves the Iggy group and closes the peer link.
func (r *Router) Close() { r.closeOnce.Do(r.close) }

func (r *Router) close() {
	if r.cancel == nil {
		_ = r.ln.Close()
		return
	}
	r.cancel()
	<-r.done
	ctx, cancel := context.WithTimeout(context.Background(), r.opts.Coordination.Lease)
	defer cancel()
	if r.own.count() > 0 {
		r.own.shutdown(ctx)
	}
	r.srv.close()
	r.peersMu.Lock()
	for _, p := range r.peers {
		p.close()
	}
	r.peersMu.Unlock()
}

func nodeName() string {
	h := os.Getenv("HOSTNAME")
	if h == "" {
		h, _ = os.Hostname()
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	return h + "-" + hex.EncodeToString(b[:])
}

// shardLost drops the shard's groups: parked JoinGroup/SyncGroup answer
// NOT_COORDINATOR at once.
func (r *Router) shardLost(k int) {
	n := r.own.count()
	dropped := r.local.Drop(func(g string) bool { return Shard(g, n) == k })
	if r.clocal != nil {
		dropped += r.clocal.Drop(func(g string) bool { return Shard(g, n) == k })
		r.cst.forget(func(g string) bool { return Shard(g, n) == k })
	}
	if r.odur != nil {
		r.odur.Drop(func(g string) bool { return Shard(g, n) == k })
	}
	r.seedMu.Lock()
	for g := range r.ceiling {
		if Shard(g, n) == k {
			delete(r.ceiling, g)
		}
	}
	r.seedMu.Unlock()
	if dropped > 0 {
		r.log.Info().Int("shard", k).Int("groups", dropped).Msg("coordination: groups handed over (their members rejoin at the new owner)")
	}
}

// route kinds.
const (
	routeLocal = iota
	routePending
	routeRemote
	routeUnavailable
)

// route decides where a group is served; for routeRemote it returns the
// owner's client.
func (r *Router) route(ctx context.Context, group string) (int, int, *peerClient) {
	n := r.own.count()
	if n == 0 {
		return routePending, 0, nil
	}
	k := Shard(group, n)
	switch r.own.serving(k) {
	case shardActive:
		return routeLocal, k, nil
	case shardPending:
		return routePending, k, nil
	}
	e, err := r.own.owner(ctx, k)
	if err != nil || e.none || e.node == r.opts.Node {
		if err != nil {
			r.log.Debug().Err(err).Int("shard", k).Msg("coordination: owner lookup failed")
		}
		return routeUnavailable, k, nil
	}
	return routeRemote, k, r.peer(e.addr)
}

func (r *Router) peer(addr string) *peerClient {
	r.peersMu.Lock()
	defer r.peersMu.Unlock()
	p := r.peers[addr]
	if p == nil {
		p = &peerClient{addr: addr, node: r.opts.Node, domain: r.opts.Coordination.Domain, secret: r.secret,
			dialTime: r.opts.Peers.DialTimeout, hsTime: r.opts.Peers.HandshakeTimeout, maxFrame: r.opts.Peers.MaxFrameBytes,
			maxMessage: r.opts.Peers.MaxMessageBytes, log: r.log}
		if r.tls != nil {
			p.tls = r.tls.client
		}
		r.peers[addr] = p
	}
	return p
}

// routeCode is the code answered when a group is not served here and
// cannot be forwarded.
func routeCode(kind int) int16 {
	if kind == routePending {
		return kerr.CoordinatorLoadInProgress.Code
	}
	return kerr.CoordinatorNotAvailable.Code
}

// forward sends one call to the owner of shard k; on failure it returns
// the Kafka code to answer and forgets the owner.
func (r *Router) forward(ctx context.Context, k int, p *peerClient, kind uint8, body []byte, parks bool) ([]byte, int16) {
	if !parks {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.opts.Peers.CallTimeout)
		defer cancel()
	}
	resp, err := p.call(ctx, kind, body)
	if err == nil {
		return resp, 0
	}
	r.own.forget(k)
	code := kerr.CoordinatorNotAvailable.Code
	if errors.Is(err, errPeerGone) {
		code = kerr.NotCoordinator.Code
	}
	if ctx.Err() == nil {
		r.log.Debug().Err(err).Int("shard", k).Str("peer_address", p.addr).Int16("error_code", code).Msg("coordination: forwarded call failed")
	}
	return nil, code
}

// relayed notes a NOT_COORDINATOR from the owner.
func (r *Router) relayed(k int, code int16) {
	if code == kerr.NotCoordinator.Code {
		r.own.forget(k)
	}
}

// ensureSeeded gives a group that is new to this coordinator its stored
// generation ceiling before it is served, so generations never go backwards
// when a group moves here; false when Iggy could not be read (the caller
// answers COORDINATOR_LOAD_IN_PROGRESS).
func (r *Router) ensureSeeded(ctx context.Context, group string, k int) bool {
	r.seedMu.Lock()
	defer r.seedMu.Unlock()
	if _, ok := r.ceiling[group]; ok && r.local.Has(group) {
		return true
	}
	if r.local.Has(group) {
		// Created before the hook saw it (cannot happen through the
		// Router); keep its generation and store a ceiling above it.
		gen, _ := r.local.Generation(group)
		c := gen + genBlock
		if err := r.own.storeCeiling(ctx, group, k, c); err != nil {
			return false
		}
		r.ceiling[group] = c
		return true
	}
	c, err := r.own.loadCeiling(ctx, group, k)
	if err != nil {
		r.log.Warn().Err(err).Str("group_id", group).Msg("coordination: reading the group's stored generation failed")
		return false
	}
	next := c + genBlock
	if err := r.own.storeCeiling(ctx, group, k, next); err != nil {
		r.log.Warn().Err(err).Str("group_id", group).Msg("coordination: storing the group's generation ceiling failed")
		return false
	}
	r.local.Seed(group, c, c > 0)
	r.ceiling[group] = next
	if c > 0 {
		r.log.Info().Str("group_id", group).Int32("generation", c).Int("shard", k).Msg("coordination: group taken over; members rejoin with their member ids")
	}
	return true
}

// generationChanged runs (under the group's lock) when a group gets a new
// generation: when it nears the stored ceiling, a higher one is stored in
// the background (genBlock/2 rebalances of headroom).
func (r *Router) generationChanged(group string, gen int32) {
	r.seedMu.Lock()
	c, ok := r.ceiling[group]
	if !ok || gen < c-genBlock/2 {
		r.seedMu.Unlock()
		return
	}
	next := c + genBlock
	r.ceiling[group] = next
	r.seedMu.Unlock()
	n := r.own.count()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), r.opts.Coordination.Lease)
		defer cancel()
		if err := r.own.storeCeiling(ctx, group, Shard(group, n), next); err != nil {
			r.log.Warn().Err(err).Str("group_id", group).Msg("coordination: raising the group's generation ceiling failed")
		}
	}()
}

// owned returns the shard of a group whose shard is ACTIVE here.
func (r *Router) owned(group string) (int, bool) {
	n := r.own.count()
	if n == 0 {
		return 0, false
	}
	k := Shard(group, n)
	return k, r.own.serving(k) == shardActive
}

// badAnswer logs a malformed answer from an owner, drops that connection
// and returns the code for the client.
func (r *Router) badAnswer(p *peerClient, err error) int16 {
	r.log.Warn().Err(err).Str("peer_address", p.addr).Str("close_reason", "frame_malformed").Msg("peer connection closed")
	p.mu.Lock()
	c := p.conn
	p.mu.Unlock()
	if c != nil {
		p.drop(c)
	}
	return kerr.NotCoordinator.Code
}

// List implements groups.Service: this sidecar's groups plus those of
// every other owner of the domain (fan-out), merged.
func (r *Router) List(ctx context.Context) ([]groups.Listing, int16) {
	out, _ := r.local.List(ctx)
	code := r.eachOtherOwner(ctx, func(k int, p *peerClient) int16 {
		a := listCall.remote(ctx, r, k, p, &listReq{})
		out = append(out, a.groups...)
		return a.code
	})
	if code != 0 {
		return nil, code
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Group < out[j].Group })
	out = slices.CompactFunc(out, func(a, b groups.Listing) bool { return a.Group == b.Group })
	return out, 0
}

// eachOtherOwner calls f once for every other sidecar that owns shards of
// the domain (with one of its shards): ListGroups' fan-out. The first
// non-zero code (f's, or of an owner that cannot be looked up) ends it.
func (r *Router) eachOtherOwner(ctx context.Context, f func(k int, p *peerClient) int16) int16 {
	n := r.own.count()
	if n == 0 {
		return kerr.CoordinatorLoadInProgress.Code
	}
	seen := map[string]bool{r.addr: true}
	for k := range n {
		if r.own.serving(k) != shardNone {
			continue
		}
		e, err := r.own.owner(ctx, k)
		if err != nil {
			return kerr.CoordinatorNotAvailable.Code
		}
		if e.none || e.node == r.opts.Node || seen[e.addr] {
			continue
		}
		seen[e.addr] = true
		if code := f(k, r.peer(e.addr)); code != 0 {
			return code
		}
	}
	return 0
}

// Counts implements groups.Service (this sidecar's own groups).
func (r *Router) Counts() (int, int) { return r.local.Counts() }

// Drain implements groups.Service.
func (r *Router) Drain() { r.local.Drain() }
