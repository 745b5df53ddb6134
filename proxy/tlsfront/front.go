// Package tlsfront terminates TLS for the Kafka listener. The gnet event
// loops of package proxy only split frames and must never block, and a TLS
// handshake or record decryption is blocking, CPU-bound work; so TLS runs
// here, one goroutine pair per client connection, in front of the gnet
// listener: a Go net.Listener on the public address accepts, handshakes
// under a deadline, maps a client certificate to a principal, then dials
// the gnet listener on loopback and copies plaintext both ways. The gnet
// path is the plaintext one, unchanged.
//
// The gnet side learns a connection's real remote address and principal
// from Lookup, keyed by the loopback address the front dials from; that
// port is bound before the connect (dialer Control), so the entry exists
// when gnet's OnOpen runs. A loopback connection the front did not make has
// no entry and is refused there, so a local process cannot bypass TLS
// through the internal port.
package tlsfront

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/kafka-iggy/kafka-iggy/auth"
	"github.com/kafka-iggy/kafka-iggy/budget"
)

// bufSize is each direction's copy buffer: one TLS record's plaintext.
const bufSize = 16 << 10

// ConnBytes is what one connection through the front holds, counted in
// the memory budget while it is open: two copy buffers, crypto/tls's input
// and output record buffers (a record is at most 16 KiB plus overhead) and
// the two goroutines' stacks.
const ConnBytes = 2*bufSize + 2*(16<<10+2048) + 2*8<<10

// DefaultHandshakeTimeout is Config.HandshakeTimeout's default (10s).
const DefaultHandshakeTimeout = 10 * time.Second

// Info is what the front knows of one client connection.
type Info struct {
	// Remote is the client's ip:port.
	Remote string
	// Principal is the mapped client certificate subject, auth.Anonymous
	// without a certificate.
	Principal string
}

// Config configures a Front.
type Config struct {
	// Address is the public listen address (host:port; port 0 picks one).
	Address string
	// TLS is the server configuration (certificates, client auth).
	TLS *tls.Config
	// HandshakeTimeout cuts a handshake that has not completed; 0 means
	// DefaultHandshakeTimeout.
	HandshakeTimeout time.Duration
	// Mapper maps a verified client certificate to a principal.
	Mapper *auth.PrincipalMapper
	// MaxConnections bounds the connections the front holds (handshaking
	// or forwarding); further ones are closed at accept. 0: no bound.
	MaxConnections int
	// Metrics receives outcomes; nil: none.
	Metrics Metrics
	// Budget is the process's memory budget; each open connection counts
	// ConnBytes in it as held outside its grants. nil: not counted.
	Budget *budget.Budget
}

// Metrics receives the front's outcomes; safe for concurrent use.
type Metrics interface {
	// HandshakeFailed counts a handshake that failed or timed out, by
	// reason (timeout, error, principal).
	HandshakeFailed(reason string)
}

type nopMetrics struct{}

func (nopMetrics) HandshakeFailed(string) {}

// Front is the TLS listener. Start, Addr, Lookup and Close are safe for
// concurrent use.
type Front struct {
	cfg     Config
	log     zerolog.Logger
	ln      net.Listener
	backend string

	bufs  sync.Pool
	conns sync.Map // backend-side local "ip:port" -> Info
	n     atomic.Int64
	wg    sync.WaitGroup

	mu      sync.Mutex
	open    map[net.Conn]struct{}
	closing bool
}

// Listen binds the public address; Start begins serving.
func Listen(cfg Config, log zerolog.Logger) (*Front, error) {
	if cfg.TLS == nil {
		return nil, errors.New("tlsfront: no TLS configuration")
	}
	if cfg.Mapper == nil {
		cfg.Mapper, _ = auth.ParseMappingRules("")
	}
	if cfg.Metrics == nil {
		cfg.Metrics = nopMetrics{}
	}
	if cfg.HandshakeTimeout <= 0 {
		cfg.HandshakeTimeout = DefaultHandshakeTimeout
	}
	ln, err := net.Listen("tcp", cfg.Address)
	if err != nil {
		return nil, err
	}
	f := &Front{cfg: cfg, log: log, ln: ln, open: map[net.Conn]struct{}{}}
	f.bufs.New = func() any { b := make([]byte, bufSize); return &b }
	return f, nil
}

// Addr is the bound public address.
func (f *Front) Addr() net.Addr { return f.ln.Addr() }

// Lookup returns the Info of the connection the gnet side sees from
// remote (the front's loopback dial address).
func (f *Front) Lookup(remote string) (Info, bool) {
	v, ok := f.conns.Load(remote)
	if !ok {
		return Info{}, false
	}
	return v.(Info), true
}

// Start accepts on the public address and forwards to backend (the gnet
// listener's loopback address) until Close.
func (f *Front) Start(backend string) {
	f.backend = backend
	f.wg.Add(1)
	go f.accept()
}

