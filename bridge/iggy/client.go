package iggy

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"github.com/valyala/bytebufferpool"

	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

// SDKName is the client name announced at login (ClientVersionInfo).
const SDKName = "kafka-iggy"

// Client is a pool of persistent Iggy sessions shared by every caller. See
// the package documentation for how work is spread over the sessions. All
// methods are safe for concurrent use.
type Client struct {
	cfg     Config
	log     zerolog.Logger
	metrics Metrics
	version string
	tls     *tls.Config
	dialer  net.Dialer

	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc

	reads    chan *call // handed to any idle session
	lanes    []*lane
	sessions []*session

	msgPool   bytebufferpool.Pool // Messages frames
	framePool bytebufferpool.Pool // encoded requests
	replyPool replyBufs           // replies (large ones kept across collections)
	timers    sync.Pool           // stopped *time.Timer for calls without a deadline

	mu      sync.Mutex // guards started, closed and wg.Add
	started bool
	closed  bool
	wg      sync.WaitGroup

	up       atomic.Int32
	inFlight atomic.Int32
	upOnce   sync.Once
	upCh     chan struct{} // closed when a session first logs in
	proto    atomic.Uint32 // protocol generation of the latest login (0 before)

	meta metaCache

	// users, on the home client of a sidecar that authorizes per
	// principal, makes calls follow the pool their context is bound to
	// (users.go); nil otherwise (principal pools, peer pools).
	users *Users
	// parent is the home client of a principal pool (stream ids the
	// principal may not read are looked up there); nil otherwise.
	parent *Client

	// router sends partition requests to their primaries' nodes on a
	// multi-node 0.12 cluster (nil: iggy.route_partitions off, or a peer
	// pool, which never routes).
	router *router

	// announce is the icodec.ProtocolVersion the sessions log in with and
	// whose shapes requests and replies take; autoProto lets a session
	// replace it from an IncompatibleProtocol eviction's window
	// (iggy.protocol auto).
	announce  atomic.Uint32
	autoProto bool
	// nego is the turn of the one session logging in until a login
	// settled the generation (negotiated); nil without auto (negotiate.go).
	nego       chan struct{}
	negotiated atomic.Bool
}

// wireProtocol returns the version the sessions announce and speak.
func (c *Client) wireProtocol() icodec.ProtocolVersion {
	return icodec.ProtocolVersion(c.announce.Load())
}

// Option customises a Client beyond Config.
type Option func(*Client)

// WithMetrics sends the client's measurements to m (default NopMetrics).
func WithMetrics(m Metrics) Option {
	return func(c *Client) {
		if m != nil {
			c.metrics = m
		}
	}
}

// WithClientVersion sets the sdk_version announced at login (default: the
// main module's version from the build info, or "dev").
func WithClientVersion(v string) Option {
	return func(c *Client) {
		if v != "" {
			c.version = v
		}
	}
}

// New validates cfg and returns a client that is not connected yet (Start
// connects). Address must be set.
func New(cfg Config, log zerolog.Logger, opts ...Option) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Address == "" {
		return nil, errors.New("iggy.address: required")
	}
	tc, err := cfg.tlsConfig(log)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &Client{
		cfg:     cfg,
		log:     log,
		metrics: NopMetrics{},
		version: buildVersion(),
		tls:     tc,
		dialer:  net.Dialer{KeepAlive: 30 * time.Second},
		ctx:     ctx,
		cancel:  cancel,
		reads:   make(chan *call),
		upCh:    make(chan struct{}),
	}
	for _, o := range opts {
		o(c)
	}
	p, auto, _ := cfg.protocol()
	c.announce.Store(uint32(p))
	c.autoProto = auto
	c.initNegotiation()
	c.meta.init()
	if cfg.RoutePartitions {
		c.router = &router{}
	}
	c.lanes = make([]*lane, cfg.PoolSize)
	c.sessions = make([]*session, cfg.PoolSize)
	for i := range c.sessions {
		c.lanes[i] = newLane(i)
		c.sessions[i] = newSession(c, i, c.lanes[i])
	}
	return c, nil
}

func buildVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// Start connects the sessions. It returns nil as soon as one session is
// logged in; the others keep connecting in the background (and every
// session reconnects by itself after a failure until Close). It returns an
// error when ctx ends first, or at once when a login is refused for good
// (bad credentials or token, incompatible protocol). Start may be called
// once.
func (c *Client) Start(ctx context.Context) error {
	c.mu.Lock()
	switch {
	case c.closed:
		c.mu.Unlock()
		return ErrClosed
	case c.started:
		c.mu.Unlock()
		return errors.New("iggy: Start called twice")
	}
	c.started = true
	first := make(chan error, len(c.sessions))
	for _, s := range c.sessions {
		c.wg.Add(1)
		go s.run(first)
	}
	c.mu.Unlock()

	var last error
	for {
		select {
		case <-c.upCh:
			return nil
		case err := <-first:
			if err == nil {
				return nil
			}
			last = err
			if permanentLoginError(err) {
				return err
			}
		case <-ctx.Done():
			return errors.Join(ctx.Err(), last)
		case <-c.ctx.Done():
			return ErrClosed
		}
	}
}

// permanentLoginError reports a login refusal that reconnecting does not
// cure by itself.
func permanentLoginError(err error) bool {
	return IsUnauthorized(err) || errors.Is(err, icodec.StatusIncompatibleProtocolVersion)
}

// Close stops every session, fails the calls still waiting with ErrClosed
// (requests on the wire fail with their outcome unknown) and returns once
// every goroutine of the client has exited. It is idempotent.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	c.cancel()
	for _, s := range c.sessions {
		s.interrupt()
	}
	c.wg.Wait()
	c.closePeers()
	for _, l := range c.lanes {
		for _, cl := range l.drain() {
			cl.releaseRequest(c)
			cl.complete(c, nil, nil, -1, false, ErrClosed)
		}
	}
	return nil
}

// Ready reports whether at least one session is logged in.
func (c *Client) Ready() bool { return c.up.Load() > 0 }

// SessionsUp returns the number of logged-in sessions.
func (c *Client) SessionsUp() int { return int(c.up.Load()) }

// Protocol returns the protocol generation the latest login settled on:
// the older of the version this client announced and the one the server
// answered with (0 before the first login). What a generation supports
// (consumer kinds, commands) is asked of the codec's version types, e.g.
// c.Protocol().ExternalGroupOffsets().
func (c *Client) Protocol() icodec.ProtocolVersion {
	return icodec.ProtocolVersion(c.proto.Load())
}

// noteLogin records the generation of a successful login.
func (c *Client) noteLogin(client, server icodec.ProtocolVersion) {
	c.proto.Store(uint32(min(client, server)))
}

func (c *Client) sessionUp(delta int32) {
	n := c.up.Add(delta)
	if n > 0 {
		c.upOnce.Do(func() { close(c.upCh) })
	}
	c.metrics.SessionsUp(int(n))
}

func (c *Client) isClosed() bool { return c.ctx.Err() != nil }

// sleep waits d or until Close; false means closed.
func (c *Client) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-c.ctx.Done():
		return false
	}
}

// expiry is the deadline of one call: the caller's context, plus the
// request timeout when that context has none (a pooled timer, cheaper than
// deriving a context per call).
type expiry struct {
	ctx   context.Context
	timer *time.Timer
	pool  *sync.Pool
}

func (c *Client) expiry(ctx context.Context) expiry {
	if _, ok := ctx.Deadline(); ok {
		return expiry{ctx: ctx}
	}
	t, _ := c.timers.Get().(*time.Timer)
	if t == nil {
		t = time.NewTimer(c.cfg.RequestTimeout)
	} else {
		t.Reset(c.cfg.RequestTimeout)
	}
	return expiry{ctx: ctx, timer: t, pool: &c.timers}
}

// timeout is the timer channel (nil when the context carries the deadline).
func (e expiry) timeout() <-chan time.Time {
	if e.timer == nil {
		return nil
	}
	return e.timer.C
}

