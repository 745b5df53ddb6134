package tlsconf_test

import (
	"crypto/tls"
	"crypto/x509/pkix"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/kafka-iggy/kafka-iggy/internal/tlsconf"
	"github.com/kafka-iggy/kafka-iggy/internal/tlsconf/tlstest"
)

// TestReloaderServesRotatedCertificate: a server built on a Reloader
// serves the pair on disk; a new pair written over the files is served to
// the next handshakes once CheckEvery has passed; a broken update (a key
// that does not match) is logged and the previous pair kept.
func TestReloaderServesRotatedCertificate(t *testing.T) {
	dir := t.TempDir()
	pki := tlstest.New(t, dir)
	first := pki.Issue("srv", pkix.Name{CommonName: "localhost"}, true)
	logs := &lockedLog{}
	rl, err := tlsconf.NewReloader(tlsconf.Files{CertFile: first.CertFile, KeyFile: first.KeyFile}, zerolog.New(logs))
	if err != nil {
		t.Fatal(err)
	}
	sc, err := rl.ServerConfig(tlsconf.ClientAuthNone, tls.VersionTLS12)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", sc)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.(*tls.Conn).Handshake()
			c.Close()
		}
	}()
	served := func() string {
		c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", ln.Addr().String(), pki.ClientTLS(nil))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return c.ConnectionState().PeerCertificates[0].SerialNumber.String()
	}
	waitServed := func(want string) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for got := served(); got != want; got = served() {
			if time.Now().After(deadline) {
				t.Fatalf("serial %s served, want %s", got, want)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitServed(first.Serial.String())
	second := pki.Issue("srv", pkix.Name{CommonName: "localhost"}, true)
	waitServed(second.Serial.String())
	if rl.Loads() != 2 {
		t.Errorf("%d loads, want 2", rl.Loads())
	}

	// A key of another certificate written over the key file: refused,
	// the second pair stays.
	other := pki.Issue("other", pkix.Name{CommonName: "x"}, true)
	k, _ := os.ReadFile(other.KeyFile)
	if err := os.WriteFile(second.KeyFile, k, 0o600); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(logs.String(), "reloading the changed files failed") {
		if time.Now().After(deadline) {
			t.Fatalf("broken update not logged:\n%s", logs.String())
		}
		served()
		time.Sleep(50 * time.Millisecond)
	}
	if got := served(); got != second.Serial.String() {
		t.Errorf("after a broken update serial %s served, want the previous %s", got, second.Serial)
	}
}

// lockedLog is a log written by the server's goroutines, read by the test.
type lockedLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestFilesCheck: each problem names its key.
func TestFilesCheck(t *testing.T) {
	pki := tlstest.New(t, t.TempDir())
	a := pki.Issue("a", pkix.Name{CommonName: "a"}, true)
	for _, c := range []struct {
		f    tlsconf.Files
		want string
	}{
		{tlsconf.Files{}, "x.cert_file: required"},
		{tlsconf.Files{CertFile: a.CertFile}, "x.key_file: required"},
		{tlsconf.Files{KeyFile: a.KeyFile}, "x.cert_file: required"},
		{tlsconf.Files{CertFile: a.KeyFile, KeyFile: a.CertFile}, "x.cert_file: cannot load"},
		{tlsconf.Files{CertFile: a.CertFile, KeyFile: a.KeyFile, CAFile: a.KeyFile}, "x.ca_file:"},
	} {
		errs := c.f.Check("x.", true)
		if len(errs) == 0 || !strings.Contains(errs[0].Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.f, errs, c.want)
		}
	}
	if errs := (tlsconf.Files{CertFile: a.CertFile, KeyFile: a.KeyFile, CAFile: pki.CAFile}).Check("x.", true); len(errs) != 0 {
		t.Errorf("valid files: %v", errs)
	}
}

// TestMinVersion13RefusesTLS12: tls.min_version "1.3" refuses a TLS 1.2
// client and serves a 1.3 one.
func TestMinVersion13RefusesTLS12(t *testing.T) {
	pki := tlstest.New(t, t.TempDir())
	srv := pki.Issue("srv", pkix.Name{CommonName: "localhost"}, true)
	rl, err := tlsconf.NewReloader(tlsconf.Files{CertFile: srv.CertFile, KeyFile: srv.KeyFile}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	v, err := tlsconf.MinVersion("1.3")
	if err != nil {
		t.Fatal(err)
	}
	sc, err := rl.ServerConfig(tlsconf.ClientAuthNone, v)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", sc)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.(*tls.Conn).Handshake()
			c.Close()
		}
	}()
	old := pki.ClientTLS(nil)
	old.MaxVersion = tls.VersionTLS12
	if c, err := tls.Dial("tcp", ln.Addr().String(), old); err == nil {
		c.Close()
		t.Fatal("a TLS 1.2 client was served with min_version 1.3")
	}
	c, err := tls.Dial("tcp", ln.Addr().String(), pki.ClientTLS(nil))
	if err != nil {
		t.Fatalf("TLS 1.3 client: %v", err)
	}
	if c.ConnectionState().Version != tls.VersionTLS13 {
		t.Errorf("version %x", c.ConnectionState().Version)
	}
	c.Close()
	if _, err := tlsconf.MinVersion("1.1"); err == nil {
		t.Error("1.1 accepted")
	}
}
