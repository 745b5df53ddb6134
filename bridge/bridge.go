// Package bridge serves Kafka APIs on Iggy.
//
// Rooms: one file per Kafka API (NN_name.go, NN = API key), each opening
// with the versions served, the behaviour and the Iggy commands it uses, and
// registering its Table row (registerAPI); "KAFKA-ON-IGGY §N" in a header is
// section N of docs/KAFKA-ON-IGGY.md, the rules the bridge follows. API
// files are leaves: none uses a name declared in another API file, and no
// floor file uses one declared in an API file (TestAPIFilesAreLeaves
// enforces it).
//
// Floor: what several APIs share. bridge.go, api.go, request.go: the
// Bridge, the Table, the request; topics.go: TopicMapping (the topic-id
// index is bridge/topicids); dataplane.go: partition checks, data-scope errors and
// the Iggy read; commits.go: offsets-scope errors; admin.go: admin errors,
// defaults and the alter loop; errors.go: names for bridge/kafkacode, the
// Iggy-to-Kafka error table;
// internaltopics.go, metrics.go. Below the floor, packages that
// take narrow dependencies, never the Bridge: producer ids and
// idempotence (bridge/producers), committed offsets
// (bridge/offsets), topic configs and the topic-config store in Iggy
// (bridge/topicconfig), the group state machine (bridge/groups, reached
// through groups.Service), the record mapping (codec/records). One Table
// built in New drives dispatch, ApiVersions and the metrics.
package bridge

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/rs/zerolog"

	"github.com/kafka-iggy/kafka-iggy/auth"
	"github.com/kafka-iggy/kafka-iggy/bridge/cgroups"
	"github.com/kafka-iggy/kafka-iggy/bridge/clientmetrics"
	"github.com/kafka-iggy/kafka-iggy/bridge/groups"
	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
	"github.com/kafka-iggy/kafka-iggy/bridge/offsets"
	"github.com/kafka-iggy/kafka-iggy/bridge/producers"
	"github.com/kafka-iggy/kafka-iggy/bridge/quotas"
	"github.com/kafka-iggy/kafka-iggy/bridge/telemetry"
	"github.com/kafka-iggy/kafka-iggy/bridge/topicconfig"
	"github.com/kafka-iggy/kafka-iggy/bridge/topicids"
	"github.com/kafka-iggy/kafka-iggy/bridge/txn"
	"github.com/kafka-iggy/kafka-iggy/bridge/txnoffsets"
	"github.com/kafka-iggy/kafka-iggy/bridge/txnread"
	"github.com/kafka-iggy/kafka-iggy/budget"
	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

// Broker is this instance as Metadata advertises it.
type Broker struct {
	NodeID int32   // broker id (always the same for one instance)
	Host   string  // advertised host (POD_IP in Kubernetes)
	Port   int32   // advertised port
	Rack   *string // optional rack
}

// Options are what New needs.
type Options struct {
	Config  Config       // bridge settings (validated by New)
	Client  *iggy.Client // the Iggy session pool, started by the caller
	Broker  Broker       // this instance as advertised
	Log     zerolog.Logger
	Metrics Metrics // the bridge's measurements (nil: discarded)
	// Groups, when set, wraps the local group coordinator into the
	// service the group APIs call (bridge/cluster's Router: groups owned
	// by other sidecars are forwarded to them). Nil: the local
	// coordinator serves every group, as a single sidecar does.
	Groups func(local *groups.Coordinator) groups.Service
	// ConsumerGroups, when set, wraps the local consumer-protocol
	// coordinator into the service the KIP-848 APIs call (bridge/cluster's
	// Router, as Groups). With Groups set and ConsumerGroups not,
	// ConsumerGroupHeartbeat answers UNSUPPORTED_VERSION.
	ConsumerGroups func(local *cgroups.Coordinator) cgroups.Service
	// Transactions, when set, wraps the local transaction coordinator into
	// the service the transaction APIs call (bridge/cluster's Router, as
	// Groups). Nil: the local coordinator serves every transactional id.
	Transactions func(local *txn.Coordinator) txn.Service
	// TxnOffsets, when set, wraps the local store of pending transactional
	// offsets into the service TxnOffsetCommit and OffsetFetch call
	// (bridge/cluster's Router forwards to the group's owner). Nil: the
	// local store serves every group, persisted in __kafka_iggy/txnoffsets.
	TxnOffsets func(local *txnoffsets.Pending) txnoffsets.Service
	// Budget is the process's memory budget that fetch buffers draw from
	// (nil: unlimited). The front door shares it (proxy.WithBudget).
	Budget *budget.Budget
	Users  *iggy.Users // per-principal Iggy sessions (iggy.NewUsers); nil: all requests run as the client's user
	// Scram is the SCRAM store with its log in Iggy (APIs 50, 51); nil: a
	// store of no credentials, changes kept in Iggy.
	Scram *auth.ScramLog
}

