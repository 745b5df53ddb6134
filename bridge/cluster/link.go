package cluster

// The peer link: a TCP listener of its own (peers.address) between the
// sidecars of one coordination domain, carrying forwarded group calls.
//
// Handshake (all frames, at most 4 KiB, within peers.handshake_timeout):
//
//	server -> client  challenge: version u16, nonce [32]
//	client -> server  hello:     version u16, node, domain, nonce [32],
//	                             HMAC-SHA256(secret, "kafka-iggy peer v1 client" | server nonce | node | domain)
//	server -> client  welcome:   HMAC-SHA256(secret, "kafka-iggy peer v1 server" | client nonce | domain)
//
// A wrong proof, another domain or version, or any malformed frame closes
// the connection with a logged reason and the remote address; the secret
// never crosses the wire. After the handshake the client sends requests
// (frame kinds 10-18) and the server answers each with kind|0x80 and the
// same id, in any order: a JoinGroup parked for a rebalance does not hold
// the heartbeats behind it. A call or answer larger than one frame travels
// as kindPart frames of its id followed by its last part (frame.go).
// Kafka clients never see this listener.

import (
	"bufio"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/kafka-iggy/kafka-iggy/codec/wire"
)

var (
	// errPeerGone: the connection to the owner dropped with the call on it.
	errPeerGone = errors.New("cluster: peer connection lost")
	// errPeerAuth: the peer failed the handshake.
	errPeerAuth = errors.New("cluster: peer failed the handshake")
)

// readFrame reads one frame (without its size field) of at most max bytes.
func readFrame(r *bufio.Reader, max int) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.LittleEndian.Uint32(hdr[:])
	if n < 9 || uint64(n) > uint64(max) {
		return nil, frameErr("size", fmt.Sprintf("%d outside 9..%d", n, max), wire.ErrTooLarge)
	}
	p := make([]byte, n)
	if _, err := io.ReadFull(r, p); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return p, nil
}

func proof(secret []byte, label string, parts ...[]byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(label))
	for _, p := range parts {
		var l [4]byte
		binary.BigEndian.PutUint32(l[:], uint32(len(p)))
		m.Write(l[:])
		m.Write(p)
	}
	return m.Sum(nil)
}

// handler serves one request body of a kind; an error means the body was
// malformed (the connection is closed).
type handler func(ctx context.Context, kind uint8, body []byte) ([]byte, error)

// linkServer accepts peer connections.
type linkServer struct {
	ln       net.Listener
	secret   []byte
	domain   string
	maxFrame int
	hsTime   time.Duration
	log      zerolog.Logger
	handle   handler
	// Caps (peers.max_connections, peers.max_inflight_calls,
	// peers.idle_timeout); zero means the default.
	maxConns    int
	maxInflight int
	idle        time.Duration
	maxMessage  int         // peers.max_message_bytes; 0: the default
	tls         *tls.Config // nil: no peer TLS

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
	// refused counts the connections refused (cap, handshake) or closed
	// by their peer's fault (malformed frames, past
	// peers.max_message_bytes).
	refused atomic.Int64
}

// stats returns the open connections and the refused count.
func (s *linkServer) stats() (open int, refused int64) {
	s.mu.Lock()
	open = len(s.conns)
	s.mu.Unlock()
	return open, s.refused.Load()
}

func (s *linkServer) serve() {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			_ = c.Close()
			return
		}
		if len(s.conns) >= orDefault(s.maxConns, DefaultMaxConnections) {
			s.mu.Unlock()
			s.refuse(c, "too_many_connections", nil)
			_ = c.Close()
			continue
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.wg.Done()
			s.conn(c)
			s.mu.Lock()
			delete(s.conns, c)
			s.mu.Unlock()
		}()
	}
}

