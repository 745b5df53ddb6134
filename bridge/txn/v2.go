package txn

// Transaction protocol v2 (KIP-890 part 2), as Apache Kafka 4.4 serves it
// to a client that sees the finalized feature transaction.version=2 in
// ApiVersions (Feature*):
//
//   - No AddPartitionsToTxn: the producer's local sidecar adds a partition
//     to the transaction itself on the first transactional Produce v12+ for
//     it (Frontend.Check -> Service.AddPartitions, the v1 call), and
//     TxnOffsetCommit v5+ adds its group (Service.AddOffsets).
//   - EndTxn v5 moves the producer's epoch on at every decision (bump): the
//     decision record already carries epoch+1 (MarkEpoch keeps the epoch
//     the transaction's records and markers carry), and the answer gives
//     the producer id and epoch of its next transaction. So a write of the
//     ended transaction that arrives late carries an old epoch and is
//     refused (INVALID_PRODUCER_EPOCH), instead of joining the next
//     transaction (KIP-890's "hanging transactions"). At epoch 32766 the
//     producer moves on to a new producer id at epoch 0 (MarkPID keeps the
//     old one for the markers).
//   - A retried EndTxn v5 (the answer was lost) carries the old epoch: it is
//     recognised (retryOfBump) and answered as the first was.
//   - EndTxn v5 abort with no transaction open succeeds and bumps the
//     epoch (the client cannot know whether a failed Produce added a
//     partition); commit answers INVALID_TXN_STATE.
//
// Decision-log records written before v2 have neither Bumped nor MarkPID:
// they replay as v1 transactions.

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// FeatureName is the ApiVersions feature of the transaction protocol.
const FeatureName = "transaction.version"

// The transaction.version levels served: 0-2, finalized at 2 (what Apache
// Kafka 4.4.0 finalizes by default).
const (
	FeatureMin       int16 = 0
	FeatureMax       int16 = 2
	FeatureFinalized int16 = 2
)

// EndResult answers EndTxn: v5 gives the producer id and epoch of the
// producer's next transaction (-1 on an error).
type EndResult struct {
	Code       int16
	ProducerID int64
	Epoch      int16
}

// retryOfBump reports whether (pid, epoch) is the producer id and epoch
// of the transaction that a v2 EndTxn ended (moving the epoch on).
func (t *Txn) retryOfBump(pid int64, epoch int16) bool {
	return t.Bumped && pid == t.markPID() && epoch == t.MarkEpoch
}

// bump moves the decision record d's epoch on for the producer's next
// transaction; at epoch 32766 it moves on to a new producer id at epoch 0.
func (c *Coordinator) bump(ctx context.Context, d *Txn) error {
	d.MarkPID = 0
	if d.Epoch >= 32766 {
		pid, err := c.deps.NewProducerID(ctx)
		if err != nil {
			return err
		}
		d.MarkPID, d.ProducerID, d.Epoch = d.ProducerID, pid, 0
	} else {
		d.Epoch++
	}
	d.Bumped = true
	return nil
}

// EndTxnV2 is EndTxn v5 (transaction protocol v2): as EndTxn, and the
// epoch moves on at the decision; the answer carries the producer id and
// epoch the producer uses next.
func (c *Coordinator) EndTxnV2(ctx context.Context, id string, pid int64, epoch int16, commit bool) EndResult {
	fail := func(code int16) EndResult { return EndResult{Code: code, ProducerID: -1, Epoch: -1} }
	defer c.lock(id)()
	t, cl, err := c.begin(ctx, id)
	if err != nil {
		return fail(errCode(err, loadCode))
	}
	if t == nil {
		return fail(kerr.InvalidProducerIDMapping.Code)
	}
	ok := func() EndResult { return EndResult{ProducerID: t.ProducerID, Epoch: t.Epoch} }
	decided := func(prep State) bool { // the decision of t matches commit
		if !commit {
			prep++
		}
		return t.State == prep || t.State == prep+2
	}
	if t.retryOfBump(pid, epoch) && t.State != Ongoing && t.State != Empty {
		if !decided(PrepareCommit) {
			return fail(kerr.InvalidTxnState.Code)
		}
		if t.State == PrepareCommit || t.State == PrepareAbort {
			_ = c.finish(ctx, cl, t) // the decision stands; the sweep retries
		}
		return ok()
	}
	if code := check(t, pid, epoch); code != 0 {
		return fail(code)
	}
	switch t.State {
	case Ongoing:
		if err := c.decide(ctx, cl, t, commit, false, true); err != nil && t.State == Ongoing {
			return fail(errCode(err, loadCode))
		}
		return ok()
	case PrepareCommit, PrepareAbort:
		// Decided by a v1 EndTxn whose markers are not all written: the
		// same outcome is its retry.
		if !decided(PrepareCommit) {
			return fail(kerr.InvalidTxnState.Code)
		}
		_ = c.finish(ctx, cl, t)
		return ok()
	case CompleteCommit, CompleteAbort:
		if !t.Bumped && decided(PrepareCommit) { // a retry of a v1 EndTxn
			return ok()
		}
	}
	if commit { // nothing open to commit
		return fail(kerr.InvalidTxnState.Code)
	}
	// An abort with nothing open: Kafka accepts it and bumps the epoch.
	d := t.clone()
	d.State, d.Parts, d.Groups, d.StartMs, d.MarkEpoch = CompleteAbort, nil, nil, -1, t.Epoch
	if err := c.bump(ctx, d); err != nil {
		return fail(loadCode)
	}
	if err := c.put(ctx, cl, d); err != nil {
		return fail(errCode(err, loadCode))
	}
	*t = *d
	return ok()
}

