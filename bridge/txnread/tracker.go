// Package txnread is the read side of transactions (issue 25,
// docs/KAFKA-ON-IGGY.md "Transactions"): a per-partition tracker that learns
// from a partition's messages which transactions are still open (the last
// stable offset), which were aborted (Fetch's aborted_transactions), and what
// each transactional producer did last (DescribeProducers).
//
// The tracker reads the contract of codec/records/txn.go: a record of a
// transaction carries the user header kafka.t (records.TxnMark), the end of
// the transaction in the partition is one marker message (kafka.ctl C or A).
// A transaction is open in a partition from its first record there until its
// marker.
//
// Learning. A partition is scanned forward from what the tracker knows up to
// its end, one bounded poll at a time, whenever a read_committed Fetch or
// ListOffsets asks for its last stable offset (read_uncommitted reads never
// touch the tracker). The first use of a partition (and the first after a
// restart: the tracker lives in memory) starts the scan Config.Window
// messages back from the partition's end, not at its start. Past that bound:
//   - a transaction whose records all lie before the window and whose
//     marker is not written yet is not known to be open: the last stable
//     offset can be too high for it (its records read as committed until the
//     marker, then its abort marker tells Kafka clients nothing: they
//     already delivered them);
//   - an abort marker whose transaction began before the window is reported
//     with the window's start as its first offset, so its records before the
//     window are not filtered by a client reading from there.
//
// One scan call reads at most Config.MaxScan messages: a partition not yet
// scanned to its end reports the scanned frontier as its last stable offset
// (safe: nothing unscanned is returned to read_committed readers).
//
// Memory: every open transaction, aborted range, recent decision and
// producer entry is charged to the process budget (package budget) at a
// fixed size; aborted ranges and recent decisions are bounded per partition
// by Config.MaxAborted, producers by Config.MaxProducers (open transactions
// are not: each is a transaction its coordinator has not ended, which its
// timeout bounds), and partitions
// (Config.MaxPartitions; past it a partition not in use is forgotten and
// rebuilt from the window on its next use). The oldest aborted ranges go
// first, and ranges below the partition's log start are dropped.
package txnread

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
	"github.com/kafka-iggy/kafka-iggy/budget"
	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
	"github.com/kafka-iggy/kafka-iggy/codec/records"
	"github.com/kafka-iggy/kafka-iggy/codec/wire"
)

// Defaults of Config.
const (
	DefaultWindow        = 100_000
	DefaultMaxScan       = 1_000_000
	DefaultMaxAborted    = 4096
	DefaultMaxProducers  = 1024
	DefaultMaxPartitions = 16384
	// pollBytes bounds the bytes one scan poll asks for (at the partition's
	// average message size).
	pollBytes = 4 << 20
	// pollMax bounds the messages of one scan poll.
	pollMax = 1000
	// entryBytes is what one open transaction, aborted range or producer
	// entry is charged (map/slice entry and its struct).
	entryBytes = 96
	// partBytes is what a tracked partition is charged.
	partBytes = 256
)

// Config bounds the tracker.
type Config struct {
	Window        uint64 // messages scanned back from a partition's end on first use
	MaxScan       uint64 // messages one Stable call reads at most
	MaxAborted    int    // aborted ranges kept per partition
	MaxProducers  int    // producers kept per partition
	MaxPartitions int    // partitions tracked
}

func (c *Config) defaults() {
	if c.Window == 0 {
		c.Window = DefaultWindow
	}
	if c.MaxScan == 0 {
		c.MaxScan = DefaultMaxScan
	}
	if c.MaxAborted <= 0 {
		c.MaxAborted = DefaultMaxAborted
	}
	if c.MaxProducers <= 0 {
		c.MaxProducers = DefaultMaxProducers
	}
	if c.MaxPartitions <= 0 {
		c.MaxPartitions = DefaultMaxPartitions
	}
}

// PollFunc polls one partition (the bridge's single-consumer poll).
type PollFunc func(ctx context.Context, ref iggy.TopicRef, partition int32, kind icodec.PollingKind, value uint64, count uint32) (*iggy.Polled, error)

// SequenceFunc reads the Kafka sequence from an idempotent producer's Iggy
// message id (ok false for other ids).
type SequenceFunc func(id wire.U128) (int32, bool)

