package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// saslRoundTrip produces one record with m and consumes it back.
func saslRoundTrip(t *testing.T, seed, topic string, m sasl.Mechanism) error {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seed), kgo.SASL(m), kgo.DefaultProduceTopic(topic),
		kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("sasl-" + topic)}).FirstErr(); err != nil {
		return err
	}
	for {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			return err
		}
		for it := fs.RecordIter(); !it.Done(); {
			if r := it.Next(); string(r.Value) == "sasl-"+topic {
				return nil
			}
		}
	}
}

// saslMetadata sends one Metadata request with m (no retries) and returns
// its error: a producer keeps its records buffered through authentication
// failures, a request answers at once.
func saslMetadata(t *testing.T, seed string, m sasl.Mechanism) error {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seed), kgo.SASL(m), kgo.RequestRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = kadm.NewClient(cl).ListTopics(ctx)
	return err
}

// wantAuthFailed checks err is the client's SASL_AUTHENTICATION_FAILED.
func wantAuthFailed(t *testing.T, err error) {
	t.Helper()
	if !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("err = %v, want SASL_AUTHENTICATION_FAILED", err)
	}
}

// metricsText reads the admin listener's /metrics.
func metricsText(t *testing.T, p *sidecarProc) string {
	t.Helper()
	resp, err := http.Get("http://" + p.admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// TestSASLPlainIggyLogin: with sasl.mode iggy, franz-go's PLAIN with the
// Iggy user's password produces and consumes; a wrong password gets
// SASL_AUTHENTICATION_FAILED, counted per remote host and logged without
// the password; a client without SASL is cut off unanswered.
func TestSASLPlainIggyLogin(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a sidecar process")
	}
	p := startServeProc(t, "KAFKA_IGGY_EMBEDDED__LISTEN=127.0.0.1:0", "KAFKA_IGGY_SASL__ENABLED=true",
		"KAFKA_IGGY_SASL__MECHANISMS=PLAIN", "KAFKA_IGGY_EMBEDDED__ROOT_PASSWORD=root-secret-pw",
		"KAFKA_IGGY_IGGY__PASSWORD=root-secret-pw")
	if err := saslRoundTrip(t, p.kafka, "plain-ok", plain.Auth{User: "iggy", Pass: "root-secret-pw"}.AsMechanism()); err != nil {
		t.Fatalf("right password: %v", err)
	}
	start := time.Now()
	wantAuthFailed(t, saslMetadata(t, p.kafka, plain.Auth{User: "iggy", Pass: "wrong-password-123"}.AsMechanism()))
	if d := time.Since(start); d < 100*time.Millisecond {
		t.Errorf("refusal after %v, want at least sasl.failure_delay (100ms)", d)
	}
	if m := metricsText(t, p); !strings.Contains(m, `kafka_iggy_sasl_failures_total{mechanism="PLAIN",remote_host="127.0.0.1"} 1`) {
		t.Errorf("failure not counted:\n%s", grepLines(m, "sasl"))
	}
	if log := p.logText(); strings.Contains(log, "wrong-password-123") || !strings.Contains(log, "sasl: authentication failed") {
		t.Errorf("failure log missing or carries the password:\n%s", grepLines(log, "sasl"))
	}

	// No SASL: the first request after ApiVersions closes the connection.
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.kafka), kgo.RequestRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := kadm.NewClient(cl).ListTopics(ctx); err == nil {
		t.Fatal("metadata served without authentication")
	}
	waitFor(t, 10*time.Second, "the authentication close logged", func() error {
		if !strings.Contains(p.logText(), `"close_reason":"authentication"`) {
			return errors.New(grepLines(p.logText(), "connection closed"))
		}
		return nil
	})
}

