package embedded

// Every refusal the issue names, on the channel and with the code the
// reference gives: status, result section, eviction reason, or silence.

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/kafka-iggy/kafka-iggy/codec/iggy"
	"github.com/kafka-iggy/kafka-iggy/codec/wire"
)

// channel is where a refusal arrives.
type channel int

const (
	chOK        channel = iota // status 0 and result 0
	chEmpty                    // status 0 with an empty body
	chEmptyPoll                // status 0 with the 16-byte empty poll body
	chStatus                   // reply status
	chResult                   // result section of a status-0 reply
	chEviction                 // Eviction frame
	chSilence                  // no reply at all
	chClosed                   // connection dropped
	chSnapshot                 // polls at the tail during sends (a race, run by pollSnapshotRace; no request)
)

type expect struct {
	ch     channel
	code   iggy.Status         // status or result code
	reason iggy.EvictionReason // eviction reason
	op     iggy.Operation      // the reply's operation, when not 0
	then   *fidelityThen       // a check after the reply (fidelity rows)
}

// check asserts that the client's next frame matches e.
func (e expect) check(t *testing.T, c *tclient) reply {
	t.Helper()
	switch e.ch {
	case chSilence:
		c.expectSilence()
		return reply{}
	case chClosed:
		c.expectClosed()
		return reply{}
	}
	r := c.recv()
	if e.op != 0 && r.evicted == nil && r.hdr.Operation != e.op {
		t.Fatalf("want reply operation %d, got %d (status %d body %x)", e.op, r.hdr.Operation, r.status(), r.body)
	}
	switch e.ch {
	case chEviction:
		if r.evicted == nil || r.evicted.Reason != e.reason {
			t.Fatalf("want eviction reason %d, got %+v / header %+v", e.reason, r.evicted, r.hdr)
		}
		if r.evicted.Client != c.client {
			t.Errorf("eviction client %v, want %v", r.evicted.Client, c.client)
		}
	case chStatus:
		if r.evicted != nil || r.status() != e.code || len(r.body) != 0 {
			t.Fatalf("want status %d with an empty body, got status %d body %x evicted %+v", e.code, r.status(), r.body, r.evicted)
		}
	case chResult:
		if r.evicted != nil || r.status() != 0 {
			t.Fatalf("want result %d, got status %d evicted %+v", e.code, r.status(), r.evicted)
		}
		if code, _ := r.result(t); code != e.code || len(r.body) != iggy.LimitRejectionBodySize {
			t.Fatalf("want result %d (12-byte body), got %d body %x", e.code, code, r.body)
		}
	case chEmptyPoll:
		if r.evicted != nil || r.status() != 0 || !bytes.Equal(r.body, make([]byte, 16)) {
			t.Fatalf("want the empty poll body, got status %d body %x evicted %+v", r.status(), r.body, r.evicted)
		}
	case chEmpty:
		if r.evicted != nil || r.status() != 0 || len(r.body) != 0 {
			t.Fatalf("want status 0 with an empty body, got status %d body %x evicted %+v", r.status(), r.body, r.evicted)
		}
	case chOK:
		c.ok(r)
	}
	return r
}

// fixture is a server with a stream "s" (0), topic "t" (3 partitions,
// 3 messages on partition 0), group "g", and users "reader" (read-only) and
// "inactive".
type fixture struct {
	s *Server
}

func newFixture(t *testing.T, mutate func(*Config)) fixture {
	s := startServer(t, mutate)
	c := root(t, s)
	c.createStream("s")
	c.createTopic(numID(0), "t", 3, nil)
	c.send(numID(0), numID(0), 0, "m0", "m1", "m2")
	c.ok(c.meta(iggy.OperationCreateConsumerGroup, &iggy.CreateConsumerGroupRequest{StreamID: numID(0), TopicID: numID(0), Name: "g"}))
	readOnly := &iggy.SizedPermissions{Permissions: iggy.Permissions{Global: iggy.GlobalPermissions{ReadStreams: true, ReadTopics: true}}}
	c.ok(c.meta(iggy.OperationCreateUser, &iggy.CreateUserRequest{Username: "reader", Password: "secret", Status: iggy.UserStatusActive, Permissions: readOnly}))
	c.ok(c.meta(iggy.OperationCreateUser, &iggy.CreateUserRequest{Username: "inactive", Password: "secret", Status: iggy.UserStatusInactive}))
	return fixture{s: s}
}

// rawOptions builds an options block value for tests.
func opt(key string, kind iggy.HeaderKind, v []byte) iggy.Option {
	return iggy.Option{Key: key, Kind: kind, Value: v}
}

func u64(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }

