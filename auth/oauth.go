package auth

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"os"
	"strings"
	"time"
)

// OAuthBearer is the OAUTHBEARER mechanism name (RFC 7628, KIP-255).
const OAuthBearer = "OAUTHBEARER"

// oauthInvalidToken is the RFC 7628 error status of a refused token: the
// server challenge that answers it and the failure's message, as Kafka's.
const oauthInvalidToken = `{"status":"invalid_token"}`

// errBadToken: the bearer token did not validate.
var errBadToken = errors.New("invalid token")

// OAuth validates OAUTHBEARER tokens: JWTs signed with a key of a JWKS
// (RS256/384/512, ES256/384/512), with the issuer, the audience and the
// expiry checked, and the principal taken from one claim.
type OAuth struct {
	keys           map[string]crypto.PublicKey // by kid
	issuer         string
	audience       string
	principalClaim string
	skew           time.Duration
	unsecured      bool
}

// OAuthConfig configures an OAuth validator.
type OAuthConfig struct {
	// JWKS is the key set (RFC 7517 JSON) the tokens are signed with.
	JWKS []byte
	// Issuer is the required "iss" claim ("" = not checked).
	Issuer string
	// Audience must be one of the "aud" claim's values ("" = not checked).
	Audience string
	// PrincipalClaim names the claim that is the principal ("sub").
	PrincipalClaim string
	// ClockSkew is allowed on exp and nbf.
	ClockSkew time.Duration
	// Unsecured accepts unsigned tokens (an {"alg":"none"} header and an
	// empty signature), as Kafka's default
	// OAuthBearerUnsecuredValidatorCallbackHandler does: the principal
	// claim and exp are still required and exp is checked; issuer and
	// audience are checked when configured. JWKS may then be empty (signed
	// tokens are refused without one). For tests on loopback only.
	Unsecured bool
}

// NewOAuth parses the key set and returns the validator.
func NewOAuth(c OAuthConfig) (*OAuth, error) {
	var keys map[string]crypto.PublicKey
	if !c.Unsecured || len(c.JWKS) > 0 {
		var err error
		if keys, err = parseJWKS(c.JWKS); err != nil {
			return nil, err
		}
	}
	if c.PrincipalClaim == "" {
		c.PrincipalClaim = "sub"
	}
	return &OAuth{keys: keys, issuer: c.Issuer, audience: c.Audience, principalClaim: c.PrincipalClaim, skew: c.ClockSkew, unsecured: c.Unsecured}, nil
}

// ReadJWKS reads a key set from a file or, for an http(s) URL, fetches it.
func ReadJWKS(ctx context.Context, src string) ([]byte, error) {
	if !strings.HasPrefix(src, "https://") && !strings.HasPrefix(src, "http://") {
		return os.ReadFile(src)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, src, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", src, resp.Status)
	}
	return io.ReadAll(io.LimitReader(resp.Body, 1<<20))
}

