// Package tlstest makes the tests' own certificate authority and
// certificates (crypto/x509, ECDSA P-256) and writes them as PEM files.
// Imported by test files only.
package tlstest

import (
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
	"sync/atomic"
	"testing"
	"time"
)

var serial atomic.Int64

// PKI is a CA and the directory its files go to.
type PKI struct {
	t     testing.TB
	dir   string
	ca    *x509.Certificate
	caKey *ecdsa.PrivateKey
	// CAFile is the CA certificate (PEM).
	CAFile string
}

// New makes a CA writing its files into dir.
func New(t testing.TB, dir string) *PKI {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial.Add(1)), Subject: pkix.Name{CommonName: "kafka-iggy test CA " + dir},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(der)
	p := &PKI{t: t, dir: dir, ca: ca, caKey: key, CAFile: filepath.Join(dir, "ca.pem")}
	writePEM(t, p.CAFile, "CERTIFICATE", der)
	return p
}

func writePEM(t testing.TB, file, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// Issued is one certificate's files.
type Issued struct {
	CertFile, KeyFile string
	Serial            *big.Int
}

// Issue writes a certificate for subject signed by the CA, as name.pem and
// name-key.pem (over earlier ones of that name). A server certificate has
// the SANs 127.0.0.1 and localhost and is usable by clients too (a peer
// link's both ends); a client one is for client authentication only.
func (p *PKI) Issue(name string, subject pkix.Name, server bool) Issued {
	p.t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		p.t.Fatal(err)
	}
	sn := big.NewInt(serial.Add(1))
	tmpl := &x509.Certificate{SerialNumber: sn, Subject: subject, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
		tmpl.DNSNames = []string{"localhost"}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.caKey)
	if err != nil {
		p.t.Fatal(err)
	}
	kd, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		p.t.Fatal(err)
	}
	is := Issued{CertFile: filepath.Join(p.dir, name+".pem"), KeyFile: filepath.Join(p.dir, name+"-key.pem"), Serial: sn}
	writePEM(p.t, is.CertFile, "CERTIFICATE", der)
	writePEM(p.t, is.KeyFile, "PRIVATE KEY", kd)
	return is
}

// Bundle writes the key and the certificate into one PEM file (key first),
// the form kafka-clients reads as ssl.keystore.type=PEM, and returns its
// name.
func (is Issued) Bundle(t testing.TB) string {
	t.Helper()
	k, err := os.ReadFile(is.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	c, err := os.ReadFile(is.CertFile)
	if err != nil {
		t.Fatal(err)
	}
	out := is.CertFile[:len(is.CertFile)-len(".pem")] + "-keystore.pem"
	if err := os.WriteFile(out, append(k, c...), 0o600); err != nil {
		t.Fatal(err)
	}
	return out
}

// ClientTLS trusts the CA (server name localhost) and offers is when it
// is given.
func (p *PKI) ClientTLS(is *Issued) *tls.Config {
	p.t.Helper()
	pool := x509.NewCertPool()
	pool.AddCert(p.ca)
	c := &tls.Config{RootCAs: pool, ServerName: "localhost"}
	if is != nil {
		kp, err := tls.LoadX509KeyPair(is.CertFile, is.KeyFile)
		if err != nil {
			p.t.Fatal(err)
		}
		c.Certificates = []tls.Certificate{kp}
	}
	return c
}