// corrupt returns a SEND_MESSAGES body whose batch was altered by mutate
// (offsets relative to the batch record).
func corrupt(t testing.TB, stream iggy.Identifier, mutate func(b []byte) []byte) []byte {
	b := batch(t, "x", "y")
	b = mutate(b)
	req := iggy.SendMessagesRequest{StreamID: stream, TopicID: numID(0), Partitioning: toPartition(0), MessagesCount: 2}
	return append(req.AppendHeadTo(nil), b...)
}

func TestRefusals(t *testing.T) {
	f := newFixture(t, nil)
	fm := newFixture(t, func(c *Config) { c.ReplyToMalformed = true })
	login := func(user, pass string) func(c *tclient) []byte {
		return func(c *tclient) []byte {
			h := iggy.RequestHeader{Client: c.client, Operation: iggy.OperationRegister}
			return frame(&h, loginBody(user, pass))
		}
	}
	op2 := func(code uint32, body encoder) func(c *tclient) []byte {
		return func(c *tclient) []byte {
			h := c.header(iggy.OperationNonReplicated, c.next)
			h.Code = code
			return frame(&h, encode(body))
		}
	}
	rep := func(op iggy.Operation, body []byte) func(c *tclient) []byte {
		return func(c *tclient) []byte {
			h := c.header(op, c.next)
			c.next++
			return frame(&h, body)
		}
	}
	mutHeader := func(build func(c *tclient) []byte, mut func(h *iggy.RequestHeader)) func(c *tclient) []byte {
		return func(c *tclient) []byte {
			b := build(c)
			var h iggy.RequestHeader
			if _, err := h.DecodeFrom(b); err != nil {
				t.Fatal(err)
			}
			mut(&h)
			return frame(&h, b[iggy.HeaderSize:])
		}
	}
	s0, t0 := numID(0), numID(0)
	part0 := iggy.OptionalPartition{Present: true}
	groupConsumer := iggy.Consumer{Kind: iggy.ConsumerKindConsumerGroup, ID: nameID("g")}
	external := iggy.Consumer{Kind: iggy.ConsumerKindExternalGroup, ID: nameID("kafka.cg.x")}
	badFrameChecksum := func(b []byte) []byte { b[iggy.BatchHeaderSize+iggy.MessageHeaderSize] ^= 1; return b }
	badBatchChecksum := func(b []byte) []byte { b[iggy.BatchHeaderBatchChecksumOffset] ^= 1; return b }
	reserved := func(b []byte) []byte { b[iggy.BatchHeaderReservedOffset+7] = 1; return b }
	trailing := func(b []byte) []byte { return append(b, 0) }

	cases := []struct {
		name  string
		fx    *fixture
		anon  bool   // not logged in
		as    string // log in as this user (password "secret") instead of root
		build func(c *tclient) []byte
		want  expect
	}{
		// Login and session.
		{"wrong protocol version", nil, true, "", func(c *tclient) []byte {
			h := iggy.RequestHeader{Client: c.client, Operation: iggy.OperationRegister}
			return frame(&h, encode(&iggy.LoginRegisterRequest{VersionInfo: iggy.ClientVersionInfo{ProtocolVersion: uint32(iggy.PackVersion(0, 10, 0)), SdkName: "a", SdkVersion: "b"}, Username: "iggy", Password: "iggy"}))
		}, expect{ch: chEviction, reason: iggy.EvictionReasonIncompatibleProtocol}},
		{"bad password", nil, true, "", login("iggy", "nope"), expect{ch: chEviction, reason: iggy.EvictionReasonInvalidCredentials}},
		{"unknown user", nil, true, "", login("nobody", "secret"), expect{ch: chEviction, reason: iggy.EvictionReasonInvalidCredentials}},
		{"username too short", nil, true, "", login("ab", "secret"), expect{ch: chEviction, reason: iggy.EvictionReasonInvalidCredentials}},
		{"inactive user (password)", nil, true, "", login("inactive", "secret"), expect{ch: chEviction, reason: iggy.EvictionReasonInvalidCredentials}},
		{"bad token", nil, true, "", func(c *tclient) []byte {
			h := iggy.RequestHeader{Client: c.client, Operation: iggy.OperationRegister}
			return frame(&h, encode(&iggy.LoginRegisterWithPATRequest{VersionInfo: iggy.ClientVersionInfo{ProtocolVersion: uint32(iggy.Protocol011), SdkName: "a", SdkVersion: "b"}, Token: "not-a-token"}))
		}, expect{ch: chEviction, reason: iggy.EvictionReasonInvalidToken}},
		{"malformed login", nil, true, "", func(c *tclient) []byte {
			h := iggy.RequestHeader{Client: c.client, Operation: iggy.OperationRegister}
			return frame(&h, []byte{1, 2, 3})
		}, expect{ch: chEviction, reason: iggy.EvictionReasonMalformedLogin}},
		{"legacy token login (44)", nil, true, "", op2(iggy.CodeLoginWithPersonalAccessToken, &iggy.LoginWithPersonalAccessTokenRequest{Token: "x"}), expect{ch: chEviction, reason: iggy.EvictionReasonMalformedLogin}},
		{"read before login", nil, true, "", op2(iggy.CodeGetStreams, nil), expect{ch: chStatus, code: iggy.StatusUnauthenticated}},
		{"metadata op before login", nil, true, "", mutHeader(rep(iggy.OperationCreateStream, encode(&iggy.CreateStreamRequest{Name: "x"})), func(h *iggy.RequestHeader) { h.Session = 5 }),
			expect{ch: chEviction, reason: iggy.EvictionReasonNoSession}},
		{"metadata op with session 0", nil, true, "", rep(iggy.OperationCreateStream, encode(&iggy.CreateStreamRequest{Name: "x"})), expect{ch: chSilence}},
		{"logout before login", nil, true, "", mutHeader(rep(iggy.OperationLogout, nil), func(h *iggy.RequestHeader) { h.Session = 1 }), expect{ch: chOK}},
		{"client id 0", nil, false, "", mutHeader(op2(iggy.CodeGetStreams, nil), func(h *iggy.RequestHeader) { h.Client = wire.U128{} }), expect{ch: chSilence}},
		{"undefined operation", nil, false, "", mutHeader(op2(iggy.CodeGetStreams, nil), func(h *iggy.RequestHeader) { h.Operation = 99 }), expect{ch: chSilence}},
		{"wrong request checksum", nil, false, "", mutHeader(op2(iggy.CodeGetStreams, nil), func(h *iggy.RequestHeader) { h.RequestChecksum = wire.U128{Lo: 1} }), expect{ch: chStatus, code: iggy.StatusInvalidFormat}},
		{"unknown command code", nil, false, "", op2(999, nil), expect{ch: chStatus, code: iggy.StatusInvalidCommand}},
		{"replicated command as op 2", nil, false, "", op2(iggy.CodeCreateStream, &iggy.CreateStreamRequest{Name: "x"}), expect{ch: chStatus, code: iggy.StatusFeatureUnavailable}},
		{"login code as op 2", nil, false, "", op2(iggy.CodeLoginRegister, nil), expect{ch: chStatus, code: iggy.StatusFeatureUnavailable}},
		{"logout code as op 2", nil, false, "", op2(iggy.CodeLogoutUser, nil), expect{ch: chStatus, code: iggy.StatusFeatureUnavailable}},
		{"internal operation", nil, false, "", rep(iggy.OperationTruncatePartition, nil), expect{ch: chEviction, reason: iggy.EvictionReasonInvalidRequestOperation}},
		{"older session", nil, false, "", mutHeader(rep(iggy.OperationCreateStream, encode(&iggy.CreateStreamRequest{Name: "x"})), func(h *iggy.RequestHeader) { h.Session-- }),
			expect{ch: chEviction, reason: iggy.EvictionReasonSessionTooLow}},
		{"unknown session", nil, false, "", mutHeader(rep(iggy.OperationCreateStream, encode(&iggy.CreateStreamRequest{Name: "x"})), func(h *iggy.RequestHeader) { h.Session += 1000 }),
			expect{ch: chEviction, reason: iggy.EvictionReasonSessionError}},
		{"undecodable delete_stream body", nil, false, "", rep(iggy.OperationDeleteStream, []byte{9}), expect{ch: chEviction, reason: iggy.EvictionReasonInvalidRequestBody}},
		{"undecodable create_stream body", nil, false, "", rep(iggy.OperationCreateStream, []byte{0}), expect{ch: chStatus, code: iggy.StatusInvalidCommand}},
		{"flush_unsaved_buffer", nil, false, "", op2(iggy.CodeFlushUnsavedBuffer, &iggy.FlushUnsavedBufferRequest{StreamID: s0, TopicID: t0}), expect{ch: chStatus, code: iggy.StatusFeatureUnavailable}},
		{"describe_options bad scope", nil, false, "", op2(iggy.CodeDescribeOptions, nil), expect{ch: chStatus, code: iggy.StatusInvalidCommand}},

		// Streams, topics, partitions and the options catalog.
		{"stream exists", nil, false, "", rep(iggy.OperationCreateStream, encode(&iggy.CreateStreamRequest{Name: "s"})), expect{ch: chResult, code: iggy.StatusStreamNameAlreadyExists}},
		{"stream option key", nil, false, "", rep(iggy.OperationCreateStream, encode(&iggy.CreateStreamRequest{Name: "n", Options: iggy.Options{opt("x", iggy.HeaderKindString, []byte("y"))}})),
			expect{ch: chStatus, code: iggy.StatusUnsupportedOptionKey}},
		{"unknown topic option key", nil, false, "", rep(iggy.OperationCreateTopic, encode(&iggy.CreateTopicRequest{StreamID: s0, PartitionsCount: 1, Name: "n", Options: iggy.Options{opt("replication_factor", iggy.HeaderKindUint8, []byte{1})}})),
			expect{ch: chStatus, code: iggy.StatusUnsupportedOptionKey}},
		{"bad option value", nil, false, "", rep(iggy.OperationCreateTopic, encode(&iggy.CreateTopicRequest{StreamID: s0, PartitionsCount: 1, Name: "n", Options: iggy.Options{opt("segment_size", iggy.HeaderKindUint64, u64(1000))}})),
			expect{ch: chStatus, code: iggy.StatusInvalidOptionValue}},
		{"bad option kind", nil, false, "", rep(iggy.OperationCreateTopic, encode(&iggy.CreateTopicRequest{StreamID: s0, PartitionsCount: 1, Name: "n", Options: iggy.Options{opt("message_expiry", iggy.HeaderKindUint32, []byte{1, 0, 0, 0})}})),
			expect{ch: chStatus, code: iggy.StatusInvalidOptionValue}},
		{"unparsable option string", nil, false, "", rep(iggy.OperationCreateTopic, encode(&iggy.CreateTopicRequest{StreamID: s0, PartitionsCount: 1, Name: "n", Options: iggy.Options{opt("message_expiry", iggy.HeaderKindString, []byte("soon"))}})),
			expect{ch: chStatus, code: iggy.StatusInvalidOptionValue}},
		{"max_topic_size below segment_size", nil, false, "", rep(iggy.OperationCreateTopic, encode(&iggy.CreateTopicRequest{StreamID: s0, PartitionsCount: 1, Name: "n", Options: iggy.Options{opt("max_topic_size", iggy.HeaderKindString, []byte("1 MiB"))}})),
			expect{ch: chStatus, code: iggy.StatusInvalidTopicSize}},
		{"preallocation budget", nil, false, "", rep(iggy.OperationCreateTopic, encode(&iggy.CreateTopicRequest{StreamID: s0, PartitionsCount: 65, Name: "n", Options: iggy.Options{opt("preallocate_segments", iggy.HeaderKindBool, []byte{1})}})),
			expect{ch: chStatus, code: iggy.StatusInvalidOptionValue}},
		{"too many partitions", nil, false, "", rep(iggy.OperationCreateTopic, encode(&iggy.CreateTopicRequest{StreamID: s0, PartitionsCount: 1001, Name: "n"})), expect{ch: chStatus, code: iggy.StatusTooManyPartitions}},
		{"topic in unknown stream", nil, false, "", rep(iggy.OperationCreateTopic, encode(&iggy.CreateTopicRequest{StreamID: numID(9), PartitionsCount: 1, Name: "n"})), expect{ch: chResult, code: iggy.StatusStreamIDNotFound}},
		{"topic exists", nil, false, "", rep(iggy.OperationCreateTopic, encode(&iggy.CreateTopicRequest{StreamID: s0, PartitionsCount: 1, Name: "t"})), expect{ch: chResult, code: iggy.StatusTopicNameAlreadyExists}},
		{"create-only key on update", nil, false, "", rep(iggy.OperationUpdateTopic, encode(&iggy.UpdateTopicRequest{StreamID: s0, TopicID: t0, Name: "t", Options: iggy.Options{opt("segment_size", iggy.HeaderKindUint64, u64(1<<20))}})),
			expect{ch: chStatus, code: iggy.StatusUnsupportedOptionKey}},
		{"update max_topic_size below segment_size", nil, false, "", rep(iggy.OperationUpdateTopic, encode(&iggy.UpdateTopicRequest{StreamID: s0, TopicID: t0, Name: "t", Options: iggy.Options{opt("max_topic_size", iggy.HeaderKindUint64, u64(1<<20))}})),
			expect{ch: chStatus, code: iggy.StatusInvalidTopicSize}},
		{"update bad value", nil, false, "", rep(iggy.OperationUpdateTopic, encode(&iggy.UpdateTopicRequest{StreamID: s0, TopicID: t0, Name: "t", Options: iggy.Options{opt("compression_algorithm", iggy.HeaderKindString, []byte("zstd"))}})),
			expect{ch: chResult, code: iggy.StatusInvalidOptionValue}},
		{"update unknown topic", nil, false, "", rep(iggy.OperationUpdateTopic, encode(&iggy.UpdateTopicRequest{StreamID: s0, TopicID: numID(7), Name: "t"})), expect{ch: chResult, code: iggy.StatusTopicIDNotFound}},
		{"create 0 partitions", nil, false, "", rep(iggy.OperationCreatePartitions, encode(&iggy.CreatePartitionsRequest{StreamID: s0, TopicID: t0, PartitionsCount: 1})[:14]),
			expect{ch: chStatus, code: iggy.StatusInvalidCommand}},
		{"create_partitions count 0", nil, false, "", rep(iggy.OperationCreatePartitions, append(encode(&iggy.CreatePartitionsRequest{StreamID: s0, TopicID: t0, PartitionsCount: 1})[:12], 0, 0, 0, 0)),
			expect{ch: chStatus, code: iggy.StatusTooManyPartitions}},
		{"delete more partitions than exist", nil, false, "", rep(iggy.OperationDeletePartitions, encode(&iggy.DeletePartitionsRequest{StreamID: s0, TopicID: t0, PartitionsCount: 4})),
			expect{ch: chResult, code: iggy.StatusInvalidPartitionsCount}},

		// Messages.
		{"send to unknown stream", nil, false, "", rep(iggy.OperationSendMessages, corrupt(t, numID(9), func(b []byte) []byte { return b })), expect{ch: chStatus, code: iggy.StatusResourceNotFound}},
		{"malformed batch to unknown stream", nil, false, "", rep(iggy.OperationSendMessages, corrupt(t, numID(9), badFrameChecksum)), expect{ch: chStatus, code: iggy.StatusResourceNotFound}},
		{"send to unknown partition", nil, false, "", rep(iggy.OperationSendMessages, encode(&iggy.SendMessagesRequest{StreamID: s0, TopicID: t0, Partitioning: toPartition(3), MessagesCount: 1, Batch: batch(t, "x")})),
			expect{ch: chStatus, code: iggy.StatusResourceNotFound}},
		{"bad message checksum", nil, false, "", rep(iggy.OperationSendMessages, corrupt(t, s0, badFrameChecksum)), expect{ch: chSilence}},
		{"bad batch checksum", nil, false, "", rep(iggy.OperationSendMessages, corrupt(t, s0, badBatchChecksum)), expect{ch: chSilence}},
		{"nonzero reserved bytes", nil, false, "", rep(iggy.OperationSendMessages, corrupt(t, s0, reserved)), expect{ch: chSilence}},
		{"trailing bytes", nil, false, "", rep(iggy.OperationSendMessages, corrupt(t, s0, trailing)), expect{ch: chSilence}},
		{"count mismatch", nil, false, "", rep(iggy.OperationSendMessages, func() []byte {
			req := iggy.SendMessagesRequest{StreamID: s0, TopicID: t0, Partitioning: toPartition(0), MessagesCount: 3}
			return append(req.AppendHeadTo(nil), batch(t, "x", "y")...)
		}()), expect{ch: chSilence}},
		{"bad metadata length", nil, false, "", rep(iggy.OperationSendMessages, []byte{200, 0, 0, 0, 1}), expect{ch: chSilence}},
		{"debug: bad message checksum", &fm, false, "", rep(iggy.OperationSendMessages, corrupt(t, s0, badFrameChecksum)), expect{ch: chStatus, code: iggy.StatusInvalidMessageChecksum}},
		{"debug: bad batch checksum", &fm, false, "", rep(iggy.OperationSendMessages, corrupt(t, s0, badBatchChecksum)), expect{ch: chStatus, code: iggy.StatusInvalidBatchChecksum}},
		{"debug: trailing bytes", &fm, false, "", rep(iggy.OperationSendMessages, corrupt(t, s0, trailing)), expect{ch: chStatus, code: iggy.StatusInvalidCommand}},
		{"poll unknown stream", nil, false, "", op2(iggy.CodePollMessages, pollReq(single(1), numID(9), t0, nil, iggy.PollingKindFirst, 0, 1, false)), expect{ch: chStatus, code: iggy.StatusStreamIDNotFound}},
		{"poll unknown topic", nil, false, "", op2(iggy.CodePollMessages, pollReq(single(1), s0, numID(9), nil, iggy.PollingKindFirst, 0, 1, false)), expect{ch: chStatus, code: iggy.StatusTopicIDNotFound}},
		{"poll unknown partition", nil, false, "", op2(iggy.CodePollMessages, pollReq(single(1), s0, t0, ptr(uint32(7)), iggy.PollingKindFirst, 0, 1, false)), expect{ch: chStatus, code: iggy.StatusPartitionNotFound}},

		// Consumer offsets.
		{"offset beyond current", nil, false, "", rep(iggy.OperationStoreConsumerOffset, encode(&iggy.StoreConsumerOffsetRequest{Consumer: single(1), StreamID: s0, TopicID: t0, PartitionID: part0, Offset: 3, Ack: iggy.AckLevelQuorum})),
			expect{ch: chStatus, code: iggy.StatusInvalidOffset}},
		{"offset on empty partition", nil, false, "", rep(iggy.OperationStoreConsumerOffset, encode(&iggy.StoreConsumerOffsetRequest{Consumer: single(1), StreamID: s0, TopicID: t0, PartitionID: iggy.OptionalPartition{Present: true, PartitionID: 1}, Offset: 0, Ack: iggy.AckLevelQuorum})),
			expect{ch: chStatus, code: iggy.StatusInvalidOffset}},
		{"offset target unknown", nil, false, "", rep(iggy.OperationStoreConsumerOffset, encode(&iggy.StoreConsumerOffsetRequest{Consumer: single(1), StreamID: numID(9), TopicID: t0, PartitionID: part0, Ack: iggy.AckLevelQuorum})),
			expect{ch: chStatus, code: iggy.StatusResourceNotFound}},
		{"group commit without ownership", nil, false, "", rep(iggy.OperationStoreConsumerOffset, encode(&iggy.StoreConsumerOffsetRequest{Consumer: groupConsumer, StreamID: s0, TopicID: t0, PartitionID: part0, Offset: 1, Ack: iggy.AckLevelQuorum})),
			expect{ch: chStatus, code: iggy.StatusResourceNotFound}},
		{"group commit without partition", nil, false, "", rep(iggy.OperationStoreConsumerOffset, encode(&iggy.StoreConsumerOffsetRequest{Consumer: groupConsumer, StreamID: s0, TopicID: t0, Offset: 1, Ack: iggy.AckLevelQuorum})),
			expect{ch: chStatus, code: iggy.StatusResourceNotFound}},
		{"delete offset nothing stored", nil, false, "", rep(iggy.OperationDeleteConsumerOffset, encode(&iggy.DeleteConsumerOffsetRequest{Consumer: single(42), StreamID: s0, TopicID: t0, PartitionID: part0, Ack: iggy.AckLevelQuorum})),
			expect{ch: chStatus, code: iggy.StatusConsumerOffsetNotFound}},
		{"store offset without partition id", nil, false, "", rep(iggy.OperationStoreConsumerOffset, encode(&iggy.StoreConsumerOffsetRequest{Consumer: single(1), StreamID: s0, TopicID: t0, Offset: 1, Ack: iggy.AckLevelQuorum})),
			expect{ch: chStatus, code: iggy.StatusResourceNotFound}},
		{"store offset unknown partition", nil, false, "", rep(iggy.OperationStoreConsumerOffset, encode(&iggy.StoreConsumerOffsetRequest{Consumer: single(1), StreamID: s0, TopicID: t0, PartitionID: iggy.OptionalPartition{Present: true, PartitionID: 7}, Offset: 1, Ack: iggy.AckLevelQuorum})),
			expect{ch: chStatus, code: iggy.StatusResourceNotFound}},
		{"undecodable store offset", nil, false, "", rep(iggy.OperationStoreConsumerOffset, []byte{1, 1}), expect{ch: chStatus, code: iggy.StatusResourceNotFound}},
		{"undecodable delete offset", nil, false, "", rep(iggy.OperationDeleteConsumerOffset, []byte{1, 1}), expect{ch: chStatus, code: iggy.StatusResourceNotFound}},
		{"undecodable get offset", nil, false, "", op2(iggy.CodeGetConsumerOffset, rawBody{1, 1}), expect{ch: chEmpty}},
		{"get offset unknown topic", nil, false, "", op2(iggy.CodeGetConsumerOffset, &iggy.GetConsumerOffsetRequest{Consumer: single(1), StreamID: s0, TopicID: numID(9), PartitionID: part0}), expect{ch: chEmpty}},
		{"get offset unknown partition", nil, false, "", op2(iggy.CodeGetConsumerOffset, &iggy.GetConsumerOffsetRequest{Consumer: single(1), StreamID: s0, TopicID: t0, PartitionID: iggy.OptionalPartition{Present: true, PartitionID: 7}}),
			expect{ch: chStatus, code: iggy.StatusPartitionNotFound}},
		{"get offset unknown group", nil, false, "", op2(iggy.CodeGetConsumerOffset, &iggy.GetConsumerOffsetRequest{Consumer: iggy.Consumer{Kind: iggy.ConsumerKindConsumerGroup, ID: nameID("nope")}, StreamID: s0, TopicID: t0, PartitionID: part0}), expect{ch: chEmpty}},
		{"get offset nothing stored", nil, false, "", op2(iggy.CodeGetConsumerOffset, &iggy.GetConsumerOffsetRequest{Consumer: single(42), StreamID: s0, TopicID: t0, PartitionID: part0}), expect{ch: chEmpty}},
		// Kind 3 on a 0.11 server: the WireConsumer decoder rejects it, so
		// each command answers its undecodable-body case.
		{"external group on 0.11 (store)", nil, false, "", rep(iggy.OperationStoreConsumerOffset, encode(&iggy.StoreConsumerOffsetRequest{Consumer: external, StreamID: s0, TopicID: t0, PartitionID: part0, Offset: 1, Ack: iggy.AckLevelQuorum})),
			expect{ch: chStatus, code: iggy.StatusResourceNotFound}},
		{"external group on 0.11 (delete)", nil, false, "", rep(iggy.OperationDeleteConsumerOffset, encode(&iggy.DeleteConsumerOffsetRequest{Consumer: external, StreamID: s0, TopicID: t0, PartitionID: part0, Ack: iggy.AckLevelQuorum})),
			expect{ch: chStatus, code: iggy.StatusResourceNotFound}},
		{"external group on 0.11 (get)", nil, false, "", op2(iggy.CodeGetConsumerOffset, &iggy.GetConsumerOffsetRequest{Consumer: external, StreamID: s0, TopicID: t0, PartitionID: part0}),
			expect{ch: chEmpty}},

		// Consumer groups.
		{"join unknown group", nil, false, "", rep(iggy.OperationJoinConsumerGroup, encode(&iggy.JoinConsumerGroupRequest{StreamID: s0, TopicID: t0, GroupID: nameID("nope")})), expect{ch: chResult, code: iggy.StatusConsumerGroupIDNotFound}},
		{"leave as non-member", nil, false, "", rep(iggy.OperationLeaveConsumerGroup, encode(&iggy.LeaveConsumerGroupRequest{StreamID: s0, TopicID: t0, GroupID: nameID("g")})), expect{ch: chResult, code: iggy.StatusConsumerGroupMemberNotFound}},
		{"undecodable join", nil, false, "", rep(iggy.OperationJoinConsumerGroup, []byte{1}), expect{ch: chSilence}},
		{"group exists", nil, false, "", rep(iggy.OperationCreateConsumerGroup, encode(&iggy.CreateConsumerGroupRequest{StreamID: s0, TopicID: t0, Name: "g"})), expect{ch: chResult, code: iggy.StatusConsumerGroupNameAlreadyExists}},
		{"groups of unknown topic", nil, false, "", op2(iggy.CodeGetConsumerGroups, &iggy.GetConsumerGroupsRequest{StreamID: s0, TopicID: numID(9)}), expect{ch: chStatus, code: iggy.StatusTopicIDNotFound}},

		// Permissions of a read-only user.
		{"reader: send", nil, false, "reader", rep(iggy.OperationSendMessages, encode(&iggy.SendMessagesRequest{StreamID: s0, TopicID: t0, Partitioning: toPartition(0), MessagesCount: 1, Batch: batch(t, "x")})),
			expect{ch: chStatus, code: iggy.StatusUnauthorized}},
		// Poll and store offset: a global read_topics grants them
		// (TestFidelity/POLL_MESSAGES_100/global_read_topics_may_poll).
		{"reader: create stream", nil, false, "reader", rep(iggy.OperationCreateStream, encode(&iggy.CreateStreamRequest{Name: "r"})), expect{ch: chResult, code: iggy.StatusUnauthorized}},
		{"reader: stats", nil, false, "reader", op2(iggy.CodeGetStats, nil), expect{ch: chStatus, code: iggy.StatusUnauthorized}},
		{"reader: get topic", nil, false, "reader", op2(iggy.CodeGetTopic, &iggy.GetTopicRequest{StreamID: s0, TopicID: t0}), expect{ch: chOK}},
		// As the real server's find_user: a user reads itself without
		// read_users; another user needs it; an unknown one is empty.
		{"reader: get itself", nil, false, "reader", op2(iggy.CodeGetUser, &iggy.GetUserRequest{UserID: nameID("reader")}), expect{ch: chOK}},
		{"reader: get another user", nil, false, "reader", op2(iggy.CodeGetUser, &iggy.GetUserRequest{UserID: nameID("inactive")}), expect{ch: chStatus, code: iggy.StatusUnauthorized}},
		{"reader: get an unknown user", nil, false, "reader", op2(iggy.CodeGetUser, &iggy.GetUserRequest{UserID: nameID("nobody")}), expect{ch: chEmpty}},

		// Users.
		{"create user exists", nil, false, "", rep(iggy.OperationCreateUser, encode(&iggy.CreateUserRequest{Username: "reader", Password: "secret", Status: iggy.UserStatusActive})), expect{ch: chResult, code: iggy.StatusUserAlreadyExists}},
		{"delete root", nil, false, "", rep(iggy.OperationDeleteUser, encode(&iggy.DeleteUserRequest{UserID: numID(0)})), expect{ch: chResult, code: iggy.StatusCannotDeleteUser}},
		{"root permissions", nil, false, "", rep(iggy.OperationUpdatePermissions, encode(&iggy.UpdatePermissionsRequest{UserID: numID(0)})), expect{ch: chResult, code: iggy.StatusCannotChangePermissions}},
		{"change password wrong current", nil, false, "", rep(iggy.OperationChangePassword, encode(&iggy.ChangePasswordRequest{UserID: nameID("reader"), CurrentPassword: "x", NewPassword: "yyyy"})), expect{ch: chResult, code: iggy.StatusInvalidCredentials}},
		{"user option key", nil, false, "", rep(iggy.OperationCreateUser, encode(&iggy.CreateUserRequest{Username: "other", Password: "secret", Status: iggy.UserStatusActive, Options: iggy.Options{opt("k", iggy.HeaderKindString, []byte("v"))}})),
			expect{ch: chStatus, code: iggy.StatusUnsupportedOptionKey}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fx := &f
			if tc.fx != nil {
				fx = tc.fx
			}
			c := dial(t, fx.s)
			switch {
			case tc.anon:
			case tc.as != "":
				c.login(tc.as, "secret")
			default:
				c.login("iggy", "iggy")
			}
			c.writeRaw(tc.build(c))
			tc.want.check(t, c)
			if tc.want.ch != chEviction && tc.want.ch != chClosed {
				// The connection stays usable.
				h := c.header(iggy.OperationNonReplicated, c.next)
				h.Code = iggy.CodePing
				if r := c.roundTrip(h, nil); r.status() != 0 || r.evicted != nil {
					t.Fatalf("ping after the refusal: %+v", r.hdr)
				}
			}
		})
	}
}