// NeedsAdd reports whether a transactional batch of producer pid at epoch
// for part is refused by Admit only because part is not in an open
// transaction (none open, or part not added), which transaction protocol
// v2 fixes by adding it: the producer is known, its epoch current, and no
// EndTxn runs.
func (g *Gate) NeedsAdd(pid int64, epoch int16, part Partition) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	p := g.prods[pid]
	if p == nil || p.fenced || p.ending || epoch != p.epoch {
		return false
	}
	_, added := p.parts[part]
	return !p.open || !added
}

// Fence refuses producer pid's batches from now on: its transactional id
// moved on to another producer id (a v2 EndTxn ran the epoch out).
func (g *Gate) Fence(pid int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if p := g.prods[pid]; p != nil {
		p.fenced, p.open = true, false
	}
}

// AddPartitionsBatch serves AddPartitionsToTxn v4-v5, the batched form
// Kafka's brokers send their transaction coordinators (KIP-890 part 1),
// as Apache Kafka 4.4 answers it: per transaction, VerifyOnly checks that
// the partitions are in its open transaction (a partition that is not:
// TRANSACTION_ABORTABLE, at v4 too; another producer
// id: INVALID_PRODUCER_ID_MAPPING; another epoch: PRODUCER_FENCED), else
// they are added as by v3.
func (f *Frontend) AddPartitionsBatch(ctx context.Context, version int16, req *kmsg.AddPartitionsToTxnRequest, resp *kmsg.AddPartitionsToTxnResponse) {
	for _, tx := range req.Transactions {
		topics := make([]topicParts, len(tx.Topics))
		for i, t := range tx.Topics {
			topics[i] = topicParts{t.Topic, t.Partitions}
		}
		var codes [][]int16
		if tx.VerifyOnly {
			codes = f.verify(ctx, tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch, topics)
		} else {
			codes = f.add(ctx, version, tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch, topics)
		}
		rtx := kmsg.NewAddPartitionsToTxnResponseTransaction()
		rtx.TransactionalID = tx.TransactionalID
		for i, t := range tx.Topics {
			rt := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
			rt.Topic = t.Topic
			for j, p := range t.Partitions {
				rp := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
				rp.Partition, rp.ErrorCode = p, codes[i][j]
				rt.Partitions = append(rt.Partitions, rp)
			}
			rtx.Topics = append(rtx.Topics, rt)
		}
		resp.Transactions = append(resp.Transactions, rtx)
	}
}

// verify is AddPartitionsToTxn v4+'s VerifyOnly: each partition's code.
func (f *Frontend) verify(ctx context.Context, id string, pid int64, epoch int16, topics []topicParts) [][]int16 {
	all := int16(0)
	v := f.Svc.Producer(ctx, id)
	switch {
	case v.Code != 0:
		all = v.Code
	case v.ProducerID != pid:
		all = kerr.InvalidProducerIDMapping.Code
	case v.Epoch != epoch:
		all = kerr.ProducerFenced.Code
	}
	codes := make([][]int16, len(topics))
	for i, t := range topics {
		codes[i] = make([]int16, len(t.parts))
		for j, p := range t.parts {
			switch {
			case all != 0:
				codes[i][j] = all
			case !v.Open || !slices.Contains(v.Parts, Partition{t.topic, p}):
				codes[i][j] = kerr.TransactionAbortable.Code // v4 too, as Kafka 4.4 answers
			}
		}
	}
	return codes
}
