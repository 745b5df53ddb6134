package bridge_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	kafka "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Acceptance of the group coordinator with unmodified clients: three
// consumers of one group, in franz-go (cooperative-sticky), sarama (range)
// and kafka-go (range), split 12 partitions without overlap; one leaves and
// the other two take over within the session timeout; every record is
// consumed exactly once (offsets are committed before the member leaves, so
// the uncommitted window is empty). A static franz-go member restarting
// within its session timeout gets its partitions back without a rebalance.
//
// These tests need OffsetCommit and OffsetFetch (the offsets code): they
// skip while the gateway does not advertise them.

const (
	grpPartitions   = 12
	grpPerPartition = 25
	grpSession      = 3 * time.Second
	grpHeartbeatInt = 300 * time.Millisecond
	grpRebalance    = 6 * time.Second
)

// grpClientStack starts a stack for client tests (short group timeouts).
func grpClientStack(t *testing.T) *stack {
	t.Helper()
	s := startStack(t, func(o *stackOpts) {
		o.bridge.Groups.InitialRebalanceDelay = 200 * time.Millisecond
		o.bridge.Groups.MinSessionTimeout = time.Second
	})
	return s
}

// grpTally counts what consumers received, per record and per consumer.
type grpTally struct {
	mu    sync.Mutex
	count map[[2]int64]int // (partition, offset) -> times consumed
	by    map[string]int   // consumer -> records
}

func newGrpTally() *grpTally {
	return &grpTally{count: map[[2]int64]int{}, by: map[string]int{}}
}

func (ta *grpTally) add(consumer string, partition int32, offset int64) {
	ta.mu.Lock()
	ta.count[[2]int64{int64(partition), offset}]++
	ta.by[consumer]++
	ta.mu.Unlock()
}

// covered reports whether every offset below upto of every partition was
// consumed.
func (ta *grpTally) covered(upto int64) bool {
	ta.mu.Lock()
	defer ta.mu.Unlock()
	for p := range int64(grpPartitions) {
		for o := range upto {
			if ta.count[[2]int64{p, o}] == 0 {
				return false
			}
		}
	}
	return true
}

// String is the per-consumer record counts.
func (ta *grpTally) String() string {
	ta.mu.Lock()
	defer ta.mu.Unlock()
	return fmt.Sprint(ta.by)
}

// duplicates lists the records consumed more than once.
func (ta *grpTally) duplicates() []string {
	ta.mu.Lock()
	defer ta.mu.Unlock()
	var out []string
	for k, n := range ta.count {
		if n > 1 {
			out = append(out, fmt.Sprintf("p%d@%d x%d", k[0], k[1], n))
		}
	}
	slices.Sort(out)
	return out
}

