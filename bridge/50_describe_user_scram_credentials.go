package bridge

// DescribeUserScramCredentials: v0-v0
//
// Behavior:
//   - Answered from the SCRAM store (auth.ScramLog): the credential file
//     (sasl.scram_file) with AlterUserScramCredentials' changes kept in
//     Iggy applied over it, read to the end first. No user named: every
//     user with a credential; a named user without one RESOURCE_NOT_FOUND,
//     one named twice DUPLICATE_RESOURCE, with Kafka's messages. Mechanism
//     and iterations only (never salt or keys).
//
// Version notes: v0 flexible.
//
// Iggy commands: POLL_MESSAGES (__kafka_iggy/scram_credentials, to its end).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *Bridge) describeUserScramCredentialsAPI() API {
	return API{Key: 50, Name: "DescribeUserScramCredentials", MinVersion: 0, MaxVersion: 0, Handle: b.handleDescribeUserScram,
		ErrorCodes: errorCodes(func(r *kmsg.DescribeUserSCRAMCredentialsResponse, f func(int16)) {
			f(r.ErrorCode)
			for _, u := range r.Results {
				f(u.ErrorCode)
			}
		})}
}

func init() { registerAPI((*Bridge).describeUserScramCredentialsAPI) }

func (b *Bridge) handleDescribeUserScram(ctx context.Context, rq *Request) (kmsg.Response, error) {
	req := rq.Msg.(*kmsg.DescribeUserSCRAMCredentialsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
	b.scram.Describe(ctx, req, resp)
	return resp, nil
}
