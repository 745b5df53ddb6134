package iggy

import (
	"bufio"
	"context"
	crand "crypto/rand"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"github.com/valyala/bytebufferpool"

	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
	"github.com/kafka-iggy/kafka-iggy/codec/wire"
)

// transientPause is how long a session waits before resending a request
// answered with 57/58 (§1.6 step 7).
const transientPause = 50 * time.Millisecond

// readBufferSize is the session's buffered reader size.
const readBufferSize = 64 << 10

// session is one persistent Iggy connection and the goroutine that owns it.
// Everything but connMu/curConn is touched by that goroutine only.
type session struct {
	c    *Client
	idx  int
	lane *lane
	log  zerolog.Logger

	connMu  sync.Mutex // guards curConn (Close interrupts through it)
	curConn net.Conn

	at atomic.Pointer[sessionAt] // where the session is while logged in (nil when down); read by routing

	addr     string // the node this session dials: iggy.address, or the leader it followed
	conn     net.Conn
	br       *bufio.Reader
	clientID wire.U128
	epoch    uint64 // the session from the login reply (§1.8.2)
	reqNo    uint64 // request counter (§1.8.3)
	broken   error  // set when the connection must be dropped

	watching  bool       // a goroutine is peeking at the idle connection
	watchDone chan error // its outcome (buffered, reused)

	wb     []byte   // request header (+ send head) scratch
	segs   [][]byte // frame pieces of a send
	wsegs  [][]byte // copy handed to net.Buffers (which consumes it)
	sealer icodec.BatchSealer
	unit   unit
	pbuf   [4]byte // partition id for the partitioning field
}

func newSession(c *Client, idx int, l *lane) *session {
	return &session{
		c:    c,
		idx:  idx,
		lane: l,
		log:  c.log.With().Int("session_index", idx).Logger(),
		wb:   make([]byte, 0, 1024),
	}
}

// run connects, serves until the session breaks, and reconnects with
// backoff, until Close. The outcome of the first attempt goes to first.
func (s *session) run(first chan<- error) {
	defer s.c.wg.Done()
	attempt := 0
	reported := false
	everUp := false
	for !s.c.isClosed() {
		err := s.connect()
		if !reported {
			reported = true
			first <- err
		}
		if err != nil {
			s.teardown()
			if s.c.isClosed() {
				return
			}
			d := backoff(s.c.cfg.BackoffMin, s.c.cfg.BackoffMax, attempt)
			attempt++
			ev := s.log.Debug()
			if attempt <= 3 || attempt%20 == 0 { // a long outage logs a warning now and then
				ev = s.log.Warn()
			}
			ev.Err(err).Int("attempt", attempt).Dur("backoff", d).Str("addr", s.c.cfg.Address).Msg("iggy session: connect failed")
			if !s.c.sleep(d) {
				return
			}
			continue
		}
		if everUp {
			s.c.metrics.Reconnect()
		}
		everUp = true
		attempt = 0
		s.log.Info().Uint64("session_id", s.epoch).Str("addr", s.addr).Str("iggy_protocol", s.c.wireProtocol().Label()).Msg("iggy session up")
		at := &sessionAt{dial: s.addr}
		if s.conn != nil {
			at.remote = s.conn.RemoteAddr().String()
		}
		s.at.Store(at)
		s.c.sessionUp(1)
		err = s.serve()
		s.at.Store(nil)
		s.c.sessionUp(-1)
		s.teardown()
		if s.c.isClosed() {
			return
		}
		d := backoff(s.c.cfg.BackoffMin, s.c.cfg.BackoffMax, 0)
		attempt = 1
		s.log.Warn().Err(err).Uint64("session_id", s.epoch).Dur("backoff", d).Msg("iggy session dropped; registering again")
		if !s.c.sleep(d) {
			return
		}
	}
}

// backoff returns the delay before attempt n (0-based): min·2^n capped at
// max, jittered to a random value in [d/2, d].
func backoff(lo, hi time.Duration, n int) time.Duration {
	d := lo
	for i := 0; i < n && d < hi; i++ {
		d *= 2
	}
	d = min(d, hi)
	half := d / 2
	return half + time.Duration(rand.Int64N(int64(d-half)+1))
}

