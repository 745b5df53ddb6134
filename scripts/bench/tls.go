package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// -tls-b runs the sidecar-b target with TLS on its Kafka listener (a CA
// and server certificate made here), so the B ÷ A table is the cost of
// TLS; every franz-go client of the run dials through benchDial, which
// speaks TLS to the addresses registered in tlsAddrs.

var (
	tlsMu    sync.Mutex
	tlsAddrs = map[string]*tls.Config{}
)

// newKgo is kgo.NewClient with benchDial.
func newKgo(opts ...kgo.Opt) (*kgo.Client, error) {
	return kgo.NewClient(append(opts, kgo.Dialer(benchDial))...)
}

func benchDial(ctx context.Context, network, host string) (net.Conn, error) {
	tlsMu.Lock()
	tc, m := tlsAddrs[host], saslAddrs[host]
	tlsMu.Unlock()
	d := &net.Dialer{Timeout: 10 * time.Second}
	var c net.Conn
	var err error
	if tc == nil {
		c, err = d.DialContext(ctx, network, host)
	} else {
		c, err = (&tls.Dialer{NetDialer: d, Config: tc}).DialContext(ctx, network, host)
	}
	if err != nil || m == nil {
		return c, err
	}
	actx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := saslAuthenticate(actx, c, host, m); err != nil {
		c.Close()
		return nil, fmt.Errorf("bench: SASL with %s: %w", host, err)
	}
	return c, nil
}

// benchTLS writes a CA-signed certificate for 127.0.0.1 into dir and
// returns the sidecar's settings for it and the clients' configuration.
func benchTLS(dir string) (env []string, client *tls.Config, err error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	caT := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "bench CA"}, IsCA: true, BasicConstraintsValid: true,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(48 * time.Hour), KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caT, caT, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, nil, err
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	t := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(48 * time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, t, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, nil, err
	}
	kd, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	cert, keyFile := filepath.Join(dir, "bench-tls.pem"), filepath.Join(dir, "bench-tls-key.pem")
	if err := os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		return nil, nil, err
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kd}), 0o600); err != nil {
		return nil, nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return []string{"KAFKA_IGGY_TLS__ENABLED=true", "KAFKA_IGGY_TLS__CERT_FILE=" + cert, "KAFKA_IGGY_TLS__KEY_FILE=" + keyFile},
		&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}

// -sasl-b runs the sidecar-b target with SASL (SCRAM-SHA-512 from a
// credential file made by `kafka-iggy scram`); benchDial authenticates each
// connection to it before franz-go sees it (SaslHandshake v1 and
// SaslAuthenticate, franz-go's SCRAM client), so every client of the run,
// whichever workload made it, pays the authentication once per connection.

var saslAddrs = map[string]sasl.Mechanism{} // guarded by tlsMu

// benchSASL writes the credential of user bench and returns the sidecar's
// settings and the clients' mechanism.
func benchSASL(bin, dir string) (env []string, m sasl.Mechanism, err error) {
	cmd := exec.Command(bin, "scram", "--user", "bench", "--mechanism", "SCRAM-SHA-512", "--iterations", "4096")
	cmd.Stdin = strings.NewReader("bench-password-0123456789\n")
	line, err := cmd.Output()
	if err != nil {
		return nil, nil, fmt.Errorf("kafka-iggy scram: %w", err)
	}
	file := filepath.Join(dir, "bench-scram")
	if err := os.WriteFile(file, line, 0o600); err != nil {
		return nil, nil, err
	}
	return []string{"KAFKA_IGGY_SASL__ENABLED=true", "KAFKA_IGGY_SASL__AUTHORIZATION=sidecar", "KAFKA_IGGY_SASL__MECHANISMS=SCRAM-SHA-512", "KAFKA_IGGY_SASL__SCRAM_FILE=" + file},
		scram.Auth{User: "bench", Pass: "bench-password-0123456789"}.AsSha512Mechanism(), nil
}

// saslAuthenticate runs SaslHandshake and SaslAuthenticate with m on c.
func saslAuthenticate(ctx context.Context, c net.Conn, host string, m sasl.Mechanism) error {
	if d, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(d)
		defer c.SetDeadline(time.Time{})
	}
	corr := int32(0)
	roundTrip := func(req kmsg.Request) (kmsg.Response, error) {
		corr++
		body := req.AppendTo(nil)
		var hdr []byte
		hdr = binary.BigEndian.AppendUint16(hdr, uint16(req.Key()))
		hdr = binary.BigEndian.AppendUint16(hdr, uint16(req.GetVersion()))
		hdr = binary.BigEndian.AppendUint32(hdr, uint32(corr))
		hdr = binary.BigEndian.AppendUint16(hdr, 0xffff) // null client id
		if req.IsFlexible() {
			hdr = append(hdr, 0) // no tagged fields
		}
		frame := binary.BigEndian.AppendUint32(nil, uint32(len(hdr)+len(body)))
		if _, err := c.Write(append(append(frame, hdr...), body...)); err != nil {
			return nil, err
		}
		var size [4]byte
		if _, err := io.ReadFull(c, size[:]); err != nil {
			return nil, err
		}
		buf := make([]byte, binary.BigEndian.Uint32(size[:]))
		if _, err := io.ReadFull(c, buf); err != nil {
			return nil, err
		}
		buf = buf[4:] // correlation id
		resp := req.ResponseKind()
		if resp.IsFlexible() && req.Key() != int16(kmsg.ApiVersions) {
			buf = buf[1:] // empty tagged fields of the response header
		}
		return resp, resp.ReadFrom(buf)
	}
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, m.Name()
	r, err := roundTrip(hs)
	if err != nil {
		return err
	}
	if code := r.(*kmsg.SASLHandshakeResponse).ErrorCode; code != 0 {
		return fmt.Errorf("SaslHandshake: error %d", code)
	}
	sess, msg, err := m.Authenticate(ctx, host)
	if err != nil {
		return err
	}
	for done := false; !done; {
		auth := kmsg.NewPtrSASLAuthenticateRequest()
		auth.Version, auth.SASLAuthBytes = 1, msg
		r, err := roundTrip(auth)
		if err != nil {
			return err
		}
		ar := r.(*kmsg.SASLAuthenticateResponse)
		if ar.ErrorCode != 0 {
			return fmt.Errorf("SaslAuthenticate: error %d", ar.ErrorCode)
		}
		if done, msg, err = sess.Challenge(ar.SASLAuthBytes); err != nil {
			return err
		}
	}
	return nil
}
