package embedded

import (
	"time"

	"github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

// offsetTarget is a resolved consumer-offset request.
type offsetTarget struct {
	p     *partition
	key   offsetKey
	fsync bool
	group *group // consumer-group target (for revocations)
}

// consumerKindOK reports whether the server knows consumer kind k: kind 3
// only with Config.ExternalGroups. A 0.11 server cannot decode it: its
// WireConsumer decoder rejects every kind but 1 and 2
// (core/binary_protocol/src/primitives/consumer.rs), so a request carrying
// it is answered as an undecodable body of that command.
func (s *Server) consumerKindOK(k iggy.ConsumerKind) bool {
	return k == iggy.ConsumerKindConsumer || k == iggy.ConsumerKindConsumerGroup ||
		(k == iggy.ConsumerKindExternalGroup && s.cfg.ExternalGroups)
}

// offsetKeyOf returns the key a non-group consumer's offsets are stored
// under.
func offsetKeyOf(c *iggy.Consumer) offsetKey {
	return offsetKey{Kind: c.Kind, ID: consumerOffsetID(&c.ID)}
}

// getConsumerOffset serves GET_CONSUMER_OFFSET as the real server's
// handle_get_consumer_offset (core/server/src/dispatch.rs) does: an
// undecodable body (consumer kind 3 on a 0.11 server included) is status 0
// with an empty body, the answer for "no offset stored"; the permission
// check runs on the resolved topic before the partition lookup; an unknown
// stream, topic or group is an empty body, an unknown partition of a
// known topic PartitionNotFound (3007).
func (s *Server) getConsumerOffset(c *conn, r *request) outcome {
	var req iggy.GetConsumerOffsetRequest
	if err := decodeBody(&req, r.body); err != nil || !s.consumerKindOK(req.Consumer.Kind) {
		return outcome{}
	}
	pid := uint32(0)
	if req.PartitionID.Present {
		pid = req.PartitionID.PartitionID
	}
	s.mu.Lock()
	t, status := s.resolveTopic(&req.StreamID, &req.TopicID)
	if status != 0 {
		s.mu.Unlock()
		return outcome{} // unknown stream or topic: empty body
	}
	if !s.accessOf(r.sess).pollMessages(t.stream.id, t.id) {
		s.mu.Unlock()
		return statusOf(iggy.StatusUnauthorized)
	}
	p := t.partitionByID(pid)
	if p == nil {
		s.mu.Unlock()
		return statusOf(iggy.StatusPartitionNotFound)
	}
	if s.notPrimary(t, p.id) {
		s.mu.Unlock()
		return statusOf(iggy.StatusNotPrimary)
	}
	key := offsetKeyOf(&req.Consumer)
	if req.Consumer.Kind == iggy.ConsumerKindConsumerGroup {
		g := groupByID(t, &req.Consumer.ID)
		if g == nil {
			s.mu.Unlock()
			return outcome{} // unknown group: empty body
		}
		key.ID = g.id
	}
	s.mu.Unlock()
	p.omu.Lock()
	stored, ok := p.offsets[key]
	p.omu.Unlock()
	if !ok {
		return outcome{}
	}
	return c.okBody(&iggy.GetConsumerOffsetResponse{PartitionID: p.id, CurrentOffset: p.stateOf().CurrentOffset, StoredOffset: stored})
}

// resolveOffsetTarget applies the STORE/DELETE_CONSUMER_OFFSET admission
// rules of the real server's dispatch_partition_request
// (core/server/src/dispatch.rs, resolve_partition_request_namespace in
// responses.rs): every namespace failure (no partition id, unknown
// stream, topic or partition, a group caller not owning the partition) is
// a deny with ResourceNotFound (20); then 41 without poll permission.
func (s *Server) resolveOffsetTarget(r *request, consumer *iggy.Consumer, sid, tid *iggy.Identifier, part *iggy.OptionalPartition) (offsetTarget, iggy.Status) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var tg offsetTarget
	t, status := s.resolveTopic(sid, tid)
	if status != 0 {
		return tg, iggy.StatusResourceNotFound
	}
	isGroup := consumer.Kind == iggy.ConsumerKindConsumerGroup
	if !part.Present {
		return tg, iggy.StatusResourceNotFound
	}
	p := t.partitionByID(part.PartitionID)
	if p == nil {
		return tg, iggy.StatusResourceNotFound
	}
	if !s.accessOf(r.sess).pollMessages(t.stream.id, t.id) {
		return tg, iggy.StatusUnauthorized
	}
	if s.notPrimary(t, p.id) {
		return tg, iggy.StatusNotPrimary
	}
	tg = offsetTarget{p: p, key: offsetKeyOf(consumer), fsync: t.cfg.offsetsFsync}
	if isGroup {
		g := groupByID(t, &consumer.ID)
		if g == nil {
			return tg, iggy.StatusResourceNotFound
		}
		m := g.memberByClient(r.sess.client)
		if m == nil || !g.mayCommit(m, p.id) {
			return tg, iggy.StatusResourceNotFound
		}
		tg.key.ID, tg.group = g.id, g
	}
	return tg, 0
}

