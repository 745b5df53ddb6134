package proxy

import (
	"errors"
	"fmt"
	"math"
	"net"
	"strconv"
	"time"

	"github.com/panjf2000/gnet/v2"
)

// Defaults of Config, one documented constant each (DefaultConfig uses them).
const (
	// DefaultAddress is where the sidecar listens: loopback only, Kafka's
	// port, so only the application in the same pod can connect.
	DefaultAddress = "127.0.0.1:9092"
	// DefaultMaxFrameBytes bounds one request frame: 100 MiB, the same as
	// Kafka's socket.request.max.bytes (104857600).
	DefaultMaxFrameBytes = 100 << 20
	// DefaultMaxConnections bounds concurrent client connections. A sidecar
	// serves one pod's clients; 1024 is far above what they open.
	DefaultMaxConnections = 1024
	// DefaultMaxInFlight is the per-connection cap on requests being
	// served: 5, Kafka's max.in.flight.requests.per.connection default.
	DefaultMaxInFlight = 5
	// DefaultMaxInboundBytes bounds the bytes gnet may hold for a
	// connection whose reading is paused (128 MiB: one maximal frame plus
	// room for pipelined requests). See LimitsConfig.MaxInboundBytes.
	DefaultMaxInboundBytes = 128 << 20
	// DefaultMaxOutboundBytes is the unsent-reply volume above which a
	// connection stops taking new requests (32 MiB).
	DefaultMaxOutboundBytes = 32 << 20
	// DefaultIdleTimeout closes a connection with nothing in flight and no
	// traffic for this long: 10 minutes, Kafka's connections.max.idle.ms.
	DefaultIdleTimeout = 10 * time.Minute
	// DefaultMemoryBytes is the memory budget when limits.memory_bytes is 0
	// and the process has no cgroup memory limit (1 GiB).
	DefaultMemoryBytes = 1 << 30
	// minMemoryBytes is the smallest accepted memory budget (4 MiB).
	minMemoryBytes = 4 << 20
	// DefaultDrainTimeout is how long Shutdown lets in-flight requests
	// finish when its context has no earlier deadline (30s).
	DefaultDrainTimeout = 30 * time.Second
	// DefaultBufferCap is gnet's read and write buffer size (64 KiB).
	DefaultBufferCap = 64 << 10
	// DefaultWorkerPoolSize caps the handler goroutines, which are started
	// on demand and may block on Iggy or on a fetch wait.
	DefaultWorkerPoolSize = 1024
	// DefaultWorkerQueueSize caps the requests waiting for a free handler
	// goroutine; when it is full, connections stop reading (backpressure).
	DefaultWorkerQueueSize = 1024

	// maxInFlightLimit is the largest accepted MaxInFlight (the reorder
	// ring is allocated at this size per connection).
	maxInFlightLimit = 1024
	// minFrameBytes: a request header needs at least 8 bytes (key, version,
	// correlation id) plus a 2-byte client id length.
	minFrameBytes = 10
)

// Load-balancing algorithms accepted by GnetConfig.LoadBalancing.
const (
	// LBRoundRobin hands new connections to the loops in turn (default).
	LBRoundRobin = "round-robin"
	// LBLeastConnections hands a new connection to the loop with fewest.
	LBLeastConnections = "least-connections"
	// LBSourceAddrHash picks the loop by a hash of the client address.
	LBSourceAddrHash = "source-addr-hash"
)

// Config configures the Kafka front door. Keys below are relative to where
// the caller mounts this struct in its koanf tree.
type Config struct {
	// Listener is where clients connect and what Metadata advertises.
	Listener ListenerConfig `koanf:"listener"`
	// Limits bound memory and concurrency per connection and in total.
	Limits LimitsConfig `koanf:"limits"`
	// Gnet tunes the event loops and the worker pool.
	Gnet GnetConfig `koanf:"gnet"`
}

// ListenerConfig says where to listen and what address to advertise.
type ListenerConfig struct {
	// Address is the TCP host:port to listen on. Default "127.0.0.1:9092".
	// Port 0 picks a free port (tests); Server.Addr reports it.
	Address string `koanf:"address"`
	// AdvertisedHost is the host the bridge's Metadata and FindCoordinator
	// responses give clients. Default "": the host of Address, which must
	// then not be a wildcard (0.0.0.0, ::, empty).
	AdvertisedHost string `koanf:"advertised_host"`
	// AdvertisedPort is the advertised port, 1-65535. Default 0: the port
	// actually bound.
	AdvertisedPort int `koanf:"advertised_port"`
}

