package bridge

import (
	"context"
	"crypto/sha256"
	"errors"
	"sort"
	"strings"

	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

// topicMap is the TopicMapping of KAFKA-ON-IGGY §1: Kafka topic T is Iggy
// topic T in the default stream unless an override maps it elsewhere. The
// mapping is fixed at start-up, so it needs no lock.
type topicMap struct {
	cfg      TopicsConfig
	override map[string]iggy.TopicRef // Kafka name -> Iggy stream/topic
	reverse  map[iggy.TopicRef]string // Iggy stream/topic -> Kafka name (overrides)
	opts     icodec.Options           // default options for topics the gateway creates
}

func newTopicMap(cfg TopicsConfig) *topicMap {
	m := &topicMap{cfg: cfg, override: map[string]iggy.TopicRef{}, reverse: map[iggy.TopicRef]string{}}
	for k, v := range cfg.Overrides {
		stream, topic, _ := strings.Cut(v, "/")
		ref := iggy.TopicRef{Stream: stream, Topic: topic}
		m.override[k] = ref
		m.reverse[ref] = k
	}
	keys := make([]string, 0, len(cfg.DefaultOptions))
	for k := range cfg.DefaultOptions {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		m.opts = append(m.opts, icodec.Option{Key: k, Kind: icodec.HeaderKindString, Value: []byte(cfg.DefaultOptions[k])})
	}
	return m
}

// ref returns the Iggy stream/topic that holds Kafka topic name.
func (m *topicMap) ref(name string) iggy.TopicRef {
	if r, ok := m.override[name]; ok {
		return r
	}
	return iggy.TopicRef{Stream: m.cfg.DefaultStream, Topic: name}
}

// kafkaName returns the Kafka name of an Iggy topic, or false when no Kafka
// topic maps to it (an Iggy topic of the default stream that an override
// moved elsewhere is hidden: its Kafka name points to the override).
func (m *topicMap) kafkaName(ref iggy.TopicRef) (string, bool) {
	if n, ok := m.reverse[ref]; ok {
		return n, true
	}
	if ref.Stream != m.cfg.DefaultStream {
		return "", false
	}
	if _, moved := m.override[ref.Topic]; moved {
		return "", false
	}
	return ref.Topic, validTopicName(ref.Topic) == nil
}

// errInvalidTopic is returned for names Kafka refuses.
var errInvalidTopic = errors.New("bridge: invalid topic name")

// validTopicName applies Kafka's topic-name rules: 1..249 characters of
// [a-zA-Z0-9._-], not "." or "..".
func validTopicName(name string) error {
	if name == "" || len(name) > 249 || name == "." || name == ".." {
		return errInvalidTopic
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return errInvalidTopic
		}
	}
	return nil
}

// lookupTopic returns the Iggy topic of a Kafka topic (cached by the client).
func (b *Bridge) lookupTopic(ctx context.Context, name string) (*iggy.TopicInfo, error) {
	return b.iggy.GetTopic(ctx, b.topics.ref(name))
}

// ensureTopic returns the topic, creating its stream and the topic with
// partitions partitions (and the configured default options) when it does
// not exist. It is idempotent: a concurrent creator wins and its topic is
// returned, whatever its partition count (KAFKA-ON-IGGY §1).
func (b *Bridge) ensureTopic(ctx context.Context, name string, partitions int32) (*iggy.TopicInfo, error) {
	ref := b.topics.ref(name)
	info, err := b.iggy.GetTopic(ctx, ref)
	if err == nil || !iggy.IsNotFound(err) {
		return info, err
	}
	if partitions <= 0 {
		partitions = b.cfg.Topics.DefaultPartitions
	}
	info, err = b.createIggyTopic(ctx, ref, uint32(partitions), b.topics.opts)
	if errors.Is(err, icodec.StatusTopicNameAlreadyExists) {
		return b.iggy.RefreshTopic(ctx, ref)
	}
	if err == nil {
		b.log.Info().Str("topic", name).Str("iggy_stream", ref.Stream).Int32("partitions", partitions).Msg("created topic")
	}
	return info, err
}

// createIggyTopic creates Iggy topic ref, and its stream first unless the
// client knows it exists (no CREATE_STREAM per topic): when the stream
// turns out to be gone (an operator deleted it), it is created and the
// topic tried once more.
func (b *Bridge) createIggyTopic(ctx context.Context, ref iggy.TopicRef, partitions uint32, opts icodec.Options) (*iggy.TopicInfo, error) {
	if _, err := b.iggy.EnsureStream(ctx, ref.Stream); err != nil {
		return nil, err
	}
	info, err := b.iggy.CreateTopic(ctx, ref, partitions, opts)
	if err != nil && iggy.StreamMissing(err) {
		if _, err := b.iggy.EnsureStream(ctx, ref.Stream); err != nil {
			return nil, err
		}
		info, err = b.iggy.CreateTopic(ctx, ref, partitions, opts)
	}
	b.cgMeta.Invalidate() // consumer-protocol heartbeats see the new topic
	return info, err
}

// listTopics returns every Kafka topic: the topics of the default stream
// and the overrides that exist, sorted by name.
func (b *Bridge) listTopics(ctx context.Context) ([]string, error) {
	seen := map[string]bool{}
	var out []string
	var resp icodec.GetTopicsResponse
	req := icodec.GetTopicsRequest{StreamID: iggy.TopicRef{Stream: b.cfg.Topics.DefaultStream}.StreamID()}
	switch err := b.iggy.Do(ctx, &req, &resp); {
	case err == nil:
		for _, t := range resp.Topics {
			if n, ok := b.topics.kafkaName(iggy.TopicRef{Stream: b.cfg.Topics.DefaultStream, Topic: t.Name}); ok && !seen[n] {
				seen[n] = true
				out = append(out, n)
			}
		}
	case iggy.IsNotFound(err):
	default:
		return nil, err
	}
	for name, ref := range b.topics.override {
		if seen[name] {
			continue
		}
		if _, err := b.iggy.GetTopic(ctx, ref); err == nil {
			seen[name] = true
			out = append(out, name)
		} else if !iggy.IsNotFound(err) {
			return nil, err
		}
	}
	sort.Strings(out)
	return out, nil
}

// topicID derives the Kafka topic id (Metadata v10+) from the Iggy stream,
// topic and creation time: stable for the life of the topic, different for a
// topic recreated under the same name.
func topicID(info *iggy.TopicInfo) [16]byte {
	h := sha256.New()
	h.Write([]byte(info.Ref.Stream))
	h.Write([]byte{0})
	h.Write([]byte(info.Ref.Topic))
	var ts [8]byte
	for i := range ts {
		ts[i] = byte(info.Details.CreatedAt >> (8 * i))
	}
	h.Write(ts[:])
	var id [16]byte
	copy(id[:], h.Sum(nil))
	id[6] = id[6]&0x0f | 0x40 // a version-4 style UUID, never all zero
	id[8] = id[8]&0x3f | 0x80
	return id
}

// kafkaTopics is the topic mapping as the stores see it (offsets.Topics):
// every Kafka topic, and the Iggy topic of a name.
type kafkaTopics struct{ b *Bridge }

func (t kafkaTopics) List(ctx context.Context) ([]string, error) { return t.b.listTopics(ctx) }
func (t kafkaTopics) Ref(name string) iggy.TopicRef              { return t.b.topics.ref(name) }
