package embedded

import (
	"errors"
	"math"

	"github.com/kafka-iggy/kafka-iggy/codec/iggy"
	"github.com/kafka-iggy/kafka-iggy/codec/wire"
)

func (s *Server) getTopic(c *conn, r *request) outcome {
	var req iggy.GetTopicRequest
	if err := decodeBody(&req, r.body); err != nil {
		return statusOf(iggy.StatusInvalidCommand)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t, st := s.resolveTopic(&req.StreamID, &req.TopicID)
	if st != 0 {
		return outcome{} // unknown stream or topic: empty body
	}
	if !s.accessOf(r.sess).readTopic(t.stream.id, t.id) {
		return statusOf(iggy.StatusUnauthorized)
	}
	d := topicDetails(t)
	return c.okBody(&d)
}

func (s *Server) getTopics(c *conn, r *request) outcome {
	var req iggy.GetTopicsRequest
	if err := decodeBody(&req, r.body); err != nil {
		return statusOf(iggy.StatusInvalidCommand)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var resp iggy.GetTopicsResponse
	st := s.streamByID(&req.StreamID)
	if st == nil {
		return c.okBody(&resp) // count 0
	}
	if !s.accessOf(r.sess).readTopics(st.id) {
		return statusOf(iggy.StatusUnauthorized)
	}
	resp.Topics = inKeyOrder(st.topics, topicHeader)
	return c.okBody(&resp)
}

// partitionsCountStatus maps a decode error of a partitions_count field
// outside its range to 2015 (TooManyPartitions); other errors are 3.
func partitionsCountStatus(err error) iggy.Status {
	if decodeField(err, "partitions_count") && errors.Is(err, wire.ErrConstraint) {
		return iggy.StatusTooManyPartitions
	}
	return iggy.StatusInvalidCommand
}

// createTopic serves CREATE_TOPIC. Called with Server.mu held.
func (s *Server) createTopic(c *conn, r *request) outcome {
	var req iggy.CreateTopicRequest
	if err := decodeBody(&req, r.body); err != nil {
		return statusOf(partitionsCountStatus(err))
	}
	if req.PartitionsCount > iggy.LimitMaxPartitionsPerRequest {
		return statusOf(iggy.StatusTooManyPartitions)
	}
	resolved, status := s.resolveCreateOptions(req.Options, req.PartitionsCount)
	if status != 0 {
		return statusOf(status)
	}
	st := s.streamByID(&req.StreamID)
	if st == nil {
		return resultErr(iggy.StatusStreamIDNotFound)
	}
	if !s.accessOf(r.sess).createTopic(st.id) {
		return resultErr(iggy.StatusUnauthorized)
	}
	if _, ok := st.byName[req.Name]; ok {
		return resultErr(iggy.StatusTopicNameAlreadyExists)
	}
	id, ok := lowestFree(st.topics, iggy.LimitMaxTopicsPerStream)
	if !ok {
		return resultErr(iggy.StatusTooManyTopics)
	}
	t := &topic{
		id: id, name: req.Name, createdAt: s.nowMicros(), stream: st,
		explicit: resolved.explicit, derived: resolved.derived, cfg: resolved.cfg,
		groups: map[uint32]*group{}, groupByName: map[string]uint32{},
	}
	if err := s.addPartitions(t, req.PartitionsCount); err != nil {
		s.log.Error().Err(err).Msg("cannot create partitions")
		s.removeTopicData(t)
		return resultErr(iggy.StatusCannotCreatePartition)
	}
	st.topics[id] = t
	st.byName[t.name] = id
	r.dirty = true
	d := topicDetails(t)
	return c.okResult(&d)
}

// updateTopic serves UPDATE_TOPIC. Called with Server.mu held.
func (s *Server) updateTopic(c *conn, r *request) outcome {
	var req iggy.UpdateTopicRequest
	if err := decodeBody(&req, r.body); err != nil {
		return statusOf(iggy.StatusInvalidCommand)
	}
	return s.patchTopic(c, r, &req.StreamID, &req.TopicID, &req.Name, req.Options, nil)
}

// updateResource serves UPDATE_RESOURCE (0.12): a set/reset patch of a
// topic's options. The stream and user catalogs hold no updatable key here,
// so their patches are refused with 4041. Called with Server.mu held.
func (s *Server) updateResource(c *conn, r *request) outcome {
	var req iggy.UpdateResourceRequest
	if err := decodeBody(&req, r.body); err != nil {
		return statusOf(iggy.StatusInvalidCommand)
	}
	switch req.Scope {
	case iggy.OptionScopeTopic:
		var p iggy.ResourcePatchTopic
		if err := decodeBody(&p, req.Patch); err != nil || !validPatch(p.Options, p.Reset) {
			return statusOf(iggy.StatusInvalidCommand)
		}
		return s.patchTopic(c, r, &p.StreamID, &p.TopicID, nil, p.Options, p.Reset)
	case iggy.OptionScopeStream:
		var p iggy.ResourcePatchStream
		if err := decodeBody(&p, req.Patch); err != nil || !validPatch(p.Options, p.Reset) {
			return statusOf(iggy.StatusInvalidCommand)
		}
	case iggy.OptionScopeUser:
		var p iggy.ResourcePatchUser
		if err := decodeBody(&p, req.Patch); err != nil || !validPatch(p.Options, p.Reset) {
			return statusOf(iggy.StatusInvalidCommand)
		}
	default:
		return statusOf(iggy.StatusInvalidCommand)
	}
	return statusOf(iggy.StatusUnsupportedOptionKey)
}

// validPatch applies the set/reset rules: something to do, no key named
// twice, no key both set and reset.
func validPatch(set iggy.Options, reset []string) bool {
	if len(set) == 0 && len(reset) == 0 {
		return false
	}
	seen := make(map[string]bool, len(set)+len(reset))
	for _, o := range set {
		if seen[o.Key] {
			return false
		}
		seen[o.Key] = true
	}
	for _, k := range reset {
		if seen[k] {
			return false
		}
		seen[k] = true
	}
	return true
}

// patchTopic changes a topic's updatable options (set), puts the reset
// keys back to their defaults and renames it when name is not nil. Called
// with Server.mu held.
func (s *Server) patchTopic(c *conn, r *request, streamID, topicID *iggy.Identifier, name *string, set iggy.Options, reset []string) outcome {
	if st := s.checkUpdateKeys(set); st != 0 {
		return statusOf(st)
	}
	var defaults iggy.Options
	for _, k := range reset {
		spec, ok := s.topicOption(k)
		if !ok || !spec.Updatable {
			return statusOf(iggy.StatusUnsupportedOptionKey)
		}
		defaults = append(defaults, iggy.Option{Key: spec.Key, Kind: spec.Kind, Value: spec.Default})
	}
	t, status := s.resolveTopic(streamID, topicID)
	if status == 0 {
		// Pre-execution size check against the topic's segment size (1019).
		if o, ok := set.Get(optMaxTopicSize); ok {
			spec, _ := s.topicOption(optMaxTopicSize)
			if v, ok := parseOptionValue(spec, o.Kind, o.Value); ok && v.u64 != 0 && v.u64 != math.MaxUint64 && v.u64 < t.cfg.segmentSize {
				return statusOf(iggy.StatusInvalidTopicSize)
			}
		}
	}
	if status != 0 {
		return resultErr(status)
	}
	if !s.accessOf(r.sess).manageTopic(t.stream.id, t.id) {
		return resultErr(iggy.StatusUnauthorized)
	}
	explicit, derived := patchOptions(t.explicit, t.derived, set)
	explicit, derived = resetOptions(explicit, derived, defaults)
	cfg, status := s.resolveTopicConfig(explicit, derived)
	if status != 0 {
		return resultErr(status)
	}
	if name != nil && *name != t.name {
		if _, ok := t.stream.byName[*name]; ok {
			return resultErr(iggy.StatusTopicNameAlreadyExists)
		}
		delete(t.stream.byName, t.name)
		t.name = *name
		t.stream.byName[t.name] = t.id
	}
	cfg.segmentSize, cfg.enforceFsync, cfg.offsetsFsync = t.cfg.segmentSize, t.cfg.enforceFsync, t.cfg.offsetsFsync // create-only
	t.explicit, t.derived, t.cfg = explicit, derived, cfg
	s.updateRetention(t)
	r.dirty = true
	return c.okResult(nil)
}

// deleteTopic serves DELETE_TOPIC. Called with Server.mu held.
func (s *Server) deleteTopic(c *conn, r *request) outcome {
	var req iggy.DeleteTopicRequest
	if err := decodeBody(&req, r.body); err != nil {
		return evictWith(iggy.EvictionReasonInvalidRequestBody)
	}
	t, status := s.resolveTopic(&req.StreamID, &req.TopicID)
	if status != 0 {
		return resultErr(status)
	}
	if !s.accessOf(r.sess).manageTopic(t.stream.id, t.id) {
		return resultErr(iggy.StatusUnauthorized)
	}
	delete(t.stream.topics, t.id)
	delete(t.stream.byName, t.name)
	if err := s.saveMetadataLocked(); err != nil { // forget the partitions before deleting their files
		s.log.Error().Err(err).Msg("cannot write the metadata snapshot")
	}
	s.removeTopicData(t)
	return c.okResult(nil)
}

// purgeTopic serves PURGE_TOPIC. Called with Server.mu held.
func (s *Server) purgeTopic(c *conn, r *request) outcome {
	var req iggy.PurgeTopicRequest
	if err := decodeBody(&req, r.body); err != nil {
		return evictWith(iggy.EvictionReasonInvalidRequestBody)
	}
	t, status := s.resolveTopic(&req.StreamID, &req.TopicID)
	if status != 0 {
		return resultErr(status)
	}
	if !s.accessOf(r.sess).manageTopic(t.stream.id, t.id) {
		return resultErr(iggy.StatusUnauthorized)
	}
	if s.purgeTopicData(t) {
		r.dirty = true
	}
	return c.okResult(nil)
}

// partitionsTopic is the head CREATE_PARTITIONS and DELETE_PARTITIONS share
// (their bodies have one layout): it decodes the body into req, whose
// fields sid, tid and count point into, bounds the count, resolves the topic
// and checks the caller may manage it. ok false: answer with refused.
func (s *Server) partitionsTopic(r *request, req interface{ DecodeFrom([]byte) (int, error) }, sid, tid *iggy.Identifier, count *uint32) (t *topic, refused outcome, ok bool) {
	if err := decodeBody(req, r.body); err != nil {
		return nil, statusOf(partitionsCountStatus(err)), false
	}
	if *count == 0 || *count > iggy.LimitMaxPartitionsPerRequest {
		return nil, statusOf(iggy.StatusTooManyPartitions), false
	}
	t, status := s.resolveTopic(sid, tid)
	if status != 0 {
		return nil, resultErr(status), false
	}
	if !s.accessOf(r.sess).manageTopic(t.stream.id, t.id) {
		return nil, resultErr(iggy.StatusUnauthorized), false
	}
	return t, outcome{}, true
}

// createPartitions serves CREATE_PARTITIONS. Called with Server.mu held.
func (s *Server) createPartitions(c *conn, r *request) outcome {
	var req iggy.CreatePartitionsRequest
	t, refused, ok := s.partitionsTopic(r, &req, &req.StreamID, &req.TopicID, &req.PartitionsCount)
	if !ok {
		return refused
	}
	next := uint64(0)
	if n := len(t.partitions); n > 0 {
		next = uint64(t.partitions[n-1].id) + 1
	}
	if next+uint64(req.PartitionsCount)-1 > iggy.LimitMaxPartitionID {
		return resultErr(iggy.StatusPartitionIDSpaceExhausted)
	}
	if err := s.addPartitions(t, req.PartitionsCount); err != nil {
		s.log.Error().Err(err).Msg("cannot create partitions")
		return resultErr(iggy.StatusCannotCreatePartition)
	}
	for _, g := range t.groups {
		g.redistribute()
	}
	r.dirty = true
	return c.okResult(nil)
}

// deletePartitions serves DELETE_PARTITIONS: the highest-numbered
// partitions go. Called with Server.mu held.
func (s *Server) deletePartitions(c *conn, r *request) outcome {
	var req iggy.DeletePartitionsRequest
	t, refused, ok := s.partitionsTopic(r, &req, &req.StreamID, &req.TopicID, &req.PartitionsCount)
	if !ok {
		return refused
	}
	if int(req.PartitionsCount) > len(t.partitions) {
		return resultErr(iggy.StatusInvalidPartitionsCount)
	}
	keep := len(t.partitions) - int(req.PartitionsCount)
	gone := append([]*partition(nil), t.partitions[keep:]...)
	t.partitions = t.partitions[:keep:keep]
	if err := s.saveMetadataLocked(); err != nil {
		s.log.Error().Err(err).Msg("cannot write the metadata snapshot")
	}
	for _, p := range gone {
		if err := s.removePartition(p); err != nil {
			s.log.Error().Err(err).Uint32("partition_id", p.id).Msg("cannot delete partition data")
		}
	}
	s.updateRetention(t)
	for _, g := range t.groups {
		g.redistribute()
	}
	return c.okResult(nil)
}

// deleteSegments serves DELETE_SEGMENTS as the real 0.9 server does
// (core/server/src/dispatch.rs: handle_delete_segments_request and
// resolve_delete_segments_truncate). Called with Server.mu held.
//
//   - An undecodable body: status 0, operation 138 echoed, empty body,
//     nothing committed (the real server acks it empty so the stream stays
//     framed; its request number is not recorded).
//   - Otherwise the count resolves to the last offset of the count-th oldest
//     sealed segment (the newest sealed one when fewer exist; nothing when
//     the count is 0 or nothing is sealed: watermark 0) and the real server
//     commits a TruncatePartition for it, whose reply operation is 68,
//     result-framed: 1009/2010 for an unknown stream/topic
//     (core/metadata/src/stm/stream.rs: TruncatePartitionRequest::apply),
//     41 Unauthorized without manage_topics on the topic
//     (core/metadata/src/stm/authz.rs: authorize, TruncatePartition →
//     Permissioner::delete_segments → manage_topic; it runs after the
//     stream/topic resolve and before the partition lookup), 3007 for an
//     unknown partition, else success `[u32 0]` — also when nothing is
//     deleted. Shared iggy-protocol.md §3.9 says 138 with an empty body
//     when there is nothing to delete; the real code never does that.
//   - The real server raises the partition's delete watermark (monotonic)
//     and acks; its reconciler deletes afterwards, on every replica, the
//     oldest sealed segments ending at or below the watermark and at or
//     below the lowest stored consumer or group offset
//     (core/partitions/src/iggy_partition.rs: remove_sealed_segments_up_to,
//     min_committed_offset), and keeps re-trying while the barrier holds
//     segments back. The embedded server deletes the same segments before it
//     replies, and later the ones a moving consumer offset releases
//     (pinLocked). For a client the only difference is timing: after the
//     real ack the segments may still be readable for a moment, here they
//     are gone — a client cannot rely on either, since a consumer offset can
//     hold them back on both.
//   - The real server answers 58 TransientNotAccepted (op 68, result-framed)
//     when the partition has not converged on its replicated log, and stays
//     silent when the metadata submit fails (not primary); the client
//     resends. A single in-process server has neither state, so the embedded
//     server never answers that way.
func (s *Server) deleteSegments(c *conn, r *request) outcome {
	var req iggy.DeleteSegmentsRequest
	if err := decodeBody(&req, r.body); err != nil {
		return outcome{op: iggy.OperationDeleteSegments, uncommitted: true}
	}
	truncate := func(o outcome) outcome {
		o.op = iggy.OperationTruncatePartition
		return o
	}
	t, status := s.resolveTopic(&req.StreamID, &req.TopicID)
	if status != 0 {
		return truncate(resultErr(status))
	}
	if !s.accessOf(r.sess).manageTopic(t.stream.id, t.id) {
		return truncate(resultErr(iggy.StatusUnauthorized))
	}
	p := t.partitionByID(req.PartitionID)
	if p == nil {
		return truncate(resultErr(iggy.StatusPartitionNotFound))
	}
	end, _ := p.log.SealedEnd(req.SegmentsCount)
	size, before := p.log.State().SizeBytes, p.log.TruncatedTo()
	n, err := p.log.Truncate(end)
	s.dropped(size, p.log.State().SizeBytes)
	if err != nil {
		s.log.Error().Err(err).Uint32("partition_id", p.id).Msg("delete segments failed")
	}
	if p.log.TruncatedTo() != before {
		r.dirty = true // the watermark is metadata
	}
	s.log.Debug().Uint32("partition_id", p.id).Uint64("up_to_offset", end).Int("segments", n).Msg("delete segments")
	return truncate(c.okResult(nil))
}
