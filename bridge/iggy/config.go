package iggy

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
	"github.com/kafka-iggy/kafka-iggy/internal/tlsconf"
)

// Defaults of Config, one documented constant each (DefaultConfig uses them).
const (
	// DefaultUsername is the login user: Iggy's development root user.
	DefaultUsername = "iggy"
	// DefaultPassword is the development root user's password.
	DefaultPassword = "iggy"
	// DefaultPoolSize is the number of persistent Iggy sessions (4). Each
	// carries one request at a time (§1.9); coalescing makes a few enough.
	DefaultPoolSize = 4
	// DefaultRequestTimeout bounds one request on the wire (5s). It also
	// bounds the whole call when the caller's context has no deadline.
	DefaultRequestTimeout = 5 * time.Second
	// DefaultConnectTimeout bounds dial, TLS handshake and login (5s).
	DefaultConnectTimeout = 5 * time.Second
	// DefaultBackoffMin is the first reconnect delay (100ms), doubled per
	// failed attempt, with jitter.
	DefaultBackoffMin = 100 * time.Millisecond
	// DefaultBackoffMax caps the reconnect delay (5s).
	DefaultBackoffMax = 5 * time.Second
	// DefaultKeepaliveInterval bounds how long a silent server goes
	// unnoticed (15s: PING after 7.5s idle; Iggy evicts silent group
	// members after 36s, §1.10).
	DefaultKeepaliveInterval = 15 * time.Second
	// DefaultMaxBatchBytes caps the message frames of one coalesced
	// SEND_MESSAGES batch (4 MiB).
	DefaultMaxBatchBytes = 4 << 20
	// DefaultMaxBatchMessages caps the messages of one coalesced batch.
	DefaultMaxBatchMessages = 20000
	// DefaultMetadataTTL is how long a cached topic lookup is trusted (30s).
	DefaultMetadataTTL = 30 * time.Second

	// maxPoolSize bounds pool_size.
	maxPoolSize = 256
	// maxBatchBytesLimit: a batch must fit one 64 MiB frame.
	maxBatchBytesLimit = icodec.MaxFrameSize - sendOverhead
	// maxBatchMessagesLimit bounds max_batch_messages.
	maxBatchMessagesLimit = 1 << 24
)

// Config configures the Iggy client. Keys are given relative to the iggy
// section of the sidecar's configuration (iggy.pool_size, ...).
type Config struct {
	// Address is the Iggy server's TCP host:port. Default "": the sidecar
	// then starts the embedded server and fills this in before New (New
	// refuses an empty address).
	Address string `koanf:"address"`
	// Username and Password log the sessions in (LOGIN_REGISTER). The
	// server accepts usernames of 3..50 and passwords of 3..100 bytes.
	// Default "iggy"/"iggy" (development root). Ignored when
	// PersonalAccessToken is set.
	Username string `koanf:"username"`
	// Password: see Username. Default "iggy".
	Password string `koanf:"password"`
	// PersonalAccessToken, when set, logs in with LOGIN_REGISTER_WITH_PAT
	// instead of username/password. Default "".
	PersonalAccessToken string `koanf:"personal_access_token"`
	// Protocol is the Iggy binary protocol generation the sessions speak:
	// "0.11" (Iggy server 0.9), "0.12" (Iggy server 0.10) or "auto", which
	// logs in with the newest and, when the server evicts the login as
	// incompatible, picks the generation its version window accepts: once
	// per server (the pool's sessions wait for the first login, and the
	// generation is reused by later pools to the same address and by peer
	// pools), again only when a login is refused for its protocol. The
	// chosen one is logged (iggy_protocol) and exported as
	// upstream_protocol_info{protocol}. Default "auto".
	Protocol string `koanf:"protocol"`
	// FollowLeader: after each login a session asks GET_CLUSTER_METADATA and,
	// when the cluster lists more than one node and a healthy leader with a
	// TCP endpoint other than the one it is on, reconnects there (at most 3
	// hops; a failed hop goes back to the node it came from). Address stays
	// the bootstrap: a dropped session starts from it again. A one-node
	// server is never left. Default true.
	FollowLeader bool `koanf:"follow_leader"`
	// RoutePartitions: on protocol 0.12 (Iggy server 0.10), when
	// GET_CLUSTER_METADATA lists more than one node, partition requests
	// (sends, polls, consumer-offset reads, stores and deletes) go to the
	// node of the partition's primary, found with GET_PARTITION_ROUTE
	// (cached per partition for MetadataTTL, dropped on a 89 NotPrimary or
	// 87 HistoryUnavailable answer) and reached through a pool of PoolSize
	// sessions opened to that node on first use (at most 32 nodes). On a
	// one-node server or at 0.11 it costs nothing. Default true.
	RoutePartitions bool `koanf:"route_partitions"`
	// TLS wraps the connections in TLS.
	TLS TLSConfig `koanf:"tls"`
	// PoolSize is the number of persistent sessions (Iggy connections),
	// 1-256. Partition writes are pinned to one session ("lane") by a hash
	// of stream, topic and partition. Default 4.
	PoolSize int `koanf:"pool_size"`
	// RequestTimeout is the deadline of one request on the wire; when it
	// passes the session is dropped and registered again. It is also the
	// whole call's deadline when the caller's context has none. Default 5s.
	RequestTimeout time.Duration `koanf:"request_timeout"`
	// ConnectTimeout bounds dial, TLS handshake and login of one session.
	// Default 5s.
	ConnectTimeout time.Duration `koanf:"connect_timeout"`
	// BackoffMin is the first delay before registering a dropped session
	// again; it doubles per failed attempt up to BackoffMax, with jitter
	// (a random value between half and all of it). Default 100ms.
	BackoffMin time.Duration `koanf:"backoff_min"`
	// BackoffMax caps the reconnect delay. Default 5s.
	BackoffMax time.Duration `koanf:"backoff_max"`
	// KeepaliveInterval bounds how long a silent Iggy server goes
	// unnoticed: an idle session sends PING after half of it and drops the
	// connection (and reconnects) when no answer comes within the other
	// half. A server that closes or resets the connection is noticed at
	// once, keep-alive or not. 0 disables keep-alive. Default 15s.
	KeepaliveInterval time.Duration `koanf:"keepalive_interval"`
	// Coalesce merges the sends queued for one partition while its lane is
	// busy into one Iggy batch. Off, every Send is its own SEND_MESSAGES.
	// Default true.
	Coalesce bool `koanf:"coalesce"`
	// MaxBatchBytes caps the message-frame bytes of one coalesced batch; a
	// single Send above it leaves as several consecutive batches. 1 KiB up
	// to 64 MiB minus framing (67107840). Default 4194304 (4 MiB).
	MaxBatchBytes int `koanf:"max_batch_bytes"`
	// MaxBatchMessages caps the messages of one coalesced batch; a single
	// Send above it is split likewise. 1-16777216. Default 20000.
	MaxBatchMessages int `koanf:"max_batch_messages"`
	// MetadataTTL is how long a cached stream/topic lookup is used before
	// it is fetched again. 0 keeps entries until they are invalidated (a
	// not-found reply invalidates them in any case). Default 30s.
	MetadataTTL time.Duration `koanf:"metadata_ttl"`
}

