package embedded

import (
	"bufio"
	"encoding/binary"
	"io"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/kafka-iggy/kafka-iggy/codec/iggy"
	"github.com/kafka-iggy/kafka-iggy/codec/wire"
)

// fuzzClient is the client id of the fuzzing connection's login.
var fuzzClient = wire.U128{Lo: 0xF022, Hi: 0xF022}

// serveInput logs in on a fresh in-memory connection, then writes input
// split in two at split, closes, and drains the server's answers. It
// returns once the server has finished with the connection.
func serveInput(t testing.TB, s *Server, input []byte, split int, patch bool) {
	srvSide, cliSide := net.Pipe()
	done := make(chan struct{})
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer close(done)
		s.serveConn(srvSide)
	}()
	drained := make(chan struct{})
	br := bufio.NewReader(cliSide)
	// Login first, synchronously, to learn the session.
	h := iggy.RequestHeader{Client: fuzzClient, Operation: iggy.OperationRegister}
	login := loginBody("iggy", "iggy")
	if s.proto.Generation() >= iggy.Protocol012 {
		login = s.proto.LoginRequest(iggy.ClientVersionInfo{SdkName: "go-fuzz", SdkVersion: "1"}, "iggy", "iggy", [iggy.BindSecretSize]byte{1}).AppendTo(nil)
	}
	if _, err := cliSide.Write(frame(&h, login)); err != nil {
		t.Fatal(err)
	}
	f, err := iggy.ReadFrame(br, nil, iggy.LimitMaxFrameSize)
	if err != nil {
		t.Fatalf("login reply: %v", err)
	}
	payload, err := iggy.ParseResult(f[iggy.HeaderSize:])
	if err != nil {
		t.Fatalf("login: %v", err)
	}
	var ls iggy.LoginSession
	if _, err := ls.DecodeFrom(payload); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(drained)
		_, _ = io.Copy(io.Discard, br)
	}()
	if patch && len(input) >= iggy.HeaderSize {
		// Give the first frame the live session and client id so that the
		// fuzzer reaches the logged-in paths.
		input = append([]byte(nil), input...)
		binary.LittleEndian.PutUint64(input[iggy.RequestHeaderSessionOffset:], ls.Session)
		binary.LittleEndian.PutUint64(input[iggy.RequestHeaderClientOffset:], fuzzClient.Lo)
		binary.LittleEndian.PutUint64(input[iggy.RequestHeaderClientOffset+8:], fuzzClient.Hi)
	}
	split = min(max(split, 0), len(input))
	_ = cliSide.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := cliSide.Write(input[:split]); err == nil {
		_, _ = cliSide.Write(input[split:])
	}
	_ = cliSide.Close()
	<-done
	<-drained
}