// grpProduce writes grpPerPartition records to every partition.
func grpProduce(t *testing.T, s *stack, topic string) {
	t.Helper()
	cl := s.kgoClient(t, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.DefaultProduceTopic(topic))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var recs []*kgo.Record
	for p := range int32(grpPartitions) {
		for i := range grpPerPartition {
			recs = append(recs, &kgo.Record{Partition: p, Value: fmt.Appendf(nil, "p%d-%d", p, i)})
		}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// grpWait polls cond until it holds or the deadline passes.
func grpWait(t *testing.T, d time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(d)
	var last string
	for {
		ok, state := cond()
		if ok {
			return
		}
		last = state
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached in %v; last: %s", what, d, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// grpSplit checks, through DescribeGroups, that the group is Stable with n
// members that each own some partitions, none twice, all 12 in total.
func grpSplit(ctx context.Context, adm *kadm.Client, group, topic string, n int) (bool, string) {
	ds, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		return false, err.Error()
	}
	d := ds[group]
	if d.Err != nil || d.State != "Stable" || len(d.Members) != n {
		return false, fmt.Sprintf("state %s, %d members, err %v", d.State, len(d.Members), d.Err)
	}
	seen := map[int32]bool{}
	for _, m := range d.Members {
		c, ok := m.Assigned.AsConsumer()
		if !ok {
			return false, "assignment not a consumer assignment"
		}
		owned := 0
		for _, at := range c.Topics {
			if at.Topic != topic {
				continue
			}
			for _, p := range at.Partitions {
				if seen[p] {
					return false, fmt.Sprintf("partition %d assigned twice", p)
				}
				seen[p] = true
				owned++
			}
		}
		if owned == 0 {
			return false, "member " + m.MemberID + " owns nothing"
		}
	}
	return len(seen) == grpPartitions, fmt.Sprintf("%d partitions assigned", len(seen))
}

// grpCommitted reports whether the group committed offset upto on every
// partition.
func grpCommitted(ctx context.Context, adm *kadm.Client, group, topic string, upto int64) (bool, string) {
	offs, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		return false, err.Error()
	}
	for p := range int32(grpPartitions) {
		o, ok := offs.Lookup(topic, p)
		if !ok || o.At != upto {
			return false, fmt.Sprintf("partition %d at %v", p, o.At)
		}
	}
	return true, ""
}

// grpConsumerFn starts one consumer of group on topic, named name, feeding
// tally; the returned function stops it (leaving the group).
type grpConsumerFn func(t *testing.T, s *stack, group, topic, name string, tally *grpTally) (stop func())

// runGroupAcceptance is the scenario shared by the three clients.
func runGroupAcceptance(t *testing.T, start grpConsumerFn) {
	s := grpClientStack(t)
	topic, group := "grp-"+t.Name(), "grp-"+t.Name()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	adm := kadm.NewClient(s.kgoClient(t))
	if _, err := adm.CreateTopic(ctx, grpPartitions, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	tally := newGrpTally()
	stops := make([]func(), 3)
	for i := range stops {
		stops[i] = start(t, s, group, topic, fmt.Sprint("c", i), tally)
	}
	defer func() {
		for _, stop := range stops {
			if stop != nil {
				stop()
			}
		}
	}()
	grpWait(t, 30*time.Second, "three-way split", func() (bool, string) { return grpSplit(ctx, adm, group, topic, 3) })

	grpProduce(t, s, topic)
	grpWait(t, 20*time.Second, "first records consumed", func() (bool, string) {
		return tally.covered(grpPerPartition), tally.String()
	})
	grpWait(t, 10*time.Second, "first records committed", func() (bool, string) {
		return grpCommitted(ctx, adm, group, topic, grpPerPartition)
	})

	// c2 leaves; c0 and c1 take over its partitions.
	left := time.Now()
	stops[2]()
	stops[2] = nil
	grpWait(t, grpSession, "two-way split", func() (bool, string) { return grpSplit(ctx, adm, group, topic, 2) })
	t.Logf("takeover after %v", time.Since(left))

	grpProduce(t, s, topic)
	grpWait(t, 20*time.Second, "second records consumed", func() (bool, string) {
		return tally.covered(2 * grpPerPartition), tally.String()
	})
	if d := tally.duplicates(); len(d) > 0 {
		t.Errorf("records consumed twice: %v", d)
	}
}

func TestGroupsAcceptanceFranzGo(t *testing.T) {
	runGroupAcceptance(t, func(t *testing.T, s *stack, group, topic, name string, tally *grpTally) func() {
		cl, err := kgo.NewClient(
			kgo.SeedBrokers(s.Addr),
			kgo.ClientID(name),
			kgo.ConsumerGroup(group),
			kgo.ConsumeTopics(topic),
			kgo.Balancers(kgo.CooperativeStickyBalancer()),
			kgo.SessionTimeout(grpSession),
			kgo.HeartbeatInterval(grpHeartbeatInt),
			kgo.RebalanceTimeout(grpRebalance),
			kgo.AutoCommitInterval(100*time.Millisecond),
			kgo.FetchMaxWait(200*time.Millisecond),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		)
		if err != nil {
			t.Fatal(err)
		}
		return grpPollKgo(cl, name, tally)
	})
}

// grpPollKgo polls a kgo group consumer until stopped; stop closes it
// (leaving the group unless it is static).
func grpPollKgo(cl *kgo.Client, name string, tally *grpTally) func() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			fs.EachRecord(func(r *kgo.Record) { tally.add(name, r.Partition, r.Offset) })
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			<-done
			cl.Close()
		})
	}
}

