package iggy

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"os"
	"testing"

	"github.com/kafka-iggy/kafka-iggy/codec/wire"
)

// TestVectors012 checks the protocol 0.12 golden vectors of
// testdata/vectors-0.12.json byte for byte: each value is built through the
// codec's 0.12 types (and the version types of generation.go where the
// gateway goes through them), encoded, compared, and decoded back.
func TestVectors012(t *testing.T) {
	raw, err := os.ReadFile("testdata/vectors-0.12.json")
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Vectors []struct{ Name, Source, Hex string }
	}
	if err := json.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	want := map[string][]byte{}
	for _, v := range file.Vectors {
		b, err := hex.DecodeString(v.Hex)
		if err != nil || v.Source == "" {
			t.Fatalf("%s: bad vector (hex %v, source %q)", v.Name, err, v.Source)
		}
		want[v.Name] = b
	}
	vi := ClientVersionInfo{ProtocolVersion: uint32(Protocol012), SdkName: "rust-sdk", SdkVersion: "0.11.1-edge.9"}
	var secret [BindSecretSize]byte
	for i := range secret {
		secret[i] = 0x5a
	}
	expiry := make([]byte, 8)
	binary.LittleEndian.PutUint64(expiry, 1_000_000)
	patch := ResourcePatchTopic{StreamID: strID("s"), TopicID: strID("t"), Reset: []string{"max_topic_size"},
		Options: Options{{Key: "message_expiry", Kind: HeaderKindUint64, Value: expiry}}}
	cases := []struct {
		name   string
		encode func() []byte
		decode func([]byte) error // nil: encode-only (a header)
	}{
		{"packed_version_0_12_0", func() []byte { return binary.LittleEndian.AppendUint32(nil, uint32(PackVersion(0, 12, 0))) }, nil},
		{"client_version_info", func() []byte { return vi.AppendTo(nil) }, func(b []byte) error { var d ClientVersionInfo; return roundTrip(&d, b) }},
		{"login_register_v12", func() []byte {
			return Protocol012.LoginRequest(vi, "iggy", "iggy", secret).AppendTo(nil)
		}, func(b []byte) error { var d LoginRegisterRequestV12; return roundTrip(&d, b) }},
		{"login_register_with_pat_v12", func() []byte {
			return Protocol012.LoginPATRequest(vi, "tok", secret).AppendTo(nil)
		}, func(b []byte) error { var d LoginRegisterWithPATRequestV12; return roundTrip(&d, b) }},
		{"consumer_external_group", func() []byte {
			c := Consumer{Kind: ConsumerKindExternalGroup, ID: strID("kafka.cg.g")}
			return c.AppendTo(nil)
		}, func(b []byte) error { var d Consumer; return roundTrip(&d, b) }},
		{"update_resource_topic", func() []byte {
			r := &UpdateResourceRequest{Scope: OptionScopeTopic, Patch: patch.AppendTo(nil)}
			return r.AppendTo(nil)
		}, func(b []byte) error {
			var d UpdateResourceRequest
			if err := roundTrip(&d, b); err != nil {
				return err
			}
			var p ResourcePatchTopic
			return roundTrip(&p, d.Patch)
		}},
		{"partition_route_reply", func() []byte {
			r := GetPartitionRouteResponse{Incarnation: 7, MetadataOp: 9, PartitionsCount: 3}
			return r.AppendTo(nil)
		}, func(b []byte) error { var d GetPartitionRouteResponse; return roundTrip(&d, b) }},
		{"poll_reply_head_v12", func() []byte {
			r := PollMessagesResponseV12{PartitionID: 1, CurrentOffset: 9, Context: PartitionContext{Incarnation: 5, MetadataOp: 11}}
			return r.AppendTo(nil)
		}, func(b []byte) error {
			var d PollMessagesResponse
			n, err := Protocol012.DecodePoll(b, &d)
			if err == nil && (n != len(b) || d.PartitionID != 1 || d.CurrentOffset != 9) {
				return wire.ErrConstraint
			}
			return err
		}},
		{"cluster_node_v12", func() []byte {
			n := ClusterNodeV12{Name: "iggy-node", IP: "127.0.0.1", TCPPort: 8090, Role: NodeRoleLeader, Status: NodeStatusHealthy}
			return n.AppendTo(nil)
		}, func(b []byte) error { var d ClusterNodeV12; return roundTrip(&d, b) }},
		{"eviction_incompatible_protocol_0_12", func() []byte {
			h := EvictionHeader{Client: wire.U128{Lo: 1}, Reason: EvictionReasonIncompatibleProtocol,
				ServerProtocolVersion: Protocol012, ServerProtocolVersionMin: Protocol012}
			return h.AppendTo(nil, 0)
		}, func(b []byte) error {
			var h EvictionHeader
			if _, err := h.DecodeFrom(b); err != nil {
				return err
			}
			if p, ok := PickProtocol(h.ServerProtocolVersionMin, h.ServerProtocolVersion); !ok || p != Protocol012 {
				return wire.ErrConstraint
			}
			return nil
		}},
	}
	seen := map[string]bool{}
	for _, tc := range cases {
		seen[tc.name] = true
		w, ok := want[tc.name]
		if !ok {
			t.Errorf("%s: no vector", tc.name)
			continue
		}
		if got := tc.encode(); !bytes.Equal(got, w) {
			t.Errorf("%s:\n got %x\nwant %x", tc.name, got, w)
		}
		if tc.decode != nil {
			if err := tc.decode(w); err != nil {
				t.Errorf("%s: decode: %v", tc.name, err)
			}
		}
	}
	for name := range want {
		if !seen[name] {
			t.Errorf("vector %s is not checked", name)
		}
	}
	// The 0.12.0 gate of the specification: 0.12.0..0.12.1023 in, 0.11.x and 0.13 out.
	for _, c := range []struct {
		v  ProtocolVersion
		ok bool
	}{{Protocol012, true}, {PackVersion(0, 12, 2), true}, {Protocol011, false}, {PackVersion(0, 11, 9), false}, {PackVersion(0, 13, 0), false}} {
		if got := Protocol012.Accepts(c.v); got != c.ok {
			t.Errorf("0.12.0 gate on %v = %v, want %v", c.v, got, c.ok)
		}
	}
}

func strID(s string) Identifier { return Identifier{Kind: IdentifierKindString, Value: []byte(s)} }

// roundTrip decodes b into d, which must take all of it and encode back to b.
func roundTrip(d interface {
	DecodeFrom([]byte) (int, error)
	AppendTo([]byte) []byte
}, b []byte) error {
	n, err := d.DecodeFrom(b)
	if err != nil {
		return err
	}
	if n != len(b) || !bytes.Equal(d.AppendTo(nil), b) {
		return wire.ErrConstraint
	}
	return nil
}
