package admin

import (
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
	"github.com/kafka-iggy/kafka-iggy/budget"
	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
	"github.com/kafka-iggy/kafka-iggy/proxy"
)

// namespace prefixes every series of the sidecar.
const namespace = "kafka_iggy"

// Sizes of the lock-free caches on the request path. Keys, versions and
// lanes outside them still count, through the slower labelled lookup.
const (
	numKeys     = int(kmsg.MaxKey) + 1
	numVersions = 32 // above every version kmsg knows for any key
	numOutcomes = 8  // above proxy's outcome count
	numLanes    = 256
)

// Histogram buckets.
var (
	// latencyBuckets: 100µs to 30s, for Kafka requests (a Fetch may wait
	// up to its MaxWaitMillis) and Iggy requests.
	latencyBuckets = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}
	// batchMessageBuckets: messages per Iggy SEND_MESSAGES, 1 to 20000
	// (iggy.max_batch_messages' default).
	batchMessageBuckets = []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000}
	// batchByteBuckets: message bytes per batch, 256 B to 64 MiB.
	batchByteBuckets = prometheus.ExponentialBuckets(256, 4, 10)
	// batchCallerBuckets: Send calls merged into one batch (1 = no
	// coalescing), 1 to 1024.
	batchCallerBuckets = prometheus.ExponentialBuckets(1, 2, 11)
)

// Metrics holds the sidecar's Prometheus registry and every series in it.
// Build it once with NewMetrics and hand its adapters to the components:
// Proxy() to proxy.WithMetrics, Iggy() to iggy.WithMetrics, Bridge() to
// the Kafka handlers. All methods are safe for concurrent use; the adapters
// do not allocate on their hot paths once a label set has been seen.
type Metrics struct {
	reg *prometheus.Registry

	// Kafka front door.
	connOpened prometheus.Counter
	connClosed *prometheus.CounterVec
	connActive prometheus.Gauge
	requests   *prometheus.CounterVec
	reqLatency *prometheus.HistogramVec
	bytesIn    prometheus.Counter
	bytesOut   prometheus.Counter
	apis       [numKeys]atomic.Pointer[apiSeries]

	// Kafka semantics (bridge).
	kafkaErrors  *prometheus.CounterVec
	groups       prometheus.Gauge
	groupMembers prometheus.Gauge
	fetchWaiters prometheus.Gauge
	compactBytes prometheus.Gauge
	fetchSkipped *prometheus.CounterVec
	quotaBytes   *prometheus.CounterVec
	quotaThrottS *prometheus.CounterVec
	quotaThrotN  *prometheus.CounterVec

	// Iggy upstream.
	sessionsUp    prometheus.Gauge
	protocol      *prometheus.GaugeVec
	protocolMu    sync.Mutex
	protocolNow   string
	reconnects    prometheus.Counter
	inFlight      prometheus.Gauge
	laneDepth     *prometheus.GaugeVec
	lanes         [numLanes]atomic.Pointer[prometheus.Gauge]
	batchMessages prometheus.Histogram
	batchBytes    prometheus.Histogram
	batchCallers  prometheus.Histogram
	upRequests    *prometheus.CounterVec
	upLatency     *prometheus.HistogramVec
	ops           sync.Map // op name -> *opSeries

	// Memory budget (limits.memory_bytes), read when scraped.
	budget atomic.Pointer[budget.Budget]

	// Coordination domain and peer link (coordination.go).
	coordination coordinationSeries

	proxyAdapter  proxyMetrics
	iggyAdapter   iggyMetrics
	bridgeAdapter BridgeMetrics

	// series describes every kafka_iggy_* series, in registration order
	// (docs/OPERATIONS.md lists them from it).
	series []seriesDoc
}

// seriesDoc describes one registered series family.
type seriesDoc struct {
	name, kind, help string
	labels           []string
}

// apiSeries caches one Kafka API's series: its latency histogram and its
// request counters by version and outcome, created on first use.
type apiSeries struct {
	name     string
	latency  prometheus.Observer
	counters [numVersions][numOutcomes]atomic.Pointer[prometheus.Counter]
}

// opSeries caches one Iggy command's latency histogram and success counter.
type opSeries struct {
	latency prometheus.Observer
	ok      prometheus.Counter
}

