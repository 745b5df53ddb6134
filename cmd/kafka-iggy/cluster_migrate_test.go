package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafka-iggy/kafka-iggy/bridge/cluster"
)

// TestConsumerProtocolLiveMigrationAcross: KIP-848's online migration with
// the members behind different sidecars of one domain. Two classic
// franz-go members (behind sidecars 0 and 1) read a 6-partition topic; a
// consumer-protocol member joins through sidecar 2 and the group's owner
// upgrades the live group: the three share the partitions without overlap,
// and every sidecar describes it alike (ConsumerGroupDescribe: member
// types 0, 0, 1 whoever owns the group; DescribeGroups: "not a classic
// group"). The consumer-protocol member leaves and the owner downgrades
// the group: the two classic members rebalance and take every partition
// (DescribeGroups: Stable, protocol type "consumer", ListGroups type
// classic through every sidecar). Every record is read, none twice unless
// its first read was not committed.
func TestConsumerProtocolLiveMigrationAcross(t *testing.T) {
	if testing.Short() {
		t.Skip("starts sidecar processes")
	}
	iggyAddr := freeAddr(t)
	startIggyProc(t, iggyAddr, t.TempDir())
	ps := make([]*sidecarProc, 3)
	for i := range ps {
		ps[i] = startClusterSidecar(t, iggyAddr, "KAFKA_IGGY_CONSUMER_GROUPS__HEARTBEAT_INTERVAL=300ms")
	}
	const topic, group, partitions, batch = "cg-migrate", "cg-migrate-group", 6, 300
	t.Cleanup(func() {
		if t.Failed() {
			for i, p := range ps {
				for _, l := range strings.Split(p.logText(), "\n") {
					if strings.Contains(l, "group") {
						t.Logf("sidecar %d: %s", i, l)
					}
				}
			}
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	admCl, err := kgo.NewClient(kgo.SeedBrokers(ps[0].kafka))
	if err != nil {
		t.Fatal(err)
	}
	defer admCl.Close()
	if _, err := kadm.NewClient(admCl).CreateTopic(ctx, partitions, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	reads := &migReads{seen: map[string]int{}, uncommitted: map[string]bool{}}
	produced := 0
	produce := func() {
		produceValues(t, ps[0].kafka, topic, produced, batch)
		produced += batch
	}
	waitRead := func(what string) {
		t.Helper()
		waitFor(t, 90*time.Second, what, func() error {
			if n := reads.count(); n != produced {
				return fmt.Errorf("%d of %d records read", n, produced)
			}
			return nil
		})
	}

	a := runMigMember(t, ps[0].kafka, group, topic, reads, false)
	b := runMigMember(t, ps[1].kafka, group, topic, reads, false)
	produce()
	waitRead("the two classic members read every record")
	owner := shardOwner(ps, cluster.Shard(group, cluster.DefaultShards))
	if owner < 0 {
		t.Fatal("no sidecar logs ownership of the group's shard")
	}
	t.Logf("sidecar %d owns the group's shard", owner)

	c := runMigMember(t, ps[2].kafka, group, topic, reads, true)
	produce()
	waitRead("the upgraded group read every record")
	waitFor(t, 60*time.Second, "the upgraded group described alike through every sidecar", func() error {
		for i, p := range ps {
			if err := describeUpgraded(ctx, p.kafka, group, partitions); err != nil {
				return fmt.Errorf("through sidecar %d: %w", i, err)
			}
		}
		return nil
	})
	if !strings.Contains(ps[owner].logText(), "classic group upgraded to a consumer group") {
		t.Errorf("the owner (sidecar %d) did not log the upgrade", owner)
	}

	c.stop() // the last consumer-protocol member leaves: the group is downgraded
	produce()
	waitRead("the downgraded group read every record")
	waitFor(t, 60*time.Second, "the downgraded group described alike through every sidecar", func() error {
		for i, p := range ps {
			if err := describeDowngraded(ctx, p.kafka, group, partitions); err != nil {
				return fmt.Errorf("through sidecar %d: %w", i, err)
			}
		}
		return nil
	})
	if !strings.Contains(ps[owner].logText(), "consumer group downgraded to a classic group") {
		t.Errorf("the owner (sidecar %d) did not log the downgrade", owner)
	}
	produce()
	waitRead("the two classic members after the downgrade read every record")
	a.stop()
	b.stop()
	reads.checkOnce(t)
	t.Logf("%d records read by 2 classic members, upgraded by a consumer-protocol member behind another sidecar and downgraded; %d read twice after an uncommitted read",
		produced, reads.twice())
}

// migReads counts how often each record was read, and which reads were
// not committed (a member's commit failed after it read them).
type migReads struct {
	mu          sync.Mutex
	seen        map[string]int
	uncommitted map[string]bool
}

func (r *migReads) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.seen)
}

func (r *migReads) twice() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, c := range r.seen {
		if c > 1 {
			n++
		}
	}
	return n
}

func (r *migReads) checkOnce(t *testing.T) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	var bad []string
	for v, n := range r.seen {
		if n > 1 && !r.uncommitted[v] {
			bad = append(bad, fmt.Sprintf("%s x%d", v, n))
		}
	}
	sort.Strings(bad)
	if len(bad) > 0 {
		t.Errorf("records read again though their first read was committed: %v", bad)
	}
}

type migMember struct{ stop func() }