// Key names a Kafka partition.
type Key struct {
	Topic     string
	Partition int32
}

// Aborted is one aborted transaction in a partition: its producer, its first
// record's offset and its marker's offset.
type Aborted struct {
	ProducerID int64
	First      int64
	Last       int64
}

// Producer is what a partition says about one transactional producer, as
// DescribeProducers reports it.
type Producer struct {
	ProducerID       int64
	Epoch            int16
	LastSequence     int32 // -1 when unknown
	LastTimestamp    int64 // ms; -1 when unknown
	CoordinatorEpoch int32 // of the last marker; -1 before any
	TxnStartOffset   int64 // first offset of its open transaction; -1 when none

	end int64 // offset after its last marker scanned; -1 before any
	// markEpoch is the highest epoch of its markers scanned, markAt the
	// offset of the first marker with it (-1 before any).
	markEpoch int16
	markAt    int64
}

// Tracker tracks the transactions of the partitions read_committed readers
// read. Safe for concurrent use.
type Tracker struct {
	cfg    Config
	poll   PollFunc
	seq    SequenceFunc
	budget *budget.Budget
	log    zerolog.Logger

	mu    sync.Mutex
	parts map[Key]*part
}

// New builds a tracker; seq may be nil (sequences then read -1), b may be nil.
func New(cfg Config, poll PollFunc, seq SequenceFunc, b *budget.Budget, log zerolog.Logger) *Tracker {
	cfg.defaults()
	return &Tracker{cfg: cfg, poll: poll, seq: seq, budget: b, log: log, parts: map[Key]*part{}}
}

// part is one partition's state; mu serializes its scans.
type part struct {
	mu        sync.Mutex
	users     int // Stable calls holding it (not evicted while > 0)
	started   bool
	from      uint64 // first offset scanned
	next      uint64 // offset the scan resumes at
	open      map[records.TxnMark]int64
	decided   map[records.TxnMark]int64 // recent decisions and their markers' offsets: late records of them stay closed
	aborted   []Aborted                 // by Last, ascending
	producers map[int64]*Producer
	charged   atomic.Int64
	touched   time.Time // under Tracker.mu
}

func (t *Tracker) get(k Key) *part {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.parts[k]
	if p == nil {
		if len(t.parts) >= t.cfg.MaxPartitions {
			t.evictLocked()
		}
		p = &part{open: map[records.TxnMark]int64{}, decided: map[records.TxnMark]int64{}, producers: map[int64]*Producer{}}
		t.parts[k] = p
		t.budget.Charge(partBytes)
		p.charged.Store(partBytes)
	}
	p.users++
	p.touched = time.Now() // under t.mu, as evictLocked reads it
	return p
}

func (t *Tracker) put(p *part) {
	t.mu.Lock()
	p.users--
	t.mu.Unlock()
}

// evictLocked forgets the least recently used partition nobody holds.
func (t *Tracker) evictLocked() {
	var victim Key
	var vp *part
	for k, p := range t.parts {
		if p.users == 0 && (vp == nil || p.touched.Before(vp.touched)) {
			victim, vp = k, p
		}
	}
	if vp != nil {
		delete(t.parts, victim)
		t.budget.Release(vp.charged.Load())
	}
}

// Stable scans the partition forward to its end (within Config.MaxScan) and
// returns its last stable offset: the first offset of the earliest open
// transaction, else the offset after the last message scanned. avg is the
// partition's bytes per message (0: unknown) and sizes the polls.
func (t *Tracker) Stable(ctx context.Context, k Key, ref iggy.TopicRef, avg int) (int64, error) {
	p := t.get(k)
	defer t.put(p)
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := t.scan(ctx, k, ref, p, avg); err != nil {
		return 0, err
	}
	lso := int64(p.next)
	for _, first := range p.open {
		lso = min(lso, first)
	}
	return lso, nil
}

