package embedded

// Topic option values (reference §6.1) against the generated catalog
// (iggy.TopicOptions): kinds, string parsing (humantime durations, byte
// sizes, choices), bounds, and the explicit/derived blocks of a topic. The
// codec validates the options block's structure (§2.9); the value rules
// with the real 4041/4042 codes live here for now and belong in codec/iggy
// next to the generated catalog.

import (
	"encoding/binary"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

// Option keys the server interprets.
const (
	optCompression      = "compression_algorithm"
	optMessageExpiry    = "message_expiry"
	optMaxTopicSize     = "max_topic_size"
	optSegmentSize      = "segment_size"
	optEnforceFsync     = "enforce_fsync"
	optPreallocate      = "preallocate_segments"
	optDurability       = "durability"                 // released Rust SDK 0.11.0; not in the reference
	optOffsetDurability = "consumer_offset_durability" // released Rust SDK 0.11.0; not in the reference
	durabilityPersisted = "persisted"
	compressionNoneName = "none"
	compressionGzipName = "gzip"
)

// durabilityChoices are the values of the durability keys.
var durabilityChoices = []string{"replicated", durabilityPersisted}

// isDurabilityKey reports whether key is one of the SDK's durability keys,
// which the reference's catalog does not have (Config.SDKDurabilityOptions).
func isDurabilityKey(key string) bool { return key == optDurability || key == optOffsetDurability }

// optionValue is a parsed option value.
type optionValue struct {
	u64 uint64 // numeric and bool (0/1) values, compression code
	str string // a choice, lower-cased
}

// topicOption returns the catalog entry of key when this server serves it:
// in the catalog, in the protocol, and for the durability keys only with
// Config.SDKDurabilityOptions. A durability key missing from the generated
// catalog is served from a local entry.
func (s *Server) topicOption(key string) (*iggy.OptionSpec, bool) {
	spec, ok := iggy.LookupOption(iggy.TopicOptions, key)
	if !ok && isDurabilityKey(key) {
		spec, ok = &iggy.OptionSpec{Key: key, Kind: iggy.HeaderKindString, Parse: iggy.OptionParseChoice, Choices: durabilityChoices}, true
	}
	if !ok || !optionIn(spec, s.proto) || isDurabilityKey(key) && !s.cfg.SDKDurabilityOptions {
		return nil, false
	}
	return spec, true
}

// catalogKeys returns the catalog entries of scope this server serves, in
// catalog order.
func (s *Server) catalog(scope iggy.OptionScope) []*iggy.OptionSpec {
	var out []*iggy.OptionSpec
	cat := iggy.OptionCatalog(scope)
	for i := range cat {
		spec := &cat[i]
		if optionIn(spec, s.proto) && (!isDurabilityKey(spec.Key) || s.cfg.SDKDurabilityOptions) {
			out = append(out, spec)
		}
	}
	return out
}

// optionIn reports whether an option key exists in protocol p.
func optionIn(spec *iggy.OptionSpec, p iggy.ProtocolVersion) bool {
	return (spec.Since == 0 || p >= spec.Since) && (spec.Until == 0 || p < spec.Until)
}

// parseOptionValue interprets one option value for spec. It reports false
// for a wrong kind, an unparsable string or a value out of range (4042).
func parseOptionValue(spec *iggy.OptionSpec, kind iggy.HeaderKind, v []byte) (optionValue, bool) {
	// The codec enforces the value sizes on the wire; this also covers
	// values read back from a snapshot.
	if lo, hi, ok := kind.ValueSize(); !ok || len(v) < lo || len(v) > hi {
		return optionValue{}, false
	}
	if kind != spec.Kind && !slices.Contains(spec.Also, kind) {
		return optionValue{}, false
	}
	var val uint64
	switch kind {
	case iggy.HeaderKindString:
		if !utf8.Valid(v) {
			return optionValue{}, false
		}
		if spec.Parse == iggy.OptionParseChoice {
			c := strings.ToLower(string(v))
			if !slices.Contains(spec.Choices, c) {
				return optionValue{}, false
			}
			return optionValue{str: c}, true
		}
		n, ok := iggy.ParseOptionString(spec, string(v))
		if !ok {
			return optionValue{}, false
		}
		val = n
	case iggy.HeaderKindUint8: // compression code
		if spec.Parse != iggy.OptionParseCompression {
			return optionValue{}, false
		}
		code := iggy.CompressionAlgorithm(v[0])
		if code != iggy.CompressionAlgorithmNone && code != iggy.CompressionAlgorithmGzip {
			return optionValue{}, false
		}
		val = uint64(code)
	case iggy.HeaderKindUint64:
		val = binary.LittleEndian.Uint64(v)
	case iggy.HeaderKindUint32:
		val = uint64(binary.LittleEndian.Uint32(v))
	case iggy.HeaderKindBool:
		if v[0] > 1 {
			return optionValue{}, false
		}
		val = uint64(v[0])
	default:
		return optionValue{}, false
	}
	if !inRange(spec, val) {
		return optionValue{}, false
	}
	return optionValue{u64: val}, true
}

// inRange applies the catalog bounds; zero (when it means the default) and
// the sentinel are always allowed.
func inRange(spec *iggy.OptionSpec, v uint64) bool {
	if v == 0 && spec.ZeroMeansDefault {
		return true
	}
	if spec.HasSentinel && v == spec.Sentinel {
		return true
	}
	if spec.HasMin && v < spec.Min || spec.HasMax && v > spec.Max {
		return false
	}
	return spec.MultipleOf == 0 || v%spec.MultipleOf == 0
}

func compressionName(c iggy.CompressionAlgorithm) string {
	if c == iggy.CompressionAlgorithmGzip {
		return compressionGzipName
	}
	return compressionNoneName
}

// createdTopic is the outcome of resolving CREATE_TOPIC options.
type createdTopic struct {
	explicit, derived iggy.Options
	cfg               topicConfig
}

// resolveCreateOptions checks a CREATE_TOPIC options block against the
// topic catalog and resolves it (§6.1): unknown key 4041, bad value 4042,
// max_topic_size below segment_size 1019, preallocation budget 4042, all on
// the status channel. Sent keys are re-encoded in their canonical kinds into
// the explicit block (a zero that means "default" counts as not sent); the
// other catalog keys get their defaults in the derived block.
func (s *Server) resolveCreateOptions(opts iggy.Options, partitions uint32) (createdTopic, iggy.Status) {
	var out createdTopic
	values := make(map[string]optionValue, len(opts))
	for _, o := range opts {
		spec, ok := s.topicOption(o.Key)
		if !ok {
			return out, iggy.StatusUnsupportedOptionKey
		}
		v, ok := parseOptionValue(spec, o.Kind, o.Value)
		if !ok {
			return out, iggy.StatusInvalidOptionValue
		}
		if spec.ZeroMeansDefault && v.u64 == 0 {
			continue
		}
		values[o.Key] = v
		out.explicit = append(out.explicit, canonicalOption(spec, v))
	}
	for _, spec := range s.catalog(iggy.OptionScopeTopic) {
		if _, sent := values[spec.Key]; !sent {
			out.derived = append(out.derived, iggy.Option{Key: spec.Key, Kind: spec.Kind, Value: append([]byte(nil), spec.Default...)})
		}
	}
	iggy.SortOptions(out.explicit)
	iggy.SortOptions(out.derived)
	cfg, status := s.resolveTopicConfig(out.explicit, out.derived)
	if status != 0 {
		return out, status
	}
	if cfg.maxTopicSize != math.MaxUint64 && cfg.maxTopicSize < cfg.segmentSize {
		return out, iggy.StatusInvalidTopicSize
	}
	if pre, ok := values[optPreallocate]; ok && pre.u64 == 1 &&
		uint64(partitions) > iggy.LimitMaxPreallocatedBytes/max(cfg.segmentSize, 1) {
		return out, iggy.StatusInvalidOptionValue
	}
	out.cfg = cfg
	return out, 0
}

// canonicalOption encodes a parsed value in its key's canonical kind.
func canonicalOption(spec *iggy.OptionSpec, v optionValue) iggy.Option {
	o := iggy.Option{Key: spec.Key, Kind: spec.Kind}
	switch {
	case spec.Parse == iggy.OptionParseChoice:
		o.Value = []byte(v.str)
	case spec.Parse == iggy.OptionParseCompression:
		o.Value = []byte(compressionName(iggy.CompressionAlgorithm(v.u64)))
	case spec.Kind == iggy.HeaderKindUint64:
		o.Value = binary.LittleEndian.AppendUint64(nil, v.u64)
	case spec.Kind == iggy.HeaderKindUint32:
		o.Value = binary.LittleEndian.AppendUint32(nil, uint32(v.u64))
	case spec.Kind == iggy.HeaderKindBool:
		o.Value = []byte{byte(v.u64)}
	}
	return o
}

// resolveTopicConfig computes a topic's effective configuration from its
// blocks (explicit wins over derived). A value that does not parse gives
// 4042; keys this server does not serve are kept but ignored.
func (s *Server) resolveTopicConfig(explicit, derived iggy.Options) (topicConfig, iggy.Status) {
	cfg := topicConfig{
		compression:   iggy.CompressionAlgorithmNone,
		messageExpiry: math.MaxUint64,
		maxTopicSize:  math.MaxUint64,
		segmentSize:   1 << 30,
	}
	apply := func(o iggy.Option) iggy.Status {
		spec, ok := s.topicOption(o.Key)
		if !ok {
			return 0
		}
		v, ok := parseOptionValue(spec, o.Kind, o.Value)
		if !ok {
			return iggy.StatusInvalidOptionValue
		}
		switch o.Key {
		case optCompression:
			cfg.compression = iggy.CompressionAlgorithm(v.u64)
		case optMessageExpiry:
			if v.u64 != 0 {
				cfg.messageExpiry = v.u64
			}
		case optMaxTopicSize:
			if v.u64 != 0 {
				cfg.maxTopicSize = v.u64
			}
		case optSegmentSize:
			if v.u64 != 0 {
				cfg.segmentSize = v.u64
			}
		case optEnforceFsync:
			cfg.enforceFsync = cfg.enforceFsync || v.u64 == 1
			cfg.offsetsFsync = cfg.offsetsFsync || v.u64 == 1
		case optDurability:
			cfg.enforceFsync = cfg.enforceFsync || v.str == durabilityPersisted
		case optOffsetDurability:
			cfg.offsetsFsync = cfg.offsetsFsync || v.str == durabilityPersisted
		}
		return 0
	}
	for _, o := range derived {
		if _, ok := explicit.Get(o.Key); ok {
			continue
		}
		if st := apply(o); st != 0 {
			return cfg, st
		}
	}
	for _, o := range explicit {
		if st := apply(o); st != 0 {
			return cfg, st
		}
	}
	return cfg, 0
}

// checkUpdateKeys applies the pre-execution key check of UPDATE_TOPIC:
// only the updatable catalog keys may appear (else 4041).
func (s *Server) checkUpdateKeys(opts iggy.Options) iggy.Status {
	for _, o := range opts {
		spec, ok := s.topicOption(o.Key)
		if !ok || !spec.Updatable {
			return iggy.StatusUnsupportedOptionKey
		}
	}
	return 0
}

// patchOptions applies an UPDATE_TOPIC block to a topic's blocks: sent
// values are stored verbatim in the explicit block and their keys leave the
// derived block (§6.1).
func patchOptions(explicit, derived, patch iggy.Options) (iggy.Options, iggy.Options) {
	ex := append(iggy.Options(nil), explicit...)
	var de iggy.Options
	for _, p := range patch {
		v := iggy.Option{Key: p.Key, Kind: p.Kind, Value: append([]byte(nil), p.Value...)}
		replaced := false
		for i := range ex {
			if ex[i].Key == p.Key {
				ex[i], replaced = v, true
			}
		}
		if !replaced {
			ex = append(ex, v)
		}
	}
	for _, o := range derived {
		if _, ok := patch.Get(o.Key); !ok {
			de = append(de, o)
		}
	}
	iggy.SortOptions(ex)
	return ex, de
}

// resetOptions moves the keys of defaults out of the explicit block and
// into the derived one with their default values (an UPDATE_RESOURCE reset).
func resetOptions(explicit, derived, defaults iggy.Options) (iggy.Options, iggy.Options) {
	if len(defaults) == 0 {
		return explicit, derived
	}
	var ex iggy.Options
	for _, o := range explicit {
		if _, ok := defaults.Get(o.Key); !ok {
			ex = append(ex, o)
		}
	}
	var de iggy.Options
	for _, o := range derived {
		if _, ok := defaults.Get(o.Key); !ok {
			de = append(de, o)
		}
	}
	de = append(de, defaults...)
	iggy.SortOptions(de)
	return ex, de
}

// describeCatalog lists an option catalog for DESCRIBE_OPTIONS.
func (s *Server) describeCatalog(scope iggy.OptionScope) []iggy.OptionDescriptor {
	var out []iggy.OptionDescriptor
	for _, spec := range s.catalog(scope) {
		out = append(out, iggy.OptionDescriptor{Key: spec.Key, Kind: spec.Kind, Default: spec.Default, Description: spec.Description})
	}
	return out
}