// connect dials, wraps TLS and logs in within ConnectTimeout, starting
// from the configured address, then follows the cluster's leader
// (iggy.follow_leader).
func (s *session) connect() error {
	deadline := time.Now().Add(s.c.cfg.ConnectTimeout)
	ctx, cancel := context.WithDeadline(s.c.ctx, deadline)
	defer cancel()
	s.addr = s.c.cfg.Address
	if err := s.connectTo(ctx, deadline); err != nil {
		return err
	}
	if s.c.cfg.FollowLeader {
		return s.followLeader(ctx, deadline)
	}
	if s.c.router != nil && s.c.wireProtocol().RoutesPartitions() {
		s.leaderElsewhere(deadline) // only to learn the cluster's nodes
		return s.broken
	}
	return nil
}

// maxLeaderHops bounds the leader redirects of one connect (two nodes that
// both claim leadership cannot bounce a session for ever).
const maxLeaderHops = 3

// followLeader moves the session to the cluster's leader when GET_CLUSTER_METADATA
// names one on another node (the SDKs' leader redirection). Every failure
// on the way is logged and leaves the session logged in where it was; the
// error is the one that left it without a connection.
func (s *session) followLeader(ctx context.Context, deadline time.Time) error {
	for hop := 0; hop < maxLeaderHops; hop++ {
		leader, ok := s.leaderElsewhere(deadline)
		if s.broken != nil {
			return s.broken
		}
		if !ok {
			return nil
		}
		from := s.addr
		s.log.Info().Str("addr", from).Str("leader_addr", leader).Int("hop", hop+1).Msg("iggy: following the cluster leader")
		s.teardown()
		s.addr = leader
		if err := s.connectTo(ctx, deadline); err != nil {
			s.log.Warn().Err(err).Str("leader_addr", leader).Str("addr", from).Msg("iggy: cannot reach the cluster leader; staying on the node the session came from")
			s.teardown()
			s.addr = from
			return s.connectTo(ctx, deadline)
		}
	}
	return nil
}

// leaderElsewhere asks GET_CLUSTER_METADATA for a healthy leader with a TCP
// endpoint other than the session's node; false on a one-node cluster, no
// such leader, or any error. The nodes it lists (replica id → address) go
// to the partition router.
func (s *session) leaderElsewhere(deadline time.Time) (string, bool) {
	s.wb = append(s.wb[:0], zeroHeader[:]...)
	n := s.header(s.wb, icodec.OperationNonReplicated, icodec.CodeGetClusterMetadata, 0, icodec.PartitionContext{})
	rb, rep, _, err := s.exchange(deadline, [][]byte{s.wb}, n, "cluster.metadata")
	if err != nil {
		s.log.Debug().Err(err).Msg("iggy: cluster metadata unavailable; staying on this node")
		return "", false
	}
	defer s.c.replyPool.Put(rb)
	nodes, err := s.c.wireProtocol().DecodeReplicaNodes(rep.Payload)
	if err != nil {
		return "", false
	}
	if s.c.router != nil {
		s.c.router.learn(nodes)
	}
	if len(nodes) < 2 || !s.c.cfg.FollowLeader {
		return "", false
	}
	for _, nd := range nodes {
		if nd.Role != icodec.NodeRoleLeader || nd.Status != icodec.NodeStatusHealthy || nd.TCPPort == 0 || nd.IP == "" {
			continue
		}
		addr := net.JoinHostPort(nd.IP, strconv.Itoa(int(nd.TCPPort)))
		if addr == s.addr || s.conn != nil && addr == s.conn.RemoteAddr().String() {
			return "", false
		}
		return addr, true
	}
	return "", false
}

