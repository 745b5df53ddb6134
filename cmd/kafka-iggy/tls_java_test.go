package main

import (
	"crypto/x509/pkix"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/kafka-iggy/kafka-iggy/internal/tlsconf/tlstest"
)

// TestTLSJavaClient: kafka-clients over SSL (PEM truststore), SASL_SSL
// with PLAIN, SCRAM-SHA-512 and OAUTHBEARER (the client's default unsecured
// login handler; sasl.oauthbearer.unsecured on the loopback listener), and
// SSL with a client certificate (PEM keystore) against
// tls.client_auth=require: each produces and consumes; a wrong password
// gets SaslAuthenticationException, a client without a certificate an SSL
// error. With KAFKA_IGGY_E2E_KAFKA set the same SASL_SSL and client
// certificate cases run against Apache Kafka configured alike.
func TestTLSJavaClient(t *testing.T) {
	run := javaSasl(t)
	javaJackson(t)
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
		"KAFKA_IGGY_SASL__ENABLED=true", "KAFKA_IGGY_SASL__MODE=static", "KAFKA_IGGY_SASL__AUTHORIZATION=sidecar", "KAFKA_IGGY_SASL__USERS__alice=alice-secret-pw",
		"KAFKA_IGGY_SASL__MECHANISMS=PLAIN,SCRAM-SHA-512,OAUTHBEARER", "KAFKA_IGGY_SASL__SCRAM_FILE="+scramFile,
		"KAFKA_IGGY_SASL__OAUTHBEARER__UNSECURED=true")
	plainSSL := startServeProc(t, "KAFKA_IGGY_EMBEDDED__LISTEN=127.0.0.1:0", "KAFKA_IGGY_TLS__ENABLED=true",
		"KAFKA_IGGY_TLS__CERT_FILE="+cert, "KAFKA_IGGY_TLS__KEY_FILE="+key)
	mtls := startServeProc(t, "KAFKA_IGGY_EMBEDDED__LISTEN=127.0.0.1:0", "KAFKA_IGGY_TLS__ENABLED=true",
		"KAFKA_IGGY_TLS__CERT_FILE="+cert, "KAFKA_IGGY_TLS__KEY_FILE="+key, "KAFKA_IGGY_TLS__CLIENT_AUTH=require",
		"KAFKA_IGGY_TLS__CLIENT_CA_FILE="+pki.CAFile, "KAFKA_IGGY_LOG__LEVEL=debug", "KAFKA_IGGY_SASL__AUTHORIZATION=sidecar",
		`KAFKA_IGGY_TLS__PRINCIPAL_MAPPING_RULES=RULE:^CN=([^,]*),OU=ServiceUsers.*$/$1/`)
	keystore := append(append([]string{}, ssl...), "ssl.keystore.type=PEM", "ssl.keystore.location="+app.Bundle(t))
	for _, c := range []struct {
		name, addr, mech, user, pass, want string
		props                              []string
	}{
		{"SSL", plainSSL.kafka, "NONE", "", "", "OK", ssl},
		{"SASL_SSL PLAIN", sasl.kafka, "PLAIN", "alice", "alice-secret-pw", "OK", saslSSL},
		{"SASL_SSL SCRAM-SHA-512", sasl.kafka, "SCRAM-SHA-512", "carol", "carol-secret-pw", "OK", saslSSL},
		{"SASL_SSL SCRAM-SHA-512 wrong password", sasl.kafka, "SCRAM-SHA-512", "carol", "wrong-password", "FAIL org.apache.kafka.common.errors.SaslAuthenticationException", saslSSL},
		{"SASL_SSL OAUTHBEARER", sasl.kafka, "OAUTHBEARER", "alice", "", "OK", saslSSL},
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

	// The same against Apache Kafka configured alike (KAFKA_IGGY_E2E_KAFKA
	// set, as for the e2e suite): a SASL_SSL listener with PLAIN user
	// alice, SCRAM-SHA-512 user carol and OAUTHBEARER (the default
	// unsecured validator), an SSL listener requiring client certificates.
	if v := os.Getenv("KAFKA_IGGY_E2E_KAFKA"); v == "" || v == "0" {
		t.Log("KAFKA_IGGY_E2E_KAFKA unset: the Kafka side of this test is not run")
		return
	}
	kafkaSASL, kafkaSSL := startSecureKafkaBroker(t, dir, srv, pki.CAFile)
	for _, c := range []struct {
		name, addr, mech, user, pass, want string
		props                              []string
	}{
		{"Kafka SASL_SSL PLAIN", kafkaSASL, "PLAIN", "alice", "alice-secret-pw", "OK", saslSSL},
		{"Kafka SASL_SSL SCRAM-SHA-512", kafkaSASL, "SCRAM-SHA-512", "carol", "carol-secret-pw", "OK", saslSSL},
		{"Kafka SASL_SSL SCRAM-SHA-512 wrong password", kafkaSASL, "SCRAM-SHA-512", "carol", "wrong-password", "FAIL org.apache.kafka.common.errors.SaslAuthenticationException", saslSSL},
		{"Kafka SASL_SSL OAUTHBEARER", kafkaSASL, "OAUTHBEARER", "alice", "", "OK", saslSSL},
		{"Kafka SASL_SSL PLAIN wrong password", kafkaSASL, "PLAIN", "alice", "wrong-password", "FAIL org.apache.kafka.common.errors.SaslAuthenticationException", saslSSL},
		{"Kafka SSL client certificate", kafkaSSL, "NONE", "", "", "OK", keystore},
		{"Kafka SSL without a client certificate", kafkaSSL, "NONE", "", "", "FAIL org.apache.kafka.common.errors.SslAuthenticationException", ssl},
	} {
		got := run(c.addr, c.mech, c.user, c.pass, "java-tls-"+strings.ReplaceAll(strings.ToLower(c.name), " ", "-"), c.props...)
		t.Logf("%s: %s", c.name, got)
		if !strings.HasPrefix(got, c.want) {
			t.Errorf("%s: %q, want %s...", c.name, got, c.want)
		}
	}
}

