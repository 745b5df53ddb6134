package cluster

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/kafka-iggy/kafka-iggy/internal/tlsconf"
)

// Defaults of PeersConfig and CoordinationConfig.
const (
	DefaultDialTimeout      = time.Second
	DefaultHandshakeTimeout = 3 * time.Second
	DefaultCallTimeout      = 10 * time.Second
	DefaultMaxFrameBytes    = 8 << 20
	DefaultMaxConnections   = 256
	DefaultMaxInflightCalls = 500
	DefaultIdleTimeout      = 10 * time.Minute
	DefaultMaxMessageBytes  = 100 << 20
	DefaultDomain           = "default"
	DefaultStream           = "__kafka_iggy"
	DefaultShards           = 8
	DefaultSyncInterval     = time.Second
	DefaultLease            = 3 * time.Second
)

// PeersConfig is the peer listener (keys peers.*): the link between the
// sidecars of one coordination domain over which group requests reach the
// sidecar that owns the group. Off by default: with peers.address empty
// every sidecar coordinates its own pod's groups alone.
type PeersConfig struct {
	// Address is the host:port the peer listener binds, e.g. 0.0.0.0:9093.
	// Setting it turns on one Kafka group across the sidecars of a
	// coordination domain (peers.secret or peers.secret_file required).
	// Default "" (off).
	Address string `koanf:"address"`
	// AdvertisedHost is the host other sidecars dial, announced through
	// Iggy. Default "": the POD_IP environment variable (the downward API),
	// else the host of peers.address when it is not a wildcard.
	AdvertisedHost string `koanf:"advertised_host"`
	// Secret is the shared secret every sidecar of the domain proves it
	// knows (HMAC challenge; never sent). Give it through the environment
	// (KAFKA_IGGY_PEERS__SECRET from a Kubernetes Secret) or use
	// peers.secret_file. At least 32 bytes, and not a placeholder
	// ("change-me..."): the sidecar refuses to start otherwise. Default "".
	Secret string `koanf:"secret"`
	// SecretFile is a file holding the shared secret (a mounted Kubernetes
	// Secret); surrounding white space is ignored. Default "".
	SecretFile string `koanf:"secret_file"`
	// DialTimeout bounds connecting to another sidecar; a dead owner is
	// answered COORDINATOR_NOT_AVAILABLE after it. Default 1s.
	DialTimeout time.Duration `koanf:"dial_timeout"`
	// HandshakeTimeout bounds the authentication of a peer connection and
	// each frame write. Default 3s.
	HandshakeTimeout time.Duration `koanf:"handshake_timeout"`
	// CallTimeout bounds a forwarded call that does not park (Heartbeat,
	// OffsetCommit checks, DescribeGroups, ...). JoinGroup and SyncGroup
	// wait as long as the client's request does. Default 10s.
	CallTimeout time.Duration `koanf:"call_timeout"`
	// MaxFrameBytes caps one peer frame, 4096..67108864 bytes; a larger
	// call or answer (a JoinGroup answer carries every member's metadata)
	// travels in several frames, up to peers.max_message_bytes. Default
	// 8388608 (8 MiB).
	MaxFrameBytes int `koanf:"max_frame_bytes"`
	// MaxMessageBytes caps one forwarded call or answer, which travels in
	// frames of peers.max_frame_bytes (a JoinGroup answer carries every
	// member's metadata, a SyncGroup request every assignment), and what
	// one peer connection holds of messages still arriving;
	// peers.max_frame_bytes..1073741824 bytes. Default 104857600 (100 MiB,
	// limits.max_frame_bytes' default). Every sidecar of a domain should
	// use the same peers.max_frame_bytes and peers.max_message_bytes.
	MaxMessageBytes int `koanf:"max_message_bytes"`
	// MaxConnections caps the peer connections open at once, 1..65535;
	// more are closed at once (logged with close_reason
	// too_many_connections). Each sidecar of the domain keeps one
	// connection to each owner it forwards to. Default 256.
	MaxConnections int `koanf:"max_connections"`
	// MaxInflightCalls caps the calls of one peer connection served at
	// once (Kafka's queued.max.requests), 1..100000: past it the
	// connection is not read until one ends, so a peer cannot start a
	// goroutine per frame without limit. Parked JoinGroup and SyncGroup
	// calls count. Default 500.
	MaxInflightCalls int `koanf:"max_inflight_calls"`
	// IdleTimeout closes an authenticated peer connection that has had no
	// frame and no call in flight for it (Kafka's
	// connections.max.idle.ms); the forwarding sidecar dials again on its
	// next call. A connection that has not authenticated is closed after
	// peers.handshake_timeout. Default 10m.
	IdleTimeout time.Duration `koanf:"idle_timeout"`
	// TLS is mutual TLS on the peer link, beside the shared secret.
	TLS PeerTLSConfig `koanf:"tls"`
}

