package embedded

// Catalog coverage: every command of the generated catalog (iggy.Commands)
// is, in each protocol generation, either served by the embedded server or
// refused the way the real server refuses it.

import (
	"testing"

	"github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

// servedBeforeTable are the commands serve answers on its own paths, before
// the handler table: how, and the check that it does.
var servedBeforeTable = map[uint32]struct {
	how   string
	check func(t *testing.T, s *Server, m *iggy.CommandMeta)
}{
	iggy.CodePing: {"serveNonReplicated answers PING, also unbound", func(t *testing.T, s *Server, m *iggy.CommandMeta) {
		c := dial(t, s)
		sendCode(c, m.Code, nil)
		expect{ch: chEmpty}.check(t, c)
	}},
	// The legacy login codes 38 and 44: the real server evicts them as a
	// malformed login (../shared/iggy-protocol.md §1.7, docs/iggy-protocol-0.12.md
	// §2; "legacy token login" in refusals_test.go).
	iggy.CodeLoginUser:                    {"evicted as a malformed login (a legacy login code)", checkLegacyLogin},
	iggy.CodeLoginWithPersonalAccessToken: {"evicted as a malformed login (a legacy login code)", checkLegacyLogin},
	iggy.CodeLoginRegister:                {"operation Register goes to Server.login", checkRegister},
	iggy.CodeLoginRegisterWithPAT:         {"operation Register goes to Server.login", checkRegister},
}

func checkLegacyLogin(t *testing.T, s *Server, m *iggy.CommandMeta) {
	c := dial(t, s)
	sendCode(c, m.Code, loginBody("iggy", "iggy"))
	expect{ch: chEviction, reason: iggy.EvictionReasonMalformedLogin}.check(t, c)
}

func checkRegister(t *testing.T, _ *Server, m *iggy.CommandMeta) {
	if m.Operation != iggy.OperationRegister {
		t.Errorf("%s travels with operation %v, which serve does not send to Server.login", m.Name, m.Operation)
	}
}

// sendCode writes an operation-2 request of code without reading a reply.
func sendCode(c *tclient, code uint32, body []byte) {
	h := c.header(iggy.OperationNonReplicated, c.next)
	h.Code = code
	c.writeRaw(frame(&h, body))
}

// bound logs a client in with the login of protocol p.
func bound(t *testing.T, s *Server, p iggy.ProtocolVersion) *tclient {
	if p >= iggy.Protocol012 {
		return root012(t, s)
	}
	return root(t, s)
}

// TestCatalogCoverage: for protocols 0.11 and 0.12, a command of the
// catalog in that protocol has a handler (reachable through its operation
// when it has one of its own) or is one of servedBeforeTable; a command
// outside that protocol has none and is refused as the real server refuses
// a command it does not know: an operation the protocol does not define is
// dropped without a reply, an unknown code under operation 2 is status 3
// InvalidCommand (docs/iggy-protocol-0.12.md §6). A command added to the
// schema without a handler fails here.
func TestCatalogCoverage(t *testing.T) {
	for _, gen := range []struct {
		name  string
		proto iggy.ProtocolVersion
		cfg   func(*Config)
	}{
		{"0.11", iggy.Protocol011, nil},
		{"0.12", iggy.Protocol012, func(c *Config) { c.Protocol, c.ServerVersion = "0.12", DefaultServerVersion }},
	} {
		t.Run(gen.name, func(t *testing.T) {
			s := startServer(t, gen.cfg)
			if s.proto.Generation() != gen.proto {
				t.Fatalf("server speaks %v, want %v", s.proto, gen.proto)
			}
			var c *tclient // bound lazily, for the refusals that need a session
			for i := range iggy.Commands {
				m := &iggy.Commands[i]
				h, handled := s.handlers[m.Code]
				special, isSpecial := servedBeforeTable[m.Code]
				switch {
				case !m.In(gen.proto):
					if handled {
						t.Errorf("%s (%d) is not in protocol %s but has a handler", m.Name, m.Code, gen.name)
					}
					if c == nil {
						c = bound(t, s, gen.proto)
					}
					checkOutOfProtocol(t, c, m, gen.proto)
				case isSpecial:
					if handled {
						t.Errorf("%s (%d) has a handler, but serve answers it before the table (%s)", m.Name, m.Code, special.how)
					}
					special.check(t, s, m)
				case !handled:
					t.Errorf("%s (%d) is in protocol %s but has no handler: add it to handlerTable in embedded/dispatch.go, or, if serve answers it on a path of its own, to servedBeforeTable in embedded/catalog_test.go", m.Name, m.Code, gen.name)
				case m.Operation != iggy.OperationNonReplicated && s.byOperation[m.Operation] != h:
					t.Errorf("%s (%d): operation %v does not reach its handler", m.Name, m.Code, m.Operation)
				}
			}
		})
	}
}

// checkOutOfProtocol sends m, which protocol p does not have, and expects
// the refusal of an unknown command.
func checkOutOfProtocol(t *testing.T, c *tclient, m *iggy.CommandMeta, p iggy.ProtocolVersion) {
	t.Helper()
	if m.Operation == iggy.OperationNonReplicated {
		sendCode(c, m.Code, nil)
		expect{ch: chStatus, code: iggy.StatusInvalidCommand}.check(t, c)
		return
	}
	if m.Operation.ValidIn(p) {
		t.Errorf("%s (%d) is not in protocol %v, but its operation %v is", m.Name, m.Code, p, m.Operation)
		return
	}
	h := c.header(m.Operation, c.next)
	c.writeRaw(frame(&h, nil))
	c.expectSilence()
}
