// Package tlsconf builds crypto/tls configurations from mounted PEM files
// and reloads them when the files change: a Kubernetes Secret volume swaps
// its files in place, and new handshakes must use the new certificate
// without a restart. Connections already established keep theirs.
//
// A Reloader stats its files at most once per CheckEvery on the handshake
// path (no goroutine of its own); a file whose modification time or size
// changed is read again, and a pair that fails to load (a half-written
// update, a key that does not match) is logged and the previous one kept.
package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// CheckEvery is how often, at most, a Reloader looks at its files' mtimes.
const CheckEvery = time.Second

// Files names the PEM files of one side of a TLS link. Empty names are
// absent parts.
type Files struct {
	// CertFile is the certificate chain, leaf first.
	CertFile string
	// KeyFile is CertFile's private key.
	KeyFile string
	// CAFile holds the CA certificates the other side's certificate is
	// verified against (a server's client CAs, a client's root CAs).
	CAFile string
}

// LoadPool reads a PEM file of CA certificates.
func LoadPool(file string) (*x509.CertPool, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	p := x509.NewCertPool()
	if !p.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("%s holds no PEM certificate", file)
	}
	return p, nil
}

// Check loads f once and returns what is wrong with it, each problem
// prefixed by prefix and the key it concerns (prefix+"cert_file: ...").
// needCert says a certificate is required.
func (f Files) Check(prefix string, needCert bool) []error {
	var errs []error
	switch {
	case f.CertFile == "" && f.KeyFile == "":
		if needCert {
			errs = append(errs, fmt.Errorf("%scert_file: required", prefix))
		}
	case f.CertFile == "":
		errs = append(errs, fmt.Errorf("%scert_file: required with %skey_file", prefix, prefix))
	case f.KeyFile == "":
		errs = append(errs, fmt.Errorf("%skey_file: required with %scert_file", prefix, prefix))
	default:
		if _, err := tls.LoadX509KeyPair(f.CertFile, f.KeyFile); err != nil {
			errs = append(errs, fmt.Errorf("%scert_file: cannot load the key pair %s / %s: %v", prefix, f.CertFile, f.KeyFile, err))
		}
	}
	if f.CAFile != "" {
		if _, err := LoadPool(f.CAFile); err != nil {
			errs = append(errs, fmt.Errorf("%sca_file: %v", prefix, err))
		}
	}
	return errs
}

// stamp identifies one version of a file.
type stamp struct {
	mod  time.Time
	size int64
}

func stampOf(file string) stamp {
	if file == "" {
		return stamp{}
	}
	st, err := os.Stat(file)
	if err != nil {
		return stamp{}
	}
	return stamp{st.ModTime(), st.Size()}
}

// Reloader holds the current certificate and CA pool of Files. Safe for
// concurrent use.
type Reloader struct {
	f   Files
	log zerolog.Logger
	now func() time.Time

	mu      sync.Mutex
	checked time.Time
	stamps  [3]stamp // cert, key, ca
	cert    *tls.Certificate
	pool    *x509.CertPool
	loads   int
}

// NewReloader loads f (an error names the file) and returns its Reloader.
func NewReloader(f Files, log zerolog.Logger) (*Reloader, error) {
	r := &Reloader{f: f, log: log, now: time.Now}
	r.stamps = r.stampAll()
	if err := r.load(); err != nil {
		return nil, err
	}
	r.checked = r.now()
	return r, nil
}

func (r *Reloader) stampAll() [3]stamp {
	return [3]stamp{stampOf(r.f.CertFile), stampOf(r.f.KeyFile), stampOf(r.f.CAFile)}
}

// load reads every file; on error nothing changes. Called under mu or
// before r is shared.
func (r *Reloader) load() error {
	var cert *tls.Certificate
	if r.f.CertFile != "" || r.f.KeyFile != "" {
		c, err := tls.LoadX509KeyPair(r.f.CertFile, r.f.KeyFile)
		if err != nil {
			return fmt.Errorf("key pair %s / %s: %w", r.f.CertFile, r.f.KeyFile, err)
		}
		cert = &c
	}
	var pool *x509.CertPool
	if r.f.CAFile != "" {
		p, err := LoadPool(r.f.CAFile)
		if err != nil {
			return err
		}
		pool = p
	}
	r.cert, r.pool = cert, pool
	r.loads++
	return nil
}