// TLSConfig configures TLS towards the Iggy server.
type TLSConfig struct {
	// Enabled turns TLS on. Default false.
	Enabled bool `koanf:"enabled"`
	// CAFile is a PEM file of CA certificates to verify the server with.
	// Default "": the system roots.
	CAFile string `koanf:"ca_file"`
	// InsecureSkipVerify accepts any server certificate. For tests only.
	// Default false.
	InsecureSkipVerify bool `koanf:"insecure_skip_verify"`
	// ServerName is the name expected in the server certificate (and sent
	// as SNI). Default "": the host of Address.
	ServerName string `koanf:"server_name"`
	// CertFile is a PEM client certificate chain offered when the server
	// (or a TLS proxy in front of it) asks for one; reloaded when the file
	// changes. Iggy's own TCP TLS listener does not ask. Default "".
	CertFile string `koanf:"cert_file"`
	// KeyFile is CertFile's PEM private key. Default "".
	KeyFile string `koanf:"key_file"`
}

// DefaultConfig returns the documented defaults.
func DefaultConfig() Config {
	return Config{
		Username:          DefaultUsername,
		Protocol:          ProtocolAuto,
		FollowLeader:      true,
		RoutePartitions:   true,
		Password:          DefaultPassword,
		PoolSize:          DefaultPoolSize,
		RequestTimeout:    DefaultRequestTimeout,
		ConnectTimeout:    DefaultConnectTimeout,
		BackoffMin:        DefaultBackoffMin,
		BackoffMax:        DefaultBackoffMax,
		KeepaliveInterval: DefaultKeepaliveInterval,
		Coalesce:          true,
		MaxBatchBytes:     DefaultMaxBatchBytes,
		MaxBatchMessages:  DefaultMaxBatchMessages,
		MetadataTTL:       DefaultMetadataTTL,
	}
}

