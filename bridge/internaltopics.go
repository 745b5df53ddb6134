package bridge

// Kafka's internal topic __consumer_offsets, as the gateway shows it.
//
// Kafka keeps committed offsets in __consumer_offsets and lists it in
// Metadata with IsInternal set; clients rely on that flag (regex consumers
// skip internal topics, admin tools hide them). The gateway keeps offsets
// in Iggy (KAFKA-ON-IGGY §6), so its __consumer_offsets is a view with no
// records: Metadata lists it, internal, with one partition led by this
// instance; Produce to it answers INVALID_TOPIC_EXCEPTION, as Kafka does
// for a client; ListOffsets and Fetch see an empty partition (offsets 0);
// CreateTopics answers TOPIC_ALREADY_EXISTS; DeleteTopics refuses it
// (Kafka would delete its offsets). Nothing of it reaches Iggy, and an Iggy
// topic of that name in the default stream stays hidden.

import "crypto/sha256"

// consumerOffsetsTopic is Kafka's internal offsets topic.
const consumerOffsetsTopic = "__consumer_offsets"

// isInternalTopic reports whether name is one of Kafka's internal topics
// the gateway shows.
func isInternalTopic(name string) bool { return name == consumerOffsetsTopic }

// internalTopicID is the fixed topic id of an internal topic.
func internalTopicID(name string) [16]byte {
	sum := sha256.Sum256([]byte("kafka-iggy internal topic\x00" + name))
	var id [16]byte
	copy(id[:], sum[:16])
	return id
}