type jwk struct {
	Kty string `json:"kty"`
	Kid string `json:"kid"`
	Use string `json:"use"`
	N   string `json:"n"`
	E   string `json:"e"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Y   string `json:"y"`
}

func b64int(s string) (*big.Int, error) {
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
	if err != nil || len(b) == 0 {
		return nil, errors.New("bad base64url integer")
	}
	return new(big.Int).SetBytes(b), nil
}

func parseJWKS(raw []byte) (map[string]crypto.PublicKey, error) {
	var set struct {
		Keys []jwk `json:"keys"`
	}
	if err := json.Unmarshal(raw, &set); err != nil {
		return nil, fmt.Errorf("JWKS: %w", err)
	}
	keys := map[string]crypto.PublicKey{}
	for i, k := range set.Keys {
		if k.Use != "" && k.Use != "sig" {
			continue
		}
		switch k.Kty {
		case "RSA":
			n, err1 := b64int(k.N)
			e, err2 := b64int(k.E)
			if err1 != nil || err2 != nil || !e.IsInt64() {
				return nil, fmt.Errorf("JWKS key %d (%q): bad RSA n or e", i, k.Kid)
			}
			keys[k.Kid] = &rsa.PublicKey{N: n, E: int(e.Int64())}
		case "EC":
			var curve elliptic.Curve
			switch k.Crv {
			case "P-256":
				curve = elliptic.P256()
			case "P-384":
				curve = elliptic.P384()
			case "P-521":
				curve = elliptic.P521()
			default:
				return nil, fmt.Errorf("JWKS key %d (%q): curve %q", i, k.Kid, k.Crv)
			}
			// x and y are the full-size coordinates (RFC 7518 6.2.1.2);
			// the key is parsed from its uncompressed point.
			size := (curve.Params().BitSize + 7) / 8
			x, err1 := base64.RawURLEncoding.DecodeString(strings.TrimRight(k.X, "="))
			y, err2 := base64.RawURLEncoding.DecodeString(strings.TrimRight(k.Y, "="))
			if err1 != nil || err2 != nil || len(x) != size || len(y) != size {
				return nil, fmt.Errorf("JWKS key %d (%q): bad EC x or y", i, k.Kid)
			}
			pub, err := ecdsa.ParseUncompressedPublicKey(curve, append(append([]byte{4}, x...), y...))
			if err != nil {
				return nil, fmt.Errorf("JWKS key %d (%q): %v", i, k.Kid, err)
			}
			keys[k.Kid] = pub
		}
	}
	if len(keys) == 0 {
		return nil, errors.New("JWKS: no RSA or EC signing key")
	}
	return keys, nil
}

// parseOAuthMessage extracts the bearer token of a client's initial
// response: gs2-header, then kvsep-separated pairs (auth=Bearer <token>
// and extensions), ended by two kvseps.
func parseOAuthMessage(msg []byte) (string, error) {
	gs2, rest, ok := bytes.Cut(msg, []byte{1})
	if !ok || !bytes.HasPrefix(gs2, []byte("n,")) && !bytes.HasPrefix(gs2, []byte("y,")) {
		return "", errors.New("OAUTHBEARER: malformed client message")
	}
	for _, kv := range bytes.Split(rest, []byte{1}) {
		if v, ok := bytes.CutPrefix(kv, []byte("auth=")); ok {
			scheme, tok, ok := strings.Cut(string(v), " ")
			if !ok || !strings.EqualFold(scheme, "Bearer") || tok == "" {
				return "", errors.New("OAUTHBEARER: auth is not a Bearer token")
			}
			return tok, nil
		}
	}
	return "", errors.New("OAUTHBEARER: no auth in the client message")
}

// validate checks a JWT and returns its principal and expiry.
func (o *OAuth) validate(token string, now time.Time) (string, time.Time, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return "", time.Time{}, fmt.Errorf("%w: not a signed JWT", errBadToken)
	}
	var hdr struct {
		Alg string `json:"alg"`
		Kid string `json:"kid"`
	}
	hb, err1 := base64.RawURLEncoding.DecodeString(parts[0])
	pb, err2 := base64.RawURLEncoding.DecodeString(parts[1])
	sig, err3 := base64.RawURLEncoding.DecodeString(parts[2])
	if err1 != nil || err2 != nil || err3 != nil || json.Unmarshal(hb, &hdr) != nil {
		return "", time.Time{}, fmt.Errorf("%w: malformed JWT", errBadToken)
	}
	if o.unsecured && hdr.Alg == "none" {
		// An unsecured JWS (RFC 7515 appendix A.5) carries no signature.
		if len(sig) != 0 {
			return "", time.Time{}, fmt.Errorf("%w: an unsecured (alg none) token with a signature", errBadToken)
		}
	} else {
		key, ok := o.keys[hdr.Kid]
		if !ok {
			return "", time.Time{}, fmt.Errorf("%w: unknown key id %q", errBadToken, hdr.Kid)
		}
		if err := verifyJWS(hdr.Alg, key, parts[0]+"."+parts[1], sig); err != nil {
			return "", time.Time{}, fmt.Errorf("%w: %v", errBadToken, err)
		}
	}
	var claims map[string]any
	if err := json.Unmarshal(pb, &claims); err != nil {
		return "", time.Time{}, fmt.Errorf("%w: claims are not a JSON object", errBadToken)
	}
	exp, ok := claims["exp"].(float64)
	if !ok {
		return "", time.Time{}, fmt.Errorf("%w: no exp claim", errBadToken)
	}
	expires := time.Unix(int64(exp), 0)
	if now.After(expires.Add(o.skew)) {
		return "", time.Time{}, fmt.Errorf("%w: expired at %s", errBadToken, expires.UTC().Format(time.RFC3339))
	}
	if nbf, ok := claims["nbf"].(float64); ok && now.Add(o.skew).Before(time.Unix(int64(nbf), 0)) {
		return "", time.Time{}, fmt.Errorf("%w: not valid yet", errBadToken)
	}
	if o.issuer != "" && claims["iss"] != o.issuer {
		return "", time.Time{}, fmt.Errorf("%w: issuer %v", errBadToken, claims["iss"])
	}
	if o.audience != "" && !hasAudience(claims["aud"], o.audience) {
		return "", time.Time{}, fmt.Errorf("%w: audience %v", errBadToken, claims["aud"])
	}
	principal, _ := claims[o.principalClaim].(string)
	if principal == "" {
		return "", time.Time{}, fmt.Errorf("%w: no %q claim", errBadToken, o.principalClaim)
	}
	return principal, expires, nil
}

func hasAudience(aud any, want string) bool {
	switch a := aud.(type) {
	case string:
		return a == want
	case []any:
		for _, v := range a {
			if v == want {
				return true
			}
		}
	}
	return false
}

// verifyJWS checks sig over signed with key for alg.
func verifyJWS(alg string, key crypto.PublicKey, signed string, sig []byte) error {
	var h crypto.Hash
	switch alg[min(2, len(alg)):] {
	case "256":
		h = crypto.SHA256
	case "384":
		h = crypto.SHA384
	case "512":
		h = crypto.SHA512
	default:
		return fmt.Errorf("algorithm %q not accepted", alg)
	}
	var digest []byte
	switch h {
	case crypto.SHA256:
		d := sha256.Sum256([]byte(signed))
		digest = d[:]
	case crypto.SHA384:
		d := sha512.Sum384([]byte(signed))
		digest = d[:]
	default:
		d := sha512.Sum512([]byte(signed))
		digest = d[:]
	}
	switch k := key.(type) {
	case *rsa.PublicKey:
		if !strings.HasPrefix(alg, "RS") {
			return fmt.Errorf("algorithm %q with an RSA key", alg)
		}
		return rsa.VerifyPKCS1v15(k, h, digest, sig)
	case *ecdsa.PublicKey:
		if !strings.HasPrefix(alg, "ES") {
			return fmt.Errorf("algorithm %q with an EC key", alg)
		}
		size := (k.Curve.Params().BitSize + 7) / 8
		if len(sig) != 2*size {
			return errors.New("bad ECDSA signature length")
		}
		r, s := new(big.Int).SetBytes(sig[:size]), new(big.Int).SetBytes(sig[size:])
		if !ecdsa.Verify(k, digest, r, s) {
			return errors.New("ECDSA signature does not verify")
		}
		return nil
	}
	return errors.New("unsupported key type")
}
