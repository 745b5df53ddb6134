package main

import (
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kafka-iggy/kafka-iggy/internal/tlsconf/tlstest"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// tlsRoundTrip produces one record over opts and consumes it back.
func tlsRoundTrip(t *testing.T, seed, topic string, opts ...kgo.Opt) error {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(seed), kgo.DefaultProduceTopic(topic), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.AllowAutoTopicCreation(), kgo.RequestRetries(2)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("tls-" + topic)}).FirstErr(); err != nil {
		return err
	}
	for {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			return err
		}
		for it := fs.RecordIter(); !it.Done(); {
			if r := it.Next(); string(r.Value) == "tls-"+topic {
				return nil
			}
		}
	}
}

// tlsMetadata sends one ListTopics without retries.
func tlsMetadata(t *testing.T, seed string, opts ...kgo.Opt) error {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(seed), kgo.RequestRetries(0)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = kadm.NewClient(cl).ListTopics(ctx)
	return err
}

// servedSerial dials addr over TLS and returns the leaf's serial.
func servedSerial(addr string, tc *tls.Config) (*big.Int, error) {
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, tc)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0].SerialNumber, nil
}

// TestTLSListener: security protocol SSL. franz-go produces and consumes
// over TLS 1.3 and 1.2; a plaintext client gets nothing; a connection that
// never completes its handshake is cut after tls.handshake_timeout; a new
// certificate written over the mounted files is served to new handshakes
// without a restart.
func TestTLSListener(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a sidecar process")
	}
	pki := tlstest.New(t, t.TempDir())
	srv := pki.Issue("server", pkix.Name{CommonName: "localhost"}, true)
	cert, key, first := srv.CertFile, srv.KeyFile, srv.Serial
	p := startServeProc(t, "KAFKA_IGGY_EMBEDDED__LISTEN=127.0.0.1:0", "KAFKA_IGGY_TLS__ENABLED=true",
		"KAFKA_IGGY_TLS__CERT_FILE="+cert, "KAFKA_IGGY_TLS__KEY_FILE="+key, "KAFKA_IGGY_TLS__HANDSHAKE_TIMEOUT=1s")
	if !strings.Contains(p.logText(), `"security_protocol":"SSL"`) {
		t.Errorf("ready line does not name SSL:\n%s", grepLines(p.logText(), "ready"))
	}
	if err := tlsRoundTrip(t, p.kafka, "tls-13", kgo.DialTLSConfig(pki.ClientTLS(nil))); err != nil {
		t.Fatalf("TLS 1.3: %v", err)
	}
	tc12 := pki.ClientTLS(nil)
	tc12.MaxVersion = tls.VersionTLS12
	if err := tlsRoundTrip(t, p.kafka, "tls-12", kgo.DialTLSConfig(tc12)); err != nil {
		t.Fatalf("TLS 1.2: %v", err)
	}
	if err := tlsMetadata(t, p.kafka); err == nil {
		t.Fatal("a plaintext client was served on the SSL listener")
	}
	// A client that connects and sends nothing is cut by the deadline.
	c, err := net.Dial("tcp", p.kafka)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err = c.Read(make([]byte, 1))
	stalled := time.Since(start)
	c.Close()
	if err == nil || errors.Is(err, os.ErrDeadlineExceeded) || stalled < 900*time.Millisecond || stalled > 5*time.Second {
		t.Errorf("stalled handshake: read %v after %v, want the connection closed after ~1s", err, stalled)
	}
	t.Logf("stalled handshake cut after %v", stalled)
	if got, err := servedSerial(p.kafka, pki.ClientTLS(nil)); err != nil || got.Cmp(first) != 0 {
		t.Fatalf("served serial %v, %v; want %v", got, err, first)
	}
	// Rotate: a new pair written over the same files (as a Secret update).
	second := pki.Issue("server", pkix.Name{CommonName: "localhost"}, true).Serial
	waitFor(t, 10*time.Second, "the new certificate served", func() error {
		got, err := servedSerial(p.kafka, pki.ClientTLS(nil))
		if err != nil {
			return err
		}
		if got.Cmp(second) != 0 {
			return fmt.Errorf("serial %v, want %v", got, second)
		}
		return nil
	})
	if err := tlsRoundTrip(t, p.kafka, "tls-rotated", kgo.DialTLSConfig(pki.ClientTLS(nil))); err != nil {
		t.Fatalf("after rotation: %v", err)
	}
	if m := metricsText(t, p); !strings.Contains(m, `kafka_iggy_tls_handshake_failures_total{reason="timeout"} 1`) {
		t.Errorf("stalled handshake not counted:\n%s", grepLines(m, "tls_handshake"))
	}
}

