package main

import (
	"crypto/x509/pkix"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kafka-iggy/kafka-iggy/internal/tlsconf/tlstest"
)

// TestTLSJavaClient: kafka-clients over SSL (PEM truststore), SASL_SSL
// with PLAIN and SCRAM-SHA-512, and SSL with a client certificate (PEM
// keystore) against tls.client_auth=require: each produces and consumes; a
// wrong password gets SaslAuthenticationException, a client without a
// certificate an SSL error.
func TestTLSJavaClient(t *testing.T) {
	run := javaSasl(t)
	dir := t.TempDir()
	pki := tlstest.New(t, dir)
	srv := pki.Issue("server", pkix.Name{CommonName: "localhost"}, true)
	cert, key := srv.CertFile, srv.KeyFile
	app := pki.Issue("app", pkix.Name{CommonName: "java-app", OrganizationalUnit: []string{"ServiceUsers"}}, false)
	var line strings.Builder
	if err := scramLine("carol", "SCRAM-SHA-512", 4096, strings.NewReader("carol-secret-pw\n"), &line); err != nil {
		t.Fatal(err)
	}
	scramFile := filepath.Join(dir, "scram")
	if err := os.WriteFile(scramFile, []byte(line.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	trust := []string{"ssl.truststore.type=PEM", "ssl.truststore.location=" + pki.CAFile}
	ssl := append([]string{"security.protocol=SSL"}, trust...)
	saslSSL := append([]string{"security.protocol=SASL_SSL"}, trust...)

	sasl := startServeProc(t, "KAFKA_IGGY_EMBEDDED__LISTEN=127.0.0.1:0", "KAFKA_IGGY_TLS__ENABLED=true",
		"KAFKA_IGGY_TLS__CERT_FILE="+cert, "KAFKA_IGGY_TLS__KEY_FILE="+key,
		"KAFKA_IGGY_SASL__ENABLED=true", "KAFKA_IGGY_SASL__MODE=static", "KAFKA_IGGY_SASL__USERS__alice=alice-secret-pw",
		"KAFKA_IGGY_SASL__MECHANISMS=PLAIN,SCRAM-SHA-512", "KAFKA_IGGY_SASL__SCRAM_FILE="+scramFile)
	plainSSL := startServeProc(t, "KAFKA_IGGY_EMBEDDED__LISTEN=127.0.0.1:0", "KAFKA_IGGY_TLS__ENABLED=true",
		"KAFKA_IGGY_TLS__CERT_FILE="+cert, "KAFKA_IGGY_TLS__KEY_FILE="+key)
	mtls := startServeProc(t, "KAFKA_IGGY_EMBEDDED__LISTEN=127.0.0.1:0", "KAFKA_IGGY_TLS__ENABLED=true",
		"KAFKA_IGGY_TLS__CERT_FILE="+cert, "KAFKA_IGGY_TLS__KEY_FILE="+key, "KAFKA_IGGY_TLS__CLIENT_AUTH=require",
		"KAFKA_IGGY_TLS__CLIENT_CA_FILE="+pki.CAFile, "KAFKA_IGGY_LOG__LEVEL=debug",
		`KAFKA_IGGY_TLS__PRINCIPAL_MAPPING_RULES=RULE:^CN=([^,]*),OU=ServiceUsers.*$/$1/`)
	keystore := append(append([]string{}, ssl...), "ssl.keystore.type=PEM", "ssl.keystore.location="+app.Bundle(t))
	for _, c := range []struct {
		name, addr, mech, user, pass, want string
		props                              []string
	}{
		{"SSL", plainSSL.kafka, "NONE", "", "", "OK", ssl},
		{"SASL_SSL PLAIN", sasl.kafka, "PLAIN", "alice", "alice-secret-pw", "OK", saslSSL},
		{"SASL_SSL SCRAM-SHA-512", sasl.kafka, "SCRAM-SHA-512", "carol", "carol-secret-pw", "OK", saslSSL},
		{"SASL_SSL PLAIN wrong password", sasl.kafka, "PLAIN", "alice", "wrong-password", "FAIL org.apache.kafka.common.errors.SaslAuthenticationException", saslSSL},
		{"SSL client certificate", mtls.kafka, "NONE", "", "", "OK", keystore},
		{"SSL without a client certificate", mtls.kafka, "NONE", "", "", "FAIL org.apache.kafka.common.errors.SslAuthenticationException", ssl},
	} {
		got := run(c.addr, c.mech, c.user, c.pass, "java-tls-"+strings.ReplaceAll(strings.ToLower(c.name), " ", "-"), c.props...)
		t.Logf("%s: %s", c.name, got)
		if !strings.HasPrefix(got, c.want) {
			t.Errorf("%s: %q, want %s...", c.name, got, c.want)
		}
	}
	if !strings.Contains(mtls.logText(), `"principal":"java-app"`) {
		t.Errorf("the Java client's certificate not mapped to its principal:\n%s", grepLines(mtls.logText(), "tls:"))
	}
}
