package main

import (
	"crypto/tls"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/kafka-iggy/kafka-iggy/auth"
	"github.com/kafka-iggy/kafka-iggy/bridge"
	"github.com/kafka-iggy/kafka-iggy/bridge/cluster"
	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
	"github.com/kafka-iggy/kafka-iggy/embedded"
	"github.com/kafka-iggy/kafka-iggy/internal/tlsconf"
	"github.com/kafka-iggy/kafka-iggy/proxy"
	"github.com/kafka-iggy/kafka-iggy/proxy/admin"
)

// Config is the sidecar's whole configuration. It aggregates the
// components' own configurations (each documented, defaulted and validated
// in its package) and adds the sections no component owns: embedded.mode,
// sasl, tls, log and shutdown.
//
// Layers, later ones winning: built-in defaults (DefaultConfig), the YAML
// file named by --config, environment variables KAFKA_IGGY_<KEY> (upper
// case, "__" between nested keys: KAFKA_IGGY_IGGY__POOL_SIZE=8), then one
// flag per key (--iggy.pool_size=8). docs/OPERATIONS.md lists every key; a
// test keeps that list equal to this struct.
type Config struct {
	// Proxy is the Kafka front door: listener, limits and gnet, mounted at
	// the top level.
	Proxy proxy.Config `koanf:",squash"`
	// Bridge is the Kafka semantics: topics, groups, offsets, producer and
	// fetch, mounted at the top level.
	Bridge bridge.Config `koanf:",squash"`
	// Iggy is the client of the upstream Iggy server.
	Iggy iggy.Config `koanf:"iggy"`
	// Embedded is the in-process Iggy server used when no upstream is set.
	Embedded EmbeddedConfig `koanf:"embedded"`
	// SASL is client authentication on the Kafka listener.
	SASL SASLConfig `koanf:"sasl"`
	// TLS is TLS on the Kafka listener.
	TLS TLSConfig `koanf:"tls"`
	// Admin is the HTTP listener for /metrics, /healthz and /readyz.
	Admin admin.Config `koanf:"admin"`
	// Log is the log output.
	Log LogConfig `koanf:"log"`
	// Shutdown tunes the SIGTERM sequence.
	Shutdown ShutdownConfig `koanf:"shutdown"`
	// Peers is the peer listener between the sidecars of a coordination
	// domain (one Kafka group across sidecars); off by default.
	Peers cluster.PeersConfig `koanf:"peers"`
	// Coordination places the sidecar in a coordination domain.
	Coordination cluster.CoordinationConfig `koanf:"coordination"`
}

// Embedded server modes accepted by EmbeddedConfig.Mode.
const (
	EmbeddedAuto = "auto"
	EmbeddedOn   = "on"
	EmbeddedOff  = "off"
)

// EmbeddedConfig says whether the sidecar runs the embedded Iggy server,
// and configures it.
type EmbeddedConfig struct {
	// Mode is "auto", "on" or "off". auto runs the embedded server when
	// iggy.address is empty and uses it as the upstream; on does the same
	// but refuses a configured iggy.address; off never runs it and requires
	// iggy.address. Default "auto".
	Mode string `koanf:"mode"`
	// Server is the embedded server's own configuration (listen, data_dir,
	// root credentials, ...), mounted in the same section.
	Server embedded.Config `koanf:",squash"`
}

// SASL modes accepted by SASLConfig.Mode.
const (
	SASLModeIggy   = "iggy"
	SASLModeStatic = "static"
)

// Authorization modes accepted by SASLConfig.Authorization.
const (
	SASLAuthorizationPrincipal = "principal"
	SASLAuthorizationSidecar   = "sidecar"
)

// SASL mechanisms accepted by SASLConfig.Mechanisms.
const (
	SASLPlain       = "PLAIN"
	SASLScramSHA256 = "SCRAM-SHA-256"
	SASLScramSHA512 = "SCRAM-SHA-512"
	SASLOAuthBearer = "OAUTHBEARER"
)