// fuzzSeeds are request frames covering every plane.
func fuzzSeeds(t testing.TB) [][]byte {
	c := &tclient{client: fuzzClient, next: 1}
	fr := func(op iggy.Operation, code uint32, body encoder) []byte {
		h := c.header(op, c.next)
		h.Code = code
		c.next++
		return frame(&h, encode(body))
	}
	s0, t0 := numID(0), numID(0)
	p0 := iggy.OptionalPartition{Present: true}
	seeds := [][]byte{
		fr(iggy.OperationNonReplicated, iggy.CodePing, nil),
		fr(iggy.OperationCreateStream, 0, &iggy.CreateStreamRequest{Name: "s"}),
		fr(iggy.OperationCreateTopic, 0, &iggy.CreateTopicRequest{StreamID: s0, PartitionsCount: 2, Name: "t", Options: iggy.Options{opt("message_expiry", iggy.HeaderKindString, []byte("1h"))}}),
		fr(iggy.OperationUpdateTopic, 0, &iggy.UpdateTopicRequest{StreamID: s0, TopicID: t0, Name: "t", Options: iggy.Options{opt("max_topic_size", iggy.HeaderKindString, []byte("2 GiB"))}}),
		fr(iggy.OperationSendMessages, 0, &iggy.SendMessagesRequest{StreamID: s0, TopicID: t0, Partitioning: toPartition(0), MessagesCount: 2, Batch: batch(t, "a", "b")}),
		fr(iggy.OperationNonReplicated, iggy.CodePollMessages, pollReq(single(1), s0, t0, ptr(uint32(0)), iggy.PollingKindNext, 0, 10, true)),
		fr(iggy.OperationStoreConsumerOffset, 0, &iggy.StoreConsumerOffsetRequest{Consumer: single(1), StreamID: s0, TopicID: t0, PartitionID: p0, Ack: iggy.AckLevelQuorum}),
		fr(iggy.OperationDeleteConsumerOffset, 0, &iggy.DeleteConsumerOffsetRequest{Consumer: single(1), StreamID: s0, TopicID: t0, PartitionID: p0, Ack: iggy.AckLevelQuorum}),
		fr(iggy.OperationCreateConsumerGroup, 0, &iggy.CreateConsumerGroupRequest{StreamID: s0, TopicID: t0, Name: "g"}),
		fr(iggy.OperationJoinConsumerGroup, 0, &iggy.JoinConsumerGroupRequest{StreamID: s0, TopicID: t0, GroupID: nameID("g")}),
		fr(iggy.OperationNonReplicated, iggy.CodeSyncConsumerGroup, &iggy.SyncConsumerGroupRequest{StreamID: s0, TopicID: t0, GroupID: nameID("g")}),
		fr(iggy.OperationNonReplicated, iggy.CodeGetStats, nil),
		fr(iggy.OperationNonReplicated, iggy.CodeGetTopic, &iggy.GetTopicRequest{StreamID: s0, TopicID: t0}),
		fr(iggy.OperationCreateUser, 0, &iggy.CreateUserRequest{Username: "u1", Password: "pass", Status: iggy.UserStatusActive}),
		fr(iggy.OperationCreatePersonalAccessToken, 0, &iggy.CreatePersonalAccessTokenRequest{Name: "p"}),
		fr(iggy.OperationDeleteSegments, 0, &iggy.DeleteSegmentsRequest{StreamID: s0, TopicID: t0, SegmentsCount: 1}),
		fr(iggy.OperationLogout, 0, nil),
	}
	for _, name := range []string{"ping_request_frame", "login_register_request_frame", "create_stream_request_frame", "create_topic_request_frame",
		"send_messages_request_frame", "poll_messages_request_frame", "store_consumer_offset_request_frame", "legacy_login_user_request_frame"} {
		if v, ok := vectorSetIfLoaded()[name]; ok {
			seeds = append(seeds, v)
		}
	}
	return seeds
}

// vectorSetIfLoaded returns the golden vectors when the file is there.
func vectorSetIfLoaded() map[string][]byte {
	vectorsOnce.Do(func() {})
	if vectorsErr != nil {
		return nil
	}
	return vectorSet
}

// FuzzServerFrame feeds arbitrary bytes, split at an arbitrary point, to a
// logged-in connection: the server must not panic, must not allocate from
// a wire length, and must finish with the connection once it closes.
func FuzzServerFrame(f *testing.F) {
	s := startServer(f, func(c *Config) { c.MaxFrameBytes = 1 << 20 })
	for _, seed := range fuzzSeeds(f) {
		f.Add(seed, uint16(len(seed)/2), true)
		f.Add(append(seed, seed...), uint16(17), true)
	}
	f.Add([]byte{}, uint16(0), false)
	var ms runtime.MemStats
	f.Fuzz(func(t *testing.T, input []byte, split uint16, patch bool) {
		runtime.ReadMemStats(&ms)
		before := ms.TotalAlloc
		serveInput(t, s, input, int(split), patch)
		runtime.ReadMemStats(&ms)
		// A frame may announce 1 MiB here (64 MiB by default); what the
		// server allocates must follow the bytes actually sent.
		if grew := ms.TotalAlloc - before; grew > 32<<20+64*uint64(len(input)) {
			t.Fatalf("serving %d input bytes allocated %d bytes", len(input), grew)
		}
	})
}