// storeConsumerOffset serves STORE_CONSUMER_OFFSET (partition plane).
func (s *Server) storeConsumerOffset(c *conn, r *request) outcome {
	var req iggy.StoreConsumerOffsetRequest
	if err := decodeBody(&req, r.body); err != nil || !s.consumerKindOK(req.Consumer.Kind) {
		// The real server cannot resolve the namespace of an undecodable
		// body: deny with ResourceNotFound, as for a missing target.
		return statusOf(iggy.StatusResourceNotFound)
	}
	tg, status := s.resolveOffsetTarget(r, &req.Consumer, &req.StreamID, &req.TopicID, &req.PartitionID)
	if status != 0 {
		return statusOf(status)
	}
	if tg.key.Kind != iggy.ConsumerKindExternalGroup { // external groups: no range check
		st := tg.p.stateOf()
		if !st.HasMessages && st.FirstOffset == 0 || req.Offset > st.CurrentOffset {
			return statusOf(iggy.StatusInvalidOffset)
		}
	}
	if err := s.storeOffset(tg.p, tg.key, req.Offset, tg.fsync); err != nil {
		s.log.Error().Err(err).Msg("cannot persist a consumer offset")
	}
	if tg.group != nil {
		s.settleGroup(tg.group)
	}
	return c.okResult(nil)
}

// deleteConsumerOffset serves DELETE_CONSUMER_OFFSET (partition plane).
func (s *Server) deleteConsumerOffset(c *conn, r *request) outcome {
	var req iggy.DeleteConsumerOffsetRequest
	if err := decodeBody(&req, r.body); err != nil || !s.consumerKindOK(req.Consumer.Kind) {
		// The real server cannot resolve the namespace of an undecodable
		// body: deny with ResourceNotFound, as for a missing target.
		return statusOf(iggy.StatusResourceNotFound)
	}
	tg, status := s.resolveOffsetTarget(r, &req.Consumer, &req.StreamID, &req.TopicID, &req.PartitionID)
	if status != 0 {
		return statusOf(status)
	}
	tg.p.omu.Lock()
	_, ok := tg.p.offsets[tg.key]
	tg.p.omu.Unlock()
	if !ok {
		return statusOf(iggy.StatusConsumerOffsetNotFound)
	}
	if err := s.deleteOffsets(tg.p, []offsetKey{tg.key}, tg.fsync); err != nil {
		s.log.Error().Err(err).Msg("cannot persist a consumer offset")
	}
	return c.okResult(nil)
}

// settleGroup completes the group's pending revocations that a commit
// allowed.
func (s *Server) settleGroup(g *group) {
	s.mu.Lock()
	if len(g.pending) > 0 {
		g.settle(time.Time{})
	}
	s.mu.Unlock()
}

// storeOffset sets one consumer offset of p, persists the partition's
// offsets and updates retention pinning.
func (s *Server) storeOffset(p *partition, key offsetKey, offset uint64, fsync bool) error {
	p.omu.Lock()
	defer p.omu.Unlock()
	if p.removed {
		return nil
	}
	p.offsets[key] = offset
	err := s.saveOffsetsFile(p, fsync) // before pinning: segments go only below a saved offset
	s.pinLocked(p)
	return err
}

// deleteOffsets removes consumer offsets of p, persists and re-pins.
func (s *Server) deleteOffsets(p *partition, keys []offsetKey, fsync bool) error {
	p.omu.Lock()
	defer p.omu.Unlock()
	if p.removed {
		return nil
	}
	changed := false
	for _, k := range keys {
		if _, ok := p.offsets[k]; ok {
			delete(p.offsets, k)
			changed = true
		}
	}
	if !changed {
		return nil
	}
	err := s.saveOffsetsFile(p, fsync)
	s.pinLocked(p)
	return err
}

// pinLocked pins p's log at its lowest stored consumer offset (§7.2);
// external-group offsets do not pin. A pin that moved up lets the log
// delete the sealed segments below its delete watermark (DELETE_SEGMENTS)
// that the old pin held back, as the real server's reconciler does
// (core/server/src/partition_reconciler.rs: reconcile_segment_truncations
// re-stages the committed watermark until the layout converges; the
// barrier is core/partitions/src/iggy_partition.rs: min_committed_offset).
// Caller holds p.omu.
func (s *Server) pinLocked(p *partition) {
	var low uint64
	ok := false
	for k, v := range p.offsets {
		if k.Kind == iggy.ConsumerKindExternalGroup {
			continue
		}
		if !ok || v < low {
			low, ok = v, true
		}
	}
	size := p.log.State().SizeBytes
	n, err := p.log.SetPinned(low, ok)
	s.dropped(size, p.log.State().SizeBytes)
	if err != nil {
		s.log.Error().Err(err).Uint32("partition_id", p.id).Msg("deleting segments released by a consumer offset failed")
	} else if n > 0 {
		s.log.Debug().Uint32("partition_id", p.id).Int("segments", n).Msg("segments released by a consumer offset deleted")
	}
}
