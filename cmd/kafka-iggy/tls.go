package main

import (
	"fmt"
	"net"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/kafka-iggy/kafka-iggy/auth"
	"github.com/kafka-iggy/kafka-iggy/budget"
	"github.com/kafka-iggy/kafka-iggy/internal/tlsconf"
	"github.com/kafka-iggy/kafka-iggy/proxy"
	"github.com/kafka-iggy/kafka-iggy/proxy/tlsfront"
)

// SecurityProtocol names the Kafka listener's protocol as Kafka does:
// PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL (tls.enabled, sasl.enabled).
func (c Config) SecurityProtocol() string {
	switch {
	case c.TLS.Enabled && c.SASL.Enabled:
		return "SASL_SSL"
	case c.TLS.Enabled:
		return "SSL"
	case c.SASL.Enabled:
		return "SASL_PLAINTEXT"
	}
	return "PLAINTEXT"
}

// frontMetrics counts failed TLS handshakes on /metrics.
type frontMetrics struct{ failed *prometheus.CounterVec }

func (m frontMetrics) HandshakeFailed(reason string) { m.failed.WithLabelValues(reason).Inc() }

// startTLSFront binds the TLS front on listener.address and returns it
// with the proxy configuration behind it: gnet on a loopback port, the
// advertised address the front's.
func startTLSFront(cfg Config, reg prometheus.Registerer, mem *budget.Budget, log zerolog.Logger) (*tlsfront.Front, proxy.Config, error) {
	t := cfg.TLS
	rl, err := tlsconf.NewReloader(tlsconf.Files{CertFile: t.CertFile, KeyFile: t.KeyFile, CAFile: t.ClientCAFile}, log)
	if err != nil {
		return nil, cfg.Proxy, fmt.Errorf("tls.cert_file: %w", err)
	}
	minV, _ := tlsconf.MinVersion(t.MinVersion)
	tc, err := rl.ServerConfig(t.ClientAuth, minV)
	if err != nil {
		return nil, cfg.Proxy, fmt.Errorf("tls: %w", err)
	}
	mapper, err := auth.ParseMappingRules(t.PrincipalMappingRules)
	if err != nil {
		return nil, cfg.Proxy, fmt.Errorf("tls.principal_mapping_rules: %w", err)
	}
	failed := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kafka_iggy_tls_handshake_failures_total",
		Help: "TLS handshakes on the Kafka listener that failed, by reason (timeout, error, principal: no mapping rule matched)."}, []string{"reason"})
	if reg != nil {
		reg.MustRegister(failed)
	}
	f, err := tlsfront.Listen(tlsfront.Config{Address: cfg.Proxy.Listener.Address, TLS: tc, HandshakeTimeout: t.HandshakeTimeout,
		Mapper: mapper, MaxConnections: cfg.Proxy.Limits.MaxConnections, Metrics: frontMetrics{failed}, Budget: mem}, log)
	if err != nil {
		return nil, cfg.Proxy, fmt.Errorf("kafka listener: %w", err)
	}
	pc := cfg.Proxy
	host, _, _ := net.SplitHostPort(pc.Listener.Address)
	if pc.Listener.AdvertisedHost == "" {
		pc.Listener.AdvertisedHost = host
	}
	if pc.Listener.AdvertisedPort == 0 {
		pc.Listener.AdvertisedPort = f.Addr().(*net.TCPAddr).Port
	}
	pc.Listener.Address = "127.0.0.1:0"
	return f, pc, nil
}

// frontLookup adapts the front's connection table to the proxy's hook.
func frontLookup(f *tlsfront.Front) func(string) (proxy.FrontInfo, bool) {
	return func(remote string) (proxy.FrontInfo, bool) {
		i, ok := f.Lookup(remote)
		return proxy.FrontInfo{Remote: i.Remote, Principal: i.Principal}, ok
	}
}