// connectTo dials s.addr and logs in. With iggy.protocol auto a login
// evicted as IncompatibleProtocol is tried once more, on a new connection,
// with the generation the server's window accepts.
func (s *session) connectTo(ctx context.Context, deadline time.Time) error {
	for attempt := 0; ; attempt++ {
		if err := s.dial(ctx); err != nil {
			return err
		}
		from := s.c.wireProtocol() // what this login announces
		err := s.login(deadline, from)
		if err == nil || attempt > 0 || !s.c.autoProto {
			return err
		}
		var ev *icodec.EvictionError
		if !errors.As(err, &ev) || ev.Header.Reason != icodec.EvictionReasonIncompatibleProtocol {
			return err
		}
		lo, hi := ev.Header.ServerProtocolVersionMin, ev.Header.ServerProtocolVersion
		to, ok := icodec.PickProtocol(lo, hi)
		if !ok || to == from {
			s.log.Warn().Str("iggy_protocol", from.String()).Str("server_protocol_min", lo.String()).
				Str("server_protocol_max", hi.String()).Msg("iggy login: the server accepts no protocol generation this build speaks")
			return err
		}
		if s.c.announce.CompareAndSwap(uint32(from), uint32(to)) { // one log line when sessions race
			s.log.Info().Str("iggy_protocol", to.String()).Str("from_protocol", from.String()).
				Str("server_protocol_min", lo.String()).Str("server_protocol_max", hi.String()).
				Msg("iggy login: server refused the protocol; switching to the generation its window accepts")
		}
		s.teardown()
	}
}

// dial opens the TCP (and TLS) connection.
func (s *session) dial(ctx context.Context) error {
	conn, err := s.c.dialer.DialContext(ctx, "tcp", s.addr)
	if err != nil {
		return fmt.Errorf("iggy: dial %s: %w", s.addr, err)
	}
	if s.c.tls != nil {
		tc := tls.Client(conn, s.c.tls)
		if err := tc.HandshakeContext(ctx); err != nil {
			_ = conn.Close()
			return fmt.Errorf("iggy: TLS handshake with %s: %w", s.addr, err)
		}
		conn = tc
	}
	s.connMu.Lock()
	if s.c.isClosed() {
		s.connMu.Unlock()
		_ = conn.Close()
		return ErrClosed
	}
	s.curConn = conn
	s.connMu.Unlock()
	s.conn = conn
	if s.br == nil {
		s.br = bufio.NewReaderSize(conn, readBufferSize)
	} else {
		s.br.Reset(conn)
	}
	s.broken = nil
	return nil
}

// login registers the session (§1.10): operation 1, request 0, session 0,
// a fresh nonzero client id; the body is the generation's (a fresh bind
// secret at 0.12).
func (s *session) login(deadline time.Time, proto icodec.ProtocolVersion) error {
	s.clientID = wire.U128{Lo: rand.Uint64(), Hi: rand.Uint64() | 1}
	s.epoch, s.reqNo = 0, 0
	vi := icodec.ClientVersionInfo{SdkName: SDKName, SdkVersion: s.c.version}
	var secret [icodec.BindSecretSize]byte
	_, _ = crand.Read(secret[:])
	var body icodec.Request
	if tok := s.c.cfg.PersonalAccessToken; tok != "" {
		body = proto.LoginPATRequest(vi, tok, secret)
	} else {
		body = proto.LoginRequest(vi, s.c.cfg.Username, s.c.cfg.Password, secret)
	}
	h := icodec.RequestHeader{Client: s.clientID, Operation: icodec.OperationRegister}
	s.wb = h.AppendTo(s.wb[:0], body.EncodedSize())
	s.wb = body.AppendTo(s.wb)
	rb, rep, _, err := s.exchange(deadline, [][]byte{s.wb}, 0, "user.login_register")
	if err != nil {
		return err
	}
	defer s.c.replyPool.Put(rb)
	var ls icodec.LoginSession
	if _, err := ls.DecodeFrom(rep.Payload); err != nil {
		return s.fail(errors.Join(ErrProtocol, err))
	}
	if ls.Session == 0 {
		return s.fail(fmt.Errorf("%w: login reply with session 0", ErrProtocol))
	}
	s.epoch, s.reqNo = ls.Session, 1
	s.c.noteLogin(proto, icodec.ProtocolVersion(ls.ServerProtocolVersion))
	s.c.metrics.Protocol(proto.Label())
	s.log.Debug().Uint32("user_id", ls.UserID).Str("server_version", ls.ServerVersion).Str("iggy_protocol", proto.String()).
		Str("server_protocol", icodec.ProtocolVersion(ls.ServerProtocolVersion).String()).Msg("iggy login")
	return nil
}

