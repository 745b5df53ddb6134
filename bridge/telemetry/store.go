package telemetry

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"hash/crc32"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kafka-iggy/kafka-iggy/budget"
)

// expiryIntervals is how many push intervals a client instance is kept
// after its last request (Kafka's client instance cache keeps them as
// long); a client that sent its terminating push is dropped one interval
// after it.
const expiryIntervals = 3

// decodeFactor bounds a push payload decompressed, as a multiple of
// MaxBytes.
const decodeFactor = 8

// Store is the client instances of this sidecar and their last pushed
// metrics. It is safe for concurrent use, and is a prometheus.Collector.
type Store struct {
	cfg    Config
	log    zerolog.Logger
	budget *budget.Budget
	def    *plan  // the configured subscription (telemetry.metrics, push_interval)
	source Source // the stored subscriptions; nil: none
	now    func() time.Time

	mu        sync.Mutex
	instances map[[16]byte]*instance
	dropped   uint64 // series dropped by MaxSeriesPerClient
	evicted   uint64 // instances evicted by MaxClients
}

// lastRequest is the time of the instance's last accepted Get or Push
// (zero for neither).
func (in *instance) lastRequest() time.Time {
	if in.lastPush.After(in.lastGet) {
		return in.lastPush
	}
	return in.lastGet
}

// instance is one client instance (one Kafka client object).
type instance struct {
	id         string // client_instance_id label
	lastGet    time.Time
	lastPush   time.Time // zero before the first push
	lastSeen   time.Time // last Get or Push
	terminated bool
	lastErr    int16
	series     []series
	plan       *plan // the subscription of its last Get or Push
}

// Client identifies a client instance to a Source.
type Client struct {
	InstanceID string // the UUID's string form
	ClientID   string // the request header's client id
	Remote     string // the client's address, "ip:port"
	// Software is the client software name and version (ApiVersions v3+).
	Software [2]string
}

// Source returns the metric prefixes and push interval the stored client
// metrics subscriptions ask of a client (its instance id, client id,
// software name and version, and address); ok is false when none is
// stored, and the configured subscription (telemetry.metrics,
// push_interval) applies.
type Source func(ctx context.Context, instanceID, clientID, software, version, remote string) (metrics []string, interval time.Duration, ok bool)

// plan is one subscription a client is given.
type plan struct {
	metrics  []string
	interval time.Duration
	crc      uint32 // CRC-32C of the metrics and interval
}

func newPlan(metrics []string, interval time.Duration) *plan {
	h := crc32.New(crc32.MakeTable(crc32.Castagnoli))
	for _, m := range metrics {
		h.Write([]byte(m))
		h.Write([]byte{0})
	}
	h.Write([]byte(strconv.FormatInt(interval.Milliseconds(), 10)))
	return &plan{metrics: metrics, interval: interval, crc: h.Sum32()}
}

// SetSource makes src decide clients' subscriptions (set before serving).
func (s *Store) SetSource(src Source) { s.source = src }

// planFor is c's subscription now.
func (s *Store) planFor(ctx context.Context, c Client) *plan {
	if s.source == nil {
		return s.def
	}
	m, iv, ok := s.source(ctx, c.InstanceID, c.ClientID, c.Software[0], c.Software[1], c.Remote)
	if !ok {
		return s.def
	}
	return newPlan(m, iv)
}

// interval is in's push interval.
func (s *Store) interval(in *instance) time.Duration {
	if in.plan != nil {
		return in.plan.interval
	}
	return s.def.interval
}

// series is one exported sample.
type series struct {
	desc    *prometheus.Desc
	name    string
	counter bool
	value   float64
}

// NewStore builds the store for cfg (validated by the caller). Decoded
// payloads draw from b (nil: unlimited).
func NewStore(cfg Config, b *budget.Budget, log zerolog.Logger) *Store {
	return &Store{cfg: cfg, log: log, budget: b, def: newPlan(cfg.Metrics, cfg.PushInterval), now: time.Now,
		instances: map[[16]byte]*instance{}}
}

// subscriptionID is instance id's subscription id, as Kafka computes it:
// the CRC-32C of the subscription XORed with the instance id's hash (Java's
// Uuid.hashCode), so every sidecar of the same configuration gives an
// instance the same id and a client that moves between them keeps pushing.
func subscriptionID(p *plan, id [16]byte) int32 {
	h := binary.BigEndian.Uint64(id[:8]) ^ binary.BigEndian.Uint64(id[8:])
	return int32(p.crc) ^ int32(uint32(h>>32)^uint32(h))
}

