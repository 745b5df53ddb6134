//go:build cgo

package e2e

import (
	"bufio"
	"context"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/kafka-iggy/kafka-iggy/internal/tlsconf/tlstest"
)

// secureTarget is one broker (the sidecar or Kafka) serving SASL_SSL with
// PLAIN, SCRAM-SHA-512 and OAUTHBEARER (unsigned tokens) and SSL with
// required client certificates.
type secureTarget struct {
	name          string
	saslSSL, mtls string // bootstrap addresses
}

// secureClient is one client's view of a scenario.
type secureClient struct {
	name string
	// run produces one record to topic over the given settings and
	// returns the outcome class: ok, sasl_failed or refused.
	run func(t *testing.T, addr, topic string, s secureSettings) string
}

// secureSettings is what a client is configured with.
type secureSettings struct {
	protocol   string // SSL, SASL_SSL, PLAINTEXT
	mech       string // SASL mechanism: PLAIN (""), SCRAM-SHA-512 or OAUTHBEARER
	user, pass string // SASL credentials; for OAUTHBEARER user is the token's sub (an unsigned token)
	expired    bool   // OAUTHBEARER: a token that expired an hour ago
	cert       *tlstest.Issued
	pki        *tlstest.PKI
}

// TestSecurityDifferential: the same TLS and SASL_SSL scenarios against
// the sidecar and, with KAFKA_IGGY_E2E_KAFKA set, Apache Kafka configured
// the same way (a SASL_SSL listener with PLAIN, an SSL listener with
// ssl.client.auth=required and ssl.principal.mapping.rules, one CA the test
// makes; SCRAM-SHA-512 credentials stored as each keeps them: the sidecar's
// file from `kafka-iggy scram`, Kafka's from kafka-storage --add-scram;
// OAUTHBEARER with unsigned tokens: Kafka's default unsecured validator,
// the sidecar's sasl.oauthbearer.unsecured on its loopback listener):
// franz-go (a token the test makes), confluent-kafka-go and confluent-kafka
// (Python; both librdkafka, its built-in unsecured token from
// sasl.oauthbearer.config) get the same outcome class from both. One
// subtest per target.
func TestSecurityDifferential(t *testing.T) {
	if testing.Short() {
		t.Skip("starts brokers")
	}
	dir := t.TempDir()
	pki := tlstest.New(t, dir)
	srv := pki.Issue("server", pkix.Name{CommonName: "localhost"}, true)
	app := pki.Issue("app", pkix.Name{CommonName: "orders", OrganizationalUnit: []string{"ServiceUsers"}}, false)
	const rules = `RULE:^CN=([^,]*),OU=ServiceUsers.*$/$1/`

	targets := []secureTarget{startSecureSidecars(t, srv, pki, rules)}
	// Kafka is wanted when the suite has a Kafka target (its own, or the
	// compat run's shared broker): the TLS listeners need a broker of
	// their own, configured here.
	if want := os.Getenv("KAFKA_IGGY_E2E_KAFKA"); (want != "" && want != "0") || os.Getenv("KAFKA_IGGY_E2E_KAFKA_BOOTSTRAP") != "" {
		targets = append(targets, startSecureKafka(t, dir, srv, pki, rules))
	}
	clients := []secureClient{{"franz-go", franzSecure}, {"confluent", confluentSecure}, {"confluent-kafka-python", pythonSecure}}
	scenarios := []struct {
		name string
		sasl bool // the SASL_SSL listener, else the SSL one
		s    secureSettings
		want string
		only string // run by this client alone ("": all)
	}{
		{"SASL_SSL PLAIN", true, secureSettings{protocol: "SASL_SSL", user: "alice", pass: "alice-secret-pw"}, "ok", ""},
		{"SASL_SSL SCRAM-SHA-512", true, secureSettings{protocol: "SASL_SSL", mech: "SCRAM-SHA-512", user: "carol", pass: "carol-secret-pw"}, "ok", ""},
		{"SASL_SSL SCRAM-SHA-512 wrong password", true, secureSettings{protocol: "SASL_SSL", mech: "SCRAM-SHA-512", user: "carol", pass: "wrong-password"}, "sasl_failed", ""},
		{"SASL_SSL OAUTHBEARER", true, secureSettings{protocol: "SASL_SSL", mech: "OAUTHBEARER", user: "alice"}, "ok", ""},
		// librdkafka mints its own unsecured token, always valid: only
		// franz-go can present an expired one.
		{"SASL_SSL OAUTHBEARER expired token", true, secureSettings{protocol: "SASL_SSL", mech: "OAUTHBEARER", user: "alice", expired: true}, "sasl_failed", "franz-go"},
		{"SASL_SSL PLAIN wrong password", true, secureSettings{protocol: "SASL_SSL", user: "alice", pass: "wrong-password"}, "sasl_failed", ""},
		{"PLAINTEXT client on SASL_SSL", true, secureSettings{protocol: "PLAINTEXT"}, "refused", ""},
		{"SSL client certificate", false, secureSettings{protocol: "SSL", cert: &app}, "ok", ""},
		{"SSL without a client certificate", false, secureSettings{protocol: "SSL"}, "refused", ""},
	}
	// One subtest per target (the compatibility report's cells).
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			for _, sc := range scenarios {
				for _, cl := range clients {
					if sc.only != "" && sc.only != cl.name {
						continue
					}
					addr := tg.mtls
					if sc.sasl {
						addr = tg.saslSSL
					}
					s := sc.s
					s.pki = pki
					topic := "sec-" + strings.ToLower(strings.NewReplacer(" ", "-", "_", "-").Replace(sc.name)) + "-" + cl.name
					got := cl.run(t, addr, topic, s)
					t.Logf("%-34s %-9s %s", sc.name, cl.name, got)
					if got != sc.want {
						t.Errorf("%s, %s: %s, want %s", sc.name, cl.name, got, sc.want)
					}
				}
			}
		})
	}
}

