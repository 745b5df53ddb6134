package iggy

import (
	"context"
	"errors"

	"github.com/valyala/bytebufferpool"

	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

// Send appends m's messages to partition of topic t and returns the offset
// Iggy gave the first of them (message i got base+i), or -1 when the server
// confirmed the write without an offset.
//
// Send takes m: whatever happens, the caller must not touch m afterwards
// (the client recycles it). Sends to one partition keep their order: they
// go through that partition's lane, and while the lane is busy they queue
// and leave together as one Iggy batch (Config.Coalesce). A Send whose
// messages exceed the batch limits, or whose origin timestamps spread over
// more than 2^32-1 µs, leaves as consecutive batches.
//
// When ctx ends while the send is still queued, Send returns an error
// matching ErrTimeout (or context.Canceled) and ErrNotSent, and the messages
// are never sent. When it ends later, or the session fails with the request
// on the wire, the outcome is unknown (the error does not match ErrNotSent).
// A not-found error invalidates t's cached lookup.
func (c *Client) Send(ctx context.Context, t TopicRef, partition uint32, m *Messages) (int64, error) {
	if m == nil || m.Len() == 0 {
		if m != nil {
			m.Release()
		}
		return -1, &Error{Op: "message.send", Err: ErrNoMessages}
	}
	if m.sent {
		return -1, &Error{Op: "message.send", Err: ErrMessagesSent}
	}
	if u, err := c.delegate(ctx); u != nil || err != nil {
		if err != nil {
			m.Release()
			return -1, err
		}
		return u.Send(ctx, t, partition, m)
	}
	m.sent = true
	key := t.key(partition)
	for attempt := 0; ; attempt++ {
		tc, fence := c, icodec.PartitionContext{}
		if c.routing() {
			var err error
			if tc, fence, err = c.target(ctx, key, t.StreamID(), t.TopicID()); err != nil {
				m.Release()
				return -1, err
			}
		}
		cl := newCall("message.send", icodec.OperationSendMessages, icodec.CodeSendMessages)
		cl.msgs, cl.fence = m, fence
		_, _, err := tc.roundTrip(ctx, cl, &key)
		if err == nil {
			return cl.base, nil
		}
		c.invalidateOnNotFound(t, err)
		retry := c.refused(ctx, tc, key, t.StreamID(), t.TopicID(), err)
		if cl.state.Load() == csDone && cl.msgs != nil {
			// The node refused the messages unadmitted and handed them back
			// (session.handBack): once more along the fresh route, then the
			// caller retries (Kafka: NOT_LEADER_OR_FOLLOWER).
			if m = cl.msgs; attempt == 0 && retry && ctx.Err() == nil {
				continue
			}
			m.Release()
		}
		return -1, err
	}
}

// Polled is the answer of Poll. Batches aliases a pooled buffer: call
// Release when done with it (and with everything Messages yielded).
type Polled struct {
	PartitionID   uint32 // the partition polled (0xFFFFFFFF: re-sync, §3.7)
	CurrentOffset uint64 // the partition's last committed offset (0 when empty)
	Count         uint32 // messages in Batches
	Batches       []byte // batch records (§4.6)

	c  *Client
	rb *bytebufferpool.ByteBuffer
}

// Messages iterates over the polled messages.
func (p *Polled) Messages() icodec.MessageIter { return icodec.NewMessageIter(p.Batches) }

// Release returns the reply buffer to the pool; p must not be used after.
func (p *Polled) Release() {
	if p.rb != nil && p.c != nil {
		p.c.replyPool.Put(p.rb)
	}
	p.rb, p.Batches = nil, nil
}

// Poll runs POLL_MESSAGES on any idle session. The reply's batch records
// are checked for structure (CheckBatches) before they are returned. Errors
// 1009/2010/3007 invalidate the cached lookup of a topic named by strings.
func (c *Client) Poll(ctx context.Context, req *icodec.PollMessagesRequest) (*Polled, error) {
	if u, err := c.delegate(ctx); u != nil || err != nil {
		if err != nil {
			return nil, err
		}
		return u.Poll(ctx, req)
	}
	var p *Polled
	err := c.routed(ctx, req, func(tc *Client, fence icodec.PartitionContext) error {
		var err error
		p, err = tc.poll(ctx, req, fence)
		return err
	})
	c.pollFailed(req, err)
	return p, err
}

// pollFailed invalidates the cached lookup of a poll's topic named by
// strings on a not-found error.
func (c *Client) pollFailed(req *icodec.PollMessagesRequest, err error) {
	if err != nil && req.StreamID.Kind == icodec.IdentifierKindString && req.TopicID.Kind == icodec.IdentifierKindString {
		c.invalidateOnNotFound(TopicRef{Stream: string(req.StreamID.Value), Topic: string(req.TopicID.Value)}, err)
	}
}

// poll is Poll on this client's own sessions, with fence in the header.
func (c *Client) poll(ctx context.Context, req *icodec.PollMessagesRequest, fence icodec.PartitionContext) (*Polled, error) {
	cl, err := c.encode(req)
	if err != nil {
		return nil, err
	}
	cl.fence = fence
	rb, payload, err := c.roundTrip(ctx, cl, nil)
	if err != nil {
		return nil, err
	}
	var resp icodec.PollMessagesResponse
	n, err := c.wireProtocol().DecodePoll(payload, &resp)
	if err == nil && n != len(payload) {
		err = errors.New("iggy: poll reply has trailing bytes")
	}
	if err == nil {
		err = icodec.CheckBatches(resp.Batches)
	}
	if err != nil {
		c.putReply(rb)
		return nil, &Error{Op: cl.op, Sent: true, Err: errors.Join(ErrProtocol, err)}
	}
	return &Polled{PartitionID: resp.PartitionID, CurrentOffset: resp.CurrentOffset, Count: resp.Count, Batches: resp.Batches, c: c, rb: rb}, nil
}

// StoreOffset stores offset (the last processed message, §3.8) as
// consumer's offset for the partition, through the partition's lane (so it
// keeps its order with the partition's sends). Ack level Quorum.
func (c *Client) StoreOffset(ctx context.Context, t TopicRef, partition uint32, consumer icodec.Consumer, offset uint64) error {
	err := c.Do(ctx, &icodec.StoreConsumerOffsetRequest{
		Consumer: consumer, StreamID: t.StreamID(), TopicID: t.TopicID(),
		PartitionID: icodec.OptionalPartition{Present: true, PartitionID: partition},
		Offset:      offset, Ack: icodec.AckLevelQuorum,
	}, nil)
	c.invalidateOnNotFound(t, err)
	return err
}

// DeleteOffset deletes consumer's stored offset for the partition through
// the partition's lane. Nothing stored fails with an error matching
// icodec.StatusConsumerOffsetNotFound.
func (c *Client) DeleteOffset(ctx context.Context, t TopicRef, partition uint32, consumer icodec.Consumer) error {
	err := c.Do(ctx, &icodec.DeleteConsumerOffsetRequest{
		Consumer: consumer, StreamID: t.StreamID(), TopicID: t.TopicID(),
		PartitionID: icodec.OptionalPartition{Present: true, PartitionID: partition},
		Ack:         icodec.AckLevelQuorum,
	}, nil)
	c.invalidateOnNotFound(t, err)
	return err
}

// GetOffset reads consumer's stored offset for the partition on any idle
// session. found is false when nothing is stored (or the stream, topic or
// group is unknown: Iggy answers both with an empty body, §3.8).
func (c *Client) GetOffset(ctx context.Context, t TopicRef, partition uint32, consumer icodec.Consumer) (icodec.GetConsumerOffsetResponse, bool, error) {
	var r icodec.GetConsumerOffsetResponse
	err := c.Do(ctx, &icodec.GetConsumerOffsetRequest{
		Consumer: consumer, StreamID: t.StreamID(), TopicID: t.TopicID(),
		PartitionID: icodec.OptionalPartition{Present: true, PartitionID: partition},
	}, &r)
	if errors.Is(err, ErrNotFound) {
		return r, false, nil
	}
	if err != nil {
		c.invalidateOnNotFound(t, err)
		return r, false, err
	}
	return r, true, nil
}

// Ping sends PING on any idle session.
func (c *Client) Ping(ctx context.Context) error {
	return c.Do(ctx, &icodec.PingRequest{}, nil)
}
