// Package producers holds producer ids and idempotent produce for the
// bridge (KAFKA-ON-IGGY §4): the producer-id
// allocator behind InitProducerId (bridge/22_init_producer_id.go) and the
// per-(producer, partition) sequence tracker that Produce consults before it
// writes an idempotent batch.
//
// Producer ids come from blocks leased from Iggy (lease.go), unique
// across restarts and sidecars. A tracker without a leaser (unit tests)
// uses pidAllocator: instance id (16 bits, producer.instance_id or a hash
// of the pod name) in bits 47-62, a 47-bit counter below that starts at the
// milliseconds since 2024-01-01 and never runs behind that clock; ids stay
// positive (bit 63 is never set).
//
// Sequence tracking follows the broker's ProducerStateManager, per
// (producer id, Kafka topic, partition):
//   - the last pidBatches (5, the producer's max.in.flight limit) confirmed
//     batches are remembered with their sequence ranges and base offsets; a
//     batch that repeats one of them exactly (same epoch) is a retry: it is
//     answered with the original base offset and not written again;
//   - otherwise the batch must continue the sequence (first = last + 1,
//     wrapping from MaxInt32 to 0), else OUT_OF_ORDER_SEQUENCE_NUMBER (45);
//     sequence 0 from a known producer in the same epoch is therefore out of
//     order, as on a broker (an idempotent producer restarts its sequences
//     only together with a new epoch or a new producer id);
//   - a lower epoch than the partition's answers INVALID_PRODUCER_EPOCH
//     (47); a higher epoch (the producer bumped it, KIP-360) starts over and
//     must begin at sequence 0, unless nothing of the old epoch was
//     confirmed;
//   - a producer or partition without state (after a restart of the
//     sidecar, an id another sidecar handed out, or forgotten by the LRU)
//     is first read back from the partition's tail in Iggy, where every
//     message of an idempotent batch carries its producer id, epoch and
//     sequence in its message id (id.go, tail.go); a batch above
//     sequence 0 of a producer the tail does not know either answers
//     UNKNOWN_PRODUCER_ID (59). The read is skipped for sequence 0 of an id
//     this process handed out. Without a tail reader (unit tests,
//     producer.recovery_tail_messages 0) such a batch is accepted as new
//     state.
//
// One batch per (producer, partition) is in flight at a time: a batch that
// arrives while the previous one is still being written waits for that
// write's outcome before it is checked. A broker appends under the log lock
// and checks the next batch against the appended one; waiting gives the
// same answers (the next batch of a failed one is out of order, a retry of
// a batch still in flight gets its offsets once it lands) and keeps the
// Iggy writes of one producer and partition in sequence order. Other
// producers and partitions are not held up.
//
// The front door runs the requests of one connection concurrently, so a
// producer's pipelined batches (up to 5 in flight) can reach the tracker
// out of order. A batch ahead of the sequence therefore waits for the
// batches before it, up to pidGapWait without progress, before it is
// refused; a batch without state and with a sequence above 0 waits the
// same way before it becomes new state (the lowest such batch first). The
// wait costs time only where Kafka would answer an error, and once per
// producer and partition after a restart of the sidecar.
//
// A write that failed or whose outcome is unknown (session lost with the
// batch on the wire) makes the partition's state be read back from Iggy
// before the next batch (its retry) is checked: a retry of a write that
// landed is answered as a duplicate. A write still being applied by the
// server when that read runs (the server saw the request, the reply was
// lost, the read overtook it) is the one window left.
//
// Memory is bounded: at most producer.max_tracked_producers producers (the
// least recently used one is forgotten first, never one with a write in
// flight), at most pidMaxPartsPerProducer partitions per producer and
// pidEntriesPerProducer × max_tracked_producers partition entries overall,
// each holding pidBatches batches (about 150 bytes).
package producers

