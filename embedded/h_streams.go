package embedded

import (
	"github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

func (s *Server) getStream(c *conn, r *request) outcome {
	var req iggy.GetStreamRequest
	if err := decodeBody(&req, r.body); err != nil {
		return statusOf(iggy.StatusInvalidCommand)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.streamByID(&req.StreamID)
	if st == nil {
		return outcome{}
	}
	if !s.accessOf(r.sess).readStream(st.id) {
		return statusOf(iggy.StatusUnauthorized)
	}
	d := iggy.StreamDetails{StreamResponse: streamResponse(st)}
	d.Topics = inKeyOrder(st.topics, topicHeader)
	return c.okBody(&d)
}

func (s *Server) getStreams(c *conn, r *request) outcome {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.accessOf(r.sess).readStreams() {
		return statusOf(iggy.StatusUnauthorized)
	}
	var resp iggy.GetStreamsResponse
	resp.Streams = inKeyOrder(s.streams, streamResponse)
	return c.okBody(&resp)
}

// createStream serves CREATE_STREAM. Called with Server.mu held.
func (s *Server) createStream(c *conn, r *request) outcome {
	var req iggy.CreateStreamRequest
	if err := decodeBody(&req, r.body); err != nil {
		return statusOf(iggy.StatusInvalidCommand)
	}
	if len(req.Options) > 0 { // streams have no option keys at 0.11
		return statusOf(iggy.StatusUnsupportedOptionKey)
	}
	if !s.accessOf(r.sess).manageStreams() {
		return resultErr(iggy.StatusUnauthorized)
	}
	if _, ok := s.streamByName[req.Name]; ok {
		return resultErr(iggy.StatusStreamNameAlreadyExists)
	}
	id, ok := lowestFree(s.streams, iggy.LimitMaxStreams)
	if !ok {
		return resultErr(iggy.StatusTooManyStreams)
	}
	st := &stream{id: id, name: req.Name, createdAt: s.nowMicros(), topics: map[uint32]*topic{}, byName: map[string]uint32{}}
	s.streams[id] = st
	s.streamByName[st.name] = id
	r.dirty = true
	resp := streamResponse(st)
	return c.okResult(&resp)
}

// updateStream serves UPDATE_STREAM (rename). Called with Server.mu held.
func (s *Server) updateStream(c *conn, r *request) outcome {
	var req iggy.UpdateStreamRequest
	if err := decodeBody(&req, r.body); err != nil {
		return statusOf(iggy.StatusInvalidCommand)
	}
	if len(req.Options) > 0 {
		return statusOf(iggy.StatusUnsupportedOptionKey)
	}
	st := s.streamByID(&req.StreamID)
	if st == nil {
		return resultErr(iggy.StatusStreamIDNotFound)
	}
	if !s.accessOf(r.sess).manageStream(st.id) {
		return resultErr(iggy.StatusUnauthorized)
	}
	if req.Name != st.name {
		if _, ok := s.streamByName[req.Name]; ok {
			return resultErr(iggy.StatusStreamNameAlreadyExists)
		}
		delete(s.streamByName, st.name)
		st.name = req.Name
		s.streamByName[st.name] = st.id
		r.dirty = true
	}
	return c.okResult(nil)
}

// deleteStream serves DELETE_STREAM. Called with Server.mu held.
func (s *Server) deleteStream(c *conn, r *request) outcome {
	var req iggy.DeleteStreamRequest
	if err := decodeBody(&req, r.body); err != nil {
		return evictWith(iggy.EvictionReasonInvalidRequestBody)
	}
	st := s.streamByID(&req.StreamID)
	if st == nil {
		return resultErr(iggy.StatusStreamIDNotFound)
	}
	if !s.accessOf(r.sess).manageStream(st.id) {
		return resultErr(iggy.StatusUnauthorized)
	}
	delete(s.streams, st.id)
	delete(s.streamByName, st.name)
	if err := s.saveMetadataLocked(); err != nil { // forget the partitions before deleting their files
		s.log.Error().Err(err).Msg("cannot write the metadata snapshot")
	}
	for _, t := range st.topics {
		s.removeTopicData(t)
	}
	return c.okResult(nil)
}

// purgeStream serves PURGE_STREAM. Called with Server.mu held.
func (s *Server) purgeStream(c *conn, r *request) outcome {
	var req iggy.PurgeStreamRequest
	if err := decodeBody(&req, r.body); err != nil {
		return evictWith(iggy.EvictionReasonInvalidRequestBody)
	}
	st := s.streamByID(&req.StreamID)
	if st == nil {
		return resultErr(iggy.StatusStreamIDNotFound)
	}
	if !s.accessOf(r.sess).manageStream(st.id) {
		return resultErr(iggy.StatusUnauthorized)
	}
	for _, t := range st.topics {
		if s.purgeTopicData(t) {
			r.dirty = true
		}
	}
	return c.okResult(nil)
}

// purgeTopicData purges every partition of t and reports whether it cleared
// a delete watermark (DELETE_SEGMENTS), which is metadata. Caller holds
// Server.mu.
func (s *Server) purgeTopicData(t *topic) (watermarks bool) {
	for _, p := range t.partitions {
		watermarks = watermarks || p.log.TruncatedTo() != 0
		if err := s.purgePartition(p); err != nil {
			s.log.Error().Err(err).Uint32("partition_id", p.id).Msg("cannot purge partition")
		}
	}
	for _, g := range t.groups {
		g.resetPolled()
	}
	return watermarks
}
