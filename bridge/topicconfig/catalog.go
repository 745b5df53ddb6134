// Package topicconfig serves Kafka topic configs on Iggy: Kafka topic
// configs <-> Iggy topic options (KAFKA-ON-IGGY §1, reference §6.1), and
// the topic-config store in Iggy for what Iggy has no option for.
//
// Files: catalog.go (the configs served, this mapping), convert.go (the
// Kafka <-> Iggy value conversions), options.go (Iggy option values and
// the option Set of a topic), alter.go (planning CreateTopics options and
// alters), entries.go (what DescribeConfigs reports), held.go (the configs
// the gateway holds itself), store.go (the store in Iggy). Everything but
// store.go is pure: the handlers in bridge/ (CreateTopics, DescribeConfigs,
// the alters, CreatePartitions) call Iggy; these files only map and
// validate.
//
// The mapping (topicConfigs, sorted by Kafka name):
//
//	cleanup.policy   <-> (held by the gateway)       compact, delete: retain, never compact
//	compression.type <-> compression_algorithm       none|uncompressed|gzip; a stored label
//	flush.messages   <-> messages_required_to_save   create-only
//	retention.bytes  <-> max_topic_size / partitions Iggy's cap is per topic; -1 = unlimited
//	retention.ms     <-> message_expiry / 1000       µs in Iggy; -1 = never expire
//	max.message.bytes <-> (held by the gateway)      see below
//	segment.bytes    <-> segment_size                create-only
//	message.timestamp.type, min.insync.replicas, segment.ms, ... <-> (held)
//
// Held configs (held.go) have no Iggy option: the gateway checks them
// with Kafka's rules and keeps them in the topic-config store in Iggy
// (store.go), as it keeps max.message.bytes.
//
// max.message.bytes has no Iggy option (Iggy bounds only a frame, 64 MiB),
// so the gateway enforces it on Produce and holds it itself: the broker
// value is topics.max_message_bytes (Kafka's message.max.bytes), and a
// topic's own value, set by CreateTopics or an alter, lives in the
// topic-config store in Iggy (store.go). It goes through the
// same Set as the Iggy options under a key of its own
// (gatewayOptions), which no Iggy request ever carries.
//
// Values are checked locally against the catalog (icodec.TopicOptions) with
// the server's parse rules, so validate_only requests validate everything and
// a refused value names the Kafka key, as Kafka's INVALID_CONFIG messages do.
//
// Default markers. UPDATE_TOPIC stores the bytes it is sent verbatim in the
// topic's explicit block, so "back to the default" must be recognisable when
// the topic is described again. The gateway resets a key by sending the value
// Iggy itself defines as "server default": 0 for message_expiry and
// max_topic_size (ZeroMeansDefault), and for compression_algorithm, which has
// no zero value, the default code in its alternative Uint8 kind. An explicit
// option holding such a marker is reported as DEFAULT_CONFIG, like a derived
// one; Iggy's create path re-encodes values canonically, so a marker never
// arises from a create.
//
// Gateway defaults. topics.default_options play the part of Kafka's static
// broker config: topics the gateway creates get them, a topic option equal
// to one is reported as STATIC_BROKER_CONFIG, and "back to the default"
// (IncrementalAlterConfigs DELETE, keys an AlterConfigs leaves out) means
// back to the gateway's default when it sets the key, else to Iggy's.
package topicconfig

