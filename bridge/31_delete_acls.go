package bridge

// DeleteAcls: v1-v3
//
// Behavior:
//   - Every filter SECURITY_DISABLED with no matching ACL: without
//     per-principal authorization as Kafka without an authorizer ("No
//     Authorizer is configured."); with it the ACLs are the principals'
//     Iggy permissions, changed in Iggy, and the message says so.
//
// Version notes: v2 flexible.
//
// Iggy commands: none.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafka-iggy/kafka-iggy/auth"
)

func (b *Bridge) deleteACLsAPI() API {
	return API{Key: 31, Name: "DeleteAcls", MinVersion: 1, MaxVersion: 3, Handle: b.handleDeleteACLs,
		ErrorCodes: errorCodes(func(r *kmsg.DeleteACLsResponse, f func(int16)) {
			for _, c := range r.Results {
				f(c.ErrorCode)
			}
		})}
}

func init() { registerAPI((*Bridge).deleteACLsAPI) }

func (b *Bridge) handleDeleteACLs(_ context.Context, rq *Request) (kmsg.Response, error) {
	req := rq.Msg.(*kmsg.DeleteACLsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
	msg := auth.NoAuthorizer
	if b.users != nil {
		msg = auth.ACLsReadOnly
	}
	for range req.Filters {
		r := kmsg.NewDeleteACLsResponseResult()
		r.ErrorCode, r.ErrorMessage = kerr.SecurityDisabled.Code, &msg
		resp.Results = append(resp.Results, r)
	}
	return resp, nil
}
