package bridge

// DescribeConfigs: v0-v4
//
// Behavior:
//   - TOPIC resources: every Kafka config that maps to an Iggy topic option,
//     and every config the gateway holds in its topic-config store in Iggy
//     (cleanup.policy, message.timestamp.type, max.message.bytes,
//     min.insync.replicas, ...: topicconfig/held.go, topicconfig/store.go, read to its end
//     first), sorted by name (topicconfig/catalog.go).
//     Source is DYNAMIC_TOPIC_CONFIG for an option the topic's creator or an
//     alter set, STATIC_BROKER_CONFIG for one holding the gateway's default
//     (topics.default_options, the gateway's "broker config"), DEFAULT_CONFIG
//     otherwise (Iggy's default). ReadOnly is true for configs Iggy
//     fixes at creation (segment.bytes, flush.messages). The topic is read
//     fresh from Iggy. A name Kafka
//     refuses is INVALID_TOPIC_EXCEPTION with Kafka's message; an unknown
//     topic UNKNOWN_TOPIC_OR_PARTITION.
//   - BROKER resources: this gateway's node id lists broker.id, the defaults
//     new topics get under their broker names (log.retention.ms, ...:
//     STATIC_BROKER_CONFIG when topics.default_options sets them,
//     DEFAULT_CONFIG otherwise), num.partitions, default.replication.factor,
//     auto.create.topics.enable, delete.topic.enable and fetch.max.bytes
//     (fetch.max_bytes; DEFAULT_CONFIG at Kafka's 55 MiB), all read-only. The
//     empty name (cluster-wide dynamic defaults) is an empty list, as on a
//     Kafka cluster nobody altered. Another id is INVALID_REQUEST ("Unexpected
//     broker id ..."), a non-numeric name INVALID_REQUEST.
//   - CLIENT_METRICS resources (KIP-714 subscriptions, bridge/clientmetrics,
//     read to the end first): interval.ms, match and metrics, as Kafka 4.4
//     lists them: CLIENT_METRICS_CONFIG when the subscription sets one,
//     DEFAULT_CONFIG (300000, "", "") otherwise, an unknown subscription all
//     defaults; documentation when asked; the empty name INVALID_REQUEST.
//   - Other resource types (BROKER_LOGGER, GROUP, ...) are
//     INVALID_REQUEST "Unsupported resource type".
//   - ConfigNames null or empty lists every config; otherwise only those
//     named (unknown names are skipped), as Kafka filters.
//   - IsSensitive is always false; IsDefault (v0) is true for DEFAULT_CONFIG;
//     synonyms only when IncludeSynonyms (v1+): the topic value when set,
//     the gateway default, then Iggy's default under the broker name;
//     Documentation is null, even with IncludeDocumentation.
//
// Version notes:
//   - v1: IncludeSynonyms; Source and ConfigSynonyms replace IsDefault
//   - v2: ThrottleMillis
//   - v3: IncludeDocumentation; ConfigType and Documentation
//   - v4: flexible
//
// Iggy commands: GET_STREAM (200), GET_TOPIC (300), the store's
// POLL_MESSAGES (100).

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafka-iggy/kafka-iggy/bridge/clientmetrics"
	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
	"github.com/kafka-iggy/kafka-iggy/bridge/topicconfig"
)

// describeConfigsCharge is the row's memory charge (API.FrameCharge): 5
// wire bytes name the broker, whose encoded configs with synonyms are
// ~2,760 bytes (x2 while the reply buffer grows).
const describeConfigsCharge = 1200

func (b *Bridge) describeConfigsAPI() API {
	return API{Key: 32, Name: "DescribeConfigs", MinVersion: 0, MaxVersion: 4, Handle: b.handleDescribeConfigs, FrameCharge: describeConfigsCharge, ErrorCodes: errorCodes(describeConfigsErrorCodes)}
}

func init() { registerAPI((*Bridge).describeConfigsAPI) }

