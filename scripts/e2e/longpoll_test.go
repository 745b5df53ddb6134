package e2e

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Long poll: a Fetch with max_wait must be answered as soon as a record
// arrives, and an idle Fetch must be held for max_wait (not answered at once,
// not held much longer). Bounds are generous: the suite shares two cores with
// the rest of `go test ./...`.
const (
	longPollMaxWait = 5 * time.Second
	// produceDelay is the scenario's "produced 100 ms later", counted from
	// the moment the consumer's Fetch was written to the broker.
	produceDelay = 100 * time.Millisecond
	// wakeBound is "well under max_wait": how long after the produce ack the
	// waiting consumer may take to return the record.
	wakeBound = 2500 * time.Millisecond
	// idleSlack is how much longer than max_wait an idle Fetch may take.
	idleSlack = 3 * time.Second
)

func TestLongPoll(t *testing.T) {
	for _, tg := range targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			t.Run("wakes on produce", func(t *testing.T) {
				t.Parallel()
				longPollWakes(t, tg)
			})
			t.Run("idle fetch returns after max_wait", func(t *testing.T) {
				t.Parallel()
				longPollIdle(t, tg)
			})
		})
	}
}

// fetchWrites is a kgo hook that reports each Fetch request written.
type fetchWrites chan time.Time

func (f fetchWrites) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if key == kmsg.Fetch.Int16() && err == nil {
		select {
		case f <- time.Now():
		default:
		}
	}
}

// longPollWakes: a kgo consumer waits with FetchMaxWait 5 s on an empty
// partition; a record produced 100 ms after its Fetch went out must reach it
// well before the 5 s are up.
func longPollWakes(t *testing.T, tg Target) {
	topic := uniqueTopic("longpoll-wake")
	createTopic(t, tg, topic, 1)

	// A producer that is already connected, so that its set-up is not timed.
	producer := newKgo(t, tg, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := producer.Ping(testCtx(t, 10*time.Second)); err != nil {
		t.Fatalf("%s: producer ping: %v", tg.Name, err)
	}

	fetches := make(fetchWrites, 16)
	consumer := newKgo(t, tg,
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(0)}}),
		kgo.FetchMaxWait(longPollMaxWait),
		kgo.WithHooks(fetches),
	)
	type got struct {
		at  time.Time
		rec *kgo.Record
		err error
	}
	ctx := testCtx(t, 30*time.Second)
	recv := make(chan got, 1)
	go func() {
		for {
			fs := consumer.PollFetches(ctx)
			if ctx.Err() != nil {
				recv <- got{err: ctx.Err()}
				return
			}
			if errs := fs.Errors(); len(errs) > 0 {
				recv <- got{err: errs[0].Err}
				return
			}
			if recs := fs.Records(); len(recs) > 0 {
				recv <- got{at: time.Now(), rec: recs[0]}
				return
			}
		}
	}()

	var fetchAt time.Time
	select {
	case fetchAt = <-fetches:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: the consumer wrote no Fetch within 10 s", tg.Name)
	}
	<-time.After(produceDelay - time.Since(fetchAt)) // the scenario's delay, not a synchronisation
	produceAt := time.Now()
	if err := producer.ProduceSync(ctx, &kgo.Record{Partition: 0, Value: []byte("wake up")}).FirstErr(); err != nil {
		t.Fatalf("%s: produce: %v", tg.Name, err)
	}
	ackAt := time.Now()

	g := <-recv
	if g.err != nil {
		t.Fatalf("%s: consumer: %v", tg.Name, g.err)
	}
	if string(g.rec.Value) != "wake up" || g.rec.Offset != 0 {
		t.Fatalf("%s: consumer got %q at offset %d, want \"wake up\" at 0", tg.Name, g.rec.Value, g.rec.Offset)
	}
	// The record must have come on the Fetch that was waiting: no other Fetch
	// may have been written before the produce started (a broker that
	// answered the first one at once would show a second here).
	for len(fetches) > 0 {
		if at := <-fetches; at.Before(produceAt) {
			t.Errorf("%s: the consumer wrote another Fetch %v after its first, before the produce: the first Fetch was not held",
				tg.Name, at.Sub(fetchAt).Round(time.Millisecond))
			break
		}
	}
	wake := g.at.Sub(ackAt)
	sinceFetch := g.at.Sub(fetchAt)
	t.Logf("%s: record reached the waiting consumer %v after the produce ack (%v after its Fetch with max_wait %v went out)",
		tg.Name, wake.Round(time.Millisecond), sinceFetch.Round(time.Millisecond), longPollMaxWait)
	if wake > wakeBound {
		t.Errorf("%s: the waiting consumer got the record %v after the produce ack, want well under max_wait %v (bound %v): the long poll did not wake on produce",
			tg.Name, wake.Round(time.Millisecond), longPollMaxWait, wakeBound)
	}
}