// cause is the error recorded when the call expired: ErrTimeout joined with
// context.DeadlineExceeded, or the context's own error.
func (e expiry) cause() error {
	if e.ctx.Err() == nil {
		return errors.Join(ErrTimeout, context.DeadlineExceeded)
	}
	return ctxCause(e.ctx)
}

func (e expiry) release() {
	if e.timer != nil {
		e.timer.Stop() // since Go 1.23 a stopped timer's channel is drained
		e.pool.Put(e.timer)
	}
}

// Request is what Do sends: any generated request body of codec/iggy.
type Request interface {
	Code() uint32
	Operation() icodec.Operation
	EncodedSize() int
	AppendTo(dst []byte) []byte
}

// Response is what Do decodes the reply payload into: any generated
// response body of codec/iggy.
type Response interface {
	DecodeFrom(src []byte) (int, error)
}

var zeroHeader [icodec.HeaderSize]byte

// encode builds the call for req: a header slot and the encoded body.
func (c *Client) encode(req Request) (*call, error) {
	code := req.Code()
	name := "command"
	if meta, ok := icodec.LookupCommand(code); ok {
		name = meta.WireName
	}
	op := req.Operation()
	switch op.Plane() {
	case icodec.PlaneSession, icodec.PlaneInternal, icodec.PlaneUnknown:
		return nil, &Error{Op: name, Err: ErrUnsupported}
	}
	if size := req.EncodedSize(); size > icodec.MaxFrameSize-icodec.HeaderSize {
		return nil, &Error{Op: name, Err: ErrMessageTooLarge}
	}
	req, err := c.wireProtocol().Request(req)
	if err != nil {
		return nil, &Error{Op: name, Err: errors.Join(ErrUnsupported, err)}
	}
	code, op = req.Code(), req.Operation()
	cl := newCall(name, op, code)
	fb := c.framePool.Get()
	fb.B = append(fb.B[:0], zeroHeader[:]...)
	fb.B = req.AppendTo(fb.B)
	cl.frame = fb
	return cl, nil
}

// roundTrip executes cl on any idle session (key nil) or on the lane of
// key, and waits for its answer within ctx. On success the caller owns the
// returned reply buffer (nil when the reply had no body to keep) and must
// put it back into replyPool.
func (c *Client) roundTrip(ctx context.Context, cl *call, key *partKey) (*bytebufferpool.ByteBuffer, []byte, error) {
	exp := c.expiry(ctx)
	defer exp.release()
	var l *lane
	if key != nil {
		cl.key = *key
		l = c.laneFor(key)
		if err := l.enqueue(cl); err != nil {
			cl.releaseRequest(c)
			return nil, nil, &Error{Op: cl.op, Err: err}
		}
	} else {
		select {
		case c.reads <- cl:
		case <-ctx.Done():
			cl.releaseRequest(c)
			return nil, nil, &Error{Op: cl.op, Err: exp.cause()}
		case <-exp.timeout():
			cl.releaseRequest(c)
			return nil, nil, &Error{Op: cl.op, Err: exp.cause()}
		case <-c.ctx.Done():
			cl.releaseRequest(c)
			return nil, nil, &Error{Op: cl.op, Err: ErrClosed}
		}
	}
	expired := false
	select {
	case <-cl.done:
	case <-ctx.Done():
		expired = true
	case <-exp.timeout():
		expired = true
	}
	if expired {
		if l != nil && l.cancel(cl) {
			cl.releaseRequest(c)
			return nil, nil, &Error{Op: cl.op, Err: exp.cause()}
		}
		if cl.abandon() {
			return nil, nil, &Error{Op: cl.op, Sent: true, Err: exp.cause()}
		}
		<-cl.done
	}
	if cl.err != nil {
		return nil, nil, cl.err
	}
	rb, payload := cl.takeReply()
	return rb, payload, nil
}

func (c *Client) laneFor(k *partKey) *lane {
	return c.lanes[k.hash()%uint64(len(c.lanes))]
}

