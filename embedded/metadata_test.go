package embedded

import (
	"archive/zip"
	"bytes"
	"math"
	"net"
	"os"
	"slices"
	"testing"

	"github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

func (c *tclient) getTopic(stream, topic iggy.Identifier) (iggy.TopicDetails, bool) {
	c.t.Helper()
	body := c.ok(c.call(iggy.CodeGetTopic, &iggy.GetTopicRequest{StreamID: stream, TopicID: topic}))
	var td iggy.TopicDetails
	if len(body) == 0 {
		return td, false
	}
	if _, err := td.DecodeFrom(body); err != nil {
		c.t.Fatal(err)
	}
	return td, true
}

func optionKeys(o iggy.Options) []string {
	var keys []string
	for _, v := range o {
		keys = append(keys, v.Key)
	}
	return keys
}

// TestIDAllocation checks §7.1: lowest free stream and topic ids, group ids
// never reused, partition ids continuing after the highest.
func TestIDAllocation(t *testing.T) {
	s := startServer(t, nil)
	c := root(t, s)
	for i, name := range []string{"a", "b", "c"} {
		if id := c.createStream(name); id != uint32(i) {
			t.Fatalf("stream %s id %d", name, id)
		}
	}
	c.ok(c.meta(iggy.OperationDeleteStream, &iggy.DeleteStreamRequest{StreamID: nameID("b")}))
	if id := c.createStream("d"); id != 1 {
		t.Fatalf("reused stream id %d, want 1", id)
	}
	for i := range 3 {
		if td := c.createTopic(numID(0), string(rune('x'+i)), 1, nil); td.ID != uint32(i) {
			t.Fatalf("topic id %d", td.ID)
		}
	}
	c.ok(c.meta(iggy.OperationDeleteTopic, &iggy.DeleteTopicRequest{StreamID: numID(0), TopicID: numID(0)}))
	if td := c.createTopic(numID(0), "w", 2, nil); td.ID != 0 || td.Partitions[1].ID != 1 {
		t.Fatalf("reused topic %+v", td.TopicHeader)
	}
	group := func(name string) uint32 {
		var d iggy.ConsumerGroupDetails
		if _, err := d.DecodeFrom(c.ok(c.meta(iggy.OperationCreateConsumerGroup, &iggy.CreateConsumerGroupRequest{StreamID: numID(0), TopicID: numID(0), Name: name}))); err != nil {
			t.Fatal(err)
		}
		return d.ID
	}
	if group("g0") != 0 || group("g1") != 1 {
		t.Fatal("group ids")
	}
	c.ok(c.meta(iggy.OperationDeleteConsumerGroup, &iggy.DeleteConsumerGroupRequest{StreamID: numID(0), TopicID: numID(0), GroupID: numID(1)}))
	if id := group("g2"); id != 2 {
		t.Fatalf("group id reused: %d", id)
	}
	// Partitions: add 2 (ids 2, 3), delete 3 (the highest go), add 1 (id 1).
	c.ok(c.meta(iggy.OperationCreatePartitions, &iggy.CreatePartitionsRequest{StreamID: numID(0), TopicID: numID(0), PartitionsCount: 2}))
	td, _ := c.getTopic(numID(0), numID(0))
	if td.PartitionsCount != 4 || td.Partitions[3].ID != 3 {
		t.Fatalf("after create_partitions %+v", td.Partitions)
	}
	c.ok(c.meta(iggy.OperationDeletePartitions, &iggy.DeletePartitionsRequest{StreamID: numID(0), TopicID: numID(0), PartitionsCount: 3}))
	c.ok(c.meta(iggy.OperationCreatePartitions, &iggy.CreatePartitionsRequest{StreamID: numID(0), TopicID: numID(0), PartitionsCount: 1}))
	td, _ = c.getTopic(numID(0), numID(0))
	if ids := []uint32{td.Partitions[0].ID, td.Partitions[1].ID}; td.PartitionsCount != 2 || !slices.Equal(ids, []uint32{0, 1}) {
		t.Fatalf("partitions %+v", td.Partitions)
	}

	// Reads of unknown things: empty bodies, GET_TOPICS count 0.
	for _, tc := range []struct {
		code uint32
		body encoder
		want []byte
	}{
		{iggy.CodeGetStream, &iggy.GetStreamRequest{StreamID: numID(42)}, nil},
		{iggy.CodeGetTopic, &iggy.GetTopicRequest{StreamID: numID(42), TopicID: numID(0)}, nil},
		{iggy.CodeGetTopics, &iggy.GetTopicsRequest{StreamID: numID(42)}, []byte{0, 0, 0, 0}},
		{iggy.CodeGetUser, &iggy.GetUserRequest{UserID: numID(42)}, nil},
		{iggy.CodeGetClient, &iggy.GetClientRequest{ClientID: 4242}, nil},
		{iggy.CodeGetConsumerGroup, &iggy.GetConsumerGroupRequest{StreamID: numID(0), TopicID: numID(0), GroupID: numID(42)}, nil},
		{iggy.CodeGetConsumerOffset, &iggy.GetConsumerOffsetRequest{Consumer: single(1), StreamID: numID(42), TopicID: numID(0)}, nil},
		{iggy.CodeSyncConsumerGroup, &iggy.SyncConsumerGroupRequest{StreamID: numID(0), TopicID: numID(0), GroupID: numID(0)}, nil},
	} {
		if got := c.ok(c.call(tc.code, tc.body)); !bytes.Equal(got, tc.want) {
			t.Errorf("code %d: body %x, want %x", tc.code, got, tc.want)
		}
	}
}

// TestTopicOptions checks the catalog: string parsing, explicit and derived
// blocks, update patching, the SDK's durability keys.
func TestTopicOptions(t *testing.T) {
	s := startServer(t, nil)
	c := root(t, s)
	c.createStream("s")
	td := c.createTopic(numID(0), "t", 1, iggy.Options{
		opt("message_expiry", iggy.HeaderKindString, []byte("1h 30m")),
		opt("segment_size", iggy.HeaderKindString, []byte("128 MiB")),
		opt("compression_algorithm", iggy.HeaderKindUint8, []byte{2}),
		opt("max_topic_size", iggy.HeaderKindUint64, u64(0)), // 0 = default: not explicit
		opt("enforce_fsync", iggy.HeaderKindString, []byte("true")),
		opt("durability", iggy.HeaderKindString, []byte("Replicated")),
	})
	if td.MessageExpiry != 90*60*1e6 || td.CompressionAlgorithm != iggy.CompressionAlgorithmGzip || td.MaxTopicSize != math.MaxUint64 {
		t.Fatalf("header %+v", td.TopicHeader)
	}
	if got := optionKeys(td.ExplicitOptions); !slices.Equal(got, []string{"compression_algorithm", "durability", "enforce_fsync", "message_expiry", "segment_size"}) {
		t.Fatalf("explicit %v", got)
	}
	wantDerived := []string{"max_topic_size", "messages_required_to_save", "preallocate_segments", "size_of_messages_required_to_save"}
	if _, ok := iggy.LookupOption(iggy.TopicOptions, "consumer_offset_durability"); ok { // in the generated catalog
		wantDerived = append([]string{"consumer_offset_durability"}, wantDerived...)
	}
	if got := optionKeys(td.DerivedOptions); !slices.Equal(got, wantDerived) {
		t.Fatalf("derived %v", got)
	}
	for key, want := range map[string]iggy.Option{
		"compression_algorithm": opt("compression_algorithm", iggy.HeaderKindString, []byte("gzip")),
		"segment_size":          opt("segment_size", iggy.HeaderKindUint64, u64(128<<20)),
		"enforce_fsync":         opt("enforce_fsync", iggy.HeaderKindBool, []byte{1}),
		"durability":            opt("durability", iggy.HeaderKindString, []byte("replicated")),
	} {
		if got, _ := td.ExplicitOptions.Get(key); got.Kind != want.Kind || !bytes.Equal(got.Value, want.Value) {
			t.Errorf("%s = %+v, want %+v", key, got, want)
		}
	}

	// UPDATE_TOPIC: rename and patch; values stored as sent.
	c.ok(c.meta(iggy.OperationUpdateTopic, &iggy.UpdateTopicRequest{StreamID: numID(0), TopicID: numID(0), Name: "t2", Options: iggy.Options{
		opt("max_topic_size", iggy.HeaderKindString, []byte("1 GiB")),
		opt("compression_algorithm", iggy.HeaderKindString, []byte("none")),
	}}))
	td, _ = c.getTopic(numID(0), nameID("t2"))
	if td.Name != "t2" || td.MaxTopicSize != 1<<30 || td.CompressionAlgorithm != iggy.CompressionAlgorithmNone {
		t.Fatalf("after update %+v", td.TopicHeader)
	}
	if got, _ := td.ExplicitOptions.Get("max_topic_size"); got.Kind != iggy.HeaderKindString || string(got.Value) != "1 GiB" {
		t.Fatalf("max_topic_size stored as %+v", got)
	}
	if _, ok := td.DerivedOptions.Get("max_topic_size"); ok {
		t.Fatal("max_topic_size still derived")
	}

	// Without the SDK compatibility setting the durability keys are
	// unknown (4041), as in the reference catalog.
	strict := root(t, startServer(t, func(c *Config) { c.SDKDurabilityOptions = false }))
	strict.createStream("s")
	strict.writeRaw(frame(ptr(strict.header(iggy.OperationCreateTopic, strict.next)), encode(&iggy.CreateTopicRequest{StreamID: numID(0), PartitionsCount: 1, Name: "t",
		Options: iggy.Options{opt("durability", iggy.HeaderKindString, []byte("persisted"))}})))
	expect{ch: chStatus, code: iggy.StatusUnsupportedOptionKey}.check(t, strict)
	// A bad durability value is 4042 when the keys are accepted.
	c.writeRaw(frame(ptr(c.header(iggy.OperationCreateTopic, c.next)), encode(&iggy.CreateTopicRequest{StreamID: numID(0), PartitionsCount: 1, Name: "u",
		Options: iggy.Options{opt("consumer_offset_durability", iggy.HeaderKindString, []byte("maybe"))}})))
	expect{ch: chStatus, code: iggy.StatusInvalidOptionValue}.check(t, c)

	// DESCRIBE_OPTIONS: the topic catalog (the reference's 8 keys and the
	// SDK's 2) in catalog order; none for streams and users. The strict
	// server lists the reference's 8.
	var strictDesc iggy.DescribeOptionsResponse
	if _, err := strictDesc.DecodeFrom(strict.ok(strict.call(iggy.CodeDescribeOptions, &iggy.DescribeOptionsRequest{Scope: iggy.OptionScopeTopic}))); err != nil || len(strictDesc.Options) != 8 {
		t.Fatalf("strict describe: %d entries %v", len(strictDesc.Options), err)
	}
	for scope, want := range map[uint8]int{1: len(iggy.TopicOptions), 2: 0, 3: 0} {
		var dr iggy.DescribeOptionsResponse
		if _, err := dr.DecodeFrom(c.ok(c.call(iggy.CodeDescribeOptions, &iggy.DescribeOptionsRequest{Scope: iggy.OptionScope(scope)}))); err != nil || len(dr.Options) != want {
			t.Fatalf("scope %d: %d entries %v", scope, len(dr.Options), err)
		}
	}
}

func TestOptionParsing(t *testing.T) {
	durations := []struct {
		in   string
		us   uint64
		okay bool
	}{
		{"7 days", 7 * 86400e6, true}, {"1h 30m", 5400e6, true}, {"1h30m", 5400e6, true}, {"15s", 15e6, true},
		{"100ms", 100e3, true}, {"2 weeks", 14 * 86400e6, true}, {"1", 0, false}, {"", 0, false}, {"5 parsecs", 0, false},
	}
	for _, d := range durations {
		us, ok := iggy.ParseHumanDuration(d.in)
		if ok != d.okay || ok && us != d.us {
			t.Errorf("duration %q = %d %v", d.in, us, ok)
		}
	}
	sizes := []struct {
		in   string
		b    uint64
		okay bool
	}{
		{"1 GiB", 1 << 30, true}, {"500MB", 500e6, true}, {"128MiB", 128 << 20, true}, {"1024", 1024, true},
		{"1.5 KiB", 1536, true}, {"1 GB", 1e9, true}, {"x", 0, false}, {"1 parsec", 0, false},
	}
	for _, sz := range sizes {
		b, ok := iggy.ParseByteSize(sz.in)
		if ok != sz.okay || ok && b != sz.b {
			t.Errorf("size %q = %d %v", sz.in, b, ok)
		}
	}
	spec, _ := iggy.LookupOption(iggy.TopicOptions, "message_expiry")
	if _, ok := parseOptionValue(spec, iggy.HeaderKindString, []byte("200 years")); ok {
		t.Error("an expiry above 2^32-1 s was accepted")
	}
	if v, ok := parseOptionValue(spec, iggy.HeaderKindString, []byte("never_expire")); !ok || v.u64 != math.MaxUint64 {
		t.Error("never_expire")
	}
}

// TestPurgeAndSegments checks PURGE_TOPIC (offsets restart at 0, consumer
// offsets gone) and DELETE_SEGMENTS (operations 68 and 138).
func TestPurgeAndSegments(t *testing.T) {
	s := startServer(t, nil)
	c := root(t, s)
	c.createStream("s")
	c.createTopic(numID(0), "t", 1, iggy.Options{opt("segment_size", iggy.HeaderKindUint64, u64(1<<20))})
	big := string(make([]byte, 600<<10))
	for range 4 { // two sealed segments and an active one
		c.send(numID(0), numID(0), 0, big)
	}
	c.ok(c.meta(iggy.OperationStoreConsumerOffset, &iggy.StoreConsumerOffsetRequest{Consumer: single(1), StreamID: numID(0), TopicID: numID(0), PartitionID: iggy.OptionalPartition{Present: true}, Offset: 3, Ack: iggy.AckLevelQuorum}))
	td, _ := c.getTopic(numID(0), numID(0))
	if td.Partitions[0].SegmentsCount != 3 {
		t.Fatalf("segments %d", td.Partitions[0].SegmentsCount)
	}
	del := func(n uint32) reply {
		return c.meta(iggy.OperationDeleteSegments, &iggy.DeleteSegmentsRequest{StreamID: numID(0), TopicID: numID(0), SegmentsCount: n})
	}
	r := del(1)
	if r.hdr.Operation != iggy.OperationTruncatePartition {
		t.Fatalf("delete_segments reply operation %d", r.hdr.Operation)
	}
	c.ok(r)
	p := c.poll(pollReq(single(2), numID(0), numID(0), nil, iggy.PollingKindFirst, 0, 1, false))
	if p.offsets[0] != 2 {
		t.Fatalf("first retained offset %v", p.offsets)
	}
	if r := del(5); r.hdr.Operation != iggy.OperationTruncatePartition {
		t.Fatalf("second delete_segments operation %d", r.hdr.Operation)
	}
	// Nothing sealed left: still op 68 success, as the real server commits
	// TruncatePartition(0) (shared iggy-protocol.md §3.9's op 138 does not happen).
	if r := del(5); r.hdr.Operation != iggy.OperationTruncatePartition || !bytes.Equal(r.body, []byte{0, 0, 0, 0}) || r.status() != 0 {
		t.Fatalf("nothing to delete: operation %d body %x", r.hdr.Operation, r.body)
	}
	if r := c.meta(iggy.OperationDeleteSegments, &iggy.DeleteSegmentsRequest{StreamID: numID(0), TopicID: numID(0), PartitionID: 9, SegmentsCount: 1}); r.hdr.Operation != iggy.OperationTruncatePartition {
		t.Fatal("unknown partition reply operation")
	} else if code, _ := r.result(t); code != iggy.StatusPartitionNotFound {
		t.Fatalf("unknown partition result %d", code)
	}

	c.ok(c.meta(iggy.OperationPurgeTopic, &iggy.PurgeTopicRequest{StreamID: numID(0), TopicID: numID(0)}))
	if body := c.ok(c.call(iggy.CodeGetConsumerOffset, &iggy.GetConsumerOffsetRequest{Consumer: single(1), StreamID: numID(0), TopicID: numID(0)})); len(body) != 0 {
		t.Fatalf("offset survived purge: %x", body)
	}
	if conf := c.send(numID(0), numID(0), 0, "again"); conf.BaseOffset != 0 {
		t.Fatalf("offset after purge %d", conf.BaseOffset)
	}
	c.ok(c.meta(iggy.OperationPurgeStream, &iggy.PurgeStreamRequest{StreamID: numID(0)}))
	if td, _ := c.getTopic(numID(0), numID(0)); td.MessagesCount != 0 {
		t.Fatalf("messages after purge_stream %d", td.MessagesCount)
	}
}

// TestRetention checks message_expiry and max_topic_size retention and the
// pinning by the lowest stored consumer offset (§7.2).
func TestRetention(t *testing.T) {
	s, clk := startWithClock(t, nil)
	c := root(t, s)
	c.createStream("s")
	c.createTopic(numID(0), "expiring", 1, iggy.Options{opt("segment_size", iggy.HeaderKindUint64, u64(1<<20)), opt("message_expiry", iggy.HeaderKindString, []byte("1h"))})
	c.createTopic(numID(0), "capped", 1, iggy.Options{opt("segment_size", iggy.HeaderKindUint64, u64(1<<20)), opt("max_topic_size", iggy.HeaderKindString, []byte("2 MiB"))})
	big := string(make([]byte, 600<<10))
	for range 4 {
		c.send(numID(0), numID(0), 0, big)
		c.send(numID(0), numID(1), 0, big)
	}
	first := func(topic uint32) uint64 {
		return c.poll(pollReq(single(1), numID(0), numID(topic), nil, iggy.PollingKindFirst, 0, 1, false)).offsets[0]
	}
	// A stored offset pins: nothing above offset 0 may go.
	c.ok(c.meta(iggy.OperationStoreConsumerOffset, &iggy.StoreConsumerOffsetRequest{Consumer: single(9), StreamID: numID(0), TopicID: numID(0), PartitionID: iggy.OptionalPartition{Present: true}, Offset: 0, Ack: iggy.AckLevelQuorum}))
	clk.advance(2 * 3600e9)
	s.applyRetention()
	if got := first(0); got != 0 {
		t.Fatalf("pinned partition lost offsets up to %d", got)
	}
	if got := first(1); got != 2 {
		t.Fatalf("size retention: first offset %d, want 2", got)
	}
	// Segments hold offsets 0-1 and 2-3 (both sealed) and nothing (active).
	// Pinned at 1 only the first may go.
	c.ok(c.meta(iggy.OperationStoreConsumerOffset, &iggy.StoreConsumerOffsetRequest{Consumer: single(9), StreamID: numID(0), TopicID: numID(0), PartitionID: iggy.OptionalPartition{Present: true}, Offset: 1, Ack: iggy.AckLevelQuorum}))
	s.applyRetention()
	if got := first(0); got != 2 {
		t.Fatalf("expiry retention: first offset %d, want 2", got)
	}
	// Retention does not move the current offset; a store below the first
	// retained offset is still accepted (it only has to be <= current).
	if p := c.poll(pollReq(single(1), numID(0), numID(0), nil, iggy.PollingKindOffset, 0, 10, false)); p.offsets[0] != 2 || p.current != 3 {
		t.Fatalf("poll from 0 after retention %+v", p)
	}
}

// TestSystemCommands checks GET_STATS, GET_ME, GET_CLIENT(S),
// GET_CLUSTER_METADATA, GET_SNAPSHOT_FILE and ConnCount.
func TestSystemCommands(t *testing.T) {
	s := startServer(t, nil)
	c := root(t, s)
	other := dial(t, s)
	other.roundTrip(iggy.RequestHeader{Client: other.client, Operation: iggy.OperationNonReplicated, Code: iggy.CodePing, Request: 1}, nil)
	if n := s.ConnCount(); n != 2 {
		t.Fatalf("ConnCount %d", n)
	}
	c.createStream("s")
	c.createTopic(numID(0), "t", 2, nil)
	c.send(numID(0), numID(0), 1, "a", "b")
	c.ok(c.meta(iggy.OperationCreateConsumerGroup, &iggy.CreateConsumerGroupRequest{StreamID: numID(0), TopicID: numID(0), Name: "g"}))
	c.ok(c.meta(iggy.OperationJoinConsumerGroup, &iggy.JoinConsumerGroupRequest{StreamID: numID(0), TopicID: numID(0), GroupID: numID(0)}))

	var st iggy.GetStatsResponse
	if _, err := st.DecodeFrom(c.ok(c.call(iggy.CodeGetStats, nil))); err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	if st.ProcessID != uint32(os.Getpid()) || st.StreamsCount != 1 || st.TopicsCount != 1 || st.PartitionsCount != 2 || st.SegmentsCount != 2 ||
		st.MessagesCount != 2 || st.ClientsCount != 2 || st.ConsumerGroupsCount != 1 || st.Hostname != host || st.MemoryUsage == 0 ||
		st.IggyServerVersion != "0.9.0-edge.5" || st.IggyServerSemver != 9000 || st.MessagesSizeBytes == 0 || st.WrittenBytes == 0 || st.ThreadsCount == 0 {
		t.Fatalf("stats %+v", st)
	}

	var me iggy.ClientDetails
	if _, err := me.DecodeFrom(c.ok(c.call(iggy.CodeGetMe, nil))); err != nil {
		t.Fatal(err)
	}
	if me.UserID != 0 || me.Transport != iggy.TransportTCP || me.Address == "" || me.ConsumerGroupsCount != 1 ||
		me.Memberships[0] != (iggy.ConsumerGroupMembership{}) {
		t.Fatalf("get_me %+v", me)
	}
	var clients iggy.GetClientsResponse
	if _, err := clients.DecodeFrom(c.ok(c.call(iggy.CodeGetClients, nil))); err != nil || len(clients.Clients) != 2 {
		t.Fatalf("clients %+v %v", clients, err)
	}
	anon := clients.Clients[0]
	if anon.ClientID == me.ClientID {
		anon = clients.Clients[1]
	}
	if anon.UserID != iggy.LimitClientNoUserID {
		t.Fatalf("anonymous client %+v", anon)
	}
	var one iggy.ClientDetails
	if _, err := one.DecodeFrom(c.ok(c.call(iggy.CodeGetClient, &iggy.GetClientRequest{ClientID: me.ClientID}))); err != nil || one.ClientID != me.ClientID {
		t.Fatalf("get_client %+v %v", one, err)
	}

	var cm iggy.GetClusterMetadataResponse
	if _, err := cm.DecodeFrom(c.ok(c.call(iggy.CodeGetClusterMetadata, nil))); err != nil || cm.Name != "single-node" || len(cm.Nodes) != 1 ||
		cm.Nodes[0].Name != "iggy-node" || int(cm.Nodes[0].TCPPort) != s.Addr().(*net.TCPAddr).Port || cm.Nodes[0].IP != "127.0.0.1" ||
		cm.Nodes[0].Role != iggy.NodeRoleLeader || cm.Nodes[0].Status != iggy.NodeStatusHealthy {
		t.Fatalf("cluster %+v %v", cm, err)
	}

	var snap iggy.GetSnapshotFileResponse
	if _, err := snap.DecodeFrom(c.ok(c.call(iggy.CodeGetSnapshotFile, &iggy.GetSnapshotFileRequest{Compression: iggy.SnapshotCompressionDeflated, TypesCount: 1, Types: []iggy.SnapshotType{iggy.SnapshotTypeAll}}))); err != nil {
		t.Fatal(err)
	}
	zr, err := zip.NewReader(bytes.NewReader(snap.Archive), int64(len(snap.Archive)))
	if err != nil || len(zr.File) == 0 {
		t.Fatalf("snapshot zip: %v", err)
	}
}
