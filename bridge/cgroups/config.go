// Package cgroups is the coordinator of the consumer group protocol of
// KIP-848 (ConsumerGroupHeartbeat, ConsumerGroupDescribe): member epochs,
// a group epoch, a target assignment computed here by a server-side
// assignor, and incremental reconciliation (a partition reaches its new
// owner only once its previous owner has acknowledged the revocation). It
// knows topics by name and partition count only; the bridge resolves topic
// ids and reads the metadata from Iggy.
package cgroups

import (
	"math"
	"time"
)

// Config tunes the coordinator (keys consumer_groups.*).
type Config struct {
	// HeartbeatInterval is handed to members
	// (group.consumer.heartbeat.interval.ms). Default 5s.
	HeartbeatInterval time.Duration `koanf:"heartbeat_interval"`
	// SessionTimeout removes a member that has not heartbeated for it
	// (group.consumer.session.timeout.ms). Default 45s.
	SessionTimeout time.Duration `koanf:"session_timeout"`
	// MaxSize is the most members a group may have
	// (group.consumer.max.size). Default unlimited.
	MaxSize int32 `koanf:"max_size"`
}

// DefaultConfig returns Kafka's defaults.
func DefaultConfig() Config {
	return Config{HeartbeatInterval: 5 * time.Second, SessionTimeout: 45 * time.Second, MaxSize: math.MaxInt32}
}

// MaxGroupIDBytes is the longest group id served: the Iggy name of its
// committed offsets ("kafka.cg." + the group id) must fit 255 bytes
// (INVALID_GROUP_ID past it, as the classic coordinator answers).
const MaxGroupIDBytes = 255 - len("kafka.cg.")

// MaxMemberIDBytes bounds the member id and group.instance.id a member
// sends (clients send a 22-byte UUID): a longer one is INVALID_REQUEST.
const MaxMemberIDBytes = 255