// LimitsConfig bounds what one client, and all clients together, can make
// the front door hold.
type LimitsConfig struct {
	// MaxFrameBytes is the largest request frame accepted, in bytes,
	// excluding the 4-byte size prefix. A larger size prefix closes the
	// connection (close_reason frame_too_large) before anything is
	// allocated. Default 104857600 (100 MiB).
	MaxFrameBytes int `koanf:"max_frame_bytes"`
	// MaxConnections is the most client connections open at once; further
	// connections are accepted and closed at once (close_reason
	// too_many_connections). 0 means no limit. Default 1024.
	MaxConnections int `koanf:"max_connections"`
	// MaxInFlight is the most requests of one connection being served at
	// once (taken off the socket but whose reply is not yet written). When
	// reached, the connection's input is left unread until a reply goes
	// out. 1-1024. Default 5.
	MaxInFlight int `koanf:"max_in_flight"`
	// MaxInboundBytes bounds, in bytes, what gnet buffers for a connection
	// while the front door is not consuming its input (in-flight cap,
	// worker queue full, unsent replies). gnet cannot stop reading a
	// socket, so a client that keeps sending past this is closed
	// (close_reason inbound_overflow). Must be at least MaxFrameBytes+4.
	// Default 134217728 (128 MiB).
	MaxInboundBytes int `koanf:"max_inbound_bytes"`
	// MaxOutboundBytes: while more than this many reply bytes wait in gnet
	// for a slow reader, the connection takes no new requests; it resumes
	// on a later tick. 0 means no limit. Default 33554432 (32 MiB).
	MaxOutboundBytes int `koanf:"max_outbound_bytes"`
	// IdleTimeout closes a connection with no request in flight and no
	// traffic for this long (close_reason idle_timeout). 0 disables it.
	// Default 10m.
	IdleTimeout time.Duration `koanf:"idle_timeout"`
	// DrainTimeout is how long Shutdown waits for in-flight requests
	// before closing connections, when its context has no earlier deadline.
	// Default 30s.
	DrainTimeout time.Duration `koanf:"drain_timeout"`
	// MemoryBytes is the memory budget of the whole process, in bytes:
	// request frames being assembled, produce batches on their way to Iggy,
	// fetch buffers and unsent replies all draw from it. When it is used
	// up, connections stop taking requests off their sockets and fetches
	// answer what fits (or wait up to their max_wait): backpressure, never
	// an error. A request draws its frame size times its API's charge
	// (what decoding it and building its response hold; Produce 14, as
	// small records expand into Iggy messages) until its reply is
	// written. GOMEMLIMIT is set from it (see docs/OPERATIONS.md). 0
	// derives it from the cgroup memory limit (cgroup v2 memory.max, v1
	// memory.limit_in_bytes) when there is one: the limit less a quarter,
	// at least 64 MiB, at most half (256 MiB gives 192 MiB); else
	// 1073741824 (1 GiB).
	// At least 4194304, and not below limits.max_frame_bytes (whose
	// default is lowered to the budget when larger). Default 0.
	MemoryBytes int64 `koanf:"memory_bytes"`
}