// Bridge holds the Kafka-side state of the sidecar.
type Bridge struct {
	cfg      Config
	log      zerolog.Logger
	iggy     *iggy.Client
	broker   atomic.Pointer[Broker]
	table    *Table
	topics   *topicMap
	topicIDs *topicids.Index // Kafka topic ids -> names (bridge/topicids)
	notify   *notifier
	groups   groups.Service        // consumer groups (bridge/groups, or the cluster router)
	cgroups  cgroups.Service       // consumer-protocol (KIP-848) groups (bridge/cgroups, or the cluster router)
	cgMeta   cgroups.MetadataCache // the topics their heartbeats assign from (dropped by a topic change here)
	// cgroupsServed: consumer-protocol groups are served: by this sidecar
	// alone, or across sidecars by their owners (Options.ConsumerGroups);
	// never by each sidecar of a domain on its own.
	cgroupsServed bool
	offsets       *offsets.Store       // committed offsets in Iggy (bridge/offsets)
	store         *topicconfig.Store   // topic configs and log start offsets in Iggy (bridge/topicconfig)
	quotas        *quotas.Store        // client quotas in Iggy (bridge/quotas)
	cmetrics      *clientmetrics.Store // client metrics subscriptions in Iggy
	pids          *producers.State     // producer ids and idempotence (bridge/producers)
	metrics       Metrics              // error codes, groups, fetch waiters (metrics.go)
	budget        *budget.Budget       // memory budget of fetch buffers (package budget)
	telem         *telemetry.Store     // client metrics (KIP-714); nil when disabled
	users         *iggy.Users          // per-principal Iggy sessions (auth.Bind); nil: the client's user
	scram         *auth.ScramLog       // SCRAM credentials (APIs 50, 51)
	txnReads      *txnread.Tracker     // open and aborted transactions per partition (bridge/txnread)
	txnOffsets    txnoffsets.Service   // pending transactional offsets (bridge/txnoffsets)
	tcoord        *txn.Coordinator     // transaction coordinator of the ids this sidecar owns (bridge/txn)
	txns          *txn.Frontend        // the transaction APIs and the producers' gate

	clusterMu sync.Mutex
	clusterID string // derived from the Iggy cluster on first use
}

// New builds a Bridge and its API table.
func New(o Options) (*Bridge, error) {
	if err := o.Config.Validate(); err != nil {
		return nil, err
	}
	if o.Client == nil {
		return nil, errors.New("bridge: an Iggy client is required")
	}
	b := &Bridge{
		cfg:    o.Config,
		log:    o.Log,
		iggy:   o.Client,
		notify: newNotifier(),
		budget: o.Budget, users: o.Users, scram: o.Scram,
	}
	if b.scram == nil {
		b.scram = auth.NewScramLog(auth.NewScramStore(), o.Client, o.Log)
	}
	broker := o.Broker
	b.broker.Store(&broker)
	b.topics = newTopicMap(o.Config.Topics)
	b.topicIDs = topicids.New(topicids.Deps{Client: b.iggy, Stream: o.Config.Topics.DefaultStream, Overrides: b.topics.override,
		KafkaName: b.topics.kafkaName, Lookup: b.lookupTopic, ID: topicID})
	b.metrics = o.Metrics
	if b.metrics == nil {
		b.metrics = NopMetrics{}
	}
	b.offsets = offsets.New(o.Client, kafkaTopics{b}, o.Config.Offsets.Mode, o.Log)
	b.store = topicconfig.NewStore(o.Client, b.metrics, o.Log)
	b.quotas = quotas.New(o.Client, b.metrics, o.Log)
	b.cmetrics = clientmetrics.New(o.Client, o.Log)
	local := groups.New(o.Config.Groups, o.Log, nil)
	local.SetOffsets(offsetsDeleter{b.offsets})
	clocal := cgroups.New(o.Config.ConsumerGroups, o.Log, nil)
	clocal.SetClassic(local) // live groups migrate between the protocols (bridge/cgroups/classic.go)
	b.groups = cgroups.Mixed{Coordinator: local, C: clocal}
	if o.Groups != nil {
		b.groups = o.Groups(local)
	}
	b.cgroups = cgroups.Local{C: clocal}
	b.cgroupsServed = o.Groups == nil
	if o.ConsumerGroups != nil {
		b.cgroups = o.ConsumerGroups(clocal)
		b.cgroupsServed = true
	}
	pc := o.Config.Producer
	b.pids = producers.New(producers.Config{InstanceID: pc.InstanceID, MaxTrackedProducers: pc.MaxTrackedProducers, RecoveryTailMessages: pc.RecoveryTailMessages},
		producers.Deps{Client: b.iggy, Ref: b.topics.ref, Poll: b.pollTail}, o.Log)
	b.tcoord = txn.New(o.Config.Transactions, txn.Deps{Client: b.iggy, Ref: b.topics.ref, NewProducerID: b.pids.NewID,
		Offsets: b, Wake: b.notify.wake}, o.Log.With().Str("component", "transactions").Logger())
	b.txns = &txn.Frontend{Svc: b.tcoord, Gate: txn.NewGate(pc.MaxTrackedProducers), CheckPartition: b.txnPartition, CheckEvery: o.Config.Transactions.ProducerCheck, Log: o.Log}
	if o.Transactions != nil {
		b.txns.Svc = o.Transactions(b.tcoord)
	}
	if pend := txnoffsets.New(o.Budget); o.TxnOffsets != nil {
		b.txnOffsets = o.TxnOffsets(pend)
	} else { // a lone sidecar: one partition of its own (txnoffsets.Durable)
		b.txnOffsets = txnoffsets.NewDurable(pend, &txnoffsets.IggyStore{Client: b.iggy, Ref: iggy.TopicRef{Stream: txn.DefaultLog.Stream, Topic: "txnoffsets"},
			Partition: func(string) uint32 { return 0 }, Create: true, Partitions: 1}, o.Log)
	}
	b.txnReads = txnread.New(txnread.Config{}, b.pollTail, producers.SequenceOf, o.Budget, o.Log.With().Str("component", "txnread").Logger())
	if o.Config.Telemetry.Enabled {
		b.telem = telemetry.NewStore(o.Config.Telemetry, o.Budget, o.Log.With().Str("component", "telemetry").Logger())
		b.telem.SetSource(b.cmetrics.TelemetrySource)
	}
	t, err := NewTable(b.instrument(b.apis())...)
	if err != nil {
		return nil, err
	}
	b.table = t
	return b, nil
}

