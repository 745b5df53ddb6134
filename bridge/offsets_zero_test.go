package bridge_test

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

// A commit of 0 in consumer mode (KAFKA-ON-IGGY §6, bridge/offsets): Iggy
// stores offset - 1 under kafka.cg.<group>, which has no value for 0, so
// the bridge keeps the zero marker kafka.cz.<group> (kind 1, Iggy offset
// 0) instead. OffsetFetch must answer 0, as Kafka does after
// `kafka-consumer-groups --reset-offsets --to-earliest`.

// iggyMarker reads a group's zero marker through the plain Iggy client.
func iggyMarker(t *testing.T, s *stack, group, topic string, partition uint32) (uint64, bool) {
	t.Helper()
	c := icodec.Consumer{Kind: icodec.ConsumerKindConsumer, ID: icodec.Identifier{Kind: icodec.IdentifierKindString, Value: []byte("kafka.cz." + group)}}
	r, found, err := s.Client.GetOffset(offCtx(t), iggy.TopicRef{Stream: "kafka", Topic: topic}, partition, c)
	if err != nil {
		t.Fatalf("iggy get offset: %v", err)
	}
	return r.StoredOffset, found
}

// iggyKeys describes what Iggy holds for a group on a partition in
// consumer mode: the main key's value (or -1) and whether the marker is
// there.
type iggyKeys struct {
	main   int64
	marker bool
}

func iggyKeysOf(t *testing.T, s *stack, group, topic string, partition uint32) iggyKeys {
	t.Helper()
	k := iggyKeys{main: -1}
	if v, ok := iggyStored(t, s, icodec.ConsumerKindConsumer, group, topic, partition); ok {
		k.main = int64(v)
	}
	if v, ok := iggyMarker(t, s, group, topic, partition); ok {
		if v != 0 {
			t.Fatalf("%s/%d: zero marker at Iggy offset %d, want 0", topic, partition, v)
		}
		k.marker = true
	}
	return k
}