func (s *linkServer) close() {
	s.mu.Lock()
	s.closed = true
	_ = s.ln.Close()
	for c := range s.conns {
		_ = c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

func (s *linkServer) refuse(c net.Conn, reason string, err error) {
	s.refused.Add(1)
	ev := s.log.Warn().Str("peer_address", c.RemoteAddr().String()).Str("close_reason", reason)
	if err != nil {
		ev = ev.Err(err)
	}
	ev.Msg("peer connection refused")
}

// handshake runs the server side; it returns the peer's node name.
func (s *linkServer) handshake(c net.Conn, br *bufio.Reader) (string, bool) {
	_ = c.SetDeadline(time.Now().Add(s.hsTime))
	nonce := make([]byte, nonceSize)
	_, _ = rand.Read(nonce)
	var e enc
	e.u16(protocolVersion)
	e.raw(nonce)
	if _, err := c.Write(appendFrame(nil, kindChallenge, 0, e.b)); err != nil {
		return "", false
	}
	p, err := readFrame(br, handshakeMaxFrame)
	if err != nil {
		s.refuse(c, "handshake_unreadable", err)
		return "", false
	}
	kind, _, body, err := parseHeader(p)
	if err != nil || kind != kindHello {
		s.refuse(c, "handshake_malformed", err)
		return "", false
	}
	d := newDec(body, "peer.hello")
	ver := d.u16("version")
	node := d.str("node")
	domain := d.str("domain")
	cnonce := d.take("nonce", nonceSize)
	mac := d.take("proof", macSize)
	if err := d.done(); err != nil {
		s.refuse(c, "handshake_malformed", err)
		return "", false
	}
	switch {
	case ver != protocolVersion:
		s.refuse(c, "peer_version", fmt.Errorf("version %d, want %d", ver, protocolVersion))
		return "", false
	case !hmac.Equal(mac, proof(s.secret, "kafka-iggy peer v1 client", nonce, []byte(node), []byte(domain))):
		s.refuse(c, "wrong_secret", nil)
		return "", false
	case domain != s.domain:
		s.refuse(c, "other_domain", fmt.Errorf("domain %q, this sidecar serves %q", domain, s.domain))
		return "", false
	}
	if _, err := c.Write(appendFrame(nil, kindWelcome, 0, proof(s.secret, "kafka-iggy peer v1 server", cnonce, []byte(domain)))); err != nil {
		return "", false
	}
	_ = c.SetDeadline(time.Time{})
	return node, true
}

func (s *linkServer) conn(c net.Conn) {
	defer c.Close()
	if s.tls != nil {
		// Mutual TLS first: a peer without a certificate of the domain's
		// CA never reaches the HMAC challenge.
		tc := tls.Server(c, s.tls)
		_ = c.SetDeadline(time.Now().Add(s.hsTime))
		if err := tc.Handshake(); err != nil {
			s.refuse(c, "tls_handshake", err)
			return
		}
		c = tc
	}
	br := bufio.NewReader(c)
	node, ok := s.handshake(c, br)
	if !ok {
		return
	}
	log := s.log.With().Str("peer_address", c.RemoteAddr().String()).Str("peer_node", node).Logger()
	log.Debug().Msg("peer connected")
	var inflight sync.WaitGroup
	defer inflight.Wait() // after cancel below: parked calls end with the connection
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wmu sync.Mutex
	sem := make(chan struct{}, orDefault(s.maxInflight, DefaultMaxInflightCalls))
	var idleClosed atomic.Bool
	fail := func(reason string, err error) {
		if reason != "write_failed" {
			s.refused.Add(1)
		}
		log.Warn().Err(err).Str("close_reason", reason).Msg("peer connection closed")
		cancel()
		_ = c.Close()
	}
	// The idle watch: no frame read and no call in flight for
	// peers.idle_timeout closes the connection.
	var lastActive atomic.Int64
	lastActive.Store(time.Now().UnixNano())
	idle := s.idle
	if idle <= 0 {
		idle = DefaultIdleTimeout
	}
	go func() {
		t := time.NewTicker(max(idle/8, time.Millisecond))
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-t.C:
				if len(sem) == 0 && now.Sub(time.Unix(0, lastActive.Load())) >= idle {
					idleClosed.Store(true)
					log.Debug().Str("close_reason", "idle_timeout").Dur("idle_timeout", idle).Msg("peer connection closed")
					cancel()
					_ = c.Close()
					return
				}
			}
		}
	}()
	asm := assembler{max: orDefault(s.maxMessage, DefaultMaxMessageBytes)}
	for {
		p, err := readFrame(br, s.maxFrame)
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || idleClosed.Load() {
				log.Debug().Msg("peer disconnected")
			} else {
				fail("frame_unreadable", err)
			}
			return
		}
		lastActive.Store(time.Now().UnixNano())
		kind, id, body, err := parseHeader(p)
		done := true
		if err == nil {
			body, done, err = asm.add(kind, id, body)
		}
		if err == nil && done && !requestKind(kind) {
			err = frameErr("kind", fmt.Sprintf("%d is not a request", kind), wire.ErrUnknownDiscriminant)
		}
		if err != nil {
			fail("frame_malformed", err)
			return
		}
		if !done {
			continue // a part of a larger message
		}
		sem <- struct{}{} // at peers.max_inflight_calls: stop reading until one ends
		inflight.Add(1)
		go func() {
			defer func() { lastActive.Store(time.Now().UnixNano()); <-sem; inflight.Done() }()
			resp, err := s.safeHandle(ctx, kind, body)
			if err != nil {
				fail(closeReason(err), err)
				return
			}
			wmu.Lock()
			defer wmu.Unlock()
			_ = c.SetWriteDeadline(time.Now().Add(s.hsTime + writeTime(len(resp))))
			if _, err := c.Write(appendMessage(nil, kind|kindResponse, id, resp, s.maxFrame)); err != nil && ctx.Err() == nil {
				fail("write_failed", err)
			}
		}()
	}
}

