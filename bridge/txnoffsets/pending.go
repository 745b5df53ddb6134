// Package txnoffsets holds the offsets a transaction commits for a consumer
// group (TxnOffsetCommit, issue 25) until the transaction ends: invisible to
// OffsetFetch, which answers UNSTABLE_OFFSET_COMMIT for them when the client
// asks require_stable, then stored through the normal commit path when the
// transaction commits, or dropped when it aborts (the bridge's
// ResolveTxnOffsets, which the transaction coordinator calls).
//
// Where. The pending offsets of a group live in the memory of the owner of
// the group's shard (bridge/cluster forwards the calls, kinds 50-52), or of
// the one sidecar. They are not persisted: when that sidecar restarts or the
// shard moves, the pending offsets of open transactions are lost. A
// transaction that then commits commits its records without its offsets
// (the consumer resumes from the group's previous commit and processes
// those records again); a transaction that aborts loses nothing. Nothing is
// ever committed that its transaction did not commit.
//
// Bounds: at most MaxEntries partitions pending in all (TxnOffsetCommit
// beyond it answers COORDINATOR_LOAD_IN_PROGRESS, retriable), each charged
// to the process budget.
package txnoffsets

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kafka-iggy/kafka-iggy/budget"
)

// MaxEntries bounds the pending partitions of one Pending.
const MaxEntries = 1 << 16

// entryBytes is what one pending partition is charged.
const entryBytes = 128

// Offset is one partition's pending offset.
type Offset struct {
	Topic     string
	Partition int32
	Offset    int64
}

// Service is what the bridge calls: the local Pending, or bridge/cluster's
// forwarding to the group's owner.
type Service interface {
	// Add holds offs for (group, producer id) at epoch; a Kafka code.
	Add(ctx context.Context, group string, producerID int64, epoch int16, offs []Offset) int16
	// Pending returns what (group, producer id) holds at an epoch up to
	// epoch (nothing when none); the code is a coordinator code.
	Pending(ctx context.Context, group string, producerID int64, epoch int16) ([]Offset, int16)
	// Forget drops what Pending returned (idempotent).
	Forget(ctx context.Context, group string, producerID int64, epoch int16) int16
	// Unstable reports, per partition, whether an offset of it is pending.
	Unstable(ctx context.Context, group string, parts []Offset) ([]bool, int16)
}

type producerKey struct {
	group string
	pid   int64
}

type pending struct {
	epoch int16
	offs  map[tp]int64
}

type tp struct {
	topic     string
	partition int32
}

// Pending is the in-memory store of one sidecar. Safe for concurrent use.
type Pending struct {
	budget *budget.Budget

	mu      sync.Mutex
	byPID   map[producerKey]*pending
	byGroup map[string]map[tp]int // pending producers per partition
	n       int
}

var _ Service = (*Pending)(nil)

// New returns an empty store charging b (nil: no budget).
func New(b *budget.Budget) *Pending {
	return &Pending{budget: b, byPID: map[producerKey]*pending{}, byGroup: map[string]map[tp]int{}}
}

// Add implements Service. A newer epoch of the producer replaces what an
// older one held (that transaction was fenced and aborted).
func (s *Pending) Add(_ context.Context, group string, producerID int64, epoch int16, offs []Offset) int16 {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := producerKey{group, producerID}
	p := s.byPID[k]
	switch {
	case p != nil && epoch < p.epoch:
		return kerr.InvalidProducerEpoch.Code
	case p != nil && epoch > p.epoch:
		s.dropLocked(k, p)
		p = nil
	}
	if p == nil {
		p = &pending{epoch: epoch, offs: map[tp]int64{}}
		s.byPID[k] = p
	}
	added := 0
	for _, o := range offs {
		if _, ok := p.offs[tp{o.Topic, o.Partition}]; !ok {
			added++
		}
	}
	if s.n+added > MaxEntries {
		if len(p.offs) == 0 {
			delete(s.byPID, k)
		}
		return kerr.CoordinatorLoadInProgress.Code
	}
	for _, o := range offs {
		key := tp{o.Topic, o.Partition}
		if _, ok := p.offs[key]; !ok {
			g := s.byGroup[group]
			if g == nil {
				g = map[tp]int{}
				s.byGroup[group] = g
			}
			g[key]++
		}
		p.offs[key] = o.Offset
	}
	s.n += added
	s.budget.Charge(int64(added) * entryBytes)
	return 0
}

// Pending implements Service.
func (s *Pending) Pending(_ context.Context, group string, producerID int64, epoch int16) ([]Offset, int16) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.byPID[producerKey{group, producerID}]
	if p == nil || p.epoch > epoch {
		return nil, 0
	}
	out := make([]Offset, 0, len(p.offs))
	for k, off := range p.offs {
		out = append(out, Offset{Topic: k.topic, Partition: k.partition, Offset: off})
	}
	return out, 0
}

// Forget implements Service.
func (s *Pending) Forget(_ context.Context, group string, producerID int64, epoch int16) int16 {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := producerKey{group, producerID}
	if p := s.byPID[k]; p != nil && p.epoch <= epoch {
		s.dropLocked(k, p)
	}
	return 0
}

func (s *Pending) dropLocked(k producerKey, p *pending) {
	g := s.byGroup[k.group]
	for key := range p.offs {
		if g[key]--; g[key] <= 0 {
			delete(g, key)
		}
	}
	if len(g) == 0 {
		delete(s.byGroup, k.group)
	}
	s.n -= len(p.offs)
	s.budget.Release(int64(len(p.offs)) * entryBytes)
	delete(s.byPID, k)
}

// Unstable implements Service.
func (s *Pending) Unstable(_ context.Context, group string, parts []Offset) ([]bool, int16) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]bool, len(parts))
	g := s.byGroup[group]
	for i, p := range parts {
		out[i] = g[tp{p.Topic, p.Partition}] > 0
	}
	return out, 0
}

// Resolve ends what s holds for (group, producer id) at an epoch up to
// epoch: on commit, store is called for each pending offset (all of them,
// errors joined; on any error the offsets stay pending for a retry), then
// they are forgotten; on abort they are forgotten. Idempotent.
func Resolve(ctx context.Context, s Service, group string, producerID int64, epoch int16, commit bool, store func(Offset) error) error {
	if commit {
		offs, code := s.Pending(ctx, group, producerID, epoch)
		if code != 0 {
			return fmt.Errorf("txnoffsets: pending offsets of group %q: coordinator code %d", group, code)
		}
		var errs []error
		for _, o := range offs {
			if err := store(o); err != nil {
				errs = append(errs, fmt.Errorf("%s/%d: %w", o.Topic, o.Partition, err))
			}
		}
		if err := errors.Join(errs...); err != nil {
			return err
		}
	}
	if code := s.Forget(ctx, group, producerID, epoch); code != 0 {
		return fmt.Errorf("txnoffsets: forgetting pending offsets of group %q: coordinator code %d", group, code)
	}
	return nil
}
