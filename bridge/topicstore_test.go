package bridge_test

import (
	"context"
	"crypto/rand"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafka-iggy/kafka-iggy/bridge"
)

// sidecarOn starts another sidecar (Iggy client, bridge, front door) on the
// Iggy server of s, as a second app pod on one Iggy server.
func sidecarOn(t *testing.T, s *stack) *stack {
	t.Helper()
	return startStack(t, func(o *stackOpts) { o.shared = s.Iggy })
}

// wantConfigs describes topic through cl and checks values and sources.
func wantConfigs(t *testing.T, who string, cl *kgo.Client, topic string, want map[string]string, source kmsg.ConfigSource) {
	t.Helper()
	names := make([]string, 0, len(want))
	for k := range want {
		names = append(names, k)
	}
	got := describeTopic(t, cl, topic, false, names...)
	for k, v := range want {
		c, ok := got[k]
		if !ok || c.Value == nil || *c.Value != v || c.Source != source {
			t.Errorf("%s: %s %s = %+v, want %q source %v", who, topic, k, c, v, source)
		}
	}
}

// TestTopicConfigStoreAcrossSidecars: the configs Iggy has no option for
// (cleanup.policy=compact, message.timestamp.type, max.message.bytes,
// min.insync.replicas) set through one sidecar are reported and enforced by
// another sidecar of the same Iggy server, by a sidecar started afterwards,
// and after the whole stack restarts from its data dir; a topic deleted and
// created again starts from the defaults.
func TestTopicConfigStoreAcrossSidecars(t *testing.T) {
	dir := t.TempDir()
	withDir := func(o *stackOpts) { o.embedded.DataDir = dir }
	a := startStack(t, withDir)
	b := sidecarOn(t, a)
	ca, cb := a.kgoClient(t), b.kgoClient(t)

	set := map[string]string{
		"cleanup.policy": "compact", "message.timestamp.type": "LogAppendTime",
		"max.message.bytes": "2000", "min.insync.replicas": "2", "segment.ms": "600000",
	}
	if c := topicCodes(createTopics(t, ca, false, createTopicReq("store-a", 1, 1, set))); c["store-a"] != 0 {
		t.Fatalf("create: %v", c)
	}
	wantConfigs(t, "sidecar b", cb, "store-a", set, kmsg.ConfigSourceDynamicTopicConfig)

	// b enforces what a set: max.message.bytes on Produce.
	p := b.kgoClient(t, kgo.ProducerBatchMaxBytes(1<<20), kgo.RecordRetries(0))
	big := make([]byte, 3000)
	_, _ = rand.Read(big)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := p.ProduceSync(ctx, &kgo.Record{Topic: "store-a", Value: big}).FirstErr(); !errors.Is(err, kerr.MessageTooLarge) {
		t.Errorf("3000 bytes through b: %v, want MESSAGE_TOO_LARGE", err)
	}

	// An alter through b is what a reports.
	adm := kadm.NewClient(cb)
	rs, err := adm.AlterTopicConfigs(adminCtx(t), []kadm.AlterConfig{
		{Op: kadm.AppendConfig, Name: "cleanup.policy", Value: strp("delete")},
		{Op: kadm.DeleteConfig, Name: "min.insync.replicas"},
	}, "store-a")
	if err != nil || rs[0].Err != nil {
		t.Fatalf("alter: %v %+v", err, rs)
	}
	wantConfigs(t, "sidecar a after b's alter", ca, "store-a", map[string]string{"cleanup.policy": "compact,delete", "max.message.bytes": "2000"}, kmsg.ConfigSourceDynamicTopicConfig)
	wantConfigs(t, "sidecar a after b's alter", ca, "store-a", map[string]string{"min.insync.replicas": "1"}, kmsg.ConfigSourceDefaultConfig)

	// A sidecar started later reads the store from the start.
	c := sidecarOn(t, a)
	wantConfigs(t, "late sidecar", c.kgoClient(t), "store-a", map[string]string{"cleanup.policy": "compact,delete", "message.timestamp.type": "LogAppendTime"}, kmsg.ConfigSourceDynamicTopicConfig)

	// Delete and create again: the new topic starts from the defaults.
	if _, err := kadm.NewClient(ca).DeleteTopics(adminCtx(t), "store-a"); err != nil {
		t.Fatal(err)
	}
	if c := topicCodes(createTopics(t, ca, false, createTopicReq("store-a", 1, 1, nil), createTopicReq("store-b", 1, 1, map[string]string{"cleanup.policy": "compact"}))); c["store-a"] != 0 || c["store-b"] != 0 {
		t.Fatalf("create again: %v", c)
	}
	wantConfigs(t, "recreated", cb, "store-a", map[string]string{"cleanup.policy": "delete", "max.message.bytes": "1048588"}, kmsg.ConfigSourceDefaultConfig)

	// The whole stack restarts from its data dir: the values are still there.
	b.stop(t)
	a2 := a.restart(t, withDir)
	wantConfigs(t, "after restart", a2.kgoClient(t), "store-b", map[string]string{"cleanup.policy": "compact"}, kmsg.ConfigSourceDynamicTopicConfig)
}

