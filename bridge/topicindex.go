// The topic-id index: one per Bridge, shared by every API that names
// topics by id (Produce v13, Fetch v13+, OffsetCommit v10, OffsetFetch v10,
// Metadata v10+, DeleteTopics v6+).

package bridge

import (
	"context"
	"sync"
	"time"

	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

// topicIDIndex maps Kafka topic ids (topicID) back to topic names for the
// APIs that name topics by id. Ids are derived,
// not stored, so an id the index does not know triggers a scan: one
// GET_TOPICS of the default stream (its topic headers carry what topicID
// hashes) plus the overrides' cached lookups. Scans are single-flight, and
// a request does not scan again when a scan started after it arrived.
type topicIDIndex struct {
	b         *Bridge
	mu        sync.Mutex
	byID      map[[16]byte]topicIDEntry
	scanMu    sync.Mutex // one scan at a time
	lastStart time.Time  // when the last completed scan started
}

// topicIDEntry is one known id: the Kafka name and the lookup it was
// computed from (the same cached lookup needs no new hash).
type topicIDEntry struct {
	name string
	info *iggy.TopicInfo
}

func newTopicIDIndex(b *Bridge) *topicIDIndex {
	return &topicIDIndex{b: b, byID: map[[16]byte]topicIDEntry{}}
}

// lookup returns the topic whose id is id; a nil TopicInfo (and nil error)
// when no topic has it. received is when the request arrived.
func (x *topicIDIndex) lookup(ctx context.Context, id [16]byte, received time.Time) (string, *iggy.TopicInfo, error) {
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
func (x *topicIDIndex) scan(ctx context.Context) (map[[16]byte]topicIDEntry, error) {
	b := x.b
	m := map[[16]byte]topicIDEntry{}
	stream := b.cfg.Topics.DefaultStream
	var resp icodec.GetTopicsResponse
	switch err := b.iggy.Do(ctx, &icodec.GetTopicsRequest{StreamID: iggy.TopicRef{Stream: stream}.StreamID()}, &resp); {
	case err == nil:
		for i := range resp.Topics {
			ref := iggy.TopicRef{Stream: stream, Topic: resp.Topics[i].Name}
			name, ok := b.topics.kafkaName(ref)
			if !ok {
				continue
			}
			if _, moved := b.topics.override[name]; moved {
				continue // an override's id is computed from its own topic below
			}
			m[topicID(&iggy.TopicInfo{Ref: ref, Details: icodec.TopicDetails{TopicHeader: resp.Topics[i]}})] = topicIDEntry{name: name}
		}
	case iggy.IsNotFound(err):
	default:
		return nil, err
	}
	for name, ref := range b.topics.override {
		info, err := b.iggy.GetTopic(ctx, ref)
		if err != nil {
			if iggy.IsNotFound(err) {
				continue
			}
			return nil, err
		}
		m[topicID(info)] = topicIDEntry{name: name, info: info}
	}
	return m, nil
}

// cached resolves id through the index, checking that the named topic
// still has that id (a topic recreated under the same name has another).
func (x *topicIDIndex) cached(ctx context.Context, id [16]byte) (string, *iggy.TopicInfo, error) {
	x.mu.Lock()
	e, ok := x.byID[id]
	x.mu.Unlock()
	if !ok {
		return "", nil, nil
	}
	info, err := x.b.lookupTopic(ctx, e.name)
	switch {
	case err == nil && (info == e.info || topicID(info) == id):
		if info != e.info {
			x.mu.Lock()
			if cur, ok := x.byID[id]; ok && cur.name == e.name {
				x.byID[id] = topicIDEntry{name: e.name, info: info}
			}
			x.mu.Unlock()
		}
		return e.name, info, nil
	case err != nil && !iggy.IsNotFound(err):
		return e.name, nil, err
	}
	return "", nil, nil
}

// name returns the Kafka name of the topic whose id is id, false when no
// topic has it or Iggy could not be asked (the request answers
// UNKNOWN_TOPIC_ID either way, as the APIs that only need a name do).
func (x *topicIDIndex) name(ctx context.Context, id [16]byte, received time.Time) (string, bool) {
	name, info, err := x.lookup(ctx, id, received)
	if err != nil || info == nil {
		return "", false
	}
	return name, true
}