// FuzzServerFrame012 is FuzzServerFrame on a server in protocol 0.12 mode,
// seeded with the 0.12 commands too (UPDATE_RESOURCE, GET_PARTITION_ROUTE,
// POLL_MESSAGES_DEFERRED, a kind-3 offset store).
func FuzzServerFrame012(f *testing.F) {
	s := startServer(f, func(c *Config) { c.MaxFrameBytes, c.Protocol = 1<<20, "0.12" })
	c := &tclient{client: fuzzClient, next: 100}
	fr := func(op iggy.Operation, code uint32, body encoder) []byte {
		h := c.header(op, c.next)
		h.Code, h.PartitionIncarnation = code, 1
		c.next++
		return frame(&h, encode(body))
	}
	s0, t0 := numID(0), numID(0)
	patch := iggy.ResourcePatchTopic{StreamID: s0, TopicID: t0, Reset: []string{"max_topic_size"},
		Options: iggy.Options{opt("message_expiry", iggy.HeaderKindString, []byte("1h"))}}
	seeds := append(fuzzSeeds(f),
		fr(iggy.OperationUpdateResource, 0, &iggy.UpdateResourceRequest{Scope: iggy.OptionScopeTopic, Patch: patch.AppendTo(nil)}),
		fr(iggy.OperationNonReplicated, iggy.CodeGetPartitionRoute, &iggy.GetPartitionRouteRequest{StreamID: s0, TopicID: t0}),
		fr(iggy.OperationNonReplicated, iggy.CodePollMessagesDeferred, &iggy.PollMessagesDeferredRequest{Consumer: single(1), StreamID: s0, TopicID: t0,
			PartitionID: iggy.OptionalPartition{Present: true}, Strategy: iggy.PollingStrategy{Kind: iggy.PollingKindNext}, Count: 10, MinCount: 1, MaxBytes: 1 << 16, RequestTimeoutUs: 1}),
		fr(iggy.OperationStoreConsumerOffset, 0, &iggy.StoreConsumerOffsetRequest{Consumer: iggy.Consumer{Kind: iggy.ConsumerKindExternalGroup, ID: nameID("kafka.cg.g")},
			StreamID: s0, TopicID: t0, PartitionID: iggy.OptionalPartition{Present: true}, Ack: iggy.AckLevelQuorum}),
	)
	for _, seed := range seeds {
		f.Add(seed, uint16(len(seed)/2), true)
	}
	var ms runtime.MemStats
	f.Fuzz(func(t *testing.T, input []byte, split uint16, patch bool) {
		runtime.ReadMemStats(&ms)
		before := ms.TotalAlloc
		serveInput(t, s, input, int(split), patch)
		runtime.ReadMemStats(&ms)
		if grew := ms.TotalAlloc - before; grew > 32<<20+64*uint64(len(input)) {
			t.Fatalf("serving %d input bytes allocated %d bytes", len(input), grew)
		}
	})
}

// TestLargeFrameClaim: a header announcing a 64 MiB frame followed by a
// few bytes costs the server little memory.
func TestLargeFrameClaim(t *testing.T) {
	s := startServer(t, nil)
	h := iggy.RequestHeader{Client: fuzzClient, Operation: iggy.OperationNonReplicated, Code: iggy.CodePing}
	claim := frame(&h, make([]byte, 100))
	binary.LittleEndian.PutUint32(claim[iggy.RequestHeaderSizeOffset:], iggy.LimitMaxFrameSize)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	before := ms.TotalAlloc
	for range 10 {
		serveInput(t, s, claim, 50, false)
	}
	runtime.ReadMemStats(&ms)
	if grew := ms.TotalAlloc - before; grew > 8<<20 {
		t.Fatalf("10 connections announcing 64 MiB allocated %d bytes", grew)
	}
}