// startSecureKafkaBroker starts Apache Kafka (scripts/kafka/start.sh) with
// a SASL_SSL listener (PLAIN user alice, SCRAM-SHA-512 user carol stored at
// format time, OAUTHBEARER with the default unsecured validator) and an SSL listener requiring
// client certificates, and returns their addresses; it stops with the test.
func startSecureKafkaBroker(t *testing.T, dir string, srv tlstest.Issued, caFile string) (saslSSL, ssl string) {
	t.Helper()
	props := filepath.Join(dir, "kafka-secure.properties")
	conf := "ssl.keystore.type=PEM\nssl.keystore.location=" + srv.Bundle(t) + "\nssl.truststore.type=PEM\nssl.truststore.location=" + caFile +
		"\nlistener.name.ssl.ssl.client.auth=required\nssl.principal.mapping.rules=RULE:^CN=([^,]*),OU=ServiceUsers.*$/$1/\nsasl.enabled.mechanisms=PLAIN,SCRAM-SHA-512,OAUTHBEARER\n" +
		"listener.name.sasl_ssl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_alice=\"alice-secret-pw\";\n" +
		"listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;\n" +
		"listener.name.sasl_ssl.oauthbearer.sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredLoginStringClaim_sub=\"admin\";\n"
	if err := os.WriteFile(props, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	kdir := filepath.Join(dir, "kafka")
	root := filepath.Join("..", "..", "scripts", "kafka")
	cmd := exec.Command("bash", filepath.Join(root, "start.sh"), kdir, "--watch", strconv.Itoa(os.Getpid()))
	cmd.Env = append(os.Environ(), "KAFKA_IGGY_BROKER_LISTENERS=SASL_SSL SSL", "KAFKA_IGGY_BROKER_PROPS="+props,
		"KAFKA_IGGY_BROKER_SCRAM=SCRAM-SHA-512=[name=carol,password=carol-secret-pw]")
	if v := os.Getenv("KAFKA_IGGY_E2E_KAFKA"); v != "1" {
		cmd.Env = append(cmd.Env, "KAFKA_VERSION="+v)
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("scripts/kafka/start.sh: %v\n%s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("bash", filepath.Join(root, "stop.sh"), kdir).Run() })
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(kdir, "listener."+name))
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(b))
	}
	return read("SASL_SSL"), read("SSL")
}

// javaJackson fails t when the Java client's lib has no jackson-databind:
// kafka-clients' default unsecured OAUTHBEARER login handler needs it and
// kafka-clients does not bring it (scripts/e2e/java/pom.xml adds it).
func javaJackson(t *testing.T) {
	t.Helper()
	dir := os.Getenv("KAFKA_IGGY_JAVA_DIR")
	if dir == "" {
		home, _ := os.UserHomeDir()
		dir = filepath.Join(home, ".cache", "kafka-iggy", "java")
	}
	if jars, _ := filepath.Glob(filepath.Join(dir, "lib", "jackson-databind-*.jar")); len(jars) == 0 {
		t.Fatalf("no jackson-databind in %s (the Java client's unsecured OAUTHBEARER login needs it): run scripts/install-test-deps.sh", filepath.Join(dir, "lib"))
	}
}
