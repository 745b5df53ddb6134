// Package offsets keeps committed offsets in Iggy (KAFKA-ON-IGGY §6): the
// store behind OffsetCommit, OffsetFetch, OffsetDelete and DeleteGroups.
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
//     message); Iggy refuses commits beyond the high watermark (4100
//     InvalidOffset), which the beyond log keeps instead (beyond.go).
//     Costs: the name is hashed to 32 bits, and stored offsets pin
//     retention.
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
//     process stored it, else only when a read finds it. Iggy refuses
//     any offset on a partition that never had a message (4100): there a
//     commit of 0 (or any other) goes to the beyond log.
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
// Beyond log (beyond.go): a commit Iggy refuses with InvalidOffset (an
// empty partition, an offset beyond its end) is kept as a record in the
// sidecars' own stream and wins over the Iggy keys until a commit Iggy
// stores, a negative commit, OffsetDelete or DeleteGroups clears it; every
// commit and read reads that log to its end first. So any offset a member
// commits reads back as committed, in every mode.
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
// consumer mode when the zero marker is involved, one more for the beyond
// log) and nothing is taken under it but the beyond log's locks
// (beyondLog.syncMu, held across its reads of Iggy, then beyondLog.mu, a
// leaf) and the Iggy client's own leaf locks.

package offsets

