package bridge_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

// Committed offsets end to end (KAFKA-ON-IGGY §6): the embedded server
// with kind 3 off (a 0.11 server: the auto mode falls back to single
// consumers) and on (ExternalGroup), checked through Kafka clients and
// through a plain Iggy client.

// offsetsStack starts a stack with kind 3 on or off and offsets.mode mode.
// The embedded server announces protocol 0.11 either way, so auto there
// picks consumer: with kind 3 on, mode auto is pinned to external-group
// (the mode a server with kind 3 in its generation gets from auto). The
// server is pinned to protocol 0.11 also when KAFKA_IGGY_TEST_IGGY_PROTOCOL
// says otherwise: these tests are about a 0.11 server's answers.
func offsetsStack(t *testing.T, kind3 bool, mode string, mods ...func(*stackOpts)) *stack {
	t.Helper()
	if kind3 && mode == "auto" {
		mode = "external-group"
	}
	return startStack(t, append([]func(*stackOpts){func(o *stackOpts) {
		o.embedded.Protocol = "0.11"
		o.embedded.ExternalGroups = kind3
		o.bridge.Offsets.Mode = mode
		o.bridge.Groups.InitialRebalanceDelay = 50 * time.Millisecond
		o.bridge.Groups.MinSessionTimeout = time.Second
	}}, mods...)...)
}

func offCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// offTopic creates a topic with partitions partitions and produces
// records[p] records to partition p.
func offTopic(t *testing.T, s *stack, name string, partitions int32, records map[int32]int) {
	t.Helper()
	ctx := offCtx(t)
	cl := s.kgoClient(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, 1, nil, name)
	if err != nil || resp.Err != nil {
		t.Fatalf("create topic %s: %v %v", name, err, resp.Err)
	}
	var rs []*kgo.Record
	for p, n := range records {
		for i := 0; i < n; i++ {
			rs = append(rs, &kgo.Record{Topic: name, Partition: p, Value: []byte(fmt.Sprintf("p%d-%d", p, i))})
		}
	}
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// iggyStored reads a group's stored value through the plain Iggy client.
func iggyStored(t *testing.T, s *stack, kind icodec.ConsumerKind, group, topic string, partition uint32) (uint64, bool) {
	t.Helper()
	c := icodec.Consumer{Kind: kind, ID: icodec.Identifier{Kind: icodec.IdentifierKindString, Value: []byte("kafka.cg." + group)}}
	r, found, err := s.Client.GetOffset(offCtx(t), iggy.TopicRef{Stream: "kafka", Topic: topic}, partition, c)
	if err != nil {
		t.Fatalf("iggy get offset: %v", err)
	}
	return r.StoredOffset, found
}

// iggyGroupExists reports whether Iggy consumer group kafka.cg.<group>
// exists on topic.
func iggyGroupExists(t *testing.T, s *stack, group, topic string) bool {
	t.Helper()
	ref := iggy.TopicRef{Stream: "kafka", Topic: topic}
	req := icodec.GetConsumerGroupRequest{StreamID: ref.StreamID(), TopicID: ref.TopicID(),
		GroupID: icodec.Identifier{Kind: icodec.IdentifierKindString, Value: []byte("kafka.cg." + group)}}
	var resp icodec.GetConsumerGroupResponse
	err := s.Client.Do(offCtx(t), &req, &resp)
	if iggy.IsNotFound(err) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	return true
}

// rawCommit commits offsets of one topic at version (a simple commit:
// generation -1, no member) and returns the partition codes.
func rawCommit(r *rawKafka, version int16, group, topic string, id [16]byte, offsets map[int32]int64) map[int32]int16 {
	r.t.Helper()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group = group
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic, rt.TopicID = topic, id
	for p, o := range offsets {
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = p, o
		md := "ignored metadata"
		rp.Metadata = &md
		rp.LeaderEpoch = 7
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	resp := r.do(req, version).(*kmsg.OffsetCommitResponse)
	codes := map[int32]int16{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			codes[p.Partition] = p.ErrorCode
		}
	}
	return codes
}

// fetched is one partition of an OffsetFetch answer.
type fetched struct {
	offset int64
	code   int16
}

// rawFetch fetches one topic's partitions (nil topic = null list, v2+) at
// version. It returns the partitions by topic and the group's code.
func rawFetch(r *rawKafka, version int16, group string, topic *string, id [16]byte, partitions ...int32) (map[string]map[int32]fetched, int16) {
	r.t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	out := map[string]map[int32]fetched{}
	add := func(name string, p int32, off int64, code int16, md *string, epoch int32) {
		if md == nil || *md != "" || epoch != -1 {
			r.t.Errorf("partition %s/%d: metadata %v, leader epoch %d; want \"\" and -1", name, p, md, epoch)
		}
		if out[name] == nil {
			out[name] = map[int32]fetched{}
		}
		out[name][p] = fetched{off, code}
	}
	if version >= 8 {
		g := kmsg.NewOffsetFetchRequestGroup()
		g.Group = group
		if topic != nil {
			gt := kmsg.NewOffsetFetchRequestGroupTopic()
			gt.Topic, gt.TopicID, gt.Partitions = *topic, id, partitions
			g.Topics = append(g.Topics, gt)
		}
		req.Groups = append(req.Groups, g)
		resp := r.do(req, version).(*kmsg.OffsetFetchResponse)
		if len(resp.Groups) != 1 || resp.Groups[0].Group != group {
			r.t.Fatalf("groups in answer: %+v", resp.Groups)
		}
		for _, t := range resp.Groups[0].Topics {
			name := t.Topic
			if version >= 10 {
				name = fmt.Sprintf("%x", t.TopicID)
			}
			for _, p := range t.Partitions {
				add(name, p.Partition, p.Offset, p.ErrorCode, p.Metadata, p.LeaderEpoch)
			}
		}
		return out, resp.Groups[0].ErrorCode
	}
	req.Group = group
	if topic != nil {
		rt := kmsg.NewOffsetFetchRequestTopic()
		rt.Topic, rt.Partitions = *topic, partitions
		req.Topics = append(req.Topics, rt)
	}
	resp := r.do(req, version).(*kmsg.OffsetFetchResponse)
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			epoch := p.LeaderEpoch
			if version < 5 {
				epoch = -1 // not on the wire
			}
			add(t.Topic, p.Partition, p.Offset, p.ErrorCode, p.Metadata, epoch)
		}
	}
	return out, resp.ErrorCode
}