// TestTLSSASL: security protocol SASL_SSL with PLAIN (static users),
// SCRAM-SHA-512 from a credential file and OAUTHBEARER (a JWT checked
// against a JWKS): right credentials produce and consume over TLS, a wrong password gets SASL_AUTHENTICATION_FAILED, and
// PLAIN is accepted on a non-loopback listener address only because TLS is
// on.
func TestTLSSASL(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a sidecar process")
	}
	dir := t.TempDir()
	pki := tlstest.New(t, dir)
	srv := pki.Issue("server", pkix.Name{CommonName: "localhost"}, true)
	cert, key := srv.CertFile, srv.KeyFile
	var line strings.Builder
	if err := scramLine("carol", "SCRAM-SHA-512", 4096, strings.NewReader("carol-secret-pw\n"), &line); err != nil {
		t.Fatal(err)
	}
	scramFile := filepath.Join(dir, "scram")
	if err := os.WriteFile(scramFile, []byte(line.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	jwks, token := testIssuer(t)
	p := startServeProc(t, "KAFKA_IGGY_EMBEDDED__LISTEN=127.0.0.1:0", "KAFKA_IGGY_TLS__ENABLED=true",
		"KAFKA_IGGY_TLS__CERT_FILE="+cert, "KAFKA_IGGY_TLS__KEY_FILE="+key,
		"KAFKA_IGGY_SASL__ENABLED=true", "KAFKA_IGGY_SASL__MODE=static", "KAFKA_IGGY_SASL__AUTHORIZATION=sidecar", "KAFKA_IGGY_SASL__USERS__alice=alice-secret-pw",
		"KAFKA_IGGY_SASL__MECHANISMS=PLAIN,SCRAM-SHA-512,OAUTHBEARER", "KAFKA_IGGY_SASL__SCRAM_FILE="+scramFile,
		"KAFKA_IGGY_SASL__OAUTHBEARER__JWKS="+jwks, "KAFKA_IGGY_SASL__OAUTHBEARER__ISSUER=https://idp.test",
		"KAFKA_IGGY_SASL__OAUTHBEARER__AUDIENCE=kafka")
	if !strings.Contains(p.logText(), `"security_protocol":"SASL_SSL"`) {
		t.Errorf("ready line does not name SASL_SSL:\n%s", grepLines(p.logText(), "ready"))
	}
	dial := kgo.DialTLSConfig(pki.ClientTLS(nil))
	if err := tlsRoundTrip(t, p.kafka, "sasl-ssl-plain", dial, kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret-pw"}.AsMechanism())); err != nil {
		t.Fatalf("SASL_SSL PLAIN: %v", err)
	}
	if err := tlsRoundTrip(t, p.kafka, "sasl-ssl-scram", dial, kgo.SASL(scram.Auth{User: "carol", Pass: "carol-secret-pw"}.AsSha512Mechanism())); err != nil {
		t.Fatalf("SASL_SSL SCRAM-SHA-512: %v", err)
	}
	if err := tlsRoundTrip(t, p.kafka, "sasl-ssl-oauth", dial, kgo.SASL(oauth.Auth{Token: token("https://idp.test")}.AsMechanism())); err != nil {
		t.Fatalf("SASL_SSL OAUTHBEARER: %v", err)
	}
	wantAuthFailed(t, tlsMetadata(t, p.kafka, dial, kgo.SASL(oauth.Auth{Token: token("https://other.test")}.AsMechanism())))
	wantAuthFailed(t, tlsMetadata(t, p.kafka, dial, kgo.SASL(plain.Auth{User: "alice", Pass: "wrong-password-1"}.AsMechanism())))
	wantAuthFailed(t, tlsMetadata(t, p.kafka, dial, kgo.SASL(scram.Auth{User: "carol", Pass: "wrong-password-1"}.AsSha512Mechanism())))
	// The failure metric's label is the client's address, not the front's
	// loopback hop.
	if m := metricsText(t, p); !strings.Contains(m, `kafka_iggy_sasl_failures_total{mechanism="PLAIN",remote_host="127.0.0.1"} 1`) {
		t.Errorf("failure not counted per remote host:\n%s", grepLines(m, "sasl"))
	}
}

// TestTLSClientCertificates: security protocol SSL with
// tls.client_auth=required (Kafka's spelling): a client certificate signed by the client CA is
// served and its subject mapped to the principal by
// tls.principal_mapping_rules; no certificate, one from another CA, or one
// no rule maps is refused.
func TestTLSClientCertificates(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a sidecar process")
	}
	pki := tlstest.New(t, t.TempDir())
	srv := pki.Issue("server", pkix.Name{CommonName: "localhost"}, true)
	cert, key := srv.CertFile, srv.KeyFile
	app := pki.Issue("app", pkix.Name{CommonName: "Orders-App", OrganizationalUnit: []string{"ServiceUsers"}, Organization: []string{"acme"}}, false)
	odd := pki.Issue("odd", pkix.Name{CommonName: "someone", Organization: []string{"elsewhere"}}, false)
	other := tlstest.New(t, t.TempDir())
	stranger := other.Issue("stranger", pkix.Name{CommonName: "Orders-App", OrganizationalUnit: []string{"ServiceUsers"}}, false)
	p := startServeProc(t, "KAFKA_IGGY_EMBEDDED__LISTEN=127.0.0.1:0", "KAFKA_IGGY_TLS__ENABLED=true",
		"KAFKA_IGGY_TLS__CERT_FILE="+cert, "KAFKA_IGGY_TLS__KEY_FILE="+key, "KAFKA_IGGY_TLS__CLIENT_AUTH=required",
		"KAFKA_IGGY_TLS__CLIENT_CA_FILE="+pki.CAFile, "KAFKA_IGGY_LOG__LEVEL=debug", "KAFKA_IGGY_SASL__AUTHORIZATION=sidecar",
		`KAFKA_IGGY_TLS__PRINCIPAL_MAPPING_RULES=RULE:^CN=([^,]*),OU=ServiceUsers,.*$/$1/L`)
	if err := tlsRoundTrip(t, p.kafka, "mtls", kgo.DialTLSConfig(pki.ClientTLS(&app))); err != nil {
		t.Fatalf("client certificate: %v", err)
	}
	waitFor(t, 5*time.Second, "the mapped principal logged", func() error {
		if !strings.Contains(p.logText(), `"principal":"orders-app"`) {
			return errors.New(grepLines(p.logText(), "tls:"))
		}
		return nil
	})
	for name, tc := range map[string]*tls.Config{
		"no certificate":        pki.ClientTLS(nil),
		"another CA":            pki.ClientTLS(&stranger),
		"no rule maps the name": pki.ClientTLS(&odd),
	} {
		if err := tlsMetadata(t, p.kafka, kgo.DialTLSConfig(tc)); err == nil {
			t.Errorf("%s: served", name)
		}
	}
	waitFor(t, 5*time.Second, "the unmapped certificate logged", func() error {
		if log := p.logText(); !strings.Contains(log, "no principal mapping rule matches") {
			return errors.New(grepLines(log, "tls:"))
		}
		return nil
	})
}

