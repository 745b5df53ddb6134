package bridge

// OffsetCommit: v0-v10
//
// Behavior (KAFKA-ON-IGGY §6; the store is bridge/offsets):
//   - Group id 1..246 bytes of UTF-8, else INVALID_GROUP_ID (24) for every
//     partition, with no Iggy call.
//   - Group checks as on a broker, by the group coordinator
//     (groups.Service.ValidateCommit): members of a group must commit with
//     their member id (and instance id) and the current generation, else
//     UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, FENCED_INSTANCE_ID or
//     REBALANCE_IN_PROGRESS for every partition; generation -1 without a
//     member id (admin tools, consumers using assign()) is accepted for an
//     unknown or empty group. From v9 an unknown group with a generation
//     answers GROUP_ID_NOT_FOUND instead of ILLEGAL_GENERATION, as Kafka's
//     coordinator does. A consumer-protocol (KIP-848) group is checked by
//     bridge/cgroups instead: Generation is the member epoch, which must be
//     the member's (STALE_MEMBER_EPOCH), from a member of the group
//     (UNKNOWN_MEMBER_ID) using v9+ (UNSUPPORTED_VERSION); epoch -1 passes
//     while the group has no members.
//   - Topics must exist (no auto-creation) and partitions be inside the
//     topic, else UNKNOWN_TOPIC_OR_PARTITION (3); v10 names topics by id:
//     UNKNOWN_TOPIC_ID (100) for an id no Kafka topic has.
//   - Each partition's offset is stored in Iggy (external-group: verbatim
//     under kind 3; consumer: offset - 1 under kind 1 kafka.cg.<group>,
//     and a commit of 0 as the zero marker kafka.cz.<group> at Iggy
//     offset 0, the main key deleted; see bridge/offsets); a negative offset
//     deletes the key (consumer: the marker and the main key). Partitions
//     are written in parallel, each key in order (bridge/offsets). Metadata,
//     leader epoch (v6+), the v1 timestamp and the v2-v4 retention time
//     are not stored.
//   - Failures map through kafkaCode with the offsets scope: retriable and
//     timed-out Iggy calls answer COORDINATOR_LOAD_IN_PROGRESS (14), which
//     every client retries; a consumer-mode commit beyond the high
//     watermark (Iggy 4100) answers OFFSET_OUT_OF_RANGE (1); offsets.mode
//     external-group on a server that refuses consumer kind 3 answers
//     UNKNOWN_SERVER_ERROR (-1, not retried) with one error log line.
//
// Version notes: v1 generation, member id, per-partition timestamp; v2-v4
// retention time; v3 throttle; v5 drops retention; v6 leader epoch; v7
// group instance id; v8 flexible; v9 KIP-848 (GROUP_ID_NOT_FOUND for
// unknown groups); v10 topic ids.
//
// Iggy commands: GET_TOPIC (300), GET_TOPICS (301, v10 topic ids),
// GET_CONSUMER_GROUP (600) and CREATE_CONSUMER_GROUP (602) once per topic
// (external-group), STORE_CONSUMER_OFFSET (121), DELETE_CONSUMER_OFFSET
// (122). Consumer mode: a
// commit of 0 is a store (marker) and a delete of the main key (at once
// when this process stored it, else a read and a delete only when it is
// there); a commit N > 0 is a store, plus a delete of the marker when this
// process stored it, or a read of it (and a delete only when it is there)
// on a key's first commit in the process and then at most once a minute; a
// negative offset clears the marker and the main key the same way. No
// delete of a missing offset is sent blindly (Iggy logs each one).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
	"github.com/kafka-iggy/kafka-iggy/bridge/offsets"
)

// offsetCommitter serves OffsetCommit.
type offsetCommitter struct {
	b *Bridge
}

func (b *Bridge) offsetCommitAPI() API {
	c := &offsetCommitter{b: b}
	return API{Key: 8, Name: "OffsetCommit", MinVersion: 0, MaxVersion: 10, Handle: c.handle, Completes: true, ErrorCodes: errorCodes(offsetCommitErrorCodes)}
}

func init() { registerAPI((*Bridge).offsetCommitAPI) }

// commitWrite is one partition to write.
type commitWrite struct {
	rp     *kmsg.OffsetCommitResponseTopicPartition
	t      int // index of the request topic
	topic  string
	ref    iggy.TopicRef
	offset int64
}

