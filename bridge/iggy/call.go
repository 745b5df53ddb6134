package iggy

import (
	"sync/atomic"

	"github.com/valyala/bytebufferpool"

	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

// Completion states of a call.
const (
	csPending   uint32 = iota // not answered yet
	csDone                    // answered; the caller reads the result
	csAbandoned               // the caller left (deadline); the session cleans up
)

// call is one caller's request from hand-over to answer. The caller encodes
// it completely before handing it over (frame, or msgs for a send), so a
// session never touches caller memory and a caller may leave at any time:
//
//   - queued on a lane: the caller withdraws it (lane.cancel) and frees it;
//   - handed to a session: the caller marks it abandoned; the session frees
//     the request buffers and, on completion, the reply buffer.
//
// The request buffers (frame, msgs) always belong to the session once it
// took the call; the reply buffer (rb) goes to the caller unless abandoned.
type call struct {
	op        string // dotted command name
	operation icodec.Operation
	code      uint32
	frame     *bytebufferpool.ByteBuffer // 256-byte header slot + body; nil for sends
	msgs      *Messages                  // sends only
	key       partKey                    // lane calls only
	fence     icodec.PartitionContext    // stamped in the request header (0.12 partition routes; zero: none)
	lstate    uint8                      // lane state, guarded by the lane's mu

	state atomic.Uint32
	done  chan struct{}

	// Results, written by the session before done is closed.
	sent    bool
	rb      *bytebufferpool.ByteBuffer
	payload []byte
	base    int64
	err     error
}

func newCall(op string, operation icodec.Operation, code uint32) *call {
	return &call{op: op, operation: operation, code: code, base: -1, done: make(chan struct{})}
}

// complete records the outcome and wakes the caller, or frees the reply if
// the caller already left. err, when not nil, is wrapped in *Error.
func (c *call) complete(cl *Client, rb *bytebufferpool.ByteBuffer, payload []byte, base int64, sent bool, err error) {
	if err != nil {
		if rb != nil {
			cl.replyPool.Put(rb)
			rb, payload = nil, nil
		}
		err = &Error{Op: c.op, Sent: sent, Err: err}
	}
	c.sent, c.rb, c.payload, c.base, c.err = sent, rb, payload, base, err
	if c.state.CompareAndSwap(csPending, csDone) {
		close(c.done)
		return
	}
	if rb != nil {
		cl.replyPool.Put(rb)
	}
	c.rb, c.payload = nil, nil
}

// abandon marks the call as left by its caller; false means the answer is
// already there (read it after <-c.done).
func (c *call) abandon() bool { return c.state.CompareAndSwap(csPending, csAbandoned) }

// releaseRequest frees the request buffers (owned by whoever holds the call
// at that moment: see call).
func (c *call) releaseRequest(cl *Client) {
	if c.frame != nil {
		cl.framePool.Put(c.frame)
		c.frame = nil
	}
	if c.msgs != nil {
		c.msgs.Release()
		c.msgs = nil
	}
}

// takeReply hands the reply buffer to the caller.
func (c *call) takeReply() (*bytebufferpool.ByteBuffer, []byte) {
	rb, p := c.rb, c.payload
	c.rb, c.payload = nil, nil
	return rb, p
}
