package auth

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
)

// checkPlain parses a PLAIN token ([authzid] NUL authcid NUL passwd, RFC
// 4616) and checks it; it returns the user name.
func (a *Authenticator) checkPlain(ctx context.Context, token []byte) (user, pass string, err error) {
	parts := bytes.Split(token, []byte{0})
	if len(parts) != 3 {
		return "", "", errors.New("PLAIN token is not authzid NUL user NUL password")
	}
	authz, user, pass := string(parts[0]), string(parts[1]), string(parts[2])
	if user == "" || pass == "" {
		return user, "", errors.New("PLAIN token with an empty user name or password")
	}
	if authz != "" && authz != user {
		return user, "", errors.New("PLAIN authorization id differs from the user name")
	}
	return user, pass, a.cfg.Plain.CheckPlain(ctx, user, pass)
}

// StaticUsers checks PLAIN credentials against a fixed map of user name to
// password, in constant time per user (an unknown user is compared with a
// dummy, so the answer time does not tell which users exist).
type StaticUsers map[string]string

// CheckPlain implements PlainChecker.
func (u StaticUsers) CheckPlain(_ context.Context, user, password string) error {
	want, ok := u[user]
	got := sha256.Sum256([]byte(password))
	exp := sha256.Sum256([]byte(want))
	if subtle.ConstantTimeCompare(got[:], exp[:]) != 1 || !ok {
		return ErrBadCredentials
	}
	return nil
}

// IggyLogin checks PLAIN credentials by logging in to Iggy as the user on
// a fresh connection, closed at once. Nothing is cached: every
// authentication asks Iggy, so a changed or deleted Iggy user is refused
// at its next authentication.
type IggyLogin struct {
	base    iggy.Config
	timeout time.Duration
}

// NewIggyLogin returns a checker that logs in to the Iggy server of base
// (its address, protocol and TLS; its credentials are replaced by the
// client's), each login bounded by base.ConnectTimeout.
func NewIggyLogin(base iggy.Config) *IggyLogin {
	base.PersonalAccessToken = ""
	base.PoolSize = 1
	t := base.ConnectTimeout
	if t <= 0 {
		t = 10 * time.Second
	}
	return &IggyLogin{base: base, timeout: t}
}

// CheckPlain implements PlainChecker.
func (l *IggyLogin) CheckPlain(ctx context.Context, user, password string) error {
	cfg := l.base
	cfg.Username, cfg.Password = user, password
	c, err := iggy.New(cfg, zerolog.Nop())
	if err != nil {
		// A user name or password Iggy could never accept (length).
		return ErrBadCredentials
	}
	defer func() { _ = c.Close() }()
	ctx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	err = c.Start(ctx)
	switch {
	case err == nil:
		return nil
	case iggy.IsUnauthorized(err):
		return ErrBadCredentials
	default:
		return fmt.Errorf("iggy login unavailable: %w", err)
	}
}

// LoadIggyUsers reads the principal -> Iggy user file of
// sasl.iggy_users_file: one line per principal, `<principal> user
// <iggy-user> <password>` or `<principal> token <personal-access-token>`,
// blank lines and # comments ignored. Errors name the line, never a secret.
func LoadIggyUsers(path string) (map[string]iggy.Credential, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := map[string]iggy.Credential{}
	for i, line := range strings.Split(string(raw), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		var c iggy.Credential
		switch {
		case len(f) == 4 && f[1] == "user":
			c = iggy.Credential{Username: f[2], Password: f[3]}
		case len(f) == 3 && f[1] == "token":
			c = iggy.Credential{Token: f[2]}
		default:
			return nil, fmt.Errorf("line %d: want `<principal> user <iggy-user> <password>` or `<principal> token <token>`", i+1)
		}
		if _, dup := out[f[0]]; dup {
			return nil, fmt.Errorf("line %d: principal %q listed twice", i+1, f[0])
		}
		out[f[0]] = c
	}
	return out, nil
}