import (
	"context"
	"errors"
	"math"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/rs/zerolog"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

// Mode is where committed offsets live.
type Mode uint8

const (
	ModeUnknown  Mode = iota // auto, not decided yet
	ModeExternal             // kind 3, value verbatim
	ModeConsumer             // kind 1, value - 1
)

func (m Mode) String() string {
	switch m {
	case ModeExternal:
		return "external-group"
	case ModeConsumer:
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
	// MaxParallel bounds the Iggy calls one offsets request runs at
	// once.
	MaxParallel = 16
	// commitSlotsPrune is the slot count above which idle ordering slots
	// are pruned.
	commitSlotsPrune = 4096
	// commitSlotIdle is how long an idle ordering slot is kept: far longer
	// than two pipelined requests of one connection can be apart.
	commitSlotIdle = time.Minute
)

// ErrModeUndecided is returned when the auto mode cannot be decided.
var ErrModeUndecided = errors.New("bridge: offsets mode not decided yet")

// ErrNoOffsets is what DeleteGroupOffsets returns when the group has no
// committed offsets.
var ErrNoOffsets = errors.New("offsets: group has no committed offsets")

// ErrKind3Refused is returned by every offsets write once a pinned
// external-group mode met a server that refuses consumer kind 3.
var ErrKind3Refused = errors.New("bridge: the Iggy server refuses consumer kind 3 (ExternalGroup); set offsets.mode to auto or consumer")

// ValidGroupID applies the group-id rule of §6.
func ValidGroupID(g string) bool {
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

// Store keeps committed offsets in Iggy.
type Store struct {
	client *iggy.Client
	topics Topics
	log    zerolog.Logger
	pinned Mode // configured mode; unknown = auto

	modeAt atomic.Uint32 // auto: the generation the mode was last logged for

	order        commitOrder
	kind3Refused atomic.Bool // a pinned external-group mode was refused
	beyond       *beyondLog  // the commits Iggy refuses to store (beyond.go)
}

// New returns the store of committed offsets on client, for the Kafka
// topics of topics, in mode (offsets.mode: auto, external-group or
// consumer).
func New(client *iggy.Client, topics Topics, mode string, log zerolog.Logger) *Store {
	s := &Store{client: client, topics: topics, log: log, beyond: newBeyondLog(client, log)}
	switch mode {
	case "external-group":
		s.pinned = ModeExternal
	case "consumer":
		s.pinned = ModeConsumer
	}
	s.order.slots = map[commitKey]*commitSlot{}
	return s
}

// Topics is what the store needs of the topic mapping: every Kafka topic
// and the Iggy topic of a Kafka name.
type Topics interface {
	// List returns every Kafka topic, sorted by name.
	List(ctx context.Context) ([]string, error)
	// Ref is the Iggy topic of Kafka topic name.
	Ref(name string) iggy.TopicRef
}

// statusCode is the Iggy status code behind err, 0 when none.
func statusCode(err error) uint32 {
	var st icodec.Status
	if errors.As(err, &st) {
		return uint32(st)
	}
	return 0
}

// modeFor is the auto mode for protocol generation p.
func modeFor(p icodec.ProtocolVersion) Mode {
	if p.ExternalGroupOffsets() {
		return ModeExternal
	}
	return ModeConsumer
}

// ResolveMode returns the mode: the pinned one, or in auto mode the one of
// the protocol generation of the latest login (logged when it changes).
func (s *Store) ResolveMode(context.Context, iggy.TopicRef) (Mode, error) {
	if s.pinned != ModeUnknown {
		if s.pinned == ModeExternal && s.kind3Refused.Load() {
			return s.pinned, ErrKind3Refused
		}
		return s.pinned, nil
	}
	p := s.client.Protocol()
	if p == 0 {
		return ModeUnknown, ErrModeUndecided
	}
	m := modeFor(p)
	if s.modeAt.Swap(uint32(p)) != uint32(p) {
		s.log.Info().Str("offsets_mode", m.String()).Str("iggy_protocol", p.String()).
			Msg("offsets: mode chosen by the server's protocol generation")
	}
	return m, nil
}

// stringID is a string Identifier.
func stringID(name string) icodec.Identifier {
	return icodec.Identifier{Kind: icodec.IdentifierKindString, Value: []byte(name)}
}

// consumerOf is the Iggy consumer holding a group's offsets in mode m.
func consumerOf(m Mode, group string) icodec.Consumer {
	kind := icodec.ConsumerKindConsumer
	if m == ModeExternal {
		kind = icodec.ConsumerKindExternalGroup
	}
	return icodec.Consumer{Kind: kind, ID: stringID(iggyGroupName(group))}
}

// Prepare readies the commits of a group on Iggy topic ref: it resolves
// the mode and, in external-group mode, makes sure the Iggy group exists.
// Call it once per topic of a commit request.
func (s *Store) Prepare(ctx context.Context, group string, ref iggy.TopicRef) (Mode, error) {
	mode, err := s.ResolveMode(ctx, ref)
	if err != nil {
		return mode, err
	}
	if mode == ModeExternal {
		if err := s.ensureGroup(ctx, ref, group, false); err != nil {
			return mode, err
		}
	}
	return mode, nil
}

// Commit stores (offset >= 0) or deletes (offset < 0) the committed offset
// of a group on one partition of Iggy topic ref, in mode (from prepare),
// in order with the other writes of that key (see commitOrder).
func (s *Store) Commit(ctx context.Context, mode Mode, group string, ref iggy.TopicRef, partition int32, offset int64, tk Ticket) error {
	if offset < 0 {
		return s.Remove(ctx, group, ref, partition, tk)
	}
	key := commitKey{group: group, ref: ref, partition: partition}
	return s.order.run(key, tk, func(sl *commitSlot) error {
		if err := s.beyond.sync(ctx); err != nil {
			return err
		}
		switch off, ok, err := s.beyond.live(ctx, key); {
		case err != nil:
			return err
		case ok && off == offset:
			// Held already (a consumer's periodic commit of an unchanged
			// position on an empty partition): no refused store in the
			// server's log, no new record.
			return nil
		}
		err := s.store(ctx, sl, mode, group, ref, partition, offset)
		switch {
		case errors.Is(err, icodec.StatusInvalidOffset):
			// Iggy refuses the offset (an empty partition, beyond its
			// end): the beyond log keeps it (beyond.go).
			return s.beyond.put(ctx, key, offset)
		case err == nil && s.beyond.has(key):
			// Stored in Iggy: the beyond entry must not win any more.
			return s.beyond.put(ctx, key, -1)
		}
		return err
	})
}

// store writes a commit (offset >= 0) into Iggy's consumer offsets in
// mode. Called under the key's slot lock (sl).
func (s *Store) store(ctx context.Context, sl *commitSlot, mode Mode, group string, ref iggy.TopicRef, partition int32, offset int64) error {
	if mode == ModeConsumer {
		return s.writeConsumer(ctx, sl, group, ref, partition, offset)
	}
	err := s.write(ctx, mode, group, ref, partition, offset)
	if err != nil && mode == ModeExternal && groupMissing(err) {
		// The Iggy group (or the topic) went away: create it again and
		// try once more.
		if err := s.ensureGroup(ctx, ref, group, true); err != nil {
			return err
		}
		err = s.write(ctx, mode, group, ref, partition, offset)
	}
	if err == nil {
		sl.mainStored = true
	}
	return s.kind3Refusal(mode, err)
}

// Remove deletes the committed offset of a group on one partition, in
// order with the other writes of that key. Nothing stored, or no Iggy
// group to hold it, counts as success; no Iggy group is created.
func (s *Store) Remove(ctx context.Context, group string, ref iggy.TopicRef, partition int32, tk Ticket) error {
	mode, err := s.ResolveMode(ctx, ref)
	if err != nil {
		return err
	}
	key := commitKey{group: group, ref: ref, partition: partition}
	return s.order.run(key, tk, func(sl *commitSlot) error {
		if err := s.beyond.sync(ctx); err != nil {
			return err
		}
		if s.beyond.has(key) {
			// The beyond entry first: it would win over what is left.
			if err := s.beyond.put(ctx, key, -1); err != nil {
				return err
			}
		}
		if mode == ModeConsumer {
			// The marker first: a failure in between leaves the main key,
			// which reads as before.
			if err := s.clearMarker(ctx, sl, group, ref, uint32(partition), true); err != nil {
				return err
			}
		}
		err := s.deleteMain(ctx, sl, mode, group, ref, partition)
		if mode == ModeExternal && groupMissing(err) {
			return nil
		}
		return s.kind3Refusal(mode, err)
	})
}

// write stores Kafka offset offset (> 0 in consumer mode, >= 0 otherwise)
// as the main key in mode.
func (s *Store) write(ctx context.Context, mode Mode, group string, ref iggy.TopicRef, partition int32, offset int64) error {
	if mode == ModeConsumer {
		offset-- // Iggy keeps the last processed message
	}
	return s.client.StoreOffset(ctx, ref, uint32(partition), consumerOf(mode, group), uint64(offset))
}

// deleteKey deletes one stored offset; nothing stored counts as deleted.
func (s *Store) deleteKey(ctx context.Context, ref iggy.TopicRef, partition uint32, c icodec.Consumer) error {
	err := s.client.DeleteOffset(ctx, ref, partition, c)
	if errors.Is(err, icodec.StatusConsumerOffsetNotFound) {
		return nil
	}
	return err
}

// writeConsumer stores a commit (offset >= 0) in consumer mode, with the
// zero marker for a commit of 0 (see the top of this file). Called under
// the key's slot lock (sl).
func (s *Store) writeConsumer(ctx context.Context, sl *commitSlot, group string, ref iggy.TopicRef, partition int32, offset int64) error {
	p := uint32(partition)
	if offset == 0 {
		// The marker first: a failure in between leaves the main key,
		// which reads as before.
		if err := s.client.StoreOffset(ctx, ref, p, markerOf(group), 0); err != nil {
			// InvalidOffset: the partition never had a message, Iggy
			// stores nothing there; the caller keeps the commit in the
			// beyond log.
			return err
		}
		sl.markerStored, sl.markerGone = true, time.Time{}
		return s.deleteMain(ctx, sl, ModeConsumer, group, ref, partition)
	}
	if err := s.write(ctx, ModeConsumer, group, ref, partition, offset); err != nil {
		return err
	}
	sl.mainStored = true
	if err := s.clearMarker(ctx, sl, group, ref, p, false); err != nil {
		// The commit itself is stored and reads back; a leftover marker
		// only pins retention, and the next commit tries again.
		s.log.Warn().Err(err).Str("group_id", group).Str("iggy_stream", ref.Stream).Str("iggy_topic", ref.Topic).
			Int32("partition", partition).Uint32("iggy_code", statusCode(err)).
			Msg("offsets: deleting the zero marker failed")
	}
	return nil
}

// deleteMain deletes the key's main offset in mode: at once when this
// process stored it, otherwise only when a read finds one (a real server
// logs every delete of a missing offset; another sidecar may have stored
// it, so there is no skipping without a read). Called under the key's slot
// lock.
func (s *Store) deleteMain(ctx context.Context, sl *commitSlot, mode Mode, group string, ref iggy.TopicRef, partition int32) error {
	c, p := consumerOf(mode, group), uint32(partition)
	if !sl.mainStored {
		_, found, err := s.client.GetOffset(ctx, ref, p, c)
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
func (s *Store) clearMarker(ctx context.Context, sl *commitSlot, group string, ref iggy.TopicRef, partition uint32, recheck bool) error {
	if !sl.markerStored {
		if !recheck && !sl.markerGone.IsZero() && time.Since(sl.markerGone) < markerRecheck {
			return nil
		}
		_, found, err := s.client.GetOffset(ctx, ref, partition, markerOf(group))
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

// kind3Refusal turns the failure of a write in mode into ErrKind3Refused
// when it is the refusal of consumer kind 3 by a server whose protocol
// generation lacks it (ResourceNotFound from a real 0.11 server,
// InvalidCommand from older embedded servers), logging it once at error
// level with the key to change.
func (s *Store) kind3Refusal(mode Mode, err error) error {
	if mode != ModeExternal || err == nil || s.client.Protocol().ExternalGroupOffsets() ||
		!iggy.IsNotFound(err) && !errors.Is(err, icodec.StatusInvalidCommand) {
		return err
	}
	if s.kind3Refused.CompareAndSwap(false, true) {
		s.log.Error().Err(err).Str("offsets_mode", s.pinned.String()).Str("iggy_protocol", s.client.Protocol().String()).
			Uint32("iggy_code", statusCode(err)).
			Msg("offsets: the Iggy server refuses consumer kind 3 (ExternalGroup), its protocol generation has none; set offsets.mode to auto or consumer")
	}
	return ErrKind3Refused
}

// ensureGroup makes sure Iggy consumer group kafka.cg.<group> exists on
// ref: a GET_CONSUMER_GROUP, and CREATE_CONSUMER_GROUP when it is missing
// (or at once with create set).
func (s *Store) ensureGroup(ctx context.Context, ref iggy.TopicRef, group string, create bool) error {
	name := iggyGroupName(group)
	if !create {
		var resp icodec.GetConsumerGroupResponse
		req := icodec.GetConsumerGroupRequest{StreamID: ref.StreamID(), TopicID: ref.TopicID(), GroupID: stringID(name)}
		err := s.client.Do(ctx, &req, &resp)
		if err == nil {
			return nil
		}
		if !iggy.IsNotFound(err) {
			return err
		}
	}
	req := icodec.CreateConsumerGroupRequest{StreamID: ref.StreamID(), TopicID: ref.TopicID(), Name: name}
	switch err := s.client.Do(ctx, &req, nil); {
	case err == nil:
		s.log.Debug().Str("group_id", group).Str("iggy_stream", ref.Stream).Str("iggy_topic", ref.Topic).
			Msg("offsets: created Iggy consumer group")
	case !errors.Is(err, icodec.StatusConsumerGroupNameAlreadyExists):
		return err
	}
	return nil
}

// Read returns the committed offset of a group on one partition, -1 when
// none is stored (or the topic, partition or group is unknown). A live
// entry of the beyond log wins; else, in consumer mode a missing main key is followed by a read of the zero
// marker (0 when present). Any other failure is returned as an error:
// never a fake -1.
func (s *Store) Read(ctx context.Context, mode Mode, group string, ref iggy.TopicRef, partition int32) (int64, error) {
	if err := s.beyond.sync(ctx); err != nil {
		return -1, err
	}
	switch off, ok, err := s.beyond.live(ctx, commitKey{group: group, ref: ref, partition: partition}); {
	case err != nil:
		return -1, err
	case ok:
		return off, nil
	}
	r, found, err := s.client.GetOffset(ctx, ref, uint32(partition), consumerOf(mode, group))
	switch {
	case err != nil && iggy.IsNotFound(err):
		return -1, nil
	case err != nil:
		return -1, err
	case found:
		return kafkaOffset(mode, r.StoredOffset), nil
	case mode != ModeConsumer:
		return -1, nil
	}
	_, found, err = s.client.GetOffset(ctx, ref, uint32(partition), markerOf(group))
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
func kafkaOffset(mode Mode, v uint64) int64 {
	if mode == ModeConsumer {
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

// ReadCode is the Kafka code of a failed offset read: refusals are
// GROUP_AUTHORIZATION_FAILED, everything else COORDINATOR_LOAD_IN_PROGRESS
// (retriable for every client, where REQUEST_TIMED_OUT or
// UNKNOWN_SERVER_ERROR would make a consumer fail).
func ReadCode(err error) int16 {
	if iggy.IsUnauthorized(err) {
		return kerr.GroupAuthorizationFailed.Code
	}
	return kerr.CoordinatorLoadInProgress.Code
}
