// Package auth authenticates Kafka clients on the Kafka listener: the SASL
// state machine of one connection (SaslHandshake, SaslAuthenticate, KIP-368
// re-authentication) and the mechanisms PLAIN (checked by an Iggy login as
// the user, or against a static list), SCRAM-SHA-256/512 (terminated
// here, from credentials stored as Kafka stores them) and OAUTHBEARER
// (JWTs validated against a JWKS).
//
// The front door (package proxy) gives every connection a Session when
// SASL is enabled, puts it in the connection's context (NewContext) and
// asks Session.Gate before serving each request; the SaslHandshake and
// SaslAuthenticate rows of the bridge's Table find it with FromContext.
package auth

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"time"

	"github.com/rs/zerolog"

	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
)

// Mechanism names as clients send them in SaslHandshake.
const (
	Plain       = "PLAIN"
	ScramSHA256 = "SCRAM-SHA-256"
	ScramSHA512 = "SCRAM-SHA-512"
)

// ErrBadCredentials is what a PlainChecker returns when it refuses the
// user name and password; any other error means the check could not be
// made (Iggy unreachable) and is reported to the client as such.
var ErrBadCredentials = errors.New("auth: invalid credentials")

// PlainChecker checks a PLAIN user name and password.
type PlainChecker interface {
	CheckPlain(ctx context.Context, user, password string) error
}

// Metrics receives authentication outcomes. Implementations must be safe
// for concurrent use.
type Metrics interface {
	// Failed counts a refused authentication from remote host (an IP
	// address, without port) with mechanism.
	Failed(host, mechanism string)
	// Succeeded counts an accepted authentication with mechanism.
	Succeeded(mechanism string)
}

// NopMetrics discards every measurement.
type NopMetrics struct{}

// Failed does nothing.
func (NopMetrics) Failed(string, string) {}

// Succeeded does nothing.
func (NopMetrics) Succeeded(string) {}

// Config is what an Authenticator serves.
type Config struct {
	// Mechanisms are the mechanisms offered, in the order listed in an
	// UNSUPPORTED_SASL_MECHANISM answer.
	Mechanisms []string
	// SessionLifetime is the KIP-368 session lifetime reported in
	// SaslAuthenticate v1+ and enforced: a connection that has not
	// re-authenticated within it is closed at its next request. 0: none.
	SessionLifetime time.Duration
	// FailureDelay is how long a refused SaslAuthenticate waits before it
	// is answered (Kafka's connection.failed.authentication.delay.ms).
	FailureDelay time.Duration
	// Plain checks PLAIN credentials; required when PLAIN is offered.
	Plain PlainChecker
	// Scram holds the SCRAM credentials; required when a SCRAM mechanism
	// is offered.
	Scram *ScramStore
	// OAuth validates OAUTHBEARER tokens; required when OAUTHBEARER is
	// offered.
	OAuth *OAuth
	// Metrics receives outcomes; nil means NopMetrics.
	Metrics Metrics
	// PlainIsIggyUser: a PLAIN principal is the Iggy user of the same name,
	// logged in with the password it authenticated with (PLAIN checked
	// by an Iggy login).
	PlainIsIggyUser bool
	// IggyUsers maps principals to the Iggy credentials their requests
	// run with (SCRAM, OAUTHBEARER and static PLAIN principals). A
	// principal in neither has no Iggy user: its requests are refused as
	// unauthorized (see Bind).
	IggyUsers map[string]iggy.Credential
}

// Authenticator is the listener-wide part of SASL: what is offered and
// how credentials are checked. Safe for concurrent use.
type Authenticator struct {
	cfg Config
	log zerolog.Logger
}

// New checks cfg and builds an Authenticator.
func New(cfg Config, log zerolog.Logger) (*Authenticator, error) {
	if len(cfg.Mechanisms) == 0 {
		return nil, errors.New("auth: no mechanism offered")
	}
	for _, m := range cfg.Mechanisms {
		switch m {
		case Plain:
			if cfg.Plain == nil {
				return nil, errors.New("auth: PLAIN offered without a checker")
			}
		case ScramSHA256, ScramSHA512:
			if cfg.Scram == nil {
				return nil, fmt.Errorf("auth: %s offered without a credential store", m)
			}
		case OAuthBearer:
			if cfg.OAuth == nil {
				return nil, errors.New("auth: OAUTHBEARER offered without a token validator")
			}
		default:
			return nil, fmt.Errorf("auth: unknown mechanism %q", m)
		}
	}
	if cfg.SessionLifetime < 0 || cfg.FailureDelay < 0 {
		return nil, errors.New("auth: negative session lifetime or failure delay")
	}
	if cfg.Metrics == nil {
		cfg.Metrics = NopMetrics{}
	}
	cfg.Mechanisms = slices.Clone(cfg.Mechanisms)
	return &Authenticator{cfg: cfg, log: log}, nil
}

// iggyUser is the Iggy credential of a principal that authenticated with
// mech (pass: the PLAIN password), nil when it has none.
func (a *Authenticator) iggyUser(mech, user, pass string) *iggy.Credential {
	if mech == Plain && a.cfg.PlainIsIggyUser {
		return &iggy.Credential{Username: user, Password: pass}
	}
	if c, ok := a.cfg.IggyUsers[user]; ok {
		return &c
	}
	return nil
}

// Mechanisms returns the offered mechanisms (a copy).
func (a *Authenticator) Mechanisms() []string { return slices.Clone(a.cfg.Mechanisms) }

// NewSession starts the SASL state of a connection from remote ("ip:port").
func (a *Authenticator) NewSession(remote string) *Session {
	host := remote
	if h, _, err := net.SplitHostPort(remote); err == nil {
		host = h
	}
	return &Session{a: a, remote: remote, host: host}
}

type ctxKey struct{}

// NewContext returns ctx carrying s.
func NewContext(ctx context.Context, s *Session) context.Context {
	return context.WithValue(ctx, ctxKey{}, s)
}

// FromContext returns the Session in ctx, nil when the listener does not
// authenticate.
func FromContext(ctx context.Context) *Session {
	s, _ := ctx.Value(ctxKey{}).(*Session)
	return s
}