// SASLConfig configures client authentication on the Kafka listener.
type SASLConfig struct {
	// Enabled makes clients authenticate (SaslHandshake, SaslAuthenticate)
	// before any request other than ApiVersions. Default false.
	Enabled bool `koanf:"enabled"`
	// Mechanisms are the SASL mechanisms offered: "PLAIN", "SCRAM-SHA-256",
	// "SCRAM-SHA-512", "OAUTHBEARER". The SCRAM ones need scram_file,
	// OAUTHBEARER needs oauthbearer.jwks. Default ["PLAIN"].
	Mechanisms []string `koanf:"mechanisms"`
	// Mode says who checks PLAIN credentials. "iggy": the PLAIN user name
	// and password must log in to Iggy (LOGIN_USER on a connection of its
	// own, at every authentication, nothing cached). "static": they are
	// checked against users. Either way the requests then run on the
	// sessions of iggy.username. Default "iggy".
	Mode string `koanf:"mode"`
	// ScramFile is the SCRAM credential file (a mounted Secret): one line
	// per user and mechanism, as `kafka-iggy scram` prints them. Read at
	// start. Required when a SCRAM mechanism is offered. Default "".
	ScramFile string `koanf:"scram_file"`
	// SessionLifetime is the KIP-368 session lifetime: reported to clients
	// in SaslAuthenticate v1+, and a connection that sends a request past
	// it without re-authenticating is closed. 0 means none. Default 0s.
	SessionLifetime time.Duration `koanf:"session_lifetime"`
	// FailureDelay is how long a refused SaslAuthenticate waits before it
	// is answered, slowing password guessing (Kafka's
	// connection.failed.authentication.delay.ms). Default 100ms.
	FailureDelay time.Duration `koanf:"failure_delay"`
	// OAuthBearer validates OAUTHBEARER tokens.
	OAuthBearer OAuthBearerConfig `koanf:"oauthbearer"`
	// Users maps user name to password for mode static (secret: masked in
	// check-config, never logged). From the environment,
	// KAFKA_IGGY_SASL__USERS__<NAME> gives a lower-cased user name; use the
	// file for mixed case. Default empty.
	Users map[string]string `koanf:"users"`
	// Authorization says whose Iggy permissions an authenticated
	// principal's requests run with. "principal": on Iggy sessions logged
	// in as the principal's own Iggy user (a pool per principal, see
	// principals), so Iggy refuses what that user may not do and the
	// client gets TOPIC_/GROUP_AUTHORIZATION_FAILED; a PLAIN principal
	// (mode iggy) is the Iggy user of that name, the others are mapped by
	// iggy_users_file, and a principal without an Iggy user is refused
	// everything. It applies too to the principals of TLS client
	// certificates (tls.client_auth request or require, sasl not enabled),
	// mapped by iggy_users_file (ANONYMOUS, a client without a certificate,
	// only if listed). "sidecar": every request runs as iggy.username (no
	// per-principal authorization). Default "principal".
	Authorization string `koanf:"authorization"`
	// IggyUsersFile maps principals to Iggy users (a mounted Secret): one
	// line per principal, `<principal> user <iggy-user> <password>` or
	// `<principal> token <personal-access-token>`; # starts a comment.
	// Read at start. Used by SCRAM, OAUTHBEARER and static PLAIN principals
	// and, without SASL, by TLS client-certificate principals (the names
	// tls.principal_mapping_rules gives), with authorization principal.
	// Default "".
	IggyUsersFile string `koanf:"iggy_users_file"`
	// Principals bounds the per-principal Iggy session pools.
	Principals PrincipalsConfig `koanf:"principals"`
}

// PrincipalsConfig bounds the Iggy session pools of sasl.authorization
// principal.
type PrincipalsConfig struct {
	// PoolSize is the number of Iggy sessions of one principal's pool,
	// 1-16. Default 1.
	PoolSize int `koanf:"pool_size"`
	// Max is how many principals may have a pool open at once, 1-10000; a
	// further principal's requests are refused (retriably) until a pool
	// idles out. Each session is charged 256 KiB to the memory budget
	// while open. Default 64.
	Max int `koanf:"max"`
	// IdleTimeout closes a principal's pool no request used for this
	// long, at least 1m. Default 5m.
	IdleTimeout time.Duration `koanf:"idle_timeout"`
}

