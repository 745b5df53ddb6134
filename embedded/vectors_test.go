package embedded

// Golden-vector conformance: every request frame of
// codec/iggy/testdata/vectors-0.11.json is sent to the server over TCP (only the
// session, and where needed the request number, re-stamped through the
// codec), and each reply is compared with the vector that shows its shape.

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"os"
	"sync"
	"testing"

	"github.com/kafka-iggy/kafka-iggy/codec/iggy"
	"github.com/kafka-iggy/kafka-iggy/codec/wire"
)

var (
	vectorsOnce sync.Once
	vectorSet   map[string][]byte
	vectorsErr  error
)

// vectors011Path is codec/iggy's in-repo copy of the 0.11 golden vectors,
// relative to this package's directory (where go test runs).
const vectors011Path = "../codec/iggy/testdata/vectors-0.11.json"

// vectors loads the 0.11 golden vectors; an unreadable file fails the test
// (the file is part of the repository).
func vectors(t testing.TB) map[string][]byte {
	t.Helper()
	vectorsOnce.Do(func() {
		raw, err := os.ReadFile(vectors011Path)
		if err != nil {
			vectorsErr = err
			return
		}
		var list []struct{ Name, Hex string }
		if err := json.Unmarshal(raw, &list); err != nil {
			vectorsErr = err
			return
		}
		vectorSet = map[string][]byte{}
		for _, v := range list {
			b, err := hex.DecodeString(v.Hex)
			if err != nil {
				vectorsErr = err
				return
			}
			vectorSet[v.Name] = b
		}
	})
	if vectorsErr != nil {
		t.Fatalf("golden vectors (%s) unreadable: %v", vectors011Path, vectorsErr)
	}
	return vectorSet
}

func vec(t testing.TB, name string) []byte {
	t.Helper()
	b, ok := vectors(t)[name]
	if !ok {
		t.Fatalf("vector %q missing", name)
	}
	return bytes.Clone(b)
}

// restamp re-encodes a request frame's header with the client's session
// (and a request number when request != nil), keeping everything else.
func (c *tclient) restamp(f []byte, request *uint64) []byte {
	c.t.Helper()
	var h iggy.RequestHeader
	if _, err := h.DecodeFrom(f); err != nil {
		c.t.Fatal(err)
	}
	if h.Session != 0 {
		h.Session = c.session
	}
	if request != nil {
		h.Request = *request
	}
	return frame(&h, f[iggy.HeaderSize:])
}

// wrap builds a frame around a body vector.
func (c *tclient) wrap(op iggy.Operation, code uint32, body []byte, request uint64) []byte {
	h := c.header(op, request)
	if op == iggy.OperationNonReplicated {
		h.Code = code
	}
	return frame(&h, body)
}

func (c *tclient) sendRaw(f []byte) reply {
	c.t.Helper()
	c.writeRaw(f)
	return c.recv()
}

// sameReplyHeader compares the fields of §8 a client relies on: size,
// command, request, operation, status.
func sameReplyHeader(t *testing.T, name string, got reply, want []byte) {
	t.Helper()
	g := got.frame
	for _, f := range []struct {
		what     string
		off, len int
	}{
		{"size", iggy.ReplyHeaderSizeOffset, 4},
		{"command", iggy.ReplyHeaderCommandOffset, 1},
		{"request", iggy.ReplyHeaderRequestOffset, 8},
		{"operation", iggy.ReplyHeaderOperationOffset, 1},
		{"status", iggy.ReplyHeaderStatusOffset, 4},
	} {
		if !bytes.Equal(g[f.off:f.off+f.len], want[f.off:f.off+f.len]) {
			t.Errorf("%s: header %s %x, vector %x", name, f.what, g[f.off:f.off+f.len], want[f.off:f.off+f.len])
		}
	}
}

// withRequest sets the request echo of a reply vector.
func withRequest(f []byte, n uint64) []byte {
	binary.LittleEndian.PutUint64(f[iggy.ReplyHeaderRequestOffset:], n)
	return f
}

// equalMasked compares a and b except the byte ranges in masks.
func equalMasked(t *testing.T, name string, got, want []byte, masks ...[2]int) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d bytes, vector %d\n got  %x\n want %x", name, len(got), len(want), got, want)
		return
	}
	g, w := bytes.Clone(got), bytes.Clone(want)
	for _, m := range masks {
		clear(g[m[0]:m[1]])
		clear(w[m[0]:m[1]])
	}
	if !bytes.Equal(g, w) {
		t.Errorf("%s differs (masked %v)\n got  %x\n want %x", name, masks, got, want)
	}
}

