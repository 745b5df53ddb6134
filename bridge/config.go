package bridge

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"time"

	"github.com/kafka-iggy/kafka-iggy/bridge/telemetry"
	"github.com/kafka-iggy/kafka-iggy/bridge/topicconfig"
	"github.com/kafka-iggy/kafka-iggy/bridge/txn"

	"github.com/kafka-iggy/kafka-iggy/bridge/cgroups"
	"github.com/kafka-iggy/kafka-iggy/bridge/groups"
)

// Config holds the Kafka-semantics settings of the bridge: how Kafka topics
// map to Iggy, how groups and committed offsets behave, and how producer ids
// are allocated. Keys are relative to where the caller mounts the struct.
type Config struct {
	// Topics maps Kafka topics to Iggy streams and topics (KAFKA-ON-IGGY §1).
	Topics TopicsConfig `koanf:"topics"`
	// Groups tunes the classic consumer-group coordinator.
	Groups GroupsConfig `koanf:"groups"`
	// ConsumerGroups tunes the consumer-protocol (KIP-848) coordinator.
	ConsumerGroups ConsumerGroupsConfig `koanf:"consumer_groups"`
	// Offsets says how committed offsets are stored in Iggy (§6).
	Offsets OffsetsConfig `koanf:"offsets"`
	// Producer tunes producer-id allocation and idempotence (§4).
	Producer ProducerConfig `koanf:"producer"`
	// Fetch tunes long polling.
	Fetch FetchConfig `koanf:"fetch"`
	// Telemetry accepts and exports client metrics (KIP-714); off by default.
	Telemetry telemetry.Config `koanf:"telemetry"`
	// Transactions tunes the transaction coordinator (bridge/txn).
	Transactions txn.Config `koanf:"transactions"`
}

// TopicsConfig maps Kafka topics to Iggy.
type TopicsConfig struct {
	// DefaultStream is the Iggy stream that holds every Kafka topic without
	// an override. Default "kafka".
	DefaultStream string `koanf:"default_stream"`
	// Overrides maps a Kafka topic name to "stream/topic" in Iggy.
	// Default empty.
	Overrides map[string]string `koanf:"overrides"`
	// AutoCreate creates a missing topic (and its stream) when a client
	// produces to it or asks for it in Metadata with auto-creation allowed.
	// Default true.
	AutoCreate bool `koanf:"auto_create"`
	// DefaultPartitions is the partition count of auto-created topics and of
	// CreateTopics with -1 partitions. Default 1.
	DefaultPartitions int32 `koanf:"default_partitions"`
	// DefaultOptions are Iggy topic options (key -> value as text, parsed
	// like the server parses String option values) applied to topics the
	// gateway creates. Default empty (the server's defaults).
	DefaultOptions map[string]string `koanf:"default_options"`
	// MaxMessageBytes is the largest record batch, in bytes as the producer
	// sent it (after compression), that a Produce may write to one
	// partition; a larger one is answered MESSAGE_TOO_LARGE. It is Kafka's
	// broker config message.max.bytes, and topics without their own
	// max.message.bytes use it. Default 1048588 (Kafka's default).
	MaxMessageBytes int32 `koanf:"max_message_bytes"`
}

// GroupsConfig tunes the consumer-group coordinator (bridge/groups).
type GroupsConfig = groups.Config

// ConsumerGroupsConfig tunes the consumer-protocol coordinator (bridge/cgroups).
type ConsumerGroupsConfig = cgroups.Config

// OffsetsConfig says where committed offsets live.
type OffsetsConfig struct {
	// Mode is auto, external-group or consumer: auto picks by the protocol
	// generation the Iggy server announces at login, Iggy's ExternalGroup
	// consumer kind where the generation has it and single consumers
	// elsewhere (0.11, Iggy server 0.9.x); external-group on a server
	// that refuses kind 3 fails every commit with UNKNOWN_SERVER_ERROR and
	// one error log line (KAFKA-ON-IGGY §6). Default "auto".
	Mode string `koanf:"mode"`
}

// ProducerConfig tunes producer ids.
type ProducerConfig struct {
	// InstanceID is no longer part of producer ids: they come from blocks
	// leased from Iggy, unique across restarts and sidecars (KAFKA-ON-IGGY
	// §4). Kept so configurations that set it still load; 0..65535, -1
	// derives it from the pod name (HOSTNAME); logged at start. Default -1.
	InstanceID int32 `koanf:"instance_id"`
	// MaxTrackedProducers bounds the memory of idempotence state: the least
	// recently used producers are forgotten first. Default 10000.
	MaxTrackedProducers int `koanf:"max_tracked_producers"`
	// RecoveryTailMessages is how many of a partition's last messages are
	// read to rebuild an idempotent producer's state the sidecar does not
	// hold (after a restart, or a write whose outcome is unknown); a
	// producer whose last write is further back answers
	// UNKNOWN_PRODUCER_ID. 0 keeps producer state in memory only. Default
	// 4096.
	RecoveryTailMessages int `koanf:"recovery_tail_messages"`
}

