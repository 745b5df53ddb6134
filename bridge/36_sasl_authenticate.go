package bridge

// SaslAuthenticate: v0-v2
//
// Behavior:
// * Carries one SASL token of the mechanism the connection's SaslHandshake
//   chose to the connection's auth.Session (see 17_sasl_handshake.go) and
//   answers with the server's token: PLAIN completes in one request, SCRAM
//   in two (server-first, then server-final).
// * Wrong credentials: SASL_AUTHENTICATION_FAILED (58) with a message,
//   answered after sasl.failure_delay; the attempt is counted per remote
//   address (kafka_iggy_sasl_failures_total) and logged without the
//   secret. The connection then serves nothing more.
// * After authentication completed (without a new SaslHandshake):
//   ILLEGAL_SASL_STATE (34), the connection stays, as KafkaApis answers.
// * On a listener without sasl: ILLEGAL_SASL_STATE (34).
//
// Version notes:
// * v1: SessionLifetimeMillis (KIP-368): sasl.session_lifetime in
//   milliseconds (0: none). The front door closes a connection that sends
//   a request past it without re-authenticating, whatever its version.
// * v2: flexible.
//
// Iggy commands: LOGIN_USER (PLAIN with sasl.mode iggy, on a connection of
// its own)

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafka-iggy/kafka-iggy/auth"
)

func saslAuthenticateAPI(*Bridge) API {
	return API{Key: 36, Name: "SaslAuthenticate", MinVersion: 0, MaxVersion: 2, Handle: handleSaslAuthenticate,
		ErrorCodes: errorCodes(func(r *kmsg.SASLAuthenticateResponse, f func(int16)) { f(r.ErrorCode) })}
}

func init() { registerAPI(saslAuthenticateAPI) }

func handleSaslAuthenticate(ctx context.Context, rq *Request) (kmsg.Response, error) {
	req := rq.Msg.(*kmsg.SASLAuthenticateRequest)
	resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	resp.SASLAuthBytes = []byte{}
	s := auth.FromContext(ctx)
	if s == nil {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		msg := "SASL is not enabled on this listener"
		resp.ErrorMessage = &msg
		return resp, nil
	}
	r := s.Authenticate(ctx, req.SASLAuthBytes, time.Now())
	resp.ErrorCode = r.Code
	if r.Code != 0 {
		resp.ErrorMessage = &r.Message
		return resp, nil
	}
	if r.Token != nil {
		resp.SASLAuthBytes = r.Token
	}
	resp.SessionLifetimeMillis = r.LifetimeMillis
	return resp, nil
}
