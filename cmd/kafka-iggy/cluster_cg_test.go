package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafka-iggy/kafka-iggy/bridge/cluster"
)

// cgMember is a franz-go consumer-protocol (KIP-848) member that records
// what it owns and every partition taken from it.
type cgMember struct {
	cl   *kgo.Client
	stop func()

	mu    sync.Mutex
	owned map[int32]bool
	taken []string // "revoked p3", "lost p1" (watched only once armed)
	armed bool
}

func (m *cgMember) snapshot() map[int32]bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.owned)
}

func runCGMember(ctx context.Context, t *testing.T, seed, group, topic string, c *consumed) *cgMember {
	t.Helper()
	m := &cgMember{owned: map[int32]bool{}}
	give := func(how string) func(context.Context, *kgo.Client, map[string][]int32) {
		return func(_ context.Context, _ *kgo.Client, ps map[string][]int32) {
			m.mu.Lock()
			defer m.mu.Unlock()
			for _, p := range ps[topic] {
				delete(m.owned, p)
				if m.armed {
					m.taken = append(m.taken, fmt.Sprintf("%s p%d", how, p))
				}
			}
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seed), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ServerSideBalancer(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(),
		kgo.FetchMaxWait(300*time.Millisecond), kgo.RetryTimeout(60*time.Second),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) {
			m.mu.Lock()
			defer m.mu.Unlock()
			for _, p := range ps[topic] {
				m.owned[p] = true
			}
		}),
		kgo.OnPartitionsRevoked(give("revoked")), kgo.OnPartitionsLost(give("lost")))
	if err != nil {
		t.Fatal(err)
	}
	m.cl = cl
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
			fs := cl.PollFetches(pctx)
			pcancel()
			fs.EachRecord(func(r *kgo.Record) { c.add(string(r.Value)) })
			if fs.NumRecords() > 0 {
				cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
				if err := cl.CommitUncommittedOffsets(cctx); err != nil && ctx.Err() == nil {
					t.Logf("commit through %s: %v", seed, err)
				}
				ccancel()
			}
		}
	}()
	m.stop = func() { cancel(); <-done; cl.Close() }
	return m
}

// cgDescribe answers ConsumerGroupDescribe through seed: an error unless the
// group is Stable with want members owning every partition once.
func cgDescribe(ctx context.Context, seed, group string, partitions, want int) (int32, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seed))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = []string{group}
	resp, err := req.RequestWith(dctx, cl)
	if err != nil {
		return 0, err
	}
	g := resp.Groups[0]
	if g.ErrorCode != 0 || g.State != "Stable" || len(g.Members) != want {
		return 0, fmt.Errorf("code %d state %q, %d members", g.ErrorCode, g.State, len(g.Members))
	}
	seen := map[int32]bool{}
	for _, m := range g.Members {
		for _, tp := range m.Assignment.TopicPartitions {
			for _, p := range tp.Partitions {
				if seen[p] {
					return 0, fmt.Errorf("partition %d owned twice", p)
				}
				seen[p] = true
			}
		}
	}
	if len(seen) != partitions {
		return 0, fmt.Errorf("%d of %d partitions owned", len(seen), partitions)
	}
	return g.Epoch, nil
}

// TestConsumerProtocolOwnerKilled: a consumer-protocol group of three
// franz-go members behind three sidecars is Stable; the sidecar owning the
// group's shard is SIGKILLed (its member goes with it). The new owner
// restores the group from Iggy: the two surviving members keep every
// partition they had (no revocation, no loss: their epochs go on), take the
// dead member's partitions after its session timeout, consume every record
// produced after the kill, and no committed offset goes backwards.
func TestConsumerProtocolOwnerKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("starts sidecar processes")
	}
	testConsumerProtocolOwnerGone(t, syscall.SIGKILL)
}

// TestConsumerProtocolOwnerStopped is the same with SIGTERM (a rolling
// restart of the owner's pod: it releases its shards, the next owner
// restores the group at once).
func TestConsumerProtocolOwnerStopped(t *testing.T) {
	if testing.Short() {
		t.Skip("starts sidecar processes")
	}
	testConsumerProtocolOwnerGone(t, syscall.SIGTERM)
}

