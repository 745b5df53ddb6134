// The order of the writes of one committed offset (see "Order" in
// store.go).

package offsets

import (
	"sync"
	"time"

	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
)

// commitKey is one committed offset.
type commitKey struct {
	group     string
	ref       iggy.TopicRef
	partition int32
}

// Ticket says where a write came from: the connection, when its
// request was received and its correlation id. The zero ticket (internal
// writes) is never stale and never makes another write stale.
type Ticket struct {
	Conn uint64
	At   time.Time
	Corr int32
}

// before reports whether t was made before u on the same connection.
func (t Ticket) before(u Ticket) bool {
	if t.Conn == 0 || t.Conn != u.Conn {
		return false
	}
	if !t.At.Equal(u.At) {
		return t.At.Before(u.At)
	}
	return int32(t.Corr-u.Corr) < 0 // wrap-safe
}

// commitOrder serializes the writes of each commitKey and skips writes
// overtaken by a later write of the same connection.
type commitOrder struct {
	mu        sync.Mutex
	slots     map[commitKey]*commitSlot
	pruneNext int // slot count that triggers the next prune
}

// commitSlot is one key's ordering state.
type commitSlot struct {
	mu    sync.Mutex // held while the key's write is on its way
	users int        // goroutines holding or waiting for mu (guarded by commitOrder.mu)
	last  Ticket
	used  time.Time // guarded by commitOrder.mu
	// mainStored: this process stored the key's main offset and has not
	// deleted it since. Guarded by mu.
	mainStored bool
	// markerStored: this process stored the key's zero marker (consumer
	// mode) and has not deleted it since. markerGone is when it last
	// deleted the marker or saw none; zero when it does not know. Guarded
	// by mu.
	markerStored bool
	markerGone   time.Time
}

// run calls write for key, with the key's slot locked, unless a later
// write of the same connection was applied already (then it reports
// success without writing).
func (o *commitOrder) run(key commitKey, tk Ticket, write func(sl *commitSlot) error) error {
	o.mu.Lock()
	sl := o.slots[key]
	if sl == nil {
		sl = &commitSlot{}
		o.slots[key] = sl
		o.prune()
	}
	sl.users++
	o.mu.Unlock()

	sl.mu.Lock()
	var err error
	if !tk.before(sl.last) {
		if err = write(sl); err == nil {
			sl.last = tk
		}
	}
	sl.mu.Unlock()

	o.mu.Lock()
	sl.users--
	sl.used = time.Now()
	o.mu.Unlock()
	return err
}

// prune drops idle slots when there are many. Caller holds o.mu.
func (o *commitOrder) prune() {
	if len(o.slots) < max(o.pruneNext, commitSlotsPrune) {
		return
	}
	now := time.Now()
	for k, sl := range o.slots {
		if sl.users == 0 && !sl.used.IsZero() && now.Sub(sl.used) > commitSlotIdle {
			delete(o.slots, k)
		}
	}
	o.pruneNext = 2 * len(o.slots)
}
