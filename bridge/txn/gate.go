package txn

import (
	"context"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kafka-iggy/kafka-iggy/codec/records"
)

// Gate is the producer side of transactions at a producer's local sidecar
// (every request of a Kafka client goes to it): per producer id, the
// epoch, the open transaction's sequence and partitions, and the
// transactional Produce batches in flight. Admit lets a batch in only for
// a partition of the open transaction, with the current epoch, and never
// while its EndTxn runs; End waits for the batches in flight before the
// EndTxn goes to the coordinator. So a produce that arrives after EndTxn
// started is refused, never folded into the transaction (the Jepsen
// hanging-transaction class).
type Gate struct {
	mu    sync.Mutex
	prods map[int64]*producer
	max   int
}

type producer struct {
	id        string // transactional id
	epoch     int16
	open      bool
	ending    bool
	seq       uint32
	markEpoch int16
	parts     map[Partition]struct{}
	inflight  int
	idle      chan struct{} // closed when inflight drops to 0 while an End waits
	fenced    bool          // its transactional id moved on to another producer id
	checked   time.Time     // when the coordinator last told this gate its state
}

// NewGate returns a gate remembering at most max producers (the oldest
// entry without batches in flight is forgotten first; a forgotten one is
// looked up from its coordinator again).
func NewGate(max int) *Gate { return &Gate{prods: map[int64]*producer{}, max: max} }

// Set records what the coordinator answered for producer pid (InitProducerId,
// AddPartitionsToTxn, a View): its epoch and open transaction.
func (g *Gate) Set(id string, v View) {
	g.mu.Lock()
	defer g.mu.Unlock()
	p := g.prods[v.ProducerID]
	if p == nil {
		if len(g.prods) >= g.max {
			for k, q := range g.prods {
				if q.inflight == 0 && !q.ending {
					delete(g.prods, k)
					break
				}
			}
		}
		p = &producer{}
		g.prods[v.ProducerID] = p
	}
	if p.epoch != v.Epoch || p.seq != v.Seq || !v.Open {
		p.parts = map[Partition]struct{}{}
	}
	p.id, p.epoch, p.open, p.seq, p.markEpoch = id, v.Epoch, v.Open, v.Seq, v.MarkEpoch
	p.fenced, p.checked = false, time.Now()
	for _, q := range v.Parts {
		p.parts[q] = struct{}{}
	}
}

// Known reports whether the gate holds producer pid.
func (g *Gate) Known(pid int64) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.prods[pid] != nil
}

// Due reports whether producer pid's state was last learned from its
// coordinator more than every ago; it then stamps it, so that one caller
// revalidates it (Recheck) while the others go on with what the gate knows.
func (g *Gate) Due(pid int64, every time.Duration) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	p := g.prods[pid]
	if p == nil || every <= 0 || time.Since(p.checked) < every {
		return false
	}
	p.checked = time.Now()
	return true
}

// Recheck applies what the coordinator now says of producer pid's
// transactional id (a View asked after Due) to the gate, only as far as it
// ends what the gate admits: a newer producer id fences pid, a newer epoch
// (a new instance's InitProducerId through another sidecar) fences the
// old one, and a later transaction or the same one no longer open (ended
// or aborted by the coordinator, e.g. on its timeout) closes the open
// one. It never opens anything, so a View older than an
// AddPartitionsToTxn answered meanwhile is harmless.
func (g *Gate) Recheck(pid int64, v View) {
	g.mu.Lock()
	defer g.mu.Unlock()
	p := g.prods[pid]
	switch {
	case p == nil:
		return
	case v.ProducerID != pid:
		p.fenced = true
	case v.Epoch > p.epoch:
		p.epoch = v.Epoch
	case v.Epoch == p.epoch && (v.Seq > p.seq || (v.Seq == p.seq && !v.Open)):
	default:
		return
	}
	if !p.ending {
		p.open = false
		p.parts = map[Partition]struct{}{}
	}
}

// Admit checks a transactional batch of producer pid at epoch for a
// partition. It returns the mark its records carry and a release to call
// once its write is over, or the Kafka code refusing it: an old epoch
// INVALID_PRODUCER_EPOCH, a newer one (fenced elsewhere) PRODUCER_FENCED, a
// partition not in the open transaction or an EndTxn under way
// INVALID_TXN_STATE, an unknown producer INVALID_PRODUCER_ID_MAPPING.
func (g *Gate) Admit(pid int64, epoch int16, part Partition) (records.TxnMark, func(), int16) {
	g.mu.Lock()
	defer g.mu.Unlock()
	p := g.prods[pid]
	switch {
	case p == nil:
		return records.TxnMark{}, nil, kerr.InvalidProducerIDMapping.Code
	case epoch < p.epoch, p.fenced:
		return records.TxnMark{}, nil, kerr.InvalidProducerEpoch.Code
	case epoch > p.epoch:
		return records.TxnMark{}, nil, kerr.ProducerFenced.Code
	case !p.open || p.ending:
		return records.TxnMark{}, nil, kerr.InvalidTxnState.Code
	}
	if _, ok := p.parts[part]; !ok {
		return records.TxnMark{}, nil, kerr.InvalidTxnState.Code
	}
	p.inflight++
	var once sync.Once
	return records.TxnMark{ProducerID: pid, Epoch: p.markEpoch, Seq: p.seq}, func() {
		once.Do(func() {
			g.mu.Lock()
			defer g.mu.Unlock()
			if p.inflight--; p.inflight == 0 && p.idle != nil {
				close(p.idle)
				p.idle = nil
			}
		})
	}, 0
}

// End starts producer pid's EndTxn: from now on its batches are refused,
// and it waits until those in flight are written (or ctx ends). done
// closes the transaction in the gate (its next one opens with the next
// AddPartitionsToTxn).
func (g *Gate) End(ctx context.Context, pid int64) (done func(), err error) {
	g.mu.Lock()
	p := g.prods[pid]
	if p == nil {
		g.mu.Unlock()
		return func() {}, nil
	}
	p.ending = true
	for p.inflight > 0 {
		if p.idle == nil {
			p.idle = make(chan struct{})
		}
		idle := p.idle
		g.mu.Unlock()
		select {
		case <-idle:
		case <-ctx.Done():
			g.mu.Lock()
			p.ending = false
			g.mu.Unlock()
			return nil, ctx.Err()
		}
		g.mu.Lock()
	}
	g.mu.Unlock()
	return func() {
		g.mu.Lock()
		p.ending, p.open = false, false
		p.parts = map[Partition]struct{}{}
		g.mu.Unlock()
	}, nil
}
