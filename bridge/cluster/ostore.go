package cluster

// Pending transactional offsets (bridge/txnoffsets, kinds 50-53) persisted
// in Iggy, so that an owner move (a SIGKILLed owner, a rolling restart)
// between TxnOffsetCommit and EndTxn does not lose them: the transaction
// would commit its records without its offsets and its consumer would
// process them again. Topic txnoffsets.<domain> of coordination.stream
// holds, in the group's shard partition, one snapshot of the group's
// pending offsets per change (txnoffsets.Pending.Snapshot: every producer
// id with its epoch and offsets; none: the tombstone) and the kind-1
// consumer offset kafka.txo.<group> points at the newest. The owner:
//
//   - before it serves a call for a group it has not seen since the shard
//     became ACTIVE here, reads the pointed snapshot and restores it;
//     Iggy unreadable (or the snapshot would pass txnoffsets.MaxEntries):
//     the call answers COORDINATOR_LOAD_IN_PROGRESS and the client (or the
//     transaction coordinator's sweep) retries;
//   - after an Add or a Forget that changed the group, writes its snapshot
//     before the call is answered. A failed write undoes the change (the
//     group leaves memory; its next call reads it again) and the call answers
//     COORDINATOR_LOAD_IN_PROGRESS: TxnOffsetCommit is retried by the
//     client, the resolution by the transaction coordinator. So what a
//     client was told is pending is in Iggy, and what a resolution
//     committed and forgot is never restored again (committed twice).
//
// One group's calls are serialized from the read to the write.

import (
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
	"github.com/kafka-iggy/kafka-iggy/codec/wire"
)

// ostore is the Router's record of what it persisted per group: a hash of
// the last snapshot written or read (absent: not loaded since the shard
// became ACTIVE here, or unknown after a failed write).
type ostore struct {
	locks [64]sync.Mutex // one group's calls in order, by hash of the id
	mu    sync.Mutex
	state map[string]uint64
}

func (s *ostore) lock(group string) *sync.Mutex {
	return &s.locks[icodec.XXH3([]byte(group))%uint64(len(s.locks))]
}

func (s *ostore) get(group string) (uint64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.state[group]
	return v, ok
}

func (s *ostore) set(group string, v uint64) {
	s.mu.Lock()
	if s.state == nil {
		s.state = map[string]uint64{}
	}
	s.state[group] = v
	s.mu.Unlock()
}

// forget drops what is known of the groups for which match is true (their
// shard left this sidecar).
func (s *ostore) forget(match func(string) bool) {
	s.mu.Lock()
	for g := range s.state {
		if match(g) {
			delete(s.state, g)
		}
	}
	s.mu.Unlock()
}

// oserve runs f, a call of the local pending-offsets store for group
// (shard k, ACTIVE here), after the load of the group's persisted pending
// offsets and before the write of their new state. ok is false when the
// state could not be read or the new state not written (then the group
// leaves memory and is read again from Iggy by its next call); the caller
// answers COORDINATOR_LOAD_IN_PROGRESS.
func oserve[R any](ctx context.Context, r *Router, group string, k int, f func() R) (res R, ok bool) {
	mu := r.ost.lock(group)
	mu.Lock()
	defer mu.Unlock()
	s := r.olocal
	last, known := r.ost.get(group)
	if known && last != icodec.XXH3(s.Snapshot(group)) {
		known = false // dropped with its shard while this call waited
	}
	if !known {
		b, found, err := r.own.loadPointed(ctx, r.own.txo, txoConsumer(group), k)
		if err == nil && found {
			err = s.Restore(group, b)
		}
		if err != nil {
			r.log.Warn().Err(err).Str("group_id", group).Int("shard", k).Msg("coordination: reading the group's pending transactional offsets failed")
			return res, false
		}
		last = icodec.XXH3(s.Snapshot(group))
		r.ost.set(group, last)
	}
	res = f()
	snap := s.Snapshot(group)
	h := icodec.XXH3(snap)
	if h == last {
		return res, true
	}
	if err := r.own.storePointed(ctx, r.own.txo, txoConsumer(group), k, snap); err != nil {
		r.log.Warn().Err(err).Str("group_id", group).Int("shard", k).Msg("coordination: persisting the group's pending transactional offsets failed; the change is undone")
		match := func(g string) bool { return g == group }
		s.Drop(match)
		r.ost.forget(match)
		return res, false
	}
	r.ost.set(group, h)
	return res, true
}

// txoConsumer is the kind-1 consumer whose offset points at a group's
// newest pending-offsets snapshot.
func txoConsumer(group string) icodec.Consumer {
	return pointerConsumer("kafka.txo.", group)
}

// loadPointed reads the record of partition k of ref that consumer's
// stored offset points at; found is false when none was stored.
func (o *ownership) loadPointed(ctx context.Context, ref iggy.TopicRef, consumer icodec.Consumer, k int) (b []byte, found bool, err error) {
	ctx = iggy.Sidecar(ctx) // the domain's own records, never a principal's
	off, found, err := o.data.GetOffset(ctx, ref, uint32(k), consumer)
	if errors.Is(err, iggy.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil || !found {
		return nil, false, err
	}
	p, err := o.data.Poll(ctx, &icodec.PollMessagesRequest{
		Consumer:    consumer,
		StreamID:    ref.StreamID(),
		TopicID:     ref.TopicID(),
		PartitionID: icodec.OptionalPartition{Present: true, PartitionID: uint32(k)},
		Strategy:    icodec.PollingStrategy{Kind: icodec.PollingKindOffset, Value: off.StoredOffset},
		Count:       1,
	})
	if err != nil {
		return nil, false, err
	}
	defer p.Release()
	it := p.Messages()
	for it.Next() {
		if m := it.Message(); m.Offset == off.StoredOffset {
			return slices.Clone(m.Payload), true, nil
		}
	}
	return nil, false, it.Err() // the record is gone: as if none was stored
}

// storePointed appends rec to partition k of ref and points consumer's
// offset at it.
func (o *ownership) storePointed(ctx context.Context, ref iggy.TopicRef, consumer icodec.Consumer, k int, rec []byte) error {
	ctx = iggy.Sidecar(ctx) // the domain's own records, never a principal's
	m := o.data.NewMessages()
	if err := m.Add(wire.U128{}, uint64(o.now().UnixMicro()), rec, nil); err != nil {
		m.Release()
		return err
	}
	base, err := o.data.Send(ctx, ref, uint32(k), m)
	if err != nil {
		return err
	}
	if base < 0 {
		return errors.New("coordination: the server confirmed the record without an offset")
	}
	return o.data.StoreOffset(ctx, ref, uint32(k), consumer, uint64(base))
}
