package groups

import (
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
}

// DefaultConfig returns the documented defaults.
func DefaultConfig() Config {
	return Config{
		InitialRebalanceDelay: 3 * time.Second,
		MinSessionTimeout:     6 * time.Second,
		MaxSessionTimeout:     30 * time.Minute,
		MaxSize:               math.MaxInt32,
	}
}
