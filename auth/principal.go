package auth

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"regexp"
	"strings"
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

// WithTLSPrincipal returns ctx carrying the principal of a TLS connection
// that does not authenticate with SASL (the SSL security protocol).
func WithTLSPrincipal(ctx context.Context, principal string) context.Context {
	return context.WithValue(ctx, tlsKey{}, principal)
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
	p, _ := ctx.Value(tlsKey{}).(string)
	return p
}
