package iggy

// Protocol negotiation with iggy.protocol auto, once per server: the first
// session of a pool to log in settles the generation and the others wait
// for it, so a server that does not speak the newest generation refuses
// one login, not one per session. The settled generation is remembered
// per server address for the life of the process, so every later pool to
// the same server (a restarted client, another client of the process)
// starts with it; peer pools are given the generation of the pool that
// opens them (router.go). A session whose login is refused later for an
// incompatible protocol (the server was replaced by another version) still
// switches to the generation the refusal's window accepts (connectTo), and
// the pool follows it.

import (
	"context"
	"sync"

	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

// settledProtocols maps a server address to the generation a login of
// iggy.protocol auto last settled on with it (uint32 of
// icodec.ProtocolVersion).
var settledProtocols sync.Map

// initNegotiation prepares auto negotiation: the generation settled with
// the server before, if any, is announced first.
func (c *Client) initNegotiation() {
	if !c.autoProto {
		return
	}
	c.nego = make(chan struct{}, 1)
	if v, ok := settledProtocols.Load(c.cfg.Address); ok {
		c.announce.Store(v.(uint32))
	}
}

// awaitNegotiation lets one session at a time log in until a login of the
// pool succeeded; release ends the turn. Without auto negotiation, or once
// settled, it returns at once.
func (c *Client) awaitNegotiation(ctx context.Context) (release func(), err error) {
	if c.nego == nil || c.negotiated.Load() {
		return func() {}, nil
	}
	select {
	case c.nego <- struct{}{}:
		return func() { <-c.nego }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.ctx.Done():
		return nil, ErrClosed
	}
}

// settle records that a login announcing p to the server at addr
// succeeded.
func (c *Client) settle(addr string, p icodec.ProtocolVersion) {
	if c.nego == nil {
		return
	}
	c.negotiated.Store(true)
	settledProtocols.Store(addr, uint32(p))
}
