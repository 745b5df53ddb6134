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
	s.purgeTopicData(t)
	return c.okResult(nil)
}

// createPartitions serves CREATE_PARTITIONS. Called with Server.mu held.
func (s *Server) createPartitions(c *conn, r *request) outcome {
	var req iggy.CreatePartitionsRequest
	if err := decodeBody(&req, r.body); err != nil {
		return statusOf(partitionsCountStatus(err))
	}
	if req.PartitionsCount == 0 || req.PartitionsCount > iggy.LimitMaxPartitionsPerRequest {
		return statusOf(iggy.StatusTooManyPartitions)
	}
	t, status := s.resolveTopic(&req.StreamID, &req.TopicID)
	if status != 0 {
		return resultErr(status)
	}
	if !s.accessOf(r.sess).manageTopic(t.stream.id, t.id) {
		return resultErr(iggy.StatusUnauthorized)
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
	if err := decodeBody(&req, r.body); err != nil {
		return statusOf(partitionsCountStatus(err))
	}
	if req.PartitionsCount == 0 || req.PartitionsCount > iggy.LimitMaxPartitionsPerRequest {
		return statusOf(iggy.StatusTooManyPartitions)
	}
	t, status := s.resolveTopic(&req.StreamID, &req.TopicID)
	if status != 0 {
		return resultErr(status)
	}
	if !s.accessOf(r.sess).manageTopic(t.stream.id, t.id) {
		return resultErr(iggy.StatusUnauthorized)
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

// deleteSegments serves DELETE_SEGMENTS: the reply carries operation 68
// (TruncatePartition, result-framed) when segments were deleted or the
// target is refused, and 138 with an empty body when there was nothing to
// delete (§3.9). Called with Server.mu held.
func (s *Server) deleteSegments(c *conn, r *request) outcome {
	var req iggy.DeleteSegmentsRequest
	if err := decodeBody(&req, r.body); err != nil {
		return evictWith(iggy.EvictionReasonInvalidRequestBody)
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
	size := p.log.State().SizeBytes
	n, err := p.log.DeleteSegments(req.SegmentsCount)
	s.dropped(size, p.log.State().SizeBytes)
	if err != nil {
		s.log.Error().Err(err).Uint32("partition_id", p.id).Msg("delete segments failed")
	}
	if n == 0 {
		return outcome{op: iggy.OperationDeleteSegments}
	}
	return truncate(c.okResult(nil))
}