// topicIDOf returns the Kafka topic id Metadata reports.
func topicIDOf(t *testing.T, s *stack, topic string) [16]byte {
	t.Helper()
	td, err := kadm.NewClient(s.kgoClient(t)).ListTopics(offCtx(t), topic)
	if err != nil || td[topic].Err != nil {
		t.Fatalf("metadata of %s: %v %v", topic, err, td[topic].Err)
	}
	return td[topic].ID
}

func strPtr(s string) *string { return &s }

// TestOffsetsKind3Verbatim: with kind 3 on, external-group mode:
// the Kafka value is stored verbatim under kind 3 and kafka.cg.<group>,
// which exists as an Iggy consumer group; no range check applies.
func TestOffsetsKind3Verbatim(t *testing.T) {
	s := offsetsStack(t, true, "auto")
	offTopic(t, s, "orders", 2, map[int32]int{0: 3})
	ctx := offCtx(t)
	adm := kadm.NewClient(s.kgoClient(t))

	var os kadm.Offsets
	os.AddOffset("orders", 0, 3, -1)
	os.AddOffset("orders", 1, 1000, -1) // beyond the high watermark: no range check
	resp, err := adm.CommitOffsets(ctx, "billing", os)
	if err != nil || resp.Error() != nil {
		t.Fatalf("commit: %v %v", err, resp.Error())
	}
	for p, want := range map[uint32]uint64{0: 3, 1: 1000} {
		if v, ok := iggyStored(t, s, icodec.ConsumerKindExternalGroup, "billing", "orders", p); !ok || v != want {
			t.Fatalf("kind 3 partition %d: %d %v, want %d", p, v, ok, want)
		}
		if _, ok := iggyStored(t, s, icodec.ConsumerKindConsumer, "billing", "orders", p); ok {
			t.Fatalf("kind 1 key written in external-group mode")
		}
	}
	if !iggyGroupExists(t, s, "billing", "orders") {
		t.Fatal("Iggy consumer group kafka.cg.billing was not created")
	}

	got, err := adm.FetchOffsets(ctx, "billing") // null topic list
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[int32]int64{0: 3, 1: 1000} {
		if o, ok := got.Lookup("orders", p); !ok || o.Err != nil || o.At != want {
			t.Fatalf("fetch partition %d: %+v %v", p, o, ok)
		}
	}

	// A negative offset deletes the key; the Iggy group stays.
	r := dialRaw(t, s.Addr)
	if codes := rawCommit(r, 7, "billing", "orders", [16]byte{}, map[int32]int64{1: -1}); codes[1] != 0 {
		t.Fatalf("delete by negative offset: %v", codes)
	}
	if _, ok := iggyStored(t, s, icodec.ConsumerKindExternalGroup, "billing", "orders", 1); ok {
		t.Fatal("negative commit did not delete the key")
	}
	// Deleting again: nothing stored counts as success.
	if codes := rawCommit(r, 7, "billing", "orders", [16]byte{}, map[int32]int64{1: -1}); codes[1] != 0 {
		t.Fatalf("second delete: %v", codes)
	}
	all, code := rawFetch(r, 7, "billing", nil, [16]byte{})
	if code != 0 || len(all) != 1 || len(all["orders"]) != 1 || all["orders"][0] != (fetched{3, 0}) {
		t.Fatalf("null-topic fetch after delete: %v code %d", all, code)
	}

	// An operator deletes the Iggy group (and with it its offsets): the
	// next commit recreates it.
	ref := iggy.TopicRef{Stream: "kafka", Topic: "orders"}
	del := icodec.DeleteConsumerGroupRequest{StreamID: ref.StreamID(), TopicID: ref.TopicID(),
		GroupID: icodec.Identifier{Kind: icodec.IdentifierKindString, Value: []byte("kafka.cg.billing")}}
	if err := s.Client.Do(ctx, &del, nil); err != nil {
		t.Fatal(err)
	}
	if codes := rawCommit(r, 8, "billing", "orders", [16]byte{}, map[int32]int64{0: 2}); codes[0] != 0 {
		t.Fatalf("commit after group deletion: %v", codes)
	}
	if !iggyGroupExists(t, s, "billing", "orders") {
		t.Fatal("commit did not recreate the Iggy group")
	}
	if v, ok := iggyStored(t, s, icodec.ConsumerKindExternalGroup, "billing", "orders", 0); !ok || v != 2 {
		t.Fatalf("after recreation: %d %v", v, ok)
	}
}

