package cluster

import (
	"crypto/tls"
	"fmt"

	"github.com/rs/zerolog"

	"github.com/kafka-iggy/kafka-iggy/internal/tlsconf"
)

// peerTLS is the peer link's mutual TLS: the server side requires a
// client certificate chaining to the CA, the client side presents the
// same certificate and verifies the owner's (its name only when
// peers.tls.server_name is set). The files are reloaded when they change.
type peerTLS struct {
	server *tls.Config
	client func() *tls.Config
}

func newPeerTLS(t PeerTLSConfig, log zerolog.Logger) (*peerTLS, error) {
	rl, err := tlsconf.NewReloader(tlsconf.Files{CertFile: t.CertFile, KeyFile: t.KeyFile, CAFile: t.CAFile}, log)
	if err != nil {
		return nil, fmt.Errorf("peers.tls.cert_file: %w", err)
	}
	srv, err := rl.ServerConfig(tlsconf.ClientAuthRequire, tls.VersionTLS12)
	if err != nil {
		return nil, fmt.Errorf("peers.tls: %w", err)
	}
	return &peerTLS{server: srv, client: func() *tls.Config {
		c := rl.ClientConfig(t.ServerName, tls.VersionTLS12)
		if t.ServerName == "" {
			return tlsconf.ChainOnly(c)
		}
		return c
	}}, nil
}