// franzSecure produces one record with franz-go.
func franzSecure(t *testing.T, addr, topic string, s secureSettings) string {
	opts := []kgo.Opt{kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation(),
		kgo.RequestRetries(0), kgo.RecordRetries(1), kgo.RecordDeliveryTimeout(8 * time.Second),
		kgo.DisableIdempotentWrite()} // no InitProducerId: a fresh Kafka answers it COORDINATOR_LOAD_IN_PROGRESS for a while
	if s.protocol != "PLAINTEXT" {
		opts = append(opts, kgo.DialTLSConfig(s.pki.ClientTLS(s.cert)))
	}
	switch {
	case s.mech == "SCRAM-SHA-512":
		opts = append(opts, kgo.SASL(scram.Auth{User: s.user, Pass: s.pass}.AsSha512Mechanism()))
	case s.mech == "OAUTHBEARER":
		opts = append(opts, kgo.SASL(oauth.Auth{Token: unsecuredJWT(s.user, s.expired)}.AsMechanism()))
	case s.user != "":
		opts = append(opts, kgo.SASL(plain.Auth{User: s.user, Pass: s.pass}.AsMechanism()))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = cl.ProduceSync(ctx, &kgo.Record{Value: []byte("secure")}).FirstErr()
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, kerr.SaslAuthenticationFailed):
		return "sasl_failed"
	}
	t.Logf("franz-go: %v", err)
	return "refused"
}

// confluentSecure produces one record with confluent-kafka-go.
func confluentSecure(t *testing.T, addr, topic string, s secureSettings) string {
	cfg := &kafka.ConfigMap{"bootstrap.servers": addr, "security.protocol": s.protocol, "message.timeout.ms": 8000,
		"socket.timeout.ms": 5000, "reconnect.backoff.max.ms": 1000}
	if s.protocol != "PLAINTEXT" {
		_ = cfg.SetKey("ssl.ca.location", s.pki.CAFile)
	}
	if s.cert != nil {
		_ = cfg.SetKey("ssl.certificate.location", s.cert.CertFile)
		_ = cfg.SetKey("ssl.key.location", s.cert.KeyFile)
	}
	for k, v := range librdkafkaSASL(s) {
		_ = cfg.SetKey(k, v)
	}
	p, err := kafka.NewProducer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	dr := make(chan kafka.Event, 1)
	if err := p.Produce(&kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: kafka.PartitionAny}, Value: []byte("secure")}, dr); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(15 * time.Second)
	for {
		select {
		case ev := <-dr:
			if m := ev.(*kafka.Message); m.TopicPartition.Error != nil {
				t.Logf("confluent: %v", m.TopicPartition.Error)
				return "refused"
			}
			return "ok"
		case ev := <-p.Events():
			if e, ok := ev.(kafka.Error); ok {
				if e.Code() == kafka.ErrAuthentication && strings.Contains(e.String(), "SASL") {
					return "sasl_failed"
				}
				if e.Code() == kafka.ErrAllBrokersDown || e.Code() == kafka.ErrAuthentication || e.Code() == kafka.ErrSsl {
					t.Logf("confluent: %v", e)
					return "refused"
				}
			}
		case <-deadline:
			return "timeout"
		}
	}
}

