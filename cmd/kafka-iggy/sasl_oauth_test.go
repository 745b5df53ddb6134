package main

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sasl/oauth"
)

// testIssuer writes a JWKS file of a fresh RSA key and returns its path
// and a signer of tokens (RS256, audience kafka, subject orders, valid for
// an hour) from issuer iss.
func testIssuer(t *testing.T) (jwksPath string, token func(iss string) string) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	b64 := base64.RawURLEncoding.EncodeToString
	jwks, _ := json.Marshal(map[string]any{"keys": []map[string]string{
		{"kty": "RSA", "kid": "k1", "use": "sig", "n": b64(key.N.Bytes()), "e": b64(big.NewInt(int64(key.E)).Bytes())},
	}})
	jwksPath = filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(jwksPath, jwks, 0o600); err != nil {
		t.Fatal(err)
	}
	return jwksPath, func(iss string) string {
		h, _ := json.Marshal(map[string]string{"alg": "RS256", "kid": "k1"})
		c, _ := json.Marshal(map[string]any{"iss": iss, "aud": "kafka", "sub": "orders", "exp": time.Now().Add(time.Hour).Unix()})
		signed := b64(h) + "." + b64(c)
		d := sha256.Sum256([]byte(signed))
		sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, d[:])
		if err != nil {
			t.Fatal(err)
		}
		return signed + "." + b64(sig)
	}
}

// TestSASLOAuthBearer: franz-go's OAUTHBEARER with a JWT signed by a key of
// the JWKS file produces and consumes; a token of another issuer gets
// SASL_AUTHENTICATION_FAILED.
func TestSASLOAuthBearer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a sidecar process")
	}
	path, token := testIssuer(t)
	p := startServeProc(t, "KAFKA_IGGY_EMBEDDED__LISTEN=127.0.0.1:0", "KAFKA_IGGY_SASL__ENABLED=true",
		"KAFKA_IGGY_SASL__MECHANISMS=OAUTHBEARER", "KAFKA_IGGY_SASL__OAUTHBEARER__JWKS="+path,
		"KAFKA_IGGY_SASL__OAUTHBEARER__ISSUER=https://idp.test", "KAFKA_IGGY_SASL__OAUTHBEARER__AUDIENCE=kafka",
		"KAFKA_IGGY_SASL__IGGY_USERS_FILE="+writeFile(t, "iggy-users", "orders user iggy iggy\n"))
	if err := saslRoundTrip(t, p.kafka, "oauth-ok", oauth.Auth{Token: token("https://idp.test")}.AsMechanism()); err != nil {
		t.Fatalf("valid token: %v", err)
	}
	wantAuthFailed(t, saslMetadata(t, p.kafka, oauth.Auth{Token: token("https://other.test")}.AsMechanism()))
}