// teardown closes the connection.
func (s *session) teardown() {
	s.connMu.Lock()
	s.curConn = nil
	s.connMu.Unlock()
	if s.conn != nil {
		_ = s.conn.Close()
		s.conn = nil
	}
}

// interrupt closes the connection from another goroutine (Close).
func (s *session) interrupt() {
	s.connMu.Lock()
	defer s.connMu.Unlock()
	if s.curConn != nil {
		_ = s.curConn.Close()
	}
}

// idleWatchAfter is how long a session waits idle before it watches its
// connection for the server closing it (see watch).
const idleWatchAfter = 100 * time.Millisecond

// serve takes work until the session breaks or the client closes.
//
// Liveness: a session reads only its own replies, so an idle one would
// notice a closed connection only at its next request. After
// idleWatchAfter without work it therefore watches the connection (a
// goroutine blocked in a one-byte Peek): EOF or a reset breaks the session
// at once, which turns Ready false when it was the last one up; bytes the
// server sends unasked (an eviction) are read and break it too. The watch
// is stopped (a read deadline in the past) before the next request, so
// under load, with the session never idle that long, it costs nothing. A
// server that goes silent is noticed by the keep-alive: after half the
// keep-alive interval idle the session sends PING and waits at most the
// other half for the answer.
func (s *session) serve() error {
	var ka <-chan time.Time
	var timer *time.Timer
	iv := s.c.cfg.KeepaliveInterval
	if iv > 0 {
		timer = time.NewTimer(iv / 2)
		defer timer.Stop()
		ka = timer.C
	}
	idle := time.NewTimer(idleWatchAfter)
	defer idle.Stop()
	defer s.stopWatch()
	for {
		var watchEnd <-chan error
		if s.watching {
			watchEnd = s.watchDone
		}
		select {
		case <-s.c.ctx.Done():
			return ErrClosed
		case <-s.lane.kick:
			if s.stopWatch() != nil {
				s.lane.signal() // the lane's work waits for the next session
				break
			}
			s.runLane()
		case cl := <-s.c.reads:
			_ = s.stopWatch() // a broken session fails the call unsent
			s.runCall(cl)
		case <-ka:
			if s.stopWatch() == nil {
				s.ping(iv / 2)
			}
		case <-idle.C:
			if s.watch(); s.broken == nil {
				continue // the timers keep running
			}
		case err := <-watchEnd:
			s.watching = false
			s.watchEnded(err, false)
		}
		if s.broken != nil {
			return s.broken
		}
		idle.Reset(idleWatchAfter)
		if timer != nil {
			timer.Reset(iv / 2)
		}
	}
}

// watch starts watching the idle connection (see serve).
func (s *session) watch() {
	if s.watching || s.conn == nil {
		return
	}
	if err := s.conn.SetReadDeadline(time.Time{}); err != nil {
		s.fail(s.ioError(err))
		return
	}
	if s.watchDone == nil {
		s.watchDone = make(chan error, 1)
	}
	s.watching = true
	go func(br *bufio.Reader, done chan<- error) {
		_, err := br.Peek(1)
		done <- err
	}(s.br, s.watchDone)
}

// stopWatch ends the watch before the session uses its connection again;
// it returns the session's failure when the connection ended meanwhile.
func (s *session) stopWatch() error {
	if !s.watching {
		return s.broken
	}
	s.watching = false
	_ = s.conn.SetReadDeadline(time.Unix(1, 0))
	return s.watchEnded(<-s.watchDone, true)
}

// watchEnded handles the end of a watch: a timeout it caused itself
// (stopped) is no failure; EOF, a reset or any other read error breaks the
// session, and so do bytes sent unasked (read and logged: an eviction).
func (s *session) watchEnded(err error, stopped bool) error {
	var ne net.Error
	switch {
	case err == nil:
		return s.fail(s.unsolicited())
	case stopped && errors.As(err, &ne) && ne.Timeout():
		return nil
	case s.c.isClosed():
		return s.fail(ErrClosed)
	}
	return s.fail(fmt.Errorf("%w: the connection ended while idle: %w", ErrSessionLost, err))
}

