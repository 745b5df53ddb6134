package embedded

// The fidelity table: for every command the sidecar sends, its refusal
// cases as the real Iggy server answers them (apache/iggy at tag
// server-0.9.0-edge.5, protocol 0.11.0, the file and function named in
// each row), checked against the embedded server in its 0.11 mode.
// docs/iggy-fidelity.md is rendered from this table:
//
//	go test ./embedded -run TestFidelityDoc -update
//
// To add rows (another command, another case): append to fidelityRows in
// the command's group; the subtest is TestFidelity/<command>/<case>.

import (
	"bytes"
	"flag"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

var updateFidelity = flag.Bool("update", false, "rewrite docs/iggy-fidelity.md from the fidelity table")

// fidelityDoc is the rendered document, relative to this package.
const fidelityDoc = "../docs/iggy-fidelity.md"

// fidelityRow is one command × case.
type fidelityRow struct {
	cmd     string // command and code, e.g. "GET_CONSUMER_OFFSET 120"
	name    string // the case (the subtest name)
	src     string // where the real server decides it (file: function)
	sidecar string // what the sidecar does with the answer ("" = nothing special)
	as      string // log in as this user (password "secret"); "" root; "-" not logged in
	build   func(f *fidelityFixture, c *tclient) []byte
	want    expect // want.then, when set, checks the outcome after the reply
}

// fidelityThen is a check after a row's reply (on the row's connection);
// says is the document's note on it.
type fidelityThen struct {
	says  string
	check func(t *testing.T, c *tclient)
}

// fidelityFixture is newFixture's server plus a user with no permissions
// ("nobody"), a consumer offset stored for single consumer 5 on t/0, and
// topic "seg" (1) of 1 MiB segments whose partition 0 holds two sealed
// segments [0, 1] and [2, 3] and an empty active one, with consumer 5's
// offset at 1.
type fidelityFixture struct {
	fixture
}

func newFidelityFixture(t *testing.T) *fidelityFixture {
	f := &fidelityFixture{fixture: newFixture(t, nil)}
	c := root(t, f.s)
	c.ok(c.meta(iggy.OperationCreateUser, &iggy.CreateUserRequest{Username: "nobody", Password: "secret", Status: iggy.UserStatusActive}))
	c.ok(c.meta(iggy.OperationStoreConsumerOffset, &iggy.StoreConsumerOffsetRequest{Consumer: single(5), StreamID: numID(0), TopicID: numID(0),
		PartitionID: iggy.OptionalPartition{Present: true}, Offset: 1, Ack: iggy.AckLevelQuorum}))
	c.createTopic(numID(0), "seg", 1, iggy.Options{opt("segment_size", iggy.HeaderKindUint64, u64(1<<20))})
	big := string(make([]byte, 600<<10))
	for range 4 {
		c.send(numID(0), nameID("seg"), 0, big)
	}
	c.ok(storeSeg(c, 1))
	if n := segCount(t, c); n != 3 {
		t.Fatalf("fixture: topic seg has %d segments, want 3", n)
	}
	return f
}

// storeSeg stores consumer 5's offset on seg/0.
func storeSeg(c *tclient, off uint64) reply {
	return c.meta(iggy.OperationStoreConsumerOffset, &iggy.StoreConsumerOffsetRequest{Consumer: single(5), StreamID: numID(0), TopicID: nameID("seg"),
		PartitionID: iggy.OptionalPartition{Present: true}, Offset: off, Ack: iggy.AckLevelQuorum})
}

// segCount is the number of segments of seg/0.
func segCount(t *testing.T, c *tclient) uint32 {
	t.Helper()
	td, _ := c.getTopic(numID(0), nameID("seg"))
	if len(td.Partitions) != 1 {
		t.Fatalf("topic seg: %d partitions", len(td.Partitions))
	}
	return td.Partitions[0].SegmentsCount
}

// firstSeg is the first offset of seg/0.
func firstSeg(c *tclient) uint64 {
	p := c.poll(pollReq(single(9), numID(0), nameID("seg"), ptr(uint32(0)), iggy.PollingKindFirst, 0, 1, false))
	if len(p.offsets) == 0 {
		return math.MaxUint64
	}
	return p.offsets[0]
}

// Request builders for the rows.
func nonRep(code uint32, body []byte) func(*fidelityFixture, *tclient) []byte {
	return func(_ *fidelityFixture, c *tclient) []byte {
		h := c.header(iggy.OperationNonReplicated, c.next)
		h.Code = code
		return frame(&h, body)
	}
}

func replicated(op iggy.Operation, body []byte) func(*fidelityFixture, *tclient) []byte {
	return func(_ *fidelityFixture, c *tclient) []byte {
		h := c.header(op, c.next)
		c.next++
		return frame(&h, body)
	}
}

// withSession sends a replicated request with a made-up session (the
// caller is not logged in).
func withSession(op iggy.Operation, body []byte) func(*fidelityFixture, *tclient) []byte {
	return func(_ *fidelityFixture, c *tclient) []byte {
		h := c.header(op, 1)
		h.Session = 5
		return frame(&h, body)
	}
}

func loginWith(vi iggy.ClientVersionInfo, user, pass string) func(*fidelityFixture, *tclient) []byte {
	return func(_ *fidelityFixture, c *tclient) []byte {
		h := iggy.RequestHeader{Client: c.client, Operation: iggy.OperationRegister}
		return frame(&h, encode(&iggy.LoginRegisterRequest{VersionInfo: vi, Username: user, Password: pass}))
	}
}

const (
	srcDispatch      = "core/server/src/dispatch.rs"
	srcAuthz         = "core/server/src/dispatch/authz.rs"
	srcResponses     = "core/server/src/responses.rs"
	srcPartition     = "core/partitions/src/iggy_partition.rs"
	srcResult        = "core/metadata/src/stm/result.rs"
	srcPermsMessages = "core/metadata/src/permissioner/permissioner_rules/messages.rs"
	srcPermsTopics   = "core/metadata/src/permissioner/permissioner_rules/topics.rs"
	srcPermsStreams  = "core/metadata/src/permissioner/permissioner_rules/streams.rs"
	srcConsumer      = "core/binary_protocol/src/primitives/consumer.rs"
	srcStreamSTM     = "core/metadata/src/stm/stream.rs"
	srcAuthzSTM      = "core/metadata/src/stm/authz.rs"
	srcPermsSegments = "core/metadata/src/permissioner/permissioner_rules/segments.rs"
	srcReconciler    = "core/server/src/partition_reconciler.rs"
)

func fidelityRows(t testing.TB) []fidelityRow {
	s0, t0 := numID(0), numID(0)
	p0 := iggy.OptionalPartition{Present: true}
	p7 := iggy.OptionalPartition{Present: true, PartitionID: 7}
	ext := iggy.Consumer{Kind: iggy.ConsumerKindExternalGroup, ID: nameID("kafka.cg.x")}
	vi := iggy.ClientVersionInfo{ProtocolVersion: uint32(iggy.Protocol011), SdkName: "fidelity", SdkVersion: "1"}
	store := func(c iggy.Consumer, sid, tid iggy.Identifier, p iggy.OptionalPartition, off uint64) []byte {
		return encode(&iggy.StoreConsumerOffsetRequest{Consumer: c, StreamID: sid, TopicID: tid, PartitionID: p, Offset: off, Ack: iggy.AckLevelQuorum})
	}
	del := func(c iggy.Consumer, sid, tid iggy.Identifier, p iggy.OptionalPartition) []byte {
		return encode(&iggy.DeleteConsumerOffsetRequest{Consumer: c, StreamID: sid, TopicID: tid, PartitionID: p, Ack: iggy.AckLevelQuorum})
	}
	get := func(c iggy.Consumer, sid, tid iggy.Identifier, p iggy.OptionalPartition) []byte {
		return encode(&iggy.GetConsumerOffsetRequest{Consumer: c, StreamID: sid, TopicID: tid, PartitionID: p})
	}
	send := func(sid iggy.Identifier, part uint32) []byte {
		return encode(&iggy.SendMessagesRequest{StreamID: sid, TopicID: t0, Partitioning: toPartition(part), MessagesCount: 1, Batch: batch(t, "x")})
	}
	poll := func(c iggy.Consumer, sid, tid iggy.Identifier, part *uint32) []byte {
		return encode(pollReq(c, sid, tid, part, iggy.PollingKindFirst, 0, 1, false))
	}
	status := func(code iggy.Status) expect { return expect{ch: chStatus, code: code} }
	result := func(code iggy.Status) expect { return expect{ch: chResult, code: code} }
	evict := func(r iggy.EvictionReason) expect { return expect{ch: chEviction, reason: r} }
	ok, empty, emptyPoll := expect{ch: chOK}, expect{ch: chEmpty}, expect{ch: chEmptyPoll}

	const (
		loginFn       = srcDispatch + ": handle_login_register_request"
		preAuth       = srcDispatch + ": handle_client_request (pre-auth guard, send_unbound_deny_reply)"
		unbound       = srcDispatch + ": handle_client_request (unbound transport, send_unauthenticated_eviction)"
		preConsensus  = srcDispatch + ": handle_client_request (static bounds, send_pre_consensus_deny)"
		partitionNS   = srcDispatch + ": dispatch_partition_request (resolve_partition_request_namespace in " + srcResponses + ")"
		partitionAuth = srcDispatch + ": dispatch_partition_request (authorize_partition_op)"
		defaultRead   = srcResponses + ": build_non_replicated_response"
		readGate      = srcAuthz + ": authorize_default_read"
		getOffsetFn   = srcDispatch + ": handle_get_consumer_offset"
		pollFn        = srcDispatch + ": handle_poll_messages"
		sidecarEmpty  = "reads as absent (stream/topic unknown)"
	)
	var (
		cmdLogin     = cmdLabel(iggy.CodeLoginRegister)
		cmdPing      = cmdLabel(iggy.CodePing)
		cmdCluster   = cmdLabel(iggy.CodeGetClusterMetadata)
		cmdGetStream = cmdLabel(iggy.CodeGetStream)
		cmdCrStream  = cmdLabel(iggy.CodeCreateStream)
		cmdGetTopic  = cmdLabel(iggy.CodeGetTopic)
		cmdGetTopics = cmdLabel(iggy.CodeGetTopics)
		cmdCrTopic   = cmdLabel(iggy.CodeCreateTopic)
		cmdDelTopic  = cmdLabel(iggy.CodeDeleteTopic)
		cmdUpdTopic  = cmdLabel(iggy.CodeUpdateTopic)
		cmdCrParts   = cmdLabel(iggy.CodeCreatePartitions)
		cmdSend      = cmdLabel(iggy.CodeSendMessages)
		cmdPoll      = cmdLabel(iggy.CodePollMessages)
		cmdGetOffset = cmdLabel(iggy.CodeGetConsumerOffset)
		cmdStore     = cmdLabel(iggy.CodeStoreConsumerOffset)
		cmdDelOffset = cmdLabel(iggy.CodeDeleteConsumerOffset)
		cmdGetGroup  = cmdLabel(iggy.CodeGetConsumerGroup)
		cmdCrGroup   = cmdLabel(iggy.CodeCreateConsumerGroup)
		cmdDelGroup  = cmdLabel(iggy.CodeDeleteConsumerGroup)
		cmdDelSegs   = cmdLabel(iggy.CodeDeleteSegments)
	)
	delSegs := func(sid, tid iggy.Identifier, part, count uint32) []byte {
		return encode(&iggy.DeleteSegmentsRequest{StreamID: sid, TopicID: tid, PartitionID: part, SegmentsCount: count})
	}
	segID := nameID("seg")
	truncOK := expect{ch: chOK, op: iggy.OperationTruncatePartition}
	thenCheck := func(e expect, says string, check func(t *testing.T, c *tclient)) expect {
		e.then = &fidelityThen{says: says, check: check}
		return e
	}
	truncErr := func(code iggy.Status) expect {
		return expect{ch: chResult, code: code, op: iggy.OperationTruncatePartition}
	}
	const (
		delSegsFn     = srcDispatch + ": handle_delete_segments_request (l. 3152)"
		delSegsResolv = srcDispatch + ": resolve_delete_segments_truncate (l. 3284)"
		truncApply    = srcStreamSTM + ": TruncatePartitionRequest::apply (l. 679)"
		sidecarLogged = "logged; the log start offset holds, the segments stay"
	)
	return []fidelityRow{
		// Login and session.
		{cmdLogin, "protocol 0.10", loginFn, "login fails for good (Start returns)", "-",
			loginWith(iggy.ClientVersionInfo{ProtocolVersion: uint32(iggy.PackVersion(0, 10, 0)), SdkName: "a", SdkVersion: "b"}, "iggy", "iggy"),
			evict(iggy.EvictionReasonIncompatibleProtocol)},
		{cmdLogin, "wrong password", loginFn, "login fails for good", "-", loginWith(vi, "iggy", "wrong"), evict(iggy.EvictionReasonInvalidCredentials)},
		{cmdLogin, "unknown user", loginFn, "login fails for good", "-", loginWith(vi, "nobody-here", "secret"), evict(iggy.EvictionReasonInvalidCredentials)},
		{cmdLogin, "malformed body", loginFn, "", "-", func(_ *fidelityFixture, c *tclient) []byte {
			h := iggy.RequestHeader{Client: c.client, Operation: iggy.OperationRegister}
			return frame(&h, []byte{1, 2, 3})
		}, evict(iggy.EvictionReasonMalformedLogin)},
		{cmdPing, "unbound", srcDispatch + ": handle_client_request (PING is the only pre-auth code)", "", "-", nonRep(iggy.CodePing, nil), empty},
		{cmdCluster, "unbound", preAuth, "", "-", nonRep(iggy.CodeGetClusterMetadata, nil), status(iggy.StatusUnauthenticated)},
		{cmdCluster, "logged in", srcResponses + ": build_cluster_metadata_response", "cluster id from the name", "", nonRep(iggy.CodeGetClusterMetadata, nil), ok},
		{cmdSend, "unbound (session 5)", unbound, "session dropped, logs in again", "-", withSession(iggy.OperationSendMessages, send(s0, 0)), evict(iggy.EvictionReasonNoSession)},
		{cmdCrTopic, "unbound (session 5)", unbound, "session dropped, logs in again", "-",
			withSession(iggy.OperationCreateTopic, encode(&iggy.CreateTopicRequest{StreamID: s0, PartitionsCount: 1, Name: "n"})), evict(iggy.EvictionReasonNoSession)},

		// Streams.
		{cmdGetStream, "unknown stream", srcResponses + ": build_get_stream_response", sidecarEmpty, "", nonRep(iggy.CodeGetStream, encode(&iggy.GetStreamRequest{StreamID: nameID("nope")})), empty},
		{cmdGetStream, "no permission", readGate + " (Permissioner::get_stream, " + srcPermsStreams + ")", "", "nobody", nonRep(iggy.CodeGetStream, encode(&iggy.GetStreamRequest{StreamID: s0})), status(iggy.StatusUnauthorized)},
		{cmdGetStream, "undecodable body", defaultRead, "", "", nonRep(iggy.CodeGetStream, []byte{9}), status(iggy.StatusInvalidCommand)},
		{cmdCrStream, "name exists", srcResult + ": CreateStreamResult", "counts as created", "", replicated(iggy.OperationCreateStream, encode(&iggy.CreateStreamRequest{Name: "s"})), result(iggy.StatusStreamNameAlreadyExists)},
		{cmdCrStream, "no permission", srcPermsStreams + ": create_stream (in-apply gate)", "", "reader", replicated(iggy.OperationCreateStream, encode(&iggy.CreateStreamRequest{Name: "r"})), result(iggy.StatusUnauthorized)},
		{cmdCrStream, "undecodable body", preConsensus, "", "", replicated(iggy.OperationCreateStream, []byte{0}), status(iggy.StatusInvalidCommand)},

		// Topics.
		{cmdGetTopic, "unknown topic", srcResponses + ": build_get_topic_response", sidecarEmpty, "", nonRep(iggy.CodeGetTopic, encode(&iggy.GetTopicRequest{StreamID: s0, TopicID: nameID("nope")})), empty},
		{cmdGetTopic, "unknown stream", srcResponses + ": build_get_topic_response", sidecarEmpty, "", nonRep(iggy.CodeGetTopic, encode(&iggy.GetTopicRequest{StreamID: nameID("nope"), TopicID: t0})), empty},
		{cmdGetTopic, "no permission", readGate + " (Permissioner::get_topic, " + srcPermsTopics + ")", "", "nobody", nonRep(iggy.CodeGetTopic, encode(&iggy.GetTopicRequest{StreamID: s0, TopicID: t0})), status(iggy.StatusUnauthorized)},
		{cmdGetTopic, "undecodable body", defaultRead, "", "", nonRep(iggy.CodeGetTopic, []byte{9}), status(iggy.StatusInvalidCommand)},
		{cmdGetTopics, "unknown stream (a list of 0 topics)", srcResponses + ": build_get_topics_response (lists as empty)", "no topics", "", nonRep(iggy.CodeGetTopics, encode(&iggy.GetTopicsRequest{StreamID: nameID("nope")})), ok},
		{cmdGetTopics, "no permission", readGate + " (Permissioner::get_topics)", "", "nobody", nonRep(iggy.CodeGetTopics, encode(&iggy.GetTopicsRequest{StreamID: s0})), status(iggy.StatusUnauthorized)},
		{cmdCrTopic, "unknown stream", srcResult + ": CreateTopicResult", "stream created, topic tried once more", "", replicated(iggy.OperationCreateTopic, encode(&iggy.CreateTopicRequest{StreamID: nameID("nope"), PartitionsCount: 1, Name: "n"})), result(iggy.StatusStreamIDNotFound)},
		{cmdCrTopic, "name exists", srcResult + ": CreateTopicResult", "TOPIC_ALREADY_EXISTS", "", replicated(iggy.OperationCreateTopic, encode(&iggy.CreateTopicRequest{StreamID: s0, PartitionsCount: 1, Name: "t"})), result(iggy.StatusTopicNameAlreadyExists)},
		{cmdCrTopic, "1001 partitions", preConsensus + " (validate_topic_bounds)", "INVALID_PARTITIONS before any call", "", replicated(iggy.OperationCreateTopic, encode(&iggy.CreateTopicRequest{StreamID: s0, PartitionsCount: 1001, Name: "n"})), status(iggy.StatusTooManyPartitions)},
		{cmdCrTopic, "unknown option key", preConsensus + " (TopicCreateOptions::parse)", "", "", replicated(iggy.OperationCreateTopic, encode(&iggy.CreateTopicRequest{StreamID: s0, PartitionsCount: 1, Name: "n", Options: iggy.Options{opt("replication_factor", iggy.HeaderKindUint8, []byte{1})}})), status(iggy.StatusUnsupportedOptionKey)},
		{cmdCrTopic, "no permission", srcPermsTopics + ": create_topic (in-apply gate)", "TOPIC_AUTHORIZATION_FAILED", "reader", replicated(iggy.OperationCreateTopic, encode(&iggy.CreateTopicRequest{StreamID: s0, PartitionsCount: 1, Name: "n"})), result(iggy.StatusUnauthorized)},
		{cmdDelTopic, "unknown topic", srcResult + ": DeleteTopicResult", "UNKNOWN_TOPIC_OR_PARTITION", "", replicated(iggy.OperationDeleteTopic, encode(&iggy.DeleteTopicRequest{StreamID: s0, TopicID: nameID("nope")})), result(iggy.StatusTopicIDNotFound)},
		{cmdDelTopic, "unknown stream", srcResult + ": DeleteTopicResult", "UNKNOWN_TOPIC_OR_PARTITION", "", replicated(iggy.OperationDeleteTopic, encode(&iggy.DeleteTopicRequest{StreamID: nameID("nope"), TopicID: t0})), result(iggy.StatusStreamIDNotFound)},
		{cmdDelTopic, "no permission", srcPermsTopics + ": delete_topic (in-apply gate)", "TOPIC_AUTHORIZATION_FAILED", "reader", replicated(iggy.OperationDeleteTopic, encode(&iggy.DeleteTopicRequest{StreamID: s0, TopicID: t0})), result(iggy.StatusUnauthorized)},
		{cmdUpdTopic, "unknown topic", srcResult + ": UpdateTopicResult", "", "", replicated(iggy.OperationUpdateTopic, encode(&iggy.UpdateTopicRequest{StreamID: s0, TopicID: nameID("nope"), Name: "nope"})), result(iggy.StatusTopicIDNotFound)},
		{cmdUpdTopic, "create-only option key", preConsensus + " (validate_option_keys)", "", "", replicated(iggy.OperationUpdateTopic, encode(&iggy.UpdateTopicRequest{StreamID: s0, TopicID: t0, Name: "t", Options: iggy.Options{opt("segment_size", iggy.HeaderKindUint64, u64(1<<20))}})), status(iggy.StatusUnsupportedOptionKey)},
		{cmdCrParts, "unknown topic", srcResult + ": CreatePartitionsResult", "UNKNOWN_TOPIC_OR_PARTITION", "", replicated(iggy.OperationCreatePartitions, encode(&iggy.CreatePartitionsRequest{StreamID: s0, TopicID: nameID("nope"), PartitionsCount: 1})), result(iggy.StatusTopicIDNotFound)},
		{cmdCrParts, "no permission", srcPermsTopics + ": manage_topic (in-apply gate)", "TOPIC_AUTHORIZATION_FAILED", "reader", replicated(iggy.OperationCreatePartitions, encode(&iggy.CreatePartitionsRequest{StreamID: s0, TopicID: t0, PartitionsCount: 1})), result(iggy.StatusUnauthorized)},
		{cmdCrParts, "count 0", preConsensus + " (validate_partitions_change_count)", "", "", replicated(iggy.OperationCreatePartitions, append(encode(&iggy.CreatePartitionsRequest{StreamID: s0, TopicID: t0, PartitionsCount: 1})[:12], 0, 0, 0, 0)), status(iggy.StatusTooManyPartitions)},

		// Messages.
		{cmdSend, "unknown stream", partitionNS, "UNKNOWN_TOPIC_OR_PARTITION, topic cache dropped", "", replicated(iggy.OperationSendMessages, send(nameID("nope"), 0)), status(iggy.StatusResourceNotFound)},
		{cmdSend, "unknown partition", partitionNS, "UNKNOWN_TOPIC_OR_PARTITION", "", replicated(iggy.OperationSendMessages, send(s0, 7)), status(iggy.StatusResourceNotFound)},
		{cmdSend, "no permission", partitionAuth + " (Permissioner::append_messages, " + srcPermsMessages + ")", "TOPIC_AUTHORIZATION_FAILED", "reader", replicated(iggy.OperationSendMessages, send(s0, 0)), status(iggy.StatusUnauthorized)},
		{cmdSend, "bad message checksum", srcPartition + ": on_request (conversion fails, dropped)", "the request times out (never sent by the sidecar)", "", replicated(iggy.OperationSendMessages, corrupt(t, s0, func(b []byte) []byte { b[iggy.BatchHeaderSize+iggy.MessageHeaderSize] ^= 1; return b })), expect{ch: chSilence}},
		{cmdPoll, "unknown stream", pollFn, "UNKNOWN_TOPIC_OR_PARTITION", "", nonRep(iggy.CodePollMessages, poll(single(1), nameID("nope"), t0, nil)), status(iggy.StatusStreamIDNotFound)},
		{cmdPoll, "unknown topic", pollFn, "UNKNOWN_TOPIC_OR_PARTITION", "", nonRep(iggy.CodePollMessages, poll(single(1), s0, nameID("nope"), nil)), status(iggy.StatusTopicIDNotFound)},
		{cmdPoll, "unknown partition", pollFn, "UNKNOWN_TOPIC_OR_PARTITION", "", nonRep(iggy.CodePollMessages, poll(single(1), s0, t0, ptr(uint32(7)))), status(iggy.StatusPartitionNotFound)},
		{cmdPoll, "no permission", pollFn + " (authorize_partition_read, Permissioner::poll_messages)", "TOPIC_AUTHORIZATION_FAILED", "nobody", nonRep(iggy.CodePollMessages, poll(single(1), s0, t0, nil)), status(iggy.StatusUnauthorized)},
		{cmdPoll, "global read_topics may poll", srcPermsMessages + ": poll_messages", "", "reader", nonRep(iggy.CodePollMessages, poll(single(1), s0, t0, nil)), ok},
		{cmdPoll, "undecodable body", pollFn, "", "", nonRep(iggy.CodePollMessages, []byte{1, 2}), emptyPoll},
		{cmdPoll, "consumer kind 3", pollFn + " (WireConsumer decode, " + srcConsumer + ")", "never sent", "", nonRep(iggy.CodePollMessages, poll(ext, s0, t0, ptr(uint32(0)))), emptyPoll},
		{cmdPoll, "group without partition", pollFn + " (resolve_poll_request: InvalidIdentifier)", "", "", nonRep(iggy.CodePollMessages, poll(iggy.Consumer{Kind: iggy.ConsumerKindConsumerGroup, ID: nameID("g")}, s0, t0, nil)), emptyPoll},
		{cmdPoll, "at the tail during sends", srcPartition + ": build_poll_plan (one commit_offset load: the read's ceiling and the reply's current_offset)",
			"an empty fetch, not OFFSET_OUT_OF_RANGE", "", nil, expect{ch: chSnapshot}},

		// Consumer offsets.
		{cmdGetOffset, "stored", getOffsetFn, "the committed offset", "", nonRep(iggy.CodeGetConsumerOffset, get(single(5), s0, t0, p0)), ok},
		{cmdGetOffset, "nothing stored", getOffsetFn, "-1", "", nonRep(iggy.CodeGetConsumerOffset, get(single(42), s0, t0, p0)), empty},
		{cmdGetOffset, "unknown topic", getOffsetFn + " (resolve_consumer_offset_request)", "-1", "", nonRep(iggy.CodeGetConsumerOffset, get(single(5), s0, nameID("nope"), p0)), empty},
		{cmdGetOffset, "unknown partition", getOffsetFn + " (PartitionNotFound denied typed)", "-1", "", nonRep(iggy.CodeGetConsumerOffset, get(single(5), s0, t0, p7)), status(iggy.StatusPartitionNotFound)},
		{cmdGetOffset, "unknown group", getOffsetFn + " (resolve_consumer_group_id: InvalidIdentifier)", "", "", nonRep(iggy.CodeGetConsumerOffset, get(iggy.Consumer{Kind: iggy.ConsumerKindConsumerGroup, ID: nameID("nope")}, s0, t0, p0)), empty},
		{cmdGetOffset, "consumer kind 3", getOffsetFn + " (undecodable: WireConsumer, " + srcConsumer + ")", "not sent on 0.11 (offsets.mode auto picks consumer)", "", nonRep(iggy.CodeGetConsumerOffset, get(ext, s0, t0, p0)), empty},
		{cmdGetOffset, "undecodable body", getOffsetFn, "", "", nonRep(iggy.CodeGetConsumerOffset, []byte{1, 1}), empty},
		{cmdGetOffset, "no permission", getOffsetFn + " (authorize_partition_read, Permissioner::get_consumer_offset)", "GROUP_AUTHORIZATION_FAILED", "nobody", nonRep(iggy.CodeGetConsumerOffset, get(single(5), s0, t0, p0)), status(iggy.StatusUnauthorized)},
		{cmdStore, "beyond the current offset", srcPartition + ": on_request (out-of-range store denied)", "kept in the beyond log (committed_offsets), answered NONE", "", replicated(iggy.OperationStoreConsumerOffset, store(single(1), s0, t0, p0, 3)), status(iggy.StatusInvalidOffset)},
		{cmdStore, "empty partition", srcPartition + ": on_request (out-of-range store denied)", "kept in the beyond log (committed_offsets), answered NONE", "", replicated(iggy.OperationStoreConsumerOffset, store(single(1), s0, t0, iggy.OptionalPartition{Present: true, PartitionID: 1}, 0)), status(iggy.StatusInvalidOffset)},
		{cmdStore, "unknown topic", partitionNS, "UNKNOWN_TOPIC_OR_PARTITION", "", replicated(iggy.OperationStoreConsumerOffset, store(single(1), s0, nameID("nope"), p0, 0)), status(iggy.StatusResourceNotFound)},
		{cmdStore, "unknown partition", partitionNS, "UNKNOWN_TOPIC_OR_PARTITION", "", replicated(iggy.OperationStoreConsumerOffset, store(single(1), s0, t0, p7, 0)), status(iggy.StatusResourceNotFound)},
		{cmdStore, "no partition id", partitionNS + " (partition_id required)", "never sent", "", replicated(iggy.OperationStoreConsumerOffset, store(single(1), s0, t0, iggy.OptionalPartition{}, 0)), status(iggy.StatusResourceNotFound)},
		{cmdStore, "consumer kind 3", partitionNS + " (undecodable: WireConsumer, " + srcConsumer + ")", "pinned external-group: UNKNOWN_SERVER_ERROR, one log line naming offsets.mode", "", replicated(iggy.OperationStoreConsumerOffset, store(ext, s0, t0, p0, 1)), status(iggy.StatusResourceNotFound)},
		{cmdStore, "undecodable body", partitionNS, "", "", replicated(iggy.OperationStoreConsumerOffset, []byte{1, 1}), status(iggy.StatusResourceNotFound)},
		{cmdStore, "group member not owning the partition", partitionNS + " (fence_group_offset)", "not sent (kind 1 only)", "", replicated(iggy.OperationStoreConsumerOffset, store(iggy.Consumer{Kind: iggy.ConsumerKindConsumerGroup, ID: nameID("g")}, s0, t0, p0, 1)), status(iggy.StatusResourceNotFound)},
		{cmdStore, "no permission", partitionAuth + " (Permissioner::store_consumer_offset)", "GROUP_AUTHORIZATION_FAILED", "nobody", replicated(iggy.OperationStoreConsumerOffset, store(single(1), s0, t0, p0, 0)), status(iggy.StatusUnauthorized)},
		{cmdStore, "global read_topics may store", srcPermsMessages + ": poll_messages (store_consumer_offset inherits it)", "", "reader", replicated(iggy.OperationStoreConsumerOffset, store(single(1), s0, t0, p0, 0)), ok},
		{cmdDelOffset, "stored", srcPartition + ": on_request", "", "", replicated(iggy.OperationDeleteConsumerOffset, del(single(5), s0, t0, p0)), ok},
		{cmdDelOffset, "nothing stored", srcPartition + ": on_request (ensure_consumer_offset_exists; logs \"rejecting delete_consumer_offset for missing offset\")", "counts as deleted; the zero marker is deleted only when stored", "", replicated(iggy.OperationDeleteConsumerOffset, del(single(42), s0, t0, p0)), status(iggy.StatusConsumerOffsetNotFound)},
		{cmdDelOffset, "unknown topic", partitionNS, "", "", replicated(iggy.OperationDeleteConsumerOffset, del(single(1), s0, nameID("nope"), p0)), status(iggy.StatusResourceNotFound)},
		{cmdDelOffset, "consumer kind 3", partitionNS + " (undecodable: WireConsumer)", "pinned external-group: UNKNOWN_SERVER_ERROR", "", replicated(iggy.OperationDeleteConsumerOffset, del(ext, s0, t0, p0)), status(iggy.StatusResourceNotFound)},
		{cmdDelOffset, "no permission", partitionAuth + " (Permissioner::delete_consumer_offset)", "GROUP_AUTHORIZATION_FAILED", "nobody", replicated(iggy.OperationDeleteConsumerOffset, del(single(5), s0, t0, p0)), status(iggy.StatusUnauthorized)},
		{cmdDelOffset, "undecodable body", partitionNS, "", "", replicated(iggy.OperationDeleteConsumerOffset, []byte{1, 1}), status(iggy.StatusResourceNotFound)},

		// Consumer groups (offsets.mode external-group only).
		{cmdGetGroup, "unknown group", srcResponses + ": build_consumer_group_response", "the group is created", "", nonRep(iggy.CodeGetConsumerGroup, encode(&iggy.GetConsumerGroupRequest{StreamID: s0, TopicID: t0, GroupID: nameID("nope")})), empty},
		{cmdGetGroup, "unknown topic", srcResponses + ": ensure_topic_exists", "", "", nonRep(iggy.CodeGetConsumerGroup, encode(&iggy.GetConsumerGroupRequest{StreamID: s0, TopicID: nameID("nope"), GroupID: nameID("g")})), status(iggy.StatusTopicIDNotFound)},
		{cmdGetGroup, "unknown stream", srcResponses + ": ensure_topic_exists", "", "", nonRep(iggy.CodeGetConsumerGroup, encode(&iggy.GetConsumerGroupRequest{StreamID: nameID("nope"), TopicID: t0, GroupID: nameID("g")})), status(iggy.StatusStreamIDNotFound)},
		{cmdGetGroup, "no permission", readGate + " (Permissioner::get_consumer_group)", "", "nobody", nonRep(iggy.CodeGetConsumerGroup, encode(&iggy.GetConsumerGroupRequest{StreamID: s0, TopicID: t0, GroupID: nameID("g")})), status(iggy.StatusUnauthorized)},
		{cmdCrGroup, "name exists", srcResult + ": CreateConsumerGroupResult", "counts as created", "", replicated(iggy.OperationCreateConsumerGroup, encode(&iggy.CreateConsumerGroupRequest{StreamID: s0, TopicID: t0, Name: "g"})), result(iggy.StatusConsumerGroupNameAlreadyExists)},
		{cmdCrGroup, "unknown topic", srcResult + ": CreateConsumerGroupResult", "", "", replicated(iggy.OperationCreateConsumerGroup, encode(&iggy.CreateConsumerGroupRequest{StreamID: s0, TopicID: nameID("nope"), Name: "g"})), result(iggy.StatusTopicIDNotFound)},
		{cmdCrGroup, "unknown stream", srcResult + ": CreateConsumerGroupResult", "", "", replicated(iggy.OperationCreateConsumerGroup, encode(&iggy.CreateConsumerGroupRequest{StreamID: nameID("nope"), TopicID: t0, Name: "g"})), result(iggy.StatusStreamIDNotFound)},
		{cmdDelGroup, "unknown group", srcResult + ": DeleteConsumerGroupResult", "counts as deleted", "", replicated(iggy.OperationDeleteConsumerGroup, encode(&iggy.DeleteConsumerGroupRequest{StreamID: s0, TopicID: t0, GroupID: nameID("nope")})), result(iggy.StatusConsumerGroupIDNotFound)},
		{cmdDelGroup, "unknown topic", srcResult + ": DeleteConsumerGroupResult", "", "", replicated(iggy.OperationDeleteConsumerGroup, encode(&iggy.DeleteConsumerGroupRequest{StreamID: s0, TopicID: nameID("nope"), GroupID: nameID("g")})), result(iggy.StatusTopicIDNotFound)},

		// Segments (DeleteRecords' DELETE_SEGMENTS: all sealed segments of a
		// partition below its kafka.log-start consumer offset). The reply
		// operation is part of the answer: 68 TruncatePartition
		// (result-framed) or 138 DeleteSegments.
		{cmdDelSegs, "undecodable body", delSegsResolv + " (decode_from fails) and " + delSegsFn + " (Err → build_empty_reply, l. 3256; nothing committed)",
			"never sent", "", replicated(iggy.OperationDeleteSegments, []byte{1, 4}), expect{ch: chEmpty, op: iggy.OperationDeleteSegments}},
		{cmdDelSegs, "unknown stream", delSegsResolv + " (unresolved: TruncatePartition with the raw ids, l. 3311) → " + truncApply + "; " + srcResult + ": TruncatePartitionResult",
			sidecarLogged, "", replicated(iggy.OperationDeleteSegments, delSegs(nameID("nope"), t0, 0, 1)), truncErr(iggy.StatusStreamIDNotFound)},
		{cmdDelSegs, "unknown topic", delSegsResolv + " (l. 3311) → " + truncApply,
			sidecarLogged, "", replicated(iggy.OperationDeleteSegments, delSegs(s0, nameID("nope"), 0, 1)), truncErr(iggy.StatusTopicIDNotFound)},
		{cmdDelSegs, "unknown partition", delSegsResolv + " (l. 3311) → " + truncApply,
			sidecarLogged, "", replicated(iggy.OperationDeleteSegments, delSegs(s0, t0, 7, 1)), truncErr(iggy.StatusPartitionNotFound)},
		{cmdDelSegs, "no permission", srcAuthzSTM + ": authorize (TruncatePartition, l. 244; after the stream/topic resolve, before the partition) → " + srcPermsSegments + ": delete_segments → manage_topic",
			sidecarLogged, "reader", replicated(iggy.OperationDeleteSegments, delSegs(s0, t0, 7, 1)), truncErr(iggy.StatusUnauthorized)},
		{cmdDelSegs, "nothing sealed", delSegsResolv + " (no sealed segment: TruncatePartition(0), l. 3358) → " + truncApply,
			"", "", replicated(iggy.OperationDeleteSegments, delSegs(s0, t0, 0, math.MaxUint32)), truncOK},
		{cmdDelSegs, "count 0", srcPartition + ": nth_oldest_sealed_end (count 0: None, l. 4980) → TruncatePartition(0)",
			"never sent", "", replicated(iggy.OperationDeleteSegments, delSegs(numID(0), segID, 0, 0)),
			thenCheck(truncOK, "nothing deleted", func(t *testing.T, c *tclient) {
				if n := segCount(t, c); n != 3 {
					t.Fatalf("%d segments left, want 3", n)
				}
			})},
		{cmdDelSegs, "sealed below a consumer offset", delSegsResolv + " (watermark: the count-th oldest sealed segment's end) → " + truncApply +
			" (deleted_up_to_offset, monotonic); " + srcReconciler + ": reconcile_segment_truncations → " + srcPartition +
			": remove_sealed_segments_up_to (l. 3852; sealed, end ≤ watermark, end ≤ min_committed_offset)",
			"the segments wholly below the log start offset go", "", replicated(iggy.OperationDeleteSegments, delSegs(numID(0), segID, 0, math.MaxUint32)),
			thenCheck(truncOK, "[0, 1] deleted, [2, 3] held back by consumer 5 at 1 until its offset reaches 3 (the watermark stays; the real reconciler re-tries every pass)", func(t *testing.T, c *tclient) {
				if n, f := segCount(t, c), firstSeg(c); n != 2 || f != 2 {
					t.Fatalf("%d segments, first offset %d; want 2 segments from offset 2", n, f)
				}
				c.ok(storeSeg(c, 2))
				if n := segCount(t, c); n != 2 {
					t.Fatalf("deleted past the consumer offset: %d segments", n)
				}
				c.ok(storeSeg(c, 3))
				if n := segCount(t, c); n != 1 {
					t.Fatalf("released segment kept: %d segments", n)
				}
			})},
	}
}

// cmdLabel names a command as "NAME code", e.g. "GET_CONSUMER_OFFSET 120".
func cmdLabel(code uint32) string {
	m, ok := iggy.LookupCommand(code)
	if !ok {
		panic(fmt.Sprintf("no command %d", code))
	}
	return fmt.Sprintf("%s %d", strings.ToUpper(m.Name), code)
}

// subtestName is the name go test gives a subtest.
func subtestName(s string) string { return strings.ReplaceAll(s, " ", "_") }

func TestFidelity(t *testing.T) {
	f := newFidelityFixture(t)
	for _, row := range fidelityRows(t) {
		t.Run(row.cmd+"/"+row.name, func(t *testing.T) {
			if row.want.ch == chSnapshot {
				pollSnapshotRace(t, 20000) // its own server: the fixture's partitions stay as they are
				return
			}
			c := dial(t, f.s)
			switch row.as {
			case "-":
			case "":
				c.login("iggy", "iggy")
			default:
				c.login(row.as, "secret")
			}
			c.writeRaw(row.build(f, c))
			row.want.check(t, c)
			if th := row.want.then; th != nil {
				th.check(t, c)
			}
		})
	}
}

// answer describes an expected reply for the document.
func (e expect) answer() string {
	a := e.channelAnswer()
	if e.op != 0 {
		a += fmt.Sprintf(", reply operation %d %s", uint8(e.op), e.op)
	}
	if e.then != nil {
		a += "; then " + e.then.says
	}
	return a
}

func (e expect) channelAnswer() string {
	switch e.ch {
	case chOK:
		return "status 0 with the reply body"
	case chEmpty:
		return "status 0, empty body"
	case chEmptyPoll:
		return "status 0, empty poll body (16 bytes: partition 0, offset 0, count 0)"
	case chStatus:
		return fmt.Sprintf("deny: status %d %s, empty body", uint32(e.code), e.code.Name())
	case chResult:
		return fmt.Sprintf("status 0, result %d %s", uint32(e.code), e.code.Name())
	case chEviction:
		return fmt.Sprintf("eviction, reason %d %s", uint8(e.reason), e.reason)
	case chSilence:
		return "no reply"
	case chClosed:
		return "connection closed"
	case chSnapshot:
		return "one snapshot: messages from the polled offset up to the reported current_offset, or none with a current_offset below the polled offset"
	}
	return "?"
}

const (
	fidelityBegin = "<!-- BEGIN FIDELITY TABLE (go test ./embedded -run TestFidelityDoc -update) -->"
	fidelityEnd   = "<!-- END FIDELITY TABLE -->"
)

// renderFidelity renders the table rows of docs/iggy-fidelity.md.
func renderFidelity(rows []fidelityRow) string {
	var b strings.Builder
	b.WriteString("| Command | Case | Real server: answer | Real server: where | Embedded (0.11) | Sidecar | Test |\n")
	b.WriteString("| --- | --- | --- | --- | --- | --- | --- |\n")
	for _, r := range rows {
		sidecar := r.sidecar
		if sidecar == "" {
			sidecar = "-"
		}
		who := ""
		switch r.as {
		case "-":
		case "", "iggy":
		default:
			who = " (as " + r.as + ")"
		}
		fmt.Fprintf(&b, "| %s | %s%s | %s | `%s` | same | %s | `TestFidelity/%s/%s` |\n",
			r.cmd, r.name, who, r.want.answer(), r.src, sidecar, subtestName(r.cmd), subtestName(r.name))
	}
	return b.String()
}

// TestFidelityDoc keeps docs/iggy-fidelity.md's table equal to the rows.
func TestFidelityDoc(t *testing.T) {
	doc, err := os.ReadFile(fidelityDoc)
	if err != nil {
		t.Fatal(err)
	}
	begin, end := bytes.Index(doc, []byte(fidelityBegin)), bytes.Index(doc, []byte(fidelityEnd))
	if begin < 0 || end < begin {
		t.Fatalf("%s lacks the %q / %q markers", fidelityDoc, fidelityBegin, fidelityEnd)
	}
	want := fidelityBegin + "\n" + renderFidelity(fidelityRows(t)) + fidelityEnd
	got := string(doc[begin : end+len(fidelityEnd)])
	if got == want {
		return
	}
	if !*updateFidelity {
		t.Fatalf("%s is out of date: go test ./embedded -run TestFidelityDoc -update", fidelityDoc)
	}
	out := append(append(append([]byte{}, doc[:begin]...), want...), doc[end+len(fidelityEnd):]...)
	if err := os.WriteFile(fidelityDoc, out, 0o644); err != nil {
		t.Fatal(err)
	}
}