// PeerTLSConfig is mutual TLS between the sidecars of a domain (keys
// peers.tls.*): each side presents its certificate and verifies the
// other's against ca_file; the HMAC challenge still runs inside. The files
// are read again when they change (new connections use the new ones).
type PeerTLSConfig struct {
	// Enabled turns mutual TLS on; every sidecar of the domain must agree.
	// Default false.
	Enabled bool `koanf:"enabled"`
	// CertFile is this sidecar's PEM certificate chain, leaf first, used
	// both to serve and to dial. Required when enabled. Default "".
	CertFile string `koanf:"cert_file"`
	// KeyFile is CertFile's PEM private key. Required when enabled.
	// Default "".
	KeyFile string `koanf:"key_file"`
	// CAFile holds the PEM CA certificates peer certificates must chain
	// to. Required when enabled. Default "".
	CAFile string `koanf:"ca_file"`
	// ServerName, when set, is the name the owner's certificate must carry
	// (a DNS SAN), e.g. one certificate shared by the deployment's pods;
	// "" verifies the chain only (pods are dialled by IP). Default "".
	ServerName string `koanf:"server_name"`
}

// CoordinationConfig places a sidecar in a coordination domain (keys
// coordination.*): the sidecars of one domain share one Iggy consumer group
// on a system topic whose partitions are the shards of the group-id space.
type CoordinationConfig struct {
	// Domain names the coordination domain: every sidecar serving members
	// of one Kafka group must use the same domain, and sidecars of other
	// apps should use another. Topic coord.<domain> of
	// coordination.stream. Default "default".
	Domain string `koanf:"domain"`
	// Stream is the Iggy stream holding the coordination topics (never
	// shown to Kafka clients). Default "__kafka_iggy".
	Stream string `koanf:"stream"`
	// Shards is the number of shards (partitions of coord.<domain>) when
	// this sidecar creates the topic, 1..1000; an existing topic's
	// partition count wins. Default 8.
	Shards int `koanf:"shards"`
	// SyncInterval is how often the sidecar asks Iggy which shards it owns
	// (SYNC_CONSUMER_GROUP; also its keep-alive in the Iggy group).
	// Default 1s.
	SyncInterval time.Duration `koanf:"sync_interval"`
	// Lease is how long an owner keeps serving a shard after the last
	// SYNC that listed it was sent, and how long a new owner waits before
	// it serves a shard (plus 0.5s + 10%) unless the previous owner
	// released it. At least 2 × sync_interval + 1s. Default 3s.
	Lease time.Duration `koanf:"lease"`
}

// DefaultPeersConfig returns the documented defaults.
func DefaultPeersConfig() PeersConfig {
	return PeersConfig{
		DialTimeout:      DefaultDialTimeout,
		HandshakeTimeout: DefaultHandshakeTimeout,
		CallTimeout:      DefaultCallTimeout,
		MaxFrameBytes:    DefaultMaxFrameBytes,
		MaxMessageBytes:  DefaultMaxMessageBytes,
		MaxConnections:   DefaultMaxConnections,
		MaxInflightCalls: DefaultMaxInflightCalls,
		IdleTimeout:      DefaultIdleTimeout,
	}
}

// DefaultCoordinationConfig returns the documented defaults.
func DefaultCoordinationConfig() CoordinationConfig {
	return CoordinationConfig{
		Domain:       DefaultDomain,
		Stream:       DefaultStream,
		Shards:       DefaultShards,
		SyncInterval: DefaultSyncInterval,
		Lease:        DefaultLease,
	}
}

// Enabled reports whether cross-sidecar coordination is on.
func (c PeersConfig) Enabled() bool { return c.Address != "" }

// LoadSecret returns the shared secret from peers.secret or the file.
func (c PeersConfig) LoadSecret() ([]byte, error) {
	s := c.Secret
	if c.SecretFile != "" {
		raw, err := os.ReadFile(c.SecretFile)
		if err != nil {
			return nil, fmt.Errorf("peers.secret_file: %w", err)
		}
		s = strings.TrimSpace(string(raw))
	}
	if err := CheckSecret(s); err != nil {
		if c.SecretFile != "" {
			return nil, fmt.Errorf("peers.secret_file: %s: %w", c.SecretFile, err)
		}
		return nil, fmt.Errorf("peers.secret: %w", err)
	}
	return []byte(s), nil
}

// MinSecretBytes is the shortest peer secret accepted.
const MinSecretBytes = 32