// TestOffsetsConsumerFallback: with kind 3 off (a 0.11 server), auto lands
// on single consumers: value - 1 under kind 1, commit 0 replaces the key
// by the zero marker, commits beyond the high watermark are refused.
func TestOffsetsConsumerFallback(t *testing.T) {
	s := offsetsStack(t, false, "auto")
	offTopic(t, s, "events", 2, map[int32]int{0: 10})
	r := dialRaw(t, s.Addr)

	if codes := rawCommit(r, 8, "audit", "events", [16]byte{}, map[int32]int64{0: 5}); codes[0] != 0 {
		t.Fatalf("commit: %v", codes)
	}
	if v, ok := iggyStored(t, s, icodec.ConsumerKindConsumer, "audit", "events", 0); !ok || v != 4 {
		t.Fatalf("kind 1 value %d %v, want 4", v, ok)
	}
	got, code := rawFetch(r, 8, "audit", strPtr("events"), [16]byte{}, 0, 1)
	if code != 0 || got["events"][0] != (fetched{5, 0}) || got["events"][1] != (fetched{-1, 0}) {
		t.Fatalf("fetch: %v %d", got, code)
	}
	// The high watermark itself is stored in Iggy; beyond it Iggy refuses
	// the offset and the beyond log keeps it (offsets_beyond_test.go).
	codes := rawCommit(r, 8, "audit", "events", [16]byte{}, map[int32]int64{0: 10, 1: 1})
	if codes[0] != 0 || codes[1] != 0 {
		t.Fatalf("commit at / beyond the high watermark: %v", codes)
	}
	if got, _ := rawFetch(r, 8, "audit", strPtr("events"), [16]byte{}, 1); got["events"][1] != (fetched{1, 0}) {
		t.Fatalf("fetch of a commit beyond the high watermark: %v", got)
	}
	if _, ok := iggyStored(t, s, icodec.ConsumerKindConsumer, "audit", "events", 1); ok {
		t.Fatal("a commit beyond the high watermark reached the Iggy consumer offset")
	}
	if v, ok := iggyStored(t, s, icodec.ConsumerKindConsumer, "audit", "events", 0); !ok || v != 9 {
		t.Fatalf("kind 1 value %d %v, want 9", v, ok)
	}
	// Commit 0 has no offset - 1: the main key goes, the zero marker
	// kafka.cz.audit holds it, and it reads back as 0
	// (offsets_zero_test.go has the rest).
	if codes := rawCommit(r, 8, "audit", "events", [16]byte{}, map[int32]int64{0: 0}); codes[0] != 0 {
		t.Fatalf("commit 0: %v", codes)
	}
	if _, ok := iggyStored(t, s, icodec.ConsumerKindConsumer, "audit", "events", 0); ok {
		t.Fatal("commit 0 left the main key")
	}
	if got, _ := rawFetch(r, 8, "audit", strPtr("events"), [16]byte{}, 0); got["events"][0] != (fetched{0, 0}) {
		t.Fatalf("fetch after commit 0: %v", got)
	}
	if iggyGroupExists(t, s, "audit", "events") {
		t.Fatal("consumer mode created an Iggy consumer group")
	}
	// Null topic list: only partitions with an offset (1 from the beyond
	// log).
	if codes := rawCommit(r, 8, "audit", "events", [16]byte{}, map[int32]int64{0: 7}); codes[0] != 0 {
		t.Fatal(codes)
	}
	all, code := rawFetch(r, 8, "audit", nil, [16]byte{})
	if code != 0 || len(all) != 1 || len(all["events"]) != 2 || all["events"][0] != (fetched{7, 0}) || all["events"][1] != (fetched{1, 0}) {
		t.Fatalf("null-topic fetch: %v %d", all, code)
	}
}