// OAuthBearerConfig configures OAUTHBEARER: the client's token must be a
// JWT signed by a key of the JWKS, unexpired, from the issuer and for the
// audience; one claim is the principal.
type OAuthBearerConfig struct {
	// JWKS is the key set the tokens are signed with: a file (a mounted
	// Secret or ConfigMap) or an http(s) URL, read once at start. RS256/384/512
	// and ES256/384/512 keys. Required with OAUTHBEARER. Default "".
	JWKS string `koanf:"jwks"`
	// Issuer is the "iss" claim required; "" does not check it. Default "".
	Issuer string `koanf:"issuer"`
	// Audience must be among the "aud" claim's values; "" does not check
	// it. Default "".
	Audience string `koanf:"audience"`
	// PrincipalClaim is the claim whose string value is the principal.
	// Default "sub".
	PrincipalClaim string `koanf:"principal_claim"`
	// ClockSkew is the tolerance on the exp and nbf claims. Default 30s.
	ClockSkew time.Duration `koanf:"clock_skew"`
	// Unsecured accepts unsigned tokens ({"alg":"none"}, empty signature)
	// as Kafka's default OAuthBearerUnsecuredValidatorCallbackHandler
	// does: principal_claim is the principal, exp is required and checked
	// (issuer and audience too when set). jwks is then optional (signed
	// tokens are refused without it). Anyone can mint such a token, so it
	// is refused unless listener.address is loopback: for tests only.
	// Default false.
	Unsecured bool `koanf:"unsecured"`
}

// TLS client-certificate policies accepted by TLSConfig.ClientAuth.
const (
	ClientAuthNone    = "none"
	ClientAuthRequest = "request"
	ClientAuthRequire = "require"
)

// TLSConfig configures TLS on the Kafka listener.
type TLSConfig struct {
	// Enabled serves the Kafka listener over TLS only. Default false.
	Enabled bool `koanf:"enabled"`
	// CertFile is the PEM certificate chain of the listener, leaf first.
	// Required when enabled. Default "".
	CertFile string `koanf:"cert_file"`
	// KeyFile is the PEM private key of CertFile. Required when enabled.
	// Default "".
	KeyFile string `koanf:"key_file"`
	// ClientAuth is the client-certificate policy: "none", "request"
	// (verified when sent) or "require" (mutual TLS); Kafka's
	// ssl.client.auth spellings "requested" and "required" are accepted
	// too. request and require need client_ca_file; without SASL they
	// make the certificate principals act in Iggy as the users
	// sasl.iggy_users_file maps them to (sasl.authorization principal).
	// Default "none".
	ClientAuth string `koanf:"client_auth"`
	// ClientCAFile is a PEM file of the CA certificates client
	// certificates are verified against. Default "".
	ClientCAFile string `koanf:"client_ca_file"`
	// MinVersion is the lowest TLS version accepted: "1.2" or "1.3".
	// Default "1.2".
	MinVersion string `koanf:"min_version"`
	// HandshakeTimeout cuts a TLS handshake not completed within it (a
	// client that connects and stalls holds nothing longer). 1s-5m.
	// Default 10s.
	HandshakeTimeout time.Duration `koanf:"handshake_timeout"`
	// PrincipalMappingRules map a client certificate's subject (its RFC
	// 2253 distinguished name) to the connection's principal when the
	// listener does not use SASL, as Kafka's ssl.principal.mapping.rules:
	// "DEFAULT" (the whole name) or "RULE:pattern/replacement/" with an
	// optional L or U (lower or upper case); the first rule matching the
	// whole name wins, none matching refuses the client. A connection
	// without a certificate is ANONYMOUS. One string, rules separated by
	// commas (as Kafka's, whose patterns may hold commas too). Default
	// "DEFAULT".
	PrincipalMappingRules string `koanf:"principal_mapping_rules"`
}

// Log levels and formats accepted by LogConfig.
const (
	LogFormatAuto    = "auto"
	LogFormatJSON    = "json"
	LogFormatConsole = "console"
)

// LogConfig configures the log output (standard error).
type LogConfig struct {
	// Level is the lowest level written: "trace", "debug", "info", "warn"
	// or "error". debug adds a line per unusual request and per connection
	// (conn_id, api_key, api_version, corr_id). Default "info".
	Level string `koanf:"level"`
	// Format is "auto" (console when standard error is a terminal, JSON
	// otherwise: a container's log is JSON, `make run` on a terminal is
	// readable), "json" (one JSON object per line, for log collectors) or
	// "console" (time, level, component, message, then the other fields;
	// coloured on a terminal). Default "auto".
	Format string `koanf:"format"`
}

// ShutdownConfig tunes what happens on SIGTERM: /readyz turns 503 at once,
// then after unready_delay the Kafka listener drains its in-flight requests
// for at most limits.drain_timeout, then the Iggy sessions close.
type ShutdownConfig struct {
	// UnreadyDelay is how long the sidecar keeps serving after /readyz
	// turned 503, so load balancers and peers stop sending new work before
	// the drain starts. The whole shutdown takes at most unready_delay +
	// limits.drain_timeout; keep the pod's terminationGracePeriodSeconds
	// above that. Default 0s.
	UnreadyDelay time.Duration `koanf:"unready_delay"`
}

