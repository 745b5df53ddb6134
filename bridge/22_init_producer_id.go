package bridge

// InitProducerID: v0-v5
//
// Behavior (KAFKA-ON-IGGY §4):
//   - No transactional id (null): a new producer id, epoch 0, error 0,
//     from a block of 2^20 ids leased from Iggy (bridge/producers/lease.go), unique
//     across restarts and sidecars. When no block can be leased (Iggy
//     unreachable): COORDINATOR_LOAD_IN_PROGRESS (14), producer id -1, as
//     Kafka answers while it has no block (KIP-730); clients retry. As on
//     a broker, a request without a transactional id always gets a new id,
//     whatever ProducerID and ProducerEpoch (v3+) it carries: idempotent
//     producers bump their epoch themselves (KIP-360) and call
//     InitProducerId only to start over.
//   - A transactional id: its coordinator (bridge/txn, across sidecars the
//     owner of the id's shard) gives the id's producer id (leased as
//     above, kept in the decision log) and the next epoch; an open
//     transaction of the previous epoch is aborted first (fenced).
//     TransactionTimeoutMillis above transactions.max_timeout, or not
//     above 0: INVALID_TRANSACTION_TIMEOUT (50). v3+ with a ProducerID and
//     epoch that are not the id's current ones: PRODUCER_FENCED (90; before
//     v4 INVALID_PRODUCER_EPOCH). Iggy unreachable:
//     COORDINATOR_LOAD_IN_PROGRESS. An empty transactional id:
//     INVALID_REQUEST (42), as Kafka answers.
//   - TransactionTimeoutMillis is ignored without a transactional id.
//
// Version notes: v1 throttle switch; v2 flexible; v3 ProducerID and
// ProducerEpoch in the request (KIP-360); v4 and v5 no wire change.
//
// Iggy commands: transactional: POLL_MESSAGES and SEND_MESSAGES on
// __kafka_iggy/transactions (bridge/txn), markers (SEND_MESSAGES) when an
// open transaction is aborted. Once per 2^20 ids (and once per process), GET_TOPIC and
// SEND_MESSAGES on __kafka_iggy/producer_ids (CREATE_STREAM and
// CREATE_TOPIC the first time).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *Bridge) initProducerIDAPI() API {
	return API{Key: 22, Name: "InitProducerId", MinVersion: 0, MaxVersion: 5, Handle: b.handleInitProducerID, ErrorCodes: errorCodes(initProducerIDErrorCodes)}
}

func init() { registerAPI((*Bridge).initProducerIDAPI) }

func (b *Bridge) handleInitProducerID(ctx context.Context, rq *Request) (kmsg.Response, error) {
	req := rq.Msg.(*kmsg.InitProducerIDRequest)
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	if req.TransactionalID != nil {
		resp.ProducerID, resp.ProducerEpoch = -1, -1
		if resp.ErrorCode = kerr.InvalidRequest.Code; *req.TransactionalID != "" {
			b.txns.InitProducerID(ctx, rq.Version, req, resp)
		}
		return resp, nil
	}
	id, err := b.pids.NewID(ctx)
	if err != nil {
		// Kafka's answer when no producer id block is available yet
		// (KIP-730): clients retry.
		resp.ErrorCode = kerr.CoordinatorLoadInProgress.Code
		resp.ProducerID, resp.ProducerEpoch = -1, -1
		b.log.Warn().Err(err).Uint64("conn_id", rq.ConnID).Int32("corr_id", rq.CorrID).
			Msg("init producer id: leasing a producer id block from iggy failed")
		return resp, nil
	}
	resp.ProducerID = id
	resp.ProducerEpoch = 0
	return resp, nil
}

// initProducerIDErrorCodes walks a InitProducerID response for the metrics.
func initProducerIDErrorCodes(r *kmsg.InitProducerIDResponse, f func(int16)) {
	f(r.ErrorCode)
}
