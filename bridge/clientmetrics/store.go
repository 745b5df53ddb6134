// Package clientmetrics keeps Kafka's client metrics subscriptions
// (KIP-714: the CLIENT_METRICS config resources kafka-client-metrics.sh
// lists, describes and alters) where every sidecar of one Iggy server sees
// them, checks their configs as Kafka 4.4 does (configs.go) and tells the
// telemetry service which subscriptions a client matches (match.go).
//
// Layout. Iggy stream "__kafka_iggy" (beside the client-quota log), topic
// "client_metrics", one partition, never expiring, created by the first
// sidecar that writes. Each message is one JSON record: a subscription
// name and the changes one alter made to it, in order:
//
//	{"v":1,"name":"sub1","ops":[{"key":"interval.ms","value":"1000"},
//	                            {"key":"match","remove":true}]}
//
// Applying the records in log order gives every sidecar the same
// subscriptions; a subscription whose last config is removed is gone (as
// on Kafka, where it leaves ListConfigResources). Records of another
// version or that do not parse are skipped. An alter that changes nothing
// writes no record.
//
// Reading. Each sidecar reads the log from offset 0 at first use and then
// from where it stopped: the admin APIs read to the end first, telemetry
// uses a view at most maxAge old.
package clientmetrics

import (
	"context"
	"encoding/json"
	"sort"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

const (
	logStream = "__kafka_iggy"
	logTopic  = "client_metrics"
	version   = 1
	pollCount = 1000
	// maxAge bounds how stale the telemetry view is.
	maxAge = time.Second
)

var logRef = iggy.TopicRef{Stream: logStream, Topic: logTopic}

var logConsumer = icodec.Consumer{
	Kind: icodec.ConsumerKindConsumer,
	ID:   icodec.Identifier{Kind: icodec.IdentifierKindString, Value: []byte("kafka-iggy.client-metrics")},
}

// Op is one change of a subscription: set Key to Value, or remove Key.
type Op struct {
	Key    string `json:"key"`
	Value  string `json:"value,omitempty"`
	Remove bool   `json:"remove,omitempty"`
}

type record struct {
	V    int    `json:"v"`
	Name string `json:"name"`
	Ops  []Op   `json:"ops"`
}

// Store is a sidecar's view of the client metrics subscriptions.
type Store struct {
	client *iggy.Client
	log    zerolog.Logger
	syncMu sync.Mutex

	mu       sync.RWMutex
	subs     map[string]map[string]string // name -> set configs
	gen      uint64                       // bumped by every applied change
	syncedAt time.Time
	tail     iggy.LogFollower

	matchMu  sync.Mutex
	matchGen uint64
	compiled []subscription // the subscriptions of matchGen, parsed
}

// New returns the view of the subscriptions kept in Iggy, read and written
// through client.
func New(client *iggy.Client, log zerolog.Logger) *Store {
	return &Store{client: client, log: log, subs: map[string]map[string]string{}}
}

// Names lists the subscriptions, sorted, after reading the log to its end.
func (s *Store) Names(ctx context.Context) ([]string, error) {
	if err := s.sync(ctx); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]string, 0, len(s.subs))
	for n := range s.subs {
		out = append(out, n)
	}
	sort.Strings(out)
	return out, nil
}

// Configs returns the configs subscription name sets (none for an unknown
// one), after reading the log to its end.
func (s *Store) Configs(ctx context.Context, name string) (map[string]string, error) {
	if err := s.sync(ctx); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make(map[string]string, len(s.subs[name]))
	for k, v := range s.subs[name] {
		out[k] = v
	}
	return out, nil
}

// Alter checks ops against the subscription's configs (Plan) and, unless
// validateOnly, keeps the changes in the log.
func (s *Store) Alter(ctx context.Context, name string, ops []AlterOp, replace, validateOnly bool) (*Problem, error) {
	cur, err := s.Configs(ctx, name)
	if err != nil {
		return nil, err
	}
	changes, _, p := Plan(name, cur, ops, replace)
	if p != nil || validateOnly || len(changes) == 0 {
		return p, nil
	}
	payload, err := json.Marshal(record{V: version, Name: name, Ops: changes})
	if err != nil {
		return nil, err
	}
	if err := s.tail.Append(ctx, s.client, logRef, iggy.NeverExpire(), &s.mu, payload); err != nil {
		return nil, err
	}
	return nil, s.sync(ctx)
}

// apply takes one record into the view (mu held).
func (s *Store) apply(payload []byte) {
	var r record
	if json.Unmarshal(payload, &r) != nil || r.V != version || r.Name == "" {
		return
	}
	cfg := s.subs[r.Name]
	if cfg == nil {
		cfg = map[string]string{}
		s.subs[r.Name] = cfg
	}
	for _, op := range r.Ops {
		if op.Remove {
			delete(cfg, op.Key)
		} else {
			cfg[op.Key] = op.Value
		}
	}
	if len(cfg) == 0 {
		delete(s.subs, r.Name)
	}
	s.gen++
}

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

// fresh reads the log when the view is older than maxAge; a caller that
// finds a read under way goes on with the current view (the first one is
// waited for). A failed read keeps the older view (logged).
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
	if err := s.syncLocked(ctx); err != nil && ctx.Err() == nil {
		s.log.Warn().Err(err).Msg("client metrics subscriptions: read failed; using the last ones read")
	}
}
