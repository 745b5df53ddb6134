// Iggy option values as the server reads them (§6.1): parsing, encoding,
// default markers, and the option Set a topic resolves to.

package topicconfig

import (
	"encoding/binary"
	"fmt"
	"math"
	"unicode/utf8"

	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

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
// UPDATE_TOPIC while staying recognisable as "default" (see "Default markers"
// in catalog.go): 0 where zero means the default, else the default compression
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

// Set is a topic's Iggy options resolved against the catalog: every
// catalog key with its effective value (defaults resolved, never a "use the
// default" zero), and whether it was set explicitly.
type Set struct {
	vals     map[string]uint64
	explicit map[string]bool
	held     map[string]string // held configs the topic sets (held.go), by Kafka name
}

// defaultOptionSet holds every catalog key at its default.
func defaultOptionSet() Set {
	s := Set{vals: make(map[string]uint64, len(icodec.TopicOptions)+len(gatewayOptions)), explicit: map[string]bool{}, held: map[string]string{}}
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
func (s Set) clone() Set {
	c := Set{vals: make(map[string]uint64, len(s.vals)), explicit: make(map[string]bool, len(s.explicit)), held: make(map[string]string, len(s.held))}
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
func (s Set) set(spec *icodec.OptionSpec, v uint64) {
	if v == 0 && spec.ZeroMeansDefault {
		s.reset(spec)
		return
	}
	s.vals[spec.Key] = v
	s.explicit[spec.Key] = true
}

// reset puts spec back to its default.
func (s Set) reset(spec *icodec.OptionSpec) {
	s.vals[spec.Key] = catalogDefault(spec)
	delete(s.explicit, spec.Key)
}

// setOf resolves a topic's option blocks (§3.5): derived keys hold
// the defaults the server filled in, explicit keys are set unless they hold
// a default marker. Unknown keys and values that do not parse (written by
// some other client) are ignored: the key reads as its default.
func setOf(explicit, derived icodec.Options) Set {
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
func (s Set) applyOptions(opts icodec.Options) (icodec.Option, icodec.Status) {
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
func (s Set) checkTopicSize(partitions uint32) *Error {
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
func (s Set) checkPreallocation(partitions uint32) *Error {
	seg := s.vals[optSegmentSize]
	if s.vals[optPreallocate] == 1 && seg > 0 && uint64(partitions) > icodec.LimitMaxPreallocatedBytes/seg {
		return invalidConfig("Iggy preallocate_segments needs segment.bytes × partitions (%d × %d) within %d bytes",
			seg, partitions, uint64(icodec.LimitMaxPreallocatedBytes))
	}
	return nil
}
