package iggy

import (
	"sync"

	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

// partKey names one partition as callers address it. Stream and topic keep
// their identifier kind, so a name and a numeric id never share a queue.
// (The same partition addressed once by name and once by id lands in two
// queues, possibly on two lanes: address partitions consistently.)
type partKey struct {
	stream, topic string
	skind, tkind  icodec.IdentifierKind
	partition     uint32
}

// hash picks the lane: FNV-1a over the key.
func (k *partKey) hash() uint64 {
	const (
		offset64 = 14695981039346656037
		prime64  = 1099511628211
	)
	h := uint64(offset64)
	mix := func(b byte) { h ^= uint64(b); h *= prime64 }
	mix(byte(k.skind))
	for i := 0; i < len(k.stream); i++ {
		mix(k.stream[i])
	}
	mix(0xff)
	mix(byte(k.tkind))
	for i := 0; i < len(k.topic); i++ {
		mix(k.topic[i])
	}
	mix(0xff)
	for i := range 4 {
		mix(byte(k.partition >> (8 * i)))
	}
	return h
}

// Lane states of a call, guarded by lane.mu.
const (
	lsNone      uint8 = iota // not on a lane
	lsQueued                 // waiting in its partition queue
	lsTaken                  // taken by the lane's session (sent or being sent)
	lsCancelled              // withdrawn by its caller (or Close) before it was taken
)

// partQueue is the FIFO of writes for one partition on a lane.
type partQueue struct {
	key    partKey
	stream icodec.Identifier // identifiers for the SEND_MESSAGES head
	topic  icodec.Identifier
	calls  []*call
	ready  bool // in lane.ready
}

// lane is the write queue of one session: every partition write whose key
// hashes to it goes through it, in order. The lane's session takes work
// from the head of the ready list one unit at a time (one coalesced send,
// or one offset write), so writes of one partition never overtake each
// other and a partition that has more work goes to the back of the list.
type lane struct {
	idx  int
	kick chan struct{} // capacity 1: "there may be work"

	mu     sync.Mutex
	parts  map[partKey]*partQueue
	ready  []*partQueue
	depth  int // calls in lsQueued
	closed bool
}

func newLane(idx int) *lane {
	return &lane{idx: idx, kick: make(chan struct{}, 1), parts: make(map[partKey]*partQueue)}
}

func (l *lane) signal() {
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

// enqueue appends c to its partition's queue. It fails with ErrClosed once
// the lane was drained by Close.
func (l *lane) enqueue(c *call) error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	pq := l.parts[c.key]
	if pq == nil {
		pq = &partQueue{
			key:    c.key,
			stream: icodec.Identifier{Kind: c.key.skind, Value: []byte(c.key.stream)},
			topic:  icodec.Identifier{Kind: c.key.tkind, Value: []byte(c.key.topic)},
		}
		l.parts[c.key] = pq
	}
	c.lstate = lsQueued
	pq.calls = append(pq.calls, c)
	if !pq.ready {
		pq.ready = true
		l.ready = append(l.ready, pq)
	}
	l.depth++
	l.mu.Unlock()
	l.signal()
	return nil
}

// cancel withdraws c if it is still queued and reports whether it did; the
// caller then owns c's buffers again. A taken call cannot be withdrawn.
func (l *lane) cancel(c *call) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c.lstate != lsQueued {
		return false
	}
	c.lstate = lsCancelled
	l.depth--
	return true
}

// unit is one piece of lane work: either one partition-plane request (op
// set) or the sends that leave together (sends set, in queue order).
type unit struct {
	stream, topic icodec.Identifier
	partition     uint32
	fence         icodec.PartitionContext // of the unit's first call
	op            *call
	sends         []*call
}

// takeLimits bound what take coalesces.
type takeLimits struct {
	coalesce bool
	bytes    int
	messages int
}

// oversized reports whether m alone breaks a limit, so it must be split
// into several batches (and is never coalesced with others).
func (t takeLimits) oversized(m *Messages) bool {
	return m.Size() > t.bytes || m.Len() > t.messages || m.Span() > icodec.MaxTimestampSpan
}

// take fills u with the next unit of work and reports whether there was one,
// and the queue depth left. Cancelled calls met on the way are dropped.
func (l *lane) take(u *unit, lim takeLimits) (ok bool, depth int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	u.op, u.sends = nil, u.sends[:0]
	for len(l.ready) > 0 {
		pq := l.ready[0]
		l.ready[0] = nil
		l.ready = l.ready[1:]
		pq.ready = false

		i := 0
		for i < len(pq.calls) && pq.calls[i].lstate == lsCancelled {
			i++
		}
		if i == len(pq.calls) {
			clear(pq.calls)
			pq.calls = pq.calls[:0]
			l.idle(pq)
			continue
		}
		u.stream, u.topic, u.partition = pq.stream, pq.topic, pq.key.partition
		first := pq.calls[i]
		u.fence = first.fence
		first.lstate = lsTaken
		l.depth--
		i++
		if first.msgs == nil {
			u.op = first
		} else {
			u.sends = append(u.sends, first)
			if lim.coalesce && !lim.oversized(first.msgs) {
				size, n := first.msgs.Size(), first.msgs.Len()
				lo, hi := first.msgs.minTS, first.msgs.maxTS
				for ; i < len(pq.calls); i++ {
					c := pq.calls[i]
					if c.lstate == lsCancelled {
						continue
					}
					m := c.msgs
					if m == nil || c.fence != first.fence {
						break // a send routed under another fence leaves in the next unit
					}
					nlo, nhi := min(lo, m.minTS), max(hi, m.maxTS)
					if size+m.Size() > lim.bytes || n+m.Len() > lim.messages || nhi-nlo > icodec.MaxTimestampSpan {
						break
					}
					size, n, lo, hi = size+m.Size(), n+m.Len(), nlo, nhi
					c.lstate = lsTaken
					l.depth--
					u.sends = append(u.sends, c)
				}
			}
		}
		rest := copy(pq.calls, pq.calls[i:])
		clear(pq.calls[rest:])
		pq.calls = pq.calls[:rest]
		if rest > 0 {
			pq.ready = true
			l.ready = append(l.ready, pq)
		} else {
			l.idle(pq)
		}
		return true, l.depth
	}
	return false, l.depth
}

// maxIdleQueues bounds the empty partition queues a lane keeps for reuse.
const maxIdleQueues = 1024

// idle handles a partition queue that became empty: it stays in the map for
// the partition's next write unless the lane already holds many queues.
func (l *lane) idle(pq *partQueue) {
	if len(l.parts) > maxIdleQueues {
		delete(l.parts, pq.key)
	}
}

// hasWork reports whether a partition is waiting.
func (l *lane) hasWork() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.ready) > 0
}

// drain closes the lane and returns every queued call, withdrawn; later
// enqueues fail with ErrClosed. Close calls it after the sessions stopped.
func (l *lane) drain() []*call {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	var out []*call
	for _, pq := range l.parts {
		for _, c := range pq.calls {
			if c.lstate == lsQueued {
				c.lstate = lsCancelled
				out = append(out, c)
			}
		}
	}
	l.parts = map[partKey]*partQueue{}
	l.ready = nil
	l.depth = 0
	return out
}