// DefaultConfig returns the documented defaults of every section.
func DefaultConfig() Config {
	return Config{
		Proxy:  proxy.DefaultConfig(),
		Bridge: bridge.DefaultConfig(),
		Iggy:   iggy.DefaultConfig(),
		Embedded: EmbeddedConfig{
			Mode:   EmbeddedAuto,
			Server: embedded.DefaultConfig(),
		},
		SASL: SASLConfig{
			Mechanisms:    []string{SASLPlain},
			Mode:          SASLModeIggy,
			FailureDelay:  100 * time.Millisecond,
			OAuthBearer:   OAuthBearerConfig{PrincipalClaim: "sub", ClockSkew: 30 * time.Second},
			Authorization: SASLAuthorizationPrincipal,
			Principals:    PrincipalsConfig{PoolSize: 1, Max: 64, IdleTimeout: 5 * time.Minute},
		},
		TLS: TLSConfig{
			ClientAuth:            ClientAuthNone,
			MinVersion:            "1.2",
			HandshakeTimeout:      10 * time.Second,
			PrincipalMappingRules: "DEFAULT",
		},
		Admin:        admin.DefaultConfig(),
		Log:          LogConfig{Level: "info", Format: LogFormatAuto},
		Shutdown:     ShutdownConfig{},
		Peers:        cluster.DefaultPeersConfig(),
		Coordination: cluster.DefaultCoordinationConfig(),
	}
}

// UseEmbedded reports whether the sidecar runs the embedded Iggy server
// (and then points the Iggy client at it, filling in iggy.address).
func (c Config) UseEmbedded() bool {
	switch c.Embedded.Mode {
	case EmbeddedOn:
		return true
	case EmbeddedOff:
		return false
	}
	return c.Iggy.Address == ""
}

// Validate returns every problem of c at once (errors.Join), each error
// text starting with the key it concerns ("iggy.pool_size: ...").
func (c Config) Validate() error {
	errs := []error{
		c.Proxy.Validate(),
		c.Bridge.Validate(),
		c.Iggy.Validate(),
		c.Embedded.Server.Validate(),
		c.Admin.Validate(),
		cluster.Validate(c.Peers, c.Coordination),
	}
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...)))
	}

	switch c.Embedded.Mode {
	case EmbeddedAuto:
	case EmbeddedOn:
		if c.Iggy.Address != "" {
			bad("embedded.mode", "on runs the embedded server as the upstream, but iggy.address is set (%q); leave it empty or use mode auto/off", c.Iggy.Address)
		}
	case EmbeddedOff:
		if c.Iggy.Address == "" {
			bad("iggy.address", "required when embedded.mode is off")
		}
	default:
		bad("embedded.mode", "%q is not one of auto, on, off", c.Embedded.Mode)
	}
	if c.UseEmbedded() && c.Embedded.Server.DataDir == "" {
		// An in-memory embedded server knows its root user only.
		if c.Iggy.PersonalAccessToken != "" {
			bad("iggy.personal_access_token", "the in-memory embedded server has no tokens; log in with iggy.username/password (its root user) or set embedded.data_dir")
		} else if c.Iggy.Username != c.Embedded.Server.RootUsername || c.Iggy.Password != c.Embedded.Server.RootPassword {
			bad("iggy.username", "the in-memory embedded server only knows its root user: iggy.username and iggy.password must equal embedded.root_username and embedded.root_password")
		}
	}

	if c.UseEmbedded() && c.Embedded.Server.TLS.Enabled != c.Iggy.TLS.Enabled {
		// The client dials the embedded server: both sides speak TLS or neither.
		bad("iggy.tls.enabled", "is %v but embedded.tls.enabled is %v: the sidecar's client dials the embedded server, set both alike", c.Iggy.TLS.Enabled, c.Embedded.Server.TLS.Enabled)
	}
	c.SASL.validate(c.Proxy.Listener.Address, c.TLS.Enabled, bad)
	c.TLS.validate(bad)
	if c.CertPrincipalsBound() && c.SASL.IggyUsersFile == "" {
		bad("sasl.iggy_users_file", "required with sasl.authorization principal when tls.client_auth is %s and sasl is not enabled: client-certificate principals act in Iggy as the users it maps them to, and without it they are refused everything; map them to Iggy users, or set sasl.authorization sidecar", c.TLS.ClientAuth)
	}

	switch strings.ToLower(c.Log.Level) {
	case "trace", "debug", "info", "warn", "error":
	default:
		bad("log.level", "%q is not one of trace, debug, info, warn, error", c.Log.Level)
	}
	switch c.Log.Format {
	case LogFormatAuto, LogFormatJSON, LogFormatConsole:
	default:
		bad("log.format", "%q is not one of auto, json, console", c.Log.Format)
	}
	if c.Shutdown.UnreadyDelay < 0 {
		bad("shutdown.unready_delay", "%v is negative", c.Shutdown.UnreadyDelay)
	}

	// Listeners of one process must not share a port.
	ports := []struct{ key, addr string }{{"listener.address", c.Proxy.Listener.Address}}
	if c.Admin.Enabled {
		ports = append(ports, struct{ key, addr string }{"admin.address", c.Admin.Address})
	}
	if c.UseEmbedded() {
		ports = append(ports, struct{ key, addr string }{"embedded.listen", c.Embedded.Server.Listen})
		if c.Embedded.Server.PprofAddr != "" {
			ports = append(ports, struct{ key, addr string }{"embedded.pprof_addr", c.Embedded.Server.PprofAddr})
		}
	}
	for i := 1; i < len(ports); i++ {
		for j := 0; j < i; j++ {
			if samePort(ports[i].addr, ports[j].addr) {
				bad(ports[i].key, "%q uses the port of %s (%q)", ports[i].addr, ports[j].key, ports[j].addr)
			}
		}
	}
	return errors.Join(errs...)
}

