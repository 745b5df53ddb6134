// The topic-config store: the Kafka topic state Iggy has no place for,
// held in Iggy itself, so every sidecar of one Iggy server reports and
// enforces the same values and they survive restarts. No consensus of our
// own: the order of the store's messages in Iggy is the order of changes.
//
// Layout. Iggy stream "__kafka_iggy", topic "topic_configs", one partition,
// never expiring; created by the first sidecar that writes (the stream is
// outside the default stream, so Kafka clients never see it). Each message
// is one JSON record (payload), keyed by the Iggy topic it describes and
// that topic's incarnation (its Iggy topic id and creation time, so a topic
// deleted and created again under the same name starts from the defaults):
//
//	{"v":1,"kind":"configs","stream":"kafka","topic":"orders","topic_id":3,
//	 "created_at":1764621000123456,"configs":{"cleanup.policy":"compact"}}
//	{"v":1,"kind":"log_start","stream":"kafka","topic":"orders","topic_id":3,
//	 "created_at":1764621000123456,"log_start":{"0":2295,"1":2496}}
//
// A configs record is the topic's whole set of gateway-held configs (the
// held strings of held.go and max.message.bytes under their Kafka
// names): the latest record of an incarnation wins. A log_start record
// raises log start offsets of partitions (one DeleteRecords topic); the
// store keeps the highest per partition, so two sidecars purging at once
// never move it back. Records of another version or that do not parse are skipped.
//
// Reading. Each sidecar reads the store from offset 0 at first use and then
// from where it stopped. Admin requests (CreateTopics, the alters,
// DescribeConfigs, DeleteRecords) read to the end first, so they see every
// change any sidecar made before them; Produce, Fetch and ListOffsets use
// what was read at most storeMaxAge ago (one poll per interval and sidecar
// when traffic flows), so a change made through one sidecar is enforced by
// all within that bound. A write is read back at once by its writer.
//
// Concurrency. Two alters of one topic through two sidecars at the same
// moment both read, change and write the whole set: the later write wins,
// as with two AdminClients racing on a Kafka cluster whose controller
// serializes them; log start offsets only rise, whoever writes.
//
// Cost. One message per topic created with held configs, per alter that
// changes them, per DeleteRecords partition. The store is read whole at
// start (a few hundred bytes per record); it is not compacted.

package topicconfig

