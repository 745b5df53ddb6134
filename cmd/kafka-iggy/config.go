package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-viper/mapstructure/v2"
	"github.com/knadh/koanf/parsers/yaml"
	"github.com/knadh/koanf/providers/env/v2"
	"github.com/knadh/koanf/providers/file"
	"github.com/knadh/koanf/providers/posflag"
	"github.com/knadh/koanf/v2"
	"github.com/rs/zerolog"
	"github.com/spf13/pflag"

	"github.com/kafka-iggy/kafka-iggy/bridge"
	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
	"github.com/kafka-iggy/kafka-iggy/embedded"
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

// SASL mechanisms accepted by SASLConfig.Mechanisms.
const (
	SASLPlain       = "PLAIN"
	SASLScramSHA256 = "SCRAM-SHA-256"
	SASLScramSHA512 = "SCRAM-SHA-512"
)

// SASLConfig configures client authentication on the Kafka listener.
type SASLConfig struct {
	// Enabled makes clients authenticate (SaslHandshake, SaslAuthenticate)
	// before any request other than ApiVersions. Default false.
	Enabled bool `koanf:"enabled"`
	// Mechanisms are the SASL mechanisms offered: "PLAIN", "SCRAM-SHA-256",
	// "SCRAM-SHA-512". The SCRAM ones need mode static. Default ["PLAIN"].
	Mechanisms []string `koanf:"mechanisms"`
	// Mode says who checks credentials. "iggy": the PLAIN username and
	// password are the principal's Iggy login; the sidecar keeps Iggy
	// sessions per principal, so Iggy enforces each principal's
	// permissions. "static": the credentials are checked against users and
	// every client shares the sessions of iggy.username. Default "iggy".
	Mode string `koanf:"mode"`
	// Users maps user name to password for mode static (secret: masked in
	// check-config, never logged). From the environment,
	// KAFKA_IGGY_SASL__USERS__<NAME> gives a lower-cased user name; use the
	// file for mixed case. Default empty.
	Users map[string]string `koanf:"users"`
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
	// (verified when sent) or "require" (mutual TLS). request and require
	// need client_ca_file. Default "none".
	ClientAuth string `koanf:"client_auth"`
	// ClientCAFile is a PEM file of the CA certificates client
	// certificates are verified against. Default "".
	ClientCAFile string `koanf:"client_ca_file"`
	// MinVersion is the lowest TLS version accepted: "1.2" or "1.3".
	// Default "1.2".
	MinVersion string `koanf:"min_version"`
}

// Log levels and formats accepted by LogConfig.
const (
	LogFormatJSON    = "json"
	LogFormatConsole = "console"
)

