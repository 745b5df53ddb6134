package e2e

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Committed offsets keep Kafka's contract whatever the offset: Kafka stores
// any offset a member commits (0 on a partition that has no record yet, 10
// on empty partitions, beyond the end of a partition with records) and
// reads it back; -1 reads back as nothing committed; a normal commit moves
// it on. Every target runs the same script and must show the transcript
// Kafka shows (the run against Apache Kafka, KAFKA_IGGY_E2E_KAFKA=1, checks
// that the expected transcript is Kafka's own). The sidecar runs on
// whichever protocol its embedded server speaks
// (KAFKA_IGGY_E2E_IGGY_PROTOCOL=0.11 or 0.12).

// TestCommittedOffsetsAnyValue commits the offsets Iggy 0.9 refuses to
// store and reads them back through OffsetFetch.
func TestCommittedOffsetsAnyValue(t *testing.T) {
	want := []string{
		"commit p1=0: p1=NONE",
		"fetch: p0=-1 p1=0 p2=-1",
		"commit p1=10 p2=10: p1=NONE p2=NONE",
		"fetch: p0=-1 p1=10 p2=10",
		"commit p0=100: p0=NONE",
		"fetch: p0=100 p1=10 p2=10",
		"commit p0=4 p1=0: p0=NONE p1=NONE",
		"fetch: p0=4 p1=0 p2=10",
		"produce p1 x3",
		"commit p1=2: p1=NONE",
		"fetch: p0=4 p1=2 p2=10",
		"commit p0=-1 p2=-1: p0=NONE p2=NONE",
		"fetch: p0=-1 p1=2 p2=-1",
		"commit p2=7: p2=NONE",
		"fetch: p0=-1 p1=2 p2=7",
	}
	for _, tg := range targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			got := anyOffsetScript(t, tg)
			if !slices.Equal(got, want) {
				t.Fatalf("%s: transcript differs from Kafka's\ngot:\n  %s\nwant:\n  %s", tg.Name, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
			}
		})
	}
}

// anyOffsetScript runs the commit cases on a fresh topic of three
// partitions (five records in partition 0) and returns the transcript.
func anyOffsetScript(t *testing.T, tg Target) []string {
	topic := uniqueTopic("anyoff")
	group := topic + "-g"
	createTopic(t, tg, topic, 3)
	cl := newKgo(t, tg, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	adm := kadm.NewClient(cl)
	ctx := testCtx(t, 60*time.Second)
	produce := func(p int32, n int) {
		for i := range n {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: p, Value: fmt.Appendf(nil, "v%d", i)}).FirstErr(); err != nil {
				t.Fatalf("%s: produce: %v", tg.Name, err)
			}
		}
	}
	produce(0, 5)

	var tr []string
	commit := func(offsets ...int64) { // pairs: partition, offset
		var os kadm.Offsets
		var name []string
		for i := 0; i < len(offsets); i += 2 {
			os.Add(kadm.Offset{Topic: topic, Partition: int32(offsets[i]), At: offsets[i+1], LeaderEpoch: -1})
			name = append(name, fmt.Sprintf("p%d=%d", offsets[i], offsets[i+1]))
		}
		resps, err := adm.CommitOffsets(ctx, group, os)
		if err != nil {
			t.Fatalf("%s: commit %v: %v", tg.Name, name, err)
		}
		var codes []string
		for i := 0; i < len(offsets); i += 2 {
			r, ok := resps.Lookup(topic, int32(offsets[i]))
			code := "missing"
			if ok {
				code = "NONE"
				var ke *kerr.Error
				if errors.As(r.Err, &ke) {
					code = ke.Message
				} else if r.Err != nil {
					code = r.Err.Error()
				}
			}
			codes = append(codes, fmt.Sprintf("p%d=%s", offsets[i], code))
		}
		tr = append(tr, fmt.Sprintf("commit %s: %s", strings.Join(name, " "), strings.Join(codes, " ")))
	}
	fetch := func() {
		got, err := adm.FetchOffsetsForTopics(ctx, group, topic)
		if err != nil {
			t.Fatalf("%s: fetch offsets: %v", tg.Name, err)
		}
		var parts []string
		for p := int32(0); p < 3; p++ {
			o, ok := got.Lookup(topic, p)
			switch {
			case !ok:
				parts = append(parts, fmt.Sprintf("p%d=missing", p))
			case o.Err != nil:
				parts = append(parts, fmt.Sprintf("p%d=%v", p, o.Err))
			default:
				parts = append(parts, fmt.Sprintf("p%d=%d", p, o.At))
			}
		}
		tr = append(tr, "fetch: "+strings.Join(parts, " "))
	}

	commit(1, 0)
	fetch()
	commit(1, 10, 2, 10)
	fetch()
	commit(0, 100)
	fetch()
	commit(0, 4, 1, 0)
	fetch()
	produce(1, 3)
	tr = append(tr, "produce p1 x3")
	commit(1, 2)
	fetch()
	commit(0, -1, 2, -1)
	fetch()
	commit(2, 7)
	fetch()
	return tr
}

