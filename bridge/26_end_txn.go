package bridge

// EndTxn: v0-v5
//
// Behavior (bridge/txn, docs/ARCHITECTURE.md "Transactions"):
//   - First, at this sidecar (the producer's only broker): the producer's
//     transactional Produce batches in flight are waited for and new ones
//     refused (INVALID_TXN_STATE) until EndTxn is over, so a late write is
//     never folded into the transaction.
//   - Then the coordinator appends PrepareCommit/PrepareAbort to its
//     decision log (the decision), writes one marker per partition of the
//     transaction, resolves its groups' offsets and appends
//     CompleteCommit/CompleteAbort. A retry of a finished EndTxn with the
//     same outcome answers 0; the other outcome, or no transaction open:
//     INVALID_TXN_STATE (48). Producer errors as AddPartitionsToTxn.
//     Iggy unreachable before the decision: COORDINATOR_LOAD_IN_PROGRESS;
//     after it, 0 (the coordinator's sweep writes what is missing).
//   - v5 (transaction protocol v2, KIP-890 part 2; bridge/txn/v2.go): the
//     decision moves the producer's epoch on (a new producer id at epoch 0
//     when it would pass 32766) and the answer carries them; this sidecar
//     then refuses the ended transaction's late writes
//     (INVALID_PRODUCER_EPOCH). A retry carrying the old epoch gets the same
//     answer; the other outcome INVALID_TXN_STATE. Abort with no
//     transaction open: 0, the epoch moves on; commit: INVALID_TXN_STATE.
//
// Version notes: v1 no wire change; v2 PRODUCER_FENCED; v3 flexible; v4 no
// wire change; v5 ProducerID and ProducerEpoch in the response (transaction
// protocol v2: ApiVersions finalizes transaction.version 2).
//
// Iggy commands: POLL_MESSAGES and SEND_MESSAGES on
// __kafka_iggy/transactions, SEND_MESSAGES per marker.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *Bridge) endTxnAPI() API {
	return API{Key: 26, Name: "EndTxn", MinVersion: 0, MaxVersion: 5, Handle: b.handleEndTxn, Completes: true, ErrorCodes: errorCodes(endTxnErrorCodes)}
}

func init() { registerAPI((*Bridge).endTxnAPI) }

func (b *Bridge) handleEndTxn(ctx context.Context, rq *Request) (kmsg.Response, error) {
	req := rq.Msg.(*kmsg.EndTxnRequest)
	resp := req.ResponseKind().(*kmsg.EndTxnResponse)
	b.txns.EndTxn(ctx, rq.Version, req, resp)
	return resp, nil
}

// endTxnErrorCodes walks a EndTxn response for the metrics.
func endTxnErrorCodes(r *kmsg.EndTxnResponse, f func(int16)) { f(r.ErrorCode) }
