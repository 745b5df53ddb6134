package txnoffsets

// Durable: a Pending whose every change of a group is persisted in Iggy
// before it is answered, and restored from there when the group is first
// served (after a restart, or by the next owner of the group's shard).
// Each group's newest snapshot (Snapshot; none pending: the tombstone) is
// a message of its partition of a sidecar-kept topic, and a kind-1
// consumer offset kafka.txo.<group> of that partition points at it
// (IggyStore).
//
//   - Before a group's first call (and after a failed write) its pointed
//     snapshot is read and restored; Iggy unreadable (or a snapshot that
//     would pass MaxEntries): the call answers COORDINATOR_LOAD_IN_PROGRESS
//     and the client (or the transaction coordinator's sweep) retries.
//   - After an Add or a Forget that changed the group, its snapshot is
//     written before the call is answered. A failed write undoes the change
//     (the group leaves memory and is read again by its next call) and the
//     call answers COORDINATOR_LOAD_IN_PROGRESS. So what a client was told
//     is pending is in Iggy, and what a resolution committed and forgot is
//     never restored again (committed twice).
//
// One group's calls are serialized from the read to the write.

import (
	"context"
	"errors"
	"hash/maphash"
	"slices"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
	"github.com/kafka-iggy/kafka-iggy/codec/wire"
)

// Store keeps each group's newest snapshot.
type Store interface {
	// Load returns the group's newest snapshot; found is false when none
	// was stored.
	Load(ctx context.Context, group string) (b []byte, found bool, err error)
	// Save makes snap the group's newest snapshot.
	Save(ctx context.Context, group string, snap []byte) error
}

// Durable implements Service over a Pending and a Store.
type Durable struct {
	p     *Pending
	store Store
	log   zerolog.Logger

	locks [64]sync.Mutex // one group's calls in order, by hash of the id
	mu    sync.Mutex
	state map[string]uint64 // group -> hash of the last snapshot written or read
	drops uint64            // Drop calls so far: a serve they overlap records nothing
}

var _ Service = (*Durable)(nil)

var seed = maphash.MakeSeed()

// NewDurable persists p's changes in store.
func NewDurable(p *Pending, store Store, log zerolog.Logger) *Durable {
	return &Durable{p: p, store: store, log: log, state: map[string]uint64{}}
}

// Drop forgets the groups for which match is true (their shard left this
// sidecar): memory and what is known of their persisted state.
func (d *Durable) Drop(match func(group string) bool) {
	d.mu.Lock()
	d.drops++
	for g := range d.state {
		if match(g) {
			delete(d.state, g)
		}
	}
	d.mu.Unlock()
	d.p.Drop(match)
}

// serve runs f for group between the load of its persisted state and the
// write of its new state; false: the caller answers
// COORDINATOR_LOAD_IN_PROGRESS.
func (d *Durable) serve(ctx context.Context, group string, f func()) bool {
	mu := &d.locks[maphash.String(seed, group)%uint64(len(d.locks))]
	mu.Lock()
	defer mu.Unlock()
	d.mu.Lock()
	last, known := d.state[group]
	drops := d.drops
	d.mu.Unlock()
	if known && last != maphash.Bytes(seed, d.p.Snapshot(group)) {
		known = false // dropped (its shard moved) while this call waited
	}
	if !known {
		b, found, err := d.store.Load(ctx, group)
		if err == nil && found {
			err = d.p.Restore(group, b)
		}
		if err != nil {
			d.log.Warn().Err(err).Str("group_id", group).Msg("transactions: reading the group's pending transactional offsets failed")
			return false
		}
		last = maphash.Bytes(seed, d.p.Snapshot(group))
		d.set(group, last, drops)
	}
	f()
	snap := d.p.Snapshot(group)
	h := maphash.Bytes(seed, snap)
	if h == last {
		return true
	}
	if err := d.store.Save(ctx, group, snap); err != nil {
		d.log.Warn().Err(err).Str("group_id", group).Msg("transactions: persisting the group's pending transactional offsets failed; the change is undone")
		d.Drop(func(g string) bool { return g == group })
		return false
	}
	d.set(group, h, drops)
	return true
}

// set records h for group unless a Drop ran since the serve began (the
// group may have moved away and back: its next call reads Iggy again).
func (d *Durable) set(group string, h uint64, drops uint64) {
	d.mu.Lock()
	if d.drops == drops {
		d.state[group] = h
	} else {
		delete(d.state, group)
	}
	d.mu.Unlock()
}

var loading = kerr.CoordinatorLoadInProgress.Code

