package bridge

// AddOffsetsToTxn: v0-v4
//
// Behavior (bridge/txn): the group joins the producer's transaction at its
// coordinator (starting one when none is open); when the transaction
// ends, the coordinator resolves the group's transactional offsets
// (txn.GroupOffsets: visible on commit, dropped on abort). Empty group id:
// INVALID_GROUP_ID (24). Producer errors as AddPartitionsToTxn.
//
// Version notes: v1 no wire change; v2 PRODUCER_FENCED; v3 flexible; v4 no
// wire change (TRANSACTION_ABORTABLE, never sent).
//
// Iggy commands: POLL_MESSAGES, SEND_MESSAGES on __kafka_iggy/transactions.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *Bridge) addOffsetsToTxnAPI() API {
	return API{Key: 25, Name: "AddOffsetsToTxn", MinVersion: 0, MaxVersion: 4, Handle: b.handleAddOffsetsToTxn, ErrorCodes: errorCodes(addOffsetsToTxnErrorCodes)}
}

func init() { registerAPI((*Bridge).addOffsetsToTxnAPI) }

func (b *Bridge) handleAddOffsetsToTxn(ctx context.Context, rq *Request) (kmsg.Response, error) {
	req := rq.Msg.(*kmsg.AddOffsetsToTxnRequest)
	resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
	b.txns.AddOffsets(ctx, rq.Version, req, resp)
	return resp, nil
}

// addOffsetsToTxnErrorCodes walks a AddOffsetsToTxn response for the metrics.
func addOffsetsToTxnErrorCodes(r *kmsg.AddOffsetsToTxnResponse, f func(int16)) { f(r.ErrorCode) }