// CheckSecret refuses a peer secret shorter than MinSecretBytes or one
// that is a placeholder (contains "change-me", "changeme" or
// "placeholder", as the values shipped in examples do).
func CheckSecret(s string) error {
	low := strings.ToLower(s)
	for _, p := range []string{"change-me", "changeme", "change_me", "placeholder"} {
		if strings.Contains(low, p) {
			return fmt.Errorf("a placeholder (contains %q): generate one, e.g. head -c 32 /dev/urandom | base64", p)
		}
	}
	if len(s) < MinSecretBytes {
		return fmt.Errorf("%d bytes; at least %d required (e.g. head -c 32 /dev/urandom | base64)", len(s), MinSecretBytes)
	}
	return nil
}

// Advertised returns the host:port other sidecars dial.
func (c PeersConfig) Advertised(boundPort int) (string, error) {
	host := c.AdvertisedHost
	if host == "" {
		host = os.Getenv("POD_IP")
	}
	if host == "" {
		h, _, err := net.SplitHostPort(c.Address)
		if err != nil {
			return "", fmt.Errorf("peers.address: %w", err)
		}
		if ip := net.ParseIP(h); h == "" || (ip != nil && ip.IsUnspecified()) {
			return "", errors.New("peers.advertised_host: required when peers.address binds a wildcard and POD_IP is not set")
		}
		host = h
	}
	return net.JoinHostPort(host, fmt.Sprint(boundPort)), nil
}

// Validate reports every problem of both sections.
func Validate(p PeersConfig, c CoordinationConfig) error {
	if !p.Enabled() {
		return nil
	}
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...)))
	}
	if _, _, err := net.SplitHostPort(p.Address); err != nil {
		bad("peers.address", "%v", err)
	}
	if p.SecretFile == "" {
		if p.Secret == "" {
			bad("peers.secret", "required when peers.address is set (or set peers.secret_file)")
		} else if err := CheckSecret(p.Secret); err != nil {
			bad("peers.secret", "%v", err)
		}
	} else if _, err := p.LoadSecret(); err != nil {
		errs = append(errs, err)
	}
	if p.DialTimeout <= 0 {
		bad("peers.dial_timeout", "must be positive")
	}
	if p.HandshakeTimeout <= 0 {
		bad("peers.handshake_timeout", "must be positive")
	}
	if p.CallTimeout <= 0 {
		bad("peers.call_timeout", "must be positive")
	}
	if p.MaxFrameBytes < handshakeMaxFrame || p.MaxFrameBytes > 64<<20 {
		bad("peers.max_frame_bytes", "must be %d..%d, got %d", handshakeMaxFrame, 64<<20, p.MaxFrameBytes)
	}
	if p.MaxMessageBytes < p.MaxFrameBytes || p.MaxMessageBytes > 1<<30 {
		bad("peers.max_message_bytes", "must be peers.max_frame_bytes (%d)..%d, got %d", p.MaxFrameBytes, 1<<30, p.MaxMessageBytes)
	}
	if p.MaxConnections < 1 || p.MaxConnections > 65535 {
		bad("peers.max_connections", "must be 1..65535, got %d", p.MaxConnections)
	}
	if p.MaxInflightCalls < 1 || p.MaxInflightCalls > 100000 {
		bad("peers.max_inflight_calls", "must be 1..100000, got %d", p.MaxInflightCalls)
	}
	if p.IdleTimeout <= 0 {
		bad("peers.idle_timeout", "must be positive")
	}
	if t := p.TLS; t.Enabled {
		if t.CAFile == "" {
			bad("peers.tls.ca_file", "required when peers.tls.enabled is true")
		}
		errs = append(errs, (tlsconf.Files{CertFile: t.CertFile, KeyFile: t.KeyFile, CAFile: t.CAFile}).Check("peers.tls.", true)...)
	}
	if c.Domain == "" || len(c.Domain) > 200 {
		bad("coordination.domain", "must be 1..200 bytes")
	}
	if c.Stream == "" || len(c.Stream) > 255 {
		bad("coordination.stream", "must be 1..255 bytes")
	}
	if c.Shards < 1 || c.Shards > 1000 {
		bad("coordination.shards", "must be 1..1000, got %d", c.Shards)
	}
	if c.SyncInterval <= 0 {
		bad("coordination.sync_interval", "must be positive")
	}
	if c.Lease < 2*c.SyncInterval+time.Second {
		bad("coordination.lease", "must be at least 2 × coordination.sync_interval + 1s (%s), got %s", 2*c.SyncInterval+time.Second, c.Lease)
	}
	return errors.Join(errs...)
}
