package embedded

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

// Defaults of Config (see DefaultConfig).
const (
	// DefaultListen is the TCP address the server listens on.
	DefaultListen = "127.0.0.1:8090"
	// DefaultRootUsername and DefaultRootPassword are the credentials of the
	// root user (id 0) created at first start.
	DefaultRootUsername = "iggy"
	// DefaultRootPassword is the root user's password at first start.
	DefaultRootPassword = "iggy"
	// DefaultProtocol is the protocol generation the server speaks.
	DefaultProtocol = "0.11"
	// DefaultServerVersion is the build version announced at login and in
	// GET_STATS.
	DefaultServerVersion = "0.9.0-embedded"
	// DefaultServerVersion012 replaces DefaultServerVersion with protocol 0.12.
	DefaultServerVersion012 = "0.10.0-embedded"
	// DefaultMaxFrameBytes is the largest accepted frame, header included
	// (64 MiB, reference §1.2).
	DefaultMaxFrameBytes = iggy.LimitMaxFrameSize
	// DefaultHeartbeatInterval is the heartbeat interval; consumer-group
	// members silent for 1.2 × this are evicted (reference §1.10).
	DefaultHeartbeatInterval = 30 * time.Second
	// DefaultRebalanceTimeout bounds how long a partition stays pending
	// revocation (reference §7.4).
	DefaultRebalanceTimeout = 30 * time.Second
	// DefaultRetentionInterval is how often segment retention runs.
	DefaultRetentionInterval = 10 * time.Second
	// DefaultReplyCacheSize is how many metadata replies are kept per
	// session for request-number deduplication.
	DefaultReplyCacheSize = 32
)

// Config configures the embedded Iggy server. Build one with DefaultConfig
// and change what you need; New calls Validate.
type Config struct {
	// Listen is the TCP listen address, host:port; port 0 picks a free
	// port (see Server.Addr). Default "127.0.0.1:8090".
	Listen string `koanf:"listen"`
	// DataDir is the directory for metadata, segment files and offsets;
	// empty keeps everything in memory. Default "".
	DataDir string `koanf:"data_dir"`
	// RootUsername is the root user's name, used when the server starts
	// without stored metadata (3..50 bytes). Default "iggy".
	RootUsername string `koanf:"root_username"`
	// RootPassword is the root user's password at first start
	// (3..100 bytes). Default "iggy".
	RootPassword string `koanf:"root_password"`
	// Protocol is the protocol generation the server speaks: "0.11" (Iggy
	// server 0.9; clients 0.11.0..0.11.1023 are accepted) or "0.12" (Iggy
	// server 0.10, held to the 0.10 rules of docs/iggy-protocol-0.12.md:
	// clients 0.12.0..0.12.1023, a bind secret in the login bodies, the 0.12
	// reply shapes, UPDATE_RESOURCE instead of the update commands, purge and
	// flush refused as unknown). Default "0.11".
	Protocol string `koanf:"protocol"`
	// ServerVersion is the build version string sent in the login reply and
	// GET_STATS. Default "0.9.0-embedded" ("0.10.0-embedded" with protocol
	// 0.12).
	ServerVersion string `koanf:"server_version"`
	// MaxFrameBytes is the largest frame accepted or sent, header included,
	// in bytes: 512 .. 67108864. A larger frame drops the connection.
	// Default 67108864 (64 MiB).
	MaxFrameBytes uint32 `koanf:"max_frame_bytes"`
	// HeartbeatInterval is the heartbeat interval; consumer-group members
	// that send nothing for 1.2 × this are evicted with StaleClient. Must be
	// positive. Default 30s.
	HeartbeatInterval time.Duration `koanf:"heartbeat_interval"`
	// RebalanceTimeout is how long a partition moved away from a member
	// with polled-but-uncommitted messages waits for that member's commit
	// before it moves anyway. Must be positive. Default 30s.
	RebalanceTimeout time.Duration `koanf:"rebalance_timeout"`
	// RetentionInterval is how often message_expiry / max_topic_size
	// retention runs over all partitions. Must be positive. Default 10s.
	RetentionInterval time.Duration `koanf:"retention_interval"`
	// ReplyCacheSize is the number of metadata replies kept per session to
	// answer a resent request number (reference §1.8.3): 1 .. 4096.
	// Default 32.
	ReplyCacheSize int `koanf:"reply_cache_size"`
	// ReplyToMalformed makes the server answer the requests the real
	// server drops without a reply (malformed SEND_MESSAGES batch, JOIN or
	// LEAVE with an undecodable body, a reused request number with another
	// checksum) with a status instead: 4027 for a bad message checksum,
	// 4039 for a bad batch checksum, 3 otherwise. Headers that fail
	// validation are still dropped. For debugging only. Default false.
	ReplyToMalformed bool `koanf:"reply_to_malformed"`
	// ExternalGroups enables consumer kind 3 (ExternalGroup) with its
	// post-0.11 semantics: offsets only, no membership fence, no range
	// check, refused for polling, not pinning retention, deleted with the
	// consumer group of the same name, while the server still announces
	// protocol 0.11 (so a sidecar's offsets.mode auto picks consumer and
	// only a pinned external-group uses it). When false the server answers
	// kind 3 as a real 0.11 server does: GET_CONSUMER_OFFSET status 0 with
	// an empty body, STORE and DELETE_CONSUMER_OFFSET ResourceNotFound.
	// Always on with protocol 0.12, whose wire has kind 3. Default false.
	ExternalGroups bool `koanf:"external_groups"`
	// SDKDurabilityOptions serves the topic option keys "durability" and
	// "consumer_offset_durability" (String "replicated" or "persisted") as
	// the generated catalog describes them: accepted on CREATE_TOPIC, listed
	// by DESCRIBE_OPTIONS, filled into the derived options. The official
	// Rust SDK 0.11.0 sends both in every CREATE_TOPIC, so refusing them
	// makes every SDK create_topic fail. Durability "persisted" fsyncs
	// appends and consumer_offset_durability "persisted" fsyncs offset
	// stores, as enforce_fsync does both. When false the server keeps to
	// the reference's 8-key catalog: both keys are refused with 4041 and
	// appear nowhere. Default true.
	SDKDurabilityOptions bool `koanf:"sdk_durability_options"`
	// PprofAddr, when set, serves Go's profiler (net/http/pprof, under
	// /debug/pprof/) of the process running the server on this loopback
	// address, host:port with host 127.0.0.1, ::1 or localhost (port 0
	// picks one, see Server.PprofAddr). It is for tuning: the profiles
	// cover the whole process (in `kafka-iggy serve` the sidecar as well,
	// where admin.pprof serves the same). Empty (the default) serves
	// nothing. Default "".
	PprofAddr string `koanf:"pprof_addr"`
	// TLS serves the TCP listener over TLS only, as Iggy's [tcp.tls]
	// (enabled, cert_file, key_file; no client certificates).
	TLS TLSConfig `koanf:"tls"`
}