// FetchConfig tunes long polling.
type FetchConfig struct {
	// RepollInterval is how often a waiting fetch re-polls Iggy for writes
	// made by other producers (local produces wake it at once). Default 50ms.
	RepollInterval time.Duration `koanf:"repoll_interval"`
	// MaxBytes caps every Fetch response, in record bytes, whatever the
	// client asks: Kafka's broker config fetch.max.bytes. The client's
	// MaxBytes and each PartitionMaxBytes apply within it (a partition gets
	// at most what is left of the response), and its MinBytes is lowered
	// to it; the first record batch of the first non-empty partition is
	// returned whole even when larger (KIP-74), so a consumer always makes
	// progress. Like a Kafka broker there is no separate per-partition cap.
	// Default 57671680 (55 MiB, Kafka's default).
	MaxBytes int `koanf:"max_bytes"`
	// SessionCacheSlots bounds the fetch sessions (KIP-227) this sidecar
	// keeps: Kafka's max.incremental.fetch.session.cache.slots. When it is
	// full, a new session takes the slot of one idle for two minutes, or of
	// a smaller one older than that, else is not created (the client keeps
	// sending full fetches). 0 keeps none. Default 1000 (Kafka's).
	SessionCacheSlots int `koanf:"session_cache_slots"`
	// MaxWait caps how long a Fetch waits for data, whatever its
	// max_wait_ms: each waiting fetch holds a worker. Kafka's brokers do
	// not cap it; its clients' request.timeout.ms (30s) bounds what any
	// client waits for. 0 means the default, 30s.
	MaxWait time.Duration `koanf:"max_wait"`
}

// defaultFetchMaxWait is fetch.max_wait's default: Kafka clients'
// request.timeout.ms.
const defaultFetchMaxWait = 30 * time.Second

// DefaultConfig returns the documented defaults.
func DefaultConfig() Config {
	return Config{
		Topics: TopicsConfig{
			DefaultStream:     "kafka",
			AutoCreate:        true,
			DefaultPartitions: 1,
			MaxMessageBytes:   topicconfig.DefaultMaxMessageBytes,
		},
		Groups:         groups.DefaultConfig(),
		ConsumerGroups: cgroups.DefaultConfig(),
		Offsets:        OffsetsConfig{Mode: "auto"},
		Producer:       ProducerConfig{InstanceID: -1, MaxTrackedProducers: 10000, RecoveryTailMessages: 4096},
		Fetch:          FetchConfig{RepollInterval: 50 * time.Millisecond, MaxBytes: topicconfig.DefaultFetchMaxBytes, SessionCacheSlots: 1000, MaxWait: defaultFetchMaxWait},
		Telemetry:      telemetry.DefaultConfig(),
		Transactions:   txn.DefaultConfig(),
	}
}

var overrideRe = regexp.MustCompile(`^[^/]{1,255}/[^/]{1,255}$`)

// Validate reports every problem, each naming its key (relative to the
// bridge's mount point).
func (c Config) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...)))
	}
	if err := c.Telemetry.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := c.Transactions.Validate(); err != nil {
		errs = append(errs, err)
	}
	if n := len(c.Topics.DefaultStream); n < 1 || n > 255 {
		bad("topics.default_stream", "must be 1..255 bytes, got %d", n)
	}
	for k, v := range c.Topics.Overrides {
		if !overrideRe.MatchString(v) {
			bad("topics.overrides."+k, "must be \"stream/topic\", got %q", v)
		}
	}
	if c.Topics.DefaultPartitions < 1 || c.Topics.DefaultPartitions > 1000 {
		bad("topics.default_partitions", "must be 1..1000, got %d", c.Topics.DefaultPartitions)
	}
	if c.Topics.MaxMessageBytes < 1 {
		bad("topics.max_message_bytes", "must be at least 1, got %d", c.Topics.MaxMessageBytes)
	}
	if c.ConsumerGroups.HeartbeatInterval <= 0 || c.ConsumerGroups.SessionTimeout <= c.ConsumerGroups.HeartbeatInterval {
		bad("consumer_groups.heartbeat_interval", "must be positive and below consumer_groups.session_timeout")
	}
	if c.ConsumerGroups.MaxSize < 1 {
		bad("consumer_groups.max_size", "must be at least 1, got %d", c.ConsumerGroups.MaxSize)
	}
	errs = append(errs, c.Groups.Problems()...)
	switch c.Offsets.Mode {
	case "auto", "external-group", "consumer":
	default:
		bad("offsets.mode", "must be auto, external-group or consumer, got %q", c.Offsets.Mode)
	}
	if c.Producer.InstanceID < -1 || c.Producer.InstanceID > 65535 {
		bad("producer.instance_id", "must be -1 (derive) or 0..65535, got %d", c.Producer.InstanceID)
	}
	if c.Producer.MaxTrackedProducers < 1 {
		bad("producer.max_tracked_producers", "must be at least 1")
	}
	if c.Producer.RecoveryTailMessages < 0 || c.Producer.RecoveryTailMessages > 1<<20 {
		bad("producer.recovery_tail_messages", "must be 0 (off) .. 1048576, got %d", c.Producer.RecoveryTailMessages)
	}
	if c.Fetch.RepollInterval <= 0 {
		bad("fetch.repoll_interval", "must be positive")
	}
	if c.Fetch.MaxWait < 0 {
		bad("fetch.max_wait", "must not be negative, got %v", c.Fetch.MaxWait)
	}
	if c.Fetch.MaxBytes < 1 || c.Fetch.MaxBytes > math.MaxInt32 {
		bad("fetch.max_bytes", "must be 1..%d, got %d", math.MaxInt32, c.Fetch.MaxBytes)
	}
	if c.Fetch.SessionCacheSlots < 0 {
		bad("fetch.session_cache_slots", "must be 0 or more, got %d", c.Fetch.SessionCacheSlots)
	}
	return errors.Join(errs...)
}
