package bridge

// SaslHandshake: v0-v1
//
// Behavior:
// * Chooses the mechanism of the connection's next SaslAuthenticate. The
//   SASL state lives in package auth; the front door (package proxy) puts
//   the connection's auth.Session in the handler's context when sasl is
//   enabled and, before authentication, serves nothing but ApiVersions,
//   SaslHandshake and SaslAuthenticate (anything else closes the
//   connection unanswered, as Kafka's SaslServerAuthenticator does).
// * A mechanism not offered: UNSUPPORTED_SASL_MECHANISM (33) with the
//   offered list; the connection's authentication has failed.
// * On an authenticated connection it starts a KIP-368 re-authentication,
//   which must keep the mechanism (else ILLEGAL_SASL_STATE).
// * On a listener without sasl: ILLEGAL_SASL_STATE (34) and the empty
//   list, as Kafka answers on a PLAINTEXT listener.
//
// Version notes:
// * v0: the SASL tokens that follow go unframed on the wire (no Kafka
//   header). Not served: that mode is only used by clients whose broker
//   lacks SaslAuthenticate, and this gateway advertises it (franz-go and
//   kafka-clients use v1 + SaslAuthenticate then). A raw token after a v0
//   handshake fails as a malformed request and closes the connection.
// * v1: the tokens travel in SaslAuthenticate requests.
//
// Iggy commands: none

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafka-iggy/kafka-iggy/auth"
)

func saslHandshakeAPI(*Bridge) API {
	return API{Key: 17, Name: "SaslHandshake", MinVersion: 0, MaxVersion: 1, Handle: handleSaslHandshake,
		ErrorCodes: errorCodes(func(r *kmsg.SASLHandshakeResponse, f func(int16)) { f(r.ErrorCode) })}
}

func init() { registerAPI(saslHandshakeAPI) }

func handleSaslHandshake(ctx context.Context, rq *Request) (kmsg.Response, error) {
	req := rq.Msg.(*kmsg.SASLHandshakeRequest)
	resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
	s := auth.FromContext(ctx)
	if s == nil {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		resp.SupportedMechanisms = []string{}
		return resp, nil
	}
	resp.ErrorCode, resp.SupportedMechanisms = s.Handshake(req.Mechanism)
	return resp, nil
}
