package bridge

import "github.com/kafka-iggy/kafka-iggy/bridge/kafkacode"

// The Iggy-to-Kafka error table is bridge/kafkacode (KAFKA-ON-IGGY §7).

const (
	scopeData    = kafkacode.Data
	scopeOffsets = kafkacode.Offsets
	scopeGroup   = kafkacode.Group
	scopeAdmin   = kafkacode.Admin
)

var (
	kafkaCode = kafkacode.Of   // the Kafka code of an Iggy client error
	iggyCode  = kafkacode.Iggy // the Iggy code of an error, for logs
)