// unsolicited reads the frame the server sent while no request was in
// flight and returns why the session must end.
func (s *session) unsolicited() error {
	if err := s.conn.SetReadDeadline(time.Now().Add(s.c.cfg.RequestTimeout)); err != nil {
		return s.ioError(err)
	}
	rb := s.c.replyPool.Get()
	defer s.c.replyPool.Put(rb)
	frame, err := icodec.ReadFrame(s.br, rb.B, icodec.MaxFrameSize)
	if err != nil {
		return fmt.Errorf("%w: bytes from the server while idle: %w", ErrProtocol, err)
	}
	rb.B = frame
	_, err = icodec.DecodeReply(frame)
	var ev *icodec.EvictionError
	if errors.As(err, &ev) {
		s.log.Warn().Uint8("reason", uint8(ev.Header.Reason)).Uint32("iggy_code", uint32(ev.Status())).Msg("iggy session evicted")
		return errors.Join(ErrSessionLost, err)
	}
	return fmt.Errorf("%w: a frame from the server while no request was in flight", ErrProtocol)
}

// advances reports whether a request with operation op consumes a request
// number (§1.8.3): metadata operations, DeleteSegments and Logout.
func advances(op icodec.Operation) bool {
	switch op.Plane() {
	case icodec.PlaneMetadata, icodec.PlaneSpecial:
		return true
	}
	return op == icodec.OperationLogout
}

// header writes the request header for the next request into the first
// 256 bytes of dst (whose body follows, bodyLen bytes) and returns the
// request number used, advancing the counter when the operation does.
// fence is the partition route's context (0.12; zero: none).
func (s *session) header(dst []byte, op icodec.Operation, code uint32, bodyLen int, fence icodec.PartitionContext) uint64 {
	h := icodec.RequestHeader{Client: s.clientID, Request: s.reqNo, Operation: op, Session: s.epoch,
		PartitionIncarnation: fence.Incarnation, OwnerGeneration: fence.OwnerGeneration, MinimumMetadataOp: fence.MetadataOp}
	if op == icodec.OperationNonReplicated {
		h.Code = code
	}
	h.AppendTo(dst[:0], bodyLen)
	n := s.reqNo
	if advances(op) {
		s.reqNo++
	}
	return n
}

// ping sends the keep-alive PING and waits at most wait (and the request
// timeout) for its answer.
func (s *session) ping(wait time.Duration) {
	s.wb = append(s.wb[:0], zeroHeader[:]...)
	n := s.header(s.wb, icodec.OperationNonReplicated, icodec.CodePing, 0, icodec.PartitionContext{})
	rb, _, _, err := s.exchange(time.Now().Add(min(wait, s.c.cfg.RequestTimeout)), [][]byte{s.wb}, n, "system.ping")
	if rb != nil {
		s.c.replyPool.Put(rb)
	}
	if err != nil && s.broken == nil {
		s.log.Debug().Err(err).Msg("iggy keep-alive ping failed")
	}
}

// runCall executes one encoded request and answers its caller.
func (s *session) runCall(cl *call) {
	b := cl.frame.B
	n := s.header(b, cl.operation, cl.code, len(b)-icodec.HeaderSize, cl.fence)
	rb, rep, sent, err := s.exchange(time.Now().Add(s.c.cfg.RequestTimeout), [][]byte{b}, n, cl.op)
	cl.releaseRequest(s.c)
	cl.complete(s.c, rb, rep.Payload, -1, sent, err)
}

// runLane executes the next unit of the lane.
func (s *session) runLane() {
	lim := takeLimits{coalesce: s.c.cfg.Coalesce, bytes: s.c.cfg.MaxBatchBytes, messages: s.c.cfg.MaxBatchMessages}
	ok, depth := s.lane.take(&s.unit, lim)
	s.c.metrics.QueueDepth(s.lane.idx, depth)
	if !ok {
		return
	}
	if s.unit.op != nil {
		s.runCall(s.unit.op)
		s.unit.op = nil
	} else if len(s.unit.sends) == 1 && lim.oversized(s.unit.sends[0].msgs) {
		s.sendSplit(s.unit.sends[0], lim)
	} else {
		s.sendCoalesced()
	}
	clear(s.unit.sends)
	s.unit.sends = s.unit.sends[:0]
	if s.lane.hasWork() {
		s.lane.signal()
	}
}