func (f *Front) accept() {
	defer f.wg.Done()
	var delay time.Duration
	for {
		c, err := f.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// EMFILE and the like: back off as net/http does.
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			f.log.Warn().Err(err).Dur("retry_in", delay).Msg("tls: accept failed")
			time.Sleep(delay)
			continue
		}
		delay = 0
		if !f.track(c) {
			_ = c.Close()
			continue
		}
		if n := f.n.Add(1); f.cfg.MaxConnections > 0 && n > int64(f.cfg.MaxConnections) {
			f.n.Add(-1)
			f.untrack(c)
			_ = c.Close()
			f.log.Warn().Str("remote", c.RemoteAddr().String()).Int("max_connections", f.cfg.MaxConnections).Msg("tls: connection refused, limits.max_connections reached")
			continue
		}
		f.wg.Add(1)
		go f.serve(c)
	}
}

func (f *Front) track(c net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closing {
		return false
	}
	f.open[c] = struct{}{}
	return true
}

func (f *Front) untrack(c net.Conn) {
	f.mu.Lock()
	delete(f.open, c)
	f.mu.Unlock()
}

// serve handshakes one client and forwards its plaintext.
func (f *Front) serve(raw net.Conn) {
	defer f.wg.Done()
	f.cfg.Budget.Outside(ConnBytes)
	defer f.cfg.Budget.Outside(-ConnBytes)
	defer f.n.Add(-1)
	defer f.untrack(raw)
	defer raw.Close()
	remote := raw.RemoteAddr().String()
	tc := tls.Server(raw, f.cfg.TLS)
	ctx, cancel := context.WithTimeout(context.Background(), f.cfg.HandshakeTimeout)
	err := tc.HandshakeContext(ctx)
	cancel()
	if err != nil {
		reason := "error"
		if errors.Is(err, context.DeadlineExceeded) {
			reason = "timeout"
		}
		f.cfg.Metrics.HandshakeFailed(reason)
		f.log.Warn().Str("remote", remote).Str("reason", reason).Err(err).Msg("tls: handshake failed")
		return
	}
	st := tc.ConnectionState()
	principal, err := f.cfg.Mapper.MapCertificate(st.PeerCertificates)
	if err != nil {
		f.cfg.Metrics.HandshakeFailed("principal")
		f.log.Warn().Str("remote", remote).Err(err).Msg("tls: client certificate refused")
		return
	}
	var key string
	d := net.Dialer{Timeout: 5 * time.Second, Control: func(_, _ string, rc syscall.RawConn) error {
		// Bind the local port now, so Lookup knows it before gnet's
		// OnOpen can run.
		var berr error
		cerr := rc.Control(func(fd uintptr) {
			if berr = syscall.Bind(int(fd), &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); berr != nil {
				return
			}
			var sa syscall.Sockaddr
			if sa, berr = syscall.Getsockname(int(fd)); berr == nil {
				if in, ok := sa.(*syscall.SockaddrInet4); ok {
					key = net.JoinHostPort("127.0.0.1", strconv.Itoa(in.Port))
					f.conns.Store(key, Info{Remote: remote, Principal: principal})
				} else {
					berr = fmt.Errorf("unexpected local address %T", sa)
				}
			}
		})
		if cerr != nil {
			return cerr
		}
		return berr
	}}
	back, err := d.Dial("tcp4", f.backend)
	defer func() {
		if key != "" {
			f.conns.Delete(key)
		}
	}()
	if err != nil {
		f.log.Error().Err(err).Str("remote", remote).Msg("tls: cannot reach the Kafka listener behind the TLS front")
		return
	}
	f.log.Debug().Str("remote", remote).Str("principal", principal).Str("tls_version", tls.VersionName(st.Version)).Msg("tls: connection established")
	f.pipe(tc, back.(*net.TCPConn))
}

// pipe copies both ways until the Kafka side closes (or the client does
// and the Kafka side then finishes its replies).
func (f *Front) pipe(client *tls.Conn, back *net.TCPConn) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.copy(back, client)
		// The client is done sending: let the Kafka side answer what it
		// read, then close.
		_ = back.CloseWrite()
	}()
	f.copy(client, back)
	// The Kafka side closed: the connection is over.
	_ = client.Close()
	_ = back.Close()
	<-done
}

// writerOnly and readerOnly hide ReadFrom/WriteTo so CopyBuffer uses the
// pooled buffer.
type writerOnly struct{ io.Writer }
type readerOnly struct{ io.Reader }

func (f *Front) copy(dst io.Writer, src io.Reader) {
	bp := f.bufs.Get().(*[]byte)
	_, _ = io.CopyBuffer(writerOnly{dst}, readerOnly{src}, *bp)
	f.bufs.Put(bp)
}

// Close stops accepting and closes every client connection, then waits
// for their goroutines. Call it after the gnet side drained: open
// connections are cut.
func (f *Front) Close() {
	f.StopAccepting()
	f.mu.Lock()
	for c := range f.open {
		_ = c.Close()
	}
	f.mu.Unlock()
	f.wg.Wait()
}

// StopAccepting closes the public listener; connections already accepted
// go on until the gnet side closes them.
func (f *Front) StopAccepting() {
	f.mu.Lock()
	f.closing = true
	f.mu.Unlock()
	_ = f.ln.Close()
}
