package bridge

import (
	"slices"
	"sync"
)

// notifier wakes long-polling fetches when a local write lands on a
// partition (KAFKA-ON-IGGY §3: wake on local produce; also transaction
// markers and topic deletion), and tells each which partitions were
// written, so that a woken Fetch reads those and not every partition it
// waits on.
type notifier struct {
	mu      sync.Mutex
	waiters map[partKey]map[*fetchWaiter]struct{}
}

type partKey struct {
	topic     string
	partition int32
}

func newNotifier() *notifier { return &notifier{waiters: map[partKey]map[*fetchWaiter]struct{}{}} }

// fetchWaiter is one waiting Fetch: ch (a buffer of one) is signalled when
// a partition it waits on is written, and woken collects which ones (each
// once: at most the Fetch's own partitions).
type fetchWaiter struct {
	ch    chan struct{}
	mu    sync.Mutex
	woken []partKey
}

func newFetchWaiter() *fetchWaiter { return &fetchWaiter{ch: make(chan struct{}, 1)} }

// take returns the partitions written since the last take (in dst's
// storage) and forgets them.
func (w *fetchWaiter) take(dst []partKey) []partKey {
	w.mu.Lock()
	dst = append(dst[:0], w.woken...)
	w.woken = w.woken[:0]
	w.mu.Unlock()
	return dst
}

// wait registers w for wake-ups on the given partitions; the returned
// function unregisters it.
func (n *notifier) wait(w *fetchWaiter, keys []partKey) func() {
	n.mu.Lock()
	for _, k := range keys {
		m := n.waiters[k]
		if m == nil {
			m = map[*fetchWaiter]struct{}{}
			n.waiters[k] = m
		}
		m[w] = struct{}{}
	}
	n.mu.Unlock()
	return func() {
		n.mu.Lock()
		for _, k := range keys {
			if m := n.waiters[k]; m != nil {
				delete(m, w)
				if len(m) == 0 {
					delete(n.waiters, k)
				}
			}
		}
		n.mu.Unlock()
	}
}

// wake tells every waiter of a partition that it was written (never
// blocks: the partition is noted, then the waiter's channel signalled if
// it is not already).
func (n *notifier) wake(topic string, partition int32) {
	k := partKey{topic, partition}
	n.mu.Lock()
	for w := range n.waiters[k] {
		w.mu.Lock()
		if !slices.Contains(w.woken, k) {
			w.woken = append(w.woken, k)
		}
		w.mu.Unlock()
		select {
		case w.ch <- struct{}{}:
		default:
		}
	}
	n.mu.Unlock()
}
