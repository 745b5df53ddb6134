package txn

import (
	"context"
	"slices"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafka-iggy/kafka-iggy/codec/records"
)

// Service is the transaction coordinator as the producer's local sidecar
// reaches it: the local Coordinator, or the cluster router forwarding each
// transactional id to the owner of its shard.
type Service interface {
	InitProducerID(ctx context.Context, p InitParams) InitResult
	AddPartitions(ctx context.Context, id string, pid int64, epoch int16, parts []Partition) AddResult
	AddOffsets(ctx context.Context, id string, pid int64, epoch int16, group string) int16
	EndTxn(ctx context.Context, id string, pid int64, epoch int16, commit bool) int16
	// EndTxnV2 is EndTxn v5 (transaction protocol v2, v2.go).
	EndTxnV2(ctx context.Context, id string, pid int64, epoch int16, commit bool) EndResult
	Describe(ctx context.Context, id string) Description
	// List returns every owner's transactional ids.
	List(ctx context.Context) ([]Description, int16)
	Producer(ctx context.Context, id string) View
}

var _ Service = (*Coordinator)(nil)

// Frontend serves the transaction APIs at the producer's local sidecar: it
// checks requests, keeps the Gate in step with the coordinator's answers
// and shapes the Kafka responses. The bridge's API files call it.
type Frontend struct {
	Svc  Service
	Gate *Gate
	// CheckPartition answers UNKNOWN_TOPIC_OR_PARTITION (or a retriable
	// code) for a partition that cannot be written.
	CheckPartition func(ctx context.Context, topic string, partition int32) int16
	// CheckEvery is Config.ProducerCheck: how long the gate trusts what it
	// learned of a producer before a transactional Produce asks the
	// coordinator again (0: never).
	CheckEvery time.Duration
	Log        zerolog.Logger
}

// fenced maps PRODUCER_FENCED to INVALID_PRODUCER_EPOCH for the versions
// before KIP-588 added it (InitProducerId v4, AddPartitionsToTxn,
// AddOffsetsToTxn and EndTxn v2).
func fenced(code int16, version, since int16) int16 {
	if code == kerr.ProducerFenced.Code && version < since {
		return kerr.InvalidProducerEpoch.Code
	}
	return code
}

// InitProducerID serves InitProducerId with a transactional id.
func (f *Frontend) InitProducerID(ctx context.Context, version int16, req *kmsg.InitProducerIDRequest, resp *kmsg.InitProducerIDResponse) {
	id := *req.TransactionalID
	pid, epoch := req.ProducerID, req.ProducerEpoch
	if version < 3 {
		pid, epoch = -1, -1
	}
	r := f.Svc.InitProducerID(ctx, InitParams{ID: id, TimeoutMs: req.TransactionTimeoutMillis, ProducerID: pid, Epoch: epoch})
	resp.ErrorCode = fenced(r.Code, version, 4)
	resp.ProducerID, resp.ProducerEpoch = r.ProducerID, r.Epoch
	if r.Code == 0 {
		f.Gate.Set(id, View{ProducerID: r.ProducerID, Epoch: r.Epoch})
	}
}

// AddPartitions serves AddPartitionsToTxn v0-v3 (v4+: AddPartitionsBatch).
func (f *Frontend) AddPartitions(ctx context.Context, version int16, req *kmsg.AddPartitionsToTxnRequest, resp *kmsg.AddPartitionsToTxnResponse) {
	topics := make([]topicParts, len(req.Topics))
	for i, t := range req.Topics {
		topics[i] = topicParts{t.Topic, t.Partitions}
	}
	codes := f.add(ctx, version, req.TransactionalID, req.ProducerID, req.ProducerEpoch, topics)
	resp.Topics = make([]kmsg.AddPartitionsToTxnResponseTopic, len(req.Topics))
	for i, t := range req.Topics {
		rt := &resp.Topics[i]
		*rt = kmsg.NewAddPartitionsToTxnResponseTopic()
		rt.Topic = t.Topic
		for j, p := range t.Partitions {
			rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p, codes[i][j]
			rt.Partitions = append(rt.Partitions, rp)
		}
	}
}

// topicParts is one topic of an AddPartitionsToTxn request.
type topicParts struct {
	topic string
	parts []int32
}

