// Describing configs: the entries DescribeConfigs and CreateTopics
// report for a topic and for the BROKER resource, with their sources and
// synonyms.

package topicconfig

import (
	"sort"
	"strconv"

	"github.com/twmb/franz-go/pkg/kmsg"

	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

// Entry is one config as DescribeConfigs and CreateTopics report it.
type Entry struct {
	Name     string
	Value    string
	Source   kmsg.ConfigSource
	ReadOnly bool
	Type     kmsg.ConfigType
	Synonyms []Synonym
}

// Synonym is one DescribeConfigs synonym, in precedence order.
type Synonym struct {
	Name   string
	Value  string
	Source kmsg.ConfigSource
}

// DefaultFetchMaxBytes is Kafka's default broker fetch.max.bytes (55 MiB).
const DefaultFetchMaxBytes = 55 << 20

// BrokerDefaults are the defaults new topics get: the gateway's default
// options (Kafka's static broker config) over Iggy's catalog defaults
// (Kafka's built-in defaults). Unparsable defaults are skipped here;
// CreateOptions refuses them.
type BrokerDefaults struct {
	set        Set    // catalog defaults with the gateway defaults applied
	partitions uint32 // topics.default_partitions
	// fetchMaxBytes is fetch.max_bytes, listed as the broker's
	// fetch.max.bytes (0: not listed).
	FetchMaxBytes int
}

func NewBrokerDefaults(defaults icodec.Options, partitions, maxMessageBytes int32) BrokerDefaults {
	set := defaultOptionSet()
	for _, o := range defaults {
		_, _ = set.applyOptions(icodec.Options{o})
	}
	if maxMessageBytes != DefaultMaxMessageBytes && maxMessageBytes > 0 {
		spec, _ := icodec.LookupOption(gatewayOptions, optMaxMessageBytes)
		set.set(spec, uint64(maxMessageBytes))
	}
	if partitions < 1 {
		partitions = 1
	}
	return BrokerDefaults{set: set, partitions: uint32(partitions)}
}

// TopicEntries describes a topic's configs: one entry per mapped config,
// sorted by name. Source: DYNAMIC_TOPIC_CONFIG for a key the topic's
// creator or an alter set; STATIC_BROKER_CONFIG for a key set to the
// gateway's default option for it (bd: what topics.default_options gives
// every topic the gateway creates, Kafka's static broker config);
// DEFAULT_CONFIG otherwise (Iggy's default). Create-only and fixed configs
// are read-only. With synonyms, each entry lists, in precedence order, the
// topic's own value (when set), the gateway's default (when configured and
// the topic holds a value) and Iggy's default, the last two under the
// broker-level name.
func TopicEntries(s Set, partitions uint32, bd BrokerDefaults, synonyms bool) []Entry {
	out := make([]Entry, 0, len(topicConfigs))
	for i := range topicConfigs {
		tc := &topicConfigs[i]
		spec := tc.spec()
		if spec == nil && tc.option != "" {
			continue // not in this catalog
		}
		e := Entry{Name: tc.name, Source: kmsg.ConfigSourceDefaultConfig, ReadOnly: tc.readOnly(), Type: tc.typ}
		if hs, ok := heldConfigs[tc.name]; ok {
			e.ReadOnly = false
			e.Value = hs.def
			if v, own := s.held[tc.name]; own {
				e.Value, e.Source = v, kmsg.ConfigSourceDynamicTopicConfig
			}
			if synonyms {
				if e.Source == kmsg.ConfigSourceDynamicTopicConfig {
					e.Synonyms = append(e.Synonyms, Synonym{Name: tc.name, Value: e.Value, Source: e.Source})
				}
				e.Synonyms = append(e.Synonyms, Synonym{Name: tc.broker, Value: hs.def, Source: kmsg.ConfigSourceDefaultConfig})
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
			e.Source = kmsg.ConfigSourceStaticBrokerConfig
		}
		e.Value = tc.toKafka(v, partitions)
		if s.explicit[spec.Key] {
			e.Source = kmsg.ConfigSourceDynamicTopicConfig
			if hasGW && v == gw {
				e.Source = kmsg.ConfigSourceStaticBrokerConfig
			}
		}
		if synonyms {
			if e.Source == kmsg.ConfigSourceDynamicTopicConfig {
				e.Synonyms = append(e.Synonyms, Synonym{Name: tc.name, Value: e.Value, Source: e.Source})
			}
			if hasGW && (s.explicit[spec.Key] || e.Source == kmsg.ConfigSourceStaticBrokerConfig) {
				e.Synonyms = append(e.Synonyms, Synonym{Name: tc.broker, Value: tc.toKafka(gw, partitions), Source: kmsg.ConfigSourceStaticBrokerConfig})
			}
			e.Synonyms = append(e.Synonyms, Synonym{Name: tc.broker, Value: tc.toKafka(catalogDefault(spec), partitions), Source: kmsg.ConfigSourceDefaultConfig})
		}
		out = append(out, e)
	}
	return out
}

// BrokerEntries describes the BROKER resource of this gateway: its id, the
// defaults new topics get under their broker-level names, and the
// gateway's fixed behaviour. All are read-only: they come from the
// gateway's configuration, never from AlterConfigs. Sorted by name. With
// synonyms, each entry lists itself, then Iggy's default under a gateway
// default.
func BrokerEntries(nodeID int32, rack *string, bd BrokerDefaults, autoCreate, synonyms bool) []Entry {
	static, def := kmsg.ConfigSourceStaticBrokerConfig, kmsg.ConfigSourceDefaultConfig
	out := []Entry{
		{Name: "auto.create.topics.enable", Value: strconv.FormatBool(autoCreate), Source: static, Type: kmsg.ConfigTypeBoolean},
		{Name: "broker.id", Value: strconv.Itoa(int(nodeID)), Source: static, Type: kmsg.ConfigTypeInt},
		{Name: "default.replication.factor", Value: "1", Source: def, Type: kmsg.ConfigTypeInt},
		{Name: "delete.topic.enable", Value: "true", Source: def, Type: kmsg.ConfigTypeBoolean},
		{Name: "num.partitions", Value: strconv.FormatUint(uint64(bd.partitions), 10), Source: static, Type: kmsg.ConfigTypeInt},
	}
	if rack != nil {
		out = append(out, Entry{Name: "broker.rack", Value: *rack, Source: static, Type: kmsg.ConfigTypeString})
	}
	if bd.FetchMaxBytes > 0 {
		src := static
		if bd.FetchMaxBytes == DefaultFetchMaxBytes {
			src = def
		}
		out = append(out, Entry{Name: "fetch.max.bytes", Value: strconv.Itoa(bd.FetchMaxBytes), Source: src, Type: kmsg.ConfigTypeInt})
	}
	for i := range out {
		if synonyms {
			out[i].Synonyms = []Synonym{{Name: out[i].Name, Value: out[i].Value, Source: out[i].Source}}
		}
	}
	for i := range topicConfigs {
		tc := &topicConfigs[i]
		spec := tc.spec()
		if spec == nil && tc.option != "" {
			continue // not in this catalog
		}
		hs := heldConfigs[tc.name]
		e := Entry{Name: tc.broker, Value: hs.def, Source: def, Type: tc.typ}
		defVal := hs.def
		if spec != nil {
			e.Value = tc.toKafka(bd.set.vals[spec.Key], bd.partitions)
			defVal = tc.toKafka(catalogDefault(spec), bd.partitions)
			if bd.set.explicit[spec.Key] {
				e.Source = static
			}
		}
		if synonyms {
			e.Synonyms = []Synonym{{Name: e.Name, Value: e.Value, Source: e.Source}}
			if e.Source == static {
				e.Synonyms = append(e.Synonyms, Synonym{Name: e.Name, Value: defVal, Source: def})
			}
		}
		out = append(out, e)
	}
	for i := range out {
		out[i].ReadOnly = true
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