// NewMetrics builds the registry with every series of the sidecar, the Go
// runtime and process collectors, and kafka_iggy_build_info{version}.
func NewMetrics(version string) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	f := factory{reg: m.reg, docs: &m.series}

	m.connOpened = f.counter("connections_opened_total",
		"Kafka client connections accepted (refused ones included: they are opened, then closed).")
	m.connClosed = f.counterVec("connections_closed_total",
		"Kafka client connections closed, by close_reason.", "reason")
	m.connActive = f.gauge("connections_active",
		"Kafka client connections open now.")
	m.requests = f.counterVec("requests_total",
		"Kafka requests served, by API name, API version and outcome (ok, no_response, unsupported_version, decode_error, handler_error, error_code: the response carries a non-zero Kafka error code, named with their count in the debug request log).",
		"api", "version", "outcome")
	m.reqLatency = f.histogramVec("request_duration_seconds",
		"Time from taking a Kafka request off the socket to queueing its reply, by API name.", latencyBuckets, "api")
	m.bytesIn = f.counter("received_bytes_total",
		"Kafka request bytes read from client sockets, size prefixes included.")
	m.bytesOut = f.counter("sent_bytes_total",
		"Kafka response bytes handed to client sockets, size prefixes included.")

	m.kafkaErrors = f.counterVec("errors_total",
		"Kafka error codes returned to clients inside responses, by API name and error name (e.g. UNKNOWN_TOPIC_OR_PARTITION).",
		"api", "error")
	m.groups = f.gauge("groups",
		"Consumer groups the coordinator of this sidecar holds.")
	m.groupMembers = f.gauge("group_members",
		"Members of the consumer groups this sidecar coordinates.")
	m.fetchWaiters = f.gauge("fetch_waiters",
		"Fetch requests waiting for data (long polls) now.")
	m.compactBytes = f.gauge("compact_topic_bytes",
		"Bytes Iggy holds for topics whose cleanup.policy includes compact (kept whole: Iggy never compacts), as of the last measurement (at most every 30 s while the topic-config store is read).")

	m.fetchSkipped = f.counterVec("fetch_skipped_messages_total",
		"Iggy messages Fetch skipped because the Kafka record mapping cannot read them, by reason: consumers step over them without an error (alert on any increase).", "reason")
	m.quotaBytes = f.counterVec("quota_bytes_total",
		"Bytes counted against client byte-rate quotas (Produce requests, Fetch responses), by quota (produce, fetch) and the level of the quota entity that applied (user_client_id, user, client_id); rate() is the byte rate.",
		"quota", "entity")
	m.quotaThrottS = f.counterVec("quota_throttle_seconds_total",
		"Throttle time given to clients over a byte-rate quota (throttle_time_ms, the connection muted), by quota and entity level.",
		"quota", "entity")
	m.quotaThrotN = f.counterVec("quota_throttled_total",
		"Responses that carried a client-quota throttle, by quota and entity level.",
		"quota", "entity")
	for _, q := range []string{"produce", "fetch"} { // every series from the start
		for _, e := range []string{"user_client_id", "user", "client_id"} {
			m.quotaBytes.WithLabelValues(q, e)
			m.quotaThrottS.WithLabelValues(q, e)
			m.quotaThrotN.WithLabelValues(q, e)
		}
	}

	m.sessionsUp = f.gauge("upstream_sessions_up",
		"Iggy sessions logged in now (readiness needs at least one).")
	m.protocol = f.gaugeVec("upstream_protocol_info",
		"1 for the Iggy binary protocol generation the sessions logged in with (protocol=\"0.11\" or \"0.12\"), 0 for the others.", "protocol")
	for _, p := range icodec.Protocols {
		m.protocol.WithLabelValues(p.Label()).Set(0)
	}
	m.reconnects = f.counter("upstream_reconnects_total",
		"Iggy sessions registered again after they were dropped.")
	m.inFlight = f.gauge("upstream_requests_in_flight",
		"Iggy requests on the wire now (at most one per session).")
	m.laneDepth = f.gaugeVec("upstream_lane_queue_depth",
		"Partition writes queued on an Iggy lane (a session that owns a set of partitions), by lane index.", "lane")
	m.batchMessages = f.histogram("upstream_batch_messages",
		"Messages per SEND_MESSAGES batch sent to Iggy.", batchMessageBuckets)
	m.batchBytes = f.histogram("upstream_batch_bytes",
		"Message bytes per SEND_MESSAGES batch sent to Iggy.", batchByteBuckets)
	m.batchCallers = f.histogram("upstream_batch_callers",
		"Kafka produce calls merged into one SEND_MESSAGES batch (1 means not coalesced).", batchCallerBuckets)
	m.upRequests = f.counterVec("upstream_requests_total",
		"Iggy requests finished, by command (e.g. message.send) and result (ok, timeout, the Iggy status name, or error).",
		"op", "result")
	m.upLatency = f.histogramVec("upstream_request_duration_seconds",
		"Time an Iggy request spent on the wire, by command.", latencyBuckets, "op")

	budgetRead := func(fn func(*budget.Budget) float64) func() float64 {
		return func() float64 {
			if b := m.budget.Load(); b != nil {
				return fn(b)
			}
			return 0
		}
	}
	f.gaugeFunc("memory_budget_bytes",
		"The process's memory budget (limits.memory_bytes, derived from the cgroup limit when 0).",
		budgetRead(func(b *budget.Budget) float64 { return float64(b.Total()) }))
	f.gaugeFunc("memory_budget_in_use_bytes",
		"Memory budget held now: request frames (produce frames twice, for their Iggy copy), fetch buffers and reply bytes gnet holds unsent.",
		budgetRead(func(b *budget.Budget) float64 { return float64(b.InUse()) }))
	f.gaugeFunc("memory_budget_peak_bytes",
		"Most memory budget held at once since the start.",
		budgetRead(func(b *budget.Budget) float64 { return float64(b.Peak()) }))
	f.counterFunc("memory_budget_waits_total",
		"Takers that found the memory budget short and waited: a connection that stopped reading until its next frame fit, or a fetch that waited (up to its max_wait) for room.",
		budgetRead(func(b *budget.Budget) float64 { return float64(b.Waits()) }))

	m.coordination.register(f)

	bi := f.gaugeVec("build_info", "Always 1; the version label is the sidecar's build version.", "version")
	bi.WithLabelValues(version).Set(1)

	m.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)

	m.proxyAdapter = proxyMetrics{m}
	m.iggyAdapter = iggyMetrics{m}
	m.bridgeAdapter = BridgeMetrics{m}
	return m
}

