package cluster

// Consumer-protocol (KIP-848) groups persisted in Iggy, so that an owner
// move (a SIGKILLed owner, a rolling restart) does not reset member epochs
// or revoke every partition: the new owner goes on from the group's last
// state. Topic cgroups.<domain> of coordination.stream holds, in the
// group's shard partition, one snapshot per change of the group
// (cgroups.Coordinator.Snapshot: epochs, target assignment, subscriptions,
// every member's owned and revoking partitions) and the kind-1 consumer
// offset kafka.cgs.<group> points at the newest. The owner:
//
//   - before it serves a call for a group it has not seen since the shard
//     became ACTIVE here, reads the pointed snapshot and restores it (a
//     tombstone or none: the group starts new); Iggy unreadable: the call
//     answers COORDINATOR_LOAD_IN_PROGRESS and the client retries;
//   - after each call, writes the group's snapshot when it differs from
//     the last one written (a heartbeat that changes nothing writes
//     nothing), a tombstone when the group is gone, before the call is
//     answered: an answer never hands out an epoch the next owner would not
//     know. One group's calls are serialized from the read to the write.
//
// A failed write is logged and retried with the next call of the group.

import (
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/kafka-iggy/kafka-iggy/bridge/cgroups"
	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
	"github.com/kafka-iggy/kafka-iggy/codec/wire"
)

// cstateAbsent marks a group known to have no state (none stored, a
// tombstone, or deleted here); cstateUnknown one whose last write failed.
const (
	cstateAbsent  = "\x00absent"
	cstateUnknown = "\x00unknown"
)

// cstore is the Router's record of what it persisted per group.
type cstore struct {
	locks [64]sync.Mutex // one group's calls in order, by hash of the id
	mu    sync.Mutex
	state map[string]string // group -> last snapshot written or read
}

func (s *cstore) lock(group string) *sync.Mutex {
	return &s.locks[icodec.XXH3([]byte(group))%uint64(len(s.locks))]
}

func (s *cstore) get(group string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.state[group]
	return v, ok
}

func (s *cstore) set(group, v string) {
	s.mu.Lock()
	if s.state == nil {
		s.state = map[string]string{}
	}
	s.state[group] = v
	s.mu.Unlock()
}

// forget drops what is known of the groups for which match is true (their
// shard left this sidecar).
func (s *cstore) forget(match func(string) bool) {
	s.mu.Lock()
	for g := range s.state {
		if match(g) {
			delete(s.state, g)
		}
	}
	s.mu.Unlock()
}

// cserve runs f, a call of the local consumer-protocol coordinator for
// group (shard k, ACTIVE here), between the load of the group's persisted
// state and the write of its new state. ok is false when the state could
// not be read (the caller answers COORDINATOR_LOAD_IN_PROGRESS).
func cserve[R any](ctx context.Context, r *Router, group string, k int, f func() R) (res R, ok bool) {
	mu := r.cst.lock(group)
	mu.Lock()
	defer mu.Unlock()
	last, known := r.cst.get(group)
	if known && last != cstateAbsent && !r.clocal.Has(group) {
		known = false // dropped with its shard while this call waited
	}
	if !known {
		b, found, err := r.own.loadCGroup(ctx, group, k)
		if err != nil {
			r.log.Warn().Err(err).Str("group_id", group).Int("shard", k).Msg("coordination: reading the consumer group's persisted state failed")
			return res, false
		}
		last = cstateAbsent
		if found {
			if err := r.clocal.Restore(group, b); err != nil {
				r.log.Warn().Err(err).Str("group_id", group).Msg("coordination: the consumer group's persisted state is unreadable; the group starts again")
			} else if r.clocal.Has(group) {
				last = string(b)
			}
		}
		r.cst.set(group, last)
	}
	res = f()
	snap, held := r.clocal.Snapshot(group)
	var rec []byte
	switch {
	case held && string(snap) != last:
		rec = snap
	case !held && last != cstateAbsent:
		rec = cgroups.Tombstone(group)
	default:
		return res, true
	}
	if err := r.own.storeCGroup(ctx, group, k, rec); err != nil {
		r.log.Warn().Err(err).Str("group_id", group).Int("shard", k).Msg("coordination: persisting the consumer group's state failed; retried with its next call")
		r.cst.set(group, cstateUnknown)
		return res, true
	}
	if held {
		r.cst.set(group, string(snap))
	} else {
		r.cst.set(group, cstateAbsent)
	}
	return res, true
}

// cgConsumer is the kind-1 consumer whose offset points at a consumer
// group's newest snapshot.
func cgConsumer(group string) icodec.Consumer {
	return pointerConsumer("kafka.cgs.", group)
}

// loadCGroup reads a consumer group's newest snapshot; found is false when
// none was stored.
func (o *ownership) loadCGroup(ctx context.Context, group string, k int) (b []byte, found bool, err error) {
	off, found, err := o.data.GetOffset(ctx, o.cgs, uint32(k), cgConsumer(group))
	if errors.Is(err, iggy.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil || !found {
		return nil, false, err
	}
	p, err := o.data.Poll(ctx, &icodec.PollMessagesRequest{
		Consumer:    cgConsumer(group),
		StreamID:    o.cgs.StreamID(),
		TopicID:     o.cgs.TopicID(),
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
	return nil, false, it.Err()
}

// storeCGroup appends a consumer group's snapshot (or tombstone) and points
// the group's consumer offset at it.
func (o *ownership) storeCGroup(ctx context.Context, group string, k int, rec []byte) error {
	m := o.data.NewMessages()
	if err := m.Add(wire.U128{}, uint64(o.now().UnixMicro()), rec, nil); err != nil {
		m.Release()
		return err
	}
	base, err := o.data.Send(ctx, o.cgs, uint32(k), m)
	if err != nil {
		return err
	}
	if base < 0 {
		return errors.New("coordination: the server confirmed the consumer group record without an offset")
	}
	return o.data.StoreOffset(ctx, o.cgs, uint32(k), cgConsumer(group), uint64(base))
}
