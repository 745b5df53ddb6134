package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The conversion of an empty group between the two protocols, as Kafka 4.4
// does it (group.consumer.migration.policy, default bidirectional): a
// classic group whose members all left (its committed offsets kept) is
// joined by a consumer-protocol member, which is assigned every partition
// and resumes at the committed offsets; once it leaves, a classic member
// joins the emptied consumer-protocol group and resumes the same way.
// Nothing committed is read twice, nothing is lost.
func TestConsumerProtocolEmptyGroupConversion(t *testing.T) {
	for _, tg := range targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			if !servesConsumerProtocol(t, tg) {
				if tg.Sidecar || tg.Kafka {
					t.Fatalf("%s does not serve ConsumerGroupHeartbeat v1", tg.Name)
				}
				t.Skipf("%s does not serve the consumer group protocol", tg.Name)
			}
			if !tg.Sidecar && !tg.Kafka {
				// kfake keeps an emptied group's protocol type and answers the
				// other protocol's join UNKNOWN_MEMBER_ID: the conversion is
				// held to Kafka 4.4, not to the fake.
				t.Skipf("%s does not convert groups between the protocols; the test compares the sidecar with Kafka", tg.Name)
			}
			const partitions, per = 3, 10
			topic := uniqueTopic("cgconv")
			group := topic + "-g"
			createTopic(t, tg, topic, partitions)
			produce := func(round int) {
				cl := newKgo(t, tg, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.DefaultProduceTopic(topic))
				var rs []*kgo.Record
				for p := range int32(partitions) {
					for i := range per {
						rs = append(rs, &kgo.Record{Partition: p, Value: fmt.Appendf(nil, "%d-%d-%d", round, p, i)})
					}
				}
				if err := cl.ProduceSync(testCtx(t, 30*time.Second), rs...).FirstErr(); err != nil {
					t.Fatal(err)
				}
			}
			// consume reads with one member of the given protocol until it
			// has want records, commits them, and leaves the group.
			consume := func(round int, opts ...kgo.Opt) {
				t.Helper()
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(tg.Bootstrap), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
					kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(), kgo.FetchMaxWait(300 * time.Millisecond)}, opts...)...)
				if err != nil {
					t.Fatal(err)
				}
				defer cl.Close()
				seen := map[string]bool{}
				for len(seen) < partitions*per {
					fs := cl.PollFetches(ctx)
					if ctx.Err() != nil {
						t.Fatalf("round %d: consumed %d of %d records", round, len(seen), partitions*per)
					}
					for _, e := range fs.Errors() {
						t.Fatalf("round %d: %v", round, e.Err)
					}
					fs.EachRecord(func(r *kgo.Record) {
						var rr, p, i int
						if _, err := fmt.Sscanf(string(r.Value), "%d-%d-%d", &rr, &p, &i); err != nil || rr != round {
							t.Fatalf("round %d read %q: a committed record read again", round, r.Value)
						}
						seen[string(r.Value)] = true
					})
				}
				if err := cl.CommitUncommittedOffsets(ctx); err != nil {
					t.Fatalf("round %d: commit: %v", round, err)
				}
				cl.LeaveGroup()
			}
			groupType := func() string {
				t.Helper()
				ls, err := kadm.NewClient(newKgo(t, tg)).ListGroups(testCtx(t, 10*time.Second))
				if err != nil {
					t.Fatal(err)
				}
				return ls[group].ProtocolType + "/" + ls[group].State
			}

			produce(0)
			consume(0) // classic
			t.Logf("%s: after the classic member left: %s", tg.Name, groupType())
			produce(1)
			consume(1, kgo.ServerSideBalancer()) // consumer protocol on the emptied classic group
			t.Logf("%s: after the consumer-protocol member left: %s", tg.Name, groupType())
			produce(2)
			consume(2) // classic again on the emptied consumer-protocol group
		})
	}
}