// Add implements Service.
func (d *Durable) Add(ctx context.Context, group string, producerID int64, epoch int16, offs []Offset) int16 {
	var code int16
	if !d.serve(ctx, group, func() { code = d.p.Add(ctx, group, producerID, epoch, offs) }) {
		return loading
	}
	return code
}

// Pending implements Service.
func (d *Durable) Pending(ctx context.Context, group string, producerID int64, epoch int16) ([]Offset, int16) {
	var offs []Offset
	if !d.serve(ctx, group, func() { offs, _ = d.p.Pending(ctx, group, producerID, epoch) }) {
		return nil, loading
	}
	return offs, 0
}

// Forget implements Service.
func (d *Durable) Forget(ctx context.Context, group string, producerID int64, epoch int16) int16 {
	if !d.serve(ctx, group, func() { d.p.Forget(ctx, group, producerID, epoch) }) {
		return loading
	}
	return 0
}

// Unstable implements Service.
func (d *Durable) Unstable(ctx context.Context, group string, parts []Offset) ([]bool, int16) {
	var flags []bool
	if !d.serve(ctx, group, func() { flags, _ = d.p.Unstable(ctx, group, parts) }) {
		return nil, loading
	}
	return flags, 0
}

// IggyStore is a Store in topic Ref: a group's snapshots go to partition
// Partition(group), consumer kafka.txo.<group> points at the newest. With
// Create, the topic (and its stream) is created with Partitions
// partitions when a Save finds it missing.
type IggyStore struct {
	Client     *iggy.Client
	Ref        iggy.TopicRef
	Partition  func(group string) uint32
	Create     bool
	Partitions uint32
	Now        func() int64 // unix microseconds; nil: the clock
}

// Consumer is the kind-1 consumer whose offset points at a group's newest
// snapshot (a hash of the group instead when the name would pass Iggy's
// 255 bytes).
func Consumer(group string) icodec.Consumer {
	name := "kafka.txo." + group
	if len(name) > 255 {
		h := icodec.XXH3([]byte(group))
		name = "kafka.txo.#" + hex16(h)
	}
	return icodec.Consumer{Kind: icodec.ConsumerKindConsumer, ID: icodec.Identifier{Kind: icodec.IdentifierKindString, Value: []byte(name)}}
}

func hex16(h uint64) string {
	const digits = "0123456789abcdef"
	b := make([]byte, 16)
	for i := 15; i >= 0; i-- {
		b[i] = digits[h&15]
		h >>= 4
	}
	return string(b)
}

// Load implements Store.
func (s *IggyStore) Load(ctx context.Context, group string) ([]byte, bool, error) {
	ctx = iggy.Sidecar(ctx) // the sidecars' own records, never a principal's
	k := s.Partition(group)
	off, found, err := s.Client.GetOffset(ctx, s.Ref, k, Consumer(group))
	if iggy.IsNotFound(err) {
		return nil, false, nil
	}
	if err != nil || !found {
		return nil, false, err
	}
	p, err := s.Client.Poll(ctx, &icodec.PollMessagesRequest{
		Consumer:    Consumer(group),
		StreamID:    s.Ref.StreamID(),
		TopicID:     s.Ref.TopicID(),
		PartitionID: icodec.OptionalPartition{Present: true, PartitionID: k},
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

// Save implements Store.
func (s *IggyStore) Save(ctx context.Context, group string, snap []byte) error {
	ctx = iggy.Sidecar(ctx) // the sidecars' own records, never a principal's
	k := s.Partition(group)
	base, err := s.send(ctx, k, snap)
	if s.Create && iggy.IsNotFound(err) {
		if _, err = s.Client.EnsureStream(ctx, s.Ref.Stream); err == nil {
			if _, err = s.Client.CreateTopic(ctx, s.Ref, s.Partitions, iggy.NeverExpire()); errors.Is(err, icodec.StatusTopicNameAlreadyExists) {
				err = nil
			}
		}
		if err == nil {
			base, err = s.send(ctx, k, snap)
		}
	}
	if err != nil {
		return err
	}
	if base < 0 {
		return errors.New("txnoffsets: the server confirmed the snapshot without an offset")
	}
	return s.Client.StoreOffset(ctx, s.Ref, k, Consumer(group), uint64(base))
}

func (s *IggyStore) send(ctx context.Context, k uint32, snap []byte) (int64, error) {
	m := s.Client.NewMessages()
	now := time.Now().UnixMicro()
	if s.Now != nil {
		now = s.Now()
	}
	if err := m.Add(wire.U128{}, uint64(now), snap, nil); err != nil {
		m.Release()
		return 0, err
	}
	return s.Client.Send(ctx, s.Ref, k, m)
}
