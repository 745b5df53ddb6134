package auth

import (
	"bufio"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
)

// MinIterations is the lowest SCRAM iteration count accepted (Kafka's).
const MinIterations = 4096

// errScramProof: the client proof did not match (wrong password, or an
// unknown user, which is not told apart).
var errScramProof = errors.New("SCRAM proof does not match")

// ScramCredential is one user's SCRAM secret as Kafka stores it (RFC 5802
// section 3): the salt, the iteration count, StoredKey = H(ClientKey) and
// ServerKey. The password cannot be recovered from it.
type ScramCredential struct {
	Salt       []byte
	Iterations int
	StoredKey  []byte
	ServerKey  []byte
}

func newHash(mech string) func() hash.Hash {
	if mech == ScramSHA512 {
		return sha512.New
	}
	return sha256.New
}

func hmacOf(h func() hash.Hash, key []byte, msg string) []byte {
	m := hmac.New(h, key)
	m.Write([]byte(msg))
	return m.Sum(nil)
}

// NewScramCredential salts and hashes password for mech (SCRAM-SHA-256 or
// SCRAM-SHA-512) with salt and iterations.
func NewScramCredential(mech, password string, salt []byte, iterations int) (ScramCredential, error) {
	if mech != ScramSHA256 && mech != ScramSHA512 {
		return ScramCredential{}, fmt.Errorf("%q is not SCRAM-SHA-256 or SCRAM-SHA-512", mech)
	}
	if iterations < MinIterations {
		return ScramCredential{}, fmt.Errorf("iterations %d below %d", iterations, MinIterations)
	}
	h := newHash(mech)
	salted, err := pbkdf2.Key(h, password, salt, iterations, h().Size())
	if err != nil {
		return ScramCredential{}, err
	}
	clientKey := hmacOf(h, salted, "Client Key")
	sk := h()
	sk.Write(clientKey)
	return ScramCredential{
		Salt:       salt,
		Iterations: iterations,
		StoredKey:  sk.Sum(nil),
		ServerKey:  hmacOf(h, salted, "Server Key"),
	}, nil
}

// Line is the credential file line of user for mech:
//
//	user SCRAM-SHA-512 salt=<b64>,stored_key=<b64>,server_key=<b64>,iterations=4096
func (c ScramCredential) Line(user, mech string) string {
	b := base64.StdEncoding.EncodeToString
	return fmt.Sprintf("%s %s salt=%s,stored_key=%s,server_key=%s,iterations=%d",
		user, mech, b(c.Salt), b(c.StoredKey), b(c.ServerKey), c.Iterations)
}

// ScramStore holds the SCRAM credentials of every user and mechanism.
type ScramStore struct {
	mu      sync.RWMutex
	creds   map[string]ScramCredential // mechanism + " " + user
	fakeKey []byte                     // derives the fake salt of unknown users
	// refresh, when set (ScramLog), brings the store up to date with the
	// alterations kept in Iggy before a lookup.
	refresh func()
}

// NewScramStore returns an empty store.
func NewScramStore() *ScramStore {
	k := make([]byte, 32)
	_, _ = rand.Read(k)
	return &ScramStore{creds: map[string]ScramCredential{}, fakeKey: k}
}

// Add stores user's credential for mech.
func (st *ScramStore) Add(user, mech string, c ScramCredential) {
	st.mu.Lock()
	st.creds[mech+" "+user] = c
	st.mu.Unlock()
}

// Len returns the number of credentials stored.
func (st *ScramStore) Len() int {
	st.mu.RLock()
	defer st.mu.RUnlock()
	return len(st.creds)
}

