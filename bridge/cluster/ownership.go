package cluster

// Shard ownership from Iggy (docs/ARCHITECTURE.md "One group across
// sidecars"). The shards of the group-id space are the partitions of topic
// coord.<domain> in stream coordination.stream; every sidecar of the domain
// joins Iggy consumer group "sidecars" on it through a control session of
// its own, and the partitions Iggy assigns it are the shards it
// coordinates. No consensus of ours: Iggy's assignment decides, and a local
// timing rule makes sure a shard is served by at most one sidecar:
//
//   - NONE: not assigned; requests for its groups go to the announced owner.
//   - PENDING: assigned since the SYNC reply received at t1; not served
//     (COORDINATOR_LOAD_IN_PROGRESS) until every reply since still lists it
//     and now >= t1 + lease + delta, or the newest announcement in the
//     shard's partition is the previous owner's release marker.
//   - ACTIVE: served while now < t_s + lease, t_s the send time of the
//     newest SYNC that listed it (a slow SYNC shortens validity, never
//     extends it). Before serving, the owner appends active{epoch, node,
//     address} to the shard's partition: that is how the others find it.
//   - Losing it (not listed, lease over, shutdown): parked JoinGroup and
//     SyncGroup answer NOT_COORDINATOR at once, its groups are dropped from
//     memory, then a release marker is appended so the next owner starts at
//     once.
//
// Group generations are persisted per group in topic gens.<domain> (the
// same shard partition): a record {group, ceiling} and a kind-1 consumer
// offset kafka.gen.<group> pointing at it. No owner hands out a generation
// at or above the stored ceiling, and a new owner starts at the ceiling, so
// generations only grow across moves.
//
// Consumer-protocol (KIP-848) groups are persisted the same way in topic
// cgroups.<domain> (cstore.go): a snapshot of the group's state per change
// and a kind-1 consumer offset kafka.cgs.<group> pointing at the newest, read
// by the next owner when it first serves the group; so are the pending
// offsets of TxnOffsetCommit in topic txnoffsets.<domain> (consumer
// kafka.txo.<group>, txnoffsets.Durable).

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
	"github.com/kafka-iggy/kafka-iggy/codec/wire"
)

// Iggy names of the coordination objects.
const (
	ownersGroup = "sidecars"
	// recActive and recReleased are the announcement record types.
	recActive   uint8 = 'A'
	recReleased uint8 = 'R'
	recGen      uint8 = 'G'
	recMagic          = "kiggy1"
	// genBlock is how far past the current generation the stored ceiling
	// is set (one Iggy write per genBlock/2 rebalances of a group).
	genBlock int32 = 100
	// ownerCacheTTL is how long a looked-up owner is trusted (a
	// NOT_COORDINATOR or a failed call forgets it sooner).
	ownerCacheTTL = 5 * time.Second
)

type shardState uint8

const (
	shardNone shardState = iota
	shardPending
	shardActive
)

type shard struct {
	state      shardState
	since      time.Time // PENDING: receive time of the first reply listing it
	validUntil time.Time // ACTIVE
	epoch      uint64    // ACTIVE: Iggy generation announced
}

// announcement is one record of a shard partition.
type announcement struct {
	typ   uint8
	epoch uint64
	node  string
	addr  string
}

type ownerEntry struct {
	node, addr string
	none       bool // released or never announced
	at         time.Time
}

// ownership runs the control session and the shard state machine.
type ownership struct {
	cfg     CoordinationConfig
	log     zerolog.Logger
	ctl     *iggy.Client // control session (membership in the Iggy group)
	data    *iggy.Client // announcements and generations
	node    string
	addr    string
	coord   iggy.TopicRef
	gens    iggy.TopicRef
	cgs     iggy.TopicRef // consumer-protocol group snapshots (cstore.go)
	txo     iggy.TopicRef // pending transactional offsets (txnoffsets.Durable)
	onLoss  func(k int)   // drops the shard's groups; called before the marker
	onGain  func(k int)
	nowFunc func() time.Time

	mu     sync.Mutex
	k      int
	shards []shard
	gen    uint64
	joined bool
	owners []ownerEntry
}

func (o *ownership) now() time.Time {
	if o.nowFunc != nil {
		return o.nowFunc()
	}
	return time.Now()
}

func (o *ownership) delta() time.Duration {
	return 500*time.Millisecond + o.cfg.Lease/10
}

