// Package topicids is the topic-id index of the bridge: Kafka topic ids
// back to topic names, for every API that names topics by id (Produce v13,
// Fetch v13+, OffsetCommit v10, OffsetFetch v10, Metadata v10+, DeleteTopics
// v6+). One per Bridge.
package topicids

import (
	"context"
	"sync"
	"time"

	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

// Index maps Kafka topic ids (topicID) back to topic names for the
// APIs that name topics by id. Ids are derived,
// not stored, so an id the index does not know triggers a scan: one
// GET_TOPICS of the default stream (its topic headers carry what topicID
// hashes) plus the overrides' cached lookups. Scans are single-flight, and
// a request does not scan again when a scan started after it arrived.
type Index struct {
	d         Deps
	mu        sync.Mutex
	byID      map[[16]byte]entry
	scanMu    sync.Mutex // one scan at a time
	lastStart time.Time  // when the last completed scan started
}

// entry is one known id: the Kafka name and the lookup it was
// computed from (the same cached lookup needs no new hash).
type entry struct {
	name string
	info *iggy.TopicInfo
}

// Deps are what the index needs of the bridge.
type Deps struct {
	Client        *iggy.Client
	DefaultStream string
	// Overrides maps a Kafka name to its Iggy topic outside the default
	// stream; KafkaName maps an Iggy topic back (false: not a Kafka topic).
	Overrides map[string]iggy.TopicRef
	KafkaName func(iggy.TopicRef) (string, bool)
	// Lookup is the bridge's cached topic lookup; ID a topic's Kafka id.
	Lookup func(ctx context.Context, name string) (*iggy.TopicInfo, error)
	ID     func(*iggy.TopicInfo) [16]byte
}

// New returns an empty index.
func New(d Deps) *Index {
	return &Index{d: d, byID: map[[16]byte]entry{}}
}

// Lookup returns the topic whose id is id; a nil TopicInfo (and nil error)
// when no topic has it. received is when the request arrived.
func (x *Index) Lookup(ctx context.Context, id [16]byte, received time.Time) (string, *iggy.TopicInfo, error) {
	if name, info, err := x.cached(ctx, id); info != nil || err != nil {
		return name, info, err
	}
	x.scanMu.Lock()
	defer x.scanMu.Unlock()
	if x.lastStart.After(received) {
		// A scan that started after the request arrived found nothing new
		// for it (or did, and the cache has it now).
		return x.cached(ctx, id)
	}
	start := time.Now()
	m, err := x.scan(ctx)
	if err != nil {
		return "", nil, err
	}
	x.mu.Lock()
	x.byID = m
	x.mu.Unlock()
	x.lastStart = start
	return x.cached(ctx, id)
}

// scan computes the id of every Kafka topic.
func (x *Index) scan(ctx context.Context) (map[[16]byte]entry, error) {
	d := x.d
	m := map[[16]byte]entry{}
	stream := d.DefaultStream
	var resp icodec.GetTopicsResponse
	switch err := d.Client.Do(ctx, &icodec.GetTopicsRequest{StreamID: iggy.TopicRef{Stream: stream}.StreamID()}, &resp); {
	case err == nil:
		for i := range resp.Topics {
			ref := iggy.TopicRef{Stream: stream, Topic: resp.Topics[i].Name}
			name, ok := d.KafkaName(ref)
			if !ok {
				continue
			}
			if _, moved := d.Overrides[name]; moved {
				continue // an override's id is computed from its own topic below
			}
			m[d.ID(&iggy.TopicInfo{Ref: ref, Details: icodec.TopicDetails{TopicHeader: resp.Topics[i]}})] = entry{name: name}
		}
	case iggy.IsNotFound(err):
	default:
		return nil, err
	}
	for name, ref := range d.Overrides {
		info, err := d.Client.GetTopic(ctx, ref)
		if err != nil {
			if iggy.IsNotFound(err) {
				continue
			}
			return nil, err
		}
		m[d.ID(info)] = entry{name: name, info: info}
	}
	return m, nil
}

// cached resolves id through the index, checking that the named topic
// still has that id (a topic recreated under the same name has another).
func (x *Index) cached(ctx context.Context, id [16]byte) (string, *iggy.TopicInfo, error) {
	x.mu.Lock()
	e, ok := x.byID[id]
	x.mu.Unlock()
	if !ok {
		return "", nil, nil
	}
	info, err := x.d.Lookup(ctx, e.name)
	switch {
	case err == nil && (info == e.info || x.d.ID(info) == id):
		if info != e.info {
			x.mu.Lock()
			if cur, ok := x.byID[id]; ok && cur.name == e.name {
				x.byID[id] = entry{name: e.name, info: info}
			}
			x.mu.Unlock()
		}
		return e.name, info, nil
	case err != nil && !iggy.IsNotFound(err):
		return e.name, nil, err
	}
	return "", nil, nil
}

// Name returns the Kafka name of the topic whose id is id, false when no
// topic has it or Iggy could not be asked (the request answers
// UNKNOWN_TOPIC_ID either way, as the APIs that only need a name do).
func (x *Index) Name(ctx context.Context, id [16]byte, received time.Time) (string, bool) {
	name, info, err := x.Lookup(ctx, id, received)
	if err != nil || info == nil {
		return "", false
	}
	return name, true
}