// subscriptionID is id's subscription id under the configured subscription.
func (s *Store) subscriptionID(id [16]byte) int32 { return subscriptionID(s.def, id) }

// Config returns the configuration the store serves.
func (s *Store) Config() Config { return s.cfg }

// Subscription is the answer to GetTelemetrySubscriptions.
type Subscription struct {
	// ClientInstanceID is the instance's id: the one asked with, or a new
	// one when it asked with the zero id.
	ClientInstanceID [16]byte
	// SubscriptionID identifies the subscribed metrics and interval.
	SubscriptionID int32
	// ErrorCode is 0 or THROTTLING_QUOTA_EXCEEDED.
	ErrorCode int16
	// Metrics are the metric name prefixes asked for ("" : every metric)
	// and PushInterval how often to push.
	Metrics      []string
	PushInterval time.Duration
}

// Subscribe answers a GetTelemetrySubscriptions of id (zero: a client
// without an id yet, which gets a new one) under the configured
// subscription.
func (s *Store) Subscribe(id [16]byte) Subscription {
	return s.SubscribeClient(context.Background(), id, Client{})
}

// SubscribeClient answers a GetTelemetrySubscriptions of id from client c
// (c.InstanceID is filled in here): the subscription the Source gives c,
// else the configured one.
func (s *Store) SubscribeClient(ctx context.Context, id [16]byte, c Client) Subscription {
	if id == ([16]byte{}) {
		id = newInstanceID()
	}
	c.InstanceID = uuidString(id)
	pl := s.planFor(ctx, c)
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expireLocked(now)
	sub := Subscription{ClientInstanceID: id, SubscriptionID: subscriptionID(pl, id), Metrics: pl.metrics, PushInterval: pl.interval}
	in := s.instances[id]
	if in == nil {
		in = s.addLocked(id, now)
	}
	in.lastSeen = now
	in.plan = pl
	if now.Sub(in.lastRequest()) < pl.interval &&
		in.lastErr != kerr.UnknownSubscriptionID.Code && in.lastErr != kerr.UnsupportedCompressionType.Code {
		// Asking again within the interval after its last Get or Push,
		// without an error that calls for a new subscription, is throttled
		// (KIP-714; Kafka 4.4's check throttles after those errors too).
		sub.ErrorCode = kerr.ThrottlingQuotaExceeded.Code
		return sub
	}
	in.lastGet, in.lastErr = now, 0
	return sub
}

// addLocked registers a new instance, evicting the least recently seen
// one when MaxClients are kept.
func (s *Store) addLocked(id [16]byte, now time.Time) *instance {
	if len(s.instances) >= s.cfg.MaxClients {
		var oldest [16]byte
		var at time.Time
		first := true
		for k, in := range s.instances {
			if first || in.lastSeen.Before(at) {
				oldest, at, first = k, in.lastSeen, false
			}
		}
		delete(s.instances, oldest)
		s.evicted++
	}
	in := &instance{id: uuidString(id), lastSeen: now}
	s.instances[id] = in
	return in
}

// expireLocked drops the instances that stopped asking and pushing.
func (s *Store) expireLocked(now time.Time) {
	for k, in := range s.instances {
		ttl := expiryIntervals * s.interval(in)
		if in.terminated {
			ttl = s.interval(in)
		}
		if now.Sub(in.lastSeen) > ttl {
			delete(s.instances, k)
		}
	}
}

// Push is one PushTelemetry request.
type Push struct {
	ClientInstanceID [16]byte
	SubscriptionID   int32
	Terminating      bool
	CompressionType  int8
	Metrics          []byte
	// ClientID is the request header's client id ("" when null); Remote
	// the client's address; Software its software name and version.
	ClientID, Remote string
	Software         [2]string
}