// writeTime is the time a write of n bytes is given beyond
// peers.handshake_timeout: a second per 8 MiB (a large message is written
// whole under one deadline).
func writeTime(n int) time.Duration { return time.Duration(n/(8<<20)) * time.Second }

// orDefault is v, or def when v is not set.
func orDefault(v, def int) int {
	if v <= 0 {
		return def
	}
	return v
}

// peerClient is the connection to one owner, dialled on first use and
// again after it dropped.
type peerClient struct {
	addr     string
	node     string // this sidecar's node name
	domain   string
	secret   []byte
	dialTime time.Duration
	hsTime   time.Duration
	maxFrame int
	// maxMessage is peers.max_message_bytes; 0: the default.
	maxMessage int
	log        zerolog.Logger
	tls        func() *tls.Config // nil: no peer TLS

	mu      sync.Mutex
	conn    net.Conn
	pending map[uint64]chan peerReply
	nextID  uint64
	wmu     sync.Mutex
	closed  bool
}

type peerReply struct {
	body []byte
	err  error
}

func (p *peerClient) connect(ctx context.Context) (net.Conn, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, errPeerGone
	}
	if p.conn != nil {
		return p.conn, nil
	}
	dctx, cancel := context.WithTimeout(ctx, p.dialTime)
	defer cancel()
	c, err := (&net.Dialer{}).DialContext(dctx, "tcp", p.addr)
	if err != nil {
		return nil, err
	}
	if p.tls != nil {
		tc := tls.Client(c, p.tls())
		_ = c.SetDeadline(time.Now().Add(p.hsTime))
		if err := tc.Handshake(); err != nil {
			_ = c.Close()
			p.log.Warn().Err(err).Str("peer_address", p.addr).Msg("peer TLS handshake failed")
			return nil, fmt.Errorf("%w: %v", errPeerAuth, err)
		}
		c = tc
	}
	br := bufio.NewReader(c)
	if err := p.handshake(c, br); err != nil {
		_ = c.Close()
		p.log.Warn().Err(err).Str("peer_address", p.addr).Msg("peer handshake failed")
		return nil, err
	}
	p.conn = c
	p.pending = map[uint64]chan peerReply{}
	go p.readLoop(c, br)
	return c, nil
}

