package bridge_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
)

// __consumer_offsets is there as Kafka shows it — internal, so clients and
// tools skip it — but holds nothing and refuses writes, creation and
// deletion; nothing of it reaches Iggy.
func TestConsumerOffsetsIsInternal(t *testing.T) {
	s := startStack(t)
	cl := s.kgoClient(t)
	ctx := adminCtx(t)
	if c := topicCodes(createTopics(t, cl, false, createTopicReq("plain", 1, 1, nil))); c["plain"] != 0 {
		t.Fatalf("create plain: %v", c)
	}

	md, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, rt := range md.Topics {
		got[*rt.Topic] = rt.IsInternal
		if *rt.Topic == "__consumer_offsets" && (rt.ErrorCode != 0 || len(rt.Partitions) != 1 || rt.Partitions[0].Leader != 0) {
			t.Errorf("__consumer_offsets: %+v", rt)
		}
	}
	if internal, ok := got["__consumer_offsets"]; !ok || !internal || got["plain"] {
		t.Errorf("metadata topics (name -> internal): %v", got)
	}

	// Admin tools hide it unless asked.
	adm := kadm.NewClient(cl)
	if td, err := adm.ListTopics(ctx); err != nil || td.Has("__consumer_offsets") || !td.Has("plain") {
		t.Errorf("ListTopics: %v %v", td.Names(), err)
	}
	if td, err := adm.ListTopicsWithInternal(ctx); err != nil || !td.Has("__consumer_offsets") {
		t.Errorf("ListTopicsWithInternal: %v %v", td.Names(), err)
	}

	// Writes are refused as Kafka refuses them to a client.
	p := s.kgoClient(t, kgo.RecordRetries(0), kgo.DisableIdempotentWrite())
	pctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.ProduceSync(pctx, &kgo.Record{Topic: "__consumer_offsets", Value: []byte("x")}).FirstErr(); !errors.Is(err, kerr.InvalidTopicException) {
		t.Errorf("produce: %v", err)
	}
	if c := topicCodes(createTopics(t, cl, false, createTopicReq("__consumer_offsets", 1, 1, nil))); c["__consumer_offsets"] != kerr.TopicAlreadyExists.Code {
		t.Errorf("create: %v", c)
	}
	if r, err := adm.DeleteTopics(ctx, "__consumer_offsets"); err != nil || !errors.Is(r["__consumer_offsets"].Err, kerr.InvalidTopicException) {
		t.Errorf("delete: %+v %v", r, err)
	}

	// It reads as empty.
	for _, lo := range []func(context.Context, ...string) (kadm.ListedOffsets, error){adm.ListStartOffsets, adm.ListEndOffsets} {
		offs, err := lo(ctx, "__consumer_offsets")
		if err != nil {
			t.Fatal(err)
		}
		if o, ok := offs.Lookup("__consumer_offsets", 0); !ok || o.Err != nil || o.Offset != 0 {
			t.Errorf("list offsets: %+v", o)
		}
	}

	// A consumer assigned to it reads nothing and does not fail.
	c := s.kgoClient(t, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"__consumer_offsets": {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchMaxWait(200*time.Millisecond))
	fctx, fcancel := context.WithTimeout(context.Background(), time.Second)
	fs := c.PollFetches(fctx)
	fcancel()
	if n := fs.NumRecords(); n != 0 {
		t.Errorf("fetched %d records from __consumer_offsets", n)
	}
	fs.EachError(func(topic string, p int32, err error) {
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("fetch %s/%d: %v", topic, p, err)
		}
	})
	fetch := kmsg.NewPtrFetchRequest()
	fetch.MaxWaitMillis, fetch.MinBytes, fetch.MaxBytes = 0, 1, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "__consumer_offsets"
	for _, fp := range []struct {
		partition int32
		offset    int64
	}{{0, 0}, {0, 5}, {1, 0}} {
		p := kmsg.NewFetchRequestTopicPartition()
		p.Partition, p.FetchOffset, p.PartitionMaxBytes = fp.partition, fp.offset, 1<<20
		ft.Partitions = append(ft.Partitions, p)
	}
	fetch.Topics = append(fetch.Topics, ft)
	fresp := dialRaw(t, s.Addr).do(fetch, 12).(*kmsg.FetchResponse)
	if ps := fresp.Topics[0].Partitions; len(ps) != 3 || ps[0].ErrorCode != 0 || ps[0].HighWatermark != 0 || len(ps[0].RecordBatches) != 0 ||
		ps[1].ErrorCode != kerr.OffsetOutOfRange.Code || ps[2].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("raw fetch: %+v", ps)
	}

	// Nothing reached Iggy.
	if _, err := s.Client.GetTopic(ctx, iggy.TopicRef{Stream: "kafka", Topic: "__consumer_offsets"}); err == nil {
		t.Error("an Iggy topic __consumer_offsets exists")
	}
}