// longPollIdle: a raw Fetch (max_wait 5 s, min_bytes 1) on an empty partition
// must come back empty, without error, after about max_wait.
func longPollIdle(t *testing.T, tg Target) {
	topic := uniqueTopic("longpoll-idle")
	createTopic(t, tg, topic, 1)
	cl := newKgo(t, tg)
	ctx := testCtx(t, 30*time.Second)

	mreq := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(topic)
	mreq.Topics = append(mreq.Topics, mt)
	mresp, err := mreq.RequestWith(ctx, cl)
	if err != nil || len(mresp.Topics) != 1 || len(mresp.Topics[0].Partitions) != 1 {
		t.Fatalf("%s: metadata for %s: %v", tg.Name, topic, err)
	}
	mtopic := mresp.Topics[0]
	leader := cl.Broker(int(mtopic.Partitions[0].Leader))
	// Connect first, so that only the Fetch is timed.
	if _, err := leader.Request(ctx, kmsg.NewPtrApiVersionsRequest()); err != nil {
		t.Fatalf("%s: ApiVersions: %v", tg.Name, err)
	}

	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MaxWaitMillis = int32(longPollMaxWait / time.Millisecond)
	req.MinBytes = 1
	req.MaxBytes = 1 << 20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = topic
	ft.TopicID = mtopic.TopicID
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.Partition = 0
	fp.FetchOffset = 0
	fp.PartitionMaxBytes = 1 << 20
	fp.CurrentLeaderEpoch = -1
	fp.LastFetchedEpoch = -1
	fp.LogStartOffset = -1
	ft.Partitions = append(ft.Partitions, fp)
	req.Topics = append(req.Topics, ft)

	start := time.Now()
	kresp, err := leader.Request(ctx, req)
	took := time.Since(start)
	if err != nil {
		t.Fatalf("%s: idle fetch: %v", tg.Name, err)
	}
	resp := kresp.(*kmsg.FetchResponse)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		t.Fatalf("%s: idle fetch: top-level error %v", tg.Name, err)
	}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
				t.Errorf("%s: idle fetch, partition %d: %v", tg.Name, rp.Partition, err)
			}
			if len(rp.RecordBatches) != 0 || rp.HighWatermark != 0 {
				t.Errorf("%s: idle fetch, partition %d: %d bytes of records, high watermark %d; want none and 0", tg.Name, rp.Partition, len(rp.RecordBatches), rp.HighWatermark)
			}
		}
	}
	t.Logf("%s: idle fetch with max_wait %v returned after %v", tg.Name, longPollMaxWait, took.Round(time.Millisecond))
	if took < longPollMaxWait-100*time.Millisecond {
		t.Errorf("%s: idle fetch returned after %v, before max_wait %v: the broker does not hold an empty fetch", tg.Name, took.Round(time.Millisecond), longPollMaxWait)
	}
	if took > longPollMaxWait+idleSlack {
		t.Errorf("%s: idle fetch returned after %v, more than max_wait %v + %v", tg.Name, took.Round(time.Millisecond), longPollMaxWait, idleSlack)
	}
}