// scan reads the partition from p.next to its end.
func (t *Tracker) scan(ctx context.Context, k Key, ref iggy.TopicRef, p *part, avg int) error {
	if !p.started {
		last, err := t.poll(ctx, ref, k.Partition, icodec.PollingKindLast, 0, 1)
		if err != nil {
			return err
		}
		end := uint64(0)
		if last.Count > 0 {
			end = last.CurrentOffset + 1
		}
		last.Release()
		if end > t.cfg.Window {
			p.from = end - t.cfg.Window
		}
		p.next, p.started = p.from, true
	}
	count := uint32(pollMax)
	if avg > 0 {
		count = uint32(min(max(pollBytes/avg, 1), pollMax))
	}
	var read uint64
	for read < t.cfg.MaxScan {
		count := uint32(min(uint64(count), t.cfg.MaxScan-read))
		polled, err := t.poll(ctx, ref, k.Partition, icodec.PollingKindOffset, p.next, count)
		if err != nil {
			return err
		}
		if polled.Count == 0 {
			end := polled.CurrentOffset + 1 // the partition's end (an empty one: 0 or 1)
			polled.Release()
			if p.next > 1 && end < p.next {
				// The partition ends below what was scanned: the topic
				// was deleted and created again. Start afresh.
				t.reset(p)
				return t.scan(ctx, k, ref, p, avg)
			}
			return nil
		}
		it := polled.Messages()
		for it.Next() {
			m := it.Message()
			if m.Offset < p.next {
				continue
			}
			t.learn(p, &m)
			p.next = m.Offset + 1
			read++
		}
		err = it.Err()
		got := polled.Count
		polled.Release()
		if err != nil {
			return err
		}
		if got < count {
			return nil
		}
	}
	return nil
}

// reset forgets what p learned.
func (t *Tracker) reset(p *part) {
	t.charge(p, -(len(p.open) + len(p.decided) + len(p.aborted) + len(p.producers)))
	p.started, p.from, p.next = false, 0, 0
	clear(p.open)
	clear(p.decided)
	clear(p.producers)
	p.aborted = p.aborted[:0]
}

// learn applies one message to the partition's state.
func (t *Tracker) learn(p *part, m *icodec.Message) {
	info, state := records.ReadTxnHeaders(m.Headers)
	switch state {
	case records.TxnData:
		mk := info.Mark
		pr := t.producer(p, mk.ProducerID) // nil past MaxProducers: not described
		if pr != nil {
			pr.Epoch, pr.LastTimestamp = mk.Epoch, msTime(m)
			if t.seq != nil {
				if s, ok := t.seq(m.ID); ok {
					pr.LastSequence = s
				}
			}
		}
		if _, done := p.decided[mk]; done {
			return // a late record of a decided transaction: never reopens it
		}
		if _, ok := p.open[mk]; !ok {
			p.open[mk] = int64(m.Offset)
			t.charge(p, 1)
			if pr != nil {
				pr.TxnStartOffset = int64(m.Offset)
			}
		}
	case records.TxnMarker:
		mk := info.Mark
		pr := t.producer(p, mk.ProducerID)
		first, ok := p.open[mk]
		switch {
		case ok:
			delete(p.open, mk)
			t.charge(p, -1)
		case pr != nil && pr.end >= 0:
			// No record of it scanned: empty here, or begun before the
			// window. Its records can only follow the producer's previous
			// marker, so the range starts there (a range without records
			// of the producer is harmless to clients).
			first = pr.end
		default:
			first = int64(p.from)
		}
		if _, dup := p.decided[mk]; dup {
			return // a second marker for one transaction (a coordinator's retry)
		}
		if len(p.decided) >= t.cfg.MaxAborted {
			t.charge(p, -len(p.decided))
			clear(p.decided)
		}
		p.decided[mk] = int64(m.Offset)
		t.charge(p, 1)
		if pr != nil {
			pr.end = int64(m.Offset) + 1
			if pr.markAt < 0 || mk.Epoch > pr.markEpoch {
				pr.markEpoch, pr.markAt = mk.Epoch, int64(m.Offset)
			}
			pr.Epoch = max(pr.Epoch, mk.Epoch)
			pr.CoordinatorEpoch = info.CoordEpoch
			pr.LastTimestamp = msTime(m)
			pr.TxnStartOffset = -1
			for om := range p.open {
				if om.ProducerID == mk.ProducerID {
					pr.TxnStartOffset = p.open[om]
				}
			}
		}
		if info.Control == records.ControlAbort {
			if len(p.aborted) >= t.cfg.MaxAborted {
				p.aborted = slices.Delete(p.aborted, 0, 1)
				t.charge(p, -1)
			}
			p.aborted = append(p.aborted, Aborted{ProducerID: mk.ProducerID, First: first, Last: int64(m.Offset)})
			t.charge(p, 1)
		}
	}
}

