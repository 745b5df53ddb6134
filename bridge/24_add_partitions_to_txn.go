package bridge

// AddPartitionsToTxn: v0-v5
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
//   - v4-v5, the batched form Kafka's brokers send (KIP-890), served as
//     Kafka 4.4 serves it (txn.Frontend.AddPartitionsBatch): per
//     transaction, VerifyOnly answers whether each partition is in the
//     open transaction (not: TRANSACTION_ABORTABLE, at v4 too, as Kafka;
//     producer errors as above), else the partitions are added as above.
//     Kafka 4.x clients never send it: under transaction protocol v2 the
//     Produce adds its partitions (00_produce.go).
//
// Version notes: v1 no wire change; v2 PRODUCER_FENCED; v3 flexible; v4
// transactions batched, VerifyOnly; v5 TRANSACTION_ABORTABLE.
//
// Iggy commands: POLL_MESSAGES, SEND_MESSAGES on __kafka_iggy/transactions;
// GET_TOPIC per topic.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *Bridge) addPartitionsToTxnAPI() API {
	return API{Key: 24, Name: "AddPartitionsToTxn", MinVersion: 0, MaxVersion: 5, Handle: b.handleAddPartitionsToTxn, ErrorCodes: errorCodes(addPartitionsToTxnErrorCodes)}
}

func init() { registerAPI((*Bridge).addPartitionsToTxnAPI) }

func (b *Bridge) handleAddPartitionsToTxn(ctx context.Context, rq *Request) (kmsg.Response, error) {
	req := rq.Msg.(*kmsg.AddPartitionsToTxnRequest)
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	if rq.Version >= 4 {
		b.txns.AddPartitionsBatch(ctx, rq.Version, req, resp)
	} else {
		b.txns.AddPartitions(ctx, rq.Version, req, resp)
	}
	return resp, nil
}

// addPartitionsToTxnErrorCodes walks a AddPartitionsToTxn response for the metrics.
func addPartitionsToTxnErrorCodes(r *kmsg.AddPartitionsToTxnResponse, f func(int16)) {
	for _, tx := range r.Transactions {
		for _, t := range tx.Topics {
			for _, p := range t.Partitions {
				f(p.ErrorCode)
			}
		}
	}
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			f(p.ErrorCode)
		}
	}
}
