package main

// One Kafka group across three `kafka-iggy serve` processes on one
// `kafka-iggy embedded-iggy` process, over loopback TCP: each consumer talks
// only to its own sidecar.

import (
	"context"
	"crypto/x509/pkix"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafka-iggy/kafka-iggy/bridge/cluster"
	"github.com/kafka-iggy/kafka-iggy/internal/tlsconf/tlstest"
)

const clusterSecret = "test-peer-secret-0123456789abcdefghij"

// freeAddr returns a loopback address with a port free right now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startClusterSidecar starts one sidecar of the domain on iggy.
func startClusterSidecar(t *testing.T, iggyAddr string, extra ...string) *sidecarProc {
	t.Helper()
	env := append([]string{
		"KAFKA_IGGY_EMBEDDED__MODE=off",
		"KAFKA_IGGY_IGGY__ADDRESS=" + iggyAddr,
		"KAFKA_IGGY_PEERS__ADDRESS=127.0.0.1:0",
		"KAFKA_IGGY_PEERS__SECRET=" + clusterSecret,
		"KAFKA_IGGY_LIMITS__DRAIN_TIMEOUT=5s",
	}, extra...)
	return startServeProc(t, env...)
}

// shardOwner reports which sidecar's log last activated shard k without
// releasing it since; -1 when none.
func shardOwner(ps []*sidecarProc, k int) int {
	owner := -1
	for i, p := range ps {
		if p == nil {
			continue
		}
		active := false
		for _, l := range strings.Split(p.logText(), "\n") {
			var line struct {
				Message string `json:"message"`
				Shard   *int   `json:"shard"`
			}
			if json.Unmarshal([]byte(l), &line) != nil || line.Shard == nil || *line.Shard != k {
				continue
			}
			switch line.Message {
			case "coordination: shard active here":
				active = true
			case "coordination: shard released":
				active = false
			}
		}
		if active {
			owner = i
		}
	}
	return owner
}

// consumed collects what the group's members processed.
type consumed struct {
	mu   sync.Mutex
	seen map[string]int // record value -> times processed
}

func (c *consumed) add(v string) {
	c.mu.Lock()
	c.seen[v]++
	c.mu.Unlock()
}

func (c *consumed) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.seen)
}

// runMemberWithID is runMember that also reports the member id.
func runMemberWithID(ctx context.Context, t *testing.T, seed, group, topic string, c *consumed) (stop func(), id func() string) {
	var cl *kgo.Client
	stop = runMemberClient(ctx, t, seed, group, topic, c, &cl)
	return stop, func() string { m, _ := cl.GroupMetadata(); return m }
}

// runMember consumes group g through seed with franz-go until ctx ends or
// stop is called, committing after each poll.
func runMember(ctx context.Context, t *testing.T, seed, group, topic string, c *consumed) (stop func()) {
	return runMemberClient(ctx, t, seed, group, topic, c, nil)
}

func runMemberClient(ctx context.Context, t *testing.T, seed, group, topic string, c *consumed, out **kgo.Client) (stop func()) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seed), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(),
		kgo.SessionTimeout(10*time.Second), kgo.HeartbeatInterval(time.Second),
		kgo.RetryTimeout(30*time.Second),
		kgo.Balancers(kgo.RangeBalancer())) // sarama, in the same group, speaks range
	if err != nil {
		t.Fatal(err)
	}
	if out != nil {
		*out = cl
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			fs := cl.PollFetches(pctx)
			cancel()
			fs.EachRecord(func(r *kgo.Record) { c.add(string(r.Value)) })
			if fs.NumRecords() > 0 {
				cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				if err := cl.CommitUncommittedOffsets(cctx); err != nil && ctx.Err() == nil {
					t.Logf("commit through %s: %v", seed, err)
				}
				cancel()
			}
		}
	}()
	return func() { cancel(); <-done; cl.Close() }
}

// saramaMember is IBM sarama's consumer group (auto-commit of marked
// messages every 500ms).
type saramaMember struct{ c *consumed }

