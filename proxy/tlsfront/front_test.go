package tlsfront

import (
	"bufio"
	"crypto/tls"
	"crypto/x509/pkix"
	"io"
	"net"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/kafka-iggy/kafka-iggy/auth"
	"github.com/kafka-iggy/kafka-iggy/budget"
	"github.com/kafka-iggy/kafka-iggy/internal/tlsconf"
	"github.com/kafka-iggy/kafka-iggy/internal/tlsconf/tlstest"
)

// TestFront: the front terminates TLS and forwards plaintext to the
// backend both ways; the backend finds the client's address and mapped
// principal by the address it sees; an open connection counts ConnBytes
// in the budget until it closes; a handshake that stalls is cut at the
// deadline; past MaxConnections a connection is closed at once.
func TestFront(t *testing.T) {
	pki := tlstest.New(t, t.TempDir())
	srv := pki.Issue("server", pkix.Name{CommonName: "localhost"}, true)
	app := pki.Issue("app", pkix.Name{CommonName: "app", OrganizationalUnit: []string{"ServiceUsers"}}, false)
	rl, err := tlsconf.NewReloader(tlsconf.Files{CertFile: srv.CertFile, KeyFile: srv.KeyFile, CAFile: pki.CAFile}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	tc, err := rl.ServerConfig(tlsconf.ClientAuthRequest, 0)
	if err != nil {
		t.Fatal(err)
	}
	mapper, err := auth.ParseMappingRules(`RULE:^CN=([^,]*),OU=ServiceUsers$/$1/U`)
	if err != nil {
		t.Fatal(err)
	}
	mem := budget.New(1 << 20)
	f, err := Listen(Config{Address: "127.0.0.1:0", TLS: tc, HandshakeTimeout: 300 * time.Millisecond, Mapper: mapper,
		MaxConnections: 2, Budget: mem}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	// The backend: an upper-casing echo that reports what Lookup said.
	back, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer back.Close()
	infos := make(chan Info, 4)
	go func() {
		for {
			c, err := back.Accept()
			if err != nil {
				return
			}
			info, ok := f.Lookup(c.RemoteAddr().String())
			if !ok {
				info = Info{Remote: "unknown"}
			}
			infos <- info
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					b, err := r.ReadByte()
					if err != nil {
						return
					}
					if b >= 'a' && b <= 'z' {
						b -= 'a' - 'A'
					}
					if _, err := c.Write([]byte{b}); err != nil {
						return
					}
				}
			}()
		}
	}()
	f.Start(back.Addr().String())

	c, err := tlsDial(f.Addr().String(), pki, &app)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 5)
	if _, err := io.ReadFull(c, got); err != nil || string(got) != "HELLO" {
		t.Fatalf("echo %q, %v", got, err)
	}
	if info := <-infos; info.Principal != "APP" || info.Remote != c.LocalAddr().String() {
		t.Errorf("backend saw %+v, want principal APP from %s", info, c.LocalAddr())
	}
	if room := mem.TryUpTo(1 << 20); room != 1<<20-ConnBytes {
		t.Errorf("budget room with one connection open: %d, want %d", room, 1<<20-ConnBytes)
	} else {
		mem.Release(room)
	}

	// A second connection without a client certificate: ANONYMOUS.
	anon, err := tlsDial(f.Addr().String(), pki, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := anon.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if info := <-infos; info.Principal != auth.Anonymous {
		t.Errorf("no certificate: principal %q", info.Principal)
	}
	// A third is past MaxConnections (2): closed at once.
	if third, err := net.Dial("tcp", f.Addr().String()); err == nil {
		expectEOF(t, third, time.Second)
	}
	anon.Close()
	c.Close()

	// A client that connects and sends nothing is cut by the deadline.
	waitRoom(t, mem)
	stall, err := net.Dial("tcp", f.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	expectEOF(t, stall, 5*time.Second)
	if d := time.Since(start); d < 250*time.Millisecond {
		t.Errorf("stalled handshake cut after %v, before the 300ms deadline", d)
	}
	waitRoom(t, mem)
}

// waitRoom waits until every connection's budget share is given back.
func waitRoom(t *testing.T, mem *budget.Budget) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		room := mem.TryUpTo(1 << 20)
		mem.Release(room)
		if room == 1<<20 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("budget room %d after the connections closed, want all of it", room)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func expectEOF(t *testing.T, c net.Conn, within time.Duration) {
	t.Helper()
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(within))
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatal("connection not closed")
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("connection not closed within %v", within)
	}
}

func tlsDial(addr string, pki *tlstest.PKI, is *tlstest.Issued) (*tls.Conn, error) {
	c, err := tls.Dial("tcp", addr, pki.ClientTLS(is))
	if err != nil {
		return nil, err
	}
	return c, c.Handshake()
}
