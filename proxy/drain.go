package proxy

import (
	"context"
	"encoding/binary"
	"time"

	"github.com/panjf2000/gnet/v2"
)

// States of a connection's drain pass (conn.drainState).
const (
	drainNone   = iota // the drain has not reached the connection
	drainWoken         // woken for its pass, counted in Server.drainPending
	drainPassed        // its pass ran (or it closed)
)

// drainConns runs every open connection's drain pass (takeForDrain) on
// its event loop and waits, until ctx ends, for all of them to have run:
// the requests they take are then in flight, and the drain waits for
// them. Called once the server is draining.
func (s *Server) drainConns(ctx context.Context) {
	s.connsMu.Lock()
	conns := make([]*conn, 0, len(s.conns))
	for _, cs := range s.conns {
		conns = append(conns, cs)
	}
	s.connsMu.Unlock()
	for _, cs := range conns {
		if !cs.drainState.CompareAndSwap(drainNone, drainWoken) {
			continue // it passed already (traffic, or its close)
		}
		s.drainPending.Add(1)
		if err := cs.gc.Wake(nil); err != nil {
			s.drainPassed(cs) // gone: OnClose passes it
		}
	}
	for s.drainPending.Load() > 0 {
		select {
		case <-s.drainPassedCh:
		case <-ctx.Done():
			return
		}
	}
}

// drainPassed marks cs's drain pass as run.
func (s *Server) drainPassed(cs *conn) {
	if cs.drainState.Swap(drainPassed) == drainWoken && s.drainPending.Add(-1) == 0 {
		select {
		case s.drainPassedCh <- struct{}{}:
		default:
		}
	}
}

// takeForDrain is a connection's drain pass, once, on its event loop:
// the complete requests already in its input whose API completes once
// received (writes, acks=0 produce included, commits, admin changes) are
// taken and run, as if the connection had closed after sending them
// (takeLeftovers); the others stay unread and are refused by the close
// that ends the drain, which the client sees as a lost connection and
// retries elsewhere. Nothing the sidecar read is dropped silently.
//
// The pass keeps to max_in_flight (the reply ring's size): at the cap it
// stops, and the connection, woken when a reply is written, goes on.
func (s *Server) takeForDrain(c gnet.Conn, cs *conn) {
	if cs.drainState.Load() == drainPassed {
		return
	}
	if cs.partial == nil {
		cs.closing = true // run what it takes off the pool: OnTraffic no longer resumes
		if s.takeCompleting(c, cs, time.Now(), true) {
			return // at max_in_flight: the next reply wakes us
		}
	}
	s.drainPassed(cs)
}

// takeCompleting queues, in order, the complete frames in c's input whose
// API completes once received, charging the budget for them (the bytes are
// held already: charged, not waited for), and discards the others. It
// stops at the first incomplete frame, and (capped) at max_in_flight,
// reporting that it did.
func (s *Server) takeCompleting(c gnet.Conn, cs *conn, now time.Time, capped bool) (atCap bool) {
	for {
		if capped {
			cs.mu.Lock()
			if cs.inFlight >= s.cfg.Limits.MaxInFlight {
				cs.flags.set(flagPausedInFlight)
				cs.mu.Unlock()
				return true
			}
			cs.mu.Unlock()
		}
		size, complete, ferr := pendingFrame(c, s.cfg.Limits.MaxFrameBytes)
		if ferr != nil || !complete || size < 2 {
			return false
		}
		hdr, perr := c.Peek(FrameHeaderSize + 2)
		if perr != nil {
			return false
		}
		key := int16(binary.BigEndian.Uint16(hdr[FrameHeaderSize:]))
		if !s.d.Completes(key) {
			if _, derr := c.Discard(FrameHeaderSize + size); derr != nil {
				return false
			}
			continue
		}
		held := s.budget.Clamp(int64(size) * s.d.FrameCharge(key))
		s.budget.Charge(held)
		buf := s.getFrame(size)
		if cap(buf.B) < size {
			buf.B = make([]byte, size)
		} else {
			buf.B = buf.B[:size]
		}
		if terr := takeFrame(c, buf.B); terr != nil {
			s.putFrame(buf)
			s.budget.Release(held)
			return false
		}
		if s.accept(cs, buf, held, now) != gnet.None {
			return false
		}
	}
}