// SetBudget makes the memory-budget series report b.
func (m *Metrics) SetBudget(b *budget.Budget) { m.budget.Store(b) }

// Registry is the Prometheus registry /metrics serves. Register further
// collectors on it, if any.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Proxy returns the adapter for proxy.WithMetrics.
func (m *Metrics) Proxy() proxy.Metrics { return &m.proxyAdapter }

// Iggy returns the adapter for iggy.WithMetrics.
func (m *Metrics) Iggy() iggy.Metrics { return &m.iggyAdapter }

// Bridge returns the hooks of the Kafka-semantics layer.
func (m *Metrics) Bridge() *BridgeMetrics { return &m.bridgeAdapter }

// factory creates series under namespace, registers and describes them.
type factory struct {
	reg  *prometheus.Registry
	docs *[]seriesDoc
}

func (f factory) describe(name, kind, help string, labels []string) {
	*f.docs = append(*f.docs, seriesDoc{name: namespace + "_" + name, kind: kind, help: help, labels: labels})
}

func (f factory) counter(name, help string) prometheus.Counter {
	f.describe(name, "counter", help, nil)
	c := prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Name: name, Help: help})
	f.reg.MustRegister(c)
	return c
}

func (f factory) counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	f.describe(name, "counter", help, labels)
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: name, Help: help}, labels)
	f.reg.MustRegister(c)
	return c
}

func (f factory) gauge(name, help string) prometheus.Gauge {
	f.describe(name, "gauge", help, nil)
	g := prometheus.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Name: name, Help: help})
	f.reg.MustRegister(g)
	return g
}

func (f factory) gaugeVec(name, help string, labels ...string) *prometheus.GaugeVec {
	f.describe(name, "gauge", help, labels)
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: namespace, Name: name, Help: help}, labels)
	f.reg.MustRegister(g)
	return g
}

func (f factory) gaugeFunc(name, help string, fn func() float64) {
	f.describe(name, "gauge", help, nil)
	f.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: namespace, Name: name, Help: help}, fn))
}

