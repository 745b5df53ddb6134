package cluster

import (
	"context"
	"crypto/x509/pkix"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/kafka-iggy/kafka-iggy/internal/tlsconf/tlstest"
)

// TestLinkMutualTLS: with peers.tls, a peer presenting a certificate of
// the domain's CA (and the right secret) is served; one with a certificate
// of another CA, or without TLS, is refused before the HMAC challenge and
// logged (close_reason tls_handshake, its address); the good peer keeps
// working.
func TestLinkMutualTLS(t *testing.T) {
	pki := tlstest.New(t, t.TempDir())
	me := pki.Issue("me", pkix.Name{CommonName: "sidecar-a"}, true)
	other := tlstest.New(t, t.TempDir())
	intruder := other.Issue("intruder", pkix.Name{CommonName: "sidecar-x"}, true)
	cfg := func(is tlstest.Issued) *peerTLS {
		pt, err := newPeerTLS(PeerTLSConfig{Enabled: true, CertFile: is.CertFile, KeyFile: is.KeyFile, CAFile: pki.CAFile}, zerolog.Nop())
		if err != nil {
			t.Fatal(err)
		}
		return pt
	}
	const secret = "the-right-secret-0123456789abcdef"
	s, logs, mu := linkPair(t, secret, echo, func(s *linkServer) { s.tls = cfg(me).server })

	var e enc
	e.str("hi")
	good := client(s.ln.Addr().String(), secret)
	good.tls = cfg(me).client
	defer good.close()
	if _, err := good.call(context.Background(), describeCall.kind, e.b); err != nil {
		t.Fatalf("peer with the domain's certificate: %v", err)
	}
	bad := client(s.ln.Addr().String(), secret)
	bad.tls = cfg(intruder).client
	defer bad.close()
	if _, err := bad.call(context.Background(), describeCall.kind, e.b); err == nil {
		t.Fatal("a peer with another CA's certificate was served")
	}
	plain := client(s.ln.Addr().String(), secret)
	defer plain.close()
	if _, err := plain.call(context.Background(), describeCall.kind, e.b); err == nil {
		t.Fatal("a peer without TLS was served")
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		l := logs.String()
		mu.Unlock()
		if strings.Count(l, `"close_reason":"tls_handshake"`) >= 2 && strings.Contains(l, `"peer_address":"127.0.0.1:`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("refusals not logged with reason and address:\n%s", l)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := good.call(context.Background(), describeCall.kind, e.b); err != nil {
		t.Fatalf("good peer after refused ones: %v", err)
	}
}

// TestPeerTLSValidate: peers.tls problems are reported naming the key.
func TestPeerTLSValidate(t *testing.T) {
	pki := tlstest.New(t, t.TempDir())
	a := pki.Issue("a", pkix.Name{CommonName: "a"}, true)
	b := pki.Issue("b", pkix.Name{CommonName: "b"}, true)
	p := DefaultPeersConfig()
	p.Address, p.Secret = "127.0.0.1:0", "the-right-secret-0123456789abcdef"
	for _, c := range []struct {
		tls  PeerTLSConfig
		want string
	}{
		{PeerTLSConfig{Enabled: true}, "peers.tls.ca_file: required"},
		{PeerTLSConfig{Enabled: true, CAFile: pki.CAFile}, "peers.tls.cert_file: required"},
		{PeerTLSConfig{Enabled: true, CAFile: pki.CAFile, CertFile: a.CertFile, KeyFile: b.KeyFile}, "peers.tls.cert_file: cannot load the key pair"},
		{PeerTLSConfig{Enabled: true, CAFile: a.KeyFile, CertFile: a.CertFile, KeyFile: a.KeyFile}, "peers.tls.ca_file:"},
	} {
		p.TLS = c.tls
		if err := Validate(p, DefaultCoordinationConfig()); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.tls, err, c.want)
		}
	}
	p.TLS = PeerTLSConfig{Enabled: true, CAFile: pki.CAFile, CertFile: a.CertFile, KeyFile: a.KeyFile}
	if err := Validate(p, DefaultCoordinationConfig()); err != nil {
		t.Errorf("valid peers.tls: %v", err)
	}
}
