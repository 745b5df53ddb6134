package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// javaSasl compiles testdata/javasasl/KafkaSasl.java against kafka-clients
// in $KAFKA_IGGY_JAVA_DIR (default ~/.cache/kafka-iggy/java, installed by
// scripts/install-test-deps.sh) and returns a function that runs one round
// trip (extra client properties as KEY=VALUE) and returns its output
// line. Skips when Java or the jars are absent.
func javaSasl(t *testing.T) func(bootstrap, mech, user, pass, topic string, props ...string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("runs a JVM")
	}
	dir := os.Getenv("KAFKA_IGGY_JAVA_DIR")
	if dir == "" {
		home, _ := os.UserHomeDir()
		dir = filepath.Join(home, ".cache", "kafka-iggy", "java")
	}
	lib := filepath.Join(dir, "lib")
	_, jerr := exec.LookPath("javac")
	if jars, _ := filepath.Glob(filepath.Join(lib, "kafka-clients-*.jar")); len(jars) == 0 || jerr != nil {
		msg := "javac or kafka-clients in " + lib + " missing; run scripts/install-test-deps.sh"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg) // CI installs them: a missing one is a broken install, not a skip
		}
		t.Skip(msg)
	}
	classes := t.TempDir()
	cp := filepath.Join(lib, "*")
	if out, err := exec.Command("javac", "-encoding", "UTF-8", "--release", "17", "-d", classes, "-cp", cp,
		filepath.Join("testdata", "javasasl", "KafkaSasl.java")).CombinedOutput(); err != nil {
		t.Fatalf("javac: %v\n%s", err, out)
	}
	return func(bootstrap, mech, user, pass, topic string, props ...string) string {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		var stdout, stderr bytes.Buffer
		cmd := exec.CommandContext(ctx, "java", "-cp", classes+string(os.PathListSeparator)+cp,
			"-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "KafkaSasl", bootstrap, mech, user, pass, topic)
		cmd.Args = append(cmd.Args, props...)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("java: %v\n%s", err, stderr.String())
		}
		return strings.TrimSpace(stdout.String())
	}
}

// TestSASLJavaClient: kafka-clients with SASL_PLAINTEXT, PLAIN (an Iggy
// login), SCRAM-SHA-512 (from a credential file) and OAUTHBEARER (a JWT
// checked against a JWKS file), produces and consumes with the right
// password or token and gets SaslAuthenticationException with a wrong one.
func TestSASLJavaClient(t *testing.T) {
	run := javaSasl(t)
	var file, errb bytes.Buffer
	if rc := runScram([]string{"--user", "alice", "--mechanism", "SCRAM-SHA-512"}, strings.NewReader("alice-secret\n"), &file, &errb); rc != 0 {
		t.Fatalf("scram: %s", errb.String())
	}
	path := filepath.Join(t.TempDir(), "scram")
	if err := os.WriteFile(path, file.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	jwks, token := testIssuer(t)
	p := startServeProc(t, "KAFKA_IGGY_EMBEDDED__LISTEN=127.0.0.1:0", "KAFKA_IGGY_SASL__ENABLED=true",
		"KAFKA_IGGY_SASL__MECHANISMS=PLAIN,SCRAM-SHA-512,OAUTHBEARER", "KAFKA_IGGY_SASL__SCRAM_FILE="+path,
		"KAFKA_IGGY_EMBEDDED__ROOT_PASSWORD=root-secret-pw", "KAFKA_IGGY_IGGY__PASSWORD=root-secret-pw",
		"KAFKA_IGGY_SASL__OAUTHBEARER__JWKS="+jwks, "KAFKA_IGGY_SASL__OAUTHBEARER__ISSUER=https://idp.test",
		"KAFKA_IGGY_SASL__OAUTHBEARER__AUDIENCE=kafka",
		"KAFKA_IGGY_SASL__IGGY_USERS_FILE="+writeFile(t, "iggy-users", "alice user iggy root-secret-pw\norders user iggy root-secret-pw\n"))
	for _, c := range []struct{ mech, user, pass, topic, want string }{
		{"PLAIN", "iggy", "root-secret-pw", "java-plain", "OK"},
		{"SCRAM-SHA-512", "alice", "alice-secret", "java-scram", "OK"},
		{"PLAIN", "iggy", "wrong-password", "java-plain-bad", "FAIL org.apache.kafka.common.errors.SaslAuthenticationException"},
		{"SCRAM-SHA-512", "alice", "wrong-password", "java-scram-bad", "FAIL org.apache.kafka.common.errors.SaslAuthenticationException"},
		{"OAUTHBEARER", "orders", token("https://idp.test"), "java-oauth", "OK"},
		{"OAUTHBEARER", "orders", token("https://other.test"), "java-oauth-bad", "FAIL org.apache.kafka.common.errors.SaslAuthenticationException"},
	} {
		got := run(p.kafka, c.mech, c.user, c.pass, c.topic)
		t.Logf("%s %s: %s", c.mech, c.user, got)
		if !strings.HasPrefix(got, c.want) {
			t.Errorf("%s %s/%s: %q, want %s...", c.mech, c.user, c.pass, got, c.want)
		}
	}
}
