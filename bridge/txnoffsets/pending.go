// Package txnoffsets holds the offsets a transaction commits for a consumer
// group (TxnOffsetCommit, issue 25) until the transaction ends: invisible to
// OffsetFetch, which answers UNSTABLE_OFFSET_COMMIT for them when the client
// asks require_stable, then stored through the normal commit path when the
// transaction commits, or dropped when it aborts (the bridge's
// ResolveTxnOffsets, which the transaction coordinator calls).
//
// Where. The pending offsets of a group live in the memory of the owner of
// the group's shard (bridge/cluster forwards the calls, kinds 50-53), or of
// the one sidecar, which persists each change of a group in Iggy before it
// answers it (Durable: a snapshot of the group in topic
// __kafka_iggy/txnoffsets.<domain>, the group's shard partition, or
// __kafka_iggy/txnoffsets for a sidecar without peers) and restores it
// before it first serves the group (after a restart, or as the next owner
// of the shard), so a SIGKILLed or restarted owner loses nothing: a
// transaction that then commits commits its offsets, once (its
// resolution's Forget is persisted too). Nothing is ever committed that
// its transaction did not commit.
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

type pending struct {
	epoch int16
	offs  map[tp]int64
}

type tp struct {
	topic     string
	partition int32
}

// groupState is what one group holds pending.
type groupState struct {
	prods map[int64]*pending // by producer id
	parts map[tp]int         // pending producers per partition
}

// Pending is the in-memory store of one sidecar. Safe for concurrent use.
type Pending struct {
	budget *budget.Budget

	mu     sync.Mutex
	groups map[string]*groupState
	n      int
}

var _ Service = (*Pending)(nil)

// New returns an empty store charging b (nil: no budget).
func New(b *budget.Budget) *Pending {
	return &Pending{budget: b, groups: map[string]*groupState{}}
}

// Add implements Service. A newer epoch of the producer replaces what an
// older one held (that transaction was fenced and aborted).
func (s *Pending) Add(_ context.Context, group string, producerID int64, epoch int16, offs []Offset) int16 {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.groups[group]
	var p *pending
	if g != nil {
		p = g.prods[producerID]
	}
	switch {
	case p != nil && epoch < p.epoch:
		return kerr.InvalidProducerEpoch.Code
	case p != nil && epoch > p.epoch:
		s.dropLocked(group, producerID)
		p = nil
	}
	added := 0 // distinct partitions p does not hold yet
	seen := make(map[tp]struct{}, len(offs))
	for _, o := range offs {
		key := tp{o.Topic, o.Partition}
		if _, dup := seen[key]; dup {
			continue
		}
		seen[key] = struct{}{}
		if p == nil {
			added++
		} else if _, ok := p.offs[key]; !ok {
			added++
		}
	}
	if s.n+added > MaxEntries {
		return kerr.CoordinatorLoadInProgress.Code
	}
	if p == nil {
		p = &pending{epoch: epoch, offs: map[tp]int64{}}
		s.groupLocked(group).prods[producerID] = p
	}
	g = s.groups[group]
	for _, o := range offs {
		key := tp{o.Topic, o.Partition}
		if _, ok := p.offs[key]; !ok {
			g.parts[key]++
		}
		p.offs[key] = o.Offset
	}
	s.n += added
	s.budget.Charge(int64(added) * entryBytes)
	return 0
}

func (s *Pending) groupLocked(group string) *groupState {
	g := s.groups[group]
	if g == nil {
		g = &groupState{prods: map[int64]*pending{}, parts: map[tp]int{}}
		s.groups[group] = g
	}
	return g
}

// Pending implements Service.
func (s *Pending) Pending(_ context.Context, group string, producerID int64, epoch int16) ([]Offset, int16) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.groups[group]
	if g == nil {
		return nil, 0
	}
	p := g.prods[producerID]
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
	if g := s.groups[group]; g != nil {
		if p := g.prods[producerID]; p != nil && p.epoch <= epoch {
			s.dropLocked(group, producerID)
		}
	}
	return 0
}

// dropLocked drops what producerID holds for group (present).
func (s *Pending) dropLocked(group string, producerID int64) {
	g := s.groups[group]
	p := g.prods[producerID]
	for key := range p.offs {
		if g.parts[key]--; g.parts[key] <= 0 {
			delete(g.parts, key)
		}
	}
	delete(g.prods, producerID)
	if len(g.prods) == 0 {
		delete(s.groups, group)
	}
	s.n -= len(p.offs)
	s.budget.Release(int64(len(p.offs)) * entryBytes)
}

// Unstable implements Service.
func (s *Pending) Unstable(_ context.Context, group string, parts []Offset) ([]bool, int16) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]bool, len(parts))
	g := s.groups[group]
	if g == nil {
		return out, 0
	}
	for i, p := range parts {
		out[i] = g.parts[tp{p.Topic, p.Partition}] > 0
	}
	return out, 0
}

// Has reports whether group holds anything pending.
func (s *Pending) Has(group string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.groups[group] != nil
}

// Drop forgets every group for which match is true (their owner moved
// away; the new owner restores them from Iggy). It returns how many.
func (s *Pending) Drop(match func(group string) bool) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for group, g := range s.groups {
		if !match(group) {
			continue
		}
		for pid := range g.prods {
			s.dropLocked(group, pid)
		}
		n++
	}
	return n
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
