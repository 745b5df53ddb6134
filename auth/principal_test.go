package auth

import (
	"context"
	"errors"
	"testing"
)

// TestPrincipalMappingRules: Kafka's ssl.principal.mapping.rules syntax
// and semantics (SslPrincipalMapper's documented examples): the first rule
// matching the whole name wins, $n groups, L/U case, DEFAULT, no match
// refused.
func TestPrincipalMappingRules(t *testing.T) {
	m, err := ParseMappingRules(`RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/, RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L,
		RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U`)
	if err != nil {
		t.Fatal(err)
	}
	for dn, want := range map[string]string{
		"CN=kafka-app,OU=ServiceUsers,O=Unknown,L=Unknown,ST=Unknown,C=Unknown": "kafka-app",
		"CN=Duke,OU=JavaSoft,O=Sun Microsystems,L=Santa,ST=CA,C=US":             "duke@javasoft",
		"O=x,CN=abc.def": "ABC.DEF",
	} {
		if got, err := m.Map(dn); err != nil || got != want {
			t.Errorf("Map(%q) = %q, %v; want %q", dn, got, err, want)
		}
	}
	if _, err := m.Map("O=nobody"); !errors.Is(err, ErrNoMappingRule) {
		t.Errorf("unmatched name: err = %v, want ErrNoMappingRule", err)
	}
	d, _ := ParseMappingRules("RULE:^CN=admin,.*$/root/,DEFAULT")
	if got, _ := d.Map("CN=bob,O=acme"); got != "CN=bob,O=acme" {
		t.Errorf("DEFAULT: %q", got)
	}
	if got, _ := d.Map("CN=admin,O=acme"); got != "root" {
		t.Errorf("first rule: %q", got)
	}
	for _, bad := range []string{"RULE:^CN=(.*$/x/", "NOPE", "RULE:a/b/X"} {
		if _, err := ParseMappingRules(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	ctx := WithTLSPrincipal(context.Background(), "alice")
	if PrincipalFrom(ctx) != "alice" || PrincipalFrom(context.Background()) != "" {
		t.Error("PrincipalFrom does not read the TLS principal")
	}
}