func (saramaMember) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (saramaMember) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (h saramaMember) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for {
		select {
		case msg, ok := <-c.Messages():
			if !ok {
				return nil
			}
			h.c.add(string(msg.Value))
			s.MarkMessage(msg, "")
		case <-s.Context().Done():
			return nil
		}
	}
}

func runSaramaMember(ctx context.Context, t *testing.T, seed, group, topic string, c *consumed) (stop func()) {
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V2_8_0_0
	cfg.ClientID = "cluster-sarama"
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Offsets.AutoCommit.Interval = 500 * time.Millisecond
	cfg.Consumer.Group.Session.Timeout = 10 * time.Second
	cfg.Consumer.Group.Heartbeat.Interval = time.Second
	cfg.Consumer.Group.Rebalance.Timeout = 20 * time.Second
	g, err := sarama.NewConsumerGroup([]string{seed}, group, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if err := g.Consume(ctx, []string{topic}, saramaMember{c}); err != nil && ctx.Err() == nil {
				time.Sleep(200 * time.Millisecond) // its sidecar is away: try again
			}
		}
	}()
	return func() { cancel(); <-done; _ = g.Close() }
}

// member is one group member and the sidecar it talks to.
type member struct {
	sidecar int
	stop    func()
}

// alive counts the members whose sidecar is in ps.
func alive(ms []member, ps []*sidecarProc) int {
	n := 0
	for _, m := range ms {
		if ps[m.sidecar] != nil {
			n++
		}
	}
	return n
}

// describedMembers returns the member ids sidecar adm describes.
func describedMembers(ctx context.Context, adm *kadm.Client, group string) (map[string]bool, error) {
	ds, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, m := range ds[group].Members {
		out[m.MemberID] = true
	}
	return out, nil
}

// describeAgrees asks each sidecar to describe the group and returns the
// assignment (partition -> member) when all agree, the group is Stable
// with want members and every partition of topic is assigned once.
func describeAgrees(ctx context.Context, admins []*kadm.Client, group, topic string, partitions, want int) (map[int32]string, error) {
	var first map[int32]string
	for i, adm := range admins {
		if adm == nil {
			continue
		}
		dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		ds, err := adm.DescribeGroups(dctx, group)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("sidecar %d: %w", i, err)
		}
		d := ds[group]
		if d.Err != nil {
			return nil, fmt.Errorf("sidecar %d: %w", i, d.Err)
		}
		if d.State != "Stable" || len(d.Members) != want {
			return nil, fmt.Errorf("sidecar %d: state %s with %d members", i, d.State, len(d.Members))
		}
		got := map[int32]string{}
		for _, m := range d.Members {
			ca, ok := m.Assigned.AsConsumer()
			if !ok {
				return nil, fmt.Errorf("sidecar %d: member %s has no consumer assignment", i, m.MemberID)
			}
			for _, tp := range ca.Topics {
				if tp.Topic != topic {
					continue
				}
				for _, p := range tp.Partitions {
					if prev, dup := got[p]; dup {
						return nil, fmt.Errorf("sidecar %d: partition %d assigned to %s and %s", i, p, prev, m.MemberID)
					}
					got[p] = m.MemberID
				}
			}
		}
		if len(got) != partitions {
			return nil, fmt.Errorf("sidecar %d: %d of %d partitions assigned", i, len(got), partitions)
		}
		if first == nil {
			first = got
			continue
		}
		for p, m := range got {
			if first[p] != m {
				return nil, fmt.Errorf("sidecar %d disagrees on partition %d: %s vs %s", i, p, m, first[p])
			}
		}
	}
	return first, nil
}

