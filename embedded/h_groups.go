package embedded

import (
	"github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

func (s *Server) getConsumerGroup(c *conn, r *request) outcome {
	var req iggy.GetConsumerGroupRequest
	if err := decodeBody(&req, r.body); err != nil {
		return statusOf(iggy.StatusInvalidCommand)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t, status := s.resolveTopic(&req.StreamID, &req.TopicID)
	if status != 0 {
		return statusOf(status)
	}
	if !s.accessOf(r.sess).readTopic(t.stream.id, t.id) {
		return statusOf(iggy.StatusUnauthorized)
	}
	g := groupByID(t, &req.GroupID)
	if g == nil {
		return outcome{}
	}
	d := groupDetails(g)
	return c.okBody(&d)
}

func (s *Server) getConsumerGroups(c *conn, r *request) outcome {
	var req iggy.GetConsumerGroupsRequest
	if err := decodeBody(&req, r.body); err != nil {
		return statusOf(iggy.StatusInvalidCommand)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t, status := s.resolveTopic(&req.StreamID, &req.TopicID)
	if status != 0 {
		return statusOf(status)
	}
	if !s.accessOf(r.sess).readTopic(t.stream.id, t.id) {
		return statusOf(iggy.StatusUnauthorized)
	}
	var resp iggy.GetConsumerGroupsResponse
	resp.Groups = inKeyOrder(t.groups, groupResponse)
	return c.okBody(&resp)
}

// createConsumerGroup serves CREATE_CONSUMER_GROUP. Called with Server.mu
// held.
func (s *Server) createConsumerGroup(c *conn, r *request) outcome {
	var req iggy.CreateConsumerGroupRequest
	if err := decodeBody(&req, r.body); err != nil {
		return evictWith(iggy.EvictionReasonInvalidRequestBody)
	}
	t, status := s.resolveTopic(&req.StreamID, &req.TopicID)
	if status != 0 {
		return resultErr(status)
	}
	if !s.accessOf(r.sess).readTopic(t.stream.id, t.id) {
		return resultErr(iggy.StatusUnauthorized)
	}
	if _, ok := t.groupByName[req.Name]; ok {
		return resultErr(iggy.StatusConsumerGroupNameAlreadyExists)
	}
	g := &group{id: t.nextGroupID, name: req.Name, topic: t, timeout: s.cfg.RebalanceTimeout}
	t.nextGroupID++
	t.groups[g.id] = g
	t.groupByName[g.name] = g.id
	r.dirty = true
	d := groupDetails(g)
	return c.okResult(&d)
}

// deleteConsumerGroup serves DELETE_CONSUMER_GROUP: members are dropped and
// the group's stored offsets (and, with ExternalGroups, the external-group
// offsets under the same name) are deleted. Called with Server.mu held.
func (s *Server) deleteConsumerGroup(c *conn, r *request) outcome {
	var req iggy.DeleteConsumerGroupRequest
	if err := decodeBody(&req, r.body); err != nil {
		return evictWith(iggy.EvictionReasonInvalidRequestBody)
	}
	t, g, refused := s.namedGroup(r, &req.StreamID, &req.TopicID, &req.GroupID)
	if g == nil {
		return refused
	}
	s.dropGroupMembers(g)
	delete(t.groups, g.id)
	delete(t.groupByName, g.name)
	gone := []offsetKey{{Kind: iggy.ConsumerKindConsumerGroup, ID: g.id}}
	if s.cfg.ExternalGroups {
		gone = append(gone, offsetKey{Kind: iggy.ConsumerKindExternalGroup, ID: iggy.XXH32([]byte(g.name), 0)})
	}
	for _, p := range t.partitions {
		if err := s.deleteOffsets(p, gone, t.cfg.offsetsFsync); err != nil {
			s.log.Error().Err(err).Uint32("partition_id", p.id).Msg("cannot delete group offsets")
		}
	}
	r.dirty = true
	return c.okResult(nil)
}

// namedGroup resolves the consumer group a DELETE, JOIN or LEAVE names and
// checks that the session may read its topic; a nil group comes with the
// refusal.
func (s *Server) namedGroup(r *request, streamID, topicID, groupID *iggy.Identifier) (*topic, *group, outcome) {
	t, status := s.resolveTopic(streamID, topicID)
	if status != 0 {
		return nil, nil, resultErr(status)
	}
	if !s.accessOf(r.sess).readTopic(t.stream.id, t.id) {
		return nil, nil, resultErr(iggy.StatusUnauthorized)
	}
	g := groupByID(t, groupID)
	if g == nil {
		return nil, nil, resultErr(iggy.StatusConsumerGroupIDNotFound)
	}
	return t, g, outcome{}
}

// joinConsumerGroup serves JOIN_CONSUMER_GROUP for the session's client
// id. An undecodable body gets no reply. Called with Server.mu held.
func (s *Server) joinConsumerGroup(c *conn, r *request) outcome {
	var req iggy.JoinConsumerGroupRequest
	if err := decodeBody(&req, r.body); err != nil {
		return s.malformed(iggy.StatusInvalidCommand, "undecodable join body")
	}
	_, g, refused := s.namedGroup(r, &req.StreamID, &req.TopicID, &req.GroupID)
	if g == nil {
		return refused
	}
	s.join(g, c, r.sess.client)
	return c.okResult(nil)
}

// leaveConsumerGroup serves LEAVE_CONSUMER_GROUP for the session's client
// id. An undecodable body gets no reply. Called with Server.mu held.
func (s *Server) leaveConsumerGroup(c *conn, r *request) outcome {
	var req iggy.LeaveConsumerGroupRequest
	if err := decodeBody(&req, r.body); err != nil {
		return s.malformed(iggy.StatusInvalidCommand, "undecodable leave body")
	}
	_, g, refused := s.namedGroup(r, &req.StreamID, &req.TopicID, &req.GroupID)
	if g == nil {
		return refused
	}
	if !s.leave(g, r.sess.client) {
		return resultErr(iggy.StatusConsumerGroupMemberNotFound)
	}
	return c.okResult(nil)
}

// syncConsumerGroup serves SYNC_CONSUMER_GROUP: the caller is found by the
// header's client id; an empty body means "not a member".
func (s *Server) syncConsumerGroup(c *conn, r *request) outcome {
	var req iggy.SyncConsumerGroupRequest
	if err := decodeBody(&req, r.body); err != nil {
		return statusOf(iggy.StatusInvalidCommand)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t, status := s.resolveTopic(&req.StreamID, &req.TopicID)
	if status != 0 {
		return outcome{}
	}
	g := groupByID(t, &req.GroupID)
	if g == nil {
		return outcome{}
	}
	m := g.memberByClient(r.h.Client)
	if m == nil {
		return outcome{}
	}
	resp := iggy.SyncConsumerGroupResponse{Generation: g.generation, Partitions: append([]uint32(nil), m.partitions...)}
	return c.okBody(&resp)
}