// TestIggyTLS: the embedded Iggy server serves TLS on its TCP listener
// (embedded.tls, as Iggy's tcp.tls) and the sidecar's Iggy client dials it
// over TLS, verifying it against iggy.tls.ca_file: Kafka clients produce
// and consume through it. A client trusting another CA gets no Iggy
// session; the two sides set unlike is refused at start naming the key.
func TestIggyTLS(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a sidecar process")
	}
	pki := tlstest.New(t, t.TempDir())
	srv := pki.Issue("iggy", pkix.Name{CommonName: "iggy"}, true)
	embed := []string{"KAFKA_IGGY_EMBEDDED__LISTEN=127.0.0.1:0", "KAFKA_IGGY_EMBEDDED__TLS__ENABLED=true",
		"KAFKA_IGGY_EMBEDDED__TLS__CERT_FILE=" + srv.CertFile, "KAFKA_IGGY_EMBEDDED__TLS__KEY_FILE=" + srv.KeyFile, "KAFKA_IGGY_IGGY__TLS__ENABLED=true"}
	p := startServeProc(t, append(embed, "KAFKA_IGGY_IGGY__TLS__CA_FILE="+pki.CAFile)...)
	if err := tlsRoundTrip(t, p.kafka, "over-iggy-tls"); err != nil {
		t.Fatalf("through the TLS link to Iggy: %v", err)
	}
	if !strings.Contains(p.logText(), `"tls":true`) {
		t.Errorf("the embedded server does not say it serves TLS:\n%s", grepLines(p.logText(), "embedded Iggy server"))
	}

	other := tlstest.New(t, t.TempDir())
	q := startServeProc(t, append(embed, "KAFKA_IGGY_IGGY__TLS__CA_FILE="+other.CAFile)...)
	waitFor(t, 15*time.Second, "the refused TLS handshake logged", func() error {
		if !strings.Contains(q.logText(), "TLS handshake with") {
			return errors.New(grepLines(q.logText(), "iggy"))
		}
		return nil
	})
	if resp, err := http.Get("http://" + q.admin + "/readyz"); err != nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("readyz with an untrusted Iggy certificate: %v %v, want 503", resp, err)
	} else {
		resp.Body.Close()
	}

	_, err := loadConfig([]string{"--embedded.tls.enabled", "--embedded.tls.cert_file", srv.CertFile, "--embedded.tls.key_file", srv.KeyFile}, nil)
	if msg := problemKeys(t, err)["iggy.tls.enabled"]; !strings.Contains(msg, "embedded.tls.enabled is true") {
		t.Errorf("unlike TLS settings: %v", err)
	}
}

