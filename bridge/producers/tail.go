package producers

// Producer state read back from Iggy (KAFKA-ON-IGGY §4). The messages of
// an idempotent batch carry their producer id, epoch and sequence in their
// Iggy message ids (id.go). When a batch arrives for a (producer,
// partition) whose state this sidecar does not hold (after a restart, a
// SIGKILL included; a producer id another sidecar handed out; state the
// LRU forgot; or a write of this producer and partition that failed or
// whose outcome is unknown), the sidecar first reads back at most the
// partition's last producer.recovery_tail_messages messages (producerTail)
// and rebuilds the producer's state from them: its newest epoch and the last pidBatches runs of
// consecutive sequences at consecutive offsets. Then the usual rules
// apply (state.go): a batch inside a run is a retry, answered with the
// offset its first record got and not written again; the next sequence is
// written; a gap waits, then answers OUT_OF_ORDER_SEQUENCE_NUMBER; an old
// epoch INVALID_PRODUCER_EPOCH. A batch above sequence 0 of a producer the
// tail does not know either answers UNKNOWN_PRODUCER_ID, never a silent
// new start: franz-go then loads a new producer id and renumbers its
// batches from 0 (kgo's sink, by default; with StopProducerOnDataLoss it
// fails them); the Java client (KIP-360) bumps its epoch, which this
// sidecar has not tested.
//
// The read is skipped for a batch at sequence 0 of a producer id this
// process handed out (nothing of it can be in Iggy yet), unless a write
// of that producer and partition failed before.

