package e2e

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// roundTripClient is one real Kafka client under test.
type roundTripClient struct {
	name string
	// ready checks the client's own dependencies (a binary, a compiled Java
	// program); nil when there are none.
	ready func(t *testing.T)
	// records returns what this client produces: the canonical set, adapted
	// where the client cannot express a case (each adaptation is documented
	// at the client).
	records func() []Rec
	// produce sends recs with codec and returns them with the partition and
	// offset the producer was told for each.
	produce func(t *testing.T, tg Target, topic, codec string, recs []Rec) []Rec
	// consume reads want records from the start of every partition.
	consume func(t *testing.T, tg Target, topic string, partitions int32, want int) []Rec
	// consumerView, when set, turns the produced records into what this
	// client's consumer can show of them (documented at the client). franz-go's
	// independent read-back is still compared with the produced records as
	// they are.
	consumerView func(produced []Rec) []Rec
	// codecCheck, when set, replaces the default check (every batch of every
	// partition compressed with the codec under test) for targets that keep
	// producer batches. got is each partition's batch codecs, in order.
	codecCheck func(t *testing.T, who, codec string, got map[int32][]int8)
	// runAll, when set, replaces produce and consume: one call per target
	// produces and consumes recs on every codec's topic (topics[codec]), for
	// a client whose start-up is expensive (one JVM instead of five).
	runAll func(t *testing.T, tg Target, topics map[string]string, recs []Rec) map[string]codecRun
}

// codecRun is what runAll reports for one codec.
type codecRun struct {
	produced, consumed []Rec
	err                error
}

// runRoundTrips runs c against every target and every codec: the client
// produces its records to a fresh topic, then consumes them from the start.
// What the client consumed, and what franz-go reads back independently, must
// both equal what the producer was told, offsets included.
func runRoundTrips(t *testing.T, c roundTripClient) {
	if c.ready != nil {
		c.ready(t)
	}
	for _, tg := range targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			topics := map[string]string{}
			for _, codec := range codecs {
				topics[codec] = uniqueTopic(c.name + "-" + codec)
				createTopic(t, tg, topics[codec], canonicalPartitions)
			}
			var all map[string]codecRun
			if c.runAll != nil {
				start := time.Now()
				all = c.runAll(t, tg, topics, c.records())
				t.Logf("%s against %s: every codec in %v", c.name, tg.Name, time.Since(start).Round(time.Millisecond))
			}
			for _, codec := range codecs {
				t.Run(codec, func(t *testing.T) {
					start := time.Now()
					who := fmt.Sprintf("%s producing %s to %s", c.name, codec, tg.Name)
					topic := topics[codec]
					recs := c.records()
					var produced, consumed []Rec
					if all != nil {
						r, ok := all[codec]
						if !ok || r.err != nil {
							t.Fatalf("%s: %v", who, cmp.Or(r.err, fmt.Errorf("no result")))
						}
						produced, consumed = r.produced, r.consumed
					} else {
						produced = c.produce(t, tg, topic, codec, recs)
					}
					checkProducerReport(t, who, recs, produced)
					if t.Failed() {
						return
					}
					if all == nil {
						consumed = c.consume(t, tg, topic, canonicalPartitions, len(produced))
					}
					view := produced
					if c.consumerView != nil {
						view = c.consumerView(cloneRecs(produced))
					}
					assertRecords(t, who+", read by "+c.name, view, consumed)
					if c.name != "kgo" {
						assertRecords(t, who+", read by kgo", produced, kgoConsume(t, tg, topic, canonicalPartitions, len(produced)))
					}
					if tg.KeepsProducerBatches {
						checkBatchCodec(t, who, tg, topic, canonicalPartitions, codec, c.codecCheck)
					}
					t.Logf("%s: %d records in %v", who, len(produced), time.Since(start).Round(time.Millisecond))
				})
			}
		})
	}
}

