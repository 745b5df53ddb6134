package iggy

import (
	"bufio"
	"context"
	crand "crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"time"

	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
	"github.com/kafka-iggy/kafka-iggy/codec/wire"
)

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
// with the generation the server's window accepts; until a login of the
// pool succeeded, sessions take turns (negotiate.go), so the server sees
// one refused login, not one per session.
func (s *session) connectTo(ctx context.Context, deadline time.Time) error {
	release, err := s.c.awaitNegotiation(ctx) // negotiate.go
	if err != nil {
		return err
	}
	defer release()
	for attempt := 0; ; attempt++ {
		if err := s.dial(ctx); err != nil {
			return err
		}
		from := s.c.wireProtocol() // what this login announces
		err := s.login(deadline, from)
		if err == nil {
			s.c.settle(s.addr, from)
		}
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

// negotiating reports whether ev is the expected answer to a login of
// iggy.protocol auto in a generation the server does not speak (connect
// then logs in with the one it does).
func (s *session) negotiating(ev *icodec.EvictionError) bool {
	return s.c.autoProto && s.epoch == 0 && ev.Header.Reason == icodec.EvictionReasonIncompatibleProtocol
}