// TestOffsetsAutoByProtocol: auto follows the protocol generation the
// server announced at login, not what the server would answer: the
// embedded server with kind 3 on still announces 0.11, so auto stores
// single consumers and never sends kind 3; on a 0.12 server it uses kind 3.
func TestOffsetsAutoByProtocol(t *testing.T) {
	s := startStack(t, func(o *stackOpts) {
		o.embedded.Protocol = "0.11"
		o.embedded.ExternalGroups = true
		o.bridge.Offsets.Mode = "auto"
	})
	if p := s.Client.Protocol(); p != icodec.Protocol011 {
		t.Fatalf("login protocol %v, want 0.11.0", p)
	}
	offTopic(t, s, "byproto", 1, map[int32]int{0: 4})
	r := dialRaw(t, s.Addr)
	if codes := rawCommit(r, 8, "g", "byproto", [16]byte{}, map[int32]int64{0: 4}); codes[0] != 0 {
		t.Fatal(codes)
	}
	if v, ok := iggyStored(t, s, icodec.ConsumerKindConsumer, "g", "byproto", 0); !ok || v != 3 {
		t.Fatalf("kind 1: %d %v", v, ok)
	}
	if _, ok := iggyStored(t, s, icodec.ConsumerKindExternalGroup, "g", "byproto", 0); ok {
		t.Fatal("auto used kind 3 on a 0.11 server")
	}
	if iggyGroupExists(t, s, "g", "byproto") {
		t.Fatal("auto on 0.11 created an Iggy consumer group")
	}

	// A server of protocol 0.12 (kind 3 in its generation): auto stores
	// under kind 3.
	s = startStack(t, func(o *stackOpts) {
		o.embedded.Protocol = "0.12"
		o.bridge.Offsets.Mode = "auto"
	})
	if !s.Client.Protocol().ExternalGroupOffsets() {
		t.Fatalf("login protocol %v has no external groups", s.Client.Protocol())
	}
	offTopic(t, s, "byproto", 1, map[int32]int{0: 4})
	r = dialRaw(t, s.Addr)
	if codes := rawCommit(r, 8, "g", "byproto", [16]byte{}, map[int32]int64{0: 4}); codes[0] != 0 {
		t.Fatal(codes)
	}
	if v, ok := iggyStored(t, s, icodec.ConsumerKindExternalGroup, "g", "byproto", 0); !ok || v != 4 {
		t.Fatalf("kind 3 on 0.12: %d %v", v, ok)
	}
}

