package proxy

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/panjf2000/gnet/v2"
	"github.com/rs/zerolog"

	"github.com/kafka-iggy/kafka-iggy/auth"
)

// errNotFromFront is why a connection to the internal port of a TLS
// listener that the TLS front did not make is closed.
var errNotFromFront = errors.New("connection did not come through the TLS front")

// handler is the Server as a gnet event handler; its methods are not part
// of the Server's API.
type handler Server

// OnBoot records the engine and the bound address (the listener is bound
// already; loops start accepting after OnBoot returns).
func (h *handler) OnBoot(eng gnet.Engine) gnet.Action {
	h.eng = eng
	h.addr, h.addrErr = listenerAddr(eng)
	close(h.booted)
	return gnet.None
}

// OnShutdown runs after gnet closed every connection.
func (h *handler) OnShutdown(gnet.Engine) {}

// OnOpen sets up the connection's state, or refuses it when the server is
// draining or at max_connections.
func (h *handler) OnOpen(c gnet.Conn) ([]byte, gnet.Action) {
	s := (*Server)(h)
	now := time.Now()
	cs := &conn{s: s, gc: c, id: s.nextID.Add(1), ring: make([]slot, s.cfg.Limits.MaxInFlight), fd: c.Fd()}
	if ra := c.RemoteAddr(); ra != nil {
		cs.remote = ra.String()
	}
	cs.touch(now)
	cs.ctx, cs.cancel = context.WithCancel(s.baseCtx)
	var fi FrontInfo
	fromFront := false
	if s.front != nil {
		if fi, fromFront = s.front(cs.remote); fromFront {
			cs.remote = fi.Remote
		}
	}
	if s.auth != nil {
		cs.sasl = s.auth.NewSession(cs.remote)
		cs.ctx = auth.NewContext(cs.ctx, cs.sasl)
	} else if fromFront {
		cs.ctx = s.certUsers.WithPrincipal(cs.ctx, fi.Principal)
	}
	c.SetContext(cs)
	s.metrics.ConnOpened()
	n := s.nconns.Add(1)
	if s.draining.Load() {
		cs.fail(closeInfo{reason: CloseShutdown})
		return nil, gnet.Close
	}
	if s.front != nil && !fromFront {
		// Not dialled by the TLS front: a local process trying the
		// internal plaintext port.
		cs.fail(closeInfo{reason: CloseAuthentication, err: errNotFromFront})
		return nil, gnet.Close
	}
	if limit := s.cfg.Limits.MaxConnections; limit > 0 && n > int64(limit) {
		cs.fail(closeInfo{reason: CloseTooManyConnections, size: n, limit: int64(limit)})
		return nil, gnet.Close
	}
	s.connsMu.Lock()
	s.conns[cs.id] = cs
	s.connsMu.Unlock()
	s.log.Debug().Uint64("conn_id", cs.id).Str("remote", cs.remote).Msg("connection opened")
	return nil, gnet.None
}

// OnClose releases the connection's state and logs its close_reason.
func (h *handler) OnClose(c gnet.Conn, err error) gnet.Action {
	s := (*Server)(h)
	cs, ok := c.Context().(*conn)
	if !ok {
		return gnet.None
	}
	finishing := s.takeLeftovers(c, cs, err)
	s.drainPassed(cs)
	cs.mu.Lock()
	cs.flags.set(flagClosed)
	why := cs.why
	dropped := 0
	for i := range cs.ring {
		if sl := &cs.ring[i]; sl.ready {
			sl.rep.release(s)
			*sl = slot{}
			dropped++
		}
	}
	if st := cs.stream; st != nil && !st.inGnet {
		// A stream waiting for gnet to drain: no callback will end it.
		st.rep.release(s)
		cs.stream = nil
		dropped++
	}
	cs.mu.Unlock()
	if cs.partial != nil {
		s.putFrame(cs.partial)
		cs.partial, cs.partialSize = nil, 0
	}
	s.dropReservation(cs)
	s.budget.Release(cs.outHeld.Swap(0))
	s.budget.Outside(-cs.inHeld)
	cs.inHeld = 0
	if cs.parked != nil && finishing {
		// The parked job heads this connection's queue: run it, and what
		// is queued behind it, on the pool once it has room (serveOne
		// skips all but the requests that complete once received).
		s.serveWhenRoom(cs.parked)
		cs.parked = nil
	}
	if cs.parked != nil {
		// The parked job heads this connection's queue and will never run:
		// release it and everything read behind it.
		s.putJob(cs.parked)
		cs.parked = nil
		dropped++
		cs.mu.Lock()
		q := cs.queue
		cs.queue = nil
		cs.mu.Unlock()
		for _, qj := range q {
			s.putJob(qj)
			dropped++
		}
	}
	if dropped > 0 {
		s.finish(dropped)
	}
	cs.cancel()
	s.nconns.Add(-1)
	s.connsMu.Lock()
	delete(s.conns, cs.id)
	s.connsMu.Unlock()

	if why.reason == CloseUnknown {
		switch {
		case s.stopping.Load() || s.draining.Load():
			why.reason = CloseShutdown
		case err == nil || errors.Is(err, io.EOF):
			why.reason = CloseClientClosed
		default:
			why.reason = CloseIOError
		}
	}
	s.metrics.ConnClosed(why.reason)
	s.logClose(cs, why, err)
	return gnet.None
}