import (
	"context"
	"encoding/json"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

// Where the store lives in Iggy.
const (
	storeStream = "__kafka_iggy"
	storeTopic  = "topic_configs"
	// storeMaxAge bounds how stale the hot paths' view of the store is.
	storeMaxAge = time.Second
	// storePollCount is the number of records one poll reads.
	storePollCount = 1000
	storeVersion   = 1
)

// storeRecord is one message of the store.
type storeRecord struct {
	V         int               `json:"v"`
	Kind      string            `json:"kind"`
	Stream    string            `json:"stream"`
	Topic     string            `json:"topic"`
	TopicID   uint32            `json:"topic_id"`
	CreatedAt uint64            `json:"created_at"`
	Configs   map[string]string `json:"configs,omitempty"`
	// LogStart raises log start offsets: partition -> offset.
	LogStart map[int32]int64 `json:"log_start,omitempty"`
}

// incarnation identifies one life of an Iggy topic.
type incarnation struct {
	ref     iggy.TopicRef
	id      uint32
	created uint64
}

func incarnationOf(info *iggy.TopicInfo) incarnation {
	return incarnation{ref: info.Ref, id: info.Details.ID, created: info.Details.CreatedAt}
}

// storeEntry is what the store holds for one incarnation.
type storeEntry struct {
	configs  map[string]string
	logStart map[int32]int64
}

// Store is a sidecar's view of the store.
type Store struct {
	client  *iggy.Client
	log     zerolog.Logger
	metrics Metrics
	syncMu  sync.Mutex // one reader of Iggy at a time; held across polls

	mu       sync.RWMutex
	topics   map[incarnation]*storeEntry
	syncedAt time.Time        // last read that reached the end
	tail     iggy.LogFollower // where the view's read of the store stands

	measuring  atomic.Bool // a compact-bytes measurement runs
	pending    atomic.Bool // another measurement is wanted
	measuredAt time.Time   // under mu
}

// compactMeasureEvery is how often kafka_iggy_compact_topic_bytes is measured.
const compactMeasureEvery = 30 * time.Second

// Metrics is where the store reports what it measures.
type Metrics interface {
	// SetCompactBytes sets kafka_iggy_compact_topic_bytes.
	SetCompactBytes(n int64)
}

// NewStore returns a sidecar's view of the topic-config store in Iggy,
// read and written through client.
func NewStore(client *iggy.Client, metrics Metrics, log zerolog.Logger) *Store {
	return &Store{client: client, log: log, metrics: metrics, topics: map[incarnation]*storeEntry{}}
}

var storeRef = iggy.TopicRef{Stream: storeStream, Topic: storeTopic}

// storeConsumer reads the store (no offsets are stored for it).
var storeConsumer = icodec.Consumer{
	Kind: icodec.ConsumerKindConsumer,
	ID:   icodec.Identifier{Kind: icodec.IdentifierKindString, Value: []byte("kafka-iggy.store")},
}

// sync reads the store up to its end.
func (s *Store) sync(ctx context.Context) error {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	return s.syncLocked(ctx)
}

func (s *Store) syncLocked(ctx context.Context) error {
	exists, err := s.tail.Sync(ctx, s.client, storeConsumer, storeRef, storePollCount, &s.mu, s.apply)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.syncedAt = time.Now()
	measure := false
	if exists && s.syncedAt.Sub(s.measuredAt) >= compactMeasureEvery {
		s.measuredAt, measure = s.syncedAt, true
	}
	s.mu.Unlock()
	if measure {
		s.triggerMeasure()
	}
	return nil
}

// apply takes one record into the view (mu held).
func (s *Store) apply(payload []byte) {
	var r storeRecord
	if json.Unmarshal(payload, &r) != nil || r.V != storeVersion {
		return
	}
	inc := incarnation{ref: iggy.TopicRef{Stream: r.Stream, Topic: r.Topic}, id: r.TopicID, created: r.CreatedAt}
	t := s.topics[inc]
	if t == nil {
		t = &storeEntry{}
		s.topics[inc] = t
	}
	switch r.Kind {
	case "configs":
		t.configs = r.Configs
	case "log_start":
		if t.logStart == nil {
			t.logStart = map[int32]int64{}
		}
		for p, off := range r.LogStart {
			if off > t.logStart[p] {
				t.logStart[p] = off
			}
		}
	}
}

// triggerMeasure asks for a compact-bytes measurement: one runs in the
// background, and runs again when asked while it was running.
func (s *Store) triggerMeasure() {
	s.pending.Store(true)
	if !s.measuring.CompareAndSwap(false, true) {
		return
	}
	go func() {
		for s.pending.Swap(false) {
			s.measureCompact()
		}
		s.measuring.Store(false)
		if s.pending.Load() {
			s.triggerMeasure()
		}
	}()
}

// measureCompact sets kafka_iggy_compact_topic_bytes: the stored size of
// every topic whose current incarnation's cleanup.policy includes compact.
func (s *Store) measureCompact() {
	s.mu.RLock()
	var compact []incarnation
	for inc, t := range s.topics {
		if isCompactPolicy(t.configs[cleanupPolicyName]) {
			compact = append(compact, inc)
		}
	}
	s.mu.RUnlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var total int64
	for _, inc := range compact {
		info, err := s.client.RefreshTopic(ctx, inc.ref)
		if err != nil {
			if iggy.IsNotFound(err) {
				continue
			}
			return // keep the last figure
		}
		if incarnationOf(info) == inc {
			total += int64(info.Details.SizeBytes)
		}
	}
	s.metrics.SetCompactBytes(total)
}

// fresh reads the store when the view is older than storeMaxAge. Only the
// request that finds the view stale first reads Iggy; requests arriving while
// that read (or an admin read to the end) is under way go on with the current
// view instead of queueing behind it on the produce and fetch paths (until a
// first view exists, they wait for it). A failed read keeps the older view
// (logged).
func (s *Store) fresh(ctx context.Context) {
	s.mu.RLock()
	ok := time.Since(s.syncedAt) < storeMaxAge
	loaded := !s.syncedAt.IsZero()
	s.mu.RUnlock()
	if ok {
		return
	}
	if !loaded {
		s.syncMu.Lock() // nothing read yet: every request waits for the first view
	} else if !s.syncMu.TryLock() {
		return
	}
	defer s.syncMu.Unlock()
	s.mu.RLock()
	ok = time.Since(s.syncedAt) < storeMaxAge
	s.mu.RUnlock()
	if ok {
		return
	}
	if err := s.syncLocked(ctx); err != nil && ctx.Err() == nil {
		s.log.Warn().Err(err).Msg("topic-config store: read failed; using the last values read")
	}
}

// value returns a topic's stored config name (a recent view).
func (s *Store) value(ctx context.Context, info *iggy.TopicInfo, name string) (string, bool) {
	s.fresh(ctx)
	s.mu.RLock()
	defer s.mu.RUnlock()
	t := s.topics[incarnationOf(info)]
	if t == nil {
		return "", false
	}
	v, ok := t.configs[name]
	return v, ok
}

// Settings resolves a topic's settings for an admin request: its Iggy
// options with the store's values on top, the store read up to its end
// first (so every sidecar answers what the last change wrote).
func (s *Store) Settings(ctx context.Context, info *iggy.TopicInfo) (Set, error) {
	set := setOf(info.Details.ExplicitOptions, info.Details.DerivedOptions)
	if err := s.sync(ctx); err != nil {
		return set, err
	}
	s.overlay(info, set)
	return set, nil
}

// MaxMessageBytes is the largest record batch a Produce may write to a
// partition of the topic: its max.message.bytes (a recent view), else
// fallback (topics.max_message_bytes).
func (s *Store) MaxMessageBytes(ctx context.Context, info *iggy.TopicInfo, fallback int) int {
	if v, ok := s.value(ctx, info, MaxMessageBytesName); ok {
		if n, err := strconv.Atoi(v); err == nil {
			return n
		}
	}
	return fallback
}

// LogAppendTime reports whether the topic's message.timestamp.type is
// LogAppendTime (a recent view).
func (s *Store) LogAppendTime(ctx context.Context, info *iggy.TopicInfo) bool {
	v, ok := s.value(ctx, info, TimestampTypeName)
	return ok && v == logAppendTime
}

// LogStart returns a partition's log start offset (0 when never raised),
// from a recent view.
func (s *Store) LogStart(ctx context.Context, info *iggy.TopicInfo, partition int32) int64 {
	s.fresh(ctx)
	s.mu.RLock()
	defer s.mu.RUnlock()
	if t := s.topics[incarnationOf(info)]; t != nil {
		return t.logStart[partition]
	}
	return 0
}

// overlay sets the topic's stored configs on o.
func (s *Store) overlay(info *iggy.TopicInfo, o Set) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if t := s.topics[incarnationOf(info)]; t != nil {
		overlayStored(o, t.configs)
	}
}