// TestOffsetsExternalRefused: offsets.mode external-group on a server that
// answers kind 3 as a real 0.11 server does (ResourceNotFound) fails the
// commit with UNKNOWN_SERVER_ERROR, which clients do not retry, logs one
// error line naming offsets.mode, and fails later commits at once.
func TestOffsetsExternalRefused(t *testing.T) {
	var logs syncBuffer
	s := offsetsStack(t, false, "external-group", func(o *stackOpts) { o.bridgeLog = &logs })
	offTopic(t, s, "refused", 2, map[int32]int{0: 4})
	r := dialRaw(t, s.Addr)
	for i := 0; i < 3; i++ {
		codes := rawCommit(r, 8, "g", "refused", [16]byte{}, map[int32]int64{0: 2, 1: 0})
		if codes[0] != kerr.UnknownServerError.Code || codes[1] != kerr.UnknownServerError.Code {
			t.Fatalf("commit %d: %v, want UNKNOWN_SERVER_ERROR", i, codes)
		}
	}
	if codes := rawCommit(r, 8, "g", "refused", [16]byte{}, map[int32]int64{0: -1}); codes[0] != kerr.UnknownServerError.Code {
		t.Fatalf("delete by negative offset: %v, want UNKNOWN_SERVER_ERROR", codes)
	}
	if n := strings.Count(logs.String(), "offsets.mode"); n != 1 {
		t.Fatalf("%d log lines name offsets.mode, want 1:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), `"level":"error"`) {
		t.Fatalf("the refusal is not logged at error level:\n%s", logs.String())
	}
}

// TestOffsetsPinnedMode: offsets.mode consumer is used even where kind 3
// exists.
func TestOffsetsPinnedMode(t *testing.T) {
	s := offsetsStack(t, true, "consumer")
	offTopic(t, s, "pinned", 1, map[int32]int{0: 4})
	r := dialRaw(t, s.Addr)
	if codes := rawCommit(r, 8, "g", "pinned", [16]byte{}, map[int32]int64{0: 4}); codes[0] != 0 {
		t.Fatal(codes)
	}
	if v, ok := iggyStored(t, s, icodec.ConsumerKindConsumer, "g", "pinned", 0); !ok || v != 3 {
		t.Fatalf("kind 1: %d %v", v, ok)
	}
	if _, ok := iggyStored(t, s, icodec.ConsumerKindExternalGroup, "g", "pinned", 0); ok {
		t.Fatal("kind 3 used in pinned consumer mode")
	}
}

// TestOffsetsVersions commits with every OffsetCommit version and reads
// back with every OffsetFetch version, both modes.
func TestOffsetsVersions(t *testing.T) {
	for _, kind3 := range []bool{false, true} {
		t.Run(fmt.Sprintf("kind3=%v", kind3), func(t *testing.T) {
			s := offsetsStack(t, kind3, "auto")
			offTopic(t, s, "vers", 3, map[int32]int{0: 50, 1: 50, 2: 50})
			id := topicIDOf(t, s, "vers")
			r := dialRaw(t, s.Addr)
			for cv := int16(0); cv <= 10; cv++ {
				want := int64(10 + cv)
				codes := rawCommit(r, cv, "grp", "vers", id, map[int32]int64{0: want, 2: want + 1})
				if codes[0] != 0 || codes[2] != 0 {
					t.Fatalf("OffsetCommit v%d: %v", cv, codes)
				}
				for fv := int16(0); fv <= 10; fv++ {
					got, code := rawFetch(r, fv, "grp", strPtr("vers"), id, 0, 1, 2)
					name := "vers"
					if fv >= 10 {
						name = fmt.Sprintf("%x", id)
					}
					p := got[name]
					if code != 0 || p[0] != (fetched{want, 0}) || p[1] != (fetched{-1, 0}) || p[2] != (fetched{want + 1, 0}) {
						t.Fatalf("commit v%d, fetch v%d: %v code %d", cv, fv, got, code)
					}
				}
			}
			// Null topic list from v2 (v8+: per group).
			for _, fv := range []int16{2, 7, 8, 10} {
				got, code := rawFetch(r, fv, "grp", nil, [16]byte{})
				name := "vers"
				if fv >= 10 {
					name = fmt.Sprintf("%x", id)
				}
				if code != 0 || len(got) != 1 || len(got[name]) != 2 || got[name][0].offset != 20 || got[name][2].offset != 21 {
					t.Fatalf("null topics v%d: %v %d", fv, got, code)
				}
			}
			// v10: an unknown topic id.
			bogus := [16]byte{1, 2, 3}
			if codes := rawCommit(r, 10, "grp", "", bogus, map[int32]int64{0: 1}); codes[0] != kerr.UnknownTopicID.Code {
				t.Fatalf("commit v10 unknown id: %v", codes)
			}
			got, code := rawFetch(r, 10, "grp", strPtr(""), bogus, 0)
			if code != 0 || got[fmt.Sprintf("%x", bogus)][0] != (fetched{-1, kerr.UnknownTopicID.Code}) {
				t.Fatalf("fetch v10 unknown id: %v %d", got, code)
			}
		})
	}
}

// TestOffsetsRefusals: group ids, unknown topics and partitions, and the
// multi-group OffsetFetch.
func TestOffsetsRefusals(t *testing.T) {
	s := offsetsStack(t, true, "auto")
	offTopic(t, s, "ref", 2, map[int32]int{0: 5})
	r := dialRaw(t, s.Addr)

	long := strings.Repeat("g", 247)
	for _, g := range []string{"", long, "bad\xff"} {
		if codes := rawCommit(r, 8, g, "ref", [16]byte{}, map[int32]int64{0: 1}); codes[0] != kerr.InvalidGroupID.Code {
			t.Fatalf("commit group %q: %v", g, codes)
		}
		if got, code := rawFetch(r, 1, g, strPtr("ref"), [16]byte{}, 0); got["ref"][0].code != kerr.InvalidGroupID.Code || code != 0 {
			t.Fatalf("fetch v1 group %q: %v %d", g, got, code)
		}
		if _, code := rawFetch(r, 5, g, strPtr("ref"), [16]byte{}, 0); code != kerr.InvalidGroupID.Code {
			t.Fatalf("fetch v5 group %q: %d", g, code)
		}
	}
	if codes := rawCommit(r, 8, strings.Repeat("g", 246), "ref", [16]byte{}, map[int32]int64{0: 1}); codes[0] != 0 {
		t.Fatalf("246-byte group: %v", codes)
	}

	// Unknown topic and partition: refused on commit, -1 without error on
	// fetch.
	codes := rawCommit(r, 8, "g", "nosuch", [16]byte{}, map[int32]int64{0: 1})
	if codes[0] != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("commit unknown topic: %v", codes)
	}
	codes = rawCommit(r, 8, "g", "ref", [16]byte{}, map[int32]int64{7: 1, -1: 1, 0: 2})
	if codes[7] != kerr.UnknownTopicOrPartition.Code || codes[-1] != kerr.UnknownTopicOrPartition.Code || codes[0] != 0 {
		t.Fatalf("commit unknown partitions: %v", codes)
	}
	if got, code := rawFetch(r, 8, "g", strPtr("nosuch"), [16]byte{}, 0); code != 0 || got["nosuch"][0] != (fetched{-1, 0}) {
		t.Fatalf("fetch unknown topic: %v %d", got, code)
	}
	if got, code := rawFetch(r, 8, "g", strPtr("ref"), [16]byte{}, 7, 0); code != 0 || got["ref"][7] != (fetched{-1, 0}) || got["ref"][0] != (fetched{2, 0}) {
		t.Fatalf("fetch unknown partition: %v %d", got, code)
	}
	if got, code := rawFetch(r, 8, "unknown-group", strPtr("ref"), [16]byte{}, 0); code != 0 || got["ref"][0] != (fetched{-1, 0}) {
		t.Fatalf("fetch unknown group: %v %d", got, code)
	}

	// Several groups in one OffsetFetch (v8+), one of them invalid.
	req := kmsg.NewPtrOffsetFetchRequest()
	for _, g := range []string{"g", "", "unknown-group"} {
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group = g
		gt := kmsg.NewOffsetFetchRequestGroupTopic()
		gt.Topic, gt.Partitions = "ref", []int32{0}
		rg.Topics = append(rg.Topics, gt)
		req.Groups = append(req.Groups, rg)
	}
	resp := r.do(req, 9).(*kmsg.OffsetFetchResponse)
	if len(resp.Groups) != 3 {
		t.Fatalf("groups: %+v", resp.Groups)
	}
	want := []struct {
		group  string
		code   int16
		offset int64
	}{{"g", 0, 2}, {"", kerr.InvalidGroupID.Code, -1}, {"unknown-group", 0, -1}}
	for i, w := range want {
		g := resp.Groups[i]
		if g.Group != w.group || g.ErrorCode != w.code || len(g.Topics) != 1 || g.Topics[0].Partitions[0].Offset != w.offset {
			t.Fatalf("group %d: %+v", i, g)
		}
	}

	// Generation checks: a commit with a generation for a group nobody
	// joined.
	gen := kmsg.NewPtrOffsetCommitRequest()
	gen.Group, gen.Generation, gen.MemberID = "nobody", 3, "member-x"
	gt := kmsg.NewOffsetCommitRequestTopic()
	gt.Topic = "ref"
	gp := kmsg.NewOffsetCommitRequestTopicPartition()
	gp.Offset = 1
	gt.Partitions = append(gt.Partitions, gp)
	gen.Topics = append(gen.Topics, gt)
	for v, want := range map[int16]int16{8: kerr.IllegalGeneration.Code, 9: kerr.GroupIDNotFound.Code} {
		resp := r.do(gen, v).(*kmsg.OffsetCommitResponse)
		if c := resp.Topics[0].Partitions[0].ErrorCode; c != want {
			t.Fatalf("commit v%d with generation to an unknown group: %d, want %d", v, c, want)
		}
	}
}

