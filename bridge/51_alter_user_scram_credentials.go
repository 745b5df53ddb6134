package bridge

// AlterUserScramCredentials: v0-v0
//
// Behavior:
//   - Changes the SCRAM store (auth.ScramLog) as Kafka's controller does:
//     one result per user; a user altered twice in one request
//     DUPLICATE_RESOURCE, an unknown mechanism UNSUPPORTED_SASL_MECHANISM,
//     iterations outside 4096-16384 UNACCEPTABLE_CREDENTIAL, deleting a
//     missing credential RESOURCE_NOT_FOUND. An accepted change is one
//     record of the log in Iggy every sidecar reads (authentications see it
//     within a second); the salted password is turned into StoredKey and
//     ServerKey and not kept. Iggy unreachable: COORDINATOR_NOT_AVAILABLE.
//
// Version notes: v0 flexible.
//
// Iggy commands: POLL_MESSAGES, SEND_MESSAGES (__kafka_iggy/scram_credentials;
// CREATE_STREAM/CREATE_TOPIC on first use).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *Bridge) alterUserScramCredentialsAPI() API {
	return API{Key: 51, Name: "AlterUserScramCredentials", MinVersion: 0, MaxVersion: 0, Handle: b.handleAlterUserScram,
		ErrorCodes: errorCodes(func(r *kmsg.AlterUserSCRAMCredentialsResponse, f func(int16)) {
			for _, u := range r.Results {
				f(u.ErrorCode)
			}
		})}
}

func init() { registerAPI((*Bridge).alterUserScramCredentialsAPI) }

func (b *Bridge) handleAlterUserScram(ctx context.Context, rq *Request) (kmsg.Response, error) {
	req := rq.Msg.(*kmsg.AlterUserSCRAMCredentialsRequest)
	resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	b.scram.Alter(ctx, req, resp)
	return resp, nil
}