// overlayStored sets stored configs (as StoredConfigs makes them) on o.
func overlayStored(o Set, configs map[string]string) {
	for k, v := range configs {
		if k == MaxMessageBytesName {
			if n, err := strconv.ParseUint(v, 10, 32); err == nil {
				spec, _ := icodec.LookupOption(gatewayOptions, optMaxMessageBytes)
				o.set(spec, n)
			}
			continue
		}
		if _, ok := heldConfigs[k]; ok {
			o.held[k] = v
		}
	}
}

// StoredConfigs is what a configs record holds for set: the held strings
// and an explicit max.message.bytes.
func StoredConfigs(set Set) map[string]string {
	out := make(map[string]string, len(set.held)+1)
	for k, v := range set.held {
		out[k] = v
	}
	if set.explicit[optMaxMessageBytes] {
		out[MaxMessageBytesName] = strconv.FormatUint(set.vals[optMaxMessageBytes], 10)
	}
	return out
}

// SameConfigs reports whether two stored sets are equal.
func SameConfigs(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// putConfigs writes the topic's held configs of set.
func (s *Store) PutConfigs(ctx context.Context, info *iggy.TopicInfo, set Set) error {
	inc := incarnationOf(info)
	err := s.put(ctx, storeRecord{Kind: "configs", Stream: inc.ref.Stream, Topic: inc.ref.Topic, TopicID: inc.id, CreatedAt: inc.created, Configs: StoredConfigs(set)})
	if err == nil {
		s.triggerMeasure() // the set of compact topics may have changed
	}
	return err
}

// putLogStart raises log start offsets of the topic's partitions.
func (s *Store) PutLogStart(ctx context.Context, info *iggy.TopicInfo, offsets map[int32]int64) error {
	inc := incarnationOf(info)
	return s.put(ctx, storeRecord{Kind: "log_start", Stream: inc.ref.Stream, Topic: inc.ref.Topic, TopicID: inc.id, CreatedAt: inc.created, LogStart: offsets})
}

// logStartFresh returns a partition's log start offset after reading the
// store to its end (admin paths).
func (s *Store) LogStartFresh(ctx context.Context, info *iggy.TopicInfo, partition int32) (int64, error) {
	if err := s.sync(ctx); err != nil {
		return 0, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if t := s.topics[incarnationOf(info)]; t != nil {
		return t.logStart[partition], nil
	}
	return 0, nil
}

// put appends one record (creating the store on first use) and reads the
// store up to it, so the writer sees its own change at once.
func (s *Store) put(ctx context.Context, r storeRecord) error {
	r.V = storeVersion
	payload, err := json.Marshal(r)
	if err != nil {
		return err
	}
	expiry, _ := icodec.LookupOption(icodec.TopicOptions, optMessageExpiry)
	var opts icodec.Options
	if expiry != nil {
		opts = icodec.Options{encodeOption(expiry, math.MaxUint64)}
	}
	if err := s.tail.Append(ctx, s.client, storeRef, opts, &s.mu, payload); err != nil {
		return err
	}
	return s.sync(ctx)
}
