package bridge

// TxnOffsetCommit: v0-v6
//
// Behavior (KAFKA-ON-IGGY "Transactions"; package bridge/txnoffsets):
//   - The partitions' offsets are held pending for (group, producer id) at
//     the group's owner (forwarded over the peer link, bridge/cluster kinds
//     50-52), invisible to OffsetFetch (require_stable answers
//     UNSTABLE_OFFSET_COMMIT for them) until the transaction coordinator
//     resolves them (Bridge.ResolveTxnOffsets: stored through the normal
//     commit path on commit, dropped on abort). Persisted in Iggy before
//     the answer (txnoffsets.Durable): a restart or an owner move keeps them.
//   - Group id 1..246 bytes of UTF-8, else INVALID_GROUP_ID (24). v3+:
//     a member id or a generation other than -1 is checked as OffsetCommit
//     checks it (KIP-447 zombie fencing; a consumer-protocol group's member
//     epoch too, at any version, as Kafka's transactional check); never
//     REBALANCE_IN_PROGRESS nor GROUP_ID_NOT_FOUND (txnoffsets.GroupCheckCode).
//   - Unknown topics and partitions: UNKNOWN_TOPIC_OR_PARTITION (3); v6
//     names topics by id: an unknown id UNKNOWN_TOPIC_ID (100). A
//     producer epoch older than the one the group already holds pending
//     offsets for: INVALID_PRODUCER_EPOCH (47). Pending partitions past
//     txnoffsets.MaxEntries: COORDINATOR_LOAD_IN_PROGRESS (14).
//
//   - v5 (transaction protocol v2): the group is first added to the
//     producer's transaction at its coordinator, as AddOffsetsToTxn does
//     (txn.Frontend.AddOffsetsImplicit); a fenced producer:
//     INVALID_PRODUCER_EPOCH, as Kafka 4.4 answers.
//
// Version notes: v1 no change; v2 commit timestamp dropped; v3 flexible,
// member id, generation, instance id; v4 no change; v5 no wire change
// (transaction protocol v2); v6 topic ids instead of names (request and
// response), resolved as OffsetCommit v10 resolves them.
//
// Iggy commands: GET_TOPIC (300), GET_TOPICS (301, v6 topic ids); at the owner SEND_MESSAGES, STORE/GET_
// CONSUMER_OFFSET, POLL_MESSAGES on __kafka_iggy/txnoffsets[.<domain>].

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
	"github.com/kafka-iggy/kafka-iggy/bridge/offsets"
	"github.com/kafka-iggy/kafka-iggy/bridge/txnoffsets"
)

func (b *Bridge) txnOffsetCommitAPI() API {
	return API{Key: 28, Name: "TxnOffsetCommit", MinVersion: 0, MaxVersion: 6, Handle: b.handleTxnOffsetCommit, ErrorCodes: errorCodes(txnOffsetCommitErrorCodes)}
}

func init() { registerAPI((*Bridge).txnOffsetCommitAPI) }

func (b *Bridge) handleTxnOffsetCommit(ctx context.Context, rq *Request) (kmsg.Response, error) {
	req := rq.Msg.(*kmsg.TxnOffsetCommitRequest)
	resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	code := int16(0)
	switch {
	case !offsets.ValidGroupID(req.Group):
		code = kerr.InvalidGroupID.Code
	case rq.Version >= 3 && (req.MemberID != "" || req.Generation != -1):
		var cg bool // a consumer-protocol group: Generation is the member epoch (any version, as Kafka's transactional check)
		if code, cg = b.cgroups.ValidateCommit(ctx, req.Group, req.MemberID, req.InstanceID, req.Generation, 9); !cg {
			code, _ = b.groups.ValidateCommit(ctx, req.Group, req.MemberID, req.Generation, req.InstanceID)
		}
		code = txnoffsets.GroupCheckCode(code)
	}
	if code == 0 && rq.Version >= 5 {
		code = b.txns.AddOffsetsImplicit(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group)
	}
	var offs []txnoffsets.Offset
	var at []*kmsg.TxnOffsetCommitResponseTopicPartition
	resp.Topics = make([]kmsg.TxnOffsetCommitResponseTopic, len(req.Topics))
	for i := range req.Topics {
		t := &req.Topics[i]
		rt := &resp.Topics[i]
		*rt = kmsg.NewTxnOffsetCommitResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		tcode := code
		name := t.Topic
		var info *iggy.TopicInfo
		switch {
		case tcode != 0:
		case rq.Version >= 6:
			var err error
			if name, info, err = b.topicIDs.Lookup(ctx, t.TopicID, receivedAt(rq)); err != nil {
				tcode = offsetErrCode(ctx, b.log, rq, err, req.Group, name, "txn offset commit: topic id lookup failed")
			} else if info == nil {
				tcode = kerr.UnknownTopicID.Code
			}
		case validTopicName(t.Topic) != nil:
			tcode = kerr.UnknownTopicOrPartition.Code
		default:
			var err error
			if info, err = b.lookupTopic(ctx, t.Topic); err != nil {
				tcode = offsetErrCode(ctx, b.log, rq, err, req.Group, t.Topic, "txn offset commit: topic lookup failed")
			}
		}
		rt.Partitions = make([]kmsg.TxnOffsetCommitResponseTopicPartition, len(t.Partitions))
		for j := range t.Partitions {
			rp := &rt.Partitions[j]
			*rp = kmsg.NewTxnOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = t.Partitions[j].Partition, tcode
			if tcode == 0 {
				if rp.ErrorCode, info = checkPartition(ctx, b.iggy, info, rp.Partition); rp.ErrorCode == 0 {
					offs = append(offs, txnoffsets.Offset{Topic: name, Partition: rp.Partition, Offset: t.Partitions[j].Offset})
					at = append(at, rp)
				}
			}
		}
	}
	if len(offs) > 0 {
		if c := b.txnOffsets.Add(ctx, req.Group, req.ProducerID, req.ProducerEpoch, offs); c != 0 {
			for _, rp := range at {
				rp.ErrorCode = c
			}
		}
	}
	return resp, nil
}

// txnOffsetCommitErrorCodes walks a TxnOffsetCommit response for the metrics.
func txnOffsetCommitErrorCodes(r *kmsg.TxnOffsetCommitResponse, f func(int16)) {
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			f(p.ErrorCode)
		}
	}
}
