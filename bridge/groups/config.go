package groups

import (
	"fmt"
	"math"
	"time"
)

// Config tunes the consumer-group coordinator (keys groups.*).
type Config struct {
	// InitialRebalanceDelay delays the first rebalance of an empty group so
	// several members can join together (Kafka's
	// group.initial.rebalance.delay.ms). Default 3s.
	InitialRebalanceDelay time.Duration `koanf:"initial_rebalance_delay"`
	// MinSessionTimeout and MaxSessionTimeout bound the session timeout a
	// member may ask for (group.min/max.session.timeout.ms).
	// Defaults 6s and 30m.
	MinSessionTimeout time.Duration `koanf:"min_session_timeout"`
	MaxSessionTimeout time.Duration `koanf:"max_session_timeout"`
	// MaxSize is the most members a group may have (Kafka's
	// group.max.size): a new member joining a full group is answered
	// GROUP_MAX_SIZE_REACHED. Default 2147483647 (no limit, Kafka's
	// default).
	MaxSize int32 `koanf:"max_size"`
	// MaxRebalanceTimeout caps the rebalance timeout a JoinGroup asks for
	// (the Java consumer's max.poll.interval.ms; Kafka Streams asks for
	// 2147483647 ms): a larger one is served as this, so a parked
	// JoinGroup or a member that never sends SyncGroup is given up after
	// it at the latest. Kafka bounds it by nothing but its int32. Default
	// 30m.
	MaxRebalanceTimeout time.Duration `koanf:"max_rebalance_timeout"`
	// MaxPendingMembers caps the KIP-394 pending member ids (a JoinGroup
	// v4+ without member id is handed one and must rejoin with it within
	// its session timeout) held at once by this sidecar, over all its
	// groups: past it a JoinGroup without member id is answered
	// COORDINATOR_LOAD_IN_PROGRESS, which clients retry after their
	// backoff. Kafka bounds them by the session timeout only. Default
	// 10000.
	MaxPendingMembers int `koanf:"max_pending_members"`
	// EmptyRetention is how long an Empty group (no members) stays in this
	// sidecar's memory: its generation is kept for members that come
	// back. Its committed offsets live in Iggy and are not touched (Kafka
	// drops an empty group with its offsets after offsets.retention.minutes,
	// 7 days). A group that never completed a rebalance and has no member
	// and no pending member id left is forgotten at once. Default 24h.
	EmptyRetention time.Duration `koanf:"empty_retention"`
}

// Problems reports every invalid key of groups.*, each error naming it.
func (c Config) Problems() []error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("groups.%s: %s", key, fmt.Sprintf(format, args...)))
	}
	if c.InitialRebalanceDelay < 0 {
		bad("initial_rebalance_delay", "must not be negative")
	}
	if c.MaxSize < 1 {
		bad("max_size", "must be at least 1, got %d", c.MaxSize)
	}
	if c.MinSessionTimeout <= 0 || c.MaxSessionTimeout < c.MinSessionTimeout {
		bad("min_session_timeout", "must be positive and not above groups.max_session_timeout")
	}
	if c.MaxRebalanceTimeout <= 0 {
		bad("max_rebalance_timeout", "must be positive")
	}
	if c.MaxPendingMembers < 1 {
		bad("max_pending_members", "must be at least 1, got %d", c.MaxPendingMembers)
	}
	if c.EmptyRetention <= 0 {
		bad("empty_retention", "must be positive")
	}
	return errs
}

// MaxGroupIDBytes is the longest group id a JoinGroup is served for: the
// Iggy name of its committed offsets ("kafka.cg." + the group id) must fit
// 255 bytes (bridge/offsets.ValidGroupID). A longer one is answered
// INVALID_GROUP_ID, as OffsetCommit answers it.
const MaxGroupIDBytes = 255 - len("kafka.cg.")

// MaxMemberIDPrefixBytes is the most of a client id (or group.instance.id)
// a member id begins with: Kafka forms member ids as <client id>-<UUID>
// whatever the client id's length (up to 32767 bytes); the sidecar keeps
// its first 255 bytes, so a pending or member id holds at most 292 bytes.
const MaxMemberIDPrefixBytes = 255

// DefaultConfig returns the documented defaults.
func DefaultConfig() Config {
	return Config{
		InitialRebalanceDelay: 3 * time.Second,
		MinSessionTimeout:     6 * time.Second,
		MaxSessionTimeout:     30 * time.Minute,
		MaxSize:               math.MaxInt32,
		MaxRebalanceTimeout:   30 * time.Minute,
		MaxPendingMembers:     10000,
		EmptyRetention:        emptyGroupRetention,
	}
}
