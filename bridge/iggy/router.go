package iggy

import (
	"context"
	"errors"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

// Partition routing (protocol 0.12, Iggy server 0.10 multi-leader clusters).
//
// Every partition has its own primary; a partition request (send, poll,
// consumer-offset read/store/delete) belongs on the node of that primary,
// and a backup refuses it with 89 NotPrimary without admitting it. The
// router keeps what GET_CLUSTER_METADATA said (replica id → host:port) and
// the GET_PARTITION_ROUTE answers it looked up (per partition, bounded), and
// sends each partition request on the home pool when the home sessions are
// on the primary's node, otherwise on a peer pool: a Client of its own for
// that node (same credentials, sessions, lanes and coalescing; it neither
// follows the leader nor routes).
//
// Hot path: while the last cluster metadata showed fewer than two nodes (or
// the generation has no routes, 0.11) a partition request costs nothing
// extra. A NotPrimary answer there, or on any node, reads the cluster
// metadata again, drops the partition's route, and the request is tried
// once more along the fresh route (a Send too: the session hands refused,
// unadmitted messages back to it with their frames reopened).
type router struct {
	clustered atomic.Bool // the last GET_CLUSTER_METADATA listed two or more reachable nodes

	mu      sync.Mutex
	nodes   map[uint8]string // replica id → host:port
	routes  map[partKey]route
	peers   map[string]*Client
	refresh time.Time // last cluster metadata read after a refusal
}

// route is one GET_PARTITION_ROUTE answer.
type route struct {
	primary uint8
	fence   icodec.PartitionContext // stamped on the requests it routes (owner 0)
	at      time.Time
}

const (
	// maxRoutes bounds the cached routes; a full cache starts over.
	maxRoutes = 4096
	// maxPeers bounds the nodes the client opens peer pools to.
	maxPeers = 32
	// refreshEvery spaces cluster metadata reads caused by refusals.
	refreshEvery = 100 * time.Millisecond
)

// learn records the nodes of a GET_CLUSTER_METADATA reply. A change of the
// replica → address map drops every cached route.
func (r *router) learn(nodes []icodec.ReplicaNode) {
	m := make(map[uint8]string, len(nodes))
	for _, nd := range nodes {
		if nd.IP == "" || nd.TCPPort == 0 {
			continue
		}
		m[nd.ReplicaID] = net.JoinHostPort(nd.IP, strconv.Itoa(int(nd.TCPPort)))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	same := len(m) == len(r.nodes)
	for id, a := range m {
		if r.nodes[id] != a {
			same = false
		}
	}
	if !same {
		r.nodes = m
		r.routes = nil
	}
	r.clustered.Store(len(m) > 1)
}

// cached returns the usable route of k (ttl 0: no age limit).
func (r *router) cached(k partKey, ttl time.Duration) (route, string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rt, ok := r.routes[k]
	if !ok || ttl > 0 && time.Since(rt.at) > ttl {
		return route{}, "", false
	}
	addr, known := r.nodes[rt.primary]
	return rt, addr, known
}

func (r *router) store(k partKey, rt route) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.routes == nil || len(r.routes) >= maxRoutes {
		r.routes = make(map[partKey]route)
	}
	r.routes[k] = rt
}

func (r *router) drop(k partKey) {
	r.mu.Lock()
	delete(r.routes, k)
	r.mu.Unlock()
}

func (r *router) nodeAddr(id uint8) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	a, ok := r.nodes[id]
	return a, ok
}

// dueRefresh reports whether a refusal may read the cluster metadata now.
func (r *router) dueRefresh() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if time.Since(r.refresh) < refreshEvery {
		return false
	}
	r.refresh = time.Now()
	return true
}

// routing reports whether partition requests may need a route: this is the
// home client, routing is on, and the generation has routes.
func (c *Client) routing() bool {
	return c.router != nil && c.Protocol().RoutesPartitions()
}