func waitFor(t *testing.T, d time.Duration, what string, f func() error) time.Duration {
	t.Helper()
	start := time.Now()
	var err error
	for time.Since(start) < d {
		if err = f(); err == nil {
			return time.Since(start)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("%s not reached within %v: %v", what, d, err)
	return 0
}

func produceValues(t *testing.T, seed, topic string, from, n int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seed), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	rs := make([]*kgo.Record, 0, n)
	for i := from; i < from+n; i++ {
		rs = append(rs, &kgo.Record{Value: []byte(fmt.Sprintf("v%06d", i))})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// committedOffsets reads the group's committed offsets through adm.
func committedOffsets(t *testing.T, adm *kadm.Client, group string) map[int32]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	os, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int32]int64{}
	os.Each(func(o kadm.OffsetResponse) { out[o.Partition] = o.At })
	return out
}

// TestOneGroupAcrossThreeSidecars: franz-go members of one group, each on
// its own sidecar, share the partitions (every partition assigned once,
// DescribeGroups agrees through every sidecar), consume every record, and
// after SIGKILL of the sidecar coordinating the group the survivors
// re-form it, keep consuming, and no committed offset goes backwards.
func TestOneGroupAcrossThreeSidecars(t *testing.T) {
	if testing.Short() {
		t.Skip("starts sidecar processes")
	}
	iggyAddr := freeAddr(t)
	startIggyProc(t, iggyAddr, t.TempDir())
	ps := make([]*sidecarProc, 3)
	for i := range ps {
		ps[i] = startClusterSidecar(t, iggyAddr)
	}
	admins := make([]*kadm.Client, 3)
	for i, p := range ps {
		cl, err := kgo.NewClient(kgo.SeedBrokers(p.kafka))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		admins[i] = kadm.NewClient(cl)
	}
	const topic, group, partitions = "shared", "g-across", 6
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if _, err := admins[0].CreateTopic(ctx, partitions, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	const first = 3000
	produceValues(t, ps[0].kafka, topic, 0, first)

	got := &consumed{seen: map[string]int{}}
	var members []member
	for i, p := range ps {
		members = append(members, member{i, runMember(ctx, t, p.kafka, group, topic, got)})
	}
	members = append(members, member{2, runSaramaMember(ctx, t, ps[2].kafka, group, topic, got)})
	defer func() {
		for _, m := range members {
			if m.stop != nil {
				m.stop()
			}
		}
	}()

	t.Cleanup(func() {
		if t.Failed() {
			for i, p := range ps {
				if p == nil {
					continue
				}
				for _, l := range strings.Split(p.logText(), "\n") {
					if strings.Contains(l, "coordination") || strings.Contains(l, "group") {
						t.Logf("sidecar %d: %s", i, l)
					}
				}
			}
		}
	})
	formed := waitFor(t, 60*time.Second, "one group of 4 members (3 franz-go, 1 sarama) over 6 partitions, described alike by every sidecar", func() error {
		_, err := describeAgrees(ctx, admins, group, topic, partitions, len(members))
		return err
	})
	t.Logf("group of %d members formed across 3 sidecars in %v", len(members), formed)
	waitFor(t, 60*time.Second, "every record consumed", func() error {
		if n := got.count(); n < first {
			return fmt.Errorf("%d of %d", n, first)
		}
		return nil
	})
	got.mu.Lock()
	dups := 0
	for _, n := range got.seen {
		if n > 1 {
			dups++
		}
	}
	got.mu.Unlock()
	t.Logf("%d records consumed, %d more than once", first, dups)

	// ListGroups through any sidecar shows the group.
	for i, adm := range admins {
		ls, err := adm.ListGroups(ctx)
		if err != nil {
			t.Fatalf("list groups via sidecar %d: %v", i, err)
		}
		if _, ok := ls[group]; !ok {
			t.Fatalf("list groups via sidecar %d does not show %s: %v", i, group, ls.Groups())
		}
	}

	// SIGKILL of the sidecar that coordinates the group.
	waitFor(t, 30*time.Second, "committed offsets of every partition", func() error {
		if n := len(committedOffsets(t, admins[0], group)); n != partitions {
			return fmt.Errorf("%d of %d partitions committed", n, partitions)
		}
		return nil
	})
	owner := shardOwner(ps, cluster.Shard(group, cluster.DefaultShards))
	if owner < 0 {
		t.Fatal("no sidecar logs ownership of the group's shard")
	}
	survivor := (owner + 1) % 3
	before := committedOffsets(t, admins[survivor], group)
	t.Logf("killing sidecar %d (owner of the group's shard)", owner)
	killed := time.Now()
	if err := ps[owner].cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	admins[owner] = nil
	ps[owner] = nil
	for i := range members {
		if members[i].sidecar == owner { // their app lost its sidecar
			members[i].stop()
			members[i].stop = nil
		}
	}
	left := alive(members, ps)
	recovered := waitFor(t, 90*time.Second, "the group re-formed by the survivors", func() error {
		_, err := describeAgrees(ctx, admins, group, topic, partitions, left)
		return err
	})
	t.Logf("owner SIGKILL -> group Stable again with %d members in %v", left, recovered)
	const second = 1000
	produceValues(t, ps[survivor].kafka, topic, first, second)
	waitFor(t, 60*time.Second, "records produced after the kill consumed", func() error {
		if n := got.count(); n < first+second {
			return fmt.Errorf("%d of %d", n, first+second)
		}
		return nil
	})
	t.Logf("owner SIGKILL -> new records consumed after %v", time.Since(killed))
	var after map[int32]int64
	waitFor(t, 30*time.Second, "commits after recovery", func() error {
		after = committedOffsets(t, admins[survivor], group)
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
}

// TestRollingRestartOfSidecars: the three sidecars of the group are
// restarted one at a time with SIGTERM (each with its app's member, as a
// pod restart does) while records are produced and consumed: every
// acknowledged record is consumed, and the group ends Stable with every
// partition owned once, described alike by every sidecar.
func TestRollingRestartOfSidecars(t *testing.T) {
	if testing.Short() {
		t.Skip("starts sidecar processes")
	}
	iggyAddr := freeAddr(t)
	startIggyProc(t, iggyAddr, t.TempDir())
	ps := make([]*sidecarProc, 3)
	for i := range ps {
		ps[i] = startClusterSidecar(t, iggyAddr)
	}
	admin := func(i int) *kadm.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(ps[i].kafka))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return kadm.NewClient(cl)
	}
	admins := []*kadm.Client{admin(0), admin(1), admin(2)}
	const topic, group, partitions = "rolling", "g-rolling", 6
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if _, err := admins[0].CreateTopic(ctx, partitions, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	got := &consumed{seen: map[string]int{}}
	stops := make([]func(), 3)
	ids := make([]func() string, 3)
	for i, p := range ps {
		stops[i], ids[i] = runMemberWithID(ctx, t, p.kafka, group, topic, got)
	}
	// The described members are exactly the running ones (not a member of
	// a stopped pod still waiting for its session to end).
	exactly := func() error {
		if _, err := describeAgrees(ctx, admins, group, topic, partitions, 3); err != nil {
			return err
		}
		d, err := describedMembers(ctx, admins[0], group)
		if err != nil {
			return err
		}
		for i, id := range ids {
			if !d[id()] {
				return fmt.Errorf("member of sidecar %d (%q) not in the group %v", i, id(), d)
			}
		}
		return nil
	}
	defer func() {
		for _, s := range stops {
			if s != nil {
				s()
			}
		}
	}()
	waitFor(t, 60*time.Second, "the group of 3 formed", exactly)

	// Steady production through a sidecar that is not being restarted.
	var (
		pmu    sync.Mutex
		target = ps[1].kafka
		acked  = map[string]bool{}
	)
	pctx, stopProduce := context.WithCancel(ctx)
	produced := make(chan struct{})
	go func() {
		defer close(produced)
		var cl *kgo.Client
		at := ""
		for i := 0; pctx.Err() == nil; {
			pmu.Lock()
			want := target
			pmu.Unlock()
			if want != at {
				if cl != nil {
					cl.Close()
				}
				var err error
				cl, err = kgo.NewClient(kgo.SeedBrokers(want), kgo.DefaultProduceTopic(topic),
					kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.RecordDeliveryTimeout(10*time.Second))
				if err != nil {
					t.Error(err)
					return
				}
				at = want
			}
			rs := make([]*kgo.Record, 20)
			for k := range rs {
				rs[k] = &kgo.Record{Value: []byte(fmt.Sprintf("r%07d", i))}
				i++
			}
			rctx, rcancel := context.WithTimeout(pctx, 10*time.Second)
			res := cl.ProduceSync(rctx, rs...)
			rcancel()
			pmu.Lock()
			for _, r := range res {
				if r.Err == nil {
					acked[string(r.Record.Value)] = true
				}
			}
			pmu.Unlock()
			select {
			case <-pctx.Done():
			case <-time.After(20 * time.Millisecond):
			}
		}
		if cl != nil {
			cl.Close()
		}
	}()

	for i := range ps {
		pmu.Lock()
		target = ps[(i+1)%3].kafka
		pmu.Unlock()
		start := time.Now()
		// A pod stops as a native sidecar orders it: the app first (its
		// member leaves the group through its sidecar), then the sidecar.
		stops[i]()
		stops[i] = nil
		if err := ps[i].cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-ps[i].done:
			if err != nil {
				t.Fatalf("sidecar %d exit: %v", i, err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("sidecar %d still running 30s after SIGTERM", i)
		}
		ps[i] = startClusterSidecar(t, iggyAddr)
		admins[i] = admin(i)
		stops[i], ids[i] = runMemberWithID(ctx, t, ps[i].kafka, group, topic, got)
		waitFor(t, 90*time.Second, fmt.Sprintf("the group of the 3 running members Stable again after restarting sidecar %d", i), exactly)
		t.Logf("sidecar %d restarted (SIGTERM) with its member; group Stable with the 3 running members %v after the signal", i, time.Since(start))
	}
	stopProduce()
	<-produced
	pmu.Lock()
	want := make([]string, 0, len(acked))
	for v := range acked {
		want = append(want, v)
	}
	pmu.Unlock()
	if len(want) == 0 {
		t.Fatal("nothing was acknowledged")
	}
	waitFor(t, 90*time.Second, "every acknowledged record consumed", func() error {
		got.mu.Lock()
		defer got.mu.Unlock()
		missing := 0
		for _, v := range want {
			if got.seen[v] == 0 {
				missing++
			}
		}
		if missing > 0 {
			return fmt.Errorf("%d of %d acknowledged records not consumed", missing, len(want))
		}
		return nil
	})
	if err := exactly(); err != nil {
		t.Fatalf("group at the end: %v", err)
	}
	t.Logf("%d acknowledged records, all consumed", len(want))
}

// TestPeerWithWrongSecretRefused: a sidecar of the domain with another
// secret cannot reach the owner: the owner refuses it and logs the reason
// and the peer's address, the wrong sidecar's clients get a retriable
// coordinator error, and the owner's own clients are unaffected.
func TestPeerWithWrongSecretRefused(t *testing.T) {
	peerRefused(t, nil, []string{"KAFKA_IGGY_PEERS__SECRET=not-the-domain-secret-0123456789abcdef"}, "wrong_secret")
}

// TestPeerWithWrongCertificateRefused: with peers.tls (mutual TLS beside
// the secret), a sidecar whose certificate another CA signed is refused
// by the owner's TLS handshake as a wrong secret is; the sidecars with the
// domain's certificates coordinate as before.
func TestPeerWithWrongCertificateRefused(t *testing.T) {
	pki := tlstest.New(t, t.TempDir())
	good := pki.Issue("peer", pkix.Name{CommonName: "kafka-iggy-peer"}, true)
	intruder := tlstest.New(t, t.TempDir()).Issue("intruder", pkix.Name{CommonName: "kafka-iggy-peer"}, true)
	env := func(is tlstest.Issued) []string {
		return []string{"KAFKA_IGGY_PEERS__TLS__ENABLED=true", "KAFKA_IGGY_PEERS__TLS__CERT_FILE=" + is.CertFile,
			"KAFKA_IGGY_PEERS__TLS__KEY_FILE=" + is.KeyFile, "KAFKA_IGGY_PEERS__TLS__CA_FILE=" + pki.CAFile}
	}
	peerRefused(t, env(good), env(intruder), "tls_handshake")
}

// TestPeersOverMutualTLS: two sidecars with certificates of the domain's
// CA (each its own leaf) forward group calls to each other over the TLS
// peer link: a DescribeGroups sent to the non-owner is served by the owner.
func TestPeersOverMutualTLS(t *testing.T) {
	if testing.Short() {
		t.Skip("starts sidecar processes")
	}
	pki := tlstest.New(t, t.TempDir())
	env := func(name string) []string {
		is := pki.Issue(name, pkix.Name{CommonName: name}, true)
		return []string{"KAFKA_IGGY_PEERS__TLS__ENABLED=true", "KAFKA_IGGY_PEERS__TLS__CERT_FILE=" + is.CertFile,
			"KAFKA_IGGY_PEERS__TLS__KEY_FILE=" + is.KeyFile, "KAFKA_IGGY_PEERS__TLS__CA_FILE=" + pki.CAFile}
	}
	iggyAddr := freeAddr(t)
	startIggyProc(t, iggyAddr, t.TempDir())
	ps := []*sidecarProc{startClusterSidecar(t, iggyAddr, env("peer-a")...), startClusterSidecar(t, iggyAddr, env("peer-b")...)}
	var group string
	waitFor(t, 30*time.Second, "a shard active on the first sidecar", func() error {
		for i := range 200 {
			g := fmt.Sprintf("mtls-peer-%d", i)
			if shardOwner(ps, cluster.Shard(g, cluster.DefaultShards)) == 0 {
				group = g
				return nil
			}
		}
		return errors.New("the first sidecar owns no shard yet")
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(ps[1].kafka), kgo.RetryTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Groups = []string{group}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || resp.Groups[0].ErrorCode != kerr.GroupIDNotFound.Code { // served by the owner: no members yet
		t.Fatalf("describe forwarded over the TLS peer link: %v %+v", err, resp)
	}
}

// peerRefused runs an owner sidecar with goodEnv and another with badEnv,
// and checks the owner refuses the other's forwarded call with reason.
func peerRefused(t *testing.T, goodEnv, badEnv []string, reason string) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts sidecar processes")
	}
	iggyAddr := freeAddr(t)
	startIggyProc(t, iggyAddr, t.TempDir())
	good := startClusterSidecar(t, iggyAddr, goodEnv...)
	bad := startClusterSidecar(t, iggyAddr, badEnv...)
	ps := []*sidecarProc{good, bad}
	// A group whose shard the good sidecar serves.
	var group string
	waitFor(t, 30*time.Second, "shards active on both sidecars", func() error {
		for i := range 200 {
			g := fmt.Sprintf("refused-peer-%d", i)
			if shardOwner(ps, cluster.Shard(g, cluster.DefaultShards)) == 0 {
				group = g
				return nil
			}
		}
		return errors.New("the good sidecar owns no shard yet")
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	badCl, err := kgo.NewClient(kgo.SeedBrokers(bad.kafka), kgo.RetryTimeout(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer badCl.Close()
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Groups = []string{group}
	resp, err := req.RequestWith(ctx, badCl)
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.Groups[0].ErrorCode; code != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("describe through the refused sidecar: code %d, want COORDINATOR_NOT_AVAILABLE", code)
	}
	waitFor(t, 10*time.Second, "the refusal logged by the owner", func() error {
		for _, l := range strings.Split(good.logText(), "\n") {
			if strings.Contains(l, `"close_reason":"`+reason+`"`) && strings.Contains(l, `"peer_address":"127.0.0.1:`) {
				return nil
			}
		}
		return errors.New("no " + reason + " line")
	})
	// The owner's own clients are unaffected.
	goodCl, err := kgo.NewClient(kgo.SeedBrokers(good.kafka))
	if err != nil {
		t.Fatal(err)
	}
	defer goodCl.Close()
	resp, err = req.RequestWith(ctx, goodCl)
	if err != nil || resp.Groups[0].ErrorCode != kerr.GroupIDNotFound.Code { // served: the group has no members yet
		t.Fatalf("describe through the owner: %v %+v", err, resp)
	}
}