func TestOffsetsCommitZeroConsumerMode(t *testing.T) {
	s := offsetsStack(t, false, "auto")
	// Partitions 0 and 1 hold records, partition 2 never had one.
	offTopic(t, s, "zero", 3, map[int32]int{0: 10, 1: 10})
	r := dialRaw(t, s.Addr)
	commit := func(offsets map[int32]int64) {
		t.Helper()
		for p, c := range rawCommit(r, 8, "zg", "zero", [16]byte{}, offsets) {
			if c != 0 {
				t.Fatalf("commit %v: partition %d answered %d", offsets, p, c)
			}
		}
	}
	fetch := func(p int32) int64 {
		t.Helper()
		got, code := rawFetch(r, 8, "zg", strPtr("zero"), [16]byte{}, p)
		if code != 0 || got["zero"][p].code != 0 {
			t.Fatalf("fetch partition %d: %v code %d", p, got, code)
		}
		return got["zero"][p].offset
	}
	keys := func(p uint32, want iggyKeys) {
		t.Helper()
		if got := iggyKeysOf(t, s, "zg", "zero", p); got != want {
			t.Fatalf("Iggy holds %+v on partition %d, want %+v", got, p, want)
		}
	}

	// Commit 0: fetched as 0; Iggy has the marker and no main key.
	commit(map[int32]int64{0: 0})
	if o := fetch(0); o != 0 {
		t.Fatalf("after commit 0: fetched %d, want 0", o)
	}
	keys(0, iggyKeys{main: -1, marker: true})

	// Commit 0, then 7: 7 (main key 6), the marker gone.
	commit(map[int32]int64{0: 7})
	if o := fetch(0); o != 7 {
		t.Fatalf("after commit 0 then 7: fetched %d", o)
	}
	keys(0, iggyKeys{main: 6})

	// Commit 5, then 0: 0.
	commit(map[int32]int64{1: 5})
	commit(map[int32]int64{1: 0})
	if o := fetch(1); o != 0 {
		t.Fatalf("after commit 5 then 0: fetched %d", o)
	}
	keys(1, iggyKeys{main: -1, marker: true})

	// The null topic list lists a partition committed at 0.
	for _, v := range []int16{2, 7, 8} {
		all, code := rawFetch(r, v, "zg", nil, [16]byte{})
		if code != 0 || len(all) != 1 || len(all["zero"]) != 2 ||
			all["zero"][0] != (fetched{7, 0}) || all["zero"][1] != (fetched{0, 0}) {
			t.Fatalf("null-topic fetch v%d: %v code %d, want zero/0 at 7 and zero/1 at 0", v, all, code)
		}
	}
	got, err := kadm.NewClient(s.kgoClient(t)).FetchOffsets(offCtx(t), "zg")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := got.Lookup("zero", 1); !ok || o.Err != nil || o.At != 0 {
		t.Fatalf("kadm FetchOffsets, partition 1: %+v %v", o, ok)
	}

	// An empty partition: Iggy refuses offset 0 there, so neither key is
	// stored; the beyond log keeps the commit and it reads back as 0.
	commit(map[int32]int64{2: 0})
	if o := fetch(2); o != 0 {
		t.Fatalf("commit 0 on an empty partition: fetched %d, want 0", o)
	}
	keys(2, iggyKeys{main: -1})

	// A negative commit removes the marker.
	commit(map[int32]int64{1: -1})
	if o := fetch(1); o != -1 {
		t.Fatalf("after a negative commit: fetched %d", o)
	}
	keys(1, iggyKeys{main: -1})

	// OffsetDelete: a group holding only a marker is known (no
	// GROUP_ID_NOT_FOUND), and the marker goes.
	commit(map[int32]int64{1: 0})
	od := kmsg.NewPtrOffsetDeleteRequest()
	od.Group = "zg"
	rt := kmsg.NewOffsetDeleteRequestTopic()
	rt.Topic = "zero"
	rp := kmsg.NewOffsetDeleteRequestTopicPartition()
	rp.Partition = 1
	rt.Partitions = append(rt.Partitions, rp)
	od.Topics = append(od.Topics, rt)
	if resp := r.do(od, 0).(*kmsg.OffsetDeleteResponse); resp.ErrorCode != 0 || len(resp.Topics) != 1 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("offset delete of a partition committed at 0: %+v", resp)
	}
	if o := fetch(1); o != -1 {
		t.Fatalf("after OffsetDelete: fetched %d", o)
	}
	keys(1, iggyKeys{main: -1})

	// DeleteGroups removes the marker and the main key.
	commit(map[int32]int64{1: 0})
	adm := kadm.NewClient(s.kgoClient(t))
	dg, err := adm.DeleteGroup(offCtx(t), "zg")
	if err != nil || dg.Err != nil {
		t.Fatalf("delete group: %v %v", err, dg.Err)
	}
	keys(0, iggyKeys{main: -1})
	keys(1, iggyKeys{main: -1})
	if got, err := adm.FetchOffsets(offCtx(t), "zg"); err != nil || len(got) != 0 {
		t.Fatalf("offsets after DeleteGroups: %v %v", got, err)
	}
}

// TestOffsetsLeftoverMarker: a marker left behind a main key (a failed
// delete, another sidecar's commit 0) changes no read; a negative commit
// removes both.
func TestOffsetsLeftoverMarker(t *testing.T) {
	s := offsetsStack(t, false, "consumer")
	offTopic(t, s, "left", 1, map[int32]int{0: 10})
	r := dialRaw(t, s.Addr)
	if codes := rawCommit(r, 8, "lg", "left", [16]byte{}, map[int32]int64{0: 4}); codes[0] != 0 {
		t.Fatal(codes)
	}
	c := icodec.Consumer{Kind: icodec.ConsumerKindConsumer, ID: icodec.Identifier{Kind: icodec.IdentifierKindString, Value: []byte("kafka.cz.lg")}}
	ref := iggy.TopicRef{Stream: "kafka", Topic: "left"}
	if err := s.Client.StoreOffset(offCtx(t), ref, 0, c, 0); err != nil {
		t.Fatal(err)
	}
	if got, code := rawFetch(r, 8, "lg", strPtr("left"), [16]byte{}, 0); code != 0 || got["left"][0] != (fetched{4, 0}) {
		t.Fatalf("fetch with a leftover marker: %v %d, want 4", got, code)
	}
	if all, code := rawFetch(r, 8, "lg", nil, [16]byte{}); code != 0 || all["left"][0] != (fetched{4, 0}) {
		t.Fatalf("null-topic fetch with a leftover marker: %v %d, want 4", all, code)
	}
	if codes := rawCommit(r, 8, "lg", "left", [16]byte{}, map[int32]int64{0: -1}); codes[0] != 0 {
		t.Fatal(codes)
	}
	if got := iggyKeysOf(t, s, "lg", "left", 0); got != (iggyKeys{main: -1}) {
		t.Fatalf("after a negative commit Iggy holds %+v", got)
	}
}