func (b *Bridge) handleDescribeConfigs(ctx context.Context, rq *Request) (kmsg.Response, error) {
	req := rq.Msg.(*kmsg.DescribeConfigsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	synonyms := rq.Version >= 1 && req.IncludeSynonyms

	// A resource named again (Kafka answers every entry, duplicates
	// included) shares the answer built the first time: a request naming
	// the broker 20,000 times holds its configs once, not 20,000 times.
	seen := map[describedKey]int{}
	resp.Resources = make([]kmsg.DescribeConfigsResponseResource, 0, len(req.Resources))
	for i := range req.Resources {
		rr := &req.Resources[i]
		key := describedKey{rr.ResourceType, rr.ResourceName}
		if j, ok := seen[key]; ok && len(rr.ConfigNames) == 0 {
			resp.Resources = append(resp.Resources, resp.Resources[j])
			continue
		}
		r := kmsg.NewDescribeConfigsResponseResource()
		r.ResourceType = rr.ResourceType
		r.ResourceName = rr.ResourceName
		entries, code, msg := b.describeResource(ctx, rr.ResourceType, rr.ResourceName, synonyms)
		r.ErrorCode = code
		if msg != "" || rr.ResourceType == kmsg.ConfigResourceTypeClientMetrics {
			r.ErrorMessage = &msg // Kafka's: empty, not null, for a subscription
		}
		want := map[string]bool{}
		for _, n := range rr.ConfigNames {
			want[n] = true
		}
		for _, e := range entries {
			if len(want) > 0 && !want[e.Name] {
				continue
			}
			c := describeEntry(e)
			if rr.ResourceType == kmsg.ConfigResourceTypeClientMetrics && rq.Version >= 3 && req.IncludeDocumentation {
				c.Documentation = clientmetrics.Doc(e.Name)
			}
			r.Configs = append(r.Configs, c)
		}
		if len(rr.ConfigNames) == 0 {
			seen[key] = len(resp.Resources)
		}
		resp.Resources = append(resp.Resources, r)
	}
	return resp, nil
}

// describedKey names a resource of a DescribeConfigs request.
type describedKey struct {
	typ  kmsg.ConfigResourceType
	name string
}

// describeEntry converts a configEntry to the wire shape.
func describeEntry(e topicconfig.Entry) kmsg.DescribeConfigsResponseResourceConfig {
	c := kmsg.NewDescribeConfigsResponseResourceConfig()
	c.Name = e.Name
	v := e.Value
	c.Value = &v
	c.ReadOnly = e.ReadOnly
	c.IsDefault = e.Source == kmsg.ConfigSourceDefaultConfig
	c.Source = e.Source
	c.IsSensitive = false
	c.ConfigType = e.Type
	for _, s := range e.Synonyms {
		syn := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
		syn.Name = s.Name
		sv := s.Value
		syn.Value = &sv
		syn.Source = s.Source
		c.ConfigSynonyms = append(c.ConfigSynonyms, syn)
	}
	return c
}

// describeResource lists the configs of one resource, or the Kafka error
// code and message that answers it.
func (b *Bridge) describeResource(ctx context.Context, typ kmsg.ConfigResourceType, name string, synonyms bool) ([]topicconfig.Entry, int16, string) {
	switch typ {
	case kmsg.ConfigResourceTypeTopic:
		if msg := topicconfig.NameProblem(name); msg != "" {
			return nil, kerr.InvalidTopicException.Code, msg
		}
		info, err := b.iggy.RefreshTopic(ctx, b.topics.ref(name))
		if err != nil {
			if iggy.IsNotFound(err) {
				return nil, kerr.UnknownTopicOrPartition.Code, ""
			}
			code, msg := b.adminError(name, "describe configs", err)
			return nil, code, msg
		}
		set, err := b.store.Settings(ctx, info)
		if err != nil {
			code, msg := b.adminError(name, "describe configs", err)
			return nil, code, msg
		}
		return topicconfig.TopicEntries(set, info.PartitionsCount, b.brokerDefaults(), synonyms), 0, ""
	case kmsg.ConfigResourceTypeBroker:
		if name == "" {
			return nil, 0, ""
		}
		if code, msg := b.checkBrokerResource(name); code != 0 {
			return nil, code, msg
		}
		self := b.self()
		return topicconfig.BrokerEntries(self.NodeID, self.Rack, b.brokerDefaults(), b.cfg.Topics.AutoCreate, synonyms), 0, ""
	case kmsg.ConfigResourceTypeClientMetrics:
		if name == "" {
			return nil, kerr.InvalidRequest.Code, "Client metrics subscription name must not be empty"
		}
		set, err := b.cmetrics.Configs(ctx, name)
		if err != nil {
			code, msg := b.adminError(name, "describe configs", err)
			return nil, code, msg
		}
		var out []topicconfig.Entry
		for _, d := range clientmetrics.Defs {
			e := topicconfig.Entry{Name: d.Name, Value: d.Default, Source: kmsg.ConfigSourceDefaultConfig, Type: d.Type}
			if v, ok := set[d.Name]; ok {
				e.Value, e.Source = v, kmsg.ConfigSourceClientMetricsConfig
				if synonyms {
					e.Synonyms = []topicconfig.Synonym{{Name: d.Name, Value: v, Source: e.Source}}
				}
			}
			out = append(out, e)
		}
		return out, 0, ""
	}
	return nil, kerr.InvalidRequest.Code, fmt.Sprintf("Unsupported resource type: %s", typ)
}

// describeConfigsErrorCodes walks a DescribeConfigs response for the metrics.
func describeConfigsErrorCodes(r *kmsg.DescribeConfigsResponse, f func(int16)) {
	for _, res := range r.Resources {
		f(res.ErrorCode)
	}
}