func (f factory) counterFunc(name, help string, fn func() float64) {
	f.describe(name, "counter", help, nil)
	f.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: namespace, Name: name, Help: help}, fn))
}

func (f factory) histogram(name, help string, buckets []float64) prometheus.Histogram {
	f.describe(name, "histogram", help, nil)
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: namespace, Name: name, Help: help, Buckets: buckets})
	f.reg.MustRegister(h)
	return h
}

func (f factory) histogramVec(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	f.describe(name, "histogram", help, labels)
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Name: name, Help: help, Buckets: buckets}, labels)
	f.reg.MustRegister(h)
	return h
}

// apiName is the api label of a Kafka API key: kmsg's name, or
// "Unknown<key>" for a key kmsg does not know.
func apiName(key int16) string {
	if n := kmsg.NameForKey(key); n != "" && n != "Unknown" {
		return n
	}
	return "Unknown" + strconv.Itoa(int(key))
}

// api returns the cached series of key, creating them on first use; nil for
// a key outside the cache.
func (m *Metrics) api(key int16) *apiSeries {
	if key < 0 || int(key) >= numKeys {
		return nil
	}
	slot := &m.apis[key]
	if s := slot.Load(); s != nil {
		return s
	}
	name := apiName(key)
	s := &apiSeries{name: name, latency: m.reqLatency.WithLabelValues(name)}
	if !slot.CompareAndSwap(nil, s) {
		return slot.Load()
	}
	return s
}

// request records one Kafka request (the proxy hook).
func (m *Metrics) request(key, version int16, latency time.Duration, outcome proxy.Outcome) {
	s := m.api(key)
	if s == nil || version < 0 || int(version) >= numVersions || int(outcome) >= numOutcomes {
		name := apiName(key)
		m.requests.WithLabelValues(name, strconv.Itoa(int(version)), outcome.String()).Inc()
		m.reqLatency.WithLabelValues(name).Observe(latency.Seconds())
		return
	}
	slot := &s.counters[version][outcome]
	c := slot.Load()
	if c == nil {
		nc := m.requests.WithLabelValues(s.name, strconv.Itoa(int(version)), outcome.String())
		slot.CompareAndSwap(nil, &nc)
		c = slot.Load()
	}
	(*c).Inc()
	s.latency.Observe(latency.Seconds())
}

// proxyMetrics implements proxy.Metrics.
type proxyMetrics struct{ m *Metrics }

var _ proxy.Metrics = (*proxyMetrics)(nil)

// ConnOpened counts an accepted connection.
func (p *proxyMetrics) ConnOpened() {
	p.m.connOpened.Inc()
	p.m.connActive.Inc()
}

// ConnClosed counts a closed connection by reason.
func (p *proxyMetrics) ConnClosed(reason proxy.CloseReason) {
	p.m.connClosed.WithLabelValues(reason.String()).Inc()
	p.m.connActive.Dec()
}

// Request records one served request.
func (p *proxyMetrics) Request(key, version int16, latency time.Duration, outcome proxy.Outcome) {
	p.m.request(key, version, latency, outcome)
}

// BytesIn counts request bytes.
func (p *proxyMetrics) BytesIn(n int) { p.m.bytesIn.Add(float64(n)) }

// BytesOut counts response bytes.
func (p *proxyMetrics) BytesOut(n int) { p.m.bytesOut.Add(float64(n)) }

// iggyMetrics implements iggy.Metrics.
type iggyMetrics struct{ m *Metrics }

var _ iggy.Metrics = (*iggyMetrics)(nil)

// SessionsUp sets the number of logged-in sessions.
func (i *iggyMetrics) SessionsUp(n int) { i.m.sessionsUp.Set(float64(n)) }

// Protocol marks the protocol generation the sessions speak now.
func (i *iggyMetrics) Protocol(label string) {
	i.m.protocolMu.Lock()
	defer i.m.protocolMu.Unlock()
	if i.m.protocolNow != "" && i.m.protocolNow != label {
		i.m.protocol.WithLabelValues(i.m.protocolNow).Set(0)
	}
	i.m.protocolNow = label
	i.m.protocol.WithLabelValues(label).Set(1)
}

// Reconnect counts a session registered again.
func (i *iggyMetrics) Reconnect() { i.m.reconnects.Inc() }