// runMigMember is a franz-go member (the classic protocol, or the consumer
// protocol when consumer is set) that commits what it read before it lets
// a rebalance take partitions away (BlockRebalanceOnPoll).
func runMigMember(t *testing.T, seed, group, topic string, r *migReads, consumer bool) *migMember {
	t.Helper()
	opts := []kgo.Opt{kgo.SeedBrokers(seed), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(), kgo.BlockRebalanceOnPoll(),
		kgo.FetchMaxWait(300 * time.Millisecond), kgo.RetryTimeout(60 * time.Second),
		kgo.SessionTimeout(10 * time.Second), kgo.HeartbeatInterval(500 * time.Millisecond)}
	if consumer {
		opts = append(opts, kgo.ServerSideBalancer())
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			fs := cl.PollFetches(context.Background())
			if fs.IsClientClosed() {
				return
			}
			var vals []string
			fs.EachRecord(func(rec *kgo.Record) { vals = append(vals, string(rec.Value)) })
			var cerr error
			if len(vals) > 0 {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				cerr = cl.CommitUncommittedOffsets(ctx)
				cancel()
			}
			r.mu.Lock()
			for _, v := range vals {
				r.seen[v]++
				if cerr != nil {
					r.uncommitted[v] = true
				}
			}
			r.mu.Unlock()
			cl.AllowRebalance()
		}
	}()
	var once sync.Once
	m := &migMember{stop: func() { once.Do(func() { cl.Close(); <-done }) }} // Close leaves the group
	t.Cleanup(m.stop)
	return m
}

// describeUpgraded checks through seed that the group is a Stable
// consumer group of two classic members and one consumer-protocol member
// owning every partition once, as targeted, and that the classic APIs see
// it as Kafka 4.4 answers them.
func describeUpgraded(ctx context.Context, seed, group string, partitions int) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seed))
	if err != nil {
		return err
	}
	defer cl.Close()
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Version = 1
	req.Groups = []string{group}
	resp, err := req.RequestWith(dctx, cl)
	if err != nil {
		return err
	}
	g := resp.Groups[0]
	if g.ErrorCode != 0 || g.State != "Stable" || len(g.Members) != 3 {
		return fmt.Errorf("ConsumerGroupDescribe: code %d state %q, %d members", g.ErrorCode, g.State, len(g.Members))
	}
	var types []int
	seen := map[int32]bool{}
	for _, m := range g.Members {
		types = append(types, int(m.MemberType))
		if fmt.Sprint(m.Assignment.TopicPartitions) != fmt.Sprint(m.TargetAssignment.TopicPartitions) {
			return fmt.Errorf("member %s owns %v, targeted %v", m.MemberID, m.Assignment.TopicPartitions, m.TargetAssignment.TopicPartitions)
		}
		for _, tp := range m.Assignment.TopicPartitions {
			for _, p := range tp.Partitions {
				if seen[p] {
					return fmt.Errorf("partition %d owned twice", p)
				}
				seen[p] = true
			}
		}
	}
	sort.Ints(types)
	if fmt.Sprint(types) != "[0 0 1]" || len(seen) != partitions {
		return fmt.Errorf("member types %v (want [0 0 1]), %d of %d partitions owned", types, len(seen), partitions)
	}
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Groups = []string{group}
	if r, err := dg.RequestWith(dctx, cl); err != nil || r.Groups[0].ErrorCode != kerr.GroupIDNotFound.Code || r.Groups[0].State != "Dead" {
		return fmt.Errorf("DescribeGroups of the upgraded group: %+v %v", r, err)
	}
	ls, err := kadm.NewClient(cl).ListGroups(dctx)
	if err != nil || ls[group].GroupType != "consumer" {
		return fmt.Errorf("ListGroups: %+v %v", ls[group], err)
	}
	return nil
}

// describeDowngraded checks through seed that the group is a Stable
// classic group of two members assigned every partition once.
func describeDowngraded(ctx context.Context, seed, group string, partitions int) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seed))
	if err != nil {
		return err
	}
	defer cl.Close()
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Groups = []string{group}
	r, err := dg.RequestWith(dctx, cl)
	if err != nil {
		return err
	}
	g := r.Groups[0]
	if g.ErrorCode != 0 || g.State != "Stable" || g.ProtocolType != "consumer" || len(g.Members) != 2 {
		return fmt.Errorf("DescribeGroups: code %d state %q protocol type %q, %d members", g.ErrorCode, g.State, g.ProtocolType, len(g.Members))
	}
	seen := map[int32]bool{}
	for _, m := range g.Members {
		var a kmsg.ConsumerMemberAssignment
		if err := a.ReadFrom(m.MemberAssignment); err != nil {
			return fmt.Errorf("member %s: assignment: %v", m.MemberID, err)
		}
		for _, tp := range a.Topics {
			for _, p := range tp.Partitions {
				if seen[p] {
					return fmt.Errorf("partition %d assigned twice", p)
				}
				seen[p] = true
			}
		}
	}
	if len(seen) != partitions {
		return fmt.Errorf("%d of %d partitions assigned", len(seen), partitions)
	}
	ls, err := kadm.NewClient(cl).ListGroups(dctx)
	if err != nil || ls[group].GroupType != "classic" {
		return fmt.Errorf("ListGroups: %+v %v", ls[group], err)
	}
	cd := kmsg.NewPtrConsumerGroupDescribeRequest()
	cd.Groups = []string{group}
	if r, err := cd.RequestWith(dctx, cl); err != nil || r.Groups[0].ErrorCode != kerr.GroupIDNotFound.Code {
		return fmt.Errorf("ConsumerGroupDescribe of the downgraded group: %+v %v", r, err)
	}
	return nil
}