// LogConfig configures the log output (standard error).
type LogConfig struct {
	// Level is the lowest level written: "trace", "debug", "info", "warn"
	// or "error". debug adds a line per unusual request and per connection
	// (conn_id, api_key, api_version, corr_id). Default "info".
	Level string `koanf:"level"`
	// Format is "json" (one JSON object per line, for log collectors) or
	// "console" (aligned, human-readable). Default "json".
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
			Mechanisms: []string{SASLPlain},
			Mode:       SASLModeIggy,
		},
		TLS: TLSConfig{
			ClientAuth: ClientAuthNone,
			MinVersion: "1.2",
		},
		Admin:    admin.DefaultConfig(),
		Log:      LogConfig{Level: "info", Format: LogFormatJSON},
		Shutdown: ShutdownConfig{},
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

	c.SASL.validate(c.Proxy.Listener.Address, c.TLS.Enabled, bad)
	c.TLS.validate(bad)
	// The front door does not speak SASL or TLS yet: refuse to start rather
	// than serve in the clear while the operator believes otherwise.
	if c.SASL.Enabled {
		bad("sasl.enabled", "SASL on the Kafka listener is not implemented yet; the settings are validated but cannot be enabled")
	}
	if c.TLS.Enabled {
		bad("tls.enabled", "TLS on the Kafka listener is not implemented yet; the settings are validated but cannot be enabled")
	}

	switch strings.ToLower(c.Log.Level) {
	case "trace", "debug", "info", "warn", "error":
	default:
		bad("log.level", "%q is not one of trace, debug, info, warn, error", c.Log.Level)
	}
	switch c.Log.Format {
	case LogFormatJSON, LogFormatConsole:
	default:
		bad("log.format", "%q is not one of json, console", c.Log.Format)
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
	if !s.Enabled {
		return
	}
	if len(s.Mechanisms) == 0 {
		bad("sasl.mechanisms", "empty; name at least one of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512")
	}
	seen := map[string]bool{}
	for _, m := range s.Mechanisms {
		switch m {
		case SASLPlain:
			if host, _, err := net.SplitHostPort(listen); err == nil && !tlsOn && !isLoopback(host) {
				bad("sasl.mechanisms", "PLAIN would carry passwords in clear text on %q; enable tls or bind listener.address to loopback", listen)
			}
		case SASLScramSHA256, SASLScramSHA512:
			if s.Mode != SASLModeStatic {
				bad("sasl.mechanisms", "%s needs sasl.mode static (Iggy logins need the clear-text password, which SCRAM never sends)", m)
			}
		default:
			bad("sasl.mechanisms", "%q is not one of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512", m)
		}
		if seen[m] {
			bad("sasl.mechanisms", "%s listed twice", m)
		}
		seen[m] = true
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

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (t TLSConfig) validate(bad func(key, format string, args ...any)) {
	switch t.ClientAuth {
	case ClientAuthNone, ClientAuthRequest, ClientAuthRequire:
	default:
		bad("tls.client_auth", "%q is not one of none, request, require", t.ClientAuth)
	}
	switch t.MinVersion {
	case "1.2", "1.3":
	default:
		bad("tls.min_version", "%q is not 1.2 or 1.3", t.MinVersion)
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
		if _, err := loadCertPool(t.ClientCAFile); err != nil {
			bad("tls.client_ca_file", "%v", err)
		}
	}
}

// ServerTLS builds the crypto/tls configuration of the Kafka listener, or
// nil when TLS is off. Call it after Validate.
func (t TLSConfig) ServerTLS() (*tls.Config, error) {
	if !t.Enabled {
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("tls.cert_file: %w", err)
	}
	tc := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if t.MinVersion == "1.3" {
		tc.MinVersion = tls.VersionTLS13
	}
	switch t.ClientAuth {
	case ClientAuthRequest:
		tc.ClientAuth = tls.VerifyClientCertIfGiven
	case ClientAuthRequire:
		tc.ClientAuth = tls.RequireAndVerifyClientCert
	}
	if t.ClientCAFile != "" {
		if tc.ClientCAs, err = loadCertPool(t.ClientCAFile); err != nil {
			return nil, fmt.Errorf("tls.client_ca_file: %w", err)
		}
	}
	return tc, nil
}

func loadCertPool(path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s holds no PEM certificate", path)
	}
	return pool, nil
}

// ---------------------------------------------------------------------------
// Loading.

// envPrefix starts every environment variable the sidecar reads.
const envPrefix = "KAFKA_IGGY_"

// keyDelim separates key levels inside koanf. Not ".": Kafka topic names
// (keys of topics.overrides) contain dots. Kafka names never contain "/".
const keyDelim = "/"

// Problem is one thing wrong with a configuration and the key it concerns
// (dotted, as in the YAML file: "iggy.pool_size").
type Problem struct {
	Key string
	Msg string
}

// String is "key: message".
func (p Problem) String() string {
	if p.Key == "" {
		return p.Msg
	}
	return p.Key + ": " + p.Msg
}

// ConfigError is every problem found while loading and validating a
// configuration.
type ConfigError struct {
	Problems []Problem
}

// Error lists the problems, one per line.
func (e *ConfigError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return "invalid configuration:\n  " + strings.Join(lines, "\n  ")
}

// errHelp is returned by loadConfig for --help; print configUsage.
var errHelp = pflag.ErrHelp

// loadConfig builds the effective configuration from the defaults, the
// YAML file named by --config, the KAFKA_IGGY_ variables of environ and the
// flags in args (a subcommand's arguments, e.g. os.Args[2:]). A returned
// *ConfigError carries every problem at once with its key; the Config is
// then the best effort (unparseable values keep their defaults). Other
// errors (bad flags, an unreadable file) are returned alone; errHelp means
// --help was given.
func loadConfig(args, environ []string) (Config, error) {
	l, err := load(args, environ)
	return l.cfg, err
}

// loaded is a configuration with where each key that is not a default came
// from (for check-config).
type loaded struct {
	cfg     Config
	file    string
	sources map[string]string // dotted key -> "file", "env NAME" or "flag --name"
}

func load(args, environ []string) (loaded, error) {
	l := loaded{cfg: DefaultConfig(), sources: map[string]string{}}
	fs := newFlagSet()
	if err := fs.Parse(args); err != nil {
		return l, err
	}
	if fs.NArg() > 0 {
		return l, fmt.Errorf("unexpected arguments %q (flags only; see --help)", fs.Args())
	}
	l.file, _ = fs.GetString("config")

	var problems []Problem
	k := koanf.New(keyDelim)

	// The file.
	if l.file != "" {
		fk := koanf.New(keyDelim)
		if err := fk.Load(file.Provider(l.file), yaml.Parser()); err != nil {
			return l, fmt.Errorf("config file %s: %w", l.file, err)
		}
		for _, key := range fk.Keys() {
			l.sources[dotted(key)] = "file"
		}
		if err := k.Merge(fk); err != nil {
			return l, err
		}
	}

	// The environment.
	envNames := map[string]string{} // koanf key -> variable name
	ek := koanf.New(keyDelim)
	err := ek.Load(env.Provider(keyDelim, env.Opt{
		Prefix:      envPrefix,
		EnvironFunc: func() []string { return environ },
		TransformFunc: func(name, value string) (string, any) {
			rest := strings.TrimPrefix(name, envPrefix)
			if isServiceLink(rest) {
				return "", nil
			}
			key := strings.ReplaceAll(strings.ToLower(rest), "__", keyDelim)
			envNames[key] = name
			return key, value
		},
	}), nil)
	if err != nil {
		return l, fmt.Errorf("environment: %w", err)
	}
	for _, key := range ek.Keys() {
		l.sources[dotted(key)] = "env " + envNames[key]
	}
	if err := k.Merge(ek); err != nil {
		return l, err
	}

	// The flags (only those given).
	pk := koanf.New(keyDelim)
	err = pk.Load(posflag.ProviderWithFlag(fs, keyDelim, nil, func(f *pflag.Flag) (string, any) {
		if f.Name == "config" {
			return "", nil
		}
		key := strings.ReplaceAll(f.Name, ".", keyDelim)
		v := posflag.FlagVal(fs, f)
		if m, ok := v.(map[string]string); ok { // merge entries, not the whole map
			mm := make(map[string]any, len(m))
			for mk, mv := range m {
				mm[mk] = mv
			}
			v = mm
		}
		return key, v
	}), nil)
	if err != nil {
		return l, fmt.Errorf("flags: %w", err)
	}
	for _, key := range pk.Keys() {
		l.sources[dotted(key)] = "flag --" + leafOf(dotted(key))
	}
	if err := k.Merge(pk); err != nil {
		return l, err
	}

	// Unknown keys, and values where a section belongs or the reverse.
	for _, key := range k.Keys() {
		d := dotted(key)
		if msg := checkKey(key, k.Get(key)); msg != "" {
			if src := l.sources[d]; strings.HasPrefix(src, "env ") {
				msg += " (from " + strings.TrimPrefix(src, "env ") + ")"
			}
			problems = append(problems, Problem{Key: d, Msg: msg})
			k.Delete(key)
		}
	}

	// Decode onto the defaults.
	dc := &mapstructure.DecoderConfig{
		DecodeHook: strictHook,
		TagName:    "koanf",
	}
	if err := k.UnmarshalWithConf("", &l.cfg, koanf.UnmarshalConf{DecoderConfig: dc}); err != nil {
		problems = append(problems, decodeProblems(err)...)
	}

	problems = append(problems, problemsOf(l.cfg.Validate())...)
	if len(problems) > 0 {
		return l, &ConfigError{Problems: sortProblems(dedupe(problems))}
	}
	return l, nil
}

// isServiceLink reports the variables Kubernetes injects for a Service
// named kafka-iggy (KAFKA_IGGY_SERVICE_HOST, KAFKA_IGGY_PORT_9092_TCP, ...),
// given without the prefix; they are not configuration. No key of ours is
// a top-level value, so none of them can be one.
func isServiceLink(rest string) bool {
	if strings.Contains(rest, "__") {
		return false
	}
	return strings.HasPrefix(rest, "SERVICE_") || rest == "PORT" || strings.HasPrefix(rest, "PORT_")
}

// dotted turns a koanf key into the dotted form users write.
func dotted(key string) string { return strings.ReplaceAll(key, keyDelim, ".") }

// leafOf returns the known leaf key that key is or lies under (a map
// entry's key lies under its map), else key itself.
func leafOf(key string) string {
	idx := leafIndex()
	for k := key; ; {
		if _, ok := idx.leaves[k]; ok {
			return k
		}
		i := strings.LastIndexByte(k, '.')
		if i < 0 {
			return key
		}
		k = k[:i]
	}
}

// checkKey returns why a loaded koanf key is not acceptable, or "".
func checkKey(key string, value any) string {
	idx := leafIndex()
	parts := strings.Split(key, keyDelim)
	// Walk down: a known leaf ends the walk (a map leaf may have one more
	// level, its entries); a section goes on.
	for i := range parts {
		prefix := strings.Join(parts[:i+1], ".")
		if lf, ok := idx.leaves[prefix]; ok {
			switch rest := len(parts) - 1 - i; {
			case rest == 0:
				return ""
			case rest == 1 && lf.typ.Kind() == reflect.Map:
				return ""
			}
			return fmt.Sprintf("%s is a %s, not a section", prefix, typeName(lf.typ))
		}
		if !idx.sections[prefix] {
			break
		}
		if i == len(parts)-1 {
			if value == nil || reflect.ValueOf(value).Kind() == reflect.Map {
				return "" // an empty section in YAML ("sasl:" or "sasl: {}")
			}
			return fmt.Sprintf("is a section; got the value %v", value)
		}
	}
	msg := "unknown key"
	if near := nearestKey(dotted(key)); near != "" {
		msg += "; did you mean " + near + "?"
	}
	return msg
}

// nearestKey suggests a known key for a misspelt one: same section and a
// small edit distance, or "".
func nearestKey(key string) string {
	best, bestD := "", 3
	for _, lf := range leafIndex().list {
		if d := editDistance(key, lf.key); d < bestD {
			best, bestD = lf.key, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

var durationType = reflect.TypeFor[time.Duration]()

// strictHook converts loaded values (YAML scalars, environment and flag
// strings) to the field types, and refuses what the weak conversions of
// mapstructure would accept silently: a duration without a unit, a
// fraction or an out-of-range number for an integer, a number for a bool,
// a list or map for a scalar.
func strictHook(from, to reflect.Type, data any) (any, error) {
	if data == nil {
		return data, nil
	}
	v := reflect.ValueOf(data)
	switch {
	case to == durationType:
		switch v.Kind() {
		case reflect.String:
			d, err := time.ParseDuration(strings.TrimSpace(v.String()))
			if err != nil {
				return nil, fmt.Errorf("%q is not a duration (write e.g. 500ms, 30s, 5m)", v.String())
			}
			return d, nil
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
			if v.IsZero() {
				return time.Duration(0), nil
			}
			return nil, fmt.Errorf("%v has no unit (write e.g. \"%vs\" or \"%vms\")", data, data, data)
		}
		if from == durationType {
			return data, nil
		}
		return nil, fmt.Errorf("expected a duration, got %s", describe(data))
	case to.Kind() == reflect.Bool:
		switch v.Kind() {
		case reflect.Bool:
			return data, nil
		case reflect.String:
			b, err := strconv.ParseBool(strings.TrimSpace(v.String()))
			if err != nil {
				return nil, fmt.Errorf("%q is not true or false", v.String())
			}
			return b, nil
		}
		return nil, fmt.Errorf("expected true or false, got %s", describe(data))
	case isInt(to.Kind()) || isUint(to.Kind()):
		var n int64
		var u uint64
		neg := false
		switch {
		case isInt(v.Kind()):
			n = v.Int()
			neg, u = n < 0, uint64(n)
		case isUint(v.Kind()):
			u = v.Uint()
			if u > 1<<63-1 {
				return nil, fmt.Errorf("%v is out of range", data)
			}
			n = int64(u)
		case v.Kind() == reflect.Float32 || v.Kind() == reflect.Float64:
			f := v.Float()
			if f != float64(int64(f)) {
				return nil, fmt.Errorf("%v is not a whole number", data)
			}
			n = int64(f)
			neg, u = n < 0, uint64(n)
		case v.Kind() == reflect.String:
			s := strings.TrimSpace(v.String())
			var err error
			n, err = strconv.ParseInt(s, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("%q is not a whole number", v.String())
			}
			neg, u = n < 0, uint64(n)
		default:
			return nil, fmt.Errorf("expected a whole number, got %s", describe(data))
		}
		out := reflect.New(to).Elem()
		if isInt(to.Kind()) {
			if out.OverflowInt(n) {
				bits := uint(to.Bits())
				return nil, fmt.Errorf("%v is out of range (%d to %d)", data, -(int64(1) << (bits - 1)), int64(1)<<(bits-1)-1)
			}
			out.SetInt(n)
		} else {
			if neg || out.OverflowUint(u) {
				return nil, fmt.Errorf("%v is out of range (0 to %d)", data, uint64(1)<<uint(to.Bits())-1)
			}
			out.SetUint(u)
		}
		return out.Interface(), nil
	case to.Kind() == reflect.String:
		switch v.Kind() {
		case reflect.String:
			return data, nil
		case reflect.Map, reflect.Slice, reflect.Array, reflect.Struct:
			return nil, fmt.Errorf("expected a string, got %s", describe(data))
		}
		return fmt.Sprint(data), nil // an unquoted YAML number or bool
	case to.Kind() == reflect.Slice:
		if v.Kind() == reflect.String { // "a,b" from the environment or a flag
			var out []string
			for _, s := range strings.Split(v.String(), ",") {
				if s = strings.TrimSpace(s); s != "" {
					out = append(out, s)
				}
			}
			return out, nil
		}
		if v.Kind() != reflect.Slice {
			return nil, fmt.Errorf("expected a list, got %s", describe(data))
		}
	case to.Kind() == reflect.Map:
		if v.Kind() != reflect.Map {
			return nil, fmt.Errorf("expected a map, got %s", describe(data))
		}
	}
	return data, nil
}

func isInt(k reflect.Kind) bool {
	return k == reflect.Int || k == reflect.Int8 || k == reflect.Int16 || k == reflect.Int32 || k == reflect.Int64
}

func isUint(k reflect.Kind) bool {
	return k == reflect.Uint || k == reflect.Uint8 || k == reflect.Uint16 || k == reflect.Uint32 || k == reflect.Uint64
}

// describe names a loaded value's shape for an error message.
func describe(data any) string {
	switch reflect.ValueOf(data).Kind() {
	case reflect.Map:
		return "a map"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Bool:
		return fmt.Sprintf("the bool %v", data)
	case reflect.String:
		return fmt.Sprintf("the string %q", data)
	}
	return fmt.Sprintf("%v", data)
}

// decodeProblems turns mapstructure's errors into problems with keys.
func decodeProblems(err error) []Problem {
	var out []Problem
	var walk func(error)
	walk = func(e error) {
		if de, ok := e.(*mapstructure.DecodeError); ok {
			inner := de.Unwrap()
			if _, joined := inner.(interface{ Unwrap() []error }); joined {
				walk(inner)
				return
			}
			// Map entries are named "map[key]"; write them as map.key.
			key := strings.ReplaceAll(strings.ReplaceAll(de.Name(), "[", "."), "]", "")
			out = append(out, Problem{Key: key, Msg: inner.Error()})
			return
		}
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, x := range j.Unwrap() {
				walk(x)
			}
			return
		}
		if u := errors.Unwrap(e); u != nil {
			walk(u)
			return
		}
		out = append(out, Problem{Msg: e.Error()})
	}
	walk(err)
	return out
}

// problemsOf splits a joined validation error into problems; each error
// text is "key: message".
func problemsOf(err error) []Problem {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []Problem
		for _, e := range j.Unwrap() {
			out = append(out, problemsOf(e)...)
		}
		return out
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") { // a joined error without Unwrap() []error
		var out []Problem
		for _, line := range strings.Split(msg, "\n") {
			out = append(out, problemsOf(errors.New(line))...)
		}
		return out
	}
	if i := strings.Index(msg, ": "); i > 0 && !strings.ContainsAny(msg[:i], " \t") {
		return []Problem{{Key: msg[:i], Msg: msg[i+2:]}}
	}
	return []Problem{{Msg: msg}}
}

// sortProblems orders problems by where their key is declared (unknown
// keys last, alphabetically), so the output is stable.
func sortProblems(ps []Problem) []Problem {
	pos := func(key string) int {
		for i, lf := range leafIndex().list {
			if lf.key == key || strings.HasPrefix(key, lf.key+".") {
				return i
			}
		}
		return len(leafIndex().list)
	}
	slices.SortStableFunc(ps, func(a, b Problem) int {
		if pa, pb := pos(a.Key), pos(b.Key); pa != pb {
			return pa - pb
		}
		return strings.Compare(a.Key, b.Key)
	})
	return ps
}

func dedupe(ps []Problem) []Problem {
	seen := map[Problem]bool{}
	out := ps[:0]
	for _, p := range ps {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

// ---------------------------------------------------------------------------
// The key index: every leaf of Config, found by reflection over the koanf
// tags (squashed structs flattened), in declaration order.

// leaf is one configuration key.
type leaf struct {
	key   string       // dotted key, e.g. "iggy.pool_size"
	index []int        // field index path from Config
	typ   reflect.Type // the field's type
	owner reflect.Type // the struct type declaring the field
	field string       // the Go field name in owner
}

type keyIndex struct {
	list     []leaf
	leaves   map[string]leaf
	sections map[string]bool
}

var leafIndex = sync.OnceValue(func() keyIndex {
	idx := keyIndex{leaves: map[string]leaf{}, sections: map[string]bool{}}
	var walk func(t reflect.Type, prefix string, index []int)
	walk = func(t reflect.Type, prefix string, index []int) {
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			tag := f.Tag.Get("koanf")
			name, opts, _ := strings.Cut(tag, ",")
			path := append(slices.Clone(index), i)
			if opts == "squash" {
				walk(f.Type, prefix, path)
				continue
			}
			if name == "" || name == "-" {
				continue
			}
			key := prefix + name
			if f.Type.Kind() == reflect.Struct && f.Type != durationType {
				idx.sections[key] = true
				walk(f.Type, key+".", path)
				continue
			}
			lf := leaf{key: key, index: path, typ: f.Type, owner: t, field: f.Name}
			idx.list = append(idx.list, lf)
			idx.leaves[key] = lf
		}
	}
	walk(reflect.TypeFor[Config](), "", nil)
	return idx
})

// secretKeys are masked by check-config and in logs. A test checks that
// every key named like a credential is listed.
var secretKeys = map[string]bool{
	"iggy.password":              true,
	"iggy.personal_access_token": true,
	"embedded.root_password":     true,
	"sasl.users":                 true, // the values (passwords) of the map
}

// maskedValue replaces a secret's text.
const maskedValue = "******"

// envName is the environment variable of a dotted key.
func envName(key string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(key, ".", "__"))
}

// typeName is how docs and messages name a field type.
func typeName(t reflect.Type) string {
	if t == durationType {
		return "duration"
	}
	switch t.Kind() {
	case reflect.Bool:
		return "bool"
	case reflect.String:
		return "string"
	case reflect.Slice:
		return "list of " + typeName(t.Elem())
	case reflect.Map:
		return "map of " + typeName(t.Elem())
	}
	if isInt(t.Kind()) || isUint(t.Kind()) {
		return "integer"
	}
	return t.String()
}

// newFlagSet returns the flags shared by serve and check-config: --config
// and one flag per key (--listener.address, --iggy.pool_size, ...).
func newFlagSet() *pflag.FlagSet {
	fs := pflag.NewFlagSet("kafka-iggy", pflag.ContinueOnError)
	fs.SetOutput(discard{})
	fs.SortFlags = false
	fs.StringP("config", "c", "", "YAML configuration file (see deploy/config.example.yaml)")
	def := reflect.ValueOf(DefaultConfig())
	for _, lf := range leafIndex().list {
		usage := fmt.Sprintf("%s; env %s; default %s", typeName(lf.typ), envName(lf.key), formatValue(def.FieldByIndex(lf.index), false))
		switch lf.typ.Kind() {
		case reflect.Bool:
			fs.Bool(lf.key, false, usage)
		case reflect.Map:
			fs.StringToString(lf.key, nil, usage)
		case reflect.Slice:
			fs.StringSlice(lf.key, nil, usage)
		default:
			fs.String(lf.key, "", usage)
		}
	}
	return fs
}

// configUsage describes the configuration flags.
func configUsage() string {
	fs := newFlagSet()
	return "Configuration: defaults < --config FILE < KAFKA_IGGY_* environment < flags.\n" +
		"Every key of docs/OPERATIONS.md is a flag:\n" + fs.FlagUsages()
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// formatValue renders a value for check-config, docs and flag help;
// secret hides non-empty strings and map values.
func formatValue(v reflect.Value, secret bool) string {
	if v.Type() == durationType {
		return time.Duration(v.Int()).String()
	}
	switch v.Kind() {
	case reflect.String:
		if secret && v.String() != "" {
			return maskedValue
		}
		if v.String() == "" {
			return `""`
		}
		return v.String()
	case reflect.Slice:
		parts := make([]string, v.Len())
		for i := range parts {
			parts[i] = formatValue(v.Index(i), secret)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case reflect.Map:
		keys := make([]string, 0, v.Len())
		for _, k := range v.MapKeys() {
			keys = append(keys, k.String())
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = k + ": " + formatValue(v.MapIndex(reflect.ValueOf(k)), secret)
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	return fmt.Sprint(v.Interface())
}

// MarshalZerologObject logs the configuration as flat keys with secrets
// masked, so log.Info().Object("config", cfg) is safe.
func (c Config) MarshalZerologObject(e *zerolog.Event) {
	v := reflect.ValueOf(c)
	for _, lf := range leafIndex().list {
		fv := v.FieldByIndex(lf.index)
		secret := secretKeys[lf.key]
		switch {
		case lf.typ == durationType:
			e.Str(lf.key, time.Duration(fv.Int()).String())
		case lf.typ.Kind() == reflect.Bool:
			e.Bool(lf.key, fv.Bool())
		case isInt(lf.typ.Kind()):
			e.Int64(lf.key, fv.Int())
		case isUint(lf.typ.Kind()):
			e.Uint64(lf.key, fv.Uint())
		case lf.typ.Kind() == reflect.String:
			s := fv.String()
			if secret && s != "" {
				s = maskedValue
			}
			e.Str(lf.key, s)
		default:
			e.Str(lf.key, formatValue(fv, secret))
		}
	}
}