// Do sends any command of codec/iggy and decodes the reply payload into
// resp (nil to ignore it). Partition writes (StoreConsumerOffset,
// DeleteConsumerOffset, SendMessages) go through the lane of their
// partition, keeping their order with Send; everything else goes to any
// idle session. A read that answers "unknown" with an empty body
// (GET_STREAM, GET_TOPIC, GET_CONSUMER_OFFSET, ...) fails with ErrNotFound.
// resp is decoded from a private copy of the payload, so its byte slices
// stay valid. Login and logout are refused with ErrUnsupported.
func (c *Client) Do(ctx context.Context, req Request, resp Response) error {
	if u, err := c.delegate(ctx); u != nil || err != nil {
		if err != nil {
			return err
		}
		return u.Do(ctx, req, resp)
	}
	return c.routed(ctx, req, func(tc *Client, fence icodec.PartitionContext) error {
		return tc.do(ctx, req, resp, fence)
	})
}

// do is Do on this client's own sessions, with fence stamped in the request
// header (zero: none).
func (c *Client) do(ctx context.Context, req Request, resp Response, fence icodec.PartitionContext) error {
	cl, err := c.encode(req)
	if err != nil {
		return err
	}
	cl.fence = fence
	key := partitionKeyOf(req)
	rb, payload, err := c.roundTrip(ctx, cl, key)
	if err != nil {
		return err
	}
	defer c.putReply(rb)
	if resp != nil {
		resp = c.wireProtocol().Reply(resp)
	}
	return decodePayload(cl, payload, resp, true)
}

func (c *Client) putReply(rb *bytebufferpool.ByteBuffer) {
	if rb != nil {
		c.replyPool.Put(rb)
	}
}

// decodePayload applies the empty-means-none rule and decodes payload into
// resp (from a copy when clone is set), requiring it to be consumed whole.
func decodePayload(cl *call, payload []byte, resp Response, clone bool) error {
	if len(payload) == 0 {
		if meta, ok := icodec.LookupCommand(cl.code); ok && meta.EmptyMeansNone {
			return &Error{Op: cl.op, Sent: true, Err: ErrNotFound}
		}
	}
	if resp == nil {
		return nil
	}
	if clone {
		payload = append([]byte(nil), payload...)
	}
	n, err := resp.DecodeFrom(payload)
	if err == nil && n != len(payload) {
		err = errors.New("iggy: reply has trailing bytes")
	}
	if err != nil {
		return &Error{Op: cl.op, Sent: true, Err: errors.Join(ErrProtocol, err)}
	}
	return nil
}

// partitionOf returns the stream, topic and partition a request names: the
// consumer-offset commands and polls, and sends (whose partition is present
// only when they name an explicit partition id); zero values for every
// other request.
func partitionOf(req Request) (s, t icodec.Identifier, p icodec.OptionalPartition) {
	switch r := req.(type) {
	case *icodec.StoreConsumerOffsetRequest:
		return r.StreamID, r.TopicID, r.PartitionID
	case *icodec.DeleteConsumerOffsetRequest:
		return r.StreamID, r.TopicID, r.PartitionID
	case *icodec.GetConsumerOffsetRequest:
		return r.StreamID, r.TopicID, r.PartitionID
	case *icodec.PollMessagesRequest:
		return r.StreamID, r.TopicID, r.PartitionID
	case *icodec.SendMessagesRequest:
		if r.Partitioning.Kind == icodec.PartitioningKindPartitionID && len(r.Partitioning.Value) == 4 {
			v := r.Partitioning.Value
			p = icodec.OptionalPartition{Present: true, PartitionID: uint32(v[0]) | uint32(v[1])<<8 | uint32(v[2])<<16 | uint32(v[3])<<24}
		}
		return r.StreamID, r.TopicID, p
	}
	return s, t, p
}

func keyOf(s, t icodec.Identifier, p icodec.OptionalPartition) partKey {
	return partKey{stream: string(s.Value), topic: string(t.Value), skind: s.Kind, tkind: t.Kind, partition: p.PartitionID}
}

// partitionKeyOf returns the lane key of a partition-plane request, nil for
// other requests.
func partitionKeyOf(req Request) *partKey {
	if req.Operation().Plane() != icodec.PlanePartition {
		return nil
	}
	k := keyOf(partitionOf(req))
	return &k
}