// GnetConfig holds every gnet event-loop setting used, plus the worker pool
// that runs handlers off the loops.
type GnetConfig struct {
	// Multicore runs one event loop per usable CPU (GOMAXPROCS) instead of
	// one. Default true.
	Multicore bool `koanf:"multicore"`
	// NumEventLoop sets the number of event loops explicitly; 0 means
	// GOMAXPROCS when Multicore is set, else 1. Default 0.
	NumEventLoop int `koanf:"num_event_loop"`
	// LockOSThread pins each event loop to an OS thread. Default false.
	LockOSThread bool `koanf:"lock_os_thread"`
	// TCPNoDelay sets TCP_NODELAY on client sockets (no Nagle delay on
	// small replies). Default true.
	TCPNoDelay bool `koanf:"tcp_no_delay"`
	// TCPKeepAlive enables TCP keep-alive with this idle period; 0 leaves
	// it off. Default 0.
	TCPKeepAlive time.Duration `koanf:"tcp_keep_alive"`
	// ReadBufferCap is how many bytes a loop reads from a socket per
	// readable event, in bytes (rounded up to a power of two by gnet).
	// Default 65536.
	ReadBufferCap int `koanf:"read_buffer_cap"`
	// WriteBufferCap is the size of a connection's static outbound buffer,
	// in bytes (rounded up to a power of two by gnet). Default 65536.
	WriteBufferCap int `koanf:"write_buffer_cap"`
	// SocketRecvBuffer sets SO_RCVBUF in bytes; 0 keeps the OS default.
	SocketRecvBuffer int `koanf:"socket_recv_buffer"`
	// SocketSendBuffer sets SO_SNDBUF in bytes; 0 keeps the OS default.
	SocketSendBuffer int `koanf:"socket_send_buffer"`
	// EdgeTriggeredIO switches epoll to edge-triggered mode. Default false.
	EdgeTriggeredIO bool `koanf:"edge_triggered_io"`
	// ReusePort sets SO_REUSEPORT and gives each loop its own listener.
	// Needs a fixed (non-zero) port. Default false.
	ReusePort bool `koanf:"reuse_port"`
	// ReuseAddr sets SO_REUSEADDR, so a restarted sidecar can bind at once.
	// Default true.
	ReuseAddr bool `koanf:"reuse_addr"`
	// LoadBalancing assigns new connections to loops: "round-robin",
	// "least-connections" or "source-addr-hash". Default "round-robin".
	LoadBalancing string `koanf:"load_balancing"`
	// WorkerPoolSize is the most handler goroutines running at once; they
	// are started on demand. Default 1024.
	WorkerPoolSize int `koanf:"worker_pool_size"`
	// WorkerQueueSize is the most requests waiting for a handler goroutine;
	// when full, connections stop reading until a slot frees (nothing is
	// dropped). Default 1024.
	WorkerQueueSize int `koanf:"worker_queue_size"`
}

// DefaultConfig returns the documented defaults.
func DefaultConfig() Config {
	return Config{
		Listener: ListenerConfig{Address: DefaultAddress},
		Limits: LimitsConfig{
			MaxFrameBytes:    DefaultMaxFrameBytes,
			MaxConnections:   DefaultMaxConnections,
			MaxInFlight:      DefaultMaxInFlight,
			MaxInboundBytes:  DefaultMaxInboundBytes,
			MaxOutboundBytes: DefaultMaxOutboundBytes,
			IdleTimeout:      DefaultIdleTimeout,
			DrainTimeout:     DefaultDrainTimeout,
		},
		Gnet: GnetConfig{
			Multicore:       true,
			TCPNoDelay:      true,
			ReadBufferCap:   DefaultBufferCap,
			WriteBufferCap:  DefaultBufferCap,
			ReuseAddr:       true,
			LoadBalancing:   LBRoundRobin,
			WorkerPoolSize:  DefaultWorkerPoolSize,
			WorkerQueueSize: DefaultWorkerQueueSize,
		},
	}
}