func TestGoldenVectors(t *testing.T) {
	vectors(t)
	// The vectors show the reference server: its 8-key topic catalog.
	s := startServer(t, func(c *Config) { c.SDKDurabilityOptions = false })

	// Before login: PING works, GET_ME is refused with status 40.
	c := dial(t, s)
	ping := c.sendRaw(vec(t, "ping_request_frame"))
	sameReplyHeader(t, "ping", ping, vec(t, "ping_reply_frame"))
	if len(ping.body) != 0 {
		t.Errorf("ping body %x", ping.body)
	}
	unauth := c.sendRaw(c.wrap(iggy.OperationNonReplicated, iggy.CodeGetMe, nil, 1))
	sameReplyHeader(t, "get_me before login", unauth, vec(t, "error_reply_frame_unauthenticated"))

	// Legacy LOGIN_USER is answered with Eviction(MalformedLogin).
	legacy := dial(t, s).sendRaw(vec(t, "legacy_login_user_request_frame"))
	wantEv := vec(t, "eviction_frame_malformed_login")
	if legacy.evicted == nil || !bytes.Equal(legacy.frame, wantEv) {
		t.Errorf("legacy login: got %x\nwant %x", legacy.frame, wantEv)
	}

	// Login with the vector's client id.
	login := c.sendRaw(vec(t, "login_register_request_frame"))
	wantLogin := vec(t, "login_register_reply_frame")
	sameReplyHeader(t, "login", login, wantLogin)
	equalMasked(t, "login reply body", login.body, wantLogin[iggy.HeaderSize:], [2]int{8, 16}) // session
	c.client = wire.U128{Lo: 0x0807060504030201, Hi: 0x100F0E0D0C0B0A09}
	c.bind(login)

	// CREATE_STREAM "test" (request 1), its idempotent resend, and a new
	// request number for the same name (result 1012).
	createStream := c.restamp(vec(t, "create_stream_request_frame"), nil)
	first := c.sendRaw(createStream)
	equalMasked(t, "create_stream reply", first.body, vec(t, "create_stream_reply_body"), [2]int{8, 16}) // created_at
	again := c.sendRaw(createStream)
	if !bytes.Equal(again.body, first.body) || again.status() != 0 {
		t.Errorf("resent create_stream: %x, want the cached %x", again.body, first.body)
	}
	exists := c.sendRaw(c.restamp(createStream, ptr(uint64(2))))
	wantExists := vec(t, "error_reply_frame_create_stream_exists")
	sameReplyHeader(t, "create_stream exists", exists, withRequest(wantExists, 2))
	if !bytes.Equal(exists.body, wantExists[iggy.HeaderSize:]) || !bytes.Equal(exists.body, vec(t, "error_result_section_1012")) {
		t.Errorf("create_stream exists body %x", exists.body)
	}
	c.next = 3
	if id := c.createStream("second"); id != 1 {
		t.Fatalf("second stream id %d", id)
	}

	// CREATE_TOPIC on stream 1 with "7 days" and 2 GiB: the reply payload
	// is the GET_TOPIC vector (created_at fields masked), and so is GET_TOPIC.
	wantTopic := vec(t, "get_topic_response_payload")
	topicMasks := [][2]int{{4, 12}}
	for p := range 3 { // PartitionResponse created_at
		at := len(wantTopic) - (3-p)*40 + 4
		topicMasks = append(topicMasks, [2]int{at, at + 8})
	}
	ct := c.sendRaw(c.restamp(vec(t, "create_topic_request_frame"), &c.next))
	c.next++
	code, payload := ct.result(t)
	if code != 0 {
		t.Fatalf("create_topic result %d", code)
	}
	equalMasked(t, "create_topic reply payload", payload, wantTopic, topicMasks...)
	gt := c.ok(c.call(iggy.CodeGetTopic, &iggy.GetTopicRequest{StreamID: numID(1), TopicID: nameID("orders")}))
	equalMasked(t, "get_topic", gt, wantTopic, topicMasks...)

	// SEND_MESSAGES frame: stream 0, topic "orders", partition 0.
	c.createTopic(numID(0), "orders", 1, nil)
	sent := c.sendRaw(c.restamp(vec(t, "send_messages_request_frame"), nil))
	var conf iggy.SendMessagesResponse
	if _, err := conf.DecodeFrom(c.ok(sent)); err != nil || len(sent.body) != len(vec(t, "send_messages_confirmation_golden")) {
		t.Fatalf("send confirmation %x: %v", sent.body, err)
	}
	if got := conf.Confirmations[0]; got != (iggy.SendConfirmation{StreamID: 0, TopicID: 0, PartitionID: 0, BaseOffset: 0}) {
		t.Errorf("confirmation %+v", got)
	}
	tlv := c.ok(c.sendRaw(c.wrap(iggy.OperationSendMessages, 0, vec(t, "send_messages_payload_with_tlv_headers"), c.next)))
	if conf.DecodeFrom(tlv); conf.Confirmations[0].BaseOffset != 2 {
		t.Errorf("second send base offset %d", conf.Confirmations[0].BaseOffset)
	}

	// The upstream golden produce payload (stream 1, topic 2, Balanced).
	c.createTopic(numID(1), "t1", 3, nil)
	c.createTopic(numID(1), "t2", 3, nil)
	golden := c.ok(c.sendRaw(c.wrap(iggy.OperationSendMessages, 0, vec(t, "send_messages_payload_golden"), c.next)))
	if conf.DecodeFrom(golden); conf.Confirmations[0] != (iggy.SendConfirmation{StreamID: 1, TopicID: 2, PartitionID: 0, BaseOffset: 0}) {
		t.Errorf("golden send confirmation %+v", conf.Confirmations[0])
	}

	// POLL_MESSAGES frame (consumer 1, stream 1, topic 2, partition 0,
	// Next, count 10, auto_commit): the stored batch is served as stored.
	polledReply := c.sendRaw(c.restamp(vec(t, "poll_messages_request_frame"), nil))
	gotPoll := c.ok(polledReply)
	wantPoll := vec(t, "poll_messages_response_golden")
	if len(gotPoll) != len(wantPoll) {
		t.Fatalf("poll reply %d bytes, vector %d", len(gotPoll), len(wantPoll))
	}
	if count := binary.LittleEndian.Uint32(gotPoll[12:]); count != 2 {
		t.Errorf("poll count %d", count)
	}
	// Prefix partition/current and the stamped partition_id, base_offset,
	// base_timestamp and batch checksum differ by placement; origin timestamp,
	// length, count and frames are as produced.
	equalMasked(t, "poll reply", gotPoll, wantPoll, [2]int{0, 12}, [2]int{16, 16 + 24}, [2]int{16 + 40, 16 + 48})
	if p := decodePoll(t, gotPoll); p.offsets[0] != 0 || p.offsets[1] != 1 || p.current != 1 {
		t.Errorf("poll %+v", p)
	}
	wantOffset := vec(t, "get_consumer_offset_response")
	gco := c.ok(c.call(iggy.CodeGetConsumerOffset, &iggy.GetConsumerOffsetRequest{Consumer: single(1), StreamID: numID(1), TopicID: numID(2),
		PartitionID: iggy.OptionalPartition{Present: true}}))
	equalMasked(t, "get_consumer_offset after auto_commit", gco, wantOffset, [2]int{4, 20})
	if binary.LittleEndian.Uint64(gco[12:]) != 1 {
		t.Errorf("auto_commit stored %x", gco)
	}

	// STORE_CONSUMER_OFFSET frame (offset 41): refused while the partition
	// ends at 1, accepted once it holds offset 41.
	storeFrame := c.restamp(vec(t, "store_consumer_offset_request_frame"), nil)
	if st := c.sendRaw(storeFrame).status(); st != iggy.StatusInvalidOffset {
		t.Errorf("store beyond current: status %d, want 4100", st)
	}
	for range 40 {
		c.send(numID(1), numID(2), 0, "more")
	}
	stored := c.sendRaw(storeFrame)
	if stored.status() != 0 || !bytes.Equal(stored.body, vec(t, "store_consumer_offset_reply_body")) {
		t.Errorf("store reply status %d body %x", stored.status(), stored.body)
	}
	gco = c.ok(c.call(iggy.CodeGetConsumerOffset, &iggy.GetConsumerOffsetRequest{Consumer: single(1), StreamID: numID(1), TopicID: numID(2),
		PartitionID: iggy.OptionalPartition{Present: true}}))
	equalMasked(t, "get_consumer_offset", gco, wantOffset, [2]int{4, 12}) // current_offset 41 here, 101 there
	if binary.LittleEndian.Uint64(gco[4:]) != 41 || binary.LittleEndian.Uint64(gco[12:]) != 41 {
		t.Errorf("get_consumer_offset %x", gco)
	}

	// DESCRIBE_OPTIONS(topic): 8 entries; segment_size as in the vector.
	desc := c.ok(c.sendRaw(c.wrap(iggy.OperationNonReplicated, iggy.CodeDescribeOptions, vec(t, "describe_options_request_topic"), c.next)))
	var dr, wantDr iggy.DescribeOptionsResponse
	if _, err := dr.DecodeFrom(desc); err != nil {
		t.Fatal(err)
	}
	if _, err := wantDr.DecodeFrom(vec(t, "describe_options_response_one_entry")); err != nil {
		t.Fatal(err)
	}
	if len(dr.Options) != 8 || dr.Options[3].Key != wantDr.Options[0].Key || dr.Options[3].Kind != wantDr.Options[0].Kind ||
		!bytes.Equal(dr.Options[3].Default, wantDr.Options[0].Default) {
		t.Errorf("describe_options %+v", dr.Options)
	}

	// Consumer group on stream 1 / topic 2 (3 partitions): create, join,
	// GET_CONSUMER_GROUP equals the vector, SYNC has its shape.
	cg := c.sendRaw(c.wrap(iggy.OperationCreateConsumerGroup, 0, vec(t, "create_consumer_group_payload"), c.next))
	c.next++
	var details iggy.ConsumerGroupDetails
	if _, err := details.DecodeFrom(c.ok(cg)); err != nil || details.MembersCount != 0 || details.PartitionsCount != 3 || details.Name != "my-group" {
		t.Errorf("create_consumer_group %+v: %v", details, err)
	}
	c.ok(c.sendRaw(c.wrap(iggy.OperationJoinConsumerGroup, 0, vec(t, "join_consumer_group_payload"), c.next)))
	c.next++
	group := c.ok(c.call(iggy.CodeGetConsumerGroup, &iggy.GetConsumerGroupRequest{StreamID: numID(1), TopicID: numID(2), GroupID: nameID("my-group")}))
	if want := vec(t, "get_consumer_group_response"); !bytes.Equal(group, want) {
		t.Errorf("get_consumer_group %x\nwant %x", group, want)
	}
	sync := c.ok(c.call(iggy.CodeSyncConsumerGroup, &iggy.SyncConsumerGroupRequest{StreamID: numID(1), TopicID: numID(2), GroupID: nameID("my-group")}))
	equalMasked(t, "sync_consumer_group", sync, vec(t, "sync_consumer_group_response"), [2]int{0, 8}, [2]int{16, 24})

	// A poll on a missing stream: status 1009.
	missing := c.call(iggy.CodePollMessages, pollReq(single(1), numID(99), numID(0), ptr(uint32(0)), iggy.PollingKindOffset, 0, 1, false))
	sameReplyHeader(t, "poll missing stream", missing, withRequest(vec(t, "error_reply_frame_status_1009"), c.next))

	// Incompatible protocol: the eviction carries the version window.
	old := dial(t, s)
	body := encode(&iggy.LoginRegisterRequest{VersionInfo: iggy.ClientVersionInfo{ProtocolVersion: uint32(iggy.Protocol012), SdkName: "x", SdkVersion: "y"}, Username: "iggy", Password: "iggy"})
	old.client = c.client
	ev := old.roundTrip(iggy.RequestHeader{Client: old.client, Operation: iggy.OperationRegister}, body)
	if want := vec(t, "eviction_frame_incompatible_protocol"); !bytes.Equal(ev.frame, want) {
		t.Errorf("incompatible protocol eviction %x\nwant %x", ev.frame, want)
	}
	bad := dial(t, s)
	bad.client = c.client
	ev = bad.roundTrip(iggy.RequestHeader{Client: bad.client, Operation: iggy.OperationRegister}, loginBody("iggy", "wrong"))
	if want := vec(t, "eviction_frame_invalid_credentials"); !bytes.Equal(ev.frame, want) {
		t.Errorf("invalid credentials eviction %x\nwant %x", ev.frame, want)
	}
}
