package auth

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
)

// state is where a connection is in SASL.
type state uint8

const (
	// stInitial: nothing but ApiVersions and SaslHandshake yet.
	stInitial state = iota
	// stHandshook: a mechanism was chosen; its first token is awaited.
	stHandshook
	// stExchanging: a multi-step mechanism (SCRAM) awaits its next token.
	stExchanging
	// stAuthenticated: a principal is established.
	stAuthenticated
	// stFailed: authentication failed; every further request closes.
	stFailed
)

// Errors returned by Session.Gate: the request must not be served and the
// connection is closed without an answer, as Kafka's
// SaslServerAuthenticator does.
var (
	// ErrUnauthenticated: a request other than ApiVersions and the SASL
	// ones before authentication ("Unexpected Kafka request of type X
	// during SASL handshake").
	ErrUnauthenticated = errors.New("unexpected request before SASL authentication")
	// ErrSessionExpired: the KIP-368 session lifetime passed without a
	// re-authentication.
	ErrSessionExpired = errors.New("SASL session expired without re-authentication")
	// ErrAuthFailed: authentication failed earlier on this connection.
	ErrAuthFailed = errors.New("SASL authentication failed on this connection")
	// ErrIllegalState: a SASL request out of order.
	ErrIllegalState = errors.New("SASL request out of order")
)

// Session is the SASL state of one connection. Its requests are served one
// at a time in order, but the methods lock anyway.
type Session struct {
	a      *Authenticator
	remote string // ip:port, logged
	host   string // ip, the metric label

	mu        sync.Mutex
	st        state
	mech      string // chosen by the latest handshake
	scram     *scramExchange
	principal string // "" until the first authentication
	// cred is how the principal logs in to Iggy (nil: it has no Iggy
	// user; see Config.IggyUsers).
	cred    *iggy.Credential
	expires time.Time // zero: no session lifetime
	// oauthErr is an OAUTHBEARER token's refusal sent as the RFC 7628
	// error challenge; the client's next message (%x01) gets the failure.
	oauthErr error
}

// Principal returns the authenticated user name ("" before).
func (s *Session) Principal() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.principal
}

// Bind returns ctx bound to the Iggy session pool of the principal of
// ctx's connection: the SASL principal's, or without SASL the TLS client
// certificate's when its connection was opened with CertUsers (users nil,
// not authenticated yet, or an unbound connection: ctx unchanged). A
// principal without an Iggy user gets a context whose Iggy calls are
// refused as unauthorized.
func Bind(ctx context.Context, users *iggy.Users) context.Context {
	if users == nil {
		return ctx
	}
	s := FromContext(ctx)
	if s == nil {
		tp, _ := ctx.Value(tlsKey{}).(tlsPrincipal)
		switch {
		case !tp.bound:
			return ctx
		case tp.cred == nil:
			return iggy.Refused(ctx, iggy.ErrNoIggyUser)
		}
		return users.Bind(ctx, *tp.cred)
	}
	s.mu.Lock()
	principal, cred := s.principal, s.cred
	s.mu.Unlock()
	switch {
	case principal == "":
		return ctx
	case cred == nil:
		return iggy.Refused(ctx, iggy.ErrNoIggyUser)
	}
	return users.Bind(ctx, *cred)
}

// Gate reports whether a request of key may be served now; an error means
// it may not, and the connection is to be closed without an answer.
func (s *Session) Gate(key int16, now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.st == stFailed {
		return ErrAuthFailed
	}
	switch kmsg.Key(key) {
	case kmsg.ApiVersions:
		return nil
	case kmsg.SASLHandshake:
		if s.st == stInitial || s.st == stAuthenticated {
			return nil
		}
		return fmt.Errorf("%w: SaslHandshake while a mechanism exchange is under way", ErrIllegalState)
	case kmsg.SASLAuthenticate:
		if s.st == stInitial {
			return fmt.Errorf("%w: SaslAuthenticate before SaslHandshake", ErrIllegalState)
		}
		return nil // once authenticated, answered ILLEGAL_SASL_STATE as KafkaApis does
	}
	if s.principal == "" {
		return fmt.Errorf("%w: %s", ErrUnauthenticated, kmsg.NameForKey(key))
	}
	if !s.expires.IsZero() && now.After(s.expires) {
		return ErrSessionExpired
	}
	return nil
}

// Handshake serves SaslHandshake: it chooses mechanism for the next
// SaslAuthenticate and returns the error code to answer (0,
// UNSUPPORTED_SASL_MECHANISM or ILLEGAL_SASL_STATE) and the offered
// mechanisms, which every answer lists.
func (s *Session) Handshake(mechanism string) (code int16, offered []string) {
	offered = s.a.cfg.Mechanisms
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.st != stInitial && s.st != stAuthenticated:
		s.st = stFailed
		return kerr.IllegalSaslState.Code, offered
	case !s.a.offers(mechanism):
		s.st = stFailed
		s.a.log.Warn().Str("remote", s.remote).Str("mechanism", mechanism).Msg("sasl: unsupported mechanism")
		s.a.cfg.Metrics.Failed(s.host, "unsupported")
		return kerr.UnsupportedSaslMechanism.Code, offered
	case s.principal != "" && mechanism != s.mech:
		// KIP-368: a re-authentication keeps the mechanism.
		s.st = stFailed
		return kerr.IllegalSaslState.Code, offered
	}
	s.mech, s.st, s.scram, s.oauthErr = mechanism, stHandshook, nil, nil
	return 0, offered
}