// samePort reports whether two listen addresses would collide: the same
// non-zero port on the same host, or on hosts one of which is a wildcard.
func samePort(a, b string) bool {
	ha, pa, err1 := net.SplitHostPort(a)
	hb, pb, err2 := net.SplitHostPort(b)
	if err1 != nil || err2 != nil || pa != pb || pa == "0" {
		return false
	}
	wild := func(h string) bool { ip := net.ParseIP(h); return h == "" || (ip != nil && ip.IsUnspecified()) }
	return ha == hb || wild(ha) || wild(hb)
}

func (s SASLConfig) validate(listen string, tlsOn bool, bad func(key, format string, args ...any)) {
	switch s.Mode {
	case SASLModeIggy:
		if len(s.Users) > 0 {
			bad("sasl.users", "only used with sasl.mode static (mode iggy checks credentials with Iggy)")
		}
	case SASLModeStatic:
	default:
		bad("sasl.mode", "%q is not one of iggy, static", s.Mode)
	}
	if s.Authorization != SASLAuthorizationPrincipal && s.Authorization != SASLAuthorizationSidecar {
		bad("sasl.authorization", "%q is not one of principal, sidecar", s.Authorization)
	}
	if p := s.Principals; p.PoolSize < 1 || p.PoolSize > 16 {
		bad("sasl.principals.pool_size", "%d is not 1-16", p.PoolSize)
	}
	if p := s.Principals; p.Max < 1 || p.Max > 10000 {
		bad("sasl.principals.max", "%d is not 1-10000", p.Max)
	}
	if s.Principals.IdleTimeout < time.Minute {
		bad("sasl.principals.idle_timeout", "%v is under 1m", s.Principals.IdleTimeout)
	}
	if !s.Enabled {
		return
	}
	if len(s.Mechanisms) == 0 {
		bad("sasl.mechanisms", "empty; name at least one of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER")
	}
	seen := map[string]bool{}
	for _, m := range s.Mechanisms {
		switch m {
		case SASLPlain:
			if host, _, err := net.SplitHostPort(listen); err == nil && !tlsOn && !isLoopback(host) {
				bad("sasl.mechanisms", "PLAIN would carry passwords in clear text on %q; enable tls or bind listener.address to loopback", listen)
			}
		case SASLScramSHA256, SASLScramSHA512:
			if s.ScramFile == "" {
				bad("sasl.scram_file", "required when %s is offered (SCRAM is checked in the sidecar against stored credentials)", m)
			}
		case SASLOAuthBearer:
			if host, _, err := net.SplitHostPort(listen); err == nil && !tlsOn && !isLoopback(host) {
				bad("sasl.mechanisms", "OAUTHBEARER would carry bearer tokens in clear text on %q; enable tls or bind listener.address to loopback", listen)
			}
			if s.OAuthBearer.JWKS == "" && !s.OAuthBearer.Unsecured {
				bad("sasl.oauthbearer.jwks", "required when OAUTHBEARER is offered")
			}
			if s.OAuthBearer.PrincipalClaim == "" {
				bad("sasl.oauthbearer.principal_claim", "empty")
			}
			if s.OAuthBearer.ClockSkew < 0 {
				bad("sasl.oauthbearer.clock_skew", "%v is negative", s.OAuthBearer.ClockSkew)
			}
		default:
			bad("sasl.mechanisms", "%q is not one of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER", m)
		}
		if seen[m] {
			bad("sasl.mechanisms", "%s listed twice", m)
		}
		seen[m] = true
	}
	if s.OAuthBearer.Unsecured {
		if host, _, err := net.SplitHostPort(listen); err != nil || !isLoopback(host) {
			bad("sasl.oauthbearer.unsecured", "accepts unsigned tokens anyone can mint; refused unless listener.address is loopback (it is %q)", listen)
		}
	}
	if s.Authorization == SASLAuthorizationPrincipal && s.IggyUsersFile == "" {
		for _, m := range s.Mechanisms {
			if m != SASLPlain || s.Mode == SASLModeStatic {
				bad("sasl.iggy_users_file", "required with sasl.authorization principal when %s principals are offered (%s): without it they authenticate and are refused everything; map them to Iggy users, or set sasl.authorization sidecar", m, map[bool]string{true: "static PLAIN", false: "their Iggy user is not known"}[m == SASLPlain])
				break
			}
		}
	}
	if s.SessionLifetime < 0 {
		bad("sasl.session_lifetime", "%v is negative", s.SessionLifetime)
	}
	if s.FailureDelay < 0 || s.FailureDelay > time.Minute {
		bad("sasl.failure_delay", "%v is not 0-1m", s.FailureDelay)
	}
	if s.Mode == SASLModeStatic {
		if len(s.Users) == 0 {
			bad("sasl.users", "mode static needs at least one user")
		}
		for _, u := range slices.Sorted(maps.Keys(s.Users)) {
			if s.Users[u] == "" {
				bad("sasl.users."+u, "empty password")
			}
		}
	}
}