import (
	"encoding/binary"
	"fmt"
	"math"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

// Iggy option keys the mapping names.
const (
	optCompression     = "compression_algorithm"
	optMessageExpiry   = "message_expiry"
	optMaxTopicSize    = "max_topic_size"
	optSegmentSize     = "segment_size"
	optMessagesToSave  = "messages_required_to_save"
	optPreallocate     = "preallocate_segments"
	cleanupPolicyName  = "cleanup.policy"
	cleanupPolicyValue = "delete"

	// optMaxMessageBytes is the gatewayOptions key of max.message.bytes.
	optMaxMessageBytes = "gateway.max_message_bytes"
	// DefaultMaxMessageBytes is Kafka's default message.max.bytes
	// (1 MiB plus the 12 bytes of a batch's log overhead).
	DefaultMaxMessageBytes = 1048588
)

// gatewayOptions are the topic settings the gateway holds itself, in the
// catalog's terms so the option-set logic serves them unchanged: never sent
// to Iggy, always updatable.
var gatewayOptions = []icodec.OptionSpec{{
	Key: optMaxMessageBytes, Kind: icodec.HeaderKindUint32, Unit: "bytes",
	Default: binary.LittleEndian.AppendUint32(nil, DefaultMaxMessageBytes),
	HasMin:  true, HasMax: true, Min: 0, Max: math.MaxInt32,
	Updatable: true,
}}

// isGatewayOption reports whether spec is one of gatewayOptions.
func isGatewayOption(spec *icodec.OptionSpec) bool {
	_, ok := icodec.LookupOption(gatewayOptions, spec.Key)
	return ok
}

// Error is a refused config: the Kafka error code and the message
// Kafka would put next to it.
type Error struct {
	Code int16
	Msg  string
}

func (e *Error) Error() string { return e.Msg }

func invalidConfig(format string, args ...any) *Error {
	return &Error{Code: kerr.InvalidConfig.Code, Msg: fmt.Sprintf(format, args...)}
}

func invalidValue(name, value, reason string) *Error {
	return invalidConfig("Invalid value %s for configuration %s: %s", value, name, reason)
}

// topicConfig is one Kafka topic config the gateway serves.
type topicConfig struct {
	name   string          // Kafka topic config name
	broker string          // broker-level synonym (BROKER resource, DescribeConfigs synonyms)
	option string          // Iggy option key; "" for a config the gateway fixes
	typ    kmsg.ConfigType // DescribeConfigs v3+ type
	// toIggy converts a Kafka value to the Iggy value of option for a topic
	// with partitions partitions; the string is the refusal reason.
	toIggy func(v string, spec *icodec.OptionSpec, partitions uint32) (uint64, string)
	// toKafka converts an Iggy value (never a default marker) back.
	toKafka func(v uint64, partitions uint32) string
}

// topicConfigs is the mapping, sorted by Kafka name (the order
// DescribeConfigs and CreateTopics report configs in).
var topicConfigs = []topicConfig{
	{name: "compression.type", broker: "compression.type", option: optCompression, typ: kmsg.ConfigTypeString,
		toIggy: compressionToIggy, toKafka: compressionToKafka},
	{name: "flush.messages", broker: "log.flush.interval.messages", option: optMessagesToSave, typ: kmsg.ConfigTypeLong,
		toIggy: countToIggy, toKafka: decimalToKafka},
	{name: "max.message.bytes", broker: "message.max.bytes", option: optMaxMessageBytes, typ: kmsg.ConfigTypeInt,
		toIggy: maxMessageBytesToGateway, toKafka: decimalToKafka},
	{name: "retention.bytes", broker: "log.retention.bytes", option: optMaxTopicSize, typ: kmsg.ConfigTypeLong,
		toIggy: retentionBytesToIggy, toKafka: retentionBytesToKafka},
	{name: "retention.ms", broker: "log.retention.ms", option: optMessageExpiry, typ: kmsg.ConfigTypeLong,
		toIggy: retentionMsToIggy, toKafka: retentionMsToKafka},
	{name: "segment.bytes", broker: "log.segment.bytes", option: optSegmentSize, typ: kmsg.ConfigTypeInt,
		toIggy: segmentBytesToIggy, toKafka: decimalToKafka},
}

// init merges the held configs into topicConfigs, sorted by name.
func init() {
	topicConfigs = append(topicConfigs, heldTopicConfigs...)
	sort.Slice(topicConfigs, func(i, j int) bool { return topicConfigs[i].name < topicConfigs[j].name })
}

// kafkaTopicConfigNames are topic configs Kafka knows that the gateway
// does not serve (every other Kafka topic config is mapped or held);
// naming them gives a better message than "unknown".
var kafkaTopicConfigNames = map[string]bool{
	"message.downconversion.enable": true, "message.format.version": true,
	"message.timestamp.difference.max.ms": true,
}

// lookupTopicConfig finds a Kafka topic config of the mapping.
func lookupTopicConfig(name string) (*topicConfig, bool) {
	for i := range topicConfigs {
		if topicConfigs[i].name == name {
			return &topicConfigs[i], true
		}
	}
	return nil, false
}

// unknownConfig is the refusal of a name outside the mapping.
func unknownConfig(name string) *Error {
	if kafkaTopicConfigNames[name] {
		return invalidConfig("Topic config %s is not supported: Iggy has no equivalent", name)
	}
	return invalidConfig("Unknown topic config name: %s", name)
}

// spec returns the catalog entry of c's option (nil for a fixed config or
// an option the catalog lacks).
func (c *topicConfig) spec() *icodec.OptionSpec {
	if c.option == "" {
		return nil
	}
	s, ok := icodec.LookupOption(icodec.TopicOptions, c.option)
	if !ok {
		s, ok = icodec.LookupOption(gatewayOptions, c.option)
	}
	if !ok {
		return nil
	}
	return s
}

// readOnly reports whether c cannot change after creation.
func (c *topicConfig) readOnly() bool {
	s := c.spec()
	return s == nil || !s.Updatable
}
