// Package quotas keeps Kafka client quotas (user and client-id entities,
// defaults and specific ones) where every sidecar of one Iggy server sees
// them, answers DescribeClientQuotas and AlterClientQuotas from them, and
// resolves the quota that applies to a connection by Kafka's precedence.
//
// Layout. Iggy stream "__kafka_iggy" (the sidecars' own stream, beside the
// topic-config store and the committed-offsets beyond log), topic
// "client_quotas", one partition, never expiring, created by the first
// sidecar that writes. Each message is one JSON record: an entity (its
// components, name null for a default) and the changes an
// AlterClientQuotas entry made to it, in order:
//
//	{"v":1,"entity":[{"type":"client-id","name":"app"}],
//	 "ops":[{"key":"producer_byte_rate","value":1048576},
//	        {"key":"consumer_byte_rate","remove":true}]}
//
// Applying the records in log order gives every sidecar the same quotas;
// an entity whose last key is removed is gone. Records of another version
// or that do not parse are skipped. An entry that changes nothing writes
// no record (as Kafka's controller writes none).
//
// Reading. Each sidecar reads the log from offset 0 at first use and then
// from where it stopped. DescribeClientQuotas and AlterClientQuotas read
// to the end first (they see every change any sidecar made before them);
// the Produce and Fetch paths use a view at most maxAge old.
package quotas

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

const (
	logStream = "__kafka_iggy"
	logTopic  = "client_quotas"
	version   = 1
	pollCount = 1000
	// maxAge bounds how stale the hot paths' view is.
	maxAge = time.Second
)

var logRef = iggy.TopicRef{Stream: logStream, Topic: logTopic}

// logConsumer reads the log (no offsets are stored for it).
var logConsumer = icodec.Consumer{
	Kind: icodec.ConsumerKindConsumer,
	ID:   icodec.Identifier{Kind: icodec.IdentifierKindString, Value: []byte("kafka-iggy.quotas")},
}

// Op is one change of an AlterClientQuotas entry: set Key to Value, or
// remove Key.
type Op struct {
	Key    string  `json:"key"`
	Value  float64 `json:"value,omitempty"`
	Remove bool    `json:"remove,omitempty"`
}

type record struct {
	V      int    `json:"v"`
	Entity Entity `json:"entity"`
	Ops    []Op   `json:"ops"`
}

// Entry is one entity with its quotas.
type Entry struct {
	Entity Entity
	Values map[string]float64
}

// Store is a sidecar's view of the client-quota log.
type Store struct {
	client  *iggy.Client
	log     zerolog.Logger
	metrics Metrics    // nil: none
	syncMu  sync.Mutex // one reader of Iggy at a time

	mu       sync.RWMutex
	entries  map[string]*Entry // by Entity.key
	syncedAt time.Time
	tail     iggy.LogFollower // where the view's read of the log stands

	thr throttle // the byte rates measured here (throttle.go)
}

// New returns a sidecar's view of the client quotas kept in Iggy, read and
// written through client; the throttle reports to metrics.
func New(client *iggy.Client, metrics Metrics, log zerolog.Logger) *Store {
	return &Store{client: client, log: log, metrics: metrics, entries: map[string]*Entry{}}
}

// Describe returns the entities matching filters (validated by the
// caller), with their quotas, after reading the log to its end.
func (s *Store) Describe(ctx context.Context, filters []Filter, strict bool) ([]Entry, error) {
	if err := s.sync(ctx); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []Entry
	for _, e := range s.entries {
		if matches(e.Entity, filters, strict) {
			vals := make(map[string]float64, len(e.Values))
			for k, v := range e.Values {
				vals[k] = v
			}
			out = append(out, Entry{Entity: e.Entity, Values: vals})
		}
	}
	return out, nil
}

// Alter applies one AlterClientQuotas entry (validated by the caller):
// the log is read to its end, and the ops that change a value are written
// as one record (none when nothing changes).
func (s *Store) Alter(ctx context.Context, entity Entity, ops []Op) error {
	if err := s.sync(ctx); err != nil {
		return err
	}
	entity = normalize(entity)
	s.mu.RLock()
	cur := s.entries[entity.key()]
	var changed []Op
	for _, op := range ops {
		v, ok := 0.0, false
		if cur != nil {
			v, ok = cur.Values[op.Key]
		}
		if op.Remove && ok || !op.Remove && (!ok || v != op.Value) {
			changed = append(changed, op)
		}
	}
	s.mu.RUnlock()
	if len(changed) == 0 {
		return nil
	}
	return s.put(ctx, record{V: version, Entity: entity, Ops: changed})
}

// apply takes one record into the view (mu held).
func (s *Store) apply(payload []byte) {
	var r record
	if json.Unmarshal(payload, &r) != nil || r.V != version || len(r.Entity) == 0 {
		return
	}
	ent := normalize(r.Entity)
	k := ent.key()
	e := s.entries[k]
	if e == nil {
		e = &Entry{Entity: ent, Values: map[string]float64{}}
		s.entries[k] = e
	}
	for _, op := range r.Ops {
		if op.Remove {
			delete(e.Values, op.Key)
		} else {
			e.Values[op.Key] = op.Value
		}
	}
	if len(e.Values) == 0 {
		delete(s.entries, k)
	}
}

// sync reads the log up to its end.
func (s *Store) sync(ctx context.Context) error {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	return s.syncLocked(ctx)
}

func (s *Store) syncLocked(ctx context.Context) error {
	if _, err := s.tail.Sync(ctx, s.client, logConsumer, logRef, pollCount, &s.mu, s.apply); err != nil {
		return err
	}
	s.mu.Lock()
	s.syncedAt = time.Now()
	s.mu.Unlock()
	return nil
}

// fresh reads the log when the view is older than maxAge; a request that
// finds a read under way goes on with the current view (the first view
// is waited for). A failed read keeps the older view (logged).
func (s *Store) fresh(ctx context.Context) {
	s.mu.RLock()
	ok, loaded := time.Since(s.syncedAt) < maxAge, !s.syncedAt.IsZero()
	s.mu.RUnlock()
	if ok {
		return
	}
	if !loaded {
		s.syncMu.Lock()
	} else if !s.syncMu.TryLock() {
		return
	}
	defer s.syncMu.Unlock()
	s.mu.RLock()
	ok = time.Since(s.syncedAt) < maxAge
	s.mu.RUnlock()
	if ok {
		return
	}
	if err := s.syncLocked(ctx); err != nil && ctx.Err() == nil {
		s.log.Warn().Err(err).Msg("client quotas: read failed; using the last quotas read")
	}
}

// put appends one record (creating the log on first use) and reads the log
// up to it, so the writer sees its own change at once.
func (s *Store) put(ctx context.Context, r record) error {
	payload, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if err := s.tail.Append(ctx, s.client, logRef, iggy.NeverExpire(), &s.mu, payload); err != nil {
		return err
	}
	return s.sync(ctx)
}
