package iggy

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"sync"
	"time"

	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
	"github.com/kafka-iggy/kafka-iggy/codec/records"
)

// PollLog reads one page of at most count messages of partition 0 of ref,
// a one-partition log the sidecars keep in Iggy (the topic-config store,
// the committed-offsets beyond log), from offset next on, as consumer.
// Each message at or after next goes to apply in offset order, with a
// payload valid only during the call. It returns how many messages were
// applied: fewer than count means the page reached the log's end. The
// poll's error comes back as is (IsNotFound: nobody created the log yet).
func (c *Client) PollLog(ctx context.Context, consumer icodec.Consumer, ref TopicRef, next uint64, count uint32,
	apply func(offset uint64, payload []byte)) (int, error) {
	ctx = Sidecar(ctx) // the sidecar's own log, never a principal's
	p, err := c.Poll(ctx, &icodec.PollMessagesRequest{
		Consumer: consumer, StreamID: ref.StreamID(), TopicID: ref.TopicID(),
		PartitionID: icodec.OptionalPartition{Present: true, PartitionID: 0},
		Strategy:    icodec.PollingStrategy{Kind: icodec.PollingKindOffset, Value: next},
		Count:       count,
	})
	if err != nil {
		return 0, err
	}
	defer p.Release()
	n := 0
	it := p.Messages()
	for it.Next() {
		m := it.Message()
		if m.Offset < next {
			continue
		}
		apply(m.Offset, m.Payload)
		next = m.Offset + 1
		n++
	}
	return n, it.Err()
}

// ReadLog reads a sidecar-kept one-partition log (see PollLog) from offset
// next to its end, a page of count messages at a time, giving each record
// to apply in offset order. It returns how many records it applied. The
// poll's error comes back as is (IsNotFound: nobody created the log yet, or
// it was deleted). Callers look a log up (GET_TOPIC) before they read one
// they have not seen: a real server logs every poll of a missing topic and
// answers the lookup quietly.
func (c *Client) ReadLog(ctx context.Context, consumer icodec.Consumer, ref TopicRef, next uint64, count uint32,
	apply func(offset uint64, payload []byte)) (int, error) {
	ctx = Sidecar(ctx) // the sidecar's own log, never a principal's
	total := 0
	for {
		n, err := c.PollLog(ctx, consumer, ref, next, count, func(offset uint64, payload []byte) {
			apply(offset, payload)
			next = offset + 1
		})
		total += n
		if err != nil || n < int(count) {
			return total, err
		}
	}
}

// LogFollower is what a reader of a sidecar-kept log remembers: the next
// offset to read and whether the log is known to exist. The owner's lock
// guards both (Sync takes it as mu).
type LogFollower struct {
	Next  uint64
	Known bool
}

// Sync reads the log to its end, giving each record's payload to apply
// with mu held. A log not known to exist is looked up first (GET_TOPIC: a
// real server logs every poll of a missing topic and answers the lookup
// quietly), and nothing is read while it is missing. It reports whether
// the log exists. Calls for one follower must not overlap.
func (f *LogFollower) Sync(ctx context.Context, c *Client, consumer icodec.Consumer, ref TopicRef, count uint32,
	mu sync.Locker, apply func(payload []byte)) (bool, error) {
	ctx = Sidecar(ctx) // the sidecar's own log, never a principal's
	mu.Lock()
	known, next := f.Known, f.Next
	mu.Unlock()
	if !known {
		if _, err := c.GetTopic(ctx, ref); err != nil {
			if IsNotFound(err) {
				return false, nil
			}
			return false, err
		}
	}
	_, err := c.ReadLog(ctx, consumer, ref, next, count, func(offset uint64, payload []byte) {
		mu.Lock()
		apply(payload)
		f.Next = offset + 1
		mu.Unlock()
	})
	if err != nil && !IsNotFound(err) {
		return false, err
	}
	mu.Lock()
	f.Known = err == nil // not found: deleted under us, looked up again next time
	mu.Unlock()
	return err == nil, nil
}

// Append adds one record to the log: its stream and topic (one partition,
// created with opts: NeverExpire, or the caller's own encoding of it) are
// created first unless the follower knows the log exists; a concurrent
// creation by another sidecar is fine. A send that
// finds the log gone marks it unknown, so the next Append creates it
// again. mu is the follower's lock, as for Sync.
func (f *LogFollower) Append(ctx context.Context, c *Client, ref TopicRef, opts icodec.Options, mu sync.Locker, payload []byte) error {
	ctx = Sidecar(ctx) // the sidecar's own log, never a principal's
	mu.Lock()
	known := f.Known
	mu.Unlock()
	if !known {
		if err := c.ensureLogTopic(ctx, ref, opts); err != nil {
			return err
		}
		mu.Lock()
		f.Known = true
		mu.Unlock()
	}
	msgs := c.NewMessages()
	var d records.Decoder
	if err := msgs.Add(d.NewID(), uint64(time.Now().UnixMicro()), payload, nil); err != nil {
		msgs.Release()
		return err
	}
	if _, err := c.Send(ctx, ref, 0, msgs); err != nil {
		if IsNotFound(err) {
			mu.Lock()
			f.Known = false
			mu.Unlock()
		}
		return err
	}
	return nil
}

// NeverExpire is the option set of a topic whose messages never expire
// (message_expiry u64::MAX), or none where the catalog has no such option.
func NeverExpire() icodec.Options {
	if spec, _ := icodec.LookupOption(icodec.TopicOptions, "message_expiry"); spec != nil && spec.Kind == icodec.HeaderKindUint64 {
		return icodec.Options{{Key: spec.Key, Kind: spec.Kind, Value: binary.LittleEndian.AppendUint64(nil, math.MaxUint64)}}
	}
	return nil
}

// ensureLogTopic creates a sidecar-kept log's stream and topic (one
// partition, opts) unless the topic exists.
func (c *Client) ensureLogTopic(ctx context.Context, ref TopicRef, opts icodec.Options) error {
	ctx = Sidecar(ctx) // the sidecar's own log, never a principal's
	if _, err := c.GetTopic(ctx, ref); err == nil {
		return nil
	}
	if _, err := c.EnsureStream(ctx, ref.Stream); err != nil {
		return err
	}
	if _, err := c.CreateTopic(ctx, ref, 1, opts); err != nil && !errors.Is(err, icodec.StatusTopicNameAlreadyExists) {
		return err
	}
	return nil
}
