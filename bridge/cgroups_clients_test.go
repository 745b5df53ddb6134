package bridge_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The consumer group protocol (KIP-848) with an unmodified client:
// franz-go consumers with ServerSideBalancer (ConsumerGroupHeartbeat v1,
// the "uniform" assignor). Three members split 12 partitions with no
// overlap; a fourth joins and partitions move incrementally (the three keep
// what they had but give some up); every record is consumed.

// cgStack starts a stack with short consumer-protocol timeouts.
func cgStack(t *testing.T) *stack {
	t.Helper()
	return startStack(t, func(o *stackOpts) {
		o.bridge.ConsumerGroups.HeartbeatInterval = 200 * time.Millisecond
		o.bridge.ConsumerGroups.SessionTimeout = 3 * time.Second
	})
}

// cgOwnership describes the group with ConsumerGroupDescribe and returns
// what each member owns of topic; ok is false unless the group is Stable
// with n members, every partition owned once.
func cgOwnership(ctx context.Context, cl *kgo.Client, group, topic string, n int) (map[string][]int32, bool, string) {
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = []string{group}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, false, err.Error()
	}
	g := resp.Groups[0]
	if g.ErrorCode != 0 || g.State != "Stable" || len(g.Members) != n {
		return nil, false, fmt.Sprintf("code %d state %s, %d members", g.ErrorCode, g.State, len(g.Members))
	}
	own := map[string][]int32{}
	seen := map[int32]bool{}
	for _, m := range g.Members {
		for _, tp := range m.Assignment.TopicPartitions {
			if tp.Topic != topic {
				return nil, false, "assigned topic " + tp.Topic
			}
			for _, p := range tp.Partitions {
				if seen[p] {
					return nil, false, fmt.Sprintf("partition %d owned twice", p)
				}
				seen[p] = true
				own[m.MemberID] = append(own[m.MemberID], p)
			}
		}
		if len(own[m.MemberID]) == 0 {
			return nil, false, "member " + m.MemberID + " owns nothing"
		}
	}
	return own, len(seen) == grpPartitions, fmt.Sprintf("%d partitions owned: %v", len(seen), own)
}

func TestConsumerProtocolFranzGo(t *testing.T) {
	s := cgStack(t)
	topic, group := "cg-kgo", "cg-kgo-group"
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	admCl := s.kgoClient(t)
	if _, err := kadm.NewClient(admCl).CreateTopic(ctx, grpPartitions, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	grpProduce(t, s, topic)
	tally := newGrpTally()

	var wg sync.WaitGroup
	start := func(name string) {
		cl := s.kgoClient(t, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.ServerSideBalancer(),
			kgo.Balancers(kgo.CooperativeStickyBalancer()), kgo.FetchMaxWait(200*time.Millisecond),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				fs := cl.PollFetches(ctx)
				if fs.IsClientClosed() || ctx.Err() != nil {
					return
				}
				fs.EachRecord(func(r *kgo.Record) { tally.add(name, r.Partition, r.Offset) })
			}
		}()
	}
	defer func() { cancel(); wg.Wait() }()

	for i := range 3 {
		start(fmt.Sprint("c", i))
	}
	var before map[string][]int32
	grpWait(t, 30*time.Second, "three members split the partitions", func() (bool, string) {
		own, ok, state := cgOwnership(ctx, admCl, group, topic, 3)
		before = own
		return ok, state
	})
	for id, ps := range before {
		if len(ps) != 4 {
			t.Fatalf("member %s owns %v, want 4 of 12 (uniform)", id, ps)
		}
	}

	start("c3")
	var after map[string][]int32
	grpWait(t, 30*time.Second, "four members split the partitions", func() (bool, string) {
		own, ok, state := cgOwnership(ctx, admCl, group, topic, 4)
		after = own
		return ok, state
	})
	for id, ps := range after {
		if len(ps) != 3 {
			t.Fatalf("member %s owns %v, want 3 of 12", id, ps)
		}
		if old, ok := before[id]; ok {
			for _, p := range ps {
				if !slices.Contains(old, p) {
					t.Fatalf("member %s gained partition %d (had %v): only the new member gains", id, p, old)
				}
			}
		}
	}

	grpProduce(t, s, topic)
	grpWait(t, 30*time.Second, "every record consumed", func() (bool, string) {
		return tally.covered(2 * grpPerPartition), tally.String()
	})
	t.Logf("consumed per member %s; consumed twice: %v", tally, tally.duplicates())
}