// TestSASLScram: SCRAM-SHA-512 and SCRAM-SHA-256 terminated in the sidecar
// from a credential file written by `kafka-iggy scram`: the right password
// produces and consumes, a wrong one and an unknown user both get
// SASL_AUTHENTICATION_FAILED.
func TestSASLScram(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a sidecar process")
	}
	var file bytes.Buffer
	for _, m := range []string{"SCRAM-SHA-512", "SCRAM-SHA-256"} {
		var errb bytes.Buffer
		if rc := runScram([]string{"--user", "alice", "--mechanism", m}, strings.NewReader("alice-secret\n"), &file, &errb); rc != 0 {
			t.Fatalf("scram %s: rc %d: %s", m, rc, errb.String())
		}
	}
	path := filepath.Join(t.TempDir(), "scram")
	if err := os.WriteFile(path, file.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startServeProc(t, "KAFKA_IGGY_EMBEDDED__LISTEN=127.0.0.1:0", "KAFKA_IGGY_SASL__ENABLED=true",
		"KAFKA_IGGY_SASL__MECHANISMS=SCRAM-SHA-512,SCRAM-SHA-256", "KAFKA_IGGY_SASL__SCRAM_FILE="+path,
		"KAFKA_IGGY_SASL__IGGY_USERS_FILE="+writeFile(t, "iggy-users", "alice user iggy iggy\n"))
	good := scram.Auth{User: "alice", Pass: "alice-secret"}
	if err := saslRoundTrip(t, p.kafka, "scram512", good.AsSha512Mechanism()); err != nil {
		t.Fatalf("SCRAM-SHA-512: %v", err)
	}
	if err := saslRoundTrip(t, p.kafka, "scram256", good.AsSha256Mechanism()); err != nil {
		t.Fatalf("SCRAM-SHA-256: %v", err)
	}
	wantAuthFailed(t, saslMetadata(t, p.kafka, scram.Auth{User: "alice", Pass: "not-alice"}.AsSha512Mechanism()))
	wantAuthFailed(t, saslMetadata(t, p.kafka, scram.Auth{User: "mallory", Pass: "x"}.AsSha512Mechanism()))
	// PLAIN is not offered: UNSUPPORTED_SASL_MECHANISM.
	if err := saslMetadata(t, p.kafka, plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()); !errors.Is(err, kerr.UnsupportedSaslMechanism) {
		t.Fatalf("PLAIN: err = %v, want UNSUPPORTED_SASL_MECHANISM", err)
	}
}

// grepLines returns the lines of s containing sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestSASLReauthentication: with sasl.session_lifetime 2s, franz-go
// re-authenticates on its own (KIP-368) and a client producing for 5s
// keeps working with no connection closed for an expired session; the
// sidecar counts re-authentications and no failure.
func TestSASLReauthentication(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a sidecar process")
	}
	p := startServeProc(t, "KAFKA_IGGY_EMBEDDED__LISTEN=127.0.0.1:0", "KAFKA_IGGY_SASL__ENABLED=true",
		"KAFKA_IGGY_SASL__MECHANISMS=PLAIN", "KAFKA_IGGY_SASL__SESSION_LIFETIME=2s")
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.kafka), kgo.SASL(plain.Auth{User: "iggy", Pass: "iggy"}.AsMechanism()),
		kgo.DefaultProduceTopic("reauth"), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	end := time.Now().Add(5 * time.Second)
	n := 0
	for tick := time.NewTicker(250 * time.Millisecond); time.Now().Before(end); <-tick.C {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("r")}).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", n, err)
		}
		n++
	}
	m := metricsText(t, p)
	if strings.Contains(m, "kafka_iggy_sasl_failures_total{") || strings.Contains(m, `sasl_authentications_total{mechanism="PLAIN"} 1`+"\n") {
		t.Fatalf("after %d produces over 5s:\n%s", n, grepLines(m, "sasl"))
	}
	// A connection past its lifetime without re-authenticating would be
	// closed at its next request, logged with close_reason authentication.
	if log := p.logText(); strings.Contains(log, `"close_reason":"authentication"`) {
		t.Fatalf("a session expired:\n%s", grepLines(log, "close_reason"))
	}
	t.Logf("%d produces; %s", n, grepLines(m, "sasl_authentications_total{"))
}
