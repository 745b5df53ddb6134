package auth_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/kafka-iggy/kafka-iggy/auth"
	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
	"github.com/kafka-iggy/kafka-iggy/embedded/embedtest"
)

type countMetrics struct{ failed, ok []string }

func (m *countMetrics) Failed(host, mech string) { m.failed = append(m.failed, host+" "+mech) }
func (m *countMetrics) Succeeded(mech string)    { m.ok = append(m.ok, mech) }

func newAuth(t *testing.T, lifetime time.Duration, m auth.Metrics, log io.Writer) *auth.Authenticator {
	t.Helper()
	st := auth.NewScramStore()
	for _, mech := range []string{auth.ScramSHA256, auth.ScramSHA512} {
		c, err := auth.NewScramCredential(mech, "alice-pw", []byte("0123456789abcdef"), 4096)
		if err != nil {
			t.Fatal(err)
		}
		st.Add("alice", mech, c)
	}
	if log == nil {
		log = io.Discard
	}
	a, err := auth.New(auth.Config{
		Mechanisms:      []string{auth.Plain, auth.ScramSHA512, auth.ScramSHA256},
		SessionLifetime: lifetime,
		Plain:           auth.StaticUsers{"alice": "alice-pw", "bob": "bob-pw"},
		Scram:           st,
		Metrics:         m,
	}, zerolog.New(log))
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// login runs franz-go's client side of m against s to its end and returns
// the last server result.
func login(t *testing.T, s *auth.Session, m sasl.Mechanism, now time.Time) auth.Result {
	t.Helper()
	if code, _ := s.Handshake(m.Name()); code != 0 {
		t.Fatalf("handshake %s: code %d", m.Name(), code)
	}
	sess, tok, err := m.Authenticate(context.Background(), "127.0.0.1:9092")
	if err != nil {
		t.Fatal(err)
	}
	for {
		r := s.Authenticate(context.Background(), tok, now)
		if r.Code != 0 {
			return r
		}
		done, next, err := sess.Challenge(r.Token)
		if err != nil {
			t.Fatalf("client refused the server's answer: %v", err)
		}
		if done {
			return r
		}
		tok = next
	}
}

func TestScramWithFranzClient(t *testing.T) {
	for _, m := range []sasl.Mechanism{
		scram.Auth{User: "alice", Pass: "alice-pw"}.AsSha512Mechanism(),
		scram.Auth{User: "alice", Pass: "alice-pw"}.AsSha256Mechanism(),
		plain.Auth{User: "alice", Pass: "alice-pw"}.AsMechanism(),
	} {
		s := newAuth(t, 0, nil, nil).NewSession("127.0.0.1:5000")
		if err := s.Gate(int16(kmsg.Metadata), time.Now()); !errors.Is(err, auth.ErrUnauthenticated) {
			t.Fatalf("%s: metadata before auth: %v", m.Name(), err)
		}
		if r := login(t, s, m, time.Now()); r.Code != 0 || r.LifetimeMillis != 0 {
			t.Fatalf("%s: %+v", m.Name(), r)
		}
		if s.Principal() != "alice" {
			t.Fatalf("%s: principal %q", m.Name(), s.Principal())
		}
		if err := s.Gate(int16(kmsg.Metadata), time.Now()); err != nil {
			t.Fatalf("%s: metadata after auth: %v", m.Name(), err)
		}
		if r := s.Authenticate(context.Background(), []byte("x"), time.Now()); r.Code != kerr.IllegalSaslState.Code {
			t.Fatalf("%s: SaslAuthenticate after auth: code %d", m.Name(), r.Code)
		}
	}
}

func TestRefusals(t *testing.T) {
	var logs bytes.Buffer
	m := &countMetrics{}
	a := newAuth(t, 0, m, &logs)
	for _, mech := range []sasl.Mechanism{
		scram.Auth{User: "alice", Pass: "wrong-pw-1"}.AsSha512Mechanism(),
		scram.Auth{User: "nobody", Pass: "wrong-pw-2"}.AsSha512Mechanism(),
		plain.Auth{User: "alice", Pass: "wrong-pw-3"}.AsMechanism(),
		plain.Auth{User: "nobody", Pass: "wrong-pw-4"}.AsMechanism(),
	} {
		s := a.NewSession("10.0.0.7:5000")
		r := login(t, s, mech, time.Now())
		if r.Code != kerr.SaslAuthenticationFailed.Code || !strings.Contains(r.Message, "invalid credentials") {
			t.Fatalf("%s: %+v", mech.Name(), r)
		}
		if err := s.Gate(int16(kmsg.ApiVersions), time.Now()); !errors.Is(err, auth.ErrAuthFailed) {
			t.Fatalf("after a failure: %v", err)
		}
	}
	if len(m.failed) != 4 || m.failed[0] != "10.0.0.7 SCRAM-SHA-512" || m.failed[3] != "10.0.0.7 PLAIN" {
		t.Fatalf("failures counted: %v", m.failed)
	}
	if strings.Contains(logs.String(), "wrong-pw") || strings.Count(logs.String(), "authentication failed") != 4 {
		t.Fatalf("logs:\n%s", logs.String())
	}
	s := a.NewSession("10.0.0.7:5001")
	if code, offered := s.Handshake("GSSAPI"); code != kerr.UnsupportedSaslMechanism.Code || len(offered) != 3 {
		t.Fatalf("GSSAPI: %d %v", code, offered)
	}
	s = a.NewSession("10.0.0.7:5002")
	if err := s.Gate(int16(kmsg.SASLAuthenticate), time.Now()); !errors.Is(err, auth.ErrIllegalState) {
		t.Fatalf("SaslAuthenticate before SaslHandshake: %v", err)
	}
}

// An unknown user gets a salt that does not change between attempts and
// the iteration count of a real one, so the server-first message does not
// tell users apart.
func TestScramUnknownUserLooksReal(t *testing.T) {
	a := newAuth(t, 0, nil, nil)
	first := func(user string) string {
		s := a.NewSession("127.0.0.1:1")
		s.Handshake(auth.ScramSHA512)
		r := s.Authenticate(context.Background(), []byte("n,,n="+user+",r=abcdefgh"), time.Now())
		if r.Code != 0 {
			t.Fatalf("%s: %+v", user, r)
		}
		parts := strings.Split(string(r.Token), ",")
		return parts[1] + "," + parts[2] // s=salt,i=iterations
	}
	if a1, a2 := first("mallory"), first("mallory"); a1 != a2 || !strings.HasSuffix(a1, ",i=4096") {
		t.Fatalf("unknown user: %q then %q", a1, a2)
	}
}

// KIP-368: the lifetime is reported and enforced; a re-authentication
// extends it and may not change the principal.
func TestSessionLifetime(t *testing.T) {
	a := newAuth(t, time.Minute, nil, nil)
	t0 := time.Unix(1_700_000_000, 0)
	s := a.NewSession("127.0.0.1:1")
	if r := login(t, s, plain.Auth{User: "alice", Pass: "alice-pw"}.AsMechanism(), t0); r.LifetimeMillis != 60_000 {
		t.Fatalf("lifetime %d", r.LifetimeMillis)
	}
	meta := int16(kmsg.Metadata)
	if err := s.Gate(meta, t0.Add(59*time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := s.Gate(meta, t0.Add(61*time.Second)); !errors.Is(err, auth.ErrSessionExpired) {
		t.Fatalf("past the lifetime: %v", err)
	}
	// Re-authenticate at 50s: good until 110s.
	if r := login(t, s, plain.Auth{User: "alice", Pass: "alice-pw"}.AsMechanism(), t0.Add(50*time.Second)); r.Code != 0 {
		t.Fatalf("re-auth: %+v", r)
	}
	if err := s.Gate(meta, t0.Add(100*time.Second)); err != nil {
		t.Fatalf("after re-auth: %v", err)
	}
	// Another user on the same connection: refused.
	r := login(t, s, plain.Auth{User: "bob", Pass: "bob-pw"}.AsMechanism(), t0.Add(60*time.Second))
	if r.Code != kerr.SaslAuthenticationFailed.Code || !strings.Contains(r.Message, "cannot change principals") {
		t.Fatalf("principal change: %+v", r)
	}
	// Another mechanism on re-auth: refused.
	s = a.NewSession("127.0.0.1:2")
	login(t, s, plain.Auth{User: "alice", Pass: "alice-pw"}.AsMechanism(), t0)
	if code, _ := s.Handshake(auth.ScramSHA512); code != kerr.IllegalSaslState.Code {
		t.Fatalf("mechanism change: %d", code)
	}
}

// IggyLogin asks the Iggy server itself, every time.
func TestIggyLogin(t *testing.T) {
	srv := embedtest.Start(t, "127.0.0.1:0", nil)
	cfg := iggy.DefaultConfig()
	cfg.Address = srv.Addr().String()
	l := auth.NewIggyLogin(cfg)
	ctx := context.Background()
	if err := l.CheckPlain(ctx, "iggy", "iggy"); err != nil {
		t.Fatalf("root login: %v", err)
	}
	if err := l.CheckPlain(ctx, "iggy", "wrong"); !errors.Is(err, auth.ErrBadCredentials) {
		t.Fatalf("wrong password: %v", err)
	}
	if err := l.CheckPlain(ctx, "nobody", "whatever"); !errors.Is(err, auth.ErrBadCredentials) {
		t.Fatalf("unknown user: %v", err)
	}
}

func TestScramFileRoundTrip(t *testing.T) {
	c, err := auth.NewScramCredential(auth.ScramSHA512, "pw", []byte("salt-salt-salt"), 8192)
	if err != nil {
		t.Fatal(err)
	}
	st, err := auth.ReadScram(strings.NewReader("# users\n\n" + c.Line("alice", auth.ScramSHA512) + "\n"))
	if err != nil || st.Len() != 1 {
		t.Fatalf("%v %v", st, err)
	}
	for _, bad := range []string{
		"alice SCRAM-SHA-1 salt=AA==,stored_key=AA==,server_key=AA==,iterations=4096",
		"alice SCRAM-SHA-512 salt=AA==,stored_key=AA==,server_key=AA==,iterations=4096",
		strings.Replace(c.Line("alice", auth.ScramSHA512), "iterations=8192", "iterations=100", 1),
	} {
		if _, err := auth.ReadScram(strings.NewReader(bad)); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}
