package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/rs/zerolog"
	"github.com/spf13/pflag"

	"github.com/kafka-iggy/kafka-iggy/auth"
	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
	"github.com/kafka-iggy/kafka-iggy/budget"
	"github.com/kafka-iggy/kafka-iggy/proxy/admin"
)

// newAuthenticator builds the Kafka listener's SASL from cfg.SASL.
func newAuthenticator(cfg Config, scram *auth.ScramStore, metrics *admin.Metrics, log zerolog.Logger) (*auth.Authenticator, error) {
	ac := auth.Config{
		Mechanisms:      cfg.SASL.Mechanisms,
		SessionLifetime: cfg.SASL.SessionLifetime,
		FailureDelay:    cfg.SASL.FailureDelay,
		Metrics:         auth.NewPrometheusMetrics(metrics.Registry()),
	}
	if cfg.SASL.Mode == SASLModeStatic {
		ac.Plain = auth.StaticUsers(cfg.SASL.Users)
	} else {
		ac.Plain = auth.NewIggyLogin(cfg.Iggy)
	}
	if cfg.SASL.ScramFile != "" {
		ac.Scram = scram
	}
	if o := cfg.SASL.OAuthBearer; slices.Contains(cfg.SASL.Mechanisms, SASLOAuthBearer) {
		var raw []byte
		if o.JWKS != "" {
			var err error
			if raw, err = auth.ReadJWKS(context.Background(), o.JWKS); err != nil {
				return nil, fmt.Errorf("sasl.oauthbearer.jwks: %w", err)
			}
		}
		var err error
		if ac.OAuth, err = auth.NewOAuth(auth.OAuthConfig{JWKS: raw, Issuer: o.Issuer, Audience: o.Audience,
			PrincipalClaim: o.PrincipalClaim, ClockSkew: o.ClockSkew, Unsecured: o.Unsecured}); err != nil {
			return nil, fmt.Errorf("sasl.oauthbearer.jwks: %w", err)
		}
		if o.Unsecured {
			log.Warn().Str("listener", cfg.Proxy.Listener.Address).Msg("sasl: sasl.oauthbearer.unsecured accepts unsigned OAUTHBEARER tokens (tests only)")
		}
	}
	if cfg.SASL.Authorization == SASLAuthorizationPrincipal {
		ac.PlainIsIggyUser = cfg.SASL.Mode == SASLModeIggy
		users, err := loadIggyUsers(cfg, log)
		if err != nil {
			return nil, err
		}
		ac.IggyUsers = users
	}
	a, err := auth.New(ac, log)
	if err != nil {
		return nil, fmt.Errorf("sasl: %w", err)
	}
	return a, nil
}

// loadIggyUsers reads sasl.iggy_users_file (nil without one).
func loadIggyUsers(cfg Config, log zerolog.Logger) (map[string]iggy.Credential, error) {
	f := cfg.SASL.IggyUsersFile
	if f == "" {
		return nil, nil
	}
	users, err := auth.LoadIggyUsers(f)
	if err != nil {
		return nil, fmt.Errorf("sasl.iggy_users_file: %w", err)
	}
	log.Info().Str("iggy_users_file", f).Int("principals", len(users)).Msg("principals mapped to Iggy users")
	return users, nil
}

// certUsers returns the Iggy users of TLS client-certificate principals
// (Config.CertPrincipalsBound), nil when their requests run as
// iggy.username.
func certUsers(cfg Config, log zerolog.Logger) (*auth.CertUsers, error) {
	if !cfg.CertPrincipalsBound() {
		return nil, nil
	}
	users, err := loadIggyUsers(cfg, log)
	if err != nil {
		return nil, err
	}
	return auth.NewCertUsers(users), nil
}

// loadScram returns the SCRAM store seeded from sasl.scram_file (empty
// without one); AlterUserScramCredentials' changes, kept in Iggy, are
// applied over it (auth.ScramLog).
func loadScram(cfg Config, log zerolog.Logger) (*auth.ScramStore, error) {
	if cfg.SASL.ScramFile == "" {
		return auth.NewScramStore(), nil
	}
	st, err := auth.LoadScramFile(cfg.SASL.ScramFile)
	if err != nil {
		return nil, fmt.Errorf("sasl.scram_file: %w", err)
	}
	log.Info().Str("scram_file", cfg.SASL.ScramFile).Int("credentials", st.Len()).Msg("sasl: SCRAM credentials loaded")
	return st, nil
}

// sessionBytes is what one principal session is charged to the memory
// budget: its frame, reply and message buffers at their usual high water.
const sessionBytes = 256 << 10

// principalPools returns the per-principal Iggy session pools of
// sasl.authorization principal (SASL principals, or client-certificate
// ones without SASL), nil when requests run as iggy.username.
func principalPools(cfg Config, client *iggy.Client, b *budget.Budget, log zerolog.Logger) *iggy.Users {
	if !(cfg.SASL.Enabled && cfg.SASL.Authorization == SASLAuthorizationPrincipal) && !cfg.CertPrincipalsBound() {
		return nil
	}
	p := cfg.SASL.Principals
	return iggy.NewUsers(client, iggy.UsersConfig{PoolSize: p.PoolSize, MaxPools: p.Max, IdleTimeout: p.IdleTimeout, SessionBytes: sessionBytes},
		b, log.With().Str("component", "principals").Logger())
}

// runScram is `kafka-iggy scram`: it reads a password (the first line of
// stdin, so it stays out of the process list and shell history) and prints
// the credential line of --user for sasl.scram_file.
func runScram(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("scram", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	user := fs.String("user", "", "user name (required)")
	mech := fs.String("mechanism", auth.ScramSHA512, "SCRAM-SHA-256 or SCRAM-SHA-512")
	iters := fs.Int("iterations", 8192, fmt.Sprintf("PBKDF2 iterations (at least %d)", auth.MinIterations))
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: kafka-iggy scram --user NAME [--mechanism SCRAM-SHA-512] [--iterations 8192] < password")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if err := scramLine(*user, *mech, *iters, stdin, stdout); err != nil {
		fmt.Fprintln(stderr, "kafka-iggy scram:", err)
		return 2
	}
	return 0
}

func scramLine(user, mech string, iters int, stdin io.Reader, stdout io.Writer) error {
	if user == "" || strings.ContainsAny(user, " \t\n") {
		return errors.New("--user: required, without spaces")
	}
	line, err := bufio.NewReader(stdin).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("reading the password from stdin: %w", err)
	}
	password := strings.TrimRight(line, "\r\n")
	if password == "" {
		return errors.New("empty password on stdin")
	}
	salt := make([]byte, 32)
	_, _ = rand.Read(salt)
	c, err := auth.NewScramCredential(mech, password, salt, iters)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(stdout, c.Line(user, mech))
	return err
}