func (p *peerClient) handshake(c net.Conn, br *bufio.Reader) error {
	_ = c.SetDeadline(time.Now().Add(p.hsTime))
	defer c.SetDeadline(time.Time{})
	f, err := readFrame(br, handshakeMaxFrame)
	if err != nil {
		return err
	}
	kind, _, body, err := parseHeader(f)
	if err != nil {
		return err
	}
	d := newDec(body, "peer.challenge")
	ver := d.u16("version")
	nonce := d.take("nonce", nonceSize)
	if err := d.done(); err != nil || kind != kindChallenge {
		return errors.Join(errPeerAuth, err)
	}
	if ver != protocolVersion {
		return fmt.Errorf("%w: version %d, want %d", errPeerAuth, ver, protocolVersion)
	}
	cnonce := make([]byte, nonceSize)
	_, _ = rand.Read(cnonce)
	var e enc
	e.u16(protocolVersion)
	e.str(p.node)
	e.str(p.domain)
	e.raw(cnonce)
	e.raw(proof(p.secret, "kafka-iggy peer v1 client", nonce, []byte(p.node), []byte(p.domain)))
	if _, err := c.Write(appendFrame(nil, kindHello, 0, e.b)); err != nil {
		return err
	}
	f, err = readFrame(br, handshakeMaxFrame)
	if err != nil {
		return fmt.Errorf("%w (refused: wrong secret or domain?): %v", errPeerAuth, err)
	}
	kind, _, body, err = parseHeader(f)
	if err != nil || kind != kindWelcome || !hmac.Equal(body, proof(p.secret, "kafka-iggy peer v1 server", cnonce, []byte(p.domain))) {
		return fmt.Errorf("%w: the server's proof is wrong", errPeerAuth)
	}
	return nil
}

func (p *peerClient) readLoop(c net.Conn, br *bufio.Reader) {
	var err error
	asm := assembler{max: orDefault(p.maxMessage, DefaultMaxMessageBytes), answers: true}
	for {
		var f []byte
		f, err = readFrame(br, p.maxFrame)
		if err != nil {
			break
		}
		kind, id, body, perr := parseHeader(f)
		done := true
		if perr == nil {
			body, done, perr = asm.add(kind, id, body)
		}
		if perr == nil && !done {
			continue // a part of a larger answer
		}
		if perr != nil || kind&kindResponse == 0 || !requestKind(kind&^kindResponse) {
			err = errors.Join(perr, frameErr("kind", fmt.Sprintf("%d is not a response", kind), wire.ErrUnknownDiscriminant))
			break
		}
		p.mu.Lock()
		ch := p.pending[id]
		delete(p.pending, id)
		p.mu.Unlock()
		if ch != nil {
			ch <- peerReply{body: body}
		}
	}
	if malformed(err) {
		p.log.Warn().Err(err).Str("peer_address", p.addr).Str("close_reason", "frame_malformed").Msg("peer connection closed")
	}
	p.drop(c)
}

// drop closes c and fails every call waiting on it.
func (p *peerClient) drop(c net.Conn) {
	_ = c.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conn != c {
		return
	}
	for id, ch := range p.pending {
		ch <- peerReply{err: errPeerGone}
		delete(p.pending, id)
	}
	p.conn = nil
}

// call sends one request and waits for its answer, ctx or a dropped
// connection.
func (p *peerClient) call(ctx context.Context, kind uint8, body []byte) ([]byte, error) {
	c, err := p.connect(ctx)
	if err != nil {
		return nil, err
	}
	ch := make(chan peerReply, 1)
	p.mu.Lock()
	if p.conn != c {
		p.mu.Unlock()
		return nil, errPeerGone
	}
	p.nextID++
	id := p.nextID
	p.pending[id] = ch
	p.mu.Unlock()
	p.wmu.Lock()
	_ = c.SetWriteDeadline(time.Now().Add(p.hsTime + writeTime(len(body))))
	_, err = c.Write(appendMessage(nil, kind, id, body, p.maxFrame))
	p.wmu.Unlock()
	if err != nil {
		p.drop(c)
		return nil, errPeerGone
	}
	select {
	case r := <-ch:
		return r.body, r.err
	case <-ctx.Done():
		p.mu.Lock()
		delete(p.pending, id)
		p.mu.Unlock()
		return nil, ctx.Err()
	}
}

func (p *peerClient) close() {
	p.mu.Lock()
	p.closed = true
	c := p.conn
	p.mu.Unlock()
	if c != nil {
		p.drop(c)
	}
}