// TestLogAppendTime: a LogAppendTime topic answers the append time on
// Produce and serves it, flagged LogAppendTime, on Fetch, whatever
// timestamp the producer set; a CreateTime topic keeps the producer's.
func TestLogAppendTime(t *testing.T) {
	s := startStack(t)
	cl := s.kgoClient(t)
	if c := topicCodes(createTopics(t, cl, false,
		createTopicReq("lat-append", 1, 1, map[string]string{"message.timestamp.type": "LogAppendTime"}),
		createTopicReq("lat-create", 1, 1, nil))); c["lat-append"] != 0 || c["lat-create"] != 0 {
		t.Fatalf("create: %v", c)
	}
	old := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	before := time.Now().Add(-time.Millisecond)

	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 5000
	for _, topic := range []string{"lat-append", "lat-create"} {
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = buildBatch(old.UnixMilli(), 0, []testRecord{{value: []byte("v")}}, nil, 0)
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, clientAt(t, s, 0, 12)) // by name
	if err != nil {
		t.Fatal(err)
	}
	after := time.Now().Add(time.Millisecond)
	lat := map[string]int64{}
	for _, rt := range resp.Topics {
		if rt.Partitions[0].ErrorCode != 0 {
			t.Fatalf("%s: produce error %d", rt.Topic, rt.Partitions[0].ErrorCode)
		}
		lat[rt.Topic] = rt.Partitions[0].LogAppendTime
	}
	if lat["lat-create"] != -1 || lat["lat-append"] < before.UnixMilli() || lat["lat-append"] > after.UnixMilli() {
		t.Fatalf("LogAppendTime answers: %v (window %d..%d)", lat, before.UnixMilli(), after.UnixMilli())
	}

	consumer := s.kgoClient(t, kgo.ConsumeTopics("lat-append", "lat-create"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := map[string]*kgo.Record{}
	for len(got) < 2 {
		fs := consumer.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) { got[r.Topic] = r })
	}
	if r := got["lat-append"]; r.Timestamp.UnixMilli() != lat["lat-append"] || r.Attrs.TimestampType() != 1 {
		t.Errorf("lat-append record: timestamp %v type %d, want %d type 1", r.Timestamp, r.Attrs.TimestampType(), lat["lat-append"])
	}
	if r := got["lat-create"]; !r.Timestamp.Equal(old) || r.Attrs.TimestampType() != 0 {
		t.Errorf("lat-create record: timestamp %v type %d", r.Timestamp, r.Attrs.TimestampType())
	}
}

// compactMetrics records the last compact-bytes figure.
type compactMetrics struct {
	bridge.NopMetrics
	bytes atomic.Int64
	set   chan struct{} // a figure was set
}

func (m *compactMetrics) SetCompactBytes(n int64) {
	m.bytes.Store(n)
	select {
	case m.set <- struct{}{}:
	default:
	}
}

// TestCompactTopicBytes: a compact topic keeps every record (Iggy never
// compacts: two values of one key both read back) and its bytes show in
// kafka_iggy_compact_topic_bytes; delete topics do not count.
func TestCompactTopicBytes(t *testing.T) {
	m := &compactMetrics{set: make(chan struct{}, 1)}
	s := startStack(t, func(o *stackOpts) { o.metrics = m })
	cl := s.kgoClient(t)
	if c := topicCodes(createTopics(t, cl, false,
		createTopicReq("cb-compact", 1, 1, map[string]string{"cleanup.policy": "compact"}),
		createTopicReq("cb-delete", 1, 1, nil))); c["cb-compact"] != 0 || c["cb-delete"] != 0 {
		t.Fatalf("create: %v", c)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	value := make([]byte, 1000)
	for _, topic := range []string{"cb-compact", "cb-delete"} {
		for i := 0; i < 2; i++ {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Key: []byte("k"), Value: value}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Both values of key k read back: retained, never compacted.
	consumer := s.kgoClient(t, kgo.ConsumeTopics("cb-compact"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	n := 0
	for n < 2 {
		fs := consumer.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		n += fs.NumRecords()
	}
	// A change to the store measures again.
	rs, err := kadm.NewClient(cl).AlterTopicConfigs(adminCtx(t), []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "min.compaction.lag.ms", Value: strp("1000")}}, "cb-compact")
	if err != nil || rs[0].Err != nil {
		t.Fatalf("alter: %v %+v", err, rs)
	}
	for m.bytes.Load() < 2000 {
		select {
		case <-m.set:
		case <-ctx.Done():
			t.Fatalf("compact bytes %d, want at least the 2 values of 1000 bytes", m.bytes.Load())
		}
	}
	if got := m.bytes.Load(); got > 4000 {
		t.Fatalf("compact bytes %d: the delete topic counted", got)
	}
}