// takeLeftovers runs when the client closed its connection: the complete
// requests still in the connection's input whose API completes once
// received (bridge.API.Completes: produce, commits, admin changes) are
// queued to run, in order, as Kafka runs what it read before a close (an
// acks=0 producer writes and closes at once). Others are dropped unread.
// It reports whether the connection's queued requests should still run;
// not once the drain is over (stopping), and not after a close the front
// door decided. During the drain it runs as before it (the drain waits for
// what it queues).
func (s *Server) takeLeftovers(c gnet.Conn, cs *conn, err error) bool {
	cs.mu.Lock()
	decided := cs.why.reason != CloseUnknown
	cs.mu.Unlock()
	if decided || s.stopping.Load() || (err != nil && !errors.Is(err, io.EOF)) {
		return false
	}
	cs.closing = true
	if cs.partial != nil {
		return true // an incomplete frame: nothing complete behind it
	}
	s.takeCompleting(c, cs, time.Now(), false) // closed: no reply ring to keep to
	return true
}

// logClose writes the one log line of a closed connection.
func (s *Server) logClose(cs *conn, why closeInfo, err error) {
	var ev *zerolog.Event
	switch {
	case why.reason == CloseInternal:
		ev = s.log.Error()
	case why.reason.isProtocolError() || why.reason == CloseHandlerError || why.reason == CloseTooManyConnections:
		ev = s.log.Warn()
	default:
		ev = s.log.Debug()
	}
	if ev == nil {
		return
	}
	ev = ev.Uint64("conn_id", cs.id).Str("remote", cs.remote).Str("close_reason", why.reason.String())
	if why.hasReq {
		ev = ev.Int16("api_key", why.key).Int16("api_version", why.version).Int32("corr_id", why.corrID)
	}
	if why.limit != 0 {
		ev = ev.Int64("size", why.size).Int64("limit", why.limit)
	}
	switch {
	case why.err != nil:
		ev = ev.Err(why.err)
	case err != nil && !errors.Is(err, io.EOF):
		ev = ev.Err(err)
	}
	ev.Msg("connection closed")
}

// OnTick closes idle connections and wakes those paused on unsent output.
// It runs on gnet's ticker goroutine, not on an event loop.
func (h *handler) OnTick() (time.Duration, gnet.Action) {
	s := (*Server)(h)
	s.tickMu.Lock()
	defer s.tickMu.Unlock()
	s.connsMu.Lock()
	s.tickBuf = s.tickBuf[:0]
	for _, cs := range s.conns {
		s.tickBuf = append(s.tickBuf, cs)
	}
	s.connsMu.Unlock()
	now := time.Now().UnixNano()
	s.live.observe(s, s.tickBuf, now)
	idle := s.cfg.Limits.IdleTimeout
	for i, cs := range s.tickBuf {
		s.tickBuf[i] = nil
		cs.mu.Lock()
		if cs.flags.isSet(flagClosed) {
			cs.mu.Unlock()
			continue
		}
		if cs.flags.isSet(flagPausedOutbound) || cs.outHeld.Load() > 0 {
			// Resume reading, or let the loop see how much of the
			// unsent output went out (settleOutbound).
			cs.flags.clear(flagPausedOutbound)
			_ = cs.gc.Wake(nil)
		}
		expired := idle > 0 && cs.inFlight == 0 && now-cs.lastActive.Load() > int64(idle)
		cs.mu.Unlock()
		if expired {
			cs.closeWith(closeInfo{reason: CloseIdleTimeout})
		}
	}
	return s.tickEvery, gnet.None
}