// librdkafkaSASL is the librdkafka configuration of s's SASL settings:
// username and password, or for OAUTHBEARER librdkafka's built-in
// unsecured token with sub s.user.
func librdkafkaSASL(s secureSettings) map[string]string {
	switch {
	case s.mech == "OAUTHBEARER":
		return map[string]string{"sasl.mechanism": "OAUTHBEARER", "enable.sasl.oauthbearer.unsecure.jwt": "true",
			"sasl.oauthbearer.config": "principal=" + s.user}
	case s.user == "":
		return nil
	case s.mech == "":
		return map[string]string{"sasl.mechanism": "PLAIN", "sasl.username": s.user, "sasl.password": s.pass}
	}
	return map[string]string{"sasl.mechanism": s.mech, "sasl.username": s.user, "sasl.password": s.pass}
}

// unsecuredJWT is an unsigned token (RFC 7515 appendix A.5: header
// {"alg":"none"}, empty signature) for sub, valid for an hour as Kafka's
// OAuthBearerUnsecuredLoginCallbackHandler makes them, or expired an hour
// ago (beyond either broker's clock skew allowance).
func unsecuredJWT(sub string, expired bool) string {
	now := time.Now().Unix()
	iat, exp := now, now+3600
	if expired {
		iat, exp = now-7200, now-3600
	}
	claims, _ := json.Marshal(map[string]any{"sub": sub, "iat": iat, "exp": exp})
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"none"}`)) + "." + enc(claims) + "."
}

// pythonSecure produces one record with confluent-kafka (Python).
func pythonSecure(t *testing.T, addr, topic string, s secureSettings) string {
	pythonReady(t)
	conf := map[string]any{"bootstrap.servers": addr, "security.protocol": s.protocol}
	if s.protocol != "PLAINTEXT" {
		conf["ssl.ca.location"] = s.pki.CAFile
	}
	if s.cert != nil {
		conf["ssl.certificate.location"], conf["ssl.key.location"] = s.cert.CertFile, s.cert.KeyFile
	}
	for k, v := range librdkafkaSASL(s) {
		conf[k] = v
	}
	raw, err := json.Marshal(conf)
	if err != nil {
		t.Fatal(err)
	}
	stdout, stderr, err := runTool(t, 60*time.Second, nil, filepath.Join(pythonVenv(), "bin", "python"),
		filepath.Join("python", "secure_produce.py"), string(raw), topic)
	if err != nil {
		t.Fatalf("secure_produce.py: %v\n%s", err, stderr)
	}
	if len(stderr) > 0 {
		t.Logf("confluent-kafka-python: %s", strings.TrimSpace(string(stderr)))
	}
	return strings.TrimSpace(string(stdout))
}

// startSecureSidecars runs two sidecars: SASL_SSL with a static PLAIN user,
// a SCRAM-SHA-512 credential and OAUTHBEARER with unsigned tokens
// (sasl.oauthbearer.unsecured, allowed as the listener is loopback), and
// SSL with required client certificates.
func startSecureSidecars(t *testing.T, srv tlstest.Issued, pki *tlstest.PKI, rules string) secureTarget {
	t.Helper()
	bin := buildSidecarBinary(t)
	scramCmd := exec.Command(bin, "scram", "--user", "carol", "--mechanism", "SCRAM-SHA-512")
	scramCmd.Stdin = strings.NewReader("carol-secret-pw\n")
	line, err := scramCmd.Output()
	if err != nil {
		t.Fatalf("kafka-iggy scram: %v", err)
	}
	scramFile := filepath.Join(t.TempDir(), "scram")
	if err := os.WriteFile(scramFile, line, 0o600); err != nil {
		t.Fatal(err)
	}
	tlsEnv := []string{"KAFKA_IGGY_TLS__ENABLED=true", "KAFKA_IGGY_TLS__CERT_FILE=" + srv.CertFile, "KAFKA_IGGY_TLS__KEY_FILE=" + srv.KeyFile}
	sasl := runSidecarProc(t, bin, append(tlsEnv, "KAFKA_IGGY_SASL__ENABLED=true", "KAFKA_IGGY_SASL__MODE=static", "KAFKA_IGGY_SASL__AUTHORIZATION=sidecar",
		"KAFKA_IGGY_SASL__USERS__alice=alice-secret-pw", "KAFKA_IGGY_SASL__MECHANISMS=PLAIN,SCRAM-SHA-512,OAUTHBEARER", "KAFKA_IGGY_SASL__SCRAM_FILE="+scramFile,
		"KAFKA_IGGY_SASL__OAUTHBEARER__UNSECURED=true")...)
	mtls := runSidecarProc(t, bin, append(tlsEnv, "KAFKA_IGGY_TLS__CLIENT_AUTH=require", "KAFKA_IGGY_TLS__CLIENT_CA_FILE="+pki.CAFile, "KAFKA_IGGY_SASL__AUTHORIZATION=sidecar",
		"KAFKA_IGGY_TLS__PRINCIPAL_MAPPING_RULES="+rules)...)
	return secureTarget{name: "sidecar", saslSSL: sasl, mtls: mtls}
}

// runSidecarProc runs `kafka-iggy serve` with env on loopback ports and
// returns its Kafka address; the process ends with the test.
func runSidecarProc(t *testing.T, bin string, env ...string) string {
	t.Helper()
	cmd := exec.Command(bin, "serve")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KAFKA_IGGY_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(append(cmd.Env, "KAFKA_IGGY_LISTENER__ADDRESS=127.0.0.1:0", "KAFKA_IGGY_ADMIN__ENABLED=false",
		"KAFKA_IGGY_EMBEDDED__LISTEN=127.0.0.1:0", "KAFKA_IGGY_LOG__FORMAT=json"), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	addr := make(chan string, 1)
	var log strings.Builder
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			var line struct {
				Message string `json:"message"`
				Kafka   string `json:"kafka_address"`
			}
			if json.Unmarshal(sc.Bytes(), &line) == nil && strings.Contains(line.Message, "ready for Kafka clients") {
				addr <- line.Kafka
			} else if log.Len() < 64<<10 {
				log.Write(sc.Bytes())
				log.WriteByte('\n')
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
		close(addr)
	}()
	select {
	case a, ok := <-addr:
		if !ok {
			t.Fatalf("kafka-iggy serve exited before it was ready")
		}
		return a
	case <-time.After(60 * time.Second):
		t.Fatal("kafka-iggy serve not ready within 60s")
	}
	return ""
}

// startSecureKafka starts Apache Kafka with a SASL_SSL listener (PLAIN
// user alice, SCRAM-SHA-512 user carol, OAUTHBEARER with the default
// unsecured validator) and an SSL listener requiring client certificates, both with
// srv's certificate and pki's CA.
func startSecureKafka(t *testing.T, dir string, srv tlstest.Issued, pki *tlstest.PKI, rules string) secureTarget {
	t.Helper()
	props := filepath.Join(dir, "secure.properties")
	conf := fmt.Sprintf(`ssl.keystore.type=PEM
ssl.keystore.location=%s
ssl.truststore.type=PEM
ssl.truststore.location=%s
ssl.principal.mapping.rules=%s
listener.name.ssl.ssl.client.auth=required
sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-512,OAUTHBEARER
listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
listener.name.sasl_ssl.oauthbearer.sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredLoginStringClaim_sub="admin";
listener.name.sasl_ssl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret-pw";
`, srv.Bundle(t), pki.CAFile, rules)
	if err := os.WriteFile(props, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KAFKA_IGGY_BROKER_LISTENERS", "SASL_SSL SSL")
	t.Setenv("KAFKA_IGGY_BROKER_PROPS", props)
	t.Setenv("KAFKA_IGGY_BROKER_SCRAM", "SCRAM-SHA-512=[name=carol,password=carol-secret-pw]")
	v := os.Getenv("KAFKA_IGGY_E2E_KAFKA")
	if v == "1" || v == "0" {
		v = ""
	}
	b, err := StartKafkaBroker(v, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Stop)
	read := func(name string) string {
		a, err := os.ReadFile(filepath.Join(b.Dir, "listener."+name))
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(a))
	}
	return secureTarget{name: "kafka", saslSSL: read("SASL_SSL"), mtls: read("SSL")}
}