import (
	"context"
	"math"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

// pidTailReader reads producer pid's state back from the tail of a
// partition.
type pidTailReader func(ctx context.Context, topic string, partition int32, pid int64) (pidTail, error)

// pidTail is a producer's state as the tail of a partition holds it.
type pidTail struct {
	found bool
	epoch int16      // the producer's newest epoch in the tail
	runs  []pidBatch // that epoch's last runs (run set), oldest first, at most pidBatches
}

// needTail reports whether pp must be read back from Iggy before a batch
// at baseSeq of pid is checked; when it need not, pp counts as loaded.
// Caller holds t.mu.
func (t *State) needTail(pp *pidPartition, pid int64, baseSeq int32) bool {
	if pp.loaded || t.tail == nil {
		return false
	}
	if !pp.reload && baseSeq == 0 && t.own(pid) {
		pp.loaded = true
		return false
	}
	return true
}

// load reads pp's state back from the partition's tail. Caller holds t.mu
// (released during the read, held again on return). A non-zero code
// refuses the batch: the read failed (a retriable error).
func (t *State) load(ctx context.Context, p *pidProducer, pp *pidPartition, pid int64, key partKey) int16 {
	ch := make(chan struct{})
	pp.loading = ch
	p.busy++
	t.mu.Unlock()
	tail, err := t.tail(ctx, key.topic, key.partition, pid)
	t.mu.Lock()
	p.busy--
	pp.loading = nil
	close(ch)
	if err != nil {
		t.log.Debug().Err(err).Int64("producer_id", pid).Str("topic", key.topic).Int32("partition", key.partition).
			Msg("producer state: reading the partition's tail failed")
		return kerr.NotLeaderForPartition.Code
	}
	pp.loaded, pp.reload = true, false
	if tail.found && tail.epoch >= pp.epoch {
		pp.epoch, pp.n, pp.head = tail.epoch, 0, pidBatches-1
		for _, r := range tail.runs {
			pp.head = (pp.head + 1) % pidBatches
			pp.batches[pp.head] = r
			pp.n++
		}
	}
	ev := t.log.Debug().Int64("producer_id", pid).Str("topic", key.topic).Int32("partition", key.partition).Bool("found", tail.found)
	if pp.n > 0 {
		ev = ev.Int16("producer_epoch", pp.epoch).Int32("last_sequence", pp.batches[pp.head].last)
	}
	ev.Msg("producer state read back from iggy")
	return 0
}

// A read-back's first poll asks for pidTailChunk messages (32 records of
// Kafka's default 1 MiB max.message.bytes stay under Iggy's 64 MiB frame);
// each next one for as many as pidTailChunkBytes of messages of the sizes
// seen so far would take, at most pidTailChunkMax.
const (
	pidTailChunk      = 32
	pidTailChunkMax   = 1024
	pidTailChunkBytes = 16 << 20
)

// producerTail is the Bridge's pidTailReader. It reads the partition's
// last n messages backwards, pidTailChunk at a time, and stops early once
// the chunks read hold pidBatches complete runs of pid (a retry is never
// of an older batch than those, as on a broker); then it scans them in
// offset order. 0 turns reading back off (nil).
func producerTail(n int, d Deps) pidTailReader {
	if n <= 0 {
		return nil
	}
	return func(ctx context.Context, topic string, partition int32, pid int64) (pidTail, error) {
		ref := d.Ref(topic)
		var chunks []*iggy.Polled // newest first
		defer func() {
			for _, pl := range chunks {
				pl.Release()
			}
		}()
		lo, scanned, runs, size, chunk := int64(-1), 0, 0, 0, pidTailChunk
		var newer tailMsg // the first message of the chunk read before (newer)
		for scanned < n && lo != 0 && runs < pidBatches {
			var pl *iggy.Polled
			var err error
			count := min(chunk, n-scanned)
			if lo < 0 {
				pl, err = d.Poll(ctx, ref, partition, icodec.PollingKindLast, 0, uint32(count))
			} else {
				from := max(0, lo-int64(count))
				pl, err = d.Poll(ctx, ref, partition, icodec.PollingKindOffset, uint64(from), uint32(lo-from))
			}
			if err != nil {
				return pidTail{}, err
			}
			first, starts, msgs := runStarts(pl, pid, &newer)
			if msgs == 0 {
				pl.Release()
				break
			}
			chunks = append(chunks, pl)
			scanned += msgs
			size += len(pl.Batches)
			chunk = max(1, min(pidTailChunkMax, pidTailChunkBytes/max(1, size/scanned)))
			runs += starts
			lo = first
		}
		var sc pidTailScan
		for i := len(chunks) - 1; i >= 0; i-- {
			it := chunks[i].Messages()
			sc.feed(&it, pid)
		}
		return sc.tail, nil
	}
}

// tailMsg is what runStarts keeps of a message.
type tailMsg struct {
	set  bool
	mine bool // pid's
	seq  int32
	off  int64
}

// follows reports whether m continues the run of p (both pid's).
func (m tailMsg) follows(p tailMsg) bool {
	return m.mine && p.mine && p.seq != math.MaxInt32 && m.seq == p.seq+1 && m.off == p.off+1
}

// runStarts walks a polled chunk (older than the one whose first message
// is newer) and counts the messages of pid that start a run, now that
// their predecessor is known: those of the chunk after its first, and
// newer's first. It returns the chunk's first offset, that count and the
// number of messages, and leaves the chunk's first message in newer.
func runStarts(pl *iggy.Polled, pid int64, newer *tailMsg) (first int64, starts, n int) {
	var prev, head tailMsg
	it := pl.Messages()
	for it.Next() {
		m := it.Message()
		id, _, seq, ok := parsePIDMessageID(m.ID)
		cur := tailMsg{set: true, mine: ok && id == pid, seq: seq, off: int64(m.Offset)}
		if n == 0 {
			head = cur
		} else if cur.mine && !cur.follows(prev) {
			starts++
		}
		prev = cur
		n++
	}
	if n == 0 {
		return 0, 0, 0
	}
	if newer.set && newer.mine && !newer.follows(prev) {
		starts++
	}
	*newer = head
	return head.off, starts, n
}

// scanProducerTail collects pid's newest epoch and its last runs from
// messages in offset order.
func scanProducerTail(it *icodec.MessageIter, pid int64) pidTail {
	var sc pidTailScan
	sc.feed(it, pid)
	return sc.tail
}

// pidTailScan collects a producer's newest epoch and last runs from
// messages fed in offset order.
type pidTailScan struct {
	tail    pidTail
	lastOff int64 // offset of the last message of the newest run
}

// feed scans it's messages.
func (sc *pidTailScan) feed(it *icodec.MessageIter, pid int64) {
	tl := &sc.tail
	for it.Next() {
		m := it.Message()
		off := int64(m.Offset)
		id, epoch, seq, ok := parsePIDMessageID(m.ID)
		if !ok || id != pid {
			continue
		}
		if !tl.found || epoch != tl.epoch {
			tl.found, tl.epoch, tl.runs = true, epoch, tl.runs[:0]
		}
		if n := len(tl.runs); n > 0 {
			r := &tl.runs[n-1]
			if r.last != math.MaxInt32 && seq == r.last+1 && off == sc.lastOff+1 {
				r.last, sc.lastOff = seq, off
				continue
			}
		}
		if len(tl.runs) == pidBatches {
			copy(tl.runs, tl.runs[1:])
			tl.runs = tl.runs[:pidBatches-1]
		}
		tl.runs = append(tl.runs, pidBatch{first: seq, last: seq, base: off, run: true})
		sc.lastOff = off
	}
}
