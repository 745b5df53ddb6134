package bridge_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

// Acceptance: a consumer group commits, and a later member of the group
// resumes from the committed offsets, in both offset modes, within one
// sidecar and across a restart of the sidecar and the embedded server.

// groupConsume runs one franz-go group member until it received n records,
// commits what it polled and leaves the group. It returns the records.
func groupConsume(t *testing.T, s *stack, group, topic string, n int) []*kgo.Record {
	t.Helper()
	ctx := offCtx(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.Addr),
		kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.SessionTimeout(6*time.Second),
		kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var got []*kgo.Record
	for len(got) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("group %s: %d of %d records before the deadline", group, len(got), n)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", topic, p, err) })
		got = append(got, fs.Records()...)
	}
	if len(got) != n {
		t.Fatalf("group %s: %d records, want %d", group, len(got), n)
	}
	if err := cl.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("commit: %v", err)
	}
	return got
}

// produceN appends n records to partition 0 of topic.
func produceN(t *testing.T, s *stack, topic string, n int) {
	t.Helper()
	cl := s.kgoClient(t)
	var rs []*kgo.Record
	for i := 0; i < n; i++ {
		rs = append(rs, &kgo.Record{Topic: topic, Value: []byte(fmt.Sprint(i))})
	}
	if err := cl.ProduceSync(offCtx(t), rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// checkResumed asserts that recs are exactly the offsets from..from+n-1.
func checkResumed(t *testing.T, recs []*kgo.Record, from int64) {
	t.Helper()
	for i, r := range recs {
		if r.Offset != from+int64(i) {
			t.Fatalf("record %d at offset %d, want %d (resumed from the wrong offset)", i, r.Offset, from+int64(i))
		}
	}
}

// offMode is one offsets mode under test.
type offMode struct {
	name  string
	kind3 bool
	kind  icodec.ConsumerKind
	// stored is what Iggy holds for a Kafka commit of v.
	stored func(v int64) uint64
}

func offModes() []offMode {
	return []offMode{
		{"kind3_off", false, icodec.ConsumerKindConsumer, func(v int64) uint64 { return uint64(v - 1) }},
		{"kind3_on", true, icodec.ConsumerKindExternalGroup, func(v int64) uint64 { return uint64(v) }},
	}
}

func TestOffsetsGroupResumes(t *testing.T) {
	for _, m := range offModes() {
		t.Run(m.name, func(t *testing.T) {
			s := offsetsStack(t, m.kind3, "auto")
			offTopic(t, s, "resume", 1, map[int32]int{0: 10})
			checkResumed(t, groupConsume(t, s, "readers", "resume", 10), 0)
			if v, ok := iggyStored(t, s, m.kind, "readers", "resume", 0); !ok || v != m.stored(10) {
				t.Fatalf("Iggy holds %d %v, want %d", v, ok, m.stored(10))
			}
			produceN(t, s, "resume", 5)
			checkResumed(t, groupConsume(t, s, "readers", "resume", 5), 10)
		})
	}
}

func TestOffsetsSurviveRestart(t *testing.T) {
	for _, m := range offModes() {
		t.Run(m.name, func(t *testing.T) {
			dir := t.TempDir()
			mods := func(o *stackOpts) { o.embedded.DataDir = dir }
			s := offsetsStack(t, m.kind3, "auto", mods)
			offTopic(t, s, "durable", 1, map[int32]int{0: 8})
			checkResumed(t, groupConsume(t, s, "keepers", "durable", 8), 0)

			s = s.restart(t, func(o *stackOpts) {
				o.embedded.Protocol = "0.11" // as offsetsStack
				o.embedded.ExternalGroups = m.kind3
				if m.kind3 {
					o.bridge.Offsets.Mode = "external-group" // see offsetsStack
				}
				o.bridge.Groups.InitialRebalanceDelay = 50 * time.Millisecond
				o.bridge.Groups.MinSessionTimeout = time.Second
				o.embedded.DataDir = dir
			})
			if v, ok := iggyStored(t, s, m.kind, "keepers", "durable", 0); !ok || v != m.stored(8) {
				t.Fatalf("after restart Iggy holds %d %v, want %d", v, ok, m.stored(8))
			}
			got, err := kadm.NewClient(s.kgoClient(t)).FetchOffsets(offCtx(t), "keepers")
			if err != nil {
				t.Fatal(err)
			}
			if o, ok := got.Lookup("durable", 0); !ok || o.Err != nil || o.At != 8 {
				t.Fatalf("after restart: %+v %v", o, ok)
			}
			// The new sidecar never coordinated the group, but knows it
			// from its offsets: Empty, as Kafka describes it after a
			// restart (kafka-consumer-groups --describe shows its lag).
			adm := kadm.NewClient(s.kgoClient(t))
			dg, err := adm.DescribeGroups(offCtx(t), "keepers", "never-seen")
			if err != nil {
				t.Fatal(err)
			}
			if g := dg["keepers"]; g.Err != nil || g.State != "Empty" || len(g.Members) != 0 {
				t.Errorf("describe keepers after restart: state %q err %v members %d", g.State, g.Err, len(g.Members))
			}
			if g := dg["never-seen"]; g.State != "Dead" && !errors.Is(g.Err, kerr.GroupIDNotFound) {
				t.Errorf("describe never-seen: state %q err %v", g.State, g.Err)
			}
			produceN(t, s, "durable", 3)
			checkResumed(t, groupConsume(t, s, "keepers", "durable", 3), 8)
		})
	}
}
