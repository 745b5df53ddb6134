package iggy

import (
	"bufio"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
	"github.com/kafka-iggy/kafka-iggy/codec/wire"
)

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

// fail marks the session broken (the connection is closed at once, so no
// later reply can be mistaken for another request's) and returns err.
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