// Validate returns every problem at once (errors.Join), each naming its key
// under iggy. An empty Address is accepted (see Config.Address).
func (c Config) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("iggy.%s: %s", key, fmt.Sprintf(format, args...)))
	}
	if c.Address != "" {
		if _, port, err := net.SplitHostPort(c.Address); err != nil {
			bad("address", "%q is not host:port: %v", c.Address, err)
		} else if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
			bad("address", "port %q is not 1-65535", port)
		}
	}
	if c.PersonalAccessToken == "" {
		if n := len(c.Username); n < icodec.LimitLoginUsernameMinLength || n > icodec.LimitLoginUsernameMaxLength {
			bad("username", "length %d is not %d-%d bytes (or set iggy.personal_access_token)", n, icodec.LimitLoginUsernameMinLength, icodec.LimitLoginUsernameMaxLength)
		}
		if n := len(c.Password); n < icodec.LimitLoginPasswordMinLength || n > icodec.LimitLoginPasswordMaxLength {
			bad("password", "length %d is not %d-%d bytes", n, icodec.LimitLoginPasswordMinLength, icodec.LimitLoginPasswordMaxLength)
		}
	} else if len(c.PersonalAccessToken) > icodec.LimitMaxNameLength {
		bad("personal_access_token", "longer than %d bytes", icodec.LimitMaxNameLength)
	}
	if _, _, err := c.protocol(); err != nil {
		bad("protocol", "%v", err)
	}
	if c.TLS.CAFile != "" && !c.TLS.Enabled {
		bad("tls.ca_file", "set but iggy.tls.enabled is false")
	}
	if (c.TLS.CertFile != "" || c.TLS.KeyFile != "") && !c.TLS.Enabled {
		bad("tls.cert_file", "set but iggy.tls.enabled is false")
	}
	if c.TLS.Enabled {
		for _, err := range (tlsconf.Files{CertFile: c.TLS.CertFile, KeyFile: c.TLS.KeyFile}).Check("tls.", false) {
			key, msg, _ := strings.Cut(err.Error(), ": ")
			bad(key, "%s", msg)
		}
	}
	if c.PoolSize < 1 || c.PoolSize > maxPoolSize {
		bad("pool_size", "%d is not 1-%d", c.PoolSize, maxPoolSize)
	}
	if c.RequestTimeout <= 0 {
		bad("request_timeout", "%v is not positive", c.RequestTimeout)
	}
	if c.ConnectTimeout <= 0 {
		bad("connect_timeout", "%v is not positive", c.ConnectTimeout)
	}
	if c.BackoffMin <= 0 {
		bad("backoff_min", "%v is not positive", c.BackoffMin)
	}
	if c.BackoffMax < c.BackoffMin {
		bad("backoff_max", "%v is below iggy.backoff_min (%v)", c.BackoffMax, c.BackoffMin)
	}
	if c.KeepaliveInterval < 0 {
		bad("keepalive_interval", "%v is negative (0 = off)", c.KeepaliveInterval)
	}
	if c.MaxBatchBytes < 1024 || c.MaxBatchBytes > maxBatchBytesLimit {
		bad("max_batch_bytes", "%d is not 1024-%d", c.MaxBatchBytes, maxBatchBytesLimit)
	}
	if c.MaxBatchMessages < 1 || c.MaxBatchMessages > maxBatchMessagesLimit {
		bad("max_batch_messages", "%d is not 1-%d", c.MaxBatchMessages, maxBatchMessagesLimit)
	}
	if c.MetadataTTL < 0 {
		bad("metadata_ttl", "%v is negative (0 = until invalidated)", c.MetadataTTL)
	}
	return errors.Join(errs...)
}

// ProtocolAuto is the iggy.protocol value that negotiates the generation.
const ProtocolAuto = "auto"

// protocol parses Protocol: the version to announce first and whether the
// generation may be renegotiated from an eviction's window.
func (c Config) protocol() (icodec.ProtocolVersion, bool, error) {
	if c.Protocol == ProtocolAuto || c.Protocol == "" {
		return icodec.ProtocolLatest, true, nil
	}
	v, err := icodec.ParseProtocolVersion(c.Protocol)
	if err != nil || !v.Known() || v.Patch() != 0 {
		var names []string
		for _, p := range icodec.Protocols {
			names = append(names, p.Label())
		}
		return 0, false, fmt.Errorf("%q is not auto or one of %s", c.Protocol, strings.Join(names, ", "))
	}
	return v.Generation(), false, nil
}

// tlsConfig builds the TLS client configuration, or nil when TLS is off.
func (c Config) tlsConfig(log zerolog.Logger) (*tls.Config, error) {
	if !c.TLS.Enabled {
		return nil, nil
	}
	tc := &tls.Config{
		MinVersion:         tls.VersionTLS12,
		ServerName:         c.TLS.ServerName,
		InsecureSkipVerify: c.TLS.InsecureSkipVerify, //nolint:gosec // an explicit, documented test setting
	}
	if tc.ServerName == "" {
		if host, _, err := net.SplitHostPort(c.Address); err == nil {
			tc.ServerName = host
		}
	}
	if c.TLS.CAFile != "" {
		pem, err := os.ReadFile(c.TLS.CAFile)
		if err != nil {
			return nil, fmt.Errorf("iggy.tls.ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("iggy.tls.ca_file: %s holds no PEM certificate", c.TLS.CAFile)
		}
		tc.RootCAs = pool
	}
	if c.TLS.CertFile != "" {
		rl, err := tlsconf.NewReloader(tlsconf.Files{CertFile: c.TLS.CertFile, KeyFile: c.TLS.KeyFile}, log)
		if err != nil {
			return nil, fmt.Errorf("iggy.tls.cert_file: %w", err)
		}
		tc.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			cert, _ := rl.Current()
			return cert, nil
		}
	}
	return tc, nil
}