// LoadScramFile reads a credential file: one Line per user and mechanism;
// blank lines and lines starting with # are skipped.
func LoadScramFile(path string) (*ScramStore, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	st, err := ReadScram(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return st, nil
}

// ReadScram parses credential lines from r.
func ReadScram(r io.Reader) (*ScramStore, error) {
	st := NewScramStore()
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		user, mech, c, err := parseLine(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		st.Add(user, mech, c)
	}
	return st, sc.Err()
}

func parseLine(line string) (user, mech string, c ScramCredential, err error) {
	f := strings.Fields(line)
	if len(f) != 3 {
		return "", "", c, errors.New("want three fields: user, mechanism, salt=<b64>,stored_key=<b64>,server_key=<b64>,iterations=<n>")
	}
	user, mech = f[0], f[1]
	if mech != ScramSHA256 && mech != ScramSHA512 {
		return "", "", c, fmt.Errorf("mechanism %q is not SCRAM-SHA-256 or SCRAM-SHA-512", mech)
	}
	size := newHash(mech)().Size()
	for _, kv := range strings.Split(f[2], ",") {
		k, v, _ := strings.Cut(kv, "=")
		var b []byte
		if k != "iterations" {
			if b, err = base64.StdEncoding.DecodeString(v); err != nil {
				return "", "", c, fmt.Errorf("%s: %w", k, err)
			}
		}
		switch k {
		case "salt":
			c.Salt = b
		case "stored_key":
			c.StoredKey = b
		case "server_key":
			c.ServerKey = b
		case "iterations":
			if c.Iterations, err = strconv.Atoi(v); err != nil {
				return "", "", c, fmt.Errorf("iterations: %w", err)
			}
		default:
			return "", "", c, fmt.Errorf("unknown field %q", k)
		}
	}
	switch {
	case len(c.Salt) == 0:
		return "", "", c, errors.New("salt missing")
	case len(c.StoredKey) != size || len(c.ServerKey) != size:
		return "", "", c, fmt.Errorf("stored_key and server_key must be %d bytes for %s", size, mech)
	case c.Iterations < MinIterations:
		return "", "", c, fmt.Errorf("iterations %d below %d", c.Iterations, MinIterations)
	}
	return user, mech, c, nil
}

// lookup returns user's credential for mech, or for an unknown user a fake
// one (a salt derived from the user name, so it is stable across attempts,
// and random keys) that goes through the same computation and fails.
func (st *ScramStore) lookup(mech, user string) ScramCredential {
	if st.refresh != nil {
		st.refresh()
	}
	st.mu.RLock()
	c, ok := st.creds[mech+" "+user]
	st.mu.RUnlock()
	if ok {
		return c
	}
	h := newHash(mech)
	salt := hmacOf(sha256.New, st.fakeKey, mech+" "+user)[:16]
	keys := make([]byte, 2*h().Size())
	_, _ = rand.Read(keys)
	return ScramCredential{Salt: salt, Iterations: MinIterations, StoredKey: keys[:h().Size()], ServerKey: keys[h().Size():]}
}

// scramExchange is a SCRAM exchange between the server-first and the
// client-final message.
type scramExchange struct {
	mech, user  string
	cred        ScramCredential
	gs2         string // GS2 header the client sent
	nonce       string // client nonce + server nonce
	clientFirst string // client-first-message-bare
	serverFirst string
}

// first parses the client-first message and returns the server-first one.
func (st *ScramStore) first(mech string, msg []byte) (*scramExchange, []byte, error) {
	m := string(msg)
	// gs2-header: "n,," or "y,," with an optional "a=authzid".
	cb, rest, ok := strings.Cut(m, ",")
	if !ok || (cb != "n" && cb != "y") {
		return nil, nil, errors.New("SCRAM: channel binding is not supported")
	}
	authz, bare, ok := strings.Cut(rest, ",")
	if !ok || (authz != "" && !strings.HasPrefix(authz, "a=")) {
		return nil, nil, errors.New("SCRAM: malformed client-first message")
	}
	ex := &scramExchange{mech: mech, gs2: cb + "," + authz + ",", clientFirst: bare}
	var cnonce string
	for i, attr := range strings.Split(bare, ",") {
		k, v, _ := strings.Cut(attr, "=")
		switch {
		case i == 0 && k == "n":
			ex.user = unescapeSaslName(v)
		case i == 1 && k == "r":
			cnonce = v
		case i >= 2 && k == "tokenauth" && v == "true":
			return nil, nil, errors.New("SCRAM: delegation tokens are not supported")
		case i >= 2: // other extensions are ignored
		default:
			return nil, nil, errors.New("SCRAM: malformed client-first message")
		}
	}
	if ex.user == "" || cnonce == "" {
		return nil, nil, errors.New("SCRAM: user name or nonce missing")
	}
	if authz != "" && unescapeSaslName(authz[2:]) != ex.user {
		return nil, nil, errors.New("SCRAM: authorization id differs from the user name")
	}
	var sn [24]byte
	_, _ = rand.Read(sn[:])
	ex.nonce = cnonce + base64.RawURLEncoding.EncodeToString(sn[:])
	ex.cred = st.lookup(mech, ex.user)
	ex.serverFirst = "r=" + ex.nonce + ",s=" + base64.StdEncoding.EncodeToString(ex.cred.Salt) + ",i=" + strconv.Itoa(ex.cred.Iterations)
	return ex, []byte(ex.serverFirst), nil
}

// final checks the client-final message and returns the server-final one.
func (ex *scramExchange) final(msg []byte) ([]byte, error) {
	m := string(msg)
	i := strings.LastIndex(m, ",p=")
	if i < 0 {
		return nil, errors.New("SCRAM: client proof missing")
	}
	without, proofB64 := m[:i], m[i+3:]
	var cbind, nonce string
	for _, attr := range strings.Split(without, ",") {
		k, v, _ := strings.Cut(attr, "=")
		switch k {
		case "c":
			cbind = v
		case "r":
			nonce = v
		}
	}
	if cbind != base64.StdEncoding.EncodeToString([]byte(ex.gs2)) {
		return nil, errors.New("SCRAM: channel binding does not match the GS2 header")
	}
	if nonce != ex.nonce {
		return nil, errors.New("SCRAM: nonce does not match")
	}
	proof, err := base64.StdEncoding.DecodeString(proofB64)
	if err != nil {
		return nil, errors.New("SCRAM: client proof is not base64")
	}
	h := newHash(ex.mech)
	authMsg := ex.clientFirst + "," + ex.serverFirst + "," + without
	sig := hmacOf(h, ex.cred.StoredKey, authMsg)
	if len(proof) != len(sig) {
		return nil, errScramProof
	}
	clientKey := make([]byte, len(sig))
	for i := range sig {
		clientKey[i] = proof[i] ^ sig[i]
	}
	sk := h()
	sk.Write(clientKey)
	if subtle.ConstantTimeCompare(sk.Sum(nil), ex.cred.StoredKey) != 1 {
		return nil, errScramProof
	}
	return []byte("v=" + base64.StdEncoding.EncodeToString(hmacOf(h, ex.cred.ServerKey, authMsg))), nil
}

// unescapeSaslName undoes RFC 5802's saslname escaping (=2C, =3D).
func unescapeSaslName(s string) string {
	if !strings.Contains(s, "=") {
		return s
	}
	return strings.NewReplacer("=2C", ",", "=3D", "=").Replace(s)
}