// refresh reloads the files when one changed, at most once per CheckEvery.
func (r *Reloader) refresh() {
	now := r.now()
	if now.Sub(r.checked) < CheckEvery {
		return
	}
	r.checked = now
	st := r.stampAll()
	if st == r.stamps {
		return
	}
	if err := r.load(); err != nil {
		// Keep serving the previous pair; a later change is tried again.
		r.log.Error().Err(err).Str("cert_file", r.f.CertFile).Msg("tls: reloading the changed files failed; keeping the previous certificate")
		r.stamps = st
		return
	}
	r.stamps = st
	r.log.Info().Str("cert_file", r.f.CertFile).Str("ca_file", r.f.CAFile).Msg("tls: certificate files changed, reloaded")
}

// Current returns the certificate (nil when Files has none) and CA pool
// (nil when none), reloading changed files first.
func (r *Reloader) Current() (*tls.Certificate, *x509.CertPool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.refresh()
	return r.cert, r.pool
}

// Loads counts the successful loads (the first one included).
func (r *Reloader) Loads() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.loads
}

// ClientAuth policies of ServerConfig.
const (
	ClientAuthNone    = "none"
	ClientAuthRequest = "request"
	ClientAuthRequire = "require"
)

// MinVersion parses "1.2" or "1.3".
func MinVersion(v string) (uint16, error) {
	switch v {
	case "1.2", "":
		return tls.VersionTLS12, nil
	case "1.3":
		return tls.VersionTLS13, nil
	}
	return 0, fmt.Errorf("%q is not 1.2 or 1.3", v)
}

// ServerConfig returns a server configuration whose certificate and client
// CAs come from r at each handshake. clientAuth is none, request (verified
// when sent) or require.
func (r *Reloader) ServerConfig(clientAuth string, minVersion uint16) (*tls.Config, error) {
	var ca tls.ClientAuthType
	switch clientAuth {
	case ClientAuthNone, "":
		ca = tls.NoClientCert
	case ClientAuthRequest, "requested": // Kafka's ssl.client.auth spellings too
		ca = tls.VerifyClientCertIfGiven
	case ClientAuthRequire, "required":
		ca = tls.RequireAndVerifyClientCert
	default:
		return nil, fmt.Errorf("client auth %q is not one of none, request, require", clientAuth)
	}
	if ca != tls.NoClientCert && r.f.CAFile == "" {
		return nil, errors.New("client certificates need a CA file")
	}
	if r.f.CertFile == "" {
		return nil, errors.New("a server needs a certificate")
	}
	base := &tls.Config{MinVersion: minVersion, ClientAuth: ca}
	base.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) {
		cert, pool := r.Current()
		c := &tls.Config{MinVersion: minVersion, ClientAuth: ca, Certificates: []tls.Certificate{*cert}, ClientCAs: pool}
		return c, nil
	}
	return base, nil
}

// ClientConfig returns a client configuration with r's current CA pool as
// roots (nil: the system's) and r's certificate, if any, offered when the
// server asks. Build one per dial so a reloaded CA is used.
func (r *Reloader) ClientConfig(serverName string, minVersion uint16) *tls.Config {
	cert, pool := r.Current()
	c := &tls.Config{MinVersion: minVersion, ServerName: serverName, RootCAs: pool}
	if cert != nil {
		c.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			cur, _ := r.Current()
			return cur, nil
		}
	}
	return c
}

// ChainOnly makes c verify the server's certificate chain against its
// RootCAs without checking a name: for peers dialled by a pod IP their
// certificates do not carry. Only with RootCAs set.
func ChainOnly(c *tls.Config) *tls.Config {
	roots := c.RootCAs
	c.InsecureSkipVerify = true // the chain is verified below; only the name is not
	c.VerifyConnection = func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return errors.New("tls: the server sent no certificate")
		}
		opts := x509.VerifyOptions{Roots: roots, Intermediates: x509.NewCertPool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
		for _, ic := range cs.PeerCertificates[1:] {
			opts.Intermediates.AddCert(ic)
		}
		_, err := cs.PeerCertificates[0].Verify(opts)
		return err
	}
	return c
}
