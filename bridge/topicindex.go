// The topic-id index (bridge/topicids): one per Bridge, shared by every API
// that names topics by id.

package bridge

import (
	"context"
	"time"

	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
	"github.com/kafka-iggy/kafka-iggy/bridge/topicids"
)

type topicIDIndex struct{ x *topicids.Index }

func newTopicIDIndex(b *Bridge) *topicIDIndex {
	return &topicIDIndex{topicids.New(topicids.Deps{Client: b.iggy, DefaultStream: b.cfg.Topics.DefaultStream,
		Overrides: b.topics.override, KafkaName: b.topics.kafkaName, Lookup: b.lookupTopic, ID: topicID})}
}

// lookup returns the topic whose id is id (topicids.Index.Lookup).
func (t *topicIDIndex) lookup(ctx context.Context, id [16]byte, received time.Time) (string, *iggy.TopicInfo, error) {
	return t.x.Lookup(ctx, id, received)
}

// name returns the Kafka name of the topic whose id is id (topicids.Index.Name).
func (t *topicIDIndex) name(ctx context.Context, id [16]byte, received time.Time) (string, bool) {
	return t.x.Name(ctx, id, received)
}