// apis builds the row of every Kafka API this bridge serves (one per API
// file, registered with registerAPI): the one list dispatch, ApiVersions and
// the metrics are built from. A row builder returns a row without a
// handler to leave its API out (a feature off by config).
func (b *Bridge) apis() []API {
	out := make([]API, 0, len(apiRows))
	for _, row := range apiRows {
		a := row(b)
		if a.Handle == nil { // a row its config turns off (telemetry)
			continue
		}
		if a.FrameCharge == 0 {
			a.FrameCharge = defaultFrameCharge
		}
		out = append(out, a)
	}
	return out
}

// Telemetry returns the client-metrics store (KIP-714) to register on the
// metrics registry; nil when telemetry.enabled is false.
func (b *Bridge) Telemetry() *telemetry.Store { return b.telem }

// SetBroker changes the advertised address, for callers that learn the bound
// port only after the listener started.
func (b *Bridge) SetBroker(br Broker) { b.broker.Store(&br) }

// identity is the cluster id and node id a client's ApiVersions v5 names
// (the cluster id is "" while Iggy cannot be asked: not checked then).
func (b *Bridge) identity(ctx context.Context) (string, int32) {
	return b.clusterIDFor(ctx), b.self().NodeID
}

// self returns the advertised broker.
func (b *Bridge) self() Broker { return *b.broker.Load() }

// Table returns the dispatch table (it satisfies proxy.Dispatcher).
func (b *Bridge) Table() *Table { return b.table }

// Drain tells the bridge that this instance is going away: JoinGroup and
// SyncGroup requests parked for a rebalance answer NOT_COORDINATOR at once
// (and later ones without waiting), as a Kafka coordinator that resigns
// answers them, so their members look for the coordinator again instead of
// holding the front door's drain until their rebalance timeout. Call it
// before draining the front door; safe to call more than once.
func (b *Bridge) Drain() {
	b.groups.Drain()
}

// Start runs the transaction coordinator's sweep (timeouts, decided
// transactions whose markers are not all written, expiry); Close stops it.
func (b *Bridge) Start() { b.tcoord.Start() }

// Close stops what Start runs.
func (b *Bridge) Close() { b.tcoord.Close() }

// Ready reports whether at least one Iggy session is up.
func (b *Bridge) Ready() bool { return b.iggy.Ready() }

// clusterIDFor returns the cluster id, deriving it once from
// GET_CLUSTER_METADATA; while Iggy cannot be asked it returns "" and tries
// again next time.
func (b *Bridge) clusterIDFor(ctx context.Context) string {
	b.clusterMu.Lock()
	defer b.clusterMu.Unlock()
	if b.clusterID != "" {
		return b.clusterID
	}
	var md icodec.GetClusterMetadataResponse
	if err := b.iggy.Do(iggy.Sidecar(ctx), &icodec.GetClusterMetadataRequest{}, &md); err != nil {
		return ""
	}
	names := make([]string, 0, len(md.Nodes))
	for _, n := range md.Nodes {
		names = append(names, n.Name)
	}
	sort.Strings(names)
	h := sha256.New()
	h.Write([]byte(md.Name))
	for _, n := range names {
		h.Write([]byte{0})
		h.Write([]byte(n))
	}
	b.clusterID = base64.RawURLEncoding.EncodeToString(h.Sum(nil)[:16])
	return b.clusterID
}
