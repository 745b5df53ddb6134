package embedded

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strconv"

	"github.com/kafka-iggy/kafka-iggy/embedded/plog"
)

// partitionDir is the directory of partition key under DataDir ("" in
// memory).
func (s *Server) partitionDir(key uint64) string {
	if s.cfg.DataDir == "" {
		return ""
	}
	return filepath.Join(s.cfg.DataDir, "partitions", strconv.FormatUint(key, 10))
}

// openPartition opens (or creates) the log of partition id of t under key.
// Caller holds Server.mu.
func (s *Server) openPartition(t *topic, id uint32, key, createdAt uint64, partitions int) (*partition, error) {
	dir := s.partitionDir(key)
	logDir := ""
	if dir != "" {
		logDir = filepath.Join(dir, "log")
	}
	expiry, maxSize := retentionOf(t.cfg, partitions)
	l, err := plog.Open(plog.Options{
		Dir:           logDir,
		PartitionID:   id,
		SegmentSize:   t.cfg.segmentSize,
		EnforceFsync:  t.cfg.enforceFsync,
		MessageExpiry: expiry,
		MaxSize:       maxSize,
		Now:           s.nowMicros,
	}, s.log.With().Uint32("stream_id", t.stream.id).Uint32("topic_id", t.id).Uint32("partition_id", id).Logger())
	if err != nil {
		return nil, err
	}
	l.SetRetention(expiry, maxSize)
	return &partition{id: id, createdAt: createdAt, key: key, log: l, topic: t, offsets: map[offsetKey]uint64{}}, nil
}

// retentionOf returns the per-partition retention of a topic: the expiry,
// and max_topic_size split evenly over its partitions.
func retentionOf(cfg topicConfig, partitions int) (expiry, maxSize uint64) {
	maxSize = cfg.maxTopicSize
	if maxSize != math.MaxUint64 && partitions > 1 {
		maxSize /= uint64(partitions)
	}
	return cfg.messageExpiry, maxSize
}

// addPartitions creates count partitions after the highest id of t.
// Caller holds Server.mu.
func (s *Server) addPartitions(t *topic, count uint32) error {
	next := uint32(0)
	if n := len(t.partitions); n > 0 {
		next = t.partitions[n-1].id + 1
	}
	now := s.nowMicros()
	total := len(t.partitions) + int(count)
	for i := uint32(0); i < count; i++ {
		s.nextPartKey++
		p, err := s.openPartition(t, next+i, s.nextPartKey, now, total)
		if err != nil {
			return err
		}
		t.partitions = append(t.partitions, p)
	}
	s.updateRetention(t)
	return nil
}

// updateRetention pushes t's retention to its partitions (after an update
// or a partition-count change). Caller holds Server.mu.
func (s *Server) updateRetention(t *topic) {
	expiry, maxSize := retentionOf(t.cfg, len(t.partitions))
	for _, p := range t.partitions {
		p.log.SetRetention(expiry, maxSize)
	}
}

// removePartition deletes a partition's log, offsets and directory. Caller
// holds Server.mu.
func (s *Server) removePartition(p *partition) error {
	p.omu.Lock()
	p.removed = true
	p.offsets = map[offsetKey]uint64{}
	p.omu.Unlock()
	size := p.log.State().SizeBytes
	err := p.log.Remove()
	s.dropped(size, 0)
	if dir := s.partitionDir(p.key); dir != "" {
		if rerr := os.RemoveAll(dir); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
			err = errors.Join(err, rerr)
		}
	}
	return err
}

// removeTopicData deletes every partition of t and ends its groups'
// memberships. Caller holds Server.mu.
func (s *Server) removeTopicData(t *topic) {
	for _, g := range t.groups {
		s.dropGroupMembers(g)
	}
	for _, p := range t.partitions {
		if err := s.removePartition(p); err != nil {
			s.log.Error().Err(err).Uint32("partition_id", p.id).Msg("cannot delete partition data")
		}
	}
	t.partitions = nil
}

// purgePartition deletes a partition's messages and consumer offsets
// (offsets restart at 0). Caller holds Server.mu.
func (s *Server) purgePartition(p *partition) error {
	size := p.log.State().SizeBytes
	err := p.log.Purge()
	s.dropped(size, p.log.State().SizeBytes)
	p.omu.Lock()
	p.offsets = map[offsetKey]uint64{}
	err = errors.Join(err, s.saveOffsetsFile(p, p.topic.cfg.offsetsFsync))
	p.omu.Unlock()
	_, perr := p.log.SetPinned(0, false) // Purge cleared the delete watermark: nothing to delete
	return errors.Join(err, perr)
}

// applyRetention runs segment retention over every partition.
func (s *Server) applyRetention() {
	s.mu.Lock()
	var parts []*partition
	for _, st := range s.streams {
		for _, t := range st.topics {
			parts = append(parts, t.partitions...)
		}
	}
	s.mu.Unlock()
	for _, p := range parts {
		size := p.log.State().SizeBytes
		n, err := p.log.ApplyRetention()
		s.dropped(size, p.log.State().SizeBytes)
		if err != nil && !errors.Is(err, plog.ErrClosed) {
			s.log.Error().Err(err).Uint32("partition_id", p.id).Msg("retention failed")
		}
		if n > 0 {
			s.log.Debug().Uint32("partition_id", p.id).Int("segments", n).Msg("retention deleted segments")
		}
	}
}