import (
	"container/list"
	"context"
	"hash/fnv"
	"math"
	"os"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

const (
	// pidBatches is how many confirmed batches are remembered per
	// (producer, partition): Kafka's limit of in-flight requests per
	// idempotent producer connection.
	pidBatches = 5
	// pidMaxPartsPerProducer bounds the partitions tracked per producer.
	pidMaxPartsPerProducer = 4096
	// pidEntriesPerProducer × max tracked producers bounds the partition
	// entries of all producers together.
	pidEntriesPerProducer = 8
	// pidGapWait is how long a batch ahead of its producer's sequence waits
	// without progress for the batches before it (overtaken on their way
	// through the front door) before it is refused, or, without state,
	// accepted as new state.
	pidGapWait = 250 * time.Millisecond
	// pidCounterBits is the width of the per-instance counter.
	pidCounterBits = 47
	pidCounterMask = 1<<pidCounterBits - 1
)

// pidClockEpoch is where the producer-id counter's clock starts.
var pidClockEpoch = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// pidAllocator hands out producer ids: instance id in the high bits, a
// clock-seeded counter in the low bits.
type pidAllocator struct {
	instance int64
	now      func() time.Time

	start int64 // the counter's clock when this allocator was made

	mu   sync.Mutex
	last int64 // last counter value handed out
}

func newPIDAllocator(instance int32, now func() time.Time) *pidAllocator {
	if now == nil {
		now = time.Now
	}
	a := &pidAllocator{instance: int64(instance) & 0xffff, now: now, last: -1}
	a.start = a.clock()
	return a
}

// clock is the counter's clock: milliseconds since pidClockEpoch.
func (a *pidAllocator) clock() int64 {
	if ms := a.now().Sub(pidClockEpoch).Milliseconds(); ms > 0 {
		return ms
	}
	return 0
}

// own reports whether pid was (or could have been) handed out by this
// allocator since it was made: its instance id and a counter no older
// than the allocator. A producer id handed out before a restart, or by
// another instance, is not own.
func (a *pidAllocator) own(pid int64) bool {
	return pid>>pidCounterBits == a.instance && pid&pidCounterMask >= a.start
}

// next returns a new producer id (always >= 0).
func (a *pidAllocator) next() int64 {
	ms := a.clock()
	a.mu.Lock()
	c := a.last + 1
	if ms > c {
		c = ms
	}
	c &= pidCounterMask
	a.last = c
	a.mu.Unlock()
	return a.instance<<pidCounterBits | c
}

// producerInstanceID resolves producer.instance_id: the configured value,
// or for -1 a 16-bit FNV-1a hash of the pod name (HOSTNAME, else the
// host name). source says which, for the start-up log.
func producerInstanceID(configured int32) (id int32, source string) {
	if configured >= 0 {
		return configured, "config"
	}
	name := os.Getenv("HOSTNAME")
	source = "hostname_env"
	if name == "" {
		name, _ = os.Hostname()
		source = "hostname"
	}
	h := fnv.New32a()
	h.Write([]byte(name))
	return int32(h.Sum32() & 0xffff), source
}

// DupResult answers a retried batch: the base offset its first write got
// (-1 when Iggy confirmed that write without an offset).
type DupResult struct {
	BaseOffset int64
}

// State is the idempotence tracker. All methods are safe for
// concurrent use.
type State struct {
	ids   *pidLeaser    // producer ids for InitProducerId, leased from Iggy (lease.go)
	alloc *pidAllocator // without ids (unit tests): clock-seeded ids

	maxProducers int
	maxEntries   int
	maxParts     int
	gapWait      time.Duration // pidGapWait (tests shorten it)
	waitHook     func()        // tests: called when an admit starts to wait

	// tail reads a producer's state back from the partition's tail in
	// Iggy (tail.go); nil keeps state in memory only (unit tests).
	tail pidTailReader
	log  zerolog.Logger

	mu      sync.Mutex
	lru     list.List // of *pidProducer; front = most recently used
	byID    map[int64]*list.Element
	entries int    // partition entries of all producers
	tick    uint64 // use counter for per-producer partition eviction
}

// pidProducer is one producer's state.
type pidProducer struct {
	id    int64
	parts map[partKey]*pidPartition
	busy  int // batches admitted and not finished, and admit calls waiting
}

// pidPartition is the state of one (producer, partition).
type pidPartition struct {
	epoch   int16
	n       int // confirmed batches held, <= pidBatches
	head    int // index of the newest confirmed batch
	batches [pidBatches]pidBatch
	pending *pidPending
	changed chan struct{} // closed at the next change; nil when nobody waits
	ahead   []int32       // first sequences of the batches waiting without state
	used    uint64
	// loaded: the state was read back from Iggy's tail, or there was
	// nothing to read (a new producer of this instance at sequence 0).
	loaded  bool
	reload  bool          // a write failed: read the tail whatever the batch
	loading chan struct{} // closed when a tail read in progress ends
}

// pidBatch is one confirmed batch, or for run, a run of consecutive
// sequences at consecutive offsets read back from Iggy (batch bounds are
// not kept there): any range inside it is a retry.
type pidBatch struct {
	first, last int32
	base        int64
	run         bool
}

// pidPending is a batch admitted and being written.
type pidPending struct {
	first, last int32
	done        chan struct{} // closed when the write finished
}

// Config is what the tracker takes of the bridge's producer config (same
// meanings as bridge.ProducerConfig).
type Config struct {
	InstanceID           int32
	MaxTrackedProducers  int
	RecoveryTailMessages int
}

// PollFunc runs one single-consumer poll of a partition (the bridge's
// read path: its fetch consumer, no auto-commit).
type PollFunc func(ctx context.Context, ref iggy.TopicRef, partition int32, kind icodec.PollingKind, value uint64, count uint32) (*iggy.Polled, error)

// Deps is what the tracker needs from the bridge: the Iggy client (to
// lease producer id blocks), the Kafka topic to Iggy topic mapping and
// the bridge's poll (to read partition tails back).
type Deps struct {
	Client *iggy.Client
	Ref    func(topic string) iggy.TopicRef
	Poll   PollFunc
}

// New builds the tracker of a bridge, leasing producer ids from Iggy
// through d.Client, and logs its limits.
func New(cfg Config, d Deps, log zerolog.Logger) *State {
	t := NewLocal(cfg, log)
	t.tail = producerTail(cfg.RecoveryTailMessages, d)
	t.ids = newPIDLeaser(func(ctx context.Context) (int64, error) { return takePIDBlock(ctx, d, log) })
	return t
}

// NewLocal builds a tracker without a leaser of producer ids (they come
// from a clock-seeded allocator of cfg.InstanceID) or a tail reader, and
// logs its limits; New adds both.
func NewLocal(cfg Config, log zerolog.Logger) *State {
	t := newProducerState(cfg.MaxTrackedProducers)
	id, source := producerInstanceID(cfg.InstanceID)
	t.alloc = newPIDAllocator(id, nil)
	t.log = log
	log.Info().Int32("instance_id", id).Str("instance_id_source", source).
		Int("max_tracked_producers", t.maxProducers).Int("recovery_tail_messages", cfg.RecoveryTailMessages).
		Msg("producer ids leased from iggy; idempotence state")
	return t
}

// partKey names a partition of a Kafka topic.
type partKey struct {
	topic     string
	partition int32
}

func newProducerState(maxProducers int) *State {
	if maxProducers < 1 {
		maxProducers = 1
	}
	entries := maxProducers * pidEntriesPerProducer
	if entries < pidMaxPartsPerProducer {
		entries = pidMaxPartsPerProducer
	}
	return &State{
		alloc:        newPIDAllocator(0, nil),
		maxProducers: maxProducers,
		maxEntries:   entries,
		maxParts:     pidMaxPartsPerProducer,
		gapWait:      pidGapWait,
		byID:         map[int64]*list.Element{},
	}
}

// lastSeq is the sequence of a batch's last record: first + count - 1,
// wrapping past MaxInt32 to 0 as producers do.
func lastSeq(first, count int32) int32 {
	d := int64(count) - 1
	if room := int64(math.MaxInt32) - int64(first); d > room {
		return int32(d - room - 1)
	}
	return first + int32(d)
}

// inSequence reports whether next follows last.
func inSequence(last, next int32) bool {
	return next == last+1 || last == math.MaxInt32 && next == 0
}

// NoopDone is the done of an admission that writes nothing.
func NoopDone(int64, bool) {}

// verdict is what the sequence rules say about a batch.
type verdict uint8

const (
	verdictAccept   verdict = iota // write it
	verdictNewEpoch                // write it; the partition moves to its epoch
	verdictDup                     // a retry of a remembered batch
	verdictFenced                  // INVALID_PRODUCER_EPOCH
	verdictOutOfSeq                // OUT_OF_ORDER_SEQUENCE_NUMBER
	verdictAhead                   // beyond the next sequence: maybe a batch overtaken on its way here
	verdictNewAhead                // no state, sequence above 0: maybe overtaken, else new state
)

// Admit checks an idempotent batch of producer pid (epoch epoch, first
// sequence baseSeq, count records) for a partition before it is written.
// Exactly one of these comes back:
//
//   - code != 0: refuse the batch with this Kafka error code
//     (OUT_OF_ORDER_SEQUENCE_NUMBER, INVALID_PRODUCER_EPOCH,
//     UNKNOWN_PRODUCER_ID, INVALID_RECORD for a malformed range, or
//     NOT_LEADER_OR_FOLLOWER when ctx ended while waiting or the tail read
//     failed); write nothing.
//   - dup != nil: a retry of a batch already written; answer dup.BaseOffset
//     and write nothing.
//   - otherwise: write the batch, then call done exactly once with the base
//     offset Iggy confirmed and ok = true, or with ok = false when the write
//     failed or its outcome is unknown. Until done is called, later batches
//     of the same producer and partition wait in admit.
//
// A batch ahead of the sequence (or the first batch of a producer without
// state, when its sequence is above 0) waits up to pidGapWait without
// progress on that producer and partition for the batches before it: the
// front door runs the requests of one connection concurrently, so a
// producer's pipelined batches may arrive here out of order. Then it is
// refused (out of order) or, without state, accepted as new state.
//
// done is never nil and may be called more than once (later calls do
// nothing). A caller must not call admit for the same producer and
// partition again before calling done of its earlier admission.
func (t *State) Admit(ctx context.Context, pid int64, epoch int16, topic string, partition int32, baseSeq, count int32) (dup *DupResult, code int16, done func(baseOffset int64, ok bool)) {
	if pid < 0 || epoch < 0 || baseSeq < 0 || count < 1 {
		return nil, kerr.InvalidRecord.Code, NoopDone
	}
	last := lastSeq(baseSeq, count)
	key := partKey{topic: topic, partition: partition}
	var waiter *pidProducer // the producer this call is counted busy on
	var regPP *pidPartition // where this call is registered as a new-state waiter
	var gapSince time.Time  // when the current wait for a gap began
	for {
		t.mu.Lock()
		if waiter != nil {
			waiter.busy--
			waiter = nil
		}
		if regPP != nil {
			regPP.dropAhead(baseSeq)
			regPP = nil
		}
		p := t.producer(pid)
		pp := t.partition(p, key)
		var ch <-chan struct{}
		var v verdict
		var dup *DupResult
		gap := false
		if pe := pp.pending; pe != nil {
			ch = pe.done
		} else if pp.loading != nil {
			ch = pp.loading
		} else if t.needTail(pp, pid, baseSeq) {
			if code := t.load(ctx, p, pp, pid, key); code != 0 {
				t.mu.Unlock()
				return nil, code, NoopDone
			}
			t.mu.Unlock()
			continue
		} else if v, dup = pp.check(epoch, baseSeq, last); v == verdictAhead || v == verdictNewAhead {
			if gapSince.IsZero() {
				gapSince = time.Now()
			}
			switch {
			case time.Since(gapSince) < t.gapWait:
				ch, gap = pp.changes(), true
			case v == verdictNewAhead && pp.lowerAhead(baseSeq):
				ch = pp.changes() // a lower batch waits too: it goes first
			}
			if ch != nil && v == verdictNewAhead {
				pp.ahead = append(pp.ahead, baseSeq)
				regPP = pp
			}
		}
		if ch != nil {
			p.busy++
			waiter = p
			t.mu.Unlock()
			if t.waitHook != nil {
				t.waitHook()
			}
			progress, err := t.wait(ctx, ch, gap, gapSince)
			if err != nil {
				t.mu.Lock()
				waiter.busy--
				if regPP != nil {
					regPP.dropAhead(baseSeq)
				}
				t.mu.Unlock()
				return nil, kerr.NotLeaderForPartition.Code, NoopDone
			}
			if progress {
				gapSince = time.Time{} // a gap wait starts over after progress
			}
			continue
		}
		switch v {
		case verdictDup:
			t.evict(p)
			t.mu.Unlock()
			return dup, 0, NoopDone
		case verdictFenced, verdictOutOfSeq, verdictAhead:
			code := kerr.OutOfOrderSequenceNumber.Code
			if v == verdictFenced {
				code = kerr.InvalidProducerEpoch.Code
			}
			t.evict(p)
			t.mu.Unlock()
			return nil, code, NoopDone
		case verdictNewAhead:
			if t.tail != nil {
				// Iggy's tail does not know the producer either: Kafka's
				// answer, never a silent new start (tail.go).
				t.evict(p)
				t.mu.Unlock()
				return nil, kerr.UnknownProducerID.Code, NoopDone
			}
			pp.epoch, pp.n = epoch, 0
		case verdictNewEpoch:
			pp.epoch, pp.n = epoch, 0
		}
		pe := &pidPending{first: baseSeq, last: last, done: make(chan struct{})}
		pp.pending = pe
		pp.notify()
		p.busy++
		t.evict(p)
		t.mu.Unlock()
		var once sync.Once
		return nil, 0, func(base int64, ok bool) {
			once.Do(func() { t.finish(p, pp, pe, base, ok) })
		}
	}
}

// wait blocks until ch is closed (progress: true), ctx ends (an error),
// or, for a gap wait, the gap wait since gapSince passed (false).
func (t *State) wait(ctx context.Context, ch <-chan struct{}, gap bool, gapSince time.Time) (bool, error) {
	var timeout <-chan time.Time
	if gap {
		tm := time.NewTimer(t.gapWait - time.Since(gapSince))
		defer tm.Stop()
		timeout = tm.C
	}
	select {
	case <-ch:
		return true, nil
	case <-timeout:
		return false, nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

// check applies the sequence rules to a batch without changing the state.
// Caller holds t.mu.
func (pp *pidPartition) check(epoch int16, first, last int32) (verdict, *DupResult) {
	switch {
	case epoch < pp.epoch:
		return verdictFenced, nil
	case pp.n == 0:
		if first != 0 {
			return verdictNewAhead, nil // nothing known: maybe overtaken
		}
		return verdictNewEpoch, nil
	case epoch > pp.epoch:
		if first != 0 {
			return verdictAhead, nil // the new epoch's first batch may be on its way
		}
		return verdictNewEpoch, nil
	}
	for i := 0; i < pp.n; i++ {
		b := &pp.batches[(pp.head-i+pidBatches)%pidBatches]
		if b.first == first && b.last == last {
			return verdictDup, &DupResult{BaseOffset: b.base}
		}
		if b.run && first >= b.first && last <= b.last && first <= last {
			base := b.base
			if base >= 0 {
				base += int64(first - b.first)
			}
			return verdictDup, &DupResult{BaseOffset: base}
		}
	}
	prev := pp.batches[pp.head].last
	if inSequence(prev, first) {
		return verdictAccept, nil
	}
	// Ahead (a gap) or behind (an old batch no longer remembered)? The
	// distance forward from the next sequence, modulo 2^31, tells.
	next := int64(prev) + 1
	if d := (int64(first) - next + 1<<31) % (1 << 31); d < 1<<30 {
		return verdictAhead, nil
	}
	return verdictOutOfSeq, nil
}

// changes returns a channel closed at the next change of pp (a batch
// admitted or finished). Caller holds t.mu.
func (pp *pidPartition) changes() <-chan struct{} {
	if pp.changed == nil {
		pp.changed = make(chan struct{})
	}
	return pp.changed
}

// lowerAhead reports whether a new-state waiter with a lower first
// sequence than first waits on pp. Caller holds t.mu.
func (pp *pidPartition) lowerAhead(first int32) bool {
	for _, f := range pp.ahead {
		if f < first {
			return true
		}
	}
	return false
}

// dropAhead removes one registration of a new-state waiter. Caller holds
// t.mu.
func (pp *pidPartition) dropAhead(first int32) {
	for i, f := range pp.ahead {
		if f == first {
			pp.ahead = append(pp.ahead[:i], pp.ahead[i+1:]...)
			return
		}
	}
}

// notify wakes the waiters of changes. Caller holds t.mu.
func (pp *pidPartition) notify() {
	if pp.changed != nil {
		close(pp.changed)
		pp.changed = nil
	}
}

// finish records the outcome of an admitted batch.
func (t *State) finish(p *pidProducer, pp *pidPartition, pe *pidPending, base int64, ok bool) {
	t.mu.Lock()
	if pp.pending == pe {
		pp.pending = nil
		pp.notify()
		p.busy--
		if ok {
			pp.head = (pp.head + 1) % pidBatches
			pp.batches[pp.head] = pidBatch{first: pe.first, last: pe.last, base: base}
			if pp.n < pidBatches {
				pp.n++
			}
		} else if t.tail != nil {
			// The write failed or its outcome is unknown: what Iggy holds
			// decides, so the next batch (the retry) reads the tail first.
			pp.n, pp.loaded, pp.reload = 0, false, true
		}
	}
	close(pe.done)
	t.mu.Unlock()
}

// producer returns pid's state, creating it, and marks it most recently
// used. Caller holds t.mu.
func (t *State) producer(pid int64) *pidProducer {
	if e, ok := t.byID[pid]; ok {
		t.lru.MoveToFront(e)
		return e.Value.(*pidProducer)
	}
	p := &pidProducer{id: pid, parts: map[partKey]*pidPartition{}}
	t.byID[pid] = t.lru.PushFront(p)
	return p
}

// partition returns p's state for key, creating it. Caller holds t.mu.
func (t *State) partition(p *pidProducer, key partKey) *pidPartition {
	t.tick++
	pp, ok := p.parts[key]
	if !ok {
		pp = &pidPartition{epoch: -1, head: pidBatches - 1}
		p.parts[key] = pp
		t.entries++
	}
	pp.used = t.tick
	return pp
}

// evict forgets state until the limits hold again: producers from the
// least recently used end (never cur, never one with a write in flight),
// and cur's least recently used idle partition while cur alone is over its
// own limit. Caller holds t.mu.
func (t *State) evict(cur *pidProducer) {
	for len(cur.parts) > t.maxParts {
		var victim partKey
		var oldest uint64 = math.MaxUint64
		for k, pp := range cur.parts {
			if pp.pending == nil && pp.loading == nil && pp.used < oldest {
				victim, oldest = k, pp.used
			}
		}
		if oldest == math.MaxUint64 {
			break
		}
		delete(cur.parts, victim)
		t.entries--
	}
	e := t.lru.Back()
	for e != nil && (len(t.byID) > t.maxProducers || t.entries > t.maxEntries) {
		prev := e.Prev()
		if p := e.Value.(*pidProducer); p != cur && p.busy == 0 {
			t.lru.Remove(e)
			delete(t.byID, p.id)
			t.entries -= len(p.parts)
		}
		e = prev
	}
}

// tracked returns the number of producers and partition entries held (for
// tests and metrics).
func (t *State) tracked() (producers, entries int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.byID), t.entries
}
