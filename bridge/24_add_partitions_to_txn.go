package bridge

// AddPartitionsToTxn: v0-v3
//
// Behavior (bridge/txn, docs/ARCHITECTURE.md "Transactions"):
//   - Every partition is checked first (UNKNOWN_TOPIC_OR_PARTITION for one
//     that does not exist); when one fails, nothing is added and the others
//     answer OPERATION_NOT_ATTEMPTED (55), as Kafka does.
//   - The transactional id's coordinator (local, or the owner of its shard)
//     adds them to the producer's transaction, starting one (the next
//     transaction sequence) when none is open, and appends the id's state
//     to its decision log before answering. Unknown id or another producer
//     id: INVALID_PRODUCER_ID_MAPPING (49); another epoch: PRODUCER_FENCED
//     (90; before v2 INVALID_PRODUCER_EPOCH); Iggy unreachable:
//     COORDINATOR_LOAD_IN_PROGRESS. Only then does this sidecar admit the
//     producer's transactional batches for them (txn.Gate).
//
// Version notes: v1 no wire change; v2 PRODUCER_FENCED; v3 flexible. v4+
// (the brokers' batched form) is not served.
//
// Iggy commands: POLL_MESSAGES, SEND_MESSAGES on __kafka_iggy/transactions;
// GET_TOPIC per topic.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *Bridge) addPartitionsToTxnAPI() API {
	return API{Key: 24, Name: "AddPartitionsToTxn", MinVersion: 0, MaxVersion: 3, Handle: b.handleAddPartitionsToTxn, ErrorCodes: errorCodes(addPartitionsToTxnErrorCodes)}
}

func init() { registerAPI((*Bridge).addPartitionsToTxnAPI) }

func (b *Bridge) handleAddPartitionsToTxn(ctx context.Context, rq *Request) (kmsg.Response, error) {
	req := rq.Msg.(*kmsg.AddPartitionsToTxnRequest)
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	b.txns.AddPartitions(ctx, rq.Version, req, resp)
	return resp, nil
}

// addPartitionsToTxnErrorCodes walks a AddPartitionsToTxn response for the metrics.
func addPartitionsToTxnErrorCodes(r *kmsg.AddPartitionsToTxnResponse, f func(int16)) {
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			f(p.ErrorCode)
		}
	}
}