func (c *offsetCommitter) handle(ctx context.Context, rq *Request) (kmsg.Response, error) {
	req := rq.Msg.(*kmsg.OffsetCommitRequest)
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	b := c.b

	resp.Topics = make([]kmsg.OffsetCommitResponseTopic, len(req.Topics))
	for i := range req.Topics {
		rt := &resp.Topics[i]
		*rt = kmsg.NewOffsetCommitResponseTopic()
		rt.Topic, rt.TopicID = req.Topics[i].Topic, req.Topics[i].TopicID
		rt.Partitions = make([]kmsg.OffsetCommitResponseTopicPartition, len(req.Topics[i].Partitions))
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			*rp = kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition = req.Topics[i].Partitions[j].Partition
		}
	}
	if code := c.checkGroup(ctx, rq, req); code != 0 {
		setCommitCodes(resp, code)
		return resp, nil
	}

	var writes []commitWrite
	for i := range req.Topics {
		rt := &resp.Topics[i]
		name, info, code := c.resolve(ctx, rq, &req.Topics[i])
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			if code != 0 {
				rp.ErrorCode = code
				continue
			}
			if rp.ErrorCode, info = checkPartition(ctx, b.iggy, info, rp.Partition); rp.ErrorCode != 0 {
				rp.ErrorCode = offsetsScoped(rp.ErrorCode)
				continue
			}
			writes = append(writes, commitWrite{rp: rp, t: i, topic: name, ref: info.Ref, offset: req.Topics[i].Partitions[j].Offset})
		}
	}

	// Ready each topic that gets a store once (mode, Iggy group), then
	// write every partition.
	modes := make([]offsets.Mode, len(req.Topics))
	perrs := make([]error, len(req.Topics))
	var ready []int
	for k := range writes {
		if w := &writes[k]; w.offset >= 0 && (len(ready) == 0 || ready[len(ready)-1] != w.t) {
			ready = append(ready, w.t)
		}
	}
	offsets.Parallel(len(ready), offsets.MaxParallel, func(k int) {
		i := ready[k]
		for _, w := range writes {
			if w.t == i {
				modes[i], perrs[i] = b.offsets.Prepare(ctx, req.Group, w.ref)
				return
			}
		}
	})
	tk := ticketOf(rq)
	offsets.Parallel(len(writes), offsets.MaxParallel, func(k int) {
		w := &writes[k]
		err := perrs[w.t]
		if err == nil || w.offset < 0 {
			err = b.offsets.Commit(ctx, modes[w.t], req.Group, w.ref, w.rp.Partition, w.offset, tk)
		}
		if err != nil {
			w.rp.ErrorCode = offsetErrCode(ctx, b.log, rq, err, req.Group, w.topic, "offset commit: write failed")
		}
	})
	return resp, nil
}

// checkGroup applies the group-id rule and the coordinator's checks.
func (c *offsetCommitter) checkGroup(ctx context.Context, rq *Request, req *kmsg.OffsetCommitRequest) int16 {
	if !offsets.ValidGroupID(req.Group) {
		return kerr.InvalidGroupID.Code
	}
	if code, cg := c.b.cgroups.ValidateCommit(ctx, req.Group, req.MemberID, req.InstanceID, req.Generation, rq.Version); cg {
		return code // a consumer-protocol group: Generation is the member epoch
	}
	code, known := c.b.groups.ValidateCommit(ctx, req.Group, req.MemberID, req.Generation, req.InstanceID)
	if code == kerr.IllegalGeneration.Code && rq.Version >= 9 && !known {
		code = kerr.GroupIDNotFound.Code
	}
	return code
}

// resolve finds the topic of one request entry: by name up to v9, by id
// from v10. No auto-creation.
func (c *offsetCommitter) resolve(ctx context.Context, rq *Request, t *kmsg.OffsetCommitRequestTopic) (string, *iggy.TopicInfo, int16) {
	b := c.b
	if rq.Version >= 10 {
		name, info, err := c.b.topicIDs.lookup(ctx, t.TopicID, receivedAt(rq))
		if err != nil {
			return name, nil, offsetErrCode(ctx, b.log, rq, err, "", name, "offset commit: topic id lookup failed")
		}
		if info == nil {
			return "", nil, kerr.UnknownTopicID.Code
		}
		return name, info, 0
	}
	if validTopicName(t.Topic) != nil {
		return t.Topic, nil, kerr.UnknownTopicOrPartition.Code
	}
	info, err := b.lookupTopic(ctx, t.Topic)
	if err != nil {
		return t.Topic, nil, offsetErrCode(ctx, b.log, rq, err, "", t.Topic, "offset commit: topic lookup failed")
	}
	return t.Topic, info, 0
}

// setCommitCodes answers every partition with code.
func setCommitCodes(resp *kmsg.OffsetCommitResponse, code int16) {
	for i := range resp.Topics {
		for j := range resp.Topics[i].Partitions {
			resp.Topics[i].Partitions[j].ErrorCode = code
		}
	}
}

// offsetCommitErrorCodes walks a OffsetCommit response for the metrics.
func offsetCommitErrorCodes(r *kmsg.OffsetCommitResponse, f func(int16)) {
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			f(p.ErrorCode)
		}
	}
}