// Result is the answer to one SaslAuthenticate.
type Result struct {
	// Code is the Kafka error code (0 success or a step of the exchange).
	Code int16
	// Message is the error message of a non-zero code.
	Message string
	// Token is the server's SASL token (SCRAM's server-first and
	// server-final messages).
	Token []byte
	// LifetimeMillis is the KIP-368 session lifetime of a completed
	// authentication (0: none), reported from v1.
	LifetimeMillis int64
}

// Authenticate serves SaslAuthenticate with the client's token.
func (s *Session) Authenticate(ctx context.Context, token []byte, now time.Time) Result {
	s.mu.Lock()
	st, mech, oauthErr := s.st, s.mech, s.oauthErr
	s.mu.Unlock()
	switch st {
	case stHandshook, stExchanging:
	case stAuthenticated:
		return Result{Code: kerr.IllegalSaslState.Code, Message: "SaslAuthenticate after authentication completed; send SaslHandshake first to re-authenticate"}
	default:
		return Result{Code: kerr.IllegalSaslState.Code, Message: "SaslAuthenticate before SaslHandshake"}
	}
	var user, pass string
	var out []byte
	var err error
	var tokenExpiry time.Time
	switch mech {
	case Plain:
		user, pass, err = s.a.checkPlain(ctx, token)
	case OAuthBearer:
		if oauthErr != nil {
			// The client's answer to the error challenge (RFC 7628
			// 3.2.3: %x01): the authentication fails now, as Kafka's.
			return s.refuse(ctx, mech, "", oauthErr)
		}
		var bearer string
		if bearer, err = parseOAuthMessage(token); err == nil {
			user, tokenExpiry, err = s.a.cfg.OAuth.validate(bearer, now)
			if errors.Is(err, errBadToken) {
				// Kafka answers a refused token with the error as a
				// server challenge and fails at the client's next
				// message; franz-go and kafka-clients expect that.
				s.mu.Lock()
				s.st, s.oauthErr = stExchanging, err
				s.mu.Unlock()
				return Result{Token: []byte(oauthInvalidToken)}
			}
		}
	default:
		var done bool
		out, user, done, err = s.scramStep(mech, token)
		if err == nil && !done {
			return Result{Token: out}
		}
	}
	if err != nil {
		return s.refuse(ctx, mech, user, err)
	}
	s.mu.Lock()
	if s.principal != "" && s.principal != user {
		s.mu.Unlock()
		return s.refuse(ctx, mech, user, errors.New("cannot change principals during re-authentication"))
	}
	reauth := s.principal != ""
	s.principal, s.st, s.scram = user, stAuthenticated, nil
	s.cred = s.a.iggyUser(mech, user, pass)
	lifetime := s.a.cfg.SessionLifetime
	if !tokenExpiry.IsZero() && (lifetime == 0 || tokenExpiry.Sub(now) < lifetime) {
		// A token's session ends with the token (KIP-368).
		lifetime = max(tokenExpiry.Sub(now), time.Millisecond)
	}
	s.expires = time.Time{}
	if lifetime > 0 {
		s.expires = now.Add(lifetime)
	}
	s.mu.Unlock()
	s.a.cfg.Metrics.Succeeded(mech)
	s.a.log.Debug().Str("remote", s.remote).Str("mechanism", mech).Str("principal", user).Bool("reauthentication", reauth).Msg("sasl: authenticated")
	return Result{Token: out, LifetimeMillis: lifetime.Milliseconds()}
}

// refuse fails the connection's authentication: the answer waits the
// fixed failure delay, the attempt is counted and logged (user name, never
// the secret).
func (s *Session) refuse(ctx context.Context, mech, user string, cause error) Result {
	s.mu.Lock()
	s.st, s.scram, s.oauthErr = stFailed, nil, nil
	s.mu.Unlock()
	s.a.cfg.Metrics.Failed(s.host, mech)
	s.a.log.Warn().Str("remote", s.remote).Str("mechanism", mech).Str("user", user).Str("reason", cause.Error()).Msg("sasl: authentication failed")
	if d := s.a.cfg.FailureDelay; d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
	}
	msg := fmt.Sprintf("Authentication failed: invalid credentials with SASL mechanism %s", mech)
	if errors.Is(cause, errBadToken) {
		// Kafka's message is the RFC 7628 error status alone (the
		// reason is in the log).
		msg = oauthInvalidToken
	} else if !errors.Is(cause, ErrBadCredentials) && !errors.Is(cause, errScramProof) {
		msg = fmt.Sprintf("Authentication failed with SASL mechanism %s: %v", mech, cause)
	}
	return Result{Code: kerr.SaslAuthenticationFailed.Code, Message: msg}
}

// scramStep runs one step of a SCRAM exchange.
func (s *Session) scramStep(mech string, token []byte) (out []byte, user string, done bool, err error) {
	s.mu.Lock()
	ex := s.scram
	s.mu.Unlock()
	if ex == nil {
		ex, out, err = s.a.cfg.Scram.first(mech, token)
		if err != nil {
			return nil, "", false, err
		}
		s.mu.Lock()
		s.scram, s.st = ex, stExchanging
		s.mu.Unlock()
		return out, ex.user, false, nil
	}
	out, err = ex.final(token)
	return out, ex.user, err == nil, err
}

// offers reports whether mechanism is offered.
func (a *Authenticator) offers(mechanism string) bool {
	for _, m := range a.cfg.Mechanisms {
		if m == mechanism {
			return true
		}
	}
	return false
}
