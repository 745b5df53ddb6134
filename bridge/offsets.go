package bridge

// Committed offsets in Iggy (KAFKA-ON-IGGY §6): the store behind
// OffsetCommit, OffsetFetch, OffsetDelete and DeleteGroups.
//
// Modes (offsets.mode):
//   - external-group: Iggy consumer kind 3 (ExternalGroup), id = the name
//     kafka.cg.<group>, per mapped topic and partition; the value is the
//     Kafka offset verbatim. Every commit request checks, once per topic,
//     that the Iggy consumer group kafka.cg.<group> exists (one
//     GET_CONSUMER_GROUP read) and creates it when it does not
//     (already-exists counts as created), so a group an operator deleted is
//     recreated by the next commit; a store answered with not-found creates
//     it and is tried once more.
//   - consumer: the fallback for servers without kind 3: kind 1 (single
//     consumer) named kafka.cg.<group> (Iggy keys it by the XXH32 hash of
//     the name), storing offset - 1 (Iggy keeps the last processed
//     message); commits beyond the high watermark are refused by Iggy
//     (4100 -> OFFSET_OUT_OF_RANGE). Costs: the name is hashed to 32
//     bits, and stored offsets pin retention.
//     A commit of 0 has no offset - 1: it is kept as the zero marker, a
//     second kind-1 consumer kafka.cz.<group> stored at Iggy offset 0
//     (stored first, then the main key deleted). Reads take the main key
//     and only when it is absent the marker (0), so a partition whose main
//     key exists costs no extra call. A commit N > 0 stores the main key,
//     then clears the marker (clearMarker): a delete when this process
//     stored it; when it does not know (the key's first commit in the
//     process, or markerRecheck after it last saw none: another sidecar
//     may have committed 0) a GET_CONSUMER_OFFSET of it and a delete only
//     when one is stored; nothing when it saw none less than markerRecheck
//     ago. A leftover marker behind a main key changes no read, it only
//     pins retention at 0. A real server logs every delete of a missing
//     offset ("rejecting delete_consumer_offset for missing offset"), so
//     none is sent blindly. A negative commit, OffsetDelete and
//     DeleteGroups clear the marker the same way (always reading it when
//     this process did not store it), then delete the main key; the main
//     key (there and for a commit of 0) is deleted at once when this
//     process stored it, else only when a read finds it. Iggy refuses offset 0 on a partition that never had a
//     message (4100): there a commit of 0 only deletes the main key and
//     reads back as -1, which positions a consumer the same way as 0
//     while the partition stays empty (earliest = latest = 0); records
//     appended before the consumer starts then follow its
//     auto.offset.reset.
//   - auto (default): decided by the protocol generation the Iggy server
//     announced at login (iggy.Client.Protocol): a generation with consumer
//     kind 3 (icodec.ProtocolVersion.ExternalGroupOffsets: 0.12) selects
//     external-group, one without it (0.11, Iggy server 0.9.x) consumer.
//     Nothing is probed: a 0.11 server answers a kind-3 read with status 0
//     and an empty body ("nothing stored") and a kind-3 store with
//     ResourceNotFound, which no probe can tell from a real answer. Before
//     the first login the mode is undecided (the request fails with a
//     retriable code).
//   - A pinned external-group on a server whose generation lacks kind 3
//     is tried (the embedded server's external_groups option serves it on
//     0.11); when the store is refused, the commit fails with
//     UNKNOWN_SERVER_ERROR (not retried by clients), one error log line
//     names offsets.mode, and every later commit and delete of the process
//     fails the same way without an Iggy call.
//
// Common rules: group ids 1..246 bytes of UTF-8 (255 minus the prefix),
// else INVALID_GROUP_ID; a negative offset deletes the key (not-found
// counts as success); metadata and leader epoch are dropped; reads answer
// -1 for no key, unknown group, unknown topic or partition, and fail with
// COORDINATOR_LOAD_IN_PROGRESS (GROUP_AUTHORIZATION_FAILED when refused)
// for anything else, never a fake -1. kafka.cg.* and kafka.cz.* keys are
// never used to poll.
//
// Order: the writes of one (group, topic, partition) are serialized here
// and go through the partition's lane of the Iggy client, so they reach
// Iggy in the order they were made. Requests of one connection run
// concurrently, so a commit that arrives here after a later commit of the
// same connection (earlier receive time, or the same receive time and an
// earlier correlation id) was overtaken: it is skipped and answered as
// successful, which leaves the value a serial broker would leave.
//
// Locking: commitOrder.mu is a leaf, never held during
// I/O. A commitSlot.mu is held across its key's Iggy writes (two in
// consumer mode when the zero marker is involved) and nothing is taken
// under it but the Iggy client's own leaf locks.

