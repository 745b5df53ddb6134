package bridge

// OffsetDelete: v0
//
// Behavior (KIP-496; the store is bridge/offsets):
//   - Group id 1..246 bytes of UTF-8, else INVALID_GROUP_ID (24).
//   - The group coordinator decides whether the group's offsets may be
//     deleted (offsetDeleteCheck): a group with members that is not a
//     consumer group answers NON_EMPTY_GROUP (68); topics the members of a
//     consumer group are subscribed to answer GROUP_SUBSCRIBED_TO_TOPIC (86)
//     for each of their partitions.
//   - A group the coordinator does not know (never joined here, or known
//     before a restart) exists when Iggy holds an offset of it on one of
//     the requested partitions; otherwise GROUP_ID_NOT_FOUND (69).
//   - Unknown topics and partitions answer UNKNOWN_TOPIC_OR_PARTITION (3).
//     Every other partition's key is deleted (consumer mode: the zero
//     marker kafka.cz.<group> too; nothing stored counts as deleted), in
//     order with the commits of the same partition. A group committed at
//     0 only (consumer mode: only the marker) counts as holding an offset.
//   - Group-level errors come without topics, as Kafka answers them.
//     Iggy failures: COORDINATOR_LOAD_IN_PROGRESS (14) when retriable.
//
// Iggy commands: DELETE_CONSUMER_OFFSET (122), GET_CONSUMER_OFFSET (120,
// unknown groups), GET_TOPIC (300).

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
	"github.com/kafka-iggy/kafka-iggy/bridge/offsets"
)

func (b *Bridge) offsetDeleteAPI() API {
	return API{Key: 47, Name: "OffsetDelete", MinVersion: 0, MaxVersion: 0, Handle: b.handleOffsetDelete, Completes: true, ErrorCodes: errorCodes(offsetDeleteErrorCodes)}
}

func init() { registerAPI((*Bridge).offsetDeleteAPI) }

// offsetDeletion is one partition whose key is deleted.
type offsetDeletion struct {
	rp    *kmsg.OffsetDeleteResponseTopicPartition
	topic string
	ref   iggy.TopicRef
}

func (b *Bridge) handleOffsetDelete(ctx context.Context, rq *Request) (kmsg.Response, error) {
	req := rq.Msg.(*kmsg.OffsetDeleteRequest)
	resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
	if !offsets.ValidGroupID(req.Group) {
		resp.ErrorCode = kerr.InvalidGroupID.Code
		return resp, nil
	}
	code, all, subs := b.groups.OffsetDeleteCheck(ctx, req.Group)
	subscribed := func(t string) bool { return all || slices.Contains(subs, t) }
	if code != 0 && code != kerr.GroupIDNotFound.Code {
		resp.ErrorCode = code
		return resp, nil
	}
	known := code == 0

	resp.Topics = make([]kmsg.OffsetDeleteResponseTopic, len(req.Topics))
	var dels []offsetDeletion
	for i := range req.Topics {
		t := &req.Topics[i]
		rt := &resp.Topics[i]
		*rt = kmsg.NewOffsetDeleteResponseTopic()
		rt.Topic = t.Topic
		rt.Partitions = make([]kmsg.OffsetDeleteResponseTopicPartition, len(t.Partitions))
		var info *iggy.TopicInfo
		var tcode int16
		switch {
		case validTopicName(t.Topic) != nil:
			tcode = kerr.UnknownTopicOrPartition.Code
		case subscribed(t.Topic):
			tcode = kerr.GroupSubscribedToTopic.Code
		default:
			var err error
			if info, err = b.lookupTopic(ctx, t.Topic); err != nil {
				tcode = offsetErrCode(ctx, b.log, rq, err, req.Group, t.Topic, "offset delete: topic lookup failed")
			}
		}
		for j := range t.Partitions {
			rp := &rt.Partitions[j]
			*rp = kmsg.NewOffsetDeleteResponseTopicPartition()
			rp.Partition = t.Partitions[j].Partition
			if tcode != 0 {
				rp.ErrorCode = tcode
				continue
			}
			if rp.ErrorCode, info = checkPartition(ctx, b.iggy, info, rp.Partition); rp.ErrorCode != 0 {
				rp.ErrorCode = offsetsScoped(rp.ErrorCode)
				continue
			}
			dels = append(dels, offsetDeletion{rp: rp, topic: t.Topic, ref: info.Ref})
		}
	}

	if !known {
		found, err := b.anyOffset(ctx, req.Group, dels)
		switch {
		case err != nil:
			resp.ErrorCode = offsets.ReadCode(err)
			resp.Topics = nil
			return resp, nil
		case !found:
			resp.ErrorCode = kerr.GroupIDNotFound.Code
			resp.Topics = nil
			return resp, nil
		}
	}

	tk := ticketOf(rq)
	offsets.Parallel(len(dels), offsets.MaxParallel, func(k int) {
		d := &dels[k]
		if err := b.offsets.Remove(ctx, req.Group, d.ref, d.rp.Partition, tk); err != nil {
			d.rp.ErrorCode = offsetErrCode(ctx, b.log, rq, err, req.Group, d.topic, "offset delete: delete failed")
		}
	})
	return resp, nil
}

// anyOffset reports whether Iggy holds an offset of group on one of the
// partitions.
func (b *Bridge) anyOffset(ctx context.Context, group string, dels []offsetDeletion) (bool, error) {
	if len(dels) == 0 {
		return false, nil
	}
	mode, err := b.offsets.ResolveMode(ctx, dels[0].ref)
	if err != nil {
		return false, err
	}
	found := make([]bool, len(dels))
	errs := make([]error, len(dels))
	offsets.Parallel(len(dels), offsets.MaxParallel, func(k int) {
		off, err := b.offsets.Read(ctx, mode, group, dels[k].ref, dels[k].rp.Partition)
		found[k], errs[k] = off >= 0, err
	})
	for k := range dels {
		if errs[k] != nil {
			return false, errs[k]
		}
		if found[k] {
			return true, nil
		}
	}
	return false, nil
}

// offsetDeleteErrorCodes walks a OffsetDelete response for the metrics.
func offsetDeleteErrorCodes(r *kmsg.OffsetDeleteResponse, f func(int16)) {
	f(r.ErrorCode)
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			f(p.ErrorCode)
		}
	}
}
