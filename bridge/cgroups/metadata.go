package cgroups

import (
	"sync"
	"time"
)

// Metadata is what a heartbeat's assignment is computed from: every topic
// a member may subscribe to, its partition count and its Kafka topic id.
type Metadata struct {
	Counts map[string]int32
	IDs    map[string][16]byte
}

// MetadataCache keeps the Metadata heartbeats read, so that a heartbeat
// does not list the topics again: a view is reused for MaxAge and dropped
// at once by Invalidate (a topic created, deleted or grown through this
// sidecar). A change made through another sidecar is seen within MaxAge.
// The zero value is ready (MaxAge 0: DefaultMetadataMaxAge).
type MetadataCache struct {
	MaxAge time.Duration

	mu   sync.Mutex
	md   Metadata
	at   time.Time
	ok   bool
	gen  uint64 // Invalidate count: a load older than the last one is not kept
	load sync.Mutex
}

// DefaultMetadataMaxAge is how long a view is reused by default.
const DefaultMetadataMaxAge = time.Second

// Get returns a view at most MaxAge old at now, calling load (one at a
// time) when there is none. A load's error is returned and nothing kept.
func (c *MetadataCache) Get(now time.Time, load func() (Metadata, error)) (Metadata, error) {
	if md, ok := c.fresh(now); ok {
		return md, nil
	}
	c.load.Lock()
	defer c.load.Unlock()
	if md, ok := c.fresh(now); ok { // another heartbeat loaded it meanwhile
		return md, nil
	}
	c.mu.Lock()
	gen := c.gen
	c.mu.Unlock()
	md, err := load()
	if err != nil {
		return Metadata{}, err
	}
	c.mu.Lock()
	if gen == c.gen {
		c.md, c.at, c.ok = md, now, true
	}
	c.mu.Unlock()
	return md, nil
}

func (c *MetadataCache) fresh(now time.Time) (Metadata, bool) {
	maxAge := c.MaxAge
	if maxAge == 0 {
		maxAge = DefaultMetadataMaxAge
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ok && now.Sub(c.at) < maxAge && !now.Before(c.at) {
		return c.md, true
	}
	return Metadata{}, false
}

// Invalidate drops the view: the next Get loads.
func (c *MetadataCache) Invalidate() {
	c.mu.Lock()
	c.ok = false
	c.gen++
	c.mu.Unlock()
}