func TestGroupsAcceptanceSarama(t *testing.T) {
	runGroupAcceptance(t, func(t *testing.T, s *stack, group, topic, name string, tally *grpTally) func() {
		cfg := sarama.NewConfig()
		cfg.Version = sarama.V2_8_0_0
		cfg.ClientID = name
		cfg.Consumer.Return.Errors = false
		cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
		cfg.Consumer.Offsets.AutoCommit.Interval = 100 * time.Millisecond
		cfg.Consumer.MaxWaitTime = 200 * time.Millisecond
		cfg.Consumer.Group.Session.Timeout = grpSession
		cfg.Consumer.Group.Heartbeat.Interval = grpHeartbeatInt
		cfg.Consumer.Group.Rebalance.Timeout = grpRebalance
		cfg.Consumer.Group.Rebalance.Retry.Backoff = 200 * time.Millisecond
		cg, err := sarama.NewConsumerGroup([]string{s.Addr}, group, cfg)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			h := grpSaramaHandler{name: name, tally: tally}
			for ctx.Err() == nil {
				if err := cg.Consume(ctx, []string{topic}, h); err != nil && !errors.Is(err, sarama.ErrClosedConsumerGroup) {
					time.Sleep(100 * time.Millisecond)
				}
			}
		}()
		var once sync.Once
		return func() {
			once.Do(func() {
				cancel()
				<-done
				_ = cg.Close()
			})
		}
	})
}

type grpSaramaHandler struct {
	name  string
	tally *grpTally
}

func (grpSaramaHandler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (grpSaramaHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (h grpSaramaHandler) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for {
		select {
		case m, ok := <-claim.Messages():
			if !ok {
				return nil
			}
			h.tally.add(h.name, m.Partition, m.Offset)
			sess.MarkMessage(m, "")
		case <-sess.Context().Done():
			return nil
		}
	}
}

func TestGroupsAcceptanceKafkaGo(t *testing.T) {
	runGroupAcceptance(t, func(t *testing.T, s *stack, group, topic, name string, tally *grpTally) func() {
		r := kafka.NewReader(kafka.ReaderConfig{
			Brokers:           []string{s.Addr},
			GroupID:           group,
			Topic:             topic,
			Dialer:            &kafka.Dialer{ClientID: name, Timeout: 10 * time.Second},
			SessionTimeout:    grpSession,
			HeartbeatInterval: grpHeartbeatInt,
			RebalanceTimeout:  grpRebalance,
			JoinGroupBackoff:  200 * time.Millisecond,
			MaxWait:           200 * time.Millisecond,
			ReadBackoffMin:    50 * time.Millisecond,
			ReadBackoffMax:    200 * time.Millisecond,
			StartOffset:       kafka.FirstOffset,
		})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			for ctx.Err() == nil {
				m, err := r.ReadMessage(ctx) // commits synchronously
				if err != nil {
					continue
				}
				tally.add(name, int32(m.Partition), m.Offset)
			}
		}()
		var once sync.Once
		return func() {
			once.Do(func() {
				cancel()
				<-done
				_ = r.Close()
			})
		}
	})
}

