package bridge

// Kafka topic configs <-> Iggy topic options (KAFKA-ON-IGGY §1, reference
// §6.1). Everything here is pure: the handlers (19_create_topics.go,
// 32_describe_configs.go, 33_alter_configs.go, 44_incremental_alter_configs.go,
// 37_create_partitions.go) call Iggy; this file only maps and validates.
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
// Held configs (topicheld.go) have no Iggy option: the gateway checks them
// with Kafka's rules and keeps them in the topic-config store in Iggy
// (topicstore.go), as it keeps max.message.bytes.
//
// max.message.bytes has no Iggy option (Iggy bounds only a frame, 64 MiB),
// so the gateway enforces it on Produce and holds it itself: the broker
// value is topics.max_message_bytes (Kafka's message.max.bytes), and a
// topic's own value, set by CreateTopics or an alter, lives in the
// topic-config store in Iggy (topicstore.go). It goes through the
// same optionSet as the Iggy options under a key of its own
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

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

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
	// kafkaDefaultMaxMessageBytes is Kafka's default message.max.bytes
	// (1 MiB plus the 12 bytes of a batch's log overhead).
	kafkaDefaultMaxMessageBytes = 1048588
)

// gatewayOptions are the topic settings the gateway holds itself, in the
// catalog's terms so the option-set logic serves them unchanged: never sent
// to Iggy, always updatable.
var gatewayOptions = []icodec.OptionSpec{{
	Key: optMaxMessageBytes, Kind: icodec.HeaderKindUint32, Unit: "bytes",
	Default: binary.LittleEndian.AppendUint32(nil, kafkaDefaultMaxMessageBytes),
	HasMin:  true, HasMax: true, Min: 0, Max: math.MaxInt32,
	Updatable: true,
}}

// isGatewayOption reports whether spec is one of gatewayOptions.
func isGatewayOption(spec *icodec.OptionSpec) bool {
	_, ok := icodec.LookupOption(gatewayOptions, spec.Key)
	return ok
}

// configError is a refused config: the Kafka error code and the message
// Kafka would put next to it.
type configError struct {
	code int16
	msg  string
}

func (e *configError) Error() string { return e.msg }

func invalidConfig(format string, args ...any) *configError {
	return &configError{code: kerr.InvalidConfig.Code, msg: fmt.Sprintf(format, args...)}
}

