package embedded

import (
	"bufio"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/kafka-iggy/kafka-iggy/codec/iggy"
	"github.com/kafka-iggy/kafka-iggy/codec/wire"
)

const (
	// keepReadBuf bounds the read buffer a connection keeps between frames;
	// a larger one (a big SEND_MESSAGES) is dropped after use.
	keepReadBuf = 1 << 20
	// writeTimeout bounds one reply write to a client that stopped reading.
	writeTimeout = 30 * time.Second
)

// conn is one client TCP connection.
type conn struct {
	s    *Server
	id   uint32 // server-side connection number (client_id of GET_ME)
	nc   net.Conn
	addr string
	log  zerolog.Logger

	lastSeen atomic.Int64 // unix nanoseconds of the last request

	wmu  sync.Mutex // serialises frame writes (replies and unsolicited evictions)
	hbuf [iggy.HeaderSize]byte

	sess   *session            // bound session; guarded by Server.mu
	groups map[*group]struct{} // groups joined through this connection; guarded by Server.mu
	out    []byte              // reply body scratch, reused between requests (conn goroutine only)
	took   bool                // the frame being served was kept by a partition log (conn goroutine only)
}

// session is a logged-in session. Guarded by Server.mu.
type session struct {
	client  wire.U128
	epoch   uint64 // the session number of the login reply
	userID  uint32
	conn    *conn
	fenced  bool   // a newer login of the same client id replaced it
	highest uint64 // highest committed metadata request number
	cache   []cachedReply
	next    int // ring position in cache
}

// cachedReply is the reply of one committed metadata request, kept to
// answer a resend of the same request number.
type cachedReply struct {
	request  uint64
	bodyHash uint64 // XXH3 of the request body
	// requestID is the request_checksum, a logical request id at 0.12.
	requestID wire.U128
	op        iggy.Operation
	status    iggy.Status
	body      []byte
}

// closeReason says why a connection ended (log key close_reason).
type closeReason string

const (
	closeEOF       closeReason = "client_closed"
	closeReadError closeReason = "read_error"
	closeBadFrame  closeReason = "bad_frame"
	closeShutdown  closeReason = "server_shutdown"
	closeWrite     closeReason = "write_error"
)

func (s *Server) serveConn(nc net.Conn) {
	c := &conn{s: s, id: s.connSeq.Add(1), nc: nc, addr: nc.RemoteAddr().String()}
	c.log = s.log.With().Uint32("conn_id", c.id).Str("remote_addr", c.addr).Logger()
	c.lastSeen.Store(s.now().UnixNano())
	s.mu.Lock()
	if s.closed.Load() {
		s.mu.Unlock()
		_ = nc.Close()
		return
	}
	s.conns[c.id] = c
	s.mu.Unlock()
	s.liveConns.Add(1)
	c.log.Debug().Msg("connection opened")

	reason := c.readLoop()

	s.mu.Lock()
	delete(s.conns, c.id)
	s.endSession(c)
	s.mu.Unlock()
	_ = nc.Close()
	s.liveConns.Add(-1)
	c.log.Debug().Str("close_reason", string(reason)).Msg("connection closed")
}

func (c *conn) readLoop() closeReason {
	br := bufio.NewReaderSize(c.nc, 64<<10)
	var buf []byte
	var largest int // the largest frame this connection has sent whole
	for {
		frame, err := c.nextFrame(br, buf, largest)
		if err != nil {
			switch {
			case c.s.closed.Load():
				return closeShutdown
			case errors.Is(err, io.EOF):
				return closeEOF
			case errors.Is(err, io.ErrUnexpectedEOF), isNetErr(err):
				return closeReadError
			}
			c.log.Info().Err(err).Msg("invalid frame; dropping the connection")
			return closeBadFrame
		}
		largest = max(largest, len(frame))
		c.took = false
		if !c.serveFrame(frame) {
			return closeWrite
		}
		switch {
		case c.took: // the frame is stored as it is: never reuse it
			buf = nil
		case cap(frame) <= keepReadBuf:
			buf = frame[:0]
		default:
			buf = nil
		}
	}
}

// nextFrame reads the next frame into buf (grown as needed) and returns it.
// A frame larger than buf that is at most twice the largest this
// connection already sent whole (or keepReadBuf) gets a buffer of exactly
// its size (readExact): growing one as the bytes arrive (iggy.ReadFrame)
// copies it about twice over, and an exact buffer can be kept by a
// partition log as it is (conn.took). A peer announcing a larger frame
// still costs only what it sends, as iggy.ReadFrame grows the buffer with
// the data.
func (c *conn) nextFrame(br *bufio.Reader, buf []byte, largest int) ([]byte, error) {
	if hdr, err := br.Peek(iggy.HeaderSize); err == nil {
		if size, _, err := iggy.PeekFrame(hdr, c.s.cfg.MaxFrameBytes); err == nil &&
			int(size) > cap(buf) && int(size) <= max(2*largest, keepReadBuf) {
			return c.readExact(br, int(size))
		}
	}
	return iggy.ReadFrame(br, buf, c.s.cfg.MaxFrameBytes)
}