// TestGroupsStaticRestartFranzGo: a static franz-go member that restarts
// within its session timeout gets its partitions back and nobody else
// rebalances (generations unchanged).
func TestGroupsStaticRestartFranzGo(t *testing.T) {
	s := grpClientStack(t)
	topic, group := "grp-static", "grp-static"
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	adm := kadm.NewClient(s.kgoClient(t))
	if _, err := adm.CreateTopic(ctx, grpPartitions, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	tally := newGrpTally()
	type member struct {
		cl   *kgo.Client
		stop func()
		mu   sync.Mutex
		own  []int32
	}
	start := func(name string) *member {
		m := &member{}
		track := func(_ context.Context, _ *kgo.Client, ps map[string][]int32) {
			m.mu.Lock()
			m.own = append(m.own, ps[topic]...)
			slices.Sort(m.own)
			m.mu.Unlock()
		}
		drop := func(_ context.Context, _ *kgo.Client, ps map[string][]int32) {
			m.mu.Lock()
			m.own = slices.DeleteFunc(m.own, func(p int32) bool { return slices.Contains(ps[topic], p) })
			m.mu.Unlock()
		}
		cl, err := kgo.NewClient(
			kgo.SeedBrokers(s.Addr),
			kgo.ClientID(name),
			kgo.ConsumerGroup(group),
			kgo.ConsumeTopics(topic),
			kgo.InstanceID(name),
			kgo.SessionTimeout(10*time.Second),
			kgo.HeartbeatInterval(grpHeartbeatInt),
			kgo.RebalanceTimeout(grpRebalance),
			kgo.AutoCommitInterval(100*time.Millisecond),
			kgo.FetchMaxWait(200*time.Millisecond),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.OnPartitionsAssigned(track),
			kgo.OnPartitionsRevoked(drop),
			kgo.OnPartitionsLost(drop),
		)
		if err != nil {
			t.Fatal(err)
		}
		m.cl = cl
		m.stop = grpPollKgo(cl, name, tally)
		return m
	}
	owned := func(m *member) []int32 {
		m.mu.Lock()
		defer m.mu.Unlock()
		return slices.Clone(m.own)
	}
	// The first member leads (it is alone in generation 1 and keeps
	// rejoining first); the restart concerns a follower.
	ms := []*member{start("static-0")}
	defer func() {
		for _, m := range ms {
			m.stop()
		}
	}()
	grpWait(t, 20*time.Second, "first member alone", func() (bool, string) { return grpSplit(ctx, adm, group, topic, 1) })
	ms = append(ms, start("static-1"), start("static-2"))
	grpWait(t, 30*time.Second, "three-way split", func() (bool, string) { return grpSplit(ctx, adm, group, topic, 3) })
	grpWait(t, 10*time.Second, "callbacks settled", func() (bool, string) {
		n := 0
		for _, m := range ms {
			n += len(owned(m))
		}
		return n == grpPartitions, fmt.Sprint(n, " partitions owned")
	})
	gens := make([]int32, 3)
	for i, m := range ms {
		_, gens[i] = m.cl.GroupMetadata()
	}
	before := owned(ms[2])

	// static-2 restarts: its process closes (a static member does not
	// leave) and a new one starts with the same instance id.
	ms[2].stop()
	ms[2] = start("static-2")
	grpWait(t, 10*time.Second, "restarted member owns its partitions again", func() (bool, string) {
		got := owned(ms[2])
		return slices.Equal(got, before), fmt.Sprint(got, " want ", before)
	})
	if _, g := ms[2].cl.GroupMetadata(); g != gens[2] {
		t.Errorf("restarted member in generation %d, was %d", g, gens[2])
	}
	for i, m := range ms[:2] {
		if _, g := m.cl.GroupMetadata(); g != gens[i] {
			t.Errorf("member %d moved from generation %d to %d: the restart rebalanced the group", i, gens[i], g)
		}
	}
	if ok, state := grpSplit(ctx, adm, group, topic, 3); !ok {
		t.Errorf("after the restart: %s", state)
	}

	// Consumption goes on with the restarted member.
	grpProduce(t, s, topic)
	grpWait(t, 20*time.Second, "records consumed", func() (bool, string) {
		return tally.covered(grpPerPartition), tally.String()
	})
	if d := tally.duplicates(); len(d) > 0 {
		t.Errorf("records consumed twice: %v", d)
	}
}
