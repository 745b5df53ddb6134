package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The rolling restart of a live classic group into the consumer protocol
// (group.protocol=classic -> consumer, one member at a time), compared
// between Apache Kafka 4.4 and the sidecar.
//
// Kafka 4.4 (group.consumer.migration.policy, default bidirectional)
// upgrades the live classic group when the first consumer-protocol member
// joins: the classic members stay, served through JoinGroup, SyncGroup and
// Heartbeat against the consumer group's target assignment, and once every
// member is restarted the group is a consumer group; no record is lost and
// none is read twice (each member commits before it gives a partition up).
//
// The sidecar does the same (bridge/cgroups/classic.go): the same
// outcome is asserted against both.
func TestConsumerProtocolLiveUpgrade(t *testing.T) {
	for _, tg := range targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			if !tg.Sidecar && !tg.Kafka {
				t.Skipf("%s: the live upgrade is compared between the sidecar and Apache Kafka only", tg.Name)
			}
			if !servesConsumerProtocol(t, tg) {
				t.Fatalf("%s does not serve ConsumerGroupHeartbeat v1", tg.Name)
			}
			const partitions, per = 4, 25
			topic := uniqueTopic("cglive")
			group := topic + "-g"
			createTopic(t, tg, topic, partitions)

			var mu sync.Mutex
			reads := map[string]int{}        // value -> times read
			uncommitted := map[string]bool{} // read by a member whose commit failed
			total := 0
			produce := func(round int) {
				t.Helper()
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
				mu.Lock()
				total += len(rs)
				mu.Unlock()
			}
			// waitRead waits until every record produced so far was read.
			waitRead := func(what string) {
				t.Helper()
				deadline := time.Now().Add(90 * time.Second)
				for {
					mu.Lock()
					n, want := len(reads), total
					mu.Unlock()
					if n == want {
						return
					}
					if time.Now().After(deadline) {
						t.Fatalf("%s: %d of %d records read", what, n, want)
					}
					time.Sleep(100 * time.Millisecond) // polling an outcome, not synchronising
				}
			}

			type member struct {
				cl   *kgo.Client
				done chan struct{}
				errs chan error
			}
			// start runs a member that commits what it read before it lets
			// a rebalance take partitions away (BlockRebalanceOnPoll).
			start := func(opts ...kgo.Opt) *member {
				cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(tg.Bootstrap), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
					kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(), kgo.BlockRebalanceOnPoll(),
					kgo.FetchMaxWait(300 * time.Millisecond)}, opts...)...)
				if err != nil {
					t.Fatal(err)
				}
				m := &member{cl: cl, done: make(chan struct{}), errs: make(chan error, 16)}
				go func() {
					defer close(m.done)
					for {
						fs := cl.PollFetches(context.Background())
						if fs.IsClientClosed() {
							return
						}
						for _, e := range fs.Errors() {
							select {
							case m.errs <- e.Err:
							default:
							}
						}
						var vals []string
						fs.EachRecord(func(r *kgo.Record) { vals = append(vals, string(r.Value)) })
						cerr := error(nil)
						if len(vals) > 0 {
							ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
							cerr = cl.CommitUncommittedOffsets(ctx)
							cancel()
						}
						mu.Lock()
						for _, v := range vals {
							reads[v]++
							if cerr != nil {
								uncommitted[v] = true
							}
						}
						mu.Unlock()
						cl.AllowRebalance()
					}
				}()
				return m
			}
			stop := func(m *member) {
				t.Helper()
				m.cl.Close() // leaves the group
				<-m.done
			}
			groupType := func() string {
				t.Helper()
				ls, err := kadm.NewClient(newKgo(t, tg)).ListGroups(testCtx(t, 10*time.Second))
				if err != nil {
					t.Fatal(err)
				}
				return ls[group].GroupType
			}
			checkOnce := func() {
				t.Helper()
				mu.Lock()
				defer mu.Unlock()
				for v, n := range reads {
					if n > 1 && !uncommitted[v] {
						t.Errorf("%s read %d times, its first read committed", v, n)
					}
				}
			}

			a, b := start(), start() // classic members (cooperative-sticky)
			produce(0)
			waitRead("two classic members")
			if gt := groupType(); gt != "classic" {
				t.Fatalf("group type %q with two classic members, want classic", gt)
			}

			// The rolling restart, one member at a time.
			c := start(kgo.ServerSideBalancer())
			produce(1)
			waitRead("two classic members and one consumer-protocol member")
			if gt := groupType(); gt != "consumer" {
				t.Fatalf("group type %q after a consumer-protocol member joined the live classic group, want consumer", gt)
			}
			members := func() int {
				t.Helper()
				dg, err := kadm.NewClient(newKgo(t, tg)).DescribeConsumerGroups(testCtx(t, 10*time.Second), group)
				if err != nil {
					t.Fatal(err)
				}
				return len(dg[group].Members)
			}
			if n := members(); n != 3 {
				t.Fatalf("the upgraded group has %d members, want 3 (the two classic members kept)", n)
			}
			stop(a)
			a = start(kgo.ServerSideBalancer())
			produce(2)
			waitRead("after the first classic member restarted")
			stop(b)
			b = start(kgo.ServerSideBalancer())
			produce(3)
			waitRead("after the second classic member restarted")
			if n := members(); n != 3 || groupType() != "consumer" {
				t.Fatalf("after the rolling restart: %d consumer-protocol members, group type %q; want 3, consumer", n, groupType())
			}
			stop(a)
			stop(b)
			stop(c)
			checkOnce()
		})
	}
}