// sendCoalesced sends the unit's calls as one batch and gives each caller
// its own base offset: the batch's base plus the messages before its own.
func (s *session) sendCoalesced() {
	u := &s.unit
	s.segs = append(s.segs[:0], nil)
	count, size := 0, 0
	var lo, hi uint64
	for i, cl := range u.sends {
		m := cl.msgs
		s.segs = append(s.segs, m.frames())
		if i == 0 {
			lo, hi = m.minTS, m.maxTS
		} else {
			lo, hi = min(lo, m.minTS), max(hi, m.maxTS)
		}
		count += m.Len()
		size += m.Size()
	}
	base, sent, err := s.sendBatch(s.segs, uint32(count), lo, size)
	clear(s.segs)
	s.c.metrics.Batch(count, size, len(u.sends))
	if err != nil {
		s.log.Debug().Err(err).Int("callers", len(u.sends)).Int("messages", count).Msg("iggy send failed")
	}
	for _, cl := range u.sends {
		n := cl.msgs.Len()
		if handBack(err, cl) {
			icodec.ReopenFrames(cl.msgs.frames(), lo)
		} else {
			cl.releaseRequest(s.c)
		}
		cl.complete(s.c, nil, nil, base, sent, err)
		if base >= 0 {
			base += int64(n)
		}
	}
}

// sendSplit sends one call's messages as several consecutive batches, each
// within the limits; the caller gets the first batch's base offset. A
// failure after the first batch leaves the earlier batches stored (the
// caller gets the error: at-least-once).
func (s *session) sendSplit(cl *call, lim takeLimits) {
	frames := cl.msgs.frames()
	first := int64(-1)
	expect := int64(-1)
	anySent := false
	kept := false
	var err error
	for off, chunk := 0, 0; off < len(frames); chunk++ {
		end, count := off, 0
		var lo, hi uint64
		for end < len(frames) {
			n := icodec.FrameLen(frames[end:])
			ts := icodec.OpenFrameOrigin(frames[end:])
			nlo, nhi := ts, ts
			if count > 0 {
				nlo, nhi = min(lo, ts), max(hi, ts)
				if end-off+n > lim.bytes || count+1 > lim.messages || nhi-nlo > icodec.MaxTimestampSpan {
					break
				}
			}
			lo, hi = nlo, nhi
			end += n
			count++
		}
		s.segs = append(s.segs[:0], nil, frames[off:end])
		var base int64
		var sent bool
		base, sent, err = s.sendBatch(s.segs, uint32(count), lo, end-off)
		clear(s.segs)
		anySent = anySent || sent
		s.c.metrics.Batch(count, end-off, 1)
		if err != nil {
			if chunk > 0 {
				s.log.Warn().Err(err).Int("chunk", chunk).Msg("iggy split send failed after earlier batches were stored")
			} else if kept = handBack(err, cl); kept {
				icodec.ReopenFrames(frames[off:end], lo)
			}
			break
		}
		if chunk == 0 {
			first = base
		} else if expect >= 0 && base != expect {
			s.log.Warn().Int64("expected_offset", expect).Int64("base_offset", base).Msg("iggy split send: batches not contiguous (another writer?)")
		}
		if base >= 0 {
			expect = base + int64(count)
		} else {
			expect = -1
		}
		off = end
	}
	if !kept {
		cl.releaseRequest(s.c)
	}
	if err != nil {
		cl.complete(s.c, nil, nil, -1, anySent, err)
		return
	}
	cl.complete(s.c, nil, nil, first, true, nil)
}

// handBack reports whether a send call's messages go back to its caller
// instead of the pool: a node refused them unadmitted (89 NotPrimary) and
// the caller still waits, so Send can resend them along a fresh partition
// route. Their frames are reopened first (icodec.ReopenFrames).
func handBack(err error, cl *call) bool {
	return err != nil && errors.Is(err, icodec.StatusNotPrimary) && cl.state.Load() == csPending
}