// routed runs send on the client of the node that leads req's partition
// (c itself with routing off, on one node, or for a request that names no
// partition), and once more along a fresh route when that node refuses it
// (89 NotPrimary, 87). The route key (two strings) is built only once a
// cluster is known or a node refused, so a one-node server pays nothing.
func (c *Client) routed(ctx context.Context, req Request, send func(tc *Client, fence icodec.PartitionContext) error) error {
	if !c.routing() {
		return send(c, icodec.PartitionContext{})
	}
	st, tp, p := partitionOf(req)
	if !p.Present {
		return send(c, icodec.PartitionContext{})
	}
	var k partKey
	keyed := false
	key := func() partKey {
		if !keyed {
			k, keyed = keyOf(st, tp, p), true
		}
		return k
	}
	for attempt := 0; ; attempt++ {
		tc, fence := c, icodec.PartitionContext{}
		if c.router.clustered.Load() {
			var err error
			if tc, fence, err = c.target(ctx, key(), st, tp); err != nil {
				return err
			}
		}
		err := send(tc, fence)
		if err != nil && attempt == 0 && c.refused(ctx, tc, key(), st, tp, err) {
			continue
		}
		return err
	}
}

// target returns the client a request for partition k goes to and the
// fence to stamp on it. Without a cluster it is c itself, at no cost.
func (c *Client) target(ctx context.Context, k partKey, stream, topic icodec.Identifier) (*Client, icodec.PartitionContext, error) {
	if !c.routing() || !c.router.clustered.Load() {
		return c, icodec.PartitionContext{}, nil
	}
	rt, addr, known := c.router.cached(k, c.cfg.MetadataTTL)
	if !known {
		var err error
		if rt, err = c.lookupRoute(ctx, c, k, stream, topic); err != nil {
			return nil, icodec.PartitionContext{}, err
		}
		if addr, known = c.router.nodeAddr(rt.primary); !known && c.router.dueRefresh() {
			c.refreshCluster(ctx)
			addr, known = c.router.nodeAddr(rt.primary)
		}
	}
	if !known || c.homeOn(addr) {
		return c, rt.fence, nil // an unknown primary: the home node answers (and may refuse)
	}
	p := c.peer(addr)
	if p == nil {
		return c, rt.fence, nil
	}
	return p, rt.fence, nil
}

// lookupRoute asks via (the home pool, or the node that refused) for the
// route of k and caches it.
func (c *Client) lookupRoute(ctx context.Context, via *Client, k partKey, stream, topic icodec.Identifier) (route, error) {
	var resp icodec.GetPartitionRouteResponse
	if err := via.do(ctx, &icodec.GetPartitionRouteRequest{StreamID: stream, TopicID: topic, PartitionID: k.partition}, &resp, icodec.PartitionContext{}); err != nil {
		return route{}, err
	}
	rt := route{primary: resp.PrimaryReplica, at: time.Now(),
		fence: icodec.PartitionContext{Incarnation: resp.Incarnation, MetadataOp: resp.MetadataOp}}
	c.router.store(k, rt)
	c.log.Debug().Str("stream", k.stream).Str("topic", k.topic).Uint32("partition_id", k.partition).
		Uint8("primary_replica", resp.PrimaryReplica).Uint32("view", resp.View).Msg("iggy: partition route")
	return rt, nil
}

// refused handles a partition request's error on t: on 89 NotPrimary or
// 87 HistoryUnavailable it drops k's route (reading the cluster metadata
// again when due, and asking the refusing node for the route first, as it
// knows the newer view) and reports that the request may be tried again.
func (c *Client) refused(ctx context.Context, t *Client, k partKey, stream, topic icodec.Identifier, err error) bool {
	notPrimary := errors.Is(err, icodec.StatusNotPrimary)
	if c.router == nil || err == nil {
		return false
	}
	if !notPrimary && !errors.Is(err, icodec.StatusHistoryUnavailable) {
		if t != c && (errors.Is(err, ErrSessionLost) || IsTimeout(err)) {
			c.router.drop(k) // the primary's node may be gone: the next request looks again
		}
		return false
	}
	c.router.drop(k)
	if notPrimary && c.router.dueRefresh() {
		c.refreshCluster(ctx)
	}
	c.log.Debug().Err(err).Str("node_addr", t.cfg.Address).Str("stream", k.stream).Str("topic", k.topic).
		Uint32("partition_id", k.partition).Msg("iggy: partition request refused; routing again")
	if notPrimary && t != c && c.router.clustered.Load() {
		_, _ = c.lookupRoute(ctx, t, k, stream, topic) // a failure leaves the home lookup to target
	}
	return true
}

