package iggy

import (
	"context"
	"errors"
	"sync"
	"time"

	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

// TopicRef names an Iggy topic by stream and topic name. Names, not ids,
// are what the client caches and routes by: Iggy reuses freed ids (§7.1).
type TopicRef struct {
	Stream string // stream name
	Topic  string // topic name
}

// StreamID returns the stream as a string Identifier.
func (t TopicRef) StreamID() icodec.Identifier {
	return icodec.Identifier{Kind: icodec.IdentifierKindString, Value: []byte(t.Stream)}
}

// TopicID returns the topic as a string Identifier.
func (t TopicRef) TopicID() icodec.Identifier {
	return icodec.Identifier{Kind: icodec.IdentifierKindString, Value: []byte(t.Topic)}
}

func (t TopicRef) key(partition uint32) partKey {
	return partKey{stream: t.Stream, topic: t.Topic, skind: icodec.IdentifierKindString, tkind: icodec.IdentifierKindString, partition: partition}
}

// TopicInfo is a cached topic lookup. It is shared: treat it as read-only.
type TopicInfo struct {
	Ref             TopicRef            // the names looked up
	StreamID        uint32              // numeric stream id
	TopicID         uint32              // numeric topic id
	PartitionsCount uint32              // number of partitions (ids 0..count-1)
	Details         icodec.TopicDetails // the GET_TOPIC reply (options, partitions)
	FetchedAt       time.Time           // when the server answered
}

// metaCache holds stream ids and topic lookups by name. mu is a leaf lock:
// nothing else is locked while it is held, and no I/O happens under it.
type metaCache struct {
	mu      sync.Mutex
	streams map[string]streamEntry
	topics  map[TopicRef]*TopicInfo
	flights map[TopicRef]*flight
}

type streamEntry struct {
	id uint32
	at time.Time
}

// flight is one topic lookup in progress; later callers wait for it.
type flight struct {
	done chan struct{}
	info *TopicInfo
	err  error
}

func (m *metaCache) init() {
	m.streams = make(map[string]streamEntry)
	m.topics = make(map[TopicRef]*TopicInfo)
	m.flights = make(map[TopicRef]*flight)
}

func (c *Client) fresh(at time.Time) bool {
	return c.cfg.MetadataTTL == 0 || time.Since(at) < c.cfg.MetadataTTL
}

// GetTopic returns the topic's ids, partition count and options, from the
// cache when fresh (see Config.MetadataTTL). Concurrent lookups of one topic
// share one request. A topic or stream that does not exist fails with an
// error matching ErrNotFound.
func (c *Client) GetTopic(ctx context.Context, t TopicRef) (*TopicInfo, error) {
	if u, err := c.delegate(ctx); u != nil || err != nil {
		if err != nil {
			return nil, err
		}
		return u.GetTopic(ctx, t)
	}
	for {
		c.meta.mu.Lock()
		if ti := c.meta.topics[t]; ti != nil && c.fresh(ti.FetchedAt) {
			c.meta.mu.Unlock()
			return ti, nil
		}
		if f := c.meta.flights[t]; f != nil {
			c.meta.mu.Unlock()
			select {
			case <-f.done:
				// The leader's own context ending is not our answer.
				if f.err != nil && (errors.Is(f.err, context.Canceled) || errors.Is(f.err, context.DeadlineExceeded)) && ctx.Err() == nil {
					continue
				}
				return f.info, f.err
			case <-ctx.Done():
				return nil, &Error{Op: "topic.get", Err: ctxCause(ctx)}
			}
		}
		f := &flight{done: make(chan struct{})}
		c.meta.flights[t] = f
		c.meta.mu.Unlock()

		f.info, f.err = c.fetchTopic(ctx, t)
		c.meta.mu.Lock()
		delete(c.meta.flights, t)
		if f.err == nil {
			c.meta.topics[t] = f.info
		}
		c.meta.mu.Unlock()
		close(f.done)
		return f.info, f.err
	}
}

// InvalidateTopic drops the cached lookup of t (and its stream's id), so
// the next GetTopic asks the server. Not-found replies do this by themselves.
func (c *Client) InvalidateTopic(t TopicRef) {
	c.meta.mu.Lock()
	delete(c.meta.topics, t)
	delete(c.meta.streams, t.Stream)
	c.meta.mu.Unlock()
}

// RefreshTopic drops t's cached lookup and fetches it again (for instance
// for current partition offsets and message counts).
func (c *Client) RefreshTopic(ctx context.Context, t TopicRef) (*TopicInfo, error) {
	if u, err := c.delegate(ctx); u != nil || err != nil {
		if err != nil {
			return nil, err
		}
		return u.RefreshTopic(ctx, t)
	}
	c.meta.mu.Lock()
	delete(c.meta.topics, t)
	c.meta.mu.Unlock()
	return c.GetTopic(ctx, t)
}

func (c *Client) fetchTopic(ctx context.Context, t TopicRef) (*TopicInfo, error) {
	sid, err := c.streamID(ctx, t.Stream)
	if err != nil {
		return nil, err
	}
	var d icodec.TopicDetails
	if err := c.Do(ctx, &icodec.GetTopicRequest{StreamID: t.StreamID(), TopicID: t.TopicID()}, &d); err != nil {
		return nil, err
	}
	return &TopicInfo{Ref: t, StreamID: sid, TopicID: d.ID, PartitionsCount: d.PartitionsCount, Details: d, FetchedAt: time.Now()}, nil
}

// streamID returns the numeric id of the named stream (cached).
func (c *Client) streamID(ctx context.Context, name string) (uint32, error) {
	c.meta.mu.Lock()
	e, ok := c.meta.streams[name]
	c.meta.mu.Unlock()
	if ok && c.fresh(e.at) {
		return e.id, nil
	}
	var sd icodec.StreamDetails
	id := icodec.Identifier{Kind: icodec.IdentifierKindString, Value: []byte(name)}
	if err := c.Do(ctx, &icodec.GetStreamRequest{StreamID: id}, &sd); err != nil {
		if IsUnauthorized(err) && c.parent != nil {
			// A principal with topic permissions only may not read the
			// stream; its id is no secret to the sidecar.
			return c.parent.streamID(Sidecar(ctx), name)
		}
		return 0, err
	}
	c.cacheStream(name, sd.ID)
	return sd.ID, nil
}

func (c *Client) cacheStream(name string, id uint32) {
	c.meta.mu.Lock()
	c.meta.streams[name] = streamEntry{id: id, at: time.Now()}
	c.meta.mu.Unlock()
}

// CreateStream creates a stream and returns its id. An existing name fails
// with an error matching icodec.StatusStreamNameAlreadyExists.
func (c *Client) CreateStream(ctx context.Context, name string) (uint32, error) {
	var sr icodec.StreamResponse
	if err := c.Do(ctx, &icodec.CreateStreamRequest{Name: name}, &sr); err != nil {
		return 0, err
	}
	c.cacheStream(name, sr.ID)
	return sr.ID, nil
}

// EnsureStream makes sure the named stream exists and returns its id. A
// stream this client created, found or looked up before costs no call
// (whatever the entry's age); otherwise it sends CREATE_STREAM, and on
// StreamNameAlreadyExists GET_STREAM. A stream deleted behind the client's
// back is forgotten when CreateTopic meets it missing.
func (c *Client) EnsureStream(ctx context.Context, name string) (uint32, error) {
	if u, err := c.delegate(ctx); u != nil || err != nil {
		if err != nil {
			return 0, err
		}
		return u.EnsureStream(ctx, name)
	}
	c.meta.mu.Lock()
	e, ok := c.meta.streams[name]
	c.meta.mu.Unlock()
	if ok {
		return e.id, nil
	}
	id, err := c.CreateStream(ctx, name)
	// A user who may not create streams may still own topics in this one.
	if errors.Is(err, icodec.StatusStreamNameAlreadyExists) || IsUnauthorized(err) {
		return c.streamID(ctx, name)
	}
	return id, err
}

// forgetStream drops the named stream's cache entry.
func (c *Client) forgetStream(name string) {
	c.meta.mu.Lock()
	delete(c.meta.streams, name)
	c.meta.mu.Unlock()
}

// CreateTopic creates topic t with partitions partitions (0-1000) and the
// given topic options, caches and returns it. An existing name fails with
// an error matching icodec.StatusTopicNameAlreadyExists; a missing stream
// with one matching icodec.StatusStreamIDNotFound (or ErrNotFound).
func (c *Client) CreateTopic(ctx context.Context, t TopicRef, partitions uint32, options icodec.Options) (*TopicInfo, error) {
	if u, err := c.delegate(ctx); u != nil || err != nil {
		if err != nil {
			return nil, err
		}
		return u.CreateTopic(ctx, t, partitions, options)
	}
	sid, err := c.streamID(ctx, t.Stream)
	if err != nil {
		return nil, err
	}
	var d icodec.TopicDetails
	req := &icodec.CreateTopicRequest{StreamID: t.StreamID(), PartitionsCount: partitions, Name: t.Topic, Options: options}
	if err := c.Do(ctx, req, &d); err != nil {
		if StreamMissing(err) {
			c.forgetStream(t.Stream)
		}
		return nil, err
	}
	ti := &TopicInfo{Ref: t, StreamID: sid, TopicID: d.ID, PartitionsCount: d.PartitionsCount, Details: d, FetchedAt: time.Now()}
	c.meta.mu.Lock()
	c.meta.topics[t] = ti
	c.meta.mu.Unlock()
	return ti, nil
}

// StreamMissing reports whether a CREATE_TOPIC failed because its stream
// does not exist.
func StreamMissing(err error) bool {
	return errors.Is(err, icodec.StatusStreamIDNotFound) || errors.Is(err, icodec.StatusStreamNameNotFound) ||
		errors.Is(err, ErrNotFound)
}

// invalidateOnNotFound drops t's cache entry when err says it is gone.
func (c *Client) invalidateOnNotFound(t TopicRef, err error) {
	if err != nil && IsNotFound(err) {
		c.InvalidateTopic(t)
	}
}