import (
	"context"
	"errors"
	"math"
	"sort"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kafka-iggy/kafka-iggy/bridge/groups"
	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

// offsetMode is where committed offsets live.
type offsetMode uint8

const (
	offsetModeUnknown  offsetMode = iota // auto, not decided yet
	offsetModeExternal                   // kind 3, value verbatim
	offsetModeConsumer                   // kind 1, value - 1
)

func (m offsetMode) String() string {
	switch m {
	case offsetModeExternal:
		return "external-group"
	case offsetModeConsumer:
		return "consumer"
	}
	return "auto"
}

const (
	// groupPrefix prefixes the Iggy name of a Kafka group's offsets.
	groupPrefix = "kafka.cg."
	// markerPrefix prefixes the Iggy name of a group's zero marker
	// (consumer mode): as long as groupPrefix, so every valid group id
	// fits.
	markerPrefix = "kafka.cz."
	// markerRecheck is how long after deleting a key's zero marker a
	// commit N > 0 of that key skips deleting it again.
	markerRecheck = time.Minute
	// maxGroupIDLen is the longest Kafka group id whose Iggy name fits an
	// Iggy name (255 bytes).
	maxGroupIDLen = 255 - len(groupPrefix)
	// offsetsParallel bounds the Iggy calls one offsets request runs at
	// once.
	offsetsParallel = 16
	// commitSlotsPrune is the slot count above which idle ordering slots
	// are pruned.
	commitSlotsPrune = 4096
	// commitSlotIdle is how long an idle ordering slot is kept: far longer
	// than two pipelined requests of one connection can be apart.
	commitSlotIdle = time.Minute
)

// errOffsetsMode is returned when the auto mode cannot be decided.
var errOffsetsMode = errors.New("bridge: offsets mode not decided yet")

// errKind3Refused is returned by every offsets write once a pinned
// external-group mode met a server that refuses consumer kind 3.
var errKind3Refused = errors.New("bridge: the Iggy server refuses consumer kind 3 (ExternalGroup); set offsets.mode to auto or consumer")

// validGroupID applies the group-id rule of §6.
func validGroupID(g string) bool {
	return g != "" && len(g) <= maxGroupIDLen && utf8.ValidString(g)
}

// iggyGroupName is the Iggy name of a Kafka group's offsets.
func iggyGroupName(group string) string { return groupPrefix + group }

// markerOf is the kind-1 consumer holding a group's zero marker (consumer
// mode): present, at Iggy offset 0, when the group committed 0 and the
// main key is absent.
func markerOf(group string) icodec.Consumer {
	return icodec.Consumer{Kind: icodec.ConsumerKindConsumer, ID: stringID(markerPrefix + group)}
}

// offsetStore keeps committed offsets in Iggy.
type offsetStore struct {
	b      *Bridge
	pinned offsetMode // configured mode; unknown = auto

	modeAt atomic.Uint32 // auto: the generation the mode was last logged for

	order        commitOrder
	kind3Refused atomic.Bool // a pinned external-group mode was refused
}

func newOffsetStore(b *Bridge) *offsetStore {
	s := &offsetStore{b: b}
	switch b.cfg.Offsets.Mode {
	case "external-group":
		s.pinned = offsetModeExternal
	case "consumer":
		s.pinned = offsetModeConsumer
	}
	s.order.slots = map[commitKey]*commitSlot{}
	return s
}

// modeFor is the auto mode for protocol generation p.
func modeFor(p icodec.ProtocolVersion) offsetMode {
	if p.ExternalGroupOffsets() {
		return offsetModeExternal
	}
	return offsetModeConsumer
}

// resolveMode returns the mode: the pinned one, or in auto mode the one of
// the protocol generation of the latest login (logged when it changes).
func (s *offsetStore) resolveMode(context.Context, iggy.TopicRef) (offsetMode, error) {
	if s.pinned != offsetModeUnknown {
		if s.pinned == offsetModeExternal && s.kind3Refused.Load() {
			return s.pinned, errKind3Refused
		}
		return s.pinned, nil
	}
	p := s.b.iggy.Protocol()
	if p == 0 {
		return offsetModeUnknown, errOffsetsMode
	}
	m := modeFor(p)
	if s.modeAt.Swap(uint32(p)) != uint32(p) {
		s.b.log.Info().Str("offsets_mode", m.String()).Str("iggy_protocol", p.String()).
			Msg("offsets: mode chosen by the server's protocol generation")
	}
	return m, nil
}

// stringID is a string Identifier.
func stringID(name string) icodec.Identifier {
	return icodec.Identifier{Kind: icodec.IdentifierKindString, Value: []byte(name)}
}

// consumerOf is the Iggy consumer holding a group's offsets in mode m.
func consumerOf(m offsetMode, group string) icodec.Consumer {
	kind := icodec.ConsumerKindConsumer
	if m == offsetModeExternal {
		kind = icodec.ConsumerKindExternalGroup
	}
	return icodec.Consumer{Kind: kind, ID: stringID(iggyGroupName(group))}
}

// prepare readies the commits of a group on Iggy topic ref: it resolves
// the mode and, in external-group mode, makes sure the Iggy group exists.
// Call it once per topic of a commit request.
func (s *offsetStore) prepare(ctx context.Context, group string, ref iggy.TopicRef) (offsetMode, error) {
	mode, err := s.resolveMode(ctx, ref)
	if err != nil {
		return mode, err
	}
	if mode == offsetModeExternal {
		if err := s.ensureGroup(ctx, ref, group, false); err != nil {
			return mode, err
		}
	}
	return mode, nil
}

// commit stores (offset >= 0) or deletes (offset < 0) the committed offset
// of a group on one partition of Iggy topic ref, in mode (from prepare),
// in order with the other writes of that key (see commitOrder).
func (s *offsetStore) commit(ctx context.Context, mode offsetMode, group string, ref iggy.TopicRef, partition int32, offset int64, tk commitTicket) error {
	if offset < 0 {
		return s.remove(ctx, group, ref, partition, tk)
	}
	key := commitKey{group: group, ref: ref, partition: partition}
	return s.order.run(key, tk, func(sl *commitSlot) error {
		if mode == offsetModeConsumer {
			return s.writeConsumer(ctx, sl, group, ref, partition, offset)
		}
		err := s.write(ctx, mode, group, ref, partition, offset)
		if err != nil && mode == offsetModeExternal && groupMissing(err) {
			// The Iggy group (or the topic) went away: create it again
			// and try once more.
			if err := s.ensureGroup(ctx, ref, group, true); err != nil {
				return err
			}
			err = s.write(ctx, mode, group, ref, partition, offset)
		}
		if err == nil {
			sl.mainStored = true
		}
		return s.kind3Refusal(mode, err)
	})
}

// remove deletes the committed offset of a group on one partition, in
// order with the other writes of that key. Nothing stored, or no Iggy
// group to hold it, counts as success; no Iggy group is created.
func (s *offsetStore) remove(ctx context.Context, group string, ref iggy.TopicRef, partition int32, tk commitTicket) error {
	mode, err := s.resolveMode(ctx, ref)
	if err != nil {
		return err
	}
	key := commitKey{group: group, ref: ref, partition: partition}
	return s.order.run(key, tk, func(sl *commitSlot) error {
		if mode == offsetModeConsumer {
			// The marker first: a failure in between leaves the main key,
			// which reads as before.
			if err := s.clearMarker(ctx, sl, group, ref, uint32(partition), true); err != nil {
				return err
			}
		}
		err := s.deleteMain(ctx, sl, mode, group, ref, partition)
		if mode == offsetModeExternal && groupMissing(err) {
			return nil
		}
		return s.kind3Refusal(mode, err)
	})
}

// write stores Kafka offset offset (> 0 in consumer mode, >= 0 otherwise)
// as the main key in mode.
func (s *offsetStore) write(ctx context.Context, mode offsetMode, group string, ref iggy.TopicRef, partition int32, offset int64) error {
	if mode == offsetModeConsumer {
		offset-- // Iggy keeps the last processed message
	}
	return s.b.iggy.StoreOffset(ctx, ref, uint32(partition), consumerOf(mode, group), uint64(offset))
}

// deleteKey deletes one stored offset; nothing stored counts as deleted.
func (s *offsetStore) deleteKey(ctx context.Context, ref iggy.TopicRef, partition uint32, c icodec.Consumer) error {
	err := s.b.iggy.DeleteOffset(ctx, ref, partition, c)
	if errors.Is(err, icodec.StatusConsumerOffsetNotFound) {
		return nil
	}
	return err
}

// writeConsumer stores a commit (offset >= 0) in consumer mode, with the
// zero marker for a commit of 0 (see the top of this file). Called under
// the key's slot lock (sl).
func (s *offsetStore) writeConsumer(ctx context.Context, sl *commitSlot, group string, ref iggy.TopicRef, partition int32, offset int64) error {
	p := uint32(partition)
	if offset == 0 {
		// The marker first: a failure in between leaves the main key,
		// which reads as before.
		switch err := s.b.iggy.StoreOffset(ctx, ref, p, markerOf(group), 0); {
		case err == nil:
			sl.markerStored, sl.markerGone = true, time.Time{}
		case errors.Is(err, icodec.StatusInvalidOffset):
			// The partition never had a message: nothing to mark; -1 and
			// 0 position a consumer alike there.
		default:
			return err
		}
		return s.deleteMain(ctx, sl, offsetModeConsumer, group, ref, partition)
	}
	if err := s.write(ctx, offsetModeConsumer, group, ref, partition, offset); err != nil {
		return err
	}
	sl.mainStored = true
	if err := s.clearMarker(ctx, sl, group, ref, p, false); err != nil {
		// The commit itself is stored and reads back; a leftover marker
		// only pins retention, and the next commit tries again.
		s.b.log.Warn().Err(err).Str("group_id", group).Str("iggy_stream", ref.Stream).Str("iggy_topic", ref.Topic).
			Int32("partition", partition).Uint32("iggy_code", iggyCode(err)).
			Msg("offsets: deleting the zero marker failed")
	}
	return nil
}

// deleteMain deletes the key's main offset in mode: at once when this
// process stored it, otherwise only when a read finds one (a real server
// logs every delete of a missing offset; another sidecar may have stored
// it, so there is no skipping without a read). Called under the key's slot
// lock.
func (s *offsetStore) deleteMain(ctx context.Context, sl *commitSlot, mode offsetMode, group string, ref iggy.TopicRef, partition int32) error {
	c, p := consumerOf(mode, group), uint32(partition)
	if !sl.mainStored {
		_, found, err := s.b.iggy.GetOffset(ctx, ref, p, c)
		if err != nil && !iggy.IsNotFound(err) {
			return err
		}
		if !found {
			return nil
		}
	}
	err := s.deleteKey(ctx, ref, p, c)
	if err == nil {
		sl.mainStored = false
	}
	return err
}

// clearMarker deletes the key's zero marker when one may be stored (see
// the top of this file): at once when this process stored it, after a read
// that finds it when the process does not know (always with recheck, for
// the removals), not at all when it saw none less than markerRecheck ago.
// Called under the key's slot lock.
func (s *offsetStore) clearMarker(ctx context.Context, sl *commitSlot, group string, ref iggy.TopicRef, partition uint32, recheck bool) error {
	if !sl.markerStored {
		if !recheck && !sl.markerGone.IsZero() && time.Since(sl.markerGone) < markerRecheck {
			return nil
		}
		_, found, err := s.b.iggy.GetOffset(ctx, ref, partition, markerOf(group))
		if err != nil && !iggy.IsNotFound(err) {
			return err
		}
		if !found {
			sl.markerGone = time.Now()
			return nil
		}
	}
	if err := s.deleteKey(ctx, ref, partition, markerOf(group)); err != nil {
		return err
	}
	sl.markerStored, sl.markerGone = false, time.Now()
	return nil
}

// groupMissing reports whether a store failed because its target is gone.
func groupMissing(err error) bool {
	return iggy.IsNotFound(err) || errors.Is(err, icodec.StatusConsumerGroupIDNotFound) ||
		errors.Is(err, icodec.StatusConsumerGroupNameNotFound)
}

// kind3Refusal turns the failure of a write in mode into errKind3Refused
// when it is the refusal of consumer kind 3 by a server whose protocol
// generation lacks it (ResourceNotFound from a real 0.11 server,
// InvalidCommand from older embedded servers), logging it once at error
// level with the key to change.
func (s *offsetStore) kind3Refusal(mode offsetMode, err error) error {
	if mode != offsetModeExternal || err == nil || s.b.iggy.Protocol().ExternalGroupOffsets() ||
		!iggy.IsNotFound(err) && !errors.Is(err, icodec.StatusInvalidCommand) {
		return err
	}
	if s.kind3Refused.CompareAndSwap(false, true) {
		s.b.log.Error().Err(err).Str("offsets_mode", s.pinned.String()).Str("iggy_protocol", s.b.iggy.Protocol().String()).
			Uint32("iggy_code", iggyCode(err)).
			Msg("offsets: the Iggy server refuses consumer kind 3 (ExternalGroup), its protocol generation has none; set offsets.mode to auto or consumer")
	}
	return errKind3Refused
}

// ensureGroup makes sure Iggy consumer group kafka.cg.<group> exists on
// ref: a GET_CONSUMER_GROUP, and CREATE_CONSUMER_GROUP when it is missing
// (or at once with create set).
func (s *offsetStore) ensureGroup(ctx context.Context, ref iggy.TopicRef, group string, create bool) error {
	name := iggyGroupName(group)
	if !create {
		var resp icodec.GetConsumerGroupResponse
		req := icodec.GetConsumerGroupRequest{StreamID: ref.StreamID(), TopicID: ref.TopicID(), GroupID: stringID(name)}
		err := s.b.iggy.Do(ctx, &req, &resp)
		if err == nil {
			return nil
		}
		if !iggy.IsNotFound(err) {
			return err
		}
	}
	req := icodec.CreateConsumerGroupRequest{StreamID: ref.StreamID(), TopicID: ref.TopicID(), Name: name}
	switch err := s.b.iggy.Do(ctx, &req, nil); {
	case err == nil:
		s.b.log.Debug().Str("group_id", group).Str("iggy_stream", ref.Stream).Str("iggy_topic", ref.Topic).
			Msg("offsets: created Iggy consumer group")
	case !errors.Is(err, icodec.StatusConsumerGroupNameAlreadyExists):
		return err
	}
	return nil
}

// read returns the committed offset of a group on one partition, -1 when
// none is stored (or the topic, partition or group is unknown). In
// consumer mode a missing main key is followed by a read of the zero
// marker (0 when present). Any other failure is returned as an error:
// never a fake -1.
func (s *offsetStore) read(ctx context.Context, mode offsetMode, group string, ref iggy.TopicRef, partition int32) (int64, error) {
	r, found, err := s.b.iggy.GetOffset(ctx, ref, uint32(partition), consumerOf(mode, group))
	switch {
	case err != nil && iggy.IsNotFound(err):
		return -1, nil
	case err != nil:
		return -1, err
	case found:
		return kafkaOffset(mode, r.StoredOffset), nil
	case mode != offsetModeConsumer:
		return -1, nil
	}
	_, found, err = s.b.iggy.GetOffset(ctx, ref, uint32(partition), markerOf(group))
	switch {
	case err != nil && iggy.IsNotFound(err):
		return -1, nil
	case err != nil:
		return -1, err
	case found:
		return 0, nil
	}
	return -1, nil
}

// kafkaOffset maps a stored Iggy value to the Kafka offset it stands for.
func kafkaOffset(mode offsetMode, v uint64) int64 {
	if mode == offsetModeConsumer {
		if v >= math.MaxInt64 {
			return -1
		}
		return int64(v) + 1
	}
	if v > math.MaxInt64 {
		return -1
	}
	return int64(v)
}

// offsetReadCode is the Kafka code of a failed offset read: refusals are
// GROUP_AUTHORIZATION_FAILED, everything else COORDINATOR_LOAD_IN_PROGRESS
// (retriable for every client, where REQUEST_TIMED_OUT or
// UNKNOWN_SERVER_ERROR would make a consumer fail).
func offsetReadCode(err error) int16 {
	if iggy.IsUnauthorized(err) {
		return kerr.GroupAuthorizationFailed.Code
	}
	return kerr.CoordinatorLoadInProgress.Code
}

// storedTopic is one topic of a group's stored offsets.
type storedTopic struct {
	name       string
	info       *iggy.TopicInfo
	hasGroup   bool           // external mode: the Iggy group exists on it
	partitions []storedOffset // ascending, only partitions with an offset
}

// storedOffset is one stored offset.
type storedOffset struct {
	partition int32
	offset    int64
}

// scan finds every stored offset of a group: every Kafka topic (the
// default stream's topics and the overrides), in external mode only those
// that have the Iggy group, every partition. Topics come back sorted by
// name; in external mode a topic that has the group but no offset is
// included (hasGroup) with no partitions.
func (s *offsetStore) scan(ctx context.Context, group string) ([]storedTopic, offsetMode, error) {
	names, err := s.b.listTopics(ctx)
	if err != nil {
		return nil, offsetModeUnknown, err
	}
	if len(names) == 0 {
		return nil, offsetModeUnknown, nil
	}
	mode, err := s.resolveMode(ctx, s.b.topics.ref(names[0]))
	if err != nil {
		return nil, mode, err
	}
	topics := make([]storedTopic, len(names))
	errs := make([]error, len(names))
	parallel(len(names), offsetsParallel, func(i int) {
		topics[i].name = names[i]
		info, err := s.b.lookupTopic(ctx, names[i])
		if err != nil {
			if !iggy.IsNotFound(err) {
				errs[i] = err
			}
			return
		}
		topics[i].info = info
		if mode == offsetModeExternal {
			var resp icodec.GetConsumerGroupResponse
			req := icodec.GetConsumerGroupRequest{StreamID: info.Ref.StreamID(), TopicID: info.Ref.TopicID(), GroupID: stringID(iggyGroupName(group))}
			switch err := s.b.iggy.Do(ctx, &req, &resp); {
			case err == nil:
				topics[i].hasGroup = true
			case iggy.IsNotFound(err):
				return
			default:
				errs[i] = err
				return
			}
		}
	})
	if err := errors.Join(errs...); err != nil {
		return nil, mode, err
	}
	// Partition reads of every candidate topic, bounded together.
	type job struct{ t, p int }
	var jobs []job
	for i := range topics {
		t := &topics[i]
		if t.info == nil || mode == offsetModeExternal && !t.hasGroup {
			continue
		}
		for p := 0; p < int(t.info.PartitionsCount); p++ {
			jobs = append(jobs, job{i, p})
		}
	}
	offs := make([]int64, len(jobs))
	jerrs := make([]error, len(jobs))
	parallel(len(jobs), offsetsParallel, func(k int) {
		t := &topics[jobs[k].t]
		offs[k], jerrs[k] = s.read(ctx, mode, group, t.info.Ref, int32(jobs[k].p))
	})
	if err := errors.Join(jerrs...); err != nil {
		return nil, mode, err
	}
	for k, j := range jobs {
		if offs[k] >= 0 {
			t := &topics[j.t]
			t.partitions = append(t.partitions, storedOffset{partition: int32(j.p), offset: offs[k]})
		}
	}
	out := topics[:0]
	for _, t := range topics {
		if len(t.partitions) > 0 || t.hasGroup {
			out = append(out, t)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, mode, nil
}

// DeleteGroupOffsets deletes every committed offset of group and, in
// external mode, its Iggy consumer groups (the groupOffsetsDeleter of
// DeleteGroups). groups.ErrNoOffsets when there was nothing.
// OffsetsErrorCode maps a DeleteGroupOffsets failure (groups.OffsetsDeleter).
func (s *offsetStore) OffsetsErrorCode(err error) (int16, uint32) {
	return kafkaCode(err, scopeOffsets), iggyCode(err)
}

func (s *offsetStore) DeleteGroupOffsets(ctx context.Context, group string) error {
	if !validGroupID(group) {
		return groups.ErrNoOffsets
	}
	topics, mode, err := s.scan(ctx, group)
	if err != nil {
		return err
	}
	if len(topics) == 0 {
		return groups.ErrNoOffsets
	}
	type job struct{ t, k int }
	var jobs []job
	for i := range topics {
		for k := range topics[i].partitions {
			jobs = append(jobs, job{i, k})
		}
	}
	errs := make([]error, len(jobs))
	parallel(len(jobs), offsetsParallel, func(n int) {
		t := &topics[jobs[n].t]
		p := t.partitions[jobs[n].k].partition
		errs[n] = s.remove(ctx, group, t.info.Ref, p, commitTicket{})
	})
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if mode == offsetModeExternal {
		gerrs := make([]error, len(topics))
		parallel(len(topics), offsetsParallel, func(i int) {
			if !topics[i].hasGroup {
				return
			}
			ref := topics[i].info.Ref
			req := icodec.DeleteConsumerGroupRequest{StreamID: ref.StreamID(), TopicID: ref.TopicID(), GroupID: stringID(iggyGroupName(group))}
			if err := s.b.iggy.Do(ctx, &req, nil); err != nil && !groupMissing(err) {
				gerrs[i] = err
			}
		})
		if err := errors.Join(gerrs...); err != nil {
			return err
		}
	}
	s.b.log.Info().Str("group_id", group).Int("topics", len(topics)).Int("offsets", len(jobs)).
		Msg("offsets: deleted committed offsets of group")
	return nil
}

// parallel runs fn(0..n-1) with at most limit at once and returns when all
// have finished.
func parallel(n, limit int, fn func(i int)) {
	switch {
	case n <= 0:
		return
	case n == 1:
		fn(0)
		return
	}
	if limit > n {
		limit = n
	}
	var wg sync.WaitGroup
	var next atomic.Int64
	for w := 0; w < limit; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				fn(i)
			}
		}()
	}
	wg.Wait()
}

