// Every stored offset of a group: the scan behind OffsetFetch of all
// topics, DescribeGroups of a group known only by its offsets, and
// DeleteGroups.

package offsets

import (
	"context"
	"errors"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

// StoredTopic is one topic of a group's stored offsets.
type StoredTopic struct {
	Name       string
	Info       *iggy.TopicInfo
	HasGroup   bool           // external mode: the Iggy group exists on it
	Partitions []StoredOffset // ascending, only partitions with an offset
}

// StoredOffset is one stored offset.
type StoredOffset struct {
	Partition int32
	Offset    int64
}

// Scan finds every stored offset of a group: every Kafka topic (the
// default stream's topics and the overrides), in external mode only those
// that have the Iggy group, every partition. Topics come back sorted by
// name; in external mode a topic that has the group but no offset is
// included (hasGroup) with no partitions.
func (s *Store) Scan(ctx context.Context, group string) ([]StoredTopic, Mode, error) {
	names, err := s.topics.List(ctx)
	if err != nil {
		return nil, ModeUnknown, err
	}
	if len(names) == 0 {
		return nil, ModeUnknown, nil
	}
	mode, err := s.ResolveMode(ctx, s.topics.Ref(names[0]))
	if err != nil {
		return nil, mode, err
	}
	topics := make([]StoredTopic, len(names))
	errs := make([]error, len(names))
	Parallel(len(names), MaxParallel, func(i int) {
		topics[i].Name = names[i]
		info, err := s.client.GetTopic(ctx, s.topics.Ref(names[i]))
		if err != nil {
			// A topic the principal may not read is left out, as Kafka
			// leaves out what it may not describe.
			if !iggy.IsNotFound(err) && !iggy.IsUnauthorized(err) {
				errs[i] = err
			}
			return
		}
		topics[i].Info = info
		if mode == ModeExternal {
			var resp icodec.GetConsumerGroupResponse
			req := icodec.GetConsumerGroupRequest{StreamID: info.Ref.StreamID(), TopicID: info.Ref.TopicID(), GroupID: stringID(iggyGroupName(group))}
			switch err := s.client.Do(ctx, &req, &resp); {
			case err == nil:
				topics[i].HasGroup = true
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
		if t.Info == nil || mode == ModeExternal && !t.HasGroup {
			continue
		}
		for p := 0; p < int(t.Info.PartitionsCount); p++ {
			jobs = append(jobs, job{i, p})
		}
	}
	offs := make([]int64, len(jobs))
	jerrs := make([]error, len(jobs))
	Parallel(len(jobs), MaxParallel, func(k int) {
		t := &topics[jobs[k].t]
		offs[k], jerrs[k] = s.Read(ctx, mode, group, t.Info.Ref, int32(jobs[k].p))
		if iggy.IsUnauthorized(jerrs[k]) {
			offs[k], jerrs[k] = -1, nil // readable topic, offsets refused: left out
		}
	})
	if err := errors.Join(jerrs...); err != nil {
		return nil, mode, err
	}
	for k, j := range jobs {
		if offs[k] >= 0 {
			t := &topics[j.t]
			t.Partitions = append(t.Partitions, StoredOffset{Partition: int32(j.p), Offset: offs[k]})
		}
	}
	out := topics[:0]
	for _, t := range topics {
		if len(t.Partitions) > 0 || t.HasGroup {
			out = append(out, t)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, mode, nil
}

// DeleteGroupOffsets deletes every committed offset of group and, in
// external mode, its Iggy consumer groups (what DeleteGroups deletes).
// ErrNoOffsets when there was nothing.
func (s *Store) DeleteGroupOffsets(ctx context.Context, group string) error {
	if !ValidGroupID(group) {
		return ErrNoOffsets
	}
	topics, mode, err := s.Scan(ctx, group)
	if err != nil {
		return err
	}
	if len(topics) == 0 {
		return ErrNoOffsets
	}
	type job struct{ t, k int }
	var jobs []job
	for i := range topics {
		for k := range topics[i].Partitions {
			jobs = append(jobs, job{i, k})
		}
	}
	errs := make([]error, len(jobs))
	Parallel(len(jobs), MaxParallel, func(n int) {
		t := &topics[jobs[n].t]
		p := t.Partitions[jobs[n].k].Partition
		errs[n] = s.Remove(ctx, group, t.Info.Ref, p, Ticket{})
	})
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if mode == ModeExternal {
		gerrs := make([]error, len(topics))
		Parallel(len(topics), MaxParallel, func(i int) {
			if !topics[i].HasGroup {
				return
			}
			ref := topics[i].Info.Ref
			req := icodec.DeleteConsumerGroupRequest{StreamID: ref.StreamID(), TopicID: ref.TopicID(), GroupID: stringID(iggyGroupName(group))}
			if err := s.client.Do(ctx, &req, nil); err != nil && !groupMissing(err) {
				gerrs[i] = err
			}
		})
		if err := errors.Join(gerrs...); err != nil {
			return err
		}
	}
	s.log.Info().Str("group_id", group).Int("topics", len(topics)).Int("offsets", len(jobs)).
		Msg("offsets: deleted committed offsets of group")
	return nil
}

// Parallel runs fn(0..n-1) with at most limit at once and returns when all
// have finished.
func Parallel(n, limit int, fn func(i int)) {
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