func testConsumerProtocolOwnerGone(t *testing.T, sig syscall.Signal) {
	iggyAddr := freeAddr(t)
	startIggyProc(t, iggyAddr, t.TempDir())
	ps := make([]*sidecarProc, 3)
	for i := range ps {
		ps[i] = startClusterSidecar(t, iggyAddr,
			"KAFKA_IGGY_CONSUMER_GROUPS__HEARTBEAT_INTERVAL=300ms",
			"KAFKA_IGGY_CONSUMER_GROUPS__SESSION_TIMEOUT=8s")
	}
	t.Cleanup(func() {
		if t.Failed() {
			for i, p := range ps {
				if p == nil {
					continue
				}
				for _, l := range strings.Split(p.logText(), "\n") {
					if strings.Contains(l, "coordination") || strings.Contains(l, "consumer group") {
						t.Logf("sidecar %d: %s", i, l)
					}
				}
			}
		}
	})
	const topic, group, partitions = "cg-kill", "cg-kill-group", 6
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
	const first = 1200
	produceValues(t, ps[0].kafka, topic, 0, first)

	got := &consumed{seen: map[string]int{}}
	members := make([]*cgMember, 3)
	for i, p := range ps {
		members[i] = runCGMember(ctx, t, p.kafka, group, topic, got)
	}
	defer func() {
		for _, m := range members {
			if m != nil {
				m.stop()
			}
		}
	}()
	waitFor(t, 60*time.Second, "a Stable group of 3 over 6 partitions, every record consumed and committed", func() error {
		if _, err := cgDescribe(ctx, ps[0].kafka, group, partitions, 3); err != nil {
			return err
		}
		for i, m := range members {
			if n := len(m.snapshot()); n != partitions/3 {
				return fmt.Errorf("member %d owns %d partitions", i, n)
			}
		}
		if n := got.count(); n < first {
			return fmt.Errorf("%d of %d consumed", n, first)
		}
		var sum int64
		for _, o := range committedOffsets(t, kadm.NewClient(admCl), group) {
			sum += o
		}
		if sum < first {
			return fmt.Errorf("committed %d of %d", sum, first)
		}
		return nil
	})

	owner := shardOwner(ps, cluster.Shard(group, cluster.DefaultShards))
	if owner < 0 {
		t.Fatal("no sidecar logs ownership of the group's shard")
	}
	for i, p := range ps {
		cgConflicts(ctx, t, p.kafka, group, fmt.Sprintf("sidecar %d (owner %d)", i, owner))
	}
	survivor := (owner + 1) % 3
	survAdm, err := kgo.NewClient(kgo.SeedBrokers(ps[survivor].kafka))
	if err != nil {
		t.Fatal(err)
	}
	defer survAdm.Close()
	before := committedOffsets(t, kadm.NewClient(survAdm), group)
	kept := map[int]map[int32]bool{}
	for i, m := range members {
		if i == owner {
			continue
		}
		m.mu.Lock()
		m.armed = true
		m.mu.Unlock()
		kept[i] = m.snapshot()
	}
	t.Logf("sidecar %d (owner of the group's shard) %v; the survivors own %v", owner, sig, kept)
	killed := time.Now()
	if err := ps[owner].cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	ps[owner] = nil
	dead := members[owner]
	members[owner] = nil
	go dead.stop() // its app lost its sidecar: nothing it does reaches the group

	recovered := waitFor(t, 90*time.Second, "the survivors Stable with every partition", func() error {
		for i, m := range members {
			if m == nil {
				continue
			}
			if n := len(m.snapshot()); n != partitions/2 {
				return fmt.Errorf("member %d owns %d partitions", i, n)
			}
		}
		for _, p := range ps {
			if p == nil {
				continue
			}
			if _, err := cgDescribe(ctx, p.kafka, group, partitions, 2); err != nil {
				return err
			}
		}
		return nil
	})
	t.Logf("owner %v -> the two survivors own all %d partitions after %v", sig, partitions, recovered)
	for i, m := range members {
		if m == nil {
			continue
		}
		m.mu.Lock()
		taken, now := slices.Clone(m.taken), maps.Clone(m.owned)
		m.mu.Unlock()
		if len(taken) > 0 {
			t.Errorf("member %d had partitions taken through the owner move: %v", i, taken)
		}
		for p := range kept[i] {
			if !now[p] {
				t.Errorf("member %d lost partition %d it kept", i, p)
			}
		}
	}
	restored := false
	for _, p := range ps {
		if p != nil && strings.Contains(p.logText(), "consumer group restored from its persisted state") {
			restored = true
		}
	}
	if !restored {
		t.Error("no survivor logged restoring the group")
	}

	for i, p := range ps {
		if p != nil {
			cgConflicts(ctx, t, p.kafka, group, fmt.Sprintf("sidecar %d after the move", i))
		}
	}

	const second = 600
	produceValues(t, ps[survivor].kafka, topic, first, second)
	waitFor(t, 60*time.Second, "records produced after the kill consumed", func() error {
		if n := got.count(); n < first+second {
			return fmt.Errorf("%d of %d", n, first+second)
		}
		return nil
	})
	t.Logf("owner %v -> records produced after it consumed %v after the signal", sig, time.Since(killed))
	var after map[int32]int64
	waitFor(t, 30*time.Second, "commits after the move", func() error {
		after = committedOffsets(t, kadm.NewClient(survAdm), group)
		var sum int64
		for _, o := range after {
			sum += o
		}
		if sum < first+second {
			return fmt.Errorf("committed %d of %d", sum, first+second)
		}
		return nil
	})
	var back []string
	for p, o := range before {
		if after[p] < o {
			back = append(back, fmt.Sprintf("p%d %d -> %d", p, o, after[p]))
		}
	}
	sort.Strings(back)
	if len(back) > 0 {
		t.Fatalf("committed offsets went backwards: %v", back)
	}

	// The members leave; DeleteGroups through a sidecar that does not own
	// the group deletes the emptied group and its committed offsets.
	for i, m := range members {
		if m != nil {
			m.stop()
			members[i] = nil
		}
	}
	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Groups = []string{group}
	cl, err := kgo.NewClient(kgo.SeedBrokers(ps[survivor].kafka))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if r, err := del.RequestWith(ctx, cl); err != nil || r.Groups[0].ErrorCode != 0 {
		t.Fatalf("DeleteGroups of the emptied consumer-protocol group: %+v %v", r, err)
	}
	if left := committedOffsets(t, kadm.NewClient(survAdm), group); len(left) != 0 {
		t.Fatalf("committed offsets left after DeleteGroups: %v", left)
	}
}

