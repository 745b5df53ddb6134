package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
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
	tc := tlsAddrs[host]
	tlsMu.Unlock()
	d := &net.Dialer{Timeout: 10 * time.Second}
	if tc == nil {
		return d.DialContext(ctx, network, host)
	}
	return (&tls.Dialer{NetDialer: d, Config: tc}).DialContext(ctx, network, host)
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
