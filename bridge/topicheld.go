package bridge

// Topic settings the gateway holds itself (gatewayOptions in
// topicconfig.go): today max.message.bytes, which Iggy has no option for.
//
// A topic's own value is set by CreateTopics, AlterConfigs and
// IncrementalAlterConfigs and kept in this instance's memory, keyed by the
// Kafka topic name: it is forgotten when the topic is deleted through this
// instance and when the process restarts, after which the topic follows
// topics.max_message_bytes again. Other sidecars of the same Iggy server do
// not see it. docs/COMPATIBILITY.md lists this among the intended
// differences; a limit that must hold everywhere belongs in
// topics.max_message_bytes.

import (
	"strconv"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"

	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

// heldConfigs are the gateway-held settings of the topics that set them.
type heldConfigs struct {
	mu sync.RWMutex
	m  map[string]map[string]uint64 // Kafka topic -> gatewayOptions key -> value
}

// overlay sets the topic's held values on s (an option set read from Iggy).
func (h *heldConfigs) overlay(topic string, s optionSet) optionSet {
	h.mu.RLock()
	defer h.mu.RUnlock()
	for k, v := range h.m[topic] {
		if spec, ok := icodec.LookupOption(gatewayOptions, k); ok {
			s.set(spec, v)
		}
	}
	return s
}

// store keeps the explicit gateway-held values of s as the topic's own;
// keys s does not set explicitly are dropped (the topic follows the
// gateway's value).
func (h *heldConfigs) store(topic string, s optionSet) {
	var vals map[string]uint64
	for i := range gatewayOptions {
		k := gatewayOptions[i].Key
		if s.explicit[k] {
			if vals == nil {
				vals = map[string]uint64{}
			}
			vals[k] = s.vals[k]
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if vals == nil {
		delete(h.m, topic)
		return
	}
	if h.m == nil {
		h.m = map[string]map[string]uint64{}
	}
	h.m[topic] = vals
}

// forget drops a deleted topic's values.
func (h *heldConfigs) forget(topic string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.m, topic)
}

// value returns the topic's own value of key, if it has one.
func (h *heldConfigs) value(topic, key string) (uint64, bool) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	v, ok := h.m[topic][key]
	return v, ok
}

// topicOptionSet resolves a topic's settings: its Iggy options with the
// gateway-held ones on top.
func (b *Bridge) topicOptionSet(topic string, explicit, derived icodec.Options) optionSet {
	return b.topics.held.overlay(topic, optionSetOf(explicit, derived))
}

// maxMessageBytes is the largest record batch a Produce may write to a
// partition of topic: its max.message.bytes, else topics.max_message_bytes.
func (b *Bridge) maxMessageBytes(topic string) int {
	if v, ok := b.topics.held.value(topic, optMaxMessageBytes); ok {
		return int(v)
	}
	return int(b.cfg.Topics.MaxMessageBytes)
}

// checkMessageSize applies max.message.bytes to one partition's records of
// a Produce v3+ (one record batch, so the records are the batch as Kafka
// measures it, log overhead included). Message sets of v0-v2 are not
// checked. It returns MESSAGE_TOO_LARGE and Kafka's reason, or 0.
func (b *Bridge) checkMessageSize(version int16, topic string, records []byte) (int16, string) {
	if version < 3 {
		return 0, ""
	}
	if limit := b.maxMessageBytes(topic); len(records) > limit {
		return kerr.MessageTooLarge.Code, "The request included a message larger than the max message size the server will accept: " +
			strconv.Itoa(len(records)) + " bytes > max.message.bytes " + strconv.Itoa(limit)
	}
	return 0, ""
}