// TestFrameRefusals covers frames the server drops the connection for, and
// non-request commands it ignores.
func TestFrameRefusals(t *testing.T) {
	s := startServer(t, func(c *Config) { c.MaxFrameBytes = 1 << 20 })
	ping := func(c *tclient) []byte {
		h := c.header(iggy.OperationNonReplicated, 1)
		h.Code = iggy.CodePing
		return frame(&h, nil)
	}
	cases := []struct {
		name string
		mut  func(f []byte) []byte
		want channel
	}{
		{"undefined command byte", func(f []byte) []byte { f[iggy.RequestHeaderCommandOffset] = 99; return f }, chClosed},
		{"size below 256", func(f []byte) []byte {
			binary.LittleEndian.PutUint32(f[iggy.RequestHeaderSizeOffset:], 100)
			return f
		}, chClosed},
		{"size above the limit", func(f []byte) []byte {
			binary.LittleEndian.PutUint32(f[iggy.RequestHeaderSizeOffset:], 1<<20+1)
			return f
		}, chClosed},
		{"reply command from a client", func(f []byte) []byte { f[iggy.RequestHeaderCommandOffset] = byte(iggy.HeaderCommandReply); return f }, chSilence},
		{"replica ping command", func(f []byte) []byte { f[iggy.RequestHeaderCommandOffset] = 1; return f }, chSilence},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := dial(t, s)
			c.writeRaw(tc.mut(ping(c)))
			expect{ch: tc.want}.check(t, c)
			if tc.want == chSilence {
				if r := c.roundTrip(iggy.RequestHeader{Client: c.client, Operation: iggy.OperationNonReplicated, Code: iggy.CodePing}, nil); r.status() != 0 {
					t.Fatalf("ping after ignored frame: %+v", r.hdr)
				}
			}
		})
	}
}

// rawBody is a request body given as raw bytes.
type rawBody []byte

func (b rawBody) EncodedSize() int           { return len(b) }
func (b rawBody) AppendTo(dst []byte) []byte { return append(dst, b...) }