func invalidValue(name, value, reason string) *configError {
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

// kafkaTopicConfigNames are topic configs Kafka knows that have no Iggy
// equivalent; naming them gives a better message than "unknown".
var kafkaTopicConfigNames = map[string]bool{
	"delete.retention.ms": true, "file.delete.delay.ms": true, "flush.ms": true,
	"follower.replication.throttled.replicas": true, "index.interval.bytes": true,
	"leader.replication.throttled.replicas": true, "local.retention.bytes": true,
	"local.retention.ms": true, "max.compaction.lag.ms": true,
	"message.downconversion.enable": true, "message.format.version": true,
	"message.timestamp.after.max.ms": true, "message.timestamp.before.max.ms": true,
	"message.timestamp.difference.max.ms": true, "message.timestamp.type": true,
	"min.cleanable.dirty.ratio": true, "min.compaction.lag.ms": true, "min.insync.replicas": true,
	"preallocate": true, "remote.storage.enable": true, "segment.index.bytes": true,
	"segment.jitter.ms": true, "segment.ms": true, "unclean.leader.election.enable": true,
	"compression.gzip.level": true, "compression.lz4.level": true, "compression.zstd.level": true,
	"remote.log.copy.disable": true, "remote.log.delete.on.disable": true,
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
func unknownConfig(name string) *configError {
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

// --- Kafka value conversions ---

// parseKafkaLong parses a Kafka LONG (ConfigDef trims before parsing).
func parseKafkaLong(v string) (int64, bool) {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	return n, err == nil
}

func retentionMsToIggy(v string, _ *icodec.OptionSpec, _ uint32) (uint64, string) {
	n, ok := parseKafkaLong(v)
	switch {
	case !ok:
		return 0, "Not a number of type LONG"
	case n < -1:
		return 0, "Value must be at least -1"
	case n == -1:
		return math.MaxUint64, ""
	case n == 0:
		// Iggy's 0 means "server default" (never expire); 1 µs is the
		// closest to Kafka's "delete at once" and reads back as 0 ms.
		return 1, ""
	case uint64(n) >= (math.MaxUint64-1)/1000:
		return math.MaxUint64, "" // beyond 584,000 years: never
	}
	return uint64(n) * 1000, ""
}

func retentionMsToKafka(v uint64, _ uint32) string {
	if v == math.MaxUint64 {
		return "-1"
	}
	return strconv.FormatUint(v/1000, 10)
}

// perPartition is the divisor of max_topic_size: a topic with no partitions
// (Iggy allows it) counts as one.
func perPartition(partitions uint32) uint64 {
	if partitions == 0 {
		return 1
	}
	return uint64(partitions)
}

func retentionBytesToIggy(v string, _ *icodec.OptionSpec, partitions uint32) (uint64, string) {
	n, ok := parseKafkaLong(v)
	switch {
	case !ok:
		return 0, "Not a number of type LONG"
	case n < -1:
		return 0, "Value must be at least -1"
	case n == -1:
		return math.MaxUint64, ""
	case n == 0:
		return 0, "Iggy cannot keep less than one segment per topic; use at least segment.bytes / partitions"
	}
	hi, lo := bits.Mul64(uint64(n), perPartition(partitions))
	if hi != 0 || lo == math.MaxUint64 {
		return math.MaxUint64, "" // larger than any disk: unlimited
	}
	return lo, ""
}

func retentionBytesToKafka(v uint64, partitions uint32) string {
	if v == math.MaxUint64 {
		return "-1"
	}
	return strconv.FormatUint(v/perPartition(partitions), 10)
}

func segmentBytesToIggy(v string, spec *icodec.OptionSpec, _ uint32) (uint64, string) {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
	if err != nil {
		return 0, "Not a number of type INT"
	}
	if n <= 0 || !inCatalogRange(spec, uint64(n)) {
		return 0, rangeReason(spec)
	}
	return uint64(n), ""
}

// maxMessageBytesToGateway parses max.message.bytes: an INT of at least 0,
// as Kafka's ConfigDef has it.
func maxMessageBytesToGateway(v string, _ *icodec.OptionSpec, _ uint32) (uint64, string) {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
	switch {
	case err != nil:
		return 0, "Not a number of type INT"
	case n < 0:
		return 0, "Value must be at least 0"
	}
	return uint64(n), ""
}

func countToIggy(v string, spec *icodec.OptionSpec, _ uint32) (uint64, string) {
	n, ok := parseKafkaLong(v)
	if !ok {
		return 0, "Not a number of type LONG"
	}
	if n <= 0 || !inCatalogRange(spec, uint64(n)) {
		return 0, rangeReason(spec)
	}
	return uint64(n), ""
}

func decimalToKafka(v uint64, _ uint32) string { return strconv.FormatUint(v, 10) }

func compressionToIggy(v string, _ *icodec.OptionSpec, _ uint32) (uint64, string) {
	switch strings.TrimSpace(v) {
	case "none", "uncompressed":
		return uint64(icodec.CompressionAlgorithmNone), ""
	case "gzip":
		return uint64(icodec.CompressionAlgorithmGzip), ""
	}
	return 0, "Iggy stores only none (uncompressed) or gzip as a topic's compression label"
}

func compressionToKafka(v uint64, _ uint32) string {
	if icodec.CompressionAlgorithm(v) == icodec.CompressionAlgorithmGzip {
		return "gzip"
	}
	return "none"
}

// rangeReason describes the catalog bounds of spec.
func rangeReason(spec *icodec.OptionSpec) string {
	if spec == nil {
		return "not supported"
	}
	var b strings.Builder
	b.WriteString("Iggy ")
	b.WriteString(spec.Key)
	b.WriteString(" must be")
	if spec.MultipleOf > 0 {
		fmt.Fprintf(&b, " a multiple of %d", spec.MultipleOf)
	}
	switch {
	case spec.HasMin && spec.HasMax:
		fmt.Fprintf(&b, " between %d and %d", spec.Min, spec.Max)
	case spec.HasMin:
		fmt.Fprintf(&b, " at least %d", spec.Min)
	case spec.HasMax:
		fmt.Fprintf(&b, " at most %d", spec.Max)
	}
	return b.String()
}

// --- Iggy option values ---

// inCatalogRange applies the catalog bounds of spec to a nonzero,
// non-sentinel value.
func inCatalogRange(spec *icodec.OptionSpec, v uint64) bool {
	if spec == nil {
		return false
	}
	if spec.HasMin && v < spec.Min || spec.HasMax && v > spec.Max {
		return false
	}
	return spec.MultipleOf == 0 || v%spec.MultipleOf == 0
}

// validOptionValue reports whether v is acceptable for spec: zero when it
// means the default, the sentinel, or a value within the bounds.
func validOptionValue(spec *icodec.OptionSpec, v uint64) bool {
	if v == 0 && spec.ZeroMeansDefault {
		return true
	}
	if spec.HasSentinel && v == spec.Sentinel {
		return true
	}
	return inCatalogRange(spec, v)
}

// parseOptionValue interprets an option value of spec sent in kind, with
// the server's rules (§6.1): the canonical kind, or an accepted alternative
// (a String parsed per spec.Parse, a one-byte Uint8 compression code). The
// result is the value in canonical terms (compression as its code; 0 still
// meaning the default where spec.ZeroMeansDefault). Malformed data (a wrong
// length, bad UTF-8) is refused, never trusted.
func parseOptionValue(spec *icodec.OptionSpec, kind icodec.HeaderKind, data []byte) (uint64, bool) {
	if kind != spec.Kind && !kindAccepted(spec, kind) {
		return 0, false
	}
	var v uint64
	switch {
	case kind == icodec.HeaderKindString:
		if !utf8.Valid(data) {
			return 0, false
		}
		n, ok := icodec.ParseOptionString(spec, string(data))
		if !ok {
			return 0, false
		}
		v = n
	case kind == icodec.HeaderKindUint64 && len(data) == 8:
		v = binary.LittleEndian.Uint64(data)
	case kind == icodec.HeaderKindUint32 && len(data) == 4:
		v = uint64(binary.LittleEndian.Uint32(data))
	case (kind == icodec.HeaderKindBool || kind == icodec.HeaderKindUint8) && len(data) == 1:
		v = uint64(data[0])
	default:
		return 0, false
	}
	switch spec.Parse {
	case icodec.OptionParseChoice:
		return v, kind == icodec.HeaderKindString
	case icodec.OptionParseCompression:
		c := icodec.CompressionAlgorithm(v)
		return v, c == icodec.CompressionAlgorithmNone || c == icodec.CompressionAlgorithmGzip
	case icodec.OptionParseBool:
		return v, v <= 1
	}
	return v, validOptionValue(spec, v)
}

func kindAccepted(spec *icodec.OptionSpec, kind icodec.HeaderKind) bool {
	for _, k := range spec.Also {
		if k == kind {
			return true
		}
	}
	return false
}

// encodeOption encodes v (in canonical terms) in spec's canonical kind.
func encodeOption(spec *icodec.OptionSpec, v uint64) icodec.Option {
	o := icodec.Option{Key: spec.Key, Kind: spec.Kind}
	switch spec.Kind {
	case icodec.HeaderKindString:
		if spec.Parse == icodec.OptionParseChoice && v < uint64(len(spec.Choices)) {
			o.Value = []byte(spec.Choices[v])
		} else {
			o.Value = []byte(compressionToKafka(v, 0))
		}
	case icodec.HeaderKindUint64:
		o.Value = binary.LittleEndian.AppendUint64(nil, v)
	case icodec.HeaderKindUint32:
		o.Value = binary.LittleEndian.AppendUint32(nil, uint32(v))
	case icodec.HeaderKindUint8, icodec.HeaderKindBool:
		o.Value = []byte{byte(v)}
	}
	return o
}

// resetOption is the option that puts spec back to its default through
// UPDATE_TOPIC while staying recognisable as "default" (see the file
// comment): 0 where zero means the default, else the default compression
// code in the Uint8 kind.
func resetOption(spec *icodec.OptionSpec) icodec.Option {
	if spec.ZeroMeansDefault {
		return encodeOption(spec, 0)
	}
	if spec.Parse == icodec.OptionParseCompression {
		return icodec.Option{Key: spec.Key, Kind: icodec.HeaderKindUint8, Value: []byte{byte(catalogDefault(spec))}}
	}
	return encodeOption(spec, catalogDefault(spec))
}

// isDefaultMarker reports whether an explicit option holds a reset marker.
func isDefaultMarker(spec *icodec.OptionSpec, o icodec.Option, v uint64) bool {
	if spec.ZeroMeansDefault && v == 0 {
		return true
	}
	return spec.Parse == icodec.OptionParseCompression && o.Kind == icodec.HeaderKindUint8 && v == catalogDefault(spec)
}

// catalogDefault is spec's default in canonical terms.
func catalogDefault(spec *icodec.OptionSpec) uint64 {
	v, ok := parseOptionValue(spec, spec.Kind, spec.Default)
	if !ok {
		return 0
	}
	return v
}

// optionSet is a topic's Iggy options resolved against the catalog: every
// catalog key with its effective value (defaults resolved, never a "use the
// default" zero), and whether it was set explicitly.
type optionSet struct {
	vals     map[string]uint64
	explicit map[string]bool
	held     map[string]string // held configs the topic sets (topicheld.go), by Kafka name
}

// defaultOptionSet holds every catalog key at its default.
func defaultOptionSet() optionSet {
	s := optionSet{vals: make(map[string]uint64, len(icodec.TopicOptions)+len(gatewayOptions)), explicit: map[string]bool{}, held: map[string]string{}}
	for i := range icodec.TopicOptions {
		spec := &icodec.TopicOptions[i]
		s.vals[spec.Key] = catalogDefault(spec)
	}
	for i := range gatewayOptions {
		s.vals[gatewayOptions[i].Key] = catalogDefault(&gatewayOptions[i])
	}
	return s
}

// clone returns an independent copy.
func (s optionSet) clone() optionSet {
	c := optionSet{vals: make(map[string]uint64, len(s.vals)), explicit: make(map[string]bool, len(s.explicit)), held: make(map[string]string, len(s.held))}
	for k, v := range s.held {
		c.held[k] = v
	}
	for k, v := range s.vals {
		c.vals[k] = v
	}
	for k, v := range s.explicit {
		c.explicit[k] = v
	}
	return c
}

// set records v (canonical terms) for spec as explicit; a zero that means
// the default resets the key instead.
func (s optionSet) set(spec *icodec.OptionSpec, v uint64) {
	if v == 0 && spec.ZeroMeansDefault {
		s.reset(spec)
		return
	}
	s.vals[spec.Key] = v
	s.explicit[spec.Key] = true
}

// reset puts spec back to its default.
func (s optionSet) reset(spec *icodec.OptionSpec) {
	s.vals[spec.Key] = catalogDefault(spec)
	delete(s.explicit, spec.Key)
}

// optionSetOf resolves a topic's option blocks (§3.5): derived keys hold
// the defaults the server filled in, explicit keys are set unless they hold
// a default marker. Unknown keys and values that do not parse (written by
// some other client) are ignored: the key reads as its default.
func optionSetOf(explicit, derived icodec.Options) optionSet {
	s := defaultOptionSet()
	for _, o := range derived {
		spec, ok := icodec.LookupOption(icodec.TopicOptions, o.Key)
		if !ok {
			continue
		}
		if v, ok := parseOptionValue(spec, o.Kind, o.Value); ok && !(v == 0 && spec.ZeroMeansDefault) {
			s.vals[spec.Key] = v
		}
	}
	for _, o := range explicit {
		spec, ok := icodec.LookupOption(icodec.TopicOptions, o.Key)
		if !ok {
			continue
		}
		v, ok := parseOptionValue(spec, o.Kind, o.Value)
		if !ok || isDefaultMarker(spec, o, v) {
			continue
		}
		s.set(spec, v)
	}
	return s
}

// applyOptions sets each option of opts (as a client sends them to
// CREATE_TOPIC) on s. It returns the first option Iggy would refuse:
// 4041 for an unknown key, 4042 for a bad value.
func (s optionSet) applyOptions(opts icodec.Options) (icodec.Option, icodec.Status) {
	for _, o := range opts {
		spec, ok := icodec.LookupOption(icodec.TopicOptions, o.Key)
		if !ok {
			return o, icodec.StatusUnsupportedOptionKey
		}
		v, ok := parseOptionValue(spec, o.Kind, o.Value)
		if !ok {
			return o, icodec.StatusInvalidOptionValue
		}
		s.set(spec, v)
	}
	return icodec.Option{}, 0
}

// checkTopicSize applies the cross-key rule of CREATE_TOPIC and
// UPDATE_TOPIC: max_topic_size, unless unlimited, at least segment_size
// (Iggy answers 1019). The refusal names retention.bytes.
func (s optionSet) checkTopicSize(partitions uint32) *configError {
	maxSize, seg := s.vals[optMaxTopicSize], s.vals[optSegmentSize]
	if maxSize != math.MaxUint64 && maxSize < seg {
		return invalidValue("retention.bytes", retentionBytesToKafka(maxSize, partitions),
			fmt.Sprintf("retention.bytes × partitions (%d × %d = %d) must be at least segment.bytes (%d): Iggy's max_topic_size caps the whole topic",
				maxSize/perPartition(partitions), perPartition(partitions), maxSize, seg))
	}
	return nil
}

// checkPreallocation applies CREATE_TOPIC's preallocation budget: with
// preallocate_segments, segment_size × partitions within 64 GiB (4042).
func (s optionSet) checkPreallocation(partitions uint32) *configError {
	seg := s.vals[optSegmentSize]
	if s.vals[optPreallocate] == 1 && seg > 0 && uint64(partitions) > icodec.LimitMaxPreallocatedBytes/seg {
		return invalidConfig("Iggy preallocate_segments needs segment.bytes × partitions (%d × %d) within %d bytes",
			seg, partitions, uint64(icodec.LimitMaxPreallocatedBytes))
	}
	return nil
}

// kafkaConfigValue is one Kafka config as a request names it.
type kafkaConfigValue struct {
	name  string
	value *string
}

// createOptions maps the configs of one CreateTopics topic onto the
// gateway's default options: defaults first (as configured, String values
// the server parses), then each Kafka config in its Iggy option's
// canonical kind (a config named twice: the last wins, as Kafka does). It
// returns the options to send, the resulting set (what the topic will
// hold) and the first refusal, which names its key.
func createOptions(defaults icodec.Options, configs []kafkaConfigValue, partitions uint32) (icodec.Options, optionSet, *configError) {
	set := defaultOptionSet()
	if o, st := set.applyOptions(defaults); st != 0 {
		return nil, set, invalidConfig("Gateway default topic option %s=%s is refused by Iggy (%s)", o.Key, o.Value, st)
	}
	mapped := map[string]icodec.Option{}
	for _, c := range configs {
		if c.value == nil {
			return nil, set, invalidConfig("Null value not supported for topic configs: %s", c.name)
		}
		tc, ok := lookupTopicConfig(c.name)
		if !ok {
			return nil, set, unknownConfig(c.name)
		}
		if hs, ok := heldConfigs[tc.name]; ok {
			v, reason := hs.check(*c.value)
			if reason != "" {
				return nil, set, invalidValue(c.name, *c.value, reason)
			}
			set.held[tc.name] = v
			continue
		}
		spec := tc.spec()
		if spec == nil {
			return nil, set, unknownConfig(c.name)
		}
		v, reason := tc.toIggy(*c.value, spec, partitions)
		if reason != "" {
			return nil, set, invalidValue(c.name, *c.value, reason)
		}
		set.set(spec, v)
		mapped[spec.Key] = encodeOption(spec, v)
	}
	if err := set.checkTopicSize(partitions); err != nil {
		return nil, set, err
	}
	if err := set.checkPreallocation(partitions); err != nil {
		return nil, set, err
	}
	out := make(icodec.Options, 0, len(defaults)+len(mapped))
	for _, o := range defaults {
		if _, over := mapped[o.Key]; !over {
			out = append(out, o)
		}
	}
	for i := range icodec.TopicOptions {
		if o, ok := mapped[icodec.TopicOptions[i].Key]; ok {
			out = append(out, o)
		}
	}
	return out, set, nil
}

// alterOp is one config change of AlterConfigs or IncrementalAlterConfigs.
type alterOp struct {
	name  string
	op    kmsg.IncrementalAlterConfigOp
	value *string
}

// planAlter applies ops to a topic's current options. With replace
// (AlterConfigs, key 33), every updatable key the ops do not name goes back
// to its default, because Kafka's non-incremental alter replaces the whole
// set of dynamic configs. "Its default" is what a Kafka topic without an
// override falls back to: the broker's config, here the gateway's default
// option for the key (bd) when one is configured, else Iggy's default (a
// default marker). A create-only key may be "changed" only to its current
// value (a no-op, so read-modify-write tools keep working); an AlterConfigs
// that omits an explicitly set create-only key keeps it, since Iggy cannot
// reset it. It returns the UPDATE_TOPIC options (only updatable keys), the
// resulting set and the first refusal.
func planAlter(cur optionSet, partitions uint32, ops []alterOp, replace bool, bd brokerDefaults) (icodec.Options, optionSet, *configError) {
	next := cur.clone()
	resetKey := func(spec *icodec.OptionSpec) {
		if bd.set.explicit[spec.Key] && !isGatewayOption(spec) {
			next.set(spec, bd.set.vals[spec.Key])
		} else {
			next.reset(spec)
		}
	}
	touched := map[string]bool{}
	seen := map[string]bool{}
	for _, op := range ops {
		if seen[op.name] {
			return nil, next, &configError{code: kerr.InvalidRequest.Code, msg: "Error due to duplicate config keys"}
		}
		seen[op.name] = true
		tc, ok := lookupTopicConfig(op.name)
		if !ok {
			return nil, next, unknownConfig(op.name)
		}
		if op.value == nil && op.op != kmsg.IncrementalAlterConfigOpDelete {
			return nil, next, &configError{code: kerr.InvalidRequest.Code, msg: "Null value not supported for : " + op.name}
		}
		switch op.op {
		case kmsg.IncrementalAlterConfigOpSet, kmsg.IncrementalAlterConfigOpDelete:
		case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
			if tc.typ != kmsg.ConfigTypeList {
				return nil, next, invalidConfig("Can't %s to key %s because its type is not LIST.", op.op, op.name)
			}
		default:
			return nil, next, &configError{code: kerr.InvalidRequest.Code, msg: fmt.Sprintf("Unknown operations type %d", op.op)}
		}
		if hs, ok := heldConfigs[tc.name]; ok {
			touched[tc.name] = true
			if op.op == kmsg.IncrementalAlterConfigOpDelete {
				delete(next.held, tc.name)
				continue
			}
			v := *op.value
			if op.op != kmsg.IncrementalAlterConfigOpSet {
				v = listOp(next.heldValue(tc.name), v, op.op)
			}
			cv, reason := hs.check(v)
			if reason != "" {
				return nil, next, invalidValue(op.name, v, reason)
			}
			next.held[tc.name] = cv
			continue
		}
		spec := tc.spec()
		if spec == nil {
			return nil, next, unknownConfig(op.name)
		}
		if op.op == kmsg.IncrementalAlterConfigOpDelete {
			if !spec.Updatable {
				if cur.vals[spec.Key] != bd.set.vals[spec.Key] {
					return nil, next, invalidConfig("Cannot delete %s: Iggy sets %s at topic creation only", op.name, spec.Key)
				}
				continue
			}
			resetKey(spec)
			touched[spec.Key] = true
			continue
		}
		v, reason := tc.toIggy(*op.value, spec, partitions)
		if reason != "" {
			return nil, next, invalidValue(op.name, *op.value, reason)
		}
		if !spec.Updatable {
			if v != cur.vals[spec.Key] {
				return nil, next, invalidConfig("Cannot alter %s: Iggy sets %s at topic creation only", op.name, spec.Key)
			}
			continue
		}
		next.set(spec, v)
		touched[spec.Key] = true
	}
	if replace {
		for i := range gatewayOptions {
			if !touched[gatewayOptions[i].Key] {
				next.reset(&gatewayOptions[i])
			}
		}
		for k := range next.held {
			if !touched[k] {
				delete(next.held, k)
			}
		}
	}
	var patch icodec.Options
	for i := range icodec.TopicOptions {
		spec := &icodec.TopicOptions[i]
		if !spec.Updatable || !mappedOption(spec.Key) {
			continue
		}
		if !touched[spec.Key] {
			if !replace {
				continue
			}
			resetKey(spec)
		}
		if next.explicit[spec.Key] {
			patch = append(patch, encodeOption(spec, next.vals[spec.Key]))
		} else {
			patch = append(patch, resetOption(spec))
		}
	}
	if err := next.checkTopicSize(partitions); err != nil {
		return nil, next, err
	}
	return patch, next, nil
}

// mappedOption reports whether an Iggy option has a Kafka name.
func mappedOption(key string) bool {
	for i := range topicConfigs {
		if topicConfigs[i].option == key {
			return true
		}
	}
	return false
}

// configEntry is one config as DescribeConfigs and CreateTopics report it.
type configEntry struct {
	name     string
	value    string
	source   kmsg.ConfigSource
	readOnly bool
	typ      kmsg.ConfigType
	synonyms []configSynonym
}

// configSynonym is one DescribeConfigs synonym, in precedence order.
type configSynonym struct {
	name   string
	value  string
	source kmsg.ConfigSource
}

// brokerDefaults are the defaults new topics get: the gateway's default
// options (Kafka's static broker config) over Iggy's catalog defaults
// (Kafka's built-in defaults). Unparsable defaults are skipped here;
// createOptions refuses them.
type brokerDefaults struct {
	set        optionSet // catalog defaults with the gateway defaults applied
	partitions uint32    // topics.default_partitions
	// fetchMaxBytes is fetch.max_bytes, listed as the broker's
	// fetch.max.bytes (0: not listed).
	fetchMaxBytes int
}

func newBrokerDefaults(defaults icodec.Options, partitions, maxMessageBytes int32) brokerDefaults {
	set := defaultOptionSet()
	for _, o := range defaults {
		_, _ = set.applyOptions(icodec.Options{o})
	}
	if maxMessageBytes != kafkaDefaultMaxMessageBytes && maxMessageBytes > 0 {
		spec, _ := icodec.LookupOption(gatewayOptions, optMaxMessageBytes)
		set.set(spec, uint64(maxMessageBytes))
	}
	if partitions < 1 {
		partitions = 1
	}
	return brokerDefaults{set: set, partitions: uint32(partitions)}
}

// topicEntries describes a topic's configs: one entry per mapped config,
// sorted by name. Source: DYNAMIC_TOPIC_CONFIG for a key the topic's
// creator or an alter set; STATIC_BROKER_CONFIG for a key set to the
// gateway's default option for it (bd: what topics.default_options gives
// every topic the gateway creates, Kafka's static broker config);
// DEFAULT_CONFIG otherwise (Iggy's default). Create-only and fixed configs
// are read-only. With synonyms, each entry lists, in precedence order, the
// topic's own value (when set), the gateway's default (when configured and
// the topic holds a value) and Iggy's default, the last two under the
// broker-level name.
func topicEntries(s optionSet, partitions uint32, bd brokerDefaults, synonyms bool) []configEntry {
	out := make([]configEntry, 0, len(topicConfigs))
	for i := range topicConfigs {
		tc := &topicConfigs[i]
		spec := tc.spec()
		if spec == nil && tc.option != "" {
			continue // not in this catalog
		}
		e := configEntry{name: tc.name, source: kmsg.ConfigSourceDefaultConfig, readOnly: tc.readOnly(), typ: tc.typ}
		if hs, ok := heldConfigs[tc.name]; ok {
			e.readOnly = false
			e.value = hs.def
			if v, own := s.held[tc.name]; own {
				e.value, e.source = v, kmsg.ConfigSourceDynamicTopicConfig
			}
			if synonyms {
				if e.source == kmsg.ConfigSourceDynamicTopicConfig {
					e.synonyms = append(e.synonyms, configSynonym{name: tc.name, value: e.value, source: e.source})
				}
				e.synonyms = append(e.synonyms, configSynonym{name: tc.broker, value: hs.def, source: kmsg.ConfigSourceDefaultConfig})
			}
			out = append(out, e)
			continue
		}
		v := s.vals[spec.Key]
		gw, hasGW := bd.set.vals[spec.Key], bd.set.explicit[spec.Key]
		if hasGW && !s.explicit[spec.Key] && isGatewayOption(spec) {
			// A gateway-held key the topic does not set follows the
			// gateway's value as it is now (Iggy keys got theirs at creation).
			v = gw
			e.source = kmsg.ConfigSourceStaticBrokerConfig
		}
		e.value = tc.toKafka(v, partitions)
		if s.explicit[spec.Key] {
			e.source = kmsg.ConfigSourceDynamicTopicConfig
			if hasGW && v == gw {
				e.source = kmsg.ConfigSourceStaticBrokerConfig
			}
		}
		if synonyms {
			if e.source == kmsg.ConfigSourceDynamicTopicConfig {
				e.synonyms = append(e.synonyms, configSynonym{name: tc.name, value: e.value, source: e.source})
			}
			if hasGW && (s.explicit[spec.Key] || e.source == kmsg.ConfigSourceStaticBrokerConfig) {
				e.synonyms = append(e.synonyms, configSynonym{name: tc.broker, value: tc.toKafka(gw, partitions), source: kmsg.ConfigSourceStaticBrokerConfig})
			}
			e.synonyms = append(e.synonyms, configSynonym{name: tc.broker, value: tc.toKafka(catalogDefault(spec), partitions), source: kmsg.ConfigSourceDefaultConfig})
		}
		out = append(out, e)
	}
	return out
}

// brokerEntries describes the BROKER resource of this gateway: its id, the
// defaults new topics get under their broker-level names, and the
// gateway's fixed behaviour. All are read-only: they come from the
// gateway's configuration, never from AlterConfigs. Sorted by name. With
// synonyms, each entry lists itself, then Iggy's default under a gateway
// default.
func brokerEntries(nodeID int32, rack *string, bd brokerDefaults, autoCreate, synonyms bool) []configEntry {
	static, def := kmsg.ConfigSourceStaticBrokerConfig, kmsg.ConfigSourceDefaultConfig
	out := []configEntry{
		{name: "auto.create.topics.enable", value: strconv.FormatBool(autoCreate), source: static, typ: kmsg.ConfigTypeBoolean},
		{name: "broker.id", value: strconv.Itoa(int(nodeID)), source: static, typ: kmsg.ConfigTypeInt},
		{name: "default.replication.factor", value: "1", source: def, typ: kmsg.ConfigTypeInt},
		{name: "delete.topic.enable", value: "true", source: def, typ: kmsg.ConfigTypeBoolean},
		{name: "num.partitions", value: strconv.FormatUint(uint64(bd.partitions), 10), source: static, typ: kmsg.ConfigTypeInt},
	}
	if rack != nil {
		out = append(out, configEntry{name: "broker.rack", value: *rack, source: static, typ: kmsg.ConfigTypeString})
	}
	if bd.fetchMaxBytes > 0 {
		src := static
		if bd.fetchMaxBytes == kafkaDefaultFetchMaxBytes {
			src = def
		}
		out = append(out, configEntry{name: "fetch.max.bytes", value: strconv.Itoa(bd.fetchMaxBytes), source: src, typ: kmsg.ConfigTypeInt})
	}
	for i := range out {
		if synonyms {
			out[i].synonyms = []configSynonym{{name: out[i].name, value: out[i].value, source: out[i].source}}
		}
	}
	for i := range topicConfigs {
		tc := &topicConfigs[i]
		spec := tc.spec()
		if spec == nil && tc.option != "" {
			continue // not in this catalog
		}
		hs := heldConfigs[tc.name]
		e := configEntry{name: tc.broker, value: hs.def, source: def, typ: tc.typ}
		defVal := hs.def
		if spec != nil {
			e.value = tc.toKafka(bd.set.vals[spec.Key], bd.partitions)
			defVal = tc.toKafka(catalogDefault(spec), bd.partitions)
			if bd.set.explicit[spec.Key] {
				e.source = static
			}
		}
		if synonyms {
			e.synonyms = []configSynonym{{name: e.name, value: e.value, source: e.source}}
			if e.source == static {
				e.synonyms = append(e.synonyms, configSynonym{name: e.name, value: defVal, source: def})
			}
		}
		out = append(out, e)
	}
	for i := range out {
		out[i].readOnly = true
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}