// checkProducerReport checks that the producer reported a partition and an
// offset for every record, the partition it was asked for, and offsets that
// count up from 0 in each partition of the fresh topic.
func checkProducerReport(t *testing.T, who string, sent, produced []Rec) {
	t.Helper()
	if len(sent) != len(produced) {
		t.Fatalf("%s: sent %d records, the producer reported %d", who, len(sent), len(produced))
	}
	byPart := map[int32][]int64{}
	for i, p := range produced {
		if p.Partition != sent[i].Partition {
			t.Errorf("%s: record %d [%s]: asked for partition %d, producer reported %d", who, i, sent[i].Label, sent[i].Partition, p.Partition)
		}
		if p.Offset < 0 {
			t.Errorf("%s: record %d [%s]: producer reported no offset (%d)", who, i, sent[i].Label, p.Offset)
		}
		byPart[p.Partition] = append(byPart[p.Partition], p.Offset)
	}
	for part, offs := range byPart {
		slices.Sort(offs)
		for i, o := range offs {
			if o != int64(i) {
				t.Errorf("%s: partition %d: producer offsets %v, want 0..%d in a fresh topic", who, part, offs, len(offs)-1)
				break
			}
		}
	}
}

// checkBatchCodec fetches the raw record batches of every partition and checks
// that each was compressed with codec: proof that the client really used the
// codec under test. Only for targets that return batches as produced.
func checkBatchCodec(t *testing.T, who string, tg Target, topic string, partitions int32, codec string,
	custom func(t *testing.T, who, codec string, got map[int32][]int8)) {
	t.Helper()
	got, err := batchCodecs(testCtx(t, 20*time.Second), newKgo(t, tg), topic, partitions)
	if err != nil {
		t.Errorf("%s: raw fetch for the codec check: %v", who, err)
		return
	}
	if custom != nil {
		custom(t, who, codec, got)
		return
	}
	want := codecAttr[codec]
	for p, attrs := range got {
		for i, a := range attrs {
			if a != want {
				t.Errorf("%s: partition %d batch %d has compression %d, want %d (%s); batches: %v", who, p, i, a, want, codec, attrs)
				break
			}
		}
	}
}

// batchCodecs returns, per partition, the compression attribute of every
// record batch from offset 0, as the broker returns them.
func batchCodecs(ctx context.Context, cl *kgo.Client, topic string, partitions int32) (map[int32][]int8, error) {
	mreq := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(topic)
	mreq.Topics = append(mreq.Topics, mt)
	mresp, err := mreq.RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("metadata: %w", err)
	}
	if len(mresp.Topics) != 1 {
		return nil, fmt.Errorf("metadata returned %d topics", len(mresp.Topics))
	}
	mtopic := mresp.Topics[0]
	if err := kerr.ErrorForCode(mtopic.ErrorCode); err != nil {
		return nil, fmt.Errorf("metadata for %s: %w", topic, err)
	}
	leaders := map[int32]int32{}
	for _, p := range mtopic.Partitions {
		leaders[p.Partition] = p.Leader
	}
	out := map[int32][]int8{}
	for p := range partitions {
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID = -1
		req.MaxWaitMillis = 100
		req.MinBytes = 1
		req.MaxBytes = 16 << 20
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic = topic
		ft.TopicID = mtopic.TopicID
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition = p
		fp.FetchOffset = 0
		fp.PartitionMaxBytes = 16 << 20
		ft.Partitions = append(ft.Partitions, fp)
		req.Topics = append(req.Topics, ft)
		kresp, err := cl.Broker(int(leaders[p])).Request(ctx, req)
		if err != nil {
			return nil, fmt.Errorf("fetch partition %d: %w", p, err)
		}
		resp := kresp.(*kmsg.FetchResponse)
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
					return nil, fmt.Errorf("fetch partition %d: %w", rp.Partition, err)
				}
				attrs, err := batchAttributes(rp.RecordBatches)
				if err != nil {
					return nil, fmt.Errorf("partition %d: %w", rp.Partition, err)
				}
				out[rp.Partition] = append(out[rp.Partition], attrs...)
			}
		}
	}
	return out, nil
}

// batchAttributes walks a Fetch response's records field and returns each
// v2 batch's compression codec.
func batchAttributes(b []byte) ([]int8, error) {
	var out []int8
	for len(b) >= 12 {
		length := int(int32(uint32(b[8])<<24 | uint32(b[9])<<16 | uint32(b[10])<<8 | uint32(b[11])))
		size := 12 + length
		if length < 0 || size > len(b) {
			break // a partial batch at the end of the response
		}
		var rb kmsg.RecordBatch
		if err := rb.ReadFrom(b[:size]); err != nil {
			return nil, fmt.Errorf("record batch: %w", err)
		}
		if rb.Magic != 2 {
			return nil, fmt.Errorf("record batch magic %d, want 2", rb.Magic)
		}
		out = append(out, int8(rb.Attributes&0x07))
		b = b[size:]
	}
	return out, nil
}
