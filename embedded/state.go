package embedded

import (
	"encoding/binary"
	"sort"
	"sync"

	"github.com/kafka-iggy/kafka-iggy/codec/iggy"
	"github.com/kafka-iggy/kafka-iggy/embedded/plog"
)

// stream is one stream. Guarded by Server.mu.
type stream struct {
	id        uint32
	name      string
	createdAt uint64
	topics    map[uint32]*topic
	byName    map[string]uint32
}

// topicConfig is the effective configuration of a topic, resolved from its
// explicit and derived options.
type topicConfig struct {
	compression   iggy.CompressionAlgorithm
	messageExpiry uint64 // µs; u64::MAX = never
	maxTopicSize  uint64 // bytes; u64::MAX = unlimited
	segmentSize   uint64 // bytes
	enforceFsync  bool   // enforce_fsync, or durability "persisted": fsync appends
	offsetsFsync  bool   // enforce_fsync, or consumer_offset_durability "persisted": fsync offsets
}

// topic is one topic of a stream. Guarded by Server.mu (partitions' logs
// and offsets have their own locks).
type topic struct {
	id          uint32
	name        string
	createdAt   uint64
	stream      *stream
	partitions  []*partition // sorted by id
	explicit    iggy.Options // options the creator sent, canonical kinds (verbatim after UPDATE_TOPIC)
	derived     iggy.Options // defaults filled in at creation
	cfg         topicConfig
	groups      map[uint32]*group
	groupByName map[string]uint32
	nextGroupID uint32 // group ids are never reused
	balanced    uint32 // round-robin counter of Balanced partitioning
}

// partitionByID returns the partition with id, or nil.
func (t *topic) partitionByID(id uint32) *partition {
	i := sort.Search(len(t.partitions), func(i int) bool { return t.partitions[i].id >= id })
	if i < len(t.partitions) && t.partitions[i].id == id {
		return t.partitions[i]
	}
	return nil
}

// offsetKey names one stored consumer offset of a partition.
type offsetKey struct {
	Kind iggy.ConsumerKind // Consumer, ConsumerGroup or ExternalGroup
	ID   uint32            // numeric id, XXH32 of a name, or the group id
}

// partition is one partition of a topic. id, createdAt, key and log are set
// at creation and never change; offsets and removed are guarded by omu.
type partition struct {
	id        uint32
	createdAt uint64
	key       uint64 // unique directory key under DataDir/partitions
	log       *plog.Log
	topic     *topic // guarded by Server.mu

	omu     sync.Mutex
	offsets map[offsetKey]uint64
	removed bool // deleted: offsets are no longer written
}

// stateOf is the partition's log state.
func (p *partition) stateOf() plog.State { return p.log.State() }

// user is a user account. Guarded by Server.mu.
type user struct {
	id        uint32
	username  string
	createdAt uint64
	status    iggy.UserStatus
	salt      string // hex
	hash      string // hex SHA-256(salt || password)
	perms     *iggy.Permissions
	tokens    map[string]*token
}

// token is a personal access token of a user.
type token struct {
	name     string
	hash     string // hex SHA-256 of the raw token
	expiryAt uint64 // µs since the epoch; 0 = never
}

// numericID returns the u32 of a numeric identifier.
func numericID(id *iggy.Identifier) (uint32, bool) {
	if id.Kind != iggy.IdentifierKindNumeric || len(id.Value) != 4 {
		return 0, false
	}
	return binary.LittleEndian.Uint32(id.Value), true
}

// lookup resolves an identifier against an id map and a name index.
func lookup[T any](id *iggy.Identifier, byID map[uint32]T, byName map[string]uint32) (T, bool) {
	var zero T
	var n uint32
	switch id.Kind {
	case iggy.IdentifierKindNumeric:
		v, ok := numericID(id)
		if !ok {
			return zero, false
		}
		n = v
	case iggy.IdentifierKindString:
		v, ok := byName[string(id.Value)]
		if !ok {
			return zero, false
		}
		n = v
	default:
		return zero, false
	}
	v, ok := byID[n]
	return v, ok
}

// lowestFree returns the lowest id in 0..limit-1 not present in m.
func lowestFree[T any](m map[uint32]T, limit uint64) (uint32, bool) {
	for i := uint64(0); i < limit; i++ {
		if _, ok := m[uint32(i)]; !ok {
			return uint32(i), true
		}
	}
	return 0, false
}

