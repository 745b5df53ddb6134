package bridge

// Seam for issue 25: bridge/txn resolves a transaction's group offsets
// through txn.GroupOffsets, which the read side (TxnOffsetCommit, branch h2)
// implements on *Bridge. Until it is merged no pending transactional offsets
// exist (TxnOffsetCommit is not served), so there is nothing to resolve.
// Delete this file when h2's ResolveTxnOffsets is merged.

import "context"

// ResolveTxnOffsets implements txn.GroupOffsets.
func (b *Bridge) ResolveTxnOffsets(context.Context, string, int64, int16, bool) error { return nil }