// CertPrincipalsBound reports whether the principals of TLS client
// certificates act in Iggy as their own Iggy users (mapped by
// sasl.iggy_users_file): the listener asks for client certificates, does
// not use SASL (whose principal would be the connection's), and
// sasl.authorization is principal.
func (c Config) CertPrincipalsBound() bool {
	return c.TLS.Enabled && c.TLS.ClientAuth != ClientAuthNone && !c.SASL.Enabled && c.SASL.Authorization == SASLAuthorizationPrincipal
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (t TLSConfig) validate(bad func(key, format string, args ...any)) {
	switch t.ClientAuth {
	case ClientAuthNone, ClientAuthRequest, ClientAuthRequire, "requested", "required":
	default:
		bad("tls.client_auth", "%q is not one of none, request, require (or Kafka's requested, required)", t.ClientAuth)
	}
	switch t.MinVersion {
	case "1.2", "1.3":
	default:
		bad("tls.min_version", "%q is not 1.2 or 1.3", t.MinVersion)
	}
	if t.HandshakeTimeout < time.Second || t.HandshakeTimeout > 5*time.Minute {
		bad("tls.handshake_timeout", "%v is not 1s-5m", t.HandshakeTimeout)
	}
	if _, err := auth.ParseMappingRules(t.PrincipalMappingRules); err != nil {
		bad("tls.principal_mapping_rules", "%v", err)
	}
	if !t.Enabled {
		return
	}
	switch {
	case t.CertFile == "":
		bad("tls.cert_file", "required when tls.enabled is true")
	case t.KeyFile == "":
		bad("tls.key_file", "required when tls.enabled is true")
	default:
		if _, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile); err != nil {
			bad("tls.cert_file", "cannot load the key pair %s / %s: %v", t.CertFile, t.KeyFile, err)
		}
	}
	if t.ClientAuth != ClientAuthNone && t.ClientCAFile == "" {
		bad("tls.client_ca_file", "required when tls.client_auth is %s", t.ClientAuth)
	}
	if t.ClientCAFile != "" {
		if _, err := tlsconf.LoadPool(t.ClientCAFile); err != nil {
			bad("tls.client_ca_file", "%v", err)
		}
	}
}