// sendBatch writes one SEND_MESSAGES whose frames are segs[1:] (count
// frames, blobLen bytes, smallest origin timestamp minTS): segs[0] becomes
// the request header, the metadata and the batch header, built in the
// session's scratch buffer; the frames go to the socket from the callers'
// buffers in the same writev. It returns the confirmed base offset (-1 when
// the server confirmed without one).
func (s *session) sendBatch(segs [][]byte, count uint32, minTS uint64, blobLen int) (int64, bool, error) {
	u := &s.unit
	binary.LittleEndian.PutUint32(s.pbuf[:], u.partition)
	req := icodec.SendMessagesRequest{
		StreamID:      u.stream,
		TopicID:       u.topic,
		Partitioning:  icodec.Partitioning{Kind: icodec.PartitioningKindPartitionID, Value: s.pbuf[:]},
		MessagesCount: count,
	}
	headLen := 4 + u.stream.EncodedSize() + u.topic.EncodedSize() + req.Partitioning.EncodedSize() + 4
	bodyLen := headLen + icodec.BatchHeaderSize + blobLen
	s.wb = append(s.wb[:0], zeroHeader[:]...)
	n := s.header(s.wb, icodec.OperationSendMessages, icodec.CodeSendMessages, bodyLen, u.fence)
	s.wb = req.AppendHeadTo(s.wb)
	at := len(s.wb)
	s.wb = append(s.wb, zeroHeader[:icodec.BatchHeaderSize]...)
	s.sealer.Seal(s.wb[at:], segs[1:], count, minTS)
	segs[0] = s.wb

	rb, rep, sent, err := s.exchange(time.Now().Add(s.c.cfg.RequestTimeout), segs, n, "message.send")
	if err != nil {
		return -1, sent, err
	}
	defer s.c.replyPool.Put(rb)
	var resp icodec.SendMessagesResponse
	used, err := resp.DecodeFrom(rep.Payload)
	if err == nil && used != len(rep.Payload) {
		err = errors.New("iggy: send confirmation has trailing bytes")
	}
	if err != nil {
		return -1, true, errors.Join(ErrProtocol, err)
	}
	if len(resp.Confirmations) == 0 {
		return -1, true, nil
	}
	conf := resp.Confirmations[0]
	if conf.PartitionID != u.partition {
		s.log.Warn().Uint32("partition_id", u.partition).Uint32("confirmed_partition_id", conf.PartitionID).Msg("iggy send confirmed for another partition")
	}
	return int64(conf.BaseOffset), true, nil
}

// exchange writes one request (segs, written with one writev) and reads
// its reply within deadline, resending the identical frame on the
// transient codes 57/58 while time remains. It returns the reply buffer
// (which the caller puts back) and the decoded reply; sent reports whether
// any byte was written. Errors that leave the connection unusable or out of
// step (I/O errors, timeouts, evictions, a wrong request echo, a malformed
// frame, 40 Unauthenticated, an empty send reply) break the session.
func (s *session) exchange(deadline time.Time, segs [][]byte, reqNo uint64, op string) (*bytebufferpool.ByteBuffer, icodec.Reply, bool, error) {
	if s.broken != nil {
		return nil, icodec.Reply{}, false, s.broken
	}
	if err := s.conn.SetDeadline(deadline); err != nil {
		return nil, icodec.Reply{}, false, s.fail(s.ioError(err))
	}
	s.c.metrics.InFlight(int(s.c.inFlight.Add(1)))
	start := time.Now()
	rb, rep, sent, err := s.exchangeLoop(deadline, segs, reqNo)
	s.c.metrics.Request(op, time.Since(start), err)
	s.c.metrics.InFlight(int(s.c.inFlight.Add(-1)))
	if err != nil && s.broken == nil && (IsNotFound(err) || IsUnauthorized(err)) {
		s.log.Debug().Str("op", op).Uint32("iggy_code", statusCode(err)).Msg("iggy request refused")
	}
	return rb, rep, sent, err
}

