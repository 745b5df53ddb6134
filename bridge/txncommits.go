package bridge

// Transactional offset commits on the floor (issue 25, bridge/txnoffsets):
// what TxnOffsetCommit holds pending, the transaction coordinator resolves.

import (
	"context"
	"errors"

	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
	"github.com/kafka-iggy/kafka-iggy/bridge/offsets"
	"github.com/kafka-iggy/kafka-iggy/bridge/txnoffsets"
)

// ResolveTxnOffsets ends the pending offsets TxnOffsetCommit holds for
// (group, producer id) at an epoch up to epoch: commit stores them through
// the normal commit path (bridge/offsets), then forgets them; abort forgets
// them. Idempotent: a second call finds nothing (or, after a failed store,
// stores the same absolute offsets again). The transaction coordinator
// calls it when a transaction that added the group ends.
func (b *Bridge) ResolveTxnOffsets(ctx context.Context, group string, producerID int64, epoch int16, commit bool) error {
	return txnoffsets.Resolve(ctx, b.txnOffsets, group, producerID, epoch, commit, func(o txnoffsets.Offset) error {
		info, err := b.lookupTopic(ctx, o.Topic)
		if errors.Is(err, iggy.ErrNotFound) {
			return nil // the topic is gone: nothing to commit to
		}
		var mode offsets.Mode
		if err == nil {
			mode, err = b.offsets.Prepare(ctx, group, info.Ref)
		}
		if err == nil {
			err = b.offsets.Commit(ctx, mode, group, info.Ref, o.Partition, o.Offset, offsets.Ticket{})
		}
		return err
	})
}