// TestOffsetsPipelinedCommitsInOrder: commits of one partition sent back
// to back on one connection land in order: the last one wins.
func TestOffsetsPipelinedCommitsInOrder(t *testing.T) {
	s := offsetsStack(t, true, "auto")
	offTopic(t, s, "seq", 1, map[int32]int{0: 1})
	r := dialRaw(t, s.Addr)
	for round := 0; round < 5; round++ {
		var corrs []int32
		const n = 20
		for i := 0; i < n; i++ {
			req := kmsg.NewPtrOffsetCommitRequest()
			req.Group = "pipe"
			rt := kmsg.NewOffsetCommitRequestTopic()
			rt.Topic = "seq"
			rp := kmsg.NewOffsetCommitRequestTopicPartition()
			rp.Offset = int64(round*100 + i)
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			corrs = append(corrs, r.send(req, 8))
		}
		for _, c := range corrs {
			resp := kmsg.NewPtrOffsetCommitResponse()
			resp.SetVersion(8)
			r.read(resp, c, 15*time.Second)
			if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
				t.Fatalf("commit: %d", code)
			}
		}
		want := uint64(round*100 + n - 1)
		if v, ok := iggyStored(t, s, icodec.ConsumerKindExternalGroup, "pipe", "seq", 0); !ok || v != want {
			t.Fatalf("round %d: stored %d %v, want %d", round, v, ok, want)
		}
	}
}