func (s *session) exchangeLoop(deadline time.Time, segs [][]byte, reqNo uint64) (*bytebufferpool.ByteBuffer, icodec.Reply, bool, error) {
	var rep icodec.Reply
	sent := false
	for {
		n, err := s.write(segs)
		sent = sent || n > 0
		if err != nil {
			return nil, rep, sent, s.fail(s.ioError(err))
		}
		rb := s.c.replyPool.Get()
		frame, err := icodec.ReadFrame(s.br, rb.B, icodec.MaxFrameSize)
		if err != nil {
			s.c.replyPool.Put(rb)
			var de *wire.DecodeError
			if errors.As(err, &de) {
				return nil, rep, sent, s.fail(errors.Join(ErrProtocol, err))
			}
			return nil, rep, sent, s.fail(s.ioError(err))
		}
		rb.B = frame
		rep, err = icodec.DecodeReply(frame)
		var ev *icodec.EvictionError
		var de *wire.DecodeError
		switch {
		case errors.As(err, &ev):
			s.c.replyPool.Put(rb)
			lv := s.log.Warn()
			if s.negotiating(ev) {
				lv = s.log.Debug() // connect picks the generation and says so at info
			}
			lv.Uint8("reason", uint8(ev.Header.Reason)).Uint32("iggy_code", uint32(ev.Status())).Msg("iggy session evicted")
			return nil, rep, sent, s.fail(errors.Join(ErrSessionLost, err))
		case errors.As(err, &de):
			s.c.replyPool.Put(rb)
			return nil, rep, sent, s.fail(errors.Join(ErrProtocol, err))
		case rep.Header.Request != reqNo:
			s.c.replyPool.Put(rb)
			return nil, rep, sent, s.fail(fmt.Errorf("%w: reply to request %d while %d is in flight", ErrProtocol, rep.Header.Request, reqNo))
		case errors.Is(err, icodec.StatusTransientNotCommitted) || errors.Is(err, icodec.StatusTransientNotAccepted):
			s.c.replyPool.Put(rb)
			if time.Until(deadline) > 2*transientPause && s.c.sleep(transientPause) {
				continue
			}
			return nil, rep, sent, err
		case errors.Is(err, icodec.ErrEmptySendReply) || errors.Is(err, icodec.StatusUnauthenticated):
			s.c.replyPool.Put(rb)
			return nil, rep, sent, s.fail(errors.Join(ErrSessionLost, err))
		}
		if err != nil {
			s.c.replyPool.Put(rb)
			return nil, rep, sent, err
		}
		return rb, rep, sent, nil
	}
}

// statusCode extracts the Iggy code of err, or 0.
func statusCode(err error) uint32 {
	var st icodec.Status
	if errors.As(err, &st) {
		return uint32(st)
	}
	return 0
}

// write sends segs with one writev (one Write for a single piece).
func (s *session) write(segs [][]byte) (int64, error) {
	if len(segs) == 1 {
		n, err := s.conn.Write(segs[0])
		return int64(n), err
	}
	s.wsegs = append(s.wsegs[:0], segs...)
	bufs := net.Buffers(s.wsegs)
	n, err := bufs.WriteTo(s.conn)
	clear(s.wsegs)
	return n, err
}

// ioError classifies a connection error.
func (s *session) ioError(err error) error {
	if s.c.isClosed() {
		return ErrClosed
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return errors.Join(ErrTimeout, ErrSessionLost, err)
	}
	return errors.Join(ErrSessionLost, err)
}

// fail marks the session broken (the connection is closed at once, so no
// later reply can be mistaken for another request's) and returns err.
// negotiating reports whether ev is the expected answer to a login of
// iggy.protocol auto in a generation the server does not speak (connect
// then logs in with the one it does).
func (s *session) negotiating(ev *icodec.EvictionError) bool {
	return s.c.autoProto && s.epoch == 0 && ev.Header.Reason == icodec.EvictionReasonIncompatibleProtocol
}

func (s *session) fail(err error) error {
	if s.broken == nil {
		s.broken = err
		var ev *icodec.EvictionError
		if !errors.Is(err, ErrClosed) && !(errors.As(err, &ev) && s.negotiating(ev)) {
			s.log.Warn().Err(err).Uint64("session_id", s.epoch).Msg("iggy session broken")
		}
		if s.conn != nil {
			_ = s.conn.Close()
		}
	}
	return err
}
