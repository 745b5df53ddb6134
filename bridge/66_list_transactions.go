package bridge

// ListTransactions: v0-v1
//
// Behavior (bridge/txn): every transactional id known to the coordinators
// of the domain (each owner lists its own), filtered by state names (unknown
// names come back in UnknownStateFilters), producer ids and, v1, the
// minimum duration of an Ongoing transaction (KIP-994). Sorted by id.
//
// Iggy commands: POLL_MESSAGES on __kafka_iggy/transactions.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *Bridge) listTransactionsAPI() API {
	return API{Key: 66, Name: "ListTransactions", MinVersion: 0, MaxVersion: 1, Handle: b.handleListTransactions, ErrorCodes: errorCodes(listTransactionsErrorCodes)}
}

func init() { registerAPI((*Bridge).listTransactionsAPI) }

func (b *Bridge) handleListTransactions(ctx context.Context, rq *Request) (kmsg.Response, error) {
	req := rq.Msg.(*kmsg.ListTransactionsRequest)
	resp := req.ResponseKind().(*kmsg.ListTransactionsResponse)
	b.txns.List(ctx, rq.Version, req, resp)
	return resp, nil
}

// listTransactionsErrorCodes walks a ListTransactions response for the metrics.
func listTransactionsErrorCodes(r *kmsg.ListTransactionsResponse, f func(int16)) { f(r.ErrorCode) }