// TestOffsetDeleteAndDeleteGroups: OffsetDelete (key 47) and DeleteGroups
// remove what Iggy stores.
func TestOffsetDeleteAndDeleteGroups(t *testing.T) {
	for _, kind3 := range []bool{false, true} {
		t.Run(fmt.Sprintf("kind3=%v", kind3), func(t *testing.T) {
			s := offsetsStack(t, kind3, "auto")
			offTopic(t, s, "del", 2, map[int32]int{0: 5, 1: 5})
			offTopic(t, s, "del2", 1, map[int32]int{0: 5})
			kind := icodec.ConsumerKindConsumer
			if kind3 {
				kind = icodec.ConsumerKindExternalGroup
			}
			ctx := offCtx(t)
			adm := kadm.NewClient(s.kgoClient(t))
			var os kadm.Offsets
			os.AddOffset("del", 0, 3, -1)
			os.AddOffset("del", 1, 4, -1)
			os.AddOffset("del2", 0, 5, -1)
			if resp, err := adm.CommitOffsets(ctx, "admin-group", os); err != nil || resp.Error() != nil {
				t.Fatalf("commit: %v %v", err, resp.Error())
			}

			r := dialRaw(t, s.Addr)
			od := kmsg.NewPtrOffsetDeleteRequest()
			od.Group = "admin-group"
			for _, tp := range []struct {
				topic string
				part  int32
			}{{"del", 0}, {"nosuch", 0}, {"del", 9}} {
				rt := kmsg.NewOffsetDeleteRequestTopic()
				rt.Topic = tp.topic
				rp := kmsg.NewOffsetDeleteRequestTopicPartition()
				rp.Partition = tp.part
				rt.Partitions = append(rt.Partitions, rp)
				od.Topics = append(od.Topics, rt)
			}
			resp := r.do(od, 0).(*kmsg.OffsetDeleteResponse)
			if resp.ErrorCode != 0 || len(resp.Topics) != 3 ||
				resp.Topics[0].Partitions[0].ErrorCode != 0 ||
				resp.Topics[1].Partitions[0].ErrorCode != kerr.UnknownTopicOrPartition.Code ||
				resp.Topics[2].Partitions[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
				t.Fatalf("offset delete: %+v", resp)
			}
			if _, ok := iggyStored(t, s, kind, "admin-group", "del", 0); ok {
				t.Fatal("OffsetDelete left the key")
			}
			if _, ok := iggyStored(t, s, kind, "admin-group", "del", 1); !ok {
				t.Fatal("OffsetDelete removed another partition")
			}
			// A group without any offset: GROUP_ID_NOT_FOUND.
			od.Group = "never-committed"
			od.Topics = od.Topics[:1]
			if resp := r.do(od, 0).(*kmsg.OffsetDeleteResponse); resp.ErrorCode != kerr.GroupIDNotFound.Code {
				t.Fatalf("offset delete of an unknown group: %+v", resp)
			}

			// DeleteGroups removes every offset (and the Iggy groups).
			dg, err := adm.DeleteGroup(ctx, "admin-group")
			if err != nil || dg.Err != nil {
				t.Fatalf("delete group: %v %v", err, dg.Err)
			}
			for _, tp := range []struct {
				topic string
				part  uint32
			}{{"del", 1}, {"del2", 0}} {
				if _, ok := iggyStored(t, s, kind, "admin-group", tp.topic, tp.part); ok {
					t.Fatalf("DeleteGroups left %s/%d", tp.topic, tp.part)
				}
				if iggyGroupExists(t, s, "admin-group", tp.topic) {
					t.Fatalf("DeleteGroups left the Iggy group on %s", tp.topic)
				}
			}
			if got, err := adm.FetchOffsets(ctx, "admin-group"); err != nil || len(got) != 0 {
				t.Fatalf("offsets after DeleteGroups: %v %v", got, err)
			}
			// Deleting again: the group is gone.
			if dg, _ := adm.DeleteGroup(ctx, "admin-group"); dg.Err == nil {
				t.Fatal("second DeleteGroups succeeded")
			}
		})
	}
}