// throttleHook counts the throttles brokers answered a client.
type throttleHook struct{ n atomic.Int64 }

func (h *throttleHook) OnBrokerThrottle(_ kgo.BrokerMetadata, d time.Duration, _ bool) {
	if d > 0 {
		h.n.Add(1)
	}
}

// TestTLSPrincipalQuota: the principal a client certificate maps to is the
// connection's Kafka user, as in Kafka: a producer_byte_rate quota of user
// "orders" throttles the client whose certificate maps to orders, and not
// one whose certificate maps to another user.
func TestTLSPrincipalQuota(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a sidecar process")
	}
	pki := tlstest.New(t, t.TempDir())
	srv := pki.Issue("server", pkix.Name{CommonName: "localhost"}, true)
	orders := pki.Issue("orders", pkix.Name{CommonName: "orders", OrganizationalUnit: []string{"ServiceUsers"}}, false)
	billing := pki.Issue("billing", pkix.Name{CommonName: "billing", OrganizationalUnit: []string{"ServiceUsers"}}, false)
	p := startServeProc(t, "KAFKA_IGGY_EMBEDDED__LISTEN=127.0.0.1:0", "KAFKA_IGGY_TLS__ENABLED=true",
		"KAFKA_IGGY_TLS__CERT_FILE="+srv.CertFile, "KAFKA_IGGY_TLS__KEY_FILE="+srv.KeyFile, "KAFKA_IGGY_TLS__CLIENT_AUTH=require",
		"KAFKA_IGGY_TLS__CLIENT_CA_FILE="+pki.CAFile, "KAFKA_IGGY_SASL__AUTHORIZATION=sidecar",
		`KAFKA_IGGY_TLS__PRINCIPAL_MAPPING_RULES=RULE:^CN=([^,]*),OU=ServiceUsers$/$1/`)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin, err := kgo.NewClient(kgo.SeedBrokers(p.kafka), kgo.DialTLSConfig(pki.ClientTLS(&orders)))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	req := kmsg.NewPtrAlterClientQuotasRequest()
	e := kmsg.NewAlterClientQuotasRequestEntry()
	user := "orders"
	e.Entity = []kmsg.AlterClientQuotasRequestEntryEntity{{Type: "user", Name: &user}}
	e.Ops = []kmsg.AlterClientQuotasRequestEntryOp{{Key: "producer_byte_rate", Value: 64 << 10}}
	req.Entries = append(req.Entries, e)
	resp, err := req.RequestWith(ctx, admin)
	if err != nil || resp.Entries[0].ErrorCode != 0 {
		t.Fatalf("AlterClientQuotas: %v %+v", err, resp)
	}
	// produce sends 32 KiB records for up to d, until the first throttle
	// (the sidecars' quota view is at most 1s old).
	produce := func(is *tlstest.Issued, topic string, d time.Duration) int64 {
		h := &throttleHook{}
		cl, err := kgo.NewClient(kgo.SeedBrokers(p.kafka), kgo.DialTLSConfig(pki.ClientTLS(is)), kgo.WithHooks(h),
			kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation(), kgo.DisableIdempotentWrite(), kgo.RequiredAcks(kgo.LeaderAck()))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		val := make([]byte, 32<<10)
		for end := time.Now().Add(d); time.Now().Before(end) && h.n.Load() == 0; {
			if err := cl.ProduceSync(ctx, &kgo.Record{Value: val}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		return h.n.Load()
	}
	if n := produce(&orders, "quota-orders", 10*time.Second); n == 0 {
		t.Error("the client mapped to user orders was never throttled by user orders' quota")
	}
	if n := produce(&billing, "quota-billing", 3*time.Second); n != 0 {
		t.Errorf("the client mapped to user billing was throttled %d times by user orders' quota", n)
	}
}