// streamByID resolves a stream identifier. Caller holds Server.mu.
func (s *Server) streamByID(id *iggy.Identifier) *stream {
	st, _ := lookup(id, s.streams, s.streamByName)
	return st
}

// topicByID resolves a topic identifier within st. Caller holds Server.mu.
func topicByID(st *stream, id *iggy.Identifier) *topic {
	if st == nil {
		return nil
	}
	t, _ := lookup(id, st.topics, st.byName)
	return t
}

// groupByID resolves a consumer group identifier within t. Caller holds
// Server.mu.
func groupByID(t *topic, id *iggy.Identifier) *group {
	if t == nil {
		return nil
	}
	g, _ := lookup(id, t.groups, t.groupByName)
	return g
}

// userByID resolves a user identifier. Caller holds Server.mu.
func (s *Server) userByID(id *iggy.Identifier) *user {
	u, _ := lookup(id, s.users, s.userByName)
	return u
}

// resolveTopic resolves stream and topic identifiers and reports which one
// failed: 1009 for the stream, 2010 for the topic. Caller holds Server.mu.
func (s *Server) resolveTopic(sid, tid *iggy.Identifier) (*topic, iggy.Status) {
	st := s.streamByID(sid)
	if st == nil {
		return nil, iggy.StatusStreamIDNotFound
	}
	t := topicByID(st, tid)
	if t == nil {
		return nil, iggy.StatusTopicIDNotFound
	}
	return t, 0
}

// consumerOffsetID is the u32 an offset is stored under for a single
// consumer or an external group: the numeric id, or XXH32 of the name
// (reference §2.3).
func consumerOffsetID(id *iggy.Identifier) uint32 {
	if v, ok := numericID(id); ok {
		return v
	}
	return iggy.XXH32(id.Value, 0)
}

// topicStats sums the partitions' sizes and message counts.
func topicStats(t *topic) (size, messages uint64) {
	for _, p := range t.partitions {
		st := p.stateOf()
		size += st.SizeBytes
		messages += st.MessagesCount
	}
	return size, messages
}

// streamResponse encodes the wire view of a stream.
func streamResponse(st *stream) iggy.StreamResponse {
	var size, msgs uint64
	for _, t := range st.topics {
		sz, n := topicStats(t)
		size += sz
		msgs += n
	}
	return iggy.StreamResponse{
		ID:            st.id,
		CreatedAt:     st.createdAt,
		TopicsCount:   uint32(len(st.topics)),
		SizeBytes:     size,
		MessagesCount: msgs,
		Name:          st.name,
	}
}

// topicHeader encodes the wire view of a topic without partitions.
func topicHeader(t *topic) iggy.TopicHeader {
	size, msgs := topicStats(t)
	return iggy.TopicHeader{
		ID:                   t.id,
		CreatedAt:            t.createdAt,
		PartitionsCount:      uint32(len(t.partitions)),
		MessageExpiry:        t.cfg.messageExpiry,
		CompressionAlgorithm: t.cfg.compression,
		MaxTopicSize:         t.cfg.maxTopicSize,
		SizeBytes:            size,
		MessagesCount:        msgs,
		Name:                 t.name,
		ExplicitOptions:      t.explicit,
		DerivedOptions:       t.derived,
	}
}

// topicDetails encodes the wire view of a topic with its partitions.
func topicDetails(t *topic) iggy.TopicDetails {
	d := iggy.TopicDetails{TopicHeader: topicHeader(t), Partitions: make([]iggy.PartitionResponse, len(t.partitions))}
	for i, p := range t.partitions {
		st := p.stateOf()
		d.Partitions[i] = iggy.PartitionResponse{
			ID:            p.id,
			CreatedAt:     p.createdAt,
			SegmentsCount: max(st.SegmentsCount, 1),
			CurrentOffset: st.CurrentOffset,
			SizeBytes:     st.SizeBytes,
			MessagesCount: st.MessagesCount,
		}
	}
	return d
}

// inKeyOrder returns f of every value of m, in key order (nil for an
// empty map).
func inKeyOrder[T, R any](m map[uint32]T, f func(T) R) []R {
	var out []R
	for _, k := range sortedKeys(m) {
		out = append(out, f(m[k]))
	}
	return out
}

// sortedKeys returns the keys of m in ascending order.
func sortedKeys[T any](m map[uint32]T) []uint32 {
	keys := make([]uint32, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	return keys
}
