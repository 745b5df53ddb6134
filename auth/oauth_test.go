package auth_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"math/big"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/oauth"

	"github.com/kafka-iggy/kafka-iggy/auth"
)

// issuer signs test JWTs with an RSA and an EC key and publishes both in a
// JWKS.
type issuer struct {
	rsa *rsa.PrivateKey
	ec  *ecdsa.PrivateKey
}

func newIssuer(t *testing.T) *issuer {
	t.Helper()
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	ek, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return &issuer{rsa: rk, ec: ek}
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// JWKS returns the public key set.
func (i *issuer) JWKS() []byte {
	pad := func(n *big.Int) []byte { b := make([]byte, 32); return n.FillBytes(b) }
	set := map[string]any{"keys": []map[string]string{
		{"kty": "RSA", "kid": "r1", "use": "sig", "n": b64(i.rsa.N.Bytes()), "e": b64(big.NewInt(int64(i.rsa.E)).Bytes())},
		{"kty": "EC", "kid": "e1", "crv": "P-256", "x": b64(pad(i.ec.X)), "y": b64(pad(i.ec.Y))},
	}}
	b, _ := json.Marshal(set)
	return b
}

// Token signs claims with the key kid ("r1" RS256, "e1" ES256).
func (i *issuer) Token(t *testing.T, kid string, claims map[string]any) string {
	t.Helper()
	alg := "RS256"
	if kid == "e1" {
		alg = "ES256"
	}
	h, _ := json.Marshal(map[string]string{"alg": alg, "kid": kid, "typ": "JWT"})
	c, _ := json.Marshal(claims)
	signed := b64(h) + "." + b64(c)
	d := sha256.Sum256([]byte(signed))
	var sig []byte
	var err error
	if kid == "e1" {
		var r, s *big.Int
		r, s, err = ecdsa.Sign(rand.Reader, i.ec, d[:])
		sig = append(r.FillBytes(make([]byte, 32)), s.FillBytes(make([]byte, 32))...)
	} else {
		sig, err = rsa.SignPKCS1v15(rand.Reader, i.rsa, crypto.SHA256, d[:])
	}
	if err != nil {
		t.Fatal(err)
	}
	return signed + "." + b64(sig)
}

func TestOAuthBearer(t *testing.T) {
	iss := newIssuer(t)
	o, err := auth.NewOAuth(auth.OAuthConfig{JWKS: iss.JWKS(), Issuer: "https://idp", Audience: "kafka", ClockSkew: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	a, err := auth.New(auth.Config{Mechanisms: []string{auth.OAuthBearer}, SessionLifetime: time.Hour, OAuth: o}, zerolog.New(io.Discard))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0)
	good := func() map[string]any {
		return map[string]any{"iss": "https://idp", "aud": []string{"other", "kafka"}, "sub": "svc-orders", "exp": now.Add(10 * time.Minute).Unix()}
	}
	run := func(token string) (auth.Result, *auth.Session) {
		s := a.NewSession("127.0.0.1:1")
		if code, _ := s.Handshake(auth.OAuthBearer); code != 0 {
			t.Fatalf("handshake: %d", code)
		}
		_, first, err := oauth.Auth{Token: token}.AsMechanism().Authenticate(context.Background(), "")
		if err != nil {
			t.Fatal(err)
		}
		return finish(t, s, s.Authenticate(context.Background(), first, now), now), s
	}
	for _, kid := range []string{"r1", "e1"} {
		r, s := run(iss.Token(t, kid, good()))
		if r.Code != 0 || s.Principal() != "svc-orders" {
			t.Fatalf("%s: %+v principal %q", kid, r, s.Principal())
		}
		// The session ends with the token (10 minutes), before the
		// configured hour.
		if r.LifetimeMillis != 600_000 {
			t.Fatalf("%s: lifetime %d", kid, r.LifetimeMillis)
		}
		if err := s.Gate(int16(kmsg.Metadata), now.Add(11*time.Minute)); err == nil {
			t.Fatalf("%s: served past the token's expiry", kid)
		}
	}
	other := newIssuer(t)
	for name, tok := range map[string]string{
		"expired":        iss.Token(t, "r1", with(good(), "exp", now.Add(-time.Minute).Unix())),
		"wrong issuer":   iss.Token(t, "r1", with(good(), "iss", "https://evil")),
		"wrong audience": iss.Token(t, "r1", with(good(), "aud", "billing")),
		"no subject":     iss.Token(t, "r1", with(good(), "sub", nil)),
		"unknown signer": other.Token(t, "r1", good()),
		"alg none":       b64([]byte(`{"alg":"none","kid":"r1"}`)) + "." + b64([]byte(`{"sub":"x"}`)) + ".",
		"not a jwt":      "opaque-token",
	} {
		r, s := run(tok)
		if r.Code != kerr.SaslAuthenticationFailed.Code || r.Message != `{"status":"invalid_token"}` || s.Principal() != "" {
			t.Errorf("%s: %+v", name, r)
		}
	}
}

// finish answers a refused token's error challenge as franz-go and
// kafka-clients do (%x01, RFC 7628 3.2.3), as Kafka expects: the second
// answer is the failure.
func finish(t *testing.T, s *auth.Session, r auth.Result, now time.Time) auth.Result {
	t.Helper()
	if r.Code != 0 || len(r.Token) == 0 {
		return r
	}
	if string(r.Token) != `{"status":"invalid_token"}` || s.Principal() != "" {
		t.Fatalf("challenge %q, principal %q", r.Token, s.Principal())
	}
	if err := s.Gate(int16(kmsg.Metadata), now); err == nil {
		t.Fatal("a request served between the error challenge and the failure")
	}
	return s.Authenticate(context.Background(), []byte{1}, now)
}

func with(m map[string]any, k string, v any) map[string]any {
	if v == nil {
		delete(m, k)
	} else {
		m[k] = v
	}
	return m
}

// TestOAuthBearerUnsecured: sasl.oauthbearer.unsecured accepts unsigned
// (alg none) tokens as Kafka's default validator does, with sub the
// principal and exp checked; signed tokens without a key set, signatures on
// an alg none token, and missing claims are refused with invalid_token.
func TestOAuthBearerUnsecured(t *testing.T) {
	o, err := auth.NewOAuth(auth.OAuthConfig{Unsecured: true, ClockSkew: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	a, err := auth.New(auth.Config{Mechanisms: []string{auth.OAuthBearer}, OAuth: o}, zerolog.New(io.Discard))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0)
	unsigned := func(claims map[string]any) string {
		c, _ := json.Marshal(claims)
		return b64([]byte(`{"alg":"none"}`)) + "." + b64(c) + "."
	}
	run := func(token string) (auth.Result, *auth.Session) {
		s := a.NewSession("127.0.0.1:1")
		if code, _ := s.Handshake(auth.OAuthBearer); code != 0 {
			t.Fatalf("handshake: %d", code)
		}
		_, first, err := oauth.Auth{Token: token}.AsMechanism().Authenticate(context.Background(), "")
		if err != nil {
			t.Fatal(err)
		}
		return finish(t, s, s.Authenticate(context.Background(), first, now), now), s
	}
	r, s := run(unsigned(map[string]any{"sub": "admin", "exp": now.Add(time.Hour).Unix()}))
	if r.Code != 0 || s.Principal() != "admin" {
		t.Fatalf("unsigned token: %+v principal %q", r, s.Principal())
	}
	iss := newIssuer(t)
	for name, tok := range map[string]string{
		"expired":          unsigned(map[string]any{"sub": "admin", "exp": now.Add(-time.Minute).Unix()}),
		"no exp":           unsigned(map[string]any{"sub": "admin"}),
		"no subject":       unsigned(map[string]any{"exp": now.Add(time.Hour).Unix()}),
		"signed, no jwks":  iss.Token(t, "r1", map[string]any{"sub": "admin", "exp": now.Add(time.Hour).Unix()}),
		"alg none, signed": unsigned(map[string]any{"sub": "admin", "exp": now.Add(time.Hour).Unix()}) + "c2ln",
	} {
		r, s := run(tok)
		if r.Code != kerr.SaslAuthenticationFailed.Code || r.Message != `{"status":"invalid_token"}` || s.Principal() != "" {
			t.Errorf("%s: %+v", name, r)
		}
	}
}