// add checks the partitions of an AddPartitionsToTxn and adds them to id's
// transaction: each one's code, in the request's order.
func (f *Frontend) add(ctx context.Context, version int16, id string, pid int64, epoch int16, topics []topicParts) [][]int16 {
	var parts []Partition
	codes := make([][]int16, len(topics))
	bad := false
	for i, t := range topics {
		codes[i] = make([]int16, len(t.parts))
		for j, p := range t.parts {
			if c := f.CheckPartition(ctx, t.topic, p); c != 0 {
				codes[i][j], bad = c, true
				continue
			}
			parts = append(parts, Partition{t.topic, p})
		}
	}
	top := int16(0)
	if bad { // Kafka adds nothing when one partition is bad
		top = kerr.OperationNotAttempted.Code
	} else {
		r := f.Svc.AddPartitions(ctx, id, pid, epoch, parts)
		top = fenced(r.Code, version, 2)
		if r.Code == 0 {
			f.Gate.Set(id, View{ProducerID: pid, Epoch: epoch, Open: true, Seq: r.Seq, MarkEpoch: r.MarkEpoch, Parts: parts})
		}
	}
	for i := range codes {
		for j := range codes[i] {
			if codes[i][j] == 0 {
				codes[i][j] = top
			}
		}
	}
	return codes
}

// AddOffsets serves AddOffsetsToTxn.
func (f *Frontend) AddOffsets(ctx context.Context, version int16, req *kmsg.AddOffsetsToTxnRequest, resp *kmsg.AddOffsetsToTxnResponse) {
	if req.Group == "" {
		resp.ErrorCode = kerr.InvalidGroupID.Code
		return
	}
	resp.ErrorCode = fenced(f.Svc.AddOffsets(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group), version, 2)
}

// EndTxn serves EndTxn v0-v5: the gate waits for the producer's
// transactional writes in flight (and refuses new ones) before the
// coordinator decides. v5 (transaction protocol v2) answers the producer
// id and epoch of the producer's next transaction, which the gate takes
// on: a write of the ended transaction arriving late is refused.
func (f *Frontend) EndTxn(ctx context.Context, version int16, req *kmsg.EndTxnRequest, resp *kmsg.EndTxnResponse) {
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	done, err := f.Gate.End(ctx, req.ProducerID)
	if err != nil {
		resp.ErrorCode = kerr.ConcurrentTransactions.Code
		return
	}
	defer done()
	if version < 5 {
		resp.ErrorCode = fenced(f.Svc.EndTxn(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit), version, 2)
		return
	}
	r := f.Svc.EndTxnV2(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit)
	resp.ErrorCode, resp.ProducerID, resp.ProducerEpoch = r.Code, r.ProducerID, r.Epoch
	if r.Code == 0 {
		if r.ProducerID != req.ProducerID {
			f.Gate.Fence(req.ProducerID)
		}
		f.Gate.Set(req.TransactionalID, View{ProducerID: r.ProducerID, Epoch: r.Epoch})
	}
}

// AddOffsetsImplicit is TxnOffsetCommit v5+'s AddOffsetsToTxn (transaction
// protocol v2): the group joins the producer's transaction, opening one
// when none is. Its codes are those a TxnOffsetCommit answers, as Kafka
// 4.4's: PRODUCER_FENCED is INVALID_PRODUCER_EPOCH.
func (f *Frontend) AddOffsetsImplicit(ctx context.Context, id string, pid int64, epoch int16, group string) int16 {
	return implicitCode(f.Svc.AddOffsets(ctx, id, pid, epoch, group))
}

// implicitCode is the code a Produce or TxnOffsetCommit answers when the
// implicit add of transaction protocol v2 failed with code, as Kafka 4.4
// translates its coordinator's answer: a fenced producer is
// INVALID_PRODUCER_EPOCH, a coordinator busy or moving
// NOT_ENOUGH_REPLICAS (retriable without a metadata refresh).
func implicitCode(code int16) int16 {
	switch code {
	case kerr.ProducerFenced.Code:
		return kerr.InvalidProducerEpoch.Code
	case kerr.ConcurrentTransactions.Code, kerr.CoordinatorLoadInProgress.Code, kerr.CoordinatorNotAvailable.Code, kerr.NotCoordinator.Code:
		return kerr.NotEnoughReplicas.Code
	}
	return code
}

// Admit is the Decoder.Txn check of a transactional Produce batch of
// transactional id id for a partition: a producer the gate does not know
// (this sidecar restarted) is looked up from its coordinator first.
func (f *Frontend) Admit(ctx context.Context, id *string, pid int64, epoch int16, part Partition) (mark records.TxnMark, release func(), code int16) {
	if id == nil {
		return mark, nil, kerr.TransactionalIDAuthorizationFailed.Code
	}
	if !f.Gate.Known(pid) {
		v := f.Svc.Producer(ctx, *id)
		if v.Code != 0 {
			return mark, nil, v.Code
		}
		if v.ProducerID != pid {
			return mark, nil, kerr.InvalidProducerIDMapping.Code
		}
		f.Gate.Set(*id, v)
	} else if f.Gate.Due(pid, f.CheckEvery) {
		// A new instance of the producer may have been initialised
		// through another sidecar since: a zombie writing here is fenced
		// within CheckEvery (what it writes before that lands after its
		// transaction's abort marker, which read_committed Fetch drops).
		if v := f.Svc.Producer(ctx, *id); v.Code == 0 {
			f.Gate.Recheck(pid, v)
		}
	}
	return f.Gate.Admit(pid, epoch, part)
}

