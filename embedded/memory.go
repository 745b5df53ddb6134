package embedded

import (
	"runtime"
	"sync/atomic"
)

// releaseThreshold is how many bytes of stored messages a memory-only
// server must have dropped (topic, stream or partition deletion, purge,
// retention) before it hands the freed memory back to the OS.
const releaseThreshold = 64 << 20

// memRelease lets the memory of dropped messages go. A memory-only server
// keeps every batch on the Go heap; once they are dropped the garbage
// collector frees them only at its next cycle, which comes when the heap
// has grown to twice the live data, so until then the process holds the
// dropped bytes and the runtime's scavenger (which returns free pages to
// the OS in the background) has nothing to return. Dropping
// releaseThreshold bytes or more makes a background goroutine run a
// collection at once: the heap goal falls to what is still stored and the
// scavenger hands the rest back over the following seconds. It does not
// call debug.FreeOSMemory: returning every free page at once made the
// next writes fault all of it back in (the bench's direct produce run
// after the sidecar's topics were deleted cost the server 3.9 instead of
// 1.6 CPU-s/GB).
type memRelease struct {
	threshold int64 // releaseThreshold; tests lower it
	dropped   atomic.Int64
	kick      chan struct{}
	runs      atomic.Int64 // collections run, for tests
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
				runtime.GC()
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