// Validate returns every problem at once (errors.Join), each naming its key.
func (c Config) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...)))
	}

	host, port, err := net.SplitHostPort(c.Listener.Address)
	if err != nil {
		bad("listener.address", "%q is not host:port: %v", c.Listener.Address, err)
	} else {
		p, perr := strconv.Atoi(port)
		if perr != nil || p < 0 || p > math.MaxUint16 {
			bad("listener.address", "port %q is not 0-65535", port)
		} else if p == 0 && c.Gnet.ReusePort {
			bad("gnet.reuse_port", "needs a fixed port in listener.address (each loop binds its own listener)")
		}
		if c.Listener.AdvertisedHost == "" && isWildcardHost(host) {
			bad("listener.advertised_host", "required when listener.address (%q) binds a wildcard host", c.Listener.Address)
		}
	}
	if c.Listener.AdvertisedPort < 0 || c.Listener.AdvertisedPort > math.MaxUint16 {
		bad("listener.advertised_port", "%d is not 0-65535", c.Listener.AdvertisedPort)
	}

	l := c.Limits
	if l.MaxFrameBytes < minFrameBytes || l.MaxFrameBytes > math.MaxInt32 {
		bad("limits.max_frame_bytes", "%d is not %d-%d", l.MaxFrameBytes, minFrameBytes, math.MaxInt32)
	}
	if l.MaxConnections < 0 {
		bad("limits.max_connections", "%d is negative (0 = no limit)", l.MaxConnections)
	}
	if l.MaxInFlight < 1 || l.MaxInFlight > maxInFlightLimit {
		bad("limits.max_in_flight", "%d is not 1-%d", l.MaxInFlight, maxInFlightLimit)
	}
	if int64(l.MaxInboundBytes) < int64(l.MaxFrameBytes)+4 {
		bad("limits.max_inbound_bytes", "%d is below limits.max_frame_bytes+4 (%d)", l.MaxInboundBytes, int64(l.MaxFrameBytes)+4)
	}
	if l.MaxOutboundBytes < 0 {
		bad("limits.max_outbound_bytes", "%d is negative (0 = no limit)", l.MaxOutboundBytes)
	}
	if l.IdleTimeout < 0 {
		bad("limits.idle_timeout", "%v is negative (0 = disabled)", l.IdleTimeout)
	}
	if l.DrainTimeout <= 0 {
		bad("limits.drain_timeout", "%v is not positive", l.DrainTimeout)
	}
	switch {
	case l.MemoryBytes < 0:
		bad("limits.memory_bytes", "%d is negative (0 = derived from the cgroup memory limit)", l.MemoryBytes)
	case l.MemoryBytes > 0 && l.MemoryBytes < minMemoryBytes:
		bad("limits.memory_bytes", "%d is below the minimum %d", l.MemoryBytes, minMemoryBytes)
	case l.MemoryBytes > 0 && l.MaxFrameBytes != DefaultMaxFrameBytes && int64(l.MaxFrameBytes) > l.MemoryBytes:
		// (left at its default it is lowered to the budget: Resolved)
		bad("limits.max_frame_bytes", "%d is above limits.memory_bytes (%d): a frame that large could never be read; lower it or raise the budget", l.MaxFrameBytes, l.MemoryBytes)
	}

	g := c.Gnet
	if g.NumEventLoop < 0 {
		bad("gnet.num_event_loop", "%d is negative (0 = automatic)", g.NumEventLoop)
	}
	if g.TCPKeepAlive < 0 {
		bad("gnet.tcp_keep_alive", "%v is negative (0 = off)", g.TCPKeepAlive)
	}
	if g.ReadBufferCap < 0 {
		bad("gnet.read_buffer_cap", "%d is negative (0 = gnet default)", g.ReadBufferCap)
	}
	if g.WriteBufferCap < 0 {
		bad("gnet.write_buffer_cap", "%d is negative (0 = gnet default)", g.WriteBufferCap)
	}
	if g.SocketRecvBuffer < 0 {
		bad("gnet.socket_recv_buffer", "%d is negative (0 = OS default)", g.SocketRecvBuffer)
	}
	if g.SocketSendBuffer < 0 {
		bad("gnet.socket_send_buffer", "%d is negative (0 = OS default)", g.SocketSendBuffer)
	}
	if _, ok := loadBalancing(g.LoadBalancing); !ok {
		bad("gnet.load_balancing", "%q is not one of %s, %s, %s", g.LoadBalancing, LBRoundRobin, LBLeastConnections, LBSourceAddrHash)
	}
	if g.WorkerPoolSize < 1 {
		bad("gnet.worker_pool_size", "%d is not positive", g.WorkerPoolSize)
	}
	if g.WorkerQueueSize < 1 {
		bad("gnet.worker_queue_size", "%d is not positive", g.WorkerQueueSize)
	}
	return errors.Join(errs...)
}

func isWildcardHost(host string) bool {
	if host == "" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsUnspecified()
}

func loadBalancing(name string) (gnet.LoadBalancing, bool) {
	switch name {
	case LBRoundRobin:
		return gnet.RoundRobin, true
	case LBLeastConnections:
		return gnet.LeastConnections, true
	case LBSourceAddrHash:
		return gnet.SourceAddrHash, true
	}
	return 0, false
}