// TLSConfig is TLS on the embedded server's TCP listener (keys
// embedded.tls.*), named as Iggy's tcp.tls section. The sidecar's client
// then needs iggy.tls.enabled (and iggy.tls.ca_file for a private CA).
type TLSConfig struct {
	// Enabled serves TLS instead of plain TCP. Default false.
	Enabled bool `koanf:"enabled"`
	// CertFile is the PEM certificate chain, leaf first. Required when
	// enabled. Default "".
	CertFile string `koanf:"cert_file"`
	// KeyFile is CertFile's PEM private key. Required when enabled.
	// Default "".
	KeyFile string `koanf:"key_file"`
}

// DefaultConfig returns the configuration with every default applied.
func DefaultConfig() Config {
	return Config{
		Listen:               DefaultListen,
		RootUsername:         DefaultRootUsername,
		RootPassword:         DefaultRootPassword,
		Protocol:             DefaultProtocol,
		ServerVersion:        DefaultServerVersion,
		MaxFrameBytes:        DefaultMaxFrameBytes,
		HeartbeatInterval:    DefaultHeartbeatInterval,
		RebalanceTimeout:     DefaultRebalanceTimeout,
		RetentionInterval:    DefaultRetentionInterval,
		ReplyCacheSize:       DefaultReplyCacheSize,
		SDKDurabilityOptions: true,
	}
}

// Validate reports every problem of c at once, each naming its key.
func (c Config) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("embedded.%s: %s", key, fmt.Sprintf(format, args...)))
	}
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		bad("listen", "%q is not host:port: %v", c.Listen, err)
	}
	if t := c.TLS; t.Enabled {
		switch {
		case t.CertFile == "":
			bad("tls.cert_file", "required when embedded.tls.enabled is true")
		case t.KeyFile == "":
			bad("tls.key_file", "required when embedded.tls.enabled is true")
		default:
			if _, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile); err != nil {
				bad("tls.cert_file", "cannot load the key pair %s / %s: %v", t.CertFile, t.KeyFile, err)
			}
		}
	}
	if n := len(c.RootUsername); n < iggy.LimitLoginUsernameMinLength || n > iggy.LimitLoginUsernameMaxLength {
		bad("root_username", "must be 3..50 bytes, got %d", n)
	}
	if n := len(c.RootPassword); n < iggy.LimitLoginPasswordMinLength || n > iggy.LimitLoginPasswordMaxLength {
		bad("root_password", "must be 3..100 bytes, got %d", n)
	}
	if _, err := protocolOf(c.Protocol); err != nil {
		bad("protocol", "%v", err)
	}
	if n := len(c.ServerVersion); n < 1 || n > 255 {
		bad("server_version", "must be 1..255 bytes, got %d", n)
	}
	if c.MaxFrameBytes < 512 || c.MaxFrameBytes > iggy.LimitMaxFrameSize {
		bad("max_frame_bytes", "must be 512..%d, got %d", iggy.LimitMaxFrameSize, c.MaxFrameBytes)
	}
	if c.HeartbeatInterval <= 0 {
		bad("heartbeat_interval", "must be positive, got %s", c.HeartbeatInterval)
	}
	if c.RebalanceTimeout <= 0 {
		bad("rebalance_timeout", "must be positive, got %s", c.RebalanceTimeout)
	}
	if c.RetentionInterval <= 0 {
		bad("retention_interval", "must be positive, got %s", c.RetentionInterval)
	}
	if c.ReplyCacheSize < 1 || c.ReplyCacheSize > 4096 {
		bad("reply_cache_size", "must be 1..4096, got %d", c.ReplyCacheSize)
	}
	if c.PprofAddr != "" {
		if err := loopbackAddr(c.PprofAddr); err != nil {
			bad("pprof_addr", "%v", err)
		}
	}
	return errors.Join(errs...)
}

// loopbackAddr checks that addr is host:port on a loopback host.
func loopbackAddr(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q is not host:port: %v", addr, err)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return fmt.Errorf("%q: port must be 0..65535", addr)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("%q is not a loopback address (use 127.0.0.1, ::1 or localhost)", addr)
	}
	return nil
}

// protocolOf maps the Protocol setting to the server's packed version.
func protocolOf(s string) (iggy.ProtocolVersion, error) {
	switch s {
	case "0.11", "0.11.0":
		return iggy.Protocol011, nil
	case "0.12", "0.12.0":
		return iggy.Protocol012, nil
	}
	return 0, fmt.Errorf("unsupported protocol %q (supported: 0.11, 0.12)", s)
}