// Describe serves DescribeTransactions.
func (f *Frontend) Describe(ctx context.Context, req *kmsg.DescribeTransactionsRequest, resp *kmsg.DescribeTransactionsResponse) {
	for _, id := range req.TransactionalIDs {
		d := f.Svc.Describe(ctx, id)
		s := kmsg.NewDescribeTransactionsResponseTransactionState()
		s.TransactionalID, s.ErrorCode = id, d.Code
		if d.Code == 0 {
			s.State, s.TimeoutMillis, s.StartTimestamp = d.State.String(), d.TimeoutMs, d.StartMs
			s.ProducerID, s.ProducerEpoch = d.ProducerID, d.Epoch
			for _, p := range d.Parts {
				i := slices.IndexFunc(s.Topics, func(t kmsg.DescribeTransactionsResponseTransactionStateTopic) bool { return t.Topic == p.Topic })
				if i < 0 {
					t := kmsg.NewDescribeTransactionsResponseTransactionStateTopic()
					t.Topic = p.Topic
					s.Topics = append(s.Topics, t)
					i = len(s.Topics) - 1
				}
				s.Topics[i].Partitions = append(s.Topics[i].Partitions, p.Partition)
			}
		} else {
			s.ProducerID, s.ProducerEpoch, s.StartTimestamp = -1, -1, -1
		}
		resp.TransactionStates = append(resp.TransactionStates, s)
	}
}

// List serves ListTransactions: the state, producer id and duration
// filters (v1: DurationFilterMillis, KIP-994).
func (f *Frontend) List(ctx context.Context, version int16, req *kmsg.ListTransactionsRequest, resp *kmsg.ListTransactionsResponse) {
	all, code := f.Svc.List(ctx)
	if code != 0 {
		resp.ErrorCode = code
		return
	}
	now := time.Now().UnixMilli()
	for _, s := range req.StateFilters {
		if _, ok := ParseState(s); !ok {
			resp.UnknownStateFilters = append(resp.UnknownStateFilters, s)
		}
	}
	for _, d := range all {
		switch {
		case len(req.StateFilters) > 0 && !slices.Contains(req.StateFilters, d.State.String()),
			len(req.ProducerIDFilters) > 0 && !slices.Contains(req.ProducerIDFilters, d.ProducerID),
			version >= 1 && req.DurationFilterMillis >= 0 && (d.State != Ongoing || now-d.StartMs < req.DurationFilterMillis):
			continue
		}
		s := kmsg.NewListTransactionsResponseTransactionState()
		s.TransactionalID, s.ProducerID, s.TransactionState = d.ID, d.ProducerID, d.State.String()
		resp.TransactionStates = append(resp.TransactionStates, s)
	}
	slices.SortFunc(resp.TransactionStates, func(a, b kmsg.ListTransactionsResponseTransactionState) int {
		if a.TransactionalID < b.TransactionalID {
			return -1
		}
		if a.TransactionalID > b.TransactionalID {
			return 1
		}
		return 0
	})
}

// Check returns the Decoder.Txn check of one Produce partition of
// transactional id id; the release of an admitted batch goes to *release
// (call it once the batch is written or refused).
//
// A batch outside the open transaction is INVALID_TXN_STATE up to Produce
// v10 and TRANSACTION_ABORTABLE (121) from v11, as Kafka 4.4 answers; from
// v12 (transaction protocol v2) its partition is added to the transaction
// first (opening one when none is).
func (f *Frontend) Check(ctx context.Context, version int16, id *string, topic string, partition int32, release *func()) func(int64, int16) (records.TxnMark, int16) {
	return func(pid int64, epoch int16) (records.TxnMark, int16) {
		if *release != nil { // one transactional batch per partition (v3+)
			return records.TxnMark{}, kerr.InvalidRecord.Code
		}
		part := Partition{topic, partition}
		m, r, code := f.Admit(ctx, id, pid, epoch, part)
		if code == kerr.InvalidTxnState.Code && version >= 12 && f.Gate.NeedsAdd(pid, epoch, part) {
			// Transaction protocol v2: the first write of the transaction
			// to the partition adds it at the coordinator.
			a := f.Svc.AddPartitions(ctx, *id, pid, epoch, []Partition{part})
			if code = implicitCode(a.Code); code == 0 {
				f.Gate.Set(*id, View{ProducerID: pid, Epoch: epoch, Open: true, Seq: a.Seq, MarkEpoch: a.MarkEpoch, Parts: []Partition{part}})
				m, r, code = f.Gate.Admit(pid, epoch, part)
			}
		}
		if code == kerr.InvalidTxnState.Code && version >= 11 {
			code = kerr.TransactionAbortable.Code
		}
		*release = r
		return m, code
	}
}
