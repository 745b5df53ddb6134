package embedded

import (
	"runtime/debug"
	"sync/atomic"
)

// releaseThreshold is how many bytes of stored messages a memory-only
// server must have dropped (topic, stream or partition deletion, purge,
// retention) before it hands the freed memory back to the OS.
const releaseThreshold = 64 << 20

// memRelease returns the memory of dropped messages to the OS. A
// memory-only server keeps every batch on the Go heap; once they are
// dropped the garbage collector frees them only at its next cycle (when
// the heap has grown to twice the live data) and the runtime's scavenger
// returns the pages to the OS slowly, so the process's RSS stays near its
// peak long after a large topic is deleted. Dropping releaseThreshold bytes
// or more makes a background goroutine run debug.FreeOSMemory (a garbage
// collection, then every free page back to the OS).
type memRelease struct {
	threshold int64 // releaseThreshold; tests lower it
	dropped   atomic.Int64
	kick      chan struct{}
	runs      atomic.Int64 // FreeOSMemory calls, for tests
}

func newMemRelease() *memRelease {
	return &memRelease{threshold: releaseThreshold, kick: make(chan struct{}, 1)}
}

// noteDropped records that n bytes of stored messages were dropped and
// wakes the releasing goroutine past the threshold.
func (m *memRelease) noteDropped(n int64) {
	if n <= 0 || m.dropped.Add(n) < m.threshold {
		return
	}
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

// loop runs the releases until done is closed.
func (m *memRelease) loop(done <-chan struct{}) {
	for {
		select {
		case <-done:
			return
		case <-m.kick:
			if m.dropped.Swap(0) >= m.threshold {
				debug.FreeOSMemory()
				m.runs.Add(1)
			}
		}
	}
}

// dropped reports that a partition's log shrank from before to after
// bytes of stored messages (memory-only servers only).
func (s *Server) dropped(before, after uint64) {
	if s.cfg.DataDir == "" && before > after {
		s.mem.noteDropped(int64(before - after))
	}
}
