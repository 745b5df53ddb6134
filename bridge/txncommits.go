package bridge

// Transactional offset commits on the floor (issue 25, bridge/txnoffsets):
// what TxnOffsetCommit holds pending, the transaction coordinator resolves.

import (
	"context"
	"errors"
	"fmt"

	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
	"github.com/kafka-iggy/kafka-iggy/bridge/offsets"
)

// ResolveTxnOffsets ends the pending offsets TxnOffsetCommit holds for
// (group, producer id) at an epoch up to epoch: commit stores them through
// the normal commit path (bridge/offsets), then forgets them; abort forgets
// them. Idempotent: a second call finds nothing (or, after a failed store,
// stores the same absolute offsets again). The transaction coordinator
// calls it when a transaction that added the group ends.
func (b *Bridge) ResolveTxnOffsets(ctx context.Context, group string, producerID int64, epoch int16, commit bool) error {
	if commit {
		offs, code := b.txnOffsets.Pending(ctx, group, producerID, epoch)
		if code != 0 {
			return fmt.Errorf("bridge: pending offsets of group %q: coordinator code %d", group, code)
		}
		var errs []error
		for _, o := range offs {
			info, err := b.lookupTopic(ctx, o.Topic)
			if errors.Is(err, iggy.ErrNotFound) {
				continue // the topic is gone: nothing to commit to
			}
			var mode offsets.Mode
			if err == nil {
				mode, err = b.offsets.Prepare(ctx, group, info.Ref)
			}
			if err == nil {
				err = b.offsets.Commit(ctx, mode, group, info.Ref, o.Partition, o.Offset, offsets.Ticket{})
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("%s/%d: %w", o.Topic, o.Partition, err))
			}
		}
		if err := errors.Join(errs...); err != nil {
			return err // still pending: the coordinator retries
		}
	}
	if code := b.txnOffsets.Forget(ctx, group, producerID, epoch); code != 0 {
		return fmt.Errorf("bridge: forgetting pending offsets of group %q: coordinator code %d", group, code)
	}
	return nil
}
