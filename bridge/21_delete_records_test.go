package bridge_test

import (
	"context"
	"crypto/rand"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

// TestDeleteRecords: DeleteRecords moves a partition's log start offset as
// Kafka does, for every sidecar of the Iggy server: ListOffsets earliest,
// Fetch (log_start_offset, OFFSET_OUT_OF_RANGE below it) and a consumer
// from the start honour it; Iggy deletes the sealed segments wholly below
// it (and no record at or above it); offsets above the high watermark are
// refused, lower ones change nothing, -1 means the high watermark.
func TestDeleteRecords(t *testing.T) {
	a := startStack(t)
	b := sidecarOn(t, a)
	ca := a.kgoClient(t)
	if c := topicCodes(createTopics(t, ca, false, createTopicReq("dr", 2, 1, map[string]string{"segment.bytes": "1048576"}))); c["dr"] != 0 {
		t.Fatalf("create: %v", c)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p := a.kgoClient(t, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	value := make([]byte, 1000)
	_, _ = rand.Read(value)
	const n = 4000 // ~4 MB: several 1 MiB segments
	var rs []*kgo.Record
	for i := 0; i < n; i++ {
		rs = append(rs, &kgo.Record{Topic: "dr", Partition: 0, Value: value})
	}
	rs = append(rs, &kgo.Record{Topic: "dr", Partition: 1, Value: value})
	if err := p.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	ref := iggy.TopicRef{Stream: "kafka", Topic: "dr"}
	info, err := a.Client.RefreshTopic(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	segsBefore := info.Details.Partitions[0].SegmentsCount
	if segsBefore < 3 {
		t.Fatalf("only %d segments before", segsBefore)
	}

	adm := kadm.NewClient(b.kgoClient(t))
	del := func(offsets map[int32]int64) kadm.DeleteRecordsResponses {
		t.Helper()
		o := kadm.Offsets{}
		for part, off := range offsets {
			o.Add(kadm.Offset{Topic: "dr", Partition: part, At: off})
		}
		r, err := adm.DeleteRecords(adminCtx(t), o)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	r := del(map[int32]int64{0: 2500, 1: -1})
	if x, _ := r.Lookup("dr", 0); x.Err != nil || x.LowWatermark != 2500 {
		t.Fatalf("p0: %+v", x)
	}
	if x, _ := r.Lookup("dr", 1); x.Err != nil || x.LowWatermark != 1 {
		t.Fatalf("p1 to the high watermark: %+v", x)
	}
	r = del(map[int32]int64{0: 100})
	if x, _ := r.Lookup("dr", 0); x.Err != nil || x.LowWatermark != 2500 {
		t.Fatalf("p0 lower: %+v", x)
	}
	r = del(map[int32]int64{0: n + 1})
	if x, _ := r.Lookup("dr", 0); x.Err != kerr.OffsetOutOfRange {
		t.Fatalf("p0 above the high watermark: %+v", x)
	}

	// Every sidecar answers the new log start: a (which did not serve the
	// DeleteRecords) too.
	starts, err := kadm.NewClient(ca).ListStartOffsets(ctx, "dr")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := starts.Lookup("dr", 0); o.Offset != 2500 {
		t.Errorf("a: earliest p0 %+v", o)
	}
	if o, _ := starts.Lookup("dr", 1); o.Offset != 1 {
		t.Errorf("a: earliest p1 %+v", o)
	}

	// Fetch below the log start: OFFSET_OUT_OF_RANGE; at it: records, with
	// the log start offset.
	fetch := func(offset int64) kmsg.FetchResponseTopicPartition {
		req := kmsg.NewPtrFetchRequest()
		req.MaxWaitMillis, req.MaxBytes = 100, 1<<20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = "dr"
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes = 0, offset, 1<<20
		rt.Partitions = append(rt.Partitions, fp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, clientAt(t, b, 1, 12))
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0].Partitions[0]
	}
	// (through b, which served the DeleteRecords: another sidecar's Fetch
	// follows within a second, topicconfig/store.go)
	if fp := fetch(100); fp.ErrorCode != kerr.OffsetOutOfRange.Code {
		t.Errorf("fetch 100: error %d", fp.ErrorCode)
	}
	if fp := fetch(2500); fp.ErrorCode != 0 || fp.LogStartOffset != 2500 || len(fp.RecordBatches) == 0 {
		t.Errorf("fetch 2500: error %d log start %d, %d bytes", fp.ErrorCode, fp.LogStartOffset, len(fp.RecordBatches))
	}
	// A consumer from the start begins at the log start.
	cons := b.kgoClient(t, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"dr": {0: kgo.NewOffset().AtStart()}}))
	fs := cons.PollFetches(ctx)
	if err := fs.Err0(); err != nil {
		t.Fatal(err)
	}
	if recs := fs.Records(); len(recs) == 0 || recs[0].Offset != 2500 {
		t.Errorf("consumer from the start: %d records, first %+v", len(recs), recs[:min(len(recs), 1)])
	}

	// Iggy dropped the sealed segments wholly below 2500, and nothing at or
	// above it.
	info, err = a.Client.RefreshTopic(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if segs := info.Details.Partitions[0].SegmentsCount; segs >= segsBefore {
		t.Errorf("segments %d, before %d: none deleted", segs, segsBefore)
	}
	first, err := a.Client.Poll(ctx, &icodec.PollMessagesRequest{
		Consumer: icodec.Consumer{Kind: icodec.ConsumerKindConsumer, ID: icodec.Identifier{Kind: icodec.IdentifierKindNumeric, Value: []byte{1, 0, 0, 0}}},
		StreamID: ref.StreamID(), TopicID: ref.TopicID(), PartitionID: icodec.OptionalPartition{Present: true},
		Strategy: icodec.PollingStrategy{Kind: icodec.PollingKindFirst}, Count: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	it := first.Messages()
	if !it.Next() || it.Message().Offset == 0 || it.Message().Offset > 2500 {
		t.Errorf("first Iggy offset after the delete: %+v", it.Message())
	}
	first.Release()

	// Unknown topic, internal topic.
	req := kmsg.NewPtrDeleteRecordsRequest()
	for _, topic := range []string{"no-such", "__consumer_offsets", "bad name"} {
		rt := kmsg.NewDeleteRecordsRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewDeleteRecordsRequestTopicPartition()
		rp.Offset = 1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
	}
	raw, err := b.kgoClient(t).Broker(0).Request(ctx, req) // unsharded: kgo would refuse unknown topics itself
	if err != nil {
		t.Fatal(err)
	}
	resp := raw.(*kmsg.DeleteRecordsResponse)
	want := []int16{kerr.UnknownTopicOrPartition.Code, kerr.InvalidTopicException.Code, kerr.InvalidTopicException.Code}
	for i, rt := range resp.Topics {
		if rt.Partitions[0].ErrorCode != want[i] || rt.Partitions[0].LowWatermark != -1 {
			t.Errorf("%s: %+v", rt.Topic, rt.Partitions[0])
		}
	}
}