// cgConflicts checks through seed that the classic APIs see the live
// consumer-protocol group as Kafka answers them (each answered by the
// group's owner within the classic call across sidecars): DescribeGroups
// GROUP_ID_NOT_FOUND ("not a classic group", state Dead), a classic
// JoinGroup INCONSISTENT_GROUP_PROTOCOL, DeleteGroups NON_EMPTY_GROUP, an
// OffsetCommit of an unknown member UNKNOWN_MEMBER_ID.
func cgConflicts(ctx context.Context, t *testing.T, seed, group, via string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seed), kgo.RetryTimeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Groups = []string{group}
	if r, err := dg.RequestWith(ctx, cl); err != nil || r.Groups[0].ErrorCode != kerr.GroupIDNotFound.Code || r.Groups[0].State != "Dead" {
		t.Errorf("%s: DescribeGroups of the consumer-protocol group: %+v %v", via, r, err)
	}
	jg := kmsg.NewPtrJoinGroupRequest()
	jg.Group, jg.ProtocolType, jg.SessionTimeoutMillis, jg.RebalanceTimeoutMillis = group, "consumer", 10000, 10000
	jg.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0}}}
	if r, err := jg.RequestWith(ctx, cl); err != nil || r.ErrorCode != kerr.InconsistentGroupProtocol.Code {
		t.Errorf("%s: classic JoinGroup of the consumer-protocol group: %+v %v", via, r, err)
	}
	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Groups = []string{group}
	if r, err := del.RequestWith(ctx, cl); err != nil || r.Groups[0].ErrorCode != kerr.NonEmptyGroup.Code {
		t.Errorf("%s: DeleteGroups of the consumer-protocol group: %+v %v", via, r, err)
	}
	oc := kmsg.NewPtrOffsetCommitRequest()
	oc.Version = 9
	oc.Group, oc.MemberID, oc.Generation = group, "nobody", 1
	ot := kmsg.NewOffsetCommitRequestTopic()
	ot.Topic = "cg-kill"
	op := kmsg.NewOffsetCommitRequestTopicPartition()
	ot.Partitions = append(ot.Partitions, op)
	oc.Topics = append(oc.Topics, ot)
	if r, err := oc.RequestWith(ctx, cl); err != nil || r.Topics[0].Partitions[0].ErrorCode != kerr.UnknownMemberID.Code {
		t.Errorf("%s: OffsetCommit of an unknown member: %+v %v", via, r, err)
	}
}
