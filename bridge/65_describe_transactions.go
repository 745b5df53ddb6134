package bridge

// DescribeTransactions: v0
//
// Behavior (bridge/txn): each transactional id's state at its coordinator:
// state name (Kafka's), producer id and epoch, timeout, start time (-1
// without a transaction) and partitions. Unknown id:
// TRANSACTIONAL_ID_NOT_FOUND (105).
//
// Iggy commands: POLL_MESSAGES on __kafka_iggy/transactions.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *Bridge) describeTransactionsAPI() API {
	return API{Key: 65, Name: "DescribeTransactions", MinVersion: 0, MaxVersion: 0, Handle: b.handleDescribeTransactions, ErrorCodes: errorCodes(describeTransactionsErrorCodes)}
}

func init() { registerAPI((*Bridge).describeTransactionsAPI) }

func (b *Bridge) handleDescribeTransactions(ctx context.Context, rq *Request) (kmsg.Response, error) {
	req := rq.Msg.(*kmsg.DescribeTransactionsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	b.txns.Describe(ctx, req, resp)
	return resp, nil
}

// describeTransactionsErrorCodes walks a DescribeTransactions response for the metrics.
func describeTransactionsErrorCodes(r *kmsg.DescribeTransactionsResponse, f func(int16)) {
	for _, s := range r.TransactionStates {
		f(s.ErrorCode)
	}
}