// refreshCluster reads GET_CLUSTER_METADATA on the home pool.
func (c *Client) refreshCluster(ctx context.Context) {
	cl, err := c.encode(&icodec.GetClusterMetadataRequest{})
	if err != nil {
		return
	}
	rb, payload, err := c.roundTrip(ctx, cl, nil)
	if err != nil {
		c.log.Debug().Err(err).Msg("iggy: cluster metadata unavailable")
		return
	}
	defer c.putReply(rb)
	if nodes, err := c.wireProtocol().DecodeReplicaNodes(payload); err == nil {
		c.router.learn(nodes)
	}
}

// homeOn reports whether every logged-in home session is on addr (true
// when none is up: the home pool reconnects and its calls wait).
func (c *Client) homeOn(addr string) bool {
	for _, s := range c.sessions {
		if at := s.at.Load(); at != nil && at.dial != addr && at.remote != addr {
			return false
		}
	}
	return true
}

// peer returns the pool of node addr, starting it on first use; nil when
// maxPeers pools are open or the client is closed.
func (c *Client) peer(addr string) *Client {
	c.router.mu.Lock()
	defer c.router.mu.Unlock()
	if p := c.router.peers[addr]; p != nil {
		return p
	}
	if len(c.router.peers) >= maxPeers || c.isClosed() {
		return nil
	}
	cfg := c.cfg
	cfg.Address, cfg.FollowLeader, cfg.RoutePartitions = addr, false, false
	cfg.Protocol = c.Protocol().Label()
	log := c.log.With().Str("node_addr", addr).Logger()
	p, err := New(cfg, log, WithMetrics(peerMetrics{c.metrics}), WithClientVersion(c.version))
	if err != nil {
		log.Warn().Err(err).Msg("iggy: cannot open a pool to a partition primary's node")
		return nil
	}
	if c.router.peers == nil {
		c.router.peers = make(map[string]*Client)
	}
	c.router.peers[addr] = p
	log.Info().Msg("iggy: opening sessions to a partition primary's node")
	go func() { _ = p.Start(c.ctx) }() // its sessions reconnect by themselves until Close
	return p
}

// closePeers closes every peer pool (Close).
func (c *Client) closePeers() {
	if c.router == nil {
		return
	}
	c.router.mu.Lock()
	peers := c.router.peers
	c.router.peers = nil
	c.router.mu.Unlock()
	for _, p := range peers {
		_ = p.Close()
	}
}

// PeerNodes returns the addresses of the nodes the client opened peer pools
// to (partition primaries elsewhere than the home sessions' node).
func (c *Client) PeerNodes() []string {
	if c.router == nil {
		return nil
	}
	c.router.mu.Lock()
	defer c.router.mu.Unlock()
	out := make([]string, 0, len(c.router.peers))
	for a := range c.router.peers {
		out = append(out, a)
	}
	return out
}

// peerMetrics forwards a peer pool's request, batch and reconnect
// measurements; its session, in-flight and lane gauges would overwrite the
// home pool's, so they are dropped.
type peerMetrics struct{ m Metrics }

func (peerMetrics) SessionsUp(int)                                {}
func (peerMetrics) Protocol(string)                               {}
func (p peerMetrics) Reconnect()                                  { p.m.Reconnect() }
func (peerMetrics) InFlight(int)                                  {}
func (peerMetrics) QueueDepth(int, int)                           {}
func (p peerMetrics) Batch(messages, bytes, callers int)          { p.m.Batch(messages, bytes, callers) }
func (p peerMetrics) Request(op string, d time.Duration, e error) { p.m.Request(op, d, e) }

// sessionAt is where a logged-in session is: the address it dialed and the
// connection's remote address.
type sessionAt struct{ dial, remote string }