// setup creates the stream, topics and group when absent ("already
// exists" is success) and learns the shard count from the topic.
func (o *ownership) setup(ctx context.Context) error {
	ctx = iggy.Sidecar(ctx) // the domain's own records, never a principal's
	if _, err := o.data.CreateStream(ctx, o.cfg.Stream); err != nil && !errors.Is(err, icodec.StatusStreamNameAlreadyExists) {
		return fmt.Errorf("create stream %s: %w", o.cfg.Stream, err)
	}
	var k uint32
	for _, ref := range []iggy.TopicRef{o.coord, o.gens, o.cgs, o.txo} {
		n := uint32(o.cfg.Shards)
		if ref != o.coord {
			n = k // a topic added later follows the domain's shard count
		}
		info, err := o.data.CreateTopic(ctx, ref, n, nil)
		if errors.Is(err, icodec.StatusTopicNameAlreadyExists) {
			info, err = o.data.RefreshTopic(ctx, ref)
		}
		if err != nil {
			return fmt.Errorf("topic %s/%s: %w", ref.Stream, ref.Topic, err)
		}
		if ref == o.coord {
			k = info.PartitionsCount
		} else if info.PartitionsCount != k {
			return fmt.Errorf("topic %s/%s has %d partitions, %s has %d", ref.Stream, ref.Topic, info.PartitionsCount, o.coord.Topic, k)
		}
	}
	if k == 0 {
		return fmt.Errorf("topic %s/%s has no partitions", o.coord.Stream, o.coord.Topic)
	}
	err := o.data.Do(ctx, &icodec.CreateConsumerGroupRequest{StreamID: o.coord.StreamID(), TopicID: o.coord.TopicID(), Name: ownersGroup}, nil)
	if err != nil && !errors.Is(err, icodec.StatusConsumerGroupNameAlreadyExists) {
		return fmt.Errorf("consumer group %s: %w", ownersGroup, err)
	}
	o.mu.Lock()
	o.k = int(k)
	o.shards = make([]shard, k)
	o.owners = make([]ownerEntry, k)
	o.mu.Unlock()
	return nil
}

func (o *ownership) groupID() icodec.Identifier {
	return icodec.Identifier{Kind: icodec.IdentifierKindString, Value: []byte(ownersGroup)}
}

func (o *ownership) join(ctx context.Context) error {
	return o.ctl.Do(ctx, &icodec.JoinConsumerGroupRequest{StreamID: o.coord.StreamID(), TopicID: o.coord.TopicID(), GroupID: o.groupID()}, nil)
}