// commitKey is one committed offset.
type commitKey struct {
	group     string
	ref       iggy.TopicRef
	partition int32
}

// commitTicket says where a write came from: the connection, when its
// request was received and its correlation id. The zero ticket (internal
// writes) is never stale and never makes another write stale.
type commitTicket struct {
	conn uint64
	at   time.Time
	corr int32
}

// ticketOf is the ticket of a request's writes.
func ticketOf(rq *Request) commitTicket {
	return commitTicket{conn: rq.ConnID, at: rq.Received, corr: rq.CorrID}
}

// before reports whether t was made before u on the same connection.
func (t commitTicket) before(u commitTicket) bool {
	if t.conn == 0 || t.conn != u.conn {
		return false
	}
	if !t.at.Equal(u.at) {
		return t.at.Before(u.at)
	}
	return int32(t.corr-u.corr) < 0 // wrap-safe
}

// commitOrder serializes the writes of each commitKey and skips writes
// overtaken by a later write of the same connection.
type commitOrder struct {
	mu        sync.Mutex
	slots     map[commitKey]*commitSlot
	pruneNext int // slot count that triggers the next prune
}

// commitSlot is one key's ordering state.
type commitSlot struct {
	mu    sync.Mutex // held while the key's write is on its way
	users int        // goroutines holding or waiting for mu (guarded by commitOrder.mu)
	last  commitTicket
	used  time.Time // guarded by commitOrder.mu
	// mainStored: this process stored the key's main offset and has not
	// deleted it since. Guarded by mu.
	mainStored bool
	// markerStored: this process stored the key's zero marker (consumer
	// mode) and has not deleted it since. markerGone is when it last
	// deleted the marker or saw none; zero when it does not know. Guarded
	// by mu.
	markerStored bool
	markerGone   time.Time
}

// run calls write for key, with the key's slot locked, unless a later
// write of the same connection was applied already (then it reports
// success without writing).
func (o *commitOrder) run(key commitKey, tk commitTicket, write func(sl *commitSlot) error) error {
	o.mu.Lock()
	sl := o.slots[key]
	if sl == nil {
		sl = &commitSlot{}
		o.slots[key] = sl
		o.prune()
	}
	sl.users++
	o.mu.Unlock()

	sl.mu.Lock()
	var err error
	if !tk.before(sl.last) {
		if err = write(sl); err == nil {
			sl.last = tk
		}
	}
	sl.mu.Unlock()

	o.mu.Lock()
	sl.users--
	sl.used = time.Now()
	o.mu.Unlock()
	return err
}

// prune drops idle slots when there are many. Caller holds o.mu.
func (o *commitOrder) prune() {
	if len(o.slots) < max(o.pruneNext, commitSlotsPrune) {
		return
	}
	now := time.Now()
	for k, sl := range o.slots {
		if sl.users == 0 && !sl.used.IsZero() && now.Sub(sl.used) > commitSlotIdle {
			delete(o.slots, k)
		}
	}
	o.pruneNext = 2 * len(o.slots)
}