// TestConsumerAtLatestCommitsPosition: a franz-go group consumer with
// auto.offset.reset=latest on a new topic commits its position (0, the
// topic is empty), leaves; a producer writes; the consumer comes back and
// reads what was written after its commit, on Kafka as on the sidecar.
// With the commit of 0 lost it would start at the end again and read
// nothing.
func TestConsumerAtLatestCommitsPosition(t *testing.T) {
	for _, tg := range targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			topic := uniqueTopic("latest")
			group := topic + "-g"
			createTopic(t, tg, topic, 1)
			ctx := testCtx(t, 90*time.Second)

			// First life: join, be assigned, commit the position.
			assigned := make(chan struct{}, 1)
			c1 := newKgo(t, tg, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
				kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()), kgo.DisableAutoCommit(),
				kgo.OnPartitionsAssigned(func(context.Context, *kgo.Client, map[string][]int32) {
					select {
					case assigned <- struct{}{}:
					default:
					}
				}))
			pollCtx, cancel := context.WithCancel(ctx)
			done := make(chan struct{})
			go func() {
				defer close(done)
				for pollCtx.Err() == nil {
					c1.PollFetches(pollCtx)
				}
			}()
			select {
			case <-assigned:
			case <-ctx.Done():
				t.Fatalf("%s: the first consumer was never assigned the partition", tg.Name)
			}
			var commitErr error
			c1.CommitOffsetsSync(ctx, map[string]map[int32]kgo.EpochOffset{topic: {0: {Epoch: -1, Offset: 0}}},
				func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
					commitErr = err
					if err == nil {
						for _, rt := range resp.Topics {
							for _, rp := range rt.Partitions {
								if e := kerr.ErrorForCode(rp.ErrorCode); e != nil {
									commitErr = e
								}
							}
						}
					}
				})
			if commitErr != nil {
				t.Fatalf("%s: commit of the position: %v", tg.Name, commitErr)
			}
			cancel()
			<-done
			c1.LeaveGroup()
			c1.Close()

			// A producer writes three records.
			p := newKgo(t, tg)
			for i := range 3 {
				if err := p.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "after-%d", i)}).FirstErr(); err != nil {
					t.Fatalf("%s: produce: %v", tg.Name, err)
				}
			}

			// Second life: it starts from the committed 0 and reads them.
			c2 := newKgo(t, tg, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
				kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()), kgo.DisableAutoCommit())
			readCtx, cancelRead := context.WithTimeout(ctx, 20*time.Second)
			defer cancelRead()
			var got []string
			for len(got) < 3 && readCtx.Err() == nil {
				fs := c2.PollFetches(readCtx)
				fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
			}
			if want := []string{"after-0", "after-1", "after-2"}; !slices.Equal(got, want) {
				t.Fatalf("%s: the consumer back at its commit read %q, want %q", tg.Name, got, want)
			}
		})
	}
}