// TestOffsetsReadFailureIsRetriable: a read Iggy cannot answer is
// COORDINATOR_LOAD_IN_PROGRESS, never -1.
func TestOffsetsReadFailureIsRetriable(t *testing.T) {
	s := offsetsStack(t, true, "auto", func(o *stackOpts) {
		o.client.RequestTimeout = 500 * time.Millisecond
		o.client.ConnectTimeout = 500 * time.Millisecond
	})
	offTopic(t, s, "gone", 1, map[int32]int{0: 5})
	r := dialRaw(t, s.Addr)
	if codes := rawCommit(r, 8, "g", "gone", [16]byte{}, map[int32]int64{0: 3}); codes[0] != 0 {
		t.Fatal(codes)
	}
	if err := s.Iggy.Close(); err != nil {
		t.Fatal(err)
	}
	for _, v := range []int16{1, 5, 8} {
		got, code := rawFetch(r, v, "g", strPtr("gone"), [16]byte{}, 0)
		p := got["gone"][0]
		if p.code != kerr.CoordinatorLoadInProgress.Code || (v >= 2 && code != kerr.CoordinatorLoadInProgress.Code) {
			t.Fatalf("fetch v%d with Iggy down: %v code %d", v, got, code)
		}
	}
	if codes := rawCommit(r, 8, "g", "gone", [16]byte{}, map[int32]int64{0: 4}); codes[0] != kerr.CoordinatorLoadInProgress.Code {
		t.Fatalf("commit with Iggy down: %v", codes)
	}
}

// TestInitProducerIDStack: idempotent producers get new ids; a
// transactional id keeps its producer id and gets the next epoch each time.
func TestInitProducerIDStack(t *testing.T) {
	s := startStack(t)
	r := dialRaw(t, s.Addr)
	seen := map[int64]bool{}
	txnPID := int64(-1)
	for v := int16(0); v <= 5; v++ {
		req := kmsg.NewPtrInitProducerIDRequest()
		resp := r.do(req, v).(*kmsg.InitProducerIDResponse)
		if resp.ErrorCode != 0 || resp.ProducerID < 0 || resp.ProducerEpoch != 0 || seen[resp.ProducerID] {
			t.Fatalf("v%d: %+v", v, resp)
		}
		seen[resp.ProducerID] = true
		req.TransactionalID = strPtr("txn-1")
		req.TransactionTimeoutMillis = 60000
		resp = r.do(req, v).(*kmsg.InitProducerIDResponse)
		if resp.ErrorCode != 0 || resp.ProducerEpoch != int16(v) || (txnPID >= 0 && resp.ProducerID != txnPID) {
			t.Fatalf("v%d transactional: %+v", v, resp)
		}
		txnPID = resp.ProducerID
	}
	// franz-go's default producer is idempotent: it needs InitProducerId.
	cl := s.kgoClient(t, kgo.AllowAutoTopicCreation())
	if err := cl.ProduceSync(offCtx(t), &kgo.Record{Topic: "idem", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatalf("idempotent produce: %v", err)
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent writers (a log sink).
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