// Push checks and stores a push, returning its Kafka error code (0:
// accepted), checked in Kafka's order: INVALID_REQUEST for the zero
// instance id or a push after the terminating one;
// THROTTLING_QUOTA_EXCEEDED for a non-terminating push sooner than the
// interval after the previous one (the first push after a Get is always
// in time: clients jitter it); UNKNOWN_SUBSCRIPTION_ID for a subscription
// id that is not the instance's (the client asks again);
// UNSUPPORTED_COMPRESSION_TYPE; TELEMETRY_TOO_LARGE; then INVALID_RECORD
// for a payload that does not decode. An instance this store does not
// know (another sidecar's, or one expired) is registered, as Kafka does.
// It waits for the memory budget under ctx.
func (s *Store) Push(ctx context.Context, p Push) int16 {
	if p.ClientInstanceID == ([16]byte{}) {
		return kerr.InvalidRequest.Code
	}
	pl := s.planFor(ctx, Client{InstanceID: uuidString(p.ClientInstanceID), ClientID: p.ClientID, Remote: p.Remote, Software: p.Software})
	now := s.now()
	s.mu.Lock()
	in := s.instances[p.ClientInstanceID]
	if in == nil {
		s.expireLocked(now)
		in = s.addLocked(p.ClientInstanceID, now)
	}
	in.lastSeen = now
	in.plan = pl
	code := s.checkLocked(in, p, now)
	in.lastErr = code
	s.mu.Unlock()
	if code != 0 || len(p.Metrics) == 0 {
		return code
	}

	// An uncompressed payload is decoded in place (its frame is charged
	// already); a compressed one is inflated into bytes taken from the
	// budget first.
	limit := len(p.Metrics)
	if p.CompressionType != compressionNone {
		got, err := s.budget.Acquire(ctx, int64(decodeFactor*s.cfg.MaxBytes))
		if err != nil {
			return kerr.ThrottlingQuotaExceeded.Code
		}
		defer s.budget.Release(got)
		limit = int(got)
	}
	raw, err := decompress(p.CompressionType, p.Metrics, limit)
	if err == errTooLarge {
		return s.setErr(p.ClientInstanceID, kerr.TelemetryTooLarge.Code)
	}
	if err != nil {
		return s.setErr(p.ClientInstanceID, kerr.InvalidRecord.Code)
	}
	out, dropped, err := s.build(raw, pl.metrics, p.ClientID, uuidString(p.ClientInstanceID))
	if err != nil {
		s.log.Debug().Err(err).Str("client_id", p.ClientID).Msg("telemetry push not decoded")
		return s.setErr(p.ClientInstanceID, kerr.InvalidRecord.Code)
	}
	s.mu.Lock()
	if in := s.instances[p.ClientInstanceID]; in != nil {
		in.series = out
	}
	s.dropped += uint64(dropped)
	s.mu.Unlock()
	return 0
}

// checkLocked applies Kafka's push rules in its order; a push that passes
// the interval check counts for the interval even when a later check or
// its payload fails, and a terminating one ends the instance either way.
func (s *Store) checkLocked(in *instance, p Push, now time.Time) int16 {
	if in.terminated {
		return kerr.InvalidRequest.Code
	}
	in.terminated = p.Terminating
	inTime := in.lastGet.After(in.lastPush) || now.Sub(in.lastPush) >= in.plan.interval
	if inTime {
		in.lastPush = now
	}
	switch {
	case !inTime && !p.Terminating:
		return kerr.ThrottlingQuotaExceeded.Code
	case p.SubscriptionID != subscriptionID(in.plan, p.ClientInstanceID):
		return kerr.UnknownSubscriptionID.Code
	case p.CompressionType != compressionNone && !slices.Contains(AcceptedCompression, p.CompressionType):
		return kerr.UnsupportedCompressionType.Code
	case len(p.Metrics) > s.cfg.MaxBytes:
		return kerr.TelemetryTooLarge.Code
	}
	return 0
}

func (s *Store) setErr(id [16]byte, code int16) int16 {
	s.mu.Lock()
	if in := s.instances[id]; in != nil {
		in.lastErr = code
	}
	s.mu.Unlock()
	return code
}

// build decodes raw into the client's series: one per subscribed metric
// and label set (a repeated one: the last wins), at most
// MaxSeriesPerClient, labelled client_id and client_instance_id first.
func (s *Store) build(raw []byte, metrics []string, clientID, instanceID string) ([]series, int, error) {
	var out []series
	index := map[string]int{}
	dropped := 0
	var key strings.Builder
	err := DecodeMetrics(raw, func(p *Point) {
		if !subscribed(metrics, p.Name) {
			return
		}
		name := promName(p.Name)
		if reservedName(name) {
			return
		}
		labels := prometheus.Labels{"client_id": clientID, "client_instance_id": instanceID}
		for _, l := range p.Labels {
			k := promLabel(l.Key)
			if k == "client_id" || k == "client_instance_id" {
				continue
			}
			labels[k] = l.Value
		}
		key.Reset()
		key.WriteString(name)
		keys := make([]string, 0, len(labels))
		for k := range labels {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			key.WriteString("\xff" + k + "\xfe" + labels[k])
		}
		if i, ok := index[key.String()]; ok {
			out[i].value, out[i].counter = p.Value, p.Counter
			return
		}
		if len(out) >= s.cfg.MaxSeriesPerClient {
			dropped++
			return
		}
		index[key.String()] = len(out)
		out = append(out, series{
			desc:    prometheus.NewDesc(name, "Kafka client metric pushed by the client (KIP-714).", nil, labels),
			name:    name,
			counter: p.Counter,
			value:   p.Value,
		})
	})
	return out, dropped, err
}