// TestOffsetsCommitZeroExternalGroup: external-group mode is unchanged:
// 0 is stored verbatim under kind 3 and no marker is written.
func TestOffsetsCommitZeroExternalGroup(t *testing.T) {
	s := offsetsStack(t, true, "auto")
	offTopic(t, s, "ext0", 1, map[int32]int{0: 3})
	r := dialRaw(t, s.Addr)
	if codes := rawCommit(r, 8, "xg", "ext0", [16]byte{}, map[int32]int64{0: 0}); codes[0] != 0 {
		t.Fatal(codes)
	}
	if v, ok := iggyStored(t, s, icodec.ConsumerKindExternalGroup, "xg", "ext0", 0); !ok || v != 0 {
		t.Fatalf("kind 3: %d %v, want 0", v, ok)
	}
	if _, ok := iggyMarker(t, s, "xg", "ext0", 0); ok {
		t.Fatal("external-group mode wrote a zero marker")
	}
	if got, code := rawFetch(r, 8, "xg", strPtr("ext0"), [16]byte{}, 0); code != 0 || got["ext0"][0] != (fetched{0, 0}) {
		t.Fatalf("fetch: %v %d", got, code)
	}
}

// TestOffsetsCommitZeroSurvivesRestart: after a reset to the earliest
// offset (a commit of 0) and a restart of the sidecar and the server, a
// consumer whose auto.offset.reset is latest reads every record again.
func TestOffsetsCommitZeroSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	mods := func(o *stackOpts) { o.embedded.DataDir = dir }
	s := offsetsStack(t, false, "auto", mods)
	offTopic(t, s, "rewind", 1, map[int32]int{0: 6})
	checkResumed(t, groupConsume(t, s, "rewinders", "rewind", 6), 0)

	var os kadm.Offsets
	os.AddOffset("rewind", 0, 0, -1)
	if resp, err := kadm.NewClient(s.kgoClient(t)).CommitOffsets(offCtx(t), "rewinders", os); err != nil || resp.Error() != nil {
		t.Fatalf("commit 0: %v %v", err, resp.Error())
	}

	s = s.restart(t, func(o *stackOpts) {
		o.embedded.Protocol = "0.11" // as offsetsStack
		o.bridge.Groups.InitialRebalanceDelay = 50 * time.Millisecond
		o.bridge.Groups.MinSessionTimeout = time.Second
		o.embedded.DataDir = dir
	})
	if got := iggyKeysOf(t, s, "rewinders", "rewind", 0); got != (iggyKeys{main: -1, marker: true}) {
		t.Fatalf("after restart Iggy holds %+v, want the marker only", got)
	}
	got, err := kadm.NewClient(s.kgoClient(t)).FetchOffsets(offCtx(t), "rewinders")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := got.Lookup("rewind", 0); !ok || o.Err != nil || o.At != 0 {
		t.Fatalf("after restart: %+v %v, want 0", o, ok)
	}

	// A group member resetting to the end would read nothing: it must
	// start at the committed 0.
	ctx := offCtx(t)
	cl := s.kgoClient(t, kgo.ConsumerGroup("rewinders"), kgo.ConsumeTopics("rewind"),
		kgo.DisableAutoCommit(), kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()),
		kgo.SessionTimeout(6*time.Second), kgo.FetchMaxWait(200*time.Millisecond))
	var recs []*kgo.Record
	for len(recs) < 6 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%d of 6 records before the deadline (the consumer did not start at the committed 0)", len(recs))
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", topic, p, err) })
		recs = append(recs, fs.Records()...)
	}
	checkResumed(t, recs, 0)
	if len(recs) != 6 {
		t.Fatalf("%d records, want 6", len(recs))
	}
}
