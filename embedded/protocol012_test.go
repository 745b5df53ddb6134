package embedded

import (
	"encoding/binary"
	"testing"

	"github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

// Protocol 0.12 mode (embedded.protocol "0.12"), held to the Iggy 0.10 rules
// of docs/iggy-protocol-0.12.md.

func server012(t *testing.T) *Server {
	return startServer(t, func(c *Config) { c.Protocol, c.ServerVersion = "0.12", DefaultServerVersion })
}

// login012 logs in with a 0.12 LOGIN_REGISTER (bind secret) announcing v.
func (c *tclient) login012(v iggy.ProtocolVersion) reply {
	c.t.Helper()
	var secret [iggy.BindSecretSize]byte
	secret[0] = 1
	body := v.LoginRequest(iggy.ClientVersionInfo{SdkName: "go-test", SdkVersion: "1"}, "iggy", "iggy", secret).AppendTo(nil)
	return c.roundTrip(iggy.RequestHeader{Client: c.client, Operation: iggy.OperationRegister}, body)
}

func root012(t *testing.T, s *Server) *tclient {
	c := dial(t, s)
	c.bind(c.login012(iggy.Protocol012))
	return c
}

// TestProtocol012Gate: the 0.10 gate accepts 0.12.0..0.12.1023 (the edge
// SDK's 0.12.2 included) and evicts 0.11 and 0.13 clients with reason 14 and
// the server's window, which an auto client reads; the login reply announces
// 0.12.0 and server version 0.10.0-embedded.
func TestProtocol012Gate(t *testing.T) {
	s := server012(t)
	for _, v := range []iggy.ProtocolVersion{iggy.Protocol012, iggy.PackVersion(0, 12, 2)} {
		c := dial(t, s)
		r := c.login012(v)
		var ls iggy.LoginSession
		if _, err := ls.DecodeFrom(c.ok(r)); err != nil || ls.ServerProtocolVersion != uint32(iggy.Protocol012) || ls.ServerVersion != DefaultServerVersion012 {
			t.Fatalf("login %v: %+v %v", v, ls, err)
		}
	}
	for _, v := range []iggy.ProtocolVersion{iggy.Protocol011, iggy.PackVersion(0, 13, 0)} {
		c := dial(t, s)
		r := c.login012(v)
		if r.evicted == nil || r.evicted.Reason != iggy.EvictionReasonIncompatibleProtocol ||
			r.evicted.ServerProtocolVersionMin != iggy.Protocol012 || r.evicted.ServerProtocolVersion != iggy.Protocol012 {
			t.Fatalf("login %v: %+v %+v", v, r.hdr, r.evicted)
		}
	}
	// A 0.11 body (no bind secret) announcing 0.12 does not decode as a 0.12 login.
	c := dial(t, s)
	r := c.roundTrip(iggy.RequestHeader{Client: c.client, Operation: iggy.OperationRegister}, encode(&iggy.LoginRegisterRequest{
		VersionInfo: iggy.ClientVersionInfo{ProtocolVersion: uint32(iggy.Protocol012), SdkName: "go-test", SdkVersion: "1"}, Username: "iggy", Password: "iggy"}))
	if r.evicted == nil || r.evicted.Reason != iggy.EvictionReasonMalformedLogin {
		t.Fatalf("0.11 body at 0.12: %+v %+v", r.hdr, r.evicted)
	}
}

// TestProtocol012RetiredCommands: the update, purge and flush commands that
// 0.10 removed are refused as unknown: their operations are undefined (the
// frame is dropped, as for any undefined operation) and FLUSH's code is an
// unknown command (status 3); at 0.11 the same flush is status 5.
func TestProtocol012RetiredCommands(t *testing.T) {
	s := server012(t)
	c := root012(t, s)
	c.createStream("s")
	for _, op := range []iggy.Operation{iggy.OperationUpdateTopic, iggy.OperationPurgeTopic, iggy.OperationUpdateStream, iggy.OperationPurgeStream, iggy.OperationUpdateUser} {
		h := c.header(op, c.next)
		c.writeRaw(frame(&h, encode(&iggy.PurgeStreamRequest{StreamID: nameID("s")})))
		c.expectSilence()
	}
	if r := c.call(iggy.CodeFlushUnsavedBuffer, &iggy.FlushUnsavedBufferRequest{StreamID: nameID("s"), TopicID: nameID("t")}); r.status() != iggy.StatusInvalidCommand {
		t.Fatalf("flush at 0.12: status %v", r.status())
	}
	old := root(t, startServer(t, nil))
	if r := old.call(iggy.CodeFlushUnsavedBuffer, &iggy.FlushUnsavedBufferRequest{StreamID: nameID("s"), TopicID: nameID("t")}); r.status() != iggy.StatusFeatureUnavailable {
		t.Fatalf("flush at 0.11: status %v", r.status())
	}
	// And UPDATE_RESOURCE does not exist at 0.11.
	h := old.header(iggy.OperationUpdateResource, old.next)
	old.writeRaw(frame(&h, encode(&iggy.UpdateResourceRequest{Scope: iggy.OptionScopeTopic})))
	old.expectSilence()
}

// TestProtocol012UpdateResource: a topic patch sets and resets options
// (GET_TOPIC in its 0.12 shape shows both), and the set/reset rules refuse
// an empty patch, a key named twice, a key both set and reset (3), and keys
// outside the updatable catalog (4041).
func TestProtocol012UpdateResource(t *testing.T) {
	s := server012(t)
	c := root012(t, s)
	c.createStream("s")
	body := c.ok(c.meta(iggy.OperationCreateTopic, &iggy.CreateTopicRequest{StreamID: nameID("s"), PartitionsCount: 2, Name: "t"}))
	var created iggy.TopicDetails
	if _, err := iggy.Protocol012.Reply(&created).DecodeFrom(body); err != nil || len(created.Partitions) != 2 {
		t.Fatalf("create topic reply at 0.12: %+v %v", created, err)
	}
	getTopic := func() iggy.TopicDetails {
		t.Helper()
		var v12 iggy.TopicDetailsV12
		b := c.ok(c.call(iggy.CodeGetTopic, &iggy.GetTopicRequest{StreamID: nameID("s"), TopicID: nameID("t")}))
		if n, err := v12.DecodeFrom(b); err != nil || n != len(b) {
			t.Fatalf("GET_TOPIC 0.12 shape: %d/%d %v", n, len(b), err)
		}
		for _, p := range v12.Partitions {
			if string(p.Members) != "\x00" || string(p.InSyncMembers) != "\x00" || p.Context.Incarnation == 0 {
				t.Fatalf("partition %d: %+v", p.ID, p)
			}
		}
		return iggy.TopicDetailsFrom12(&v12)
	}
	u64 := func(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }
	patch := func(set iggy.Options, reset ...string) reply {
		p := iggy.ResourcePatchTopic{StreamID: nameID("s"), TopicID: nameID("t"), Reset: reset, Options: set}
		return c.meta(iggy.OperationUpdateResource, &iggy.UpdateResourceRequest{Scope: iggy.OptionScopeTopic, Patch: p.AppendTo(nil)})
	}
	exp := iggy.Option{Key: "message_expiry", Kind: iggy.HeaderKindUint64, Value: u64(5_000_000)}
	c.ok(patch(iggy.Options{exp}))
	if d := getTopic(); d.MessageExpiry != 5_000_000 {
		t.Fatalf("after set: message_expiry %d", d.MessageExpiry)
	}
	c.ok(patch(nil, "message_expiry"))
	if d := getTopic(); d.MessageExpiry == 5_000_000 {
		t.Fatalf("after reset: message_expiry still %d", d.MessageExpiry)
	}
	for name, tc := range map[string]struct {
		set   iggy.Options
		reset []string
		want  iggy.Status
	}{
		"empty":         {nil, nil, iggy.StatusInvalidCommand},
		"twice":         {iggy.Options{exp, exp}, nil, iggy.StatusInvalidCommand},
		"set and reset": {iggy.Options{exp}, []string{"message_expiry"}, iggy.StatusInvalidCommand},
		"create-only":   {iggy.Options{{Key: "segment_size", Kind: iggy.HeaderKindUint64, Value: u64(1 << 20)}}, nil, iggy.StatusUnsupportedOptionKey},
		"unknown reset": {nil, []string{"nope"}, iggy.StatusUnsupportedOptionKey},
	} {
		if r := patch(tc.set, tc.reset...); r.status() != tc.want {
			t.Errorf("%s: status %v, want %v", name, r.status(), tc.want)
		}
	}
	sp := iggy.ResourcePatchStream{StreamID: nameID("s"), Options: iggy.Options{exp}}
	if r := c.meta(iggy.OperationUpdateResource, &iggy.UpdateResourceRequest{Scope: iggy.OptionScopeStream, Patch: sp.AppendTo(nil)}); r.status() != iggy.StatusUnsupportedOptionKey {
		t.Errorf("stream patch: status %v", r.status())
	}
}

// TestProtocol012PartitionRoute: a one-node cluster names replica 0 as every
// partition's primary, with the partition count and the incarnation GET_TOPIC
// reports; an unknown partition is 3007. Cluster metadata lists one leader
// node with replica id 0.
func TestProtocol012PartitionRoute(t *testing.T) {
	s := server012(t)
	c := root012(t, s)
	c.createStream("s")
	c.ok(c.meta(iggy.OperationCreateTopic, &iggy.CreateTopicRequest{StreamID: nameID("s"), PartitionsCount: 3, Name: "t"}))
	var route iggy.GetPartitionRouteResponse
	b := c.ok(c.call(iggy.CodeGetPartitionRoute, &iggy.GetPartitionRouteRequest{StreamID: nameID("s"), TopicID: nameID("t"), PartitionID: 2}))
	if n, err := route.DecodeFrom(b); err != nil || n != 25 || route.PartitionsCount != 3 || route.PrimaryReplica != 0 || route.Incarnation == 0 {
		t.Fatalf("route: %+v (%d bytes) %v", route, len(b), err)
	}
	if r := c.call(iggy.CodeGetPartitionRoute, &iggy.GetPartitionRouteRequest{StreamID: nameID("s"), TopicID: nameID("t"), PartitionID: 9}); r.status() != iggy.StatusPartitionNotFound {
		t.Fatalf("unknown partition: status %v", r.status())
	}
	var md iggy.GetClusterMetadataResponseV12
	if _, err := md.DecodeFrom(c.ok(c.call(iggy.CodeGetClusterMetadata, &iggy.GetClusterMetadataRequest{}))); err != nil ||
		len(md.Nodes) != 1 || md.Nodes[0].ReplicaID != 0 || md.Nodes[0].Role != iggy.NodeRoleLeader {
		t.Fatalf("cluster metadata: %+v %v", md, err)
	}
}
