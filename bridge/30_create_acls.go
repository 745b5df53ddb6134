package bridge

// CreateAcls: v1-v3
//
// Behavior:
//   - Every creation SECURITY_DISABLED: without per-principal
//     authorization as Kafka without an authorizer ("No Authorizer is
//     configured."); with it the ACLs are the principals' Iggy permissions,
//     changed in Iggy, and the message says so. Nothing is stored.
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

func (b *Bridge) createACLsAPI() API {
	return API{Key: 30, Name: "CreateAcls", MinVersion: 1, MaxVersion: 3, Handle: b.handleCreateACLs,
		ErrorCodes: errorCodes(func(r *kmsg.CreateACLsResponse, f func(int16)) {
			for _, c := range r.Results {
				f(c.ErrorCode)
			}
		})}
}

func init() { registerAPI((*Bridge).createACLsAPI) }

func (b *Bridge) handleCreateACLs(_ context.Context, rq *Request) (kmsg.Response, error) {
	req := rq.Msg.(*kmsg.CreateACLsRequest)
	resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
	msg := auth.NoAuthorizer
	if b.users != nil {
		msg = auth.ACLsReadOnly
	}
	for range req.Creations {
		r := kmsg.NewCreateACLsResponseResult()
		r.ErrorCode, r.ErrorMessage = kerr.SecurityDisabled.Code, &msg
		resp.Results = append(resp.Results, r)
	}
	return resp, nil
}
