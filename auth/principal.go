package auth

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
)

// Anonymous is the principal of a TLS connection without a client
// certificate, as Kafka names it.
const Anonymous = "ANONYMOUS"

// ErrNoMappingRule: no rule of ssl.principal.mapping.rules matched the
// certificate's distinguished name; Kafka fails the authentication.
var ErrNoMappingRule = errors.New("no principal mapping rule matches the certificate's distinguished name")

// mappingRule is one rule of Kafka's ssl.principal.mapping.rules.
type mappingRule struct {
	isDefault   bool
	pattern     *regexp.Regexp
	replacement string
	toLower     bool
	toUpper     bool
}

// PrincipalMapper maps a client certificate's subject to a principal by
// rules like Kafka's ssl.principal.mapping.rules: "DEFAULT" (the whole
// distinguished name) or "RULE:pattern/replacement/" with an optional L
// or U suffix (lower or upper case); the first rule whose pattern matches
// the whole RFC 2253 name wins; none matching refuses the client.
type PrincipalMapper struct {
	rules []mappingRule
}

// ruleSplit finds the rules in Kafka's syntax: DEFAULT, or
// RULE:pattern/replacement/[LU], separated by commas ("\/" escapes a slash).
var ruleSplit = regexp.MustCompile(`^\s*(?:(DEFAULT)|RULE:((?:\\.|[^\\/])*)/((?:\\.|[^\\/])*)/([LU]?))\s*(?:,|$)`)

// javaGroup turns Java's "$1" group references into Go's "${1}".
var javaGroup = regexp.MustCompile(`\$(\d+)`)

// ParseMappingRules parses comma-separated rules; empty means DEFAULT.
func ParseMappingRules(rules string) (*PrincipalMapper, error) {
	m := &PrincipalMapper{}
	{
		rest := strings.TrimSpace(rules)
		for rest != "" {
			g := ruleSplit.FindStringSubmatch(rest)
			if g == nil {
				return nil, fmt.Errorf("invalid rule at %q: want DEFAULT or RULE:pattern/replacement/[LU]", rest)
			}
			rest = strings.TrimSpace(rest[len(g[0]):])
			if g[1] != "" {
				m.rules = append(m.rules, mappingRule{isDefault: true})
				continue
			}
			re, err := regexp.Compile(`^(?:` + g[2] + `)$`)
			if err != nil {
				return nil, fmt.Errorf("rule pattern %q: %w", g[2], err)
			}
			m.rules = append(m.rules, mappingRule{pattern: re, replacement: javaGroup.ReplaceAllString(g[3], `$${$1}`),
				toLower: g[4] == "L", toUpper: g[4] == "U"})
		}
	}
	if len(m.rules) == 0 {
		m.rules = []mappingRule{{isDefault: true}}
	}
	return m, nil
}

// Map returns the principal of distinguished name dn.
func (m *PrincipalMapper) Map(dn string) (string, error) {
	for _, r := range m.rules {
		if r.isDefault {
			return dn, nil
		}
		if !r.pattern.MatchString(dn) {
			continue
		}
		out := r.pattern.ReplaceAllString(dn, r.replacement)
		switch {
		case r.toLower:
			out = strings.ToLower(out)
		case r.toUpper:
			out = strings.ToUpper(out)
		}
		return out, nil
	}
	return "", fmt.Errorf("%w: %q", ErrNoMappingRule, dn)
}

// MapCertificate returns the principal of a verified client certificate
// chain (leaf first), Anonymous without one.
func (m *PrincipalMapper) MapCertificate(chain []*x509.Certificate) (string, error) {
	if len(chain) == 0 {
		return Anonymous, nil
	}
	return m.Map(chain[0].Subject.String())
}

type tlsKey struct{}

// tlsPrincipal is what a TLS connection without SASL carries in its
// context: its principal and, when certificate principals are bound to
// Iggy users (CertUsers), the principal's Iggy credential.
type tlsPrincipal struct {
	name  string
	bound bool             // requests run as cred (CertUsers)
	cred  *iggy.Credential // nil when bound: no Iggy user, refused
}

// WithTLSPrincipal returns ctx carrying the principal of a TLS connection
// that does not authenticate with SASL (the SSL security protocol); its
// requests run as the sidecar's Iggy user (see CertUsers for the
// principal's own).
func WithTLSPrincipal(ctx context.Context, principal string) context.Context {
	return context.WithValue(ctx, tlsKey{}, tlsPrincipal{name: principal})
}

// CertUsers maps the principals of TLS client certificates (the SSL
// security protocol, no SASL) to the Iggy users their requests run as,
// as Config.IggyUsers does for SASL principals.
type CertUsers struct {
	users map[string]iggy.Credential
}

// NewCertUsers returns the mapping of users (principal to Iggy
// credential); a principal not in it has no Iggy user.
func NewCertUsers(users map[string]iggy.Credential) *CertUsers {
	return &CertUsers{users: users}
}

// WithPrincipal returns ctx carrying the principal of a TLS connection
// without SASL, bound to its Iggy user (see Bind): a principal without one
// (ANONYMOUS included, unless mapped) is refused everything. A nil c is
// WithTLSPrincipal.
func (c *CertUsers) WithPrincipal(ctx context.Context, principal string) context.Context {
	if c == nil {
		return WithTLSPrincipal(ctx, principal)
	}
	tp := tlsPrincipal{name: principal, bound: true}
	if cred, ok := c.users[principal]; ok {
		tp.cred = &cred
	}
	return context.WithValue(ctx, tlsKey{}, tp)
}

// PrincipalFrom returns the principal of the connection ctx belongs to:
// the SASL one when the listener authenticates with SASL ("" before
// authentication), else the TLS client certificate's mapped name
// (Anonymous without a certificate), else "" (a PLAINTEXT listener; Kafka
// calls that principal ANONYMOUS too).
func PrincipalFrom(ctx context.Context) string {
	if s := FromContext(ctx); s != nil {
		return s.Principal()
	}
	tp, _ := ctx.Value(tlsKey{}).(tlsPrincipal)
	return tp.name
}