// readExact reads the next frame, of the given size (already checked with
// iggy.PeekFrame), into a new buffer of exactly that size: what br holds
// is copied, the rest is read from the socket straight into the buffer
// (br is then empty), sparing a copy through br's buffer.
func (c *conn) readExact(br *bufio.Reader, size int) ([]byte, error) {
	frame := make([]byte, size)
	n, _ := br.Read(frame[:min(br.Buffered(), size)]) // from br's buffer only
	if n < size {
		if _, err := io.ReadFull(c.nc, frame[n:]); err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
	return frame, nil
}

func isNetErr(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, net.ErrClosed)
}

// serveFrame handles one complete frame and writes its answer (if any). It
// returns false when the answer could not be written.
func (c *conn) serveFrame(frame []byte) bool {
	if iggy.HeaderCommand(frame[iggy.RequestHeaderCommandOffset]) != iggy.HeaderCommandRequest {
		// A defined command other than Request: ignored without a reply (§1.2).
		c.log.Debug().Uint8("command", frame[iggy.RequestHeaderCommandOffset]).Msg("non-request frame ignored")
		return true
	}
	r := request{body: frame[iggy.HeaderSize:]}
	if _, err := r.h.DecodeFrom(frame); err != nil {
		return true
	}
	out := c.s.serve(c, &r)
	if cap(c.out) > keepReadBuf {
		c.out = nil
	}
	switch {
	case out.silent:
		c.log.Debug().Uint8("op", uint8(r.h.Operation)).Uint64("request", r.h.Request).Str("why", out.why).Msg("request dropped without a reply")
		return true
	case out.evicted:
		// An eviction is session-terminal (§1.7): whatever session the
		// connection had is gone; the connection itself stays open.
		c.s.mu.Lock()
		c.s.endSession(c)
		c.s.mu.Unlock()
		c.log.Info().Uint8("op", uint8(r.h.Operation)).Uint8("reason", uint8(out.evict)).Msg("session evicted")
		return c.writeEviction(r.h.Client, out.evict)
	}
	op := out.op
	if op == 0 {
		op = r.h.Operation
	}
	rh := iggy.ReplyHeader{
		RequestChecksum: r.h.RequestChecksum,
		Client:          r.h.Client,
		Op:              out.logOp,
		Commit:          out.commit,
		Timestamp:       r.h.Timestamp,
		Request:         r.h.Request,
		Operation:       op,
		Status:          out.status,

		PartitionIncarnation: r.h.PartitionIncarnation,
	}
	if out.anonymous {
		rh.Client = wire.U128{Lo: uint64(c.id)}
	}
	body := out.body
	if out.status != 0 {
		body = nil
	}
	if out.status != 0 {
		c.log.Debug().Uint8("op", uint8(r.h.Operation)).Uint32("code", r.h.Code).Uint32("iggy_code", uint32(out.status)).Msg("request refused")
	}
	return c.writeReply(&rh, body)
}

// writeReply writes one reply frame.
func (c *conn) writeReply(h *iggy.ReplyHeader, body []byte) bool {
	if iggy.HeaderSize+len(body) > int(c.s.cfg.MaxFrameBytes) {
		c.log.Error().Int("body_bytes", len(body)).Msg("reply larger than max_frame_bytes; dropping the connection")
		return false
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	hdr := h.AppendTo(c.hbuf[:0], len(body))
	return c.writeLocked(hdr, body)
}

// writeEviction writes a header-only Eviction frame (§1.7).
func (c *conn) writeEviction(client wire.U128, reason iggy.EvictionReason) bool {
	h := iggy.EvictionHeader{Client: client, Reason: reason}
	if reason == iggy.EvictionReasonIncompatibleProtocol {
		h.ServerProtocolVersion = c.s.proto
		h.ServerProtocolVersionMin = c.s.proto
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.writeLocked(h.AppendTo(c.hbuf[:0], 0), nil)
}

func (c *conn) writeLocked(hdr, body []byte) bool {
	_ = c.nc.SetWriteDeadline(time.Now().Add(writeTimeout))
	bufs := net.Buffers{hdr}
	if len(body) > 0 {
		bufs = append(bufs, body)
	}
	if _, err := bufs.WriteTo(c.nc); err != nil {
		c.log.Debug().Err(err).Msg("write failed")
		_ = c.nc.Close()
		return false
	}
	return true
}

// cached returns the cached reply of request n, or nil.
func (ss *session) cached(n uint64) *cachedReply {
	for i := range ss.cache {
		if ss.cache[i].request == n {
			return &ss.cache[i]
		}
	}
	return nil
}

// remember caches the reply of a committed request and raises the
// session's high-water mark.
func (ss *session) remember(n, bodyHash uint64, requestID wire.U128, out outcome, size int) {
	ss.highest = n
	cr := cachedReply{request: n, bodyHash: bodyHash, requestID: requestID, op: out.op, status: out.status, body: append([]byte(nil), out.body...)}
	if len(ss.cache) < size {
		ss.cache = append(ss.cache, cr)
		return
	}
	ss.cache[ss.next] = cr
	ss.next = (ss.next + 1) % size
}

// endSession unbinds c's session, removes its consumer-group memberships
// (the groups rebalance) and forgets it. Caller holds Server.mu.
func (s *Server) endSession(c *conn) {
	sess := c.sess
	if sess == nil {
		return
	}
	c.sess = nil
	s.leaveAllGroups(c)
	if s.sessions[sess.client] == sess {
		delete(s.sessions, sess.client)
	}
}