// subscribed reports whether name is under a subscribed prefix.
func subscribed(metrics []string, name string) bool {
	for _, m := range metrics {
		if strings.HasPrefix(name, m) {
			return true
		}
	}
	return false
}

// promName turns an OTLP metric name into a Prometheus one: every
// character outside [a-zA-Z0-9_:] becomes '_', and a leading digit gets a
// '_' before it.
func promName(n string) string {
	b := []byte(n)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == ':') {
			b[i] = '_'
		}
	}
	if len(b) == 0 || b[0] >= '0' && b[0] <= '9' {
		b = append([]byte{'_'}, b...)
	}
	return string(b)
}

// reservedName reports a name in the sidecar's own namespaces (its series,
// the Go and process collectors', promhttp's): a client's metric never
// takes one, so it cannot clash with the sidecar's series.
func reservedName(name string) bool {
	for _, p := range []string{"kafka_iggy_", "go_", "process_", "promhttp_"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// promLabel is promName for a label name (no ':', and not the reserved
// "__" prefix).
func promLabel(n string) string {
	s := strings.ReplaceAll(promName(n), ":", "_")
	if strings.HasPrefix(s, "__") {
		s = "x" + s
	}
	return s
}

// uuidString formats id as a UUID (8-4-4-4-12 hex digits).
func uuidString(id [16]byte) string {
	const hexd = "0123456789abcdef"
	b := make([]byte, 0, 36)
	for i, c := range id {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			b = append(b, '-')
		}
		b = append(b, hexd[c>>4], hexd[c&15])
	}
	return string(b)
}

func newInstanceID() [16]byte {
	var id [16]byte
	_, _ = rand.Read(id[:])
	id[6] = id[6]&0x0f | 0x40 // version 4
	id[8] = id[8]&0x3f | 0x80 // RFC 4122 variant
	return id
}

// Own series of the store.
var (
	clientsDesc = prometheus.NewDesc("kafka_iggy_telemetry_clients",
		"Client instances whose pushed metrics (KIP-714) this sidecar keeps.", nil, nil)
	droppedDesc = prometheus.NewDesc("kafka_iggy_telemetry_dropped_series_total",
		"Pushed data points dropped by telemetry.max_series_per_client.", nil, nil)
	evictedDesc = prometheus.NewDesc("kafka_iggy_telemetry_evicted_clients_total",
		"Client instances dropped by telemetry.max_clients (least recently seen first).", nil, nil)
)

// Describe sends the store's own descriptors only: the client series are
// unchecked (their names and labels are the clients').
func (s *Store) Describe(ch chan<- *prometheus.Desc) {
	ch <- clientsDesc
	ch <- droppedDesc
	ch <- evictedDesc
}

// Collect expires silent instances and sends every kept series. A metric
// name seen as a counter and as a gauge (from different clients) is sent
// with the kind first sent.
func (s *Store) Collect(ch chan<- prometheus.Metric) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expireLocked(s.now())
	ch <- prometheus.MustNewConstMetric(clientsDesc, prometheus.GaugeValue, float64(len(s.instances)))
	ch <- prometheus.MustNewConstMetric(droppedDesc, prometheus.CounterValue, float64(s.dropped))
	ch <- prometheus.MustNewConstMetric(evictedDesc, prometheus.CounterValue, float64(s.evicted))
	kinds := map[string]bool{}
	for _, in := range s.instances {
		for _, sr := range in.series {
			if c, ok := kinds[sr.name]; ok && c != sr.counter {
				continue
			}
			kinds[sr.name] = sr.counter
			vt := prometheus.GaugeValue
			if sr.counter {
				vt = prometheus.CounterValue
			}
			m, err := prometheus.NewConstMetric(sr.desc, vt, sr.value)
			if err == nil {
				ch <- m
			}
		}
	}
}