// InFlight sets the number of requests on the wire.
func (i *iggyMetrics) InFlight(n int) { i.m.inFlight.Set(float64(n)) }

// QueueDepth sets the queue depth of one lane.
func (i *iggyMetrics) QueueDepth(lane, depth int) {
	if lane < 0 || lane >= numLanes {
		i.m.laneDepth.WithLabelValues(strconv.Itoa(lane)).Set(float64(depth))
		return
	}
	slot := &i.m.lanes[lane]
	g := slot.Load()
	if g == nil {
		ng := i.m.laneDepth.WithLabelValues(strconv.Itoa(lane))
		slot.CompareAndSwap(nil, &ng)
		g = slot.Load()
	}
	(*g).Set(float64(depth))
}

// Batch records one SEND_MESSAGES batch.
func (i *iggyMetrics) Batch(messages, bytes, callers int) {
	i.m.batchMessages.Observe(float64(messages))
	i.m.batchBytes.Observe(float64(bytes))
	i.m.batchCallers.Observe(float64(callers))
}

// Request records one finished Iggy request.
func (i *iggyMetrics) Request(op string, latency time.Duration, err error) {
	v, ok := i.m.ops.Load(op)
	if !ok {
		v, _ = i.m.ops.LoadOrStore(op, &opSeries{
			latency: i.m.upLatency.WithLabelValues(op),
			ok:      i.m.upRequests.WithLabelValues(op, "ok"),
		})
	}
	s := v.(*opSeries)
	s.latency.Observe(latency.Seconds())
	if err == nil {
		s.ok.Inc()
		return
	}
	i.m.upRequests.WithLabelValues(op, upstreamResult(err)).Inc()
}

// upstreamResult is the result label of a failed Iggy request.
func upstreamResult(err error) string {
	var st icodec.Status
	switch {
	case errors.As(err, &st):
		return st.Name()
	case iggy.IsTimeout(err):
		return "timeout"
	}
	return "error"
}

// BridgeMetrics are the hooks of the Kafka-semantics layer: error codes
// put into responses, consumer groups, waiting fetches. Safe for
// concurrent use.
type BridgeMetrics struct{ m *Metrics }

// KafkaError counts an error code returned to a client inside a response
// of API key (one per topic-partition or group that carries it). Code 0
// (no error) is ignored.
func (b *BridgeMetrics) KafkaError(key, code int16) {
	if code == 0 {
		return
	}
	name := "UNKNOWN_" + strconv.Itoa(int(code))
	if e := kerr.TypedErrorForCode(code); e != nil && (e.Code == code) {
		name = e.Message
	}
	b.m.kafkaErrors.WithLabelValues(apiName(key), name).Inc()
}

// SetGroups sets the number of consumer groups held by this sidecar's
// coordinator.
func (b *BridgeMetrics) SetGroups(n int) { b.m.groups.Set(float64(n)) }

// SetGroupMembers sets the number of members of those groups.
func (b *BridgeMetrics) SetGroupMembers(n int) { b.m.groupMembers.Set(float64(n)) }

// AddFetchWaiters adds delta (+1 when a fetch starts waiting, -1 when it
// stops) to the number of waiting fetches.
func (b *BridgeMetrics) AddFetchWaiters(delta int) { b.m.fetchWaiters.Add(float64(delta)) }

// SetCompactBytes sets the bytes held by compact topics.
func (b *BridgeMetrics) SetCompactBytes(n int64) { b.m.compactBytes.Set(float64(n)) }

// FetchSkipped counts a message Fetch skipped (bridge.FetchSkipMetrics).
func (b *BridgeMetrics) FetchSkipped(reason string) { b.m.fetchSkipped.WithLabelValues(reason).Inc() }

// QuotaBytes counts bytes against a client quota.
func (b *BridgeMetrics) QuotaBytes(kind, level string, n int) {
	b.m.quotaBytes.WithLabelValues(kind, level).Add(float64(n))
}

// QuotaThrottle counts one client-quota throttle of ms milliseconds.
func (b *BridgeMetrics) QuotaThrottle(kind, level string, ms int64) {
	b.m.quotaThrottS.WithLabelValues(kind, level).Add(float64(ms) / 1000)
	b.m.quotaThrotN.WithLabelValues(kind, level).Inc()
}