func (t *Tracker) producer(p *part, pid int64) *Producer {
	pr := p.producers[pid]
	if pr == nil {
		if len(p.producers) >= t.cfg.MaxProducers {
			return nil
		}
		pr = &Producer{ProducerID: pid, LastSequence: -1, LastTimestamp: -1, CoordinatorEpoch: -1, TxnStartOffset: -1, end: -1, markAt: -1}
		p.producers[pid] = pr
		t.charge(p, 1)
	}
	return pr
}

func (t *Tracker) charge(p *part, entries int) {
	n := int64(entries) * entryBytes
	if n > 0 {
		t.budget.Charge(n)
	} else {
		t.budget.Release(-n)
	}
	p.charged.Add(n)
}

// msTime is a message's Kafka timestamp: the producer's, else the append time.
func msTime(m *icodec.Message) int64 {
	ts := m.OriginTimestamp
	if ts == 0 {
		ts = m.Timestamp
	}
	return int64(ts / 1000)
}

// Late returns the read_committed filter of a partition (nil when it is not
// tracked): whether a record of transaction mk at offset off was written
// after that transaction was decided in the partition (after its marker),
// or after a marker of a later epoch of its producer. Those are a fenced
// producer's (a zombie's) writes that its sidecar admitted before learning
// of the fence (bridge/txn's Gate.Recheck): Kafka would have refused them,
// and no aborted_transactions entry can hide them from a client (its abort
// marker already closed the range), so Fetch leaves them out. Only offsets
// the tracker scanned are judged (read_committed reads stop at the last
// stable offset, below its scan frontier).
func (t *Tracker) Late(k Key) func(mk records.TxnMark, off uint64) bool {
	t.mu.Lock()
	p := t.parts[k]
	t.mu.Unlock()
	if p == nil {
		return nil
	}
	return func(mk records.TxnMark, off uint64) bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		if at, ok := p.decided[mk]; ok && int64(off) > at {
			return true
		}
		pr := p.producers[mk.ProducerID]
		return pr != nil && pr.markAt >= 0 && mk.Epoch < pr.markEpoch && int64(off) > pr.markAt
	}
}

// Tracked reports whether the partition is tracked (a Stable call learned
// it and it was not forgotten since).
func (t *Tracker) Tracked(k Key) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.parts[k] != nil
}

// AbortedIn appends to dst the aborted transactions overlapping [from, to):
// marker at or past from, first record before to (Kafka's rule for
// aborted_transactions), dropping ranges wholly below logStart.
func (t *Tracker) AbortedIn(dst []Aborted, k Key, from, to, logStart int64) []Aborted {
	t.mu.Lock()
	p := t.parts[k]
	t.mu.Unlock()
	if p == nil || to <= from {
		return dst
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	drop := 0
	for drop < len(p.aborted) && p.aborted[drop].Last < logStart {
		drop++
	}
	if drop > 0 {
		p.aborted = slices.Delete(p.aborted, 0, drop)
		t.charge(p, -drop)
	}
	i, _ := slices.BinarySearchFunc(p.aborted, from, func(a Aborted, off int64) int {
		switch {
		case a.Last < off:
			return -1
		case a.Last > off:
			return 1
		}
		return 0
	})
	for ; i < len(p.aborted); i++ {
		if a := p.aborted[i]; a.First < to && a.Last >= from {
			dst = append(dst, a)
		}
	}
	return dst
}

// Producers returns the producers the partition's scanned messages name
// (after a Stable call), ordered by producer id.
func (t *Tracker) Producers(k Key) []Producer {
	t.mu.Lock()
	p := t.parts[k]
	t.mu.Unlock()
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]Producer, 0, len(p.producers))
	for _, pr := range p.producers {
		out = append(out, *pr)
	}
	slices.SortFunc(out, func(a, b Producer) int {
		switch {
		case a.ProducerID < b.ProducerID:
			return -1
		case a.ProducerID > b.ProducerID:
			return 1
		}
		return 0
	})
	return out
}