// run syncs every interval until ctx ends.
func (o *ownership) run(ctx context.Context) {
	t := time.NewTicker(o.cfg.SyncInterval)
	defer t.Stop()
	for {
		o.step(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// step is one SYNC and the state changes it causes.
func (o *ownership) step(ctx context.Context) {
	if !o.joined {
		if err := o.join(ctx); err != nil {
			o.log.Warn().Err(err).Msg("coordination: joining the Iggy group failed; retrying")
			o.expire()
			return
		}
		o.joined = true
		o.log.Info().Str("topic", o.coord.Topic).Msg("coordination: joined the Iggy group of the domain")
	}
	sctx, cancel := context.WithTimeout(ctx, o.cfg.SyncInterval)
	ts := o.now()
	var r icodec.SyncConsumerGroupResponse
	err := o.ctl.Do(sctx, &icodec.SyncConsumerGroupRequest{StreamID: o.coord.StreamID(), TopicID: o.coord.TopicID(), GroupID: o.groupID()}, &r)
	cancel()
	tr := o.now()
	if errors.Is(err, iggy.ErrNotFound) {
		// Not a member any more (session re-registered, evicted): join again.
		o.joined = false
		o.log.Warn().Msg("coordination: no longer a member of the Iggy group (session lost or evicted); joining again")
		o.expire()
		return
	}
	if err != nil {
		if ctx.Err() == nil {
			o.log.Warn().Err(err).Msg("coordination: SYNC failed; owned shards keep serving until their lease ends")
		}
		o.expire()
		return
	}
	owned := make(map[int]bool, len(r.Partitions))
	for _, p := range r.Partitions {
		owned[int(p)] = true
	}
	var gained, lost []int
	var announce []int
	o.mu.Lock()
	epochChanged := r.Generation != o.gen
	o.gen = r.Generation
	for k := range o.shards {
		s := &o.shards[k]
		switch {
		case !owned[k]:
			if s.state == shardActive {
				lost = append(lost, k)
			}
			s.state = shardNone
		case s.state == shardNone:
			s.state, s.since = shardPending, tr
		case s.state == shardActive:
			s.validUntil = ts.Add(o.cfg.Lease)
			if epochChanged {
				s.epoch = r.Generation
				announce = append(announce, k)
			}
		}
		if s.state == shardPending {
			gained = append(gained, k)
		}
	}
	gen := o.gen
	o.mu.Unlock()
	for _, k := range lost {
		o.release(ctx, k, "Iggy moved the shard away")
	}
	for _, k := range gained {
		o.tryActivate(ctx, k, gen, ts)
	}
	for _, k := range announce {
		_ = o.write(ctx, o.coord, k, announcement{typ: recActive, epoch: gen, node: o.node, addr: o.addr})
	}
}

// expire releases every ACTIVE shard whose lease passed (no SYNC).
func (o *ownership) expire() {
	now := o.now()
	var lost []int
	o.mu.Lock()
	for k := range o.shards {
		s := &o.shards[k]
		if s.state == shardActive && !now.Before(s.validUntil) {
			lost = append(lost, k)
			s.state = shardNone
		}
		if s.state == shardPending {
			s.state = shardNone // the wait restarts after the next good SYNC
		}
	}
	o.mu.Unlock()
	for _, k := range lost {
		o.release(context.Background(), k, "lease expired without a SYNC")
	}
}

// tryActivate moves a PENDING shard to ACTIVE when its wait is over or the
// previous owner released it.
func (o *ownership) tryActivate(ctx context.Context, k int, gen uint64, ts time.Time) {
	o.mu.Lock()
	s := o.shards[k]
	o.mu.Unlock()
	waited := o.now().Sub(s.since) >= o.cfg.Lease+o.delta()
	fast := false
	if !waited {
		recs, err := o.recent(ctx, k)
		if err != nil {
			return
		}
		if a, r := lastActive(recs); r != nil && (a == nil || (a.node == r.node && a.epoch == r.epoch)) {
			fast = true
		}
	}
	if !waited && !fast {
		return
	}
	// Announce before serving: whoever looks the owner up sees this one.
	if err := o.write(ctx, o.coord, k, announcement{typ: recActive, epoch: gen, node: o.node, addr: o.addr}); err != nil {
		o.log.Warn().Err(err).Int("shard", k).Msg("coordination: announcing ownership failed; retrying at the next SYNC")
		return
	}
	o.mu.Lock()
	cur := &o.shards[k]
	if cur.state != shardPending {
		o.mu.Unlock()
		return
	}
	cur.state, cur.epoch, cur.validUntil = shardActive, gen, ts.Add(o.cfg.Lease)
	o.owners[k] = ownerEntry{node: o.node, addr: o.addr, at: o.now()}
	o.mu.Unlock()
	how := "lease wait"
	if fast {
		how = "release marker"
	}
	o.log.Info().Int("shard", k).Uint64("epoch", gen).Str("via", how).Msg("coordination: shard active here")
	if o.onGain != nil {
		o.onGain(k)
	}
}

// release stops serving shard k: groups dropped (parked requests answer
// NOT_COORDINATOR), then the release marker.
func (o *ownership) release(ctx context.Context, k int, why string) {
	o.mu.Lock()
	epoch := o.shards[k].epoch
	o.shards[k].state = shardNone
	o.owners[k] = ownerEntry{}
	o.mu.Unlock()
	if o.onLoss != nil {
		o.onLoss(k)
	}
	o.log.Info().Int("shard", k).Str("reason", why).Msg("coordination: shard released")
	wctx, cancel := context.WithTimeout(ctx, o.cfg.Lease)
	defer cancel()
	if err := o.write(wctx, o.coord, k, announcement{typ: recReleased, epoch: epoch, node: o.node, addr: o.addr}); err != nil {
		o.log.Debug().Err(err).Int("shard", k).Msg("coordination: release marker not written (the next owner waits the lease)")
	}
}

// shutdown releases every shard and leaves the Iggy group.
func (o *ownership) shutdown(ctx context.Context) {
	var active []int
	o.mu.Lock()
	for k := range o.shards {
		if o.shards[k].state == shardActive {
			active = append(active, k)
		}
		if o.shards[k].state == shardPending {
			o.shards[k].state = shardNone
		}
	}
	o.mu.Unlock()
	for _, k := range active {
		o.release(ctx, k, "shutdown")
	}
	if o.joined {
		_ = o.ctl.Do(ctx, &icodec.LeaveConsumerGroupRequest{StreamID: o.coord.StreamID(), TopicID: o.coord.TopicID(), GroupID: o.groupID()}, nil)
	}
}

// serving reports shard k's state for a request arriving now.
func (o *ownership) serving(k int) shardState {
	o.mu.Lock()
	defer o.mu.Unlock()
	if k >= len(o.shards) {
		return shardNone
	}
	s := o.shards[k]
	if s.state == shardActive && !o.now().Before(s.validUntil) {
		return shardPending // lease over, the next SYNC decides
	}
	return s.state
}

// shards returns the shard count (0 before setup).
func (o *ownership) count() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.k
}

// owner returns the announced owner of shard k; none when it released
// or never announced.
func (o *ownership) owner(ctx context.Context, k int) (ownerEntry, error) {
	o.mu.Lock()
	e := o.owners[k]
	o.mu.Unlock()
	if !e.at.IsZero() && o.now().Sub(e.at) < ownerCacheTTL {
		return e, nil
	}
	recs, err := o.recent(ctx, k)
	if err != nil {
		return ownerEntry{}, err
	}
	a, r := lastActive(recs)
	e = ownerEntry{none: true, at: o.now()}
	if a != nil && (r == nil || r.node != a.node || r.epoch != a.epoch) {
		e = ownerEntry{node: a.node, addr: a.addr, at: o.now()}
	}
	o.mu.Lock()
	o.owners[k] = e
	o.mu.Unlock()
	return e, nil
}

// forget drops the cached owner of shard k (it answered NOT_COORDINATOR or
// could not be reached).
func (o *ownership) forget(k int) {
	o.mu.Lock()
	if k < len(o.owners) && o.owners[k].node != o.node {
		o.owners[k] = ownerEntry{}
	}
	o.mu.Unlock()
}

// lastActive returns the newest active record and the newest release
// record after it (nil when none).
func lastActive(recs []announcement) (active, released *announcement) {
	for i := len(recs) - 1; i >= 0; i-- {
		switch recs[i].typ {
		case recActive:
			a := recs[i]
			return &a, released
		case recReleased:
			if released == nil {
				r := recs[i]
				released = &r
			}
		}
	}
	return nil, released
}

// recent reads the last announcements of shard k.
func (o *ownership) recent(ctx context.Context, k int) ([]announcement, error) {
	ctx = iggy.Sidecar(ctx) // the domain's own records, never a principal's
	p, err := o.data.Poll(ctx, &icodec.PollMessagesRequest{
		Consumer:    icodec.Consumer{Kind: icodec.ConsumerKindConsumer, ID: icodec.Identifier{Kind: icodec.IdentifierKindString, Value: []byte("kafka-iggy.lookup")}},
		StreamID:    o.coord.StreamID(),
		TopicID:     o.coord.TopicID(),
		PartitionID: icodec.OptionalPartition{Present: true, PartitionID: uint32(k)},
		Strategy:    icodec.PollingStrategy{Kind: icodec.PollingKindLast},
		Count:       8,
	})
	if err != nil {
		return nil, err
	}
	defer p.Release()
	var out []announcement
	it := p.Messages()
	for it.Next() {
		if a, ok := decodeAnnouncement(it.Message().Payload); ok {
			out = append(out, a)
		}
	}
	return out, nil
}

// The records stored in Iggy (announcements, generation ceilings) are
// big-endian and outlive a sidecar version: their layout never changes.
// They are read through codec/wire's sticky Reader.

func appendRecStr(b []byte, s string) []byte {
	return append(binary.BigEndian.AppendUint32(b, uint32(len(s))), s...)
}

func recU64(r *wire.Reader, f string) uint64 {
	if v := r.Bytes("", f, 8); v != nil {
		return binary.BigEndian.Uint64(v)
	}
	return 0
}

func recU32(r *wire.Reader, f string) uint32 {
	if v := r.Bytes("", f, 4); v != nil {
		return binary.BigEndian.Uint32(v)
	}
	return 0
}

func recStr(r *wire.Reader, f string) string {
	n := recU32(r, f)
	if r.Failed() {
		return ""
	}
	return string(r.Bytes("", f, int(n)))
}

// recReader reads a record after its magic; false when the magic differs.
func recReader(b []byte) (wire.Reader, bool) {
	if len(b) < len(recMagic) || string(b[:len(recMagic)]) != recMagic {
		return wire.Reader{}, false
	}
	return wire.NewReader(b[len(recMagic):], "coordination.record"), true
}

func encodeAnnouncement(a announcement) []byte {
	b := append([]byte(recMagic), a.typ)
	b = binary.BigEndian.AppendUint64(b, a.epoch)
	b = appendRecStr(b, a.node)
	return appendRecStr(b, a.addr)
}

func decodeAnnouncement(b []byte) (announcement, bool) {
	r, ok := recReader(b)
	if !ok {
		return announcement{}, false
	}
	a := announcement{typ: r.U8("", "type"), epoch: recU64(&r, "epoch"), node: recStr(&r, "node"), addr: recStr(&r, "addr")}
	return a, r.Err() == nil && r.Remaining() == 0 && (a.typ == recActive || a.typ == recReleased)
}

// write appends one record to partition k of ref.
func (o *ownership) write(ctx context.Context, ref iggy.TopicRef, k int, a announcement) error {
	return o.send(ctx, ref, k, encodeAnnouncement(a))
}

func (o *ownership) send(ctx context.Context, ref iggy.TopicRef, k int, payload []byte) error {
	ctx = iggy.Sidecar(ctx) // the domain's own records, never a principal's
	m := o.data.NewMessages()
	if err := m.Add(wire.U128{}, uint64(o.now().UnixMicro()), payload, nil); err != nil {
		m.Release()
		return err
	}
	_, err := o.data.Send(ctx, ref, uint32(k), m)
	return err
}

// genConsumer is the kind-1 consumer whose offset points at a group's
// newest generation record.
func genConsumer(group string) icodec.Consumer { return pointerConsumer("kafka.gen.", group) }

// pointerConsumer is the kind-1 consumer prefix+group (a hash of the group
// instead when the name would pass Iggy's 255 bytes).
func pointerConsumer(prefix, group string) icodec.Consumer {
	name := prefix + group
	if len(name) > 255 {
		h := icodec.XXH3([]byte(group))
		name = prefix + "#" + hex.EncodeToString([]byte{byte(h >> 56), byte(h >> 48), byte(h >> 40), byte(h >> 32), byte(h >> 24), byte(h >> 16), byte(h >> 8), byte(h)})
	}
	return icodec.Consumer{Kind: icodec.ConsumerKindConsumer, ID: icodec.Identifier{Kind: icodec.IdentifierKindString, Value: []byte(name)}}
}

// loadCeiling reads the stored generation ceiling of a group (0: none).
func (o *ownership) loadCeiling(ctx context.Context, group string, k int) (int32, error) {
	ctx = iggy.Sidecar(ctx) // the domain's own records, never a principal's
	off, found, err := o.data.GetOffset(ctx, o.gens, uint32(k), genConsumer(group))
	if err != nil && !errors.Is(err, iggy.ErrNotFound) {
		return 0, err
	}
	if !found || err != nil {
		return 0, nil
	}
	p, err := o.data.Poll(ctx, &icodec.PollMessagesRequest{
		Consumer:    genConsumer(group),
		StreamID:    o.gens.StreamID(),
		TopicID:     o.gens.TopicID(),
		PartitionID: icodec.OptionalPartition{Present: true, PartitionID: uint32(k)},
		Strategy:    icodec.PollingStrategy{Kind: icodec.PollingKindOffset, Value: off.StoredOffset},
		Count:       1,
	})
	if err != nil {
		return 0, err
	}
	defer p.Release()
	it := p.Messages()
	for it.Next() {
		g, c, ok := decodeGen(it.Message().Payload)
		if ok && g == group {
			return c, nil
		}
		if ok {
			o.log.Warn().Str("group_id", group).Str("other_group", g).Msg("coordination: generation pointer names another group (hash collision); starting from 0")
		}
	}
	return 0, nil
}

// storeCeiling persists a group's generation ceiling.
func (o *ownership) storeCeiling(ctx context.Context, group string, k int, ceiling int32) error {
	ctx = iggy.Sidecar(ctx) // the domain's own records, never a principal's
	b := appendRecStr(append([]byte(recMagic), recGen), group)
	b = binary.BigEndian.AppendUint32(b, uint32(ceiling))
	m := o.data.NewMessages()
	if err := m.Add(wire.U128{}, uint64(o.now().UnixMicro()), b, nil); err != nil {
		m.Release()
		return err
	}
	base, err := o.data.Send(ctx, o.gens, uint32(k), m)
	if err != nil {
		return err
	}
	if base < 0 {
		return errors.New("coordination: the server confirmed the generation record without an offset")
	}
	return o.data.StoreOffset(ctx, o.gens, uint32(k), genConsumer(group), uint64(base))
}

func decodeGen(b []byte) (string, int32, bool) {
	r, ok := recReader(b)
	if !ok || r.U8("", "type") != recGen {
		return "", 0, false
	}
	g := recStr(&r, "group")
	c := int32(recU32(&r, "ceiling"))
	return g, c, r.Err() == nil && r.Remaining() == 0
}
