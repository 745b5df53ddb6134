package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
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
			lg := newLiveGroup(t, tg, "cglive", 4)
			a, b := lg.start(), lg.start() // classic members (cooperative-sticky)
			lg.produce(0)
			lg.waitRead("two classic members")
			if gt := lg.groupType(); gt != "classic" {
				t.Fatalf("group type %q with two classic members, want classic", gt)
			}

			// The rolling restart, one member at a time.
			c := lg.start(kgo.ServerSideBalancer())
			lg.produce(1)
			lg.waitRead("two classic members and one consumer-protocol member")
			if gt := lg.groupType(); gt != "consumer" {
				t.Fatalf("group type %q after a consumer-protocol member joined the live classic group, want consumer", gt)
			}
			if n := lg.members(); n != 3 {
				t.Fatalf("the upgraded group has %d members, want 3 (the two classic members kept)", n)
			}
			lg.stop(a)
			a = lg.start(kgo.ServerSideBalancer())
			lg.produce(2)
			lg.waitRead("after the first classic member restarted")
			lg.stop(b)
			b = lg.start(kgo.ServerSideBalancer())
			lg.produce(3)
			lg.waitRead("after the second classic member restarted")
			if n := lg.members(); n != 3 || lg.groupType() != "consumer" {
				t.Fatalf("after the rolling restart: %d consumer-protocol members, group type %q; want 3, consumer", n, lg.groupType())
			}
			lg.stop(a)
			lg.stop(b)
			lg.stop(c)
			lg.checkOnce()
		})
	}
}

// TestConsumerProtocolLiveDowngrade: a live classic group of two is
// upgraded by a consumer-protocol member, described while it is mixed,
// and downgraded when that member leaves; compared between Apache Kafka
// 4.4 and the sidecar.
//
// While mixed, DescribeGroups answers as for any consumer group (Dead; from
// v6 GROUP_ID_NOT_FOUND "Group … is not a classic group.") and
// ConsumerGroupDescribe v1 lists the three members, the two classic ones
// with MemberType 0 and the consumer-protocol one with 1, sharing the
// partitions without overlap, the group epoch one past the classic
// generation; kafka-consumer-groups --describe --members --verbose shows
// the same columns and rows (UPGRADED true for the consumer-protocol
// member) on both. When the consumer-protocol member leaves the
// group becomes a classic group again (ListGroups type classic,
// DescribeGroups protocol type "consumer"), its two classic members
// rebalance, take every partition and go on reading every record once.
func TestConsumerProtocolLiveDowngrade(t *testing.T) {
	for _, tg := range targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			const partitions = 6
			lg := newLiveGroup(t, tg, "cgdown", partitions)
			a, b := lg.start(), lg.start()
			lg.produce(0)
			lg.waitRead("two classic members")
			var ga int32
			lg.await("the classic group Stable, both members at one generation", func() (bool, string) {
				_, ga = a.cl.GroupMetadata()
				_, gb := b.cl.GroupMetadata()
				d := describeGroupsSummary(t, tg, lg.group, 5, partitions)
				return ga == gb && ga > 0 && strings.Contains(d, "state Stable") && strings.Contains(d, "every partition assigned once"),
					fmt.Sprintf("generations %d %d, %s", ga, gb, d)
			})
			c := lg.start(kgo.ServerSideBalancer())
			lg.produce(1)
			lg.waitRead("two classic members and one consumer-protocol member")
			if gt := lg.groupType(); gt != "consumer" {
				t.Fatalf("group type %q after a consumer-protocol member joined the live classic group, want consumer", gt)
			}

			// The mixed group described: wait until it is Stable, each member
			// owning what the target gives it.
			var mixed string
			lg.await("the mixed group described Stable", func() (bool, string) {
				mixed = describeMixed(t, tg, lg.topic, lg.group, partitions, ga)
				return strings.HasPrefix(mixed, "ConsumerGroupDescribe v1: Stable"), mixed
			})
			const wantMixed = "ConsumerGroupDescribe v1: Stable, member types [0 0 1], group epoch the classic generation +1, " +
				"every partition owned once, each owned as targeted; " +
				"DescribeGroups v5: code 0 state Dead protocol type \"\" members 0; " +
				"DescribeGroups v6: code 69 \"Group <group> is not a classic group.\" state Dead protocol type \"\" members 0"
			if mixed != wantMixed {
				t.Errorf("the mixed group described:\n got %s\nwant %s", mixed, wantMixed)
			}

			if tool, ok := membersTool(t, tg, lg.group); ok {
				const want = "GROUP CONSUMER-ID HOST CLIENT-ID #PARTITIONS CURRENT-EPOCH CURRENT-ASSIGNMENT TARGET-EPOCH TARGET-ASSIGNMENT UPGRADED; " +
					"rows [2 false as targeted, 2 false as targeted, 2 true as targeted]"
				if tool != want {
					t.Errorf("kafka-consumer-groups --describe --members --verbose of the mixed group:\n got %s\nwant %s", tool, want)
				}
			}
			lg.stop(c) // the last consumer-protocol member leaves: the group goes back to classic
			lg.produce(2)
			lg.waitRead("the two classic members after the downgrade")
			var classic string
			lg.await("the downgraded group described Stable", func() (bool, string) {
				classic = describeDowngraded(t, tg, lg.group, partitions)
				return strings.HasPrefix(classic, "ListGroups classic; DescribeGroups v5: code 0 state Stable"), classic
			})
			const wantClassic = "ListGroups classic; DescribeGroups v5: code 0 state Stable protocol type \"consumer\" members 2, " +
				"every partition assigned once; ConsumerGroupDescribe: code 69 \"Group <group> is not a consumer group.\""
			if classic != wantClassic {
				t.Errorf("the downgraded group described:\n got %s\nwant %s", classic, wantClassic)
			}
			if tool, ok := membersTool(t, tg, lg.group); ok {
				const want = "GROUP CONSUMER-ID HOST CLIENT-ID #PARTITIONS CURRENT-EPOCH CURRENT-ASSIGNMENT TARGET-EPOCH TARGET-ASSIGNMENT; rows [3, 3]"
				if tool != want {
					t.Errorf("kafka-consumer-groups --describe --members --verbose of the downgraded group:\n got %s\nwant %s", tool, want)
				}
			}
			lg.produce(3)
			lg.waitRead("the two classic members after the downgrade, a second round")
			lg.stop(a)
			lg.stop(b)
			lg.checkOnce()
		})
	}
}

// describeMixed summarises ConsumerGroupDescribe v1 and DescribeGroups v5
// and v6 of a group with classic and consumer-protocol members.
func describeMixed(t *testing.T, tg Target, topic, group string, partitions, generation int32) string {
	t.Helper()
	cl := newKgo(t, tg)
	ctx := testCtx(t, 10*time.Second)
	var parts []string
	cd := kmsg.NewPtrConsumerGroupDescribeRequest()
	cd.Version = 1
	cd.Groups = []string{group}
	cdr, err := cd.RequestWith(ctx, cl)
	if err != nil || len(cdr.Groups) != 1 {
		t.Fatalf("ConsumerGroupDescribe: %v", err)
	}
	g := cdr.Groups[0]
	if g.ErrorCode != 0 {
		parts = append(parts, fmt.Sprintf("ConsumerGroupDescribe v1: code %d", g.ErrorCode))
	} else {
		var types []int
		owners := map[int32]int{}
		asTargeted, fields := true, true
		for _, m := range g.Members {
			types = append(types, int(m.MemberType))
			// Every member: at the group epoch, subscribed to the topic by
			// name (the regex "", not null, on Kafka 4.4), the client's id
			// and host shown.
			fields = fields && m.MemberEpoch == g.Epoch && fmt.Sprint(m.SubscribedTopics) == "["+topic+"]" &&
				strPtr(m.SubscribedTopicRegex) == `""` && m.ClientID == "kgo" && m.ClientHost != "" && m.InstanceID == nil
			got := tpSet(m.Assignment)
			for _, p := range got {
				owners[p]++
			}
			if fmt.Sprint(got) != fmt.Sprint(tpSet(m.TargetAssignment)) {
				asTargeted = false
			}
		}
		sort.Ints(types)
		once := len(owners) == int(partitions)
		for _, n := range owners {
			once = once && n == 1
		}
		s := fmt.Sprintf("ConsumerGroupDescribe v1: %s, member types %v, group epoch the classic generation %+d", g.State, types, g.Epoch-generation)
		if g.AssignmentEpoch != g.Epoch {
			s += fmt.Sprintf(", assignment epoch %d of group epoch %d", g.AssignmentEpoch, g.Epoch)
		}
		if !fields {
			for _, m := range g.Members {
				s += fmt.Sprintf(", member type %d epoch %d subscribed %v regex %v client %q host %q instance %v",
					m.MemberType, m.MemberEpoch, m.SubscribedTopics, strPtr(m.SubscribedTopicRegex), m.ClientID, m.ClientHost, strPtr(m.InstanceID))
			}
		}
		if once {
			s += ", every partition owned once"
		} else {
			s += fmt.Sprintf(", owners %v", owners)
		}
		if asTargeted {
			s += ", each owned as targeted"
		} else {
			s += ", not as targeted"
		}
		parts = append(parts, s)
	}
	for _, v := range []int16{5, 6} {
		parts = append(parts, describeGroupsSummary(t, tg, group, v, partitions))
	}
	return strings.Join(parts, "; ")
}

// describeDowngraded summarises ListGroups, DescribeGroups v5 and
// ConsumerGroupDescribe of a group back in the classic protocol.
func describeDowngraded(t *testing.T, tg Target, group string, partitions int32) string {
	t.Helper()
	cl := newKgo(t, tg)
	ctx := testCtx(t, 10*time.Second)
	ls, err := kadm.NewClient(cl).ListGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	parts := []string{"ListGroups " + ls[group].GroupType, describeGroupsSummary(t, tg, group, 5, partitions)}
	cd := kmsg.NewPtrConsumerGroupDescribeRequest()
	cd.Version = 1
	cd.Groups = []string{group}
	cdr, err := cd.RequestWith(ctx, cl)
	if err != nil || len(cdr.Groups) != 1 {
		t.Fatalf("ConsumerGroupDescribe: %v", err)
	}
	s := fmt.Sprintf("ConsumerGroupDescribe: code %d", cdr.Groups[0].ErrorCode)
	if m := cdr.Groups[0].ErrorMessage; m != nil {
		s += fmt.Sprintf(" %q", strings.ReplaceAll(*m, group, "<group>"))
	}
	return strings.Join(append(parts, s), "; ")
}

// describeGroupsSummary is one DescribeGroups answer of group: error,
// state, protocol type, members and whether their assignments cover every
// partition once.
func describeGroupsSummary(t *testing.T, tg Target, group string, version int16, partitions int32) string {
	t.Helper()
	vs := kversion.Stable()
	vs.SetMaxKeyVersion(15, version)
	cl := newKgo(t, tg, kgo.MaxVersions(vs))
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Groups = []string{group}
	resp, err := req.RequestWith(testCtx(t, 10*time.Second), cl)
	if err != nil || len(resp.Groups) != 1 {
		t.Fatalf("DescribeGroups v%d: %v", version, err)
	}
	g := resp.Groups[0]
	s := fmt.Sprintf("DescribeGroups v%d: code %d", version, g.ErrorCode)
	if g.ErrorMessage != nil {
		s += fmt.Sprintf(" %q", strings.ReplaceAll(*g.ErrorMessage, group, "<group>"))
	}
	s += fmt.Sprintf(" state %s protocol type %q members %d", g.State, g.ProtocolType, len(g.Members))
	if len(g.Members) == 0 {
		return s
	}
	owners := map[int32]int{}
	for _, m := range g.Members {
		var a kmsg.ConsumerMemberAssignment
		if err := a.ReadFrom(m.MemberAssignment); err != nil {
			return s + fmt.Sprintf(", an assignment does not decode: %v", err)
		}
		for _, tp := range a.Topics {
			for _, p := range tp.Partitions {
				owners[p]++
			}
		}
	}
	once := len(owners) == int(partitions)
	for _, n := range owners {
		once = once && n == 1
	}
	if once {
		return s + ", every partition assigned once"
	}
	return s + fmt.Sprintf(", owners %v", owners)
}

func tpSet(a kmsg.Assignment) []int32 {
	var out []int32
	for _, tp := range a.TopicPartitions {
		out = append(out, tp.Partitions...)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// liveGroup runs franz-go members of one group reading one topic, each
// committing what it read before it lets a rebalance take partitions away,
// and counts how often every record was read.
type liveGroup struct {
	t            *testing.T
	tg           Target
	topic, group string
	partitions   int32

	mu          sync.Mutex
	reads       map[string]int  // value -> times read
	uncommitted map[string]bool // read by a member whose commit failed
	total       int
}

type liveMember struct {
	cl   *kgo.Client
	done chan struct{}
}

// newLiveGroup creates the topic; the target must serve the consumer
// protocol and be the sidecar or Apache Kafka.
func newLiveGroup(t *testing.T, tg Target, prefix string, partitions int32) *liveGroup {
	t.Helper()
	if !tg.Sidecar && !tg.Kafka {
		t.Skipf("%s: the live migration is compared between the sidecar and Apache Kafka only", tg.Name)
	}
	if !servesConsumerProtocol(t, tg) {
		t.Fatalf("%s does not serve ConsumerGroupHeartbeat v1", tg.Name)
	}
	topic := uniqueTopic(prefix)
	createTopic(t, tg, topic, partitions)
	return &liveGroup{t: t, tg: tg, topic: topic, group: topic + "-g", partitions: partitions,
		reads: map[string]int{}, uncommitted: map[string]bool{}}
}

// produce writes 25 records to every partition.
func (lg *liveGroup) produce(round int) {
	lg.t.Helper()
	const per = 25
	cl := newKgo(lg.t, lg.tg, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.DefaultProduceTopic(lg.topic))
	var rs []*kgo.Record
	for p := range lg.partitions {
		for i := range per {
			rs = append(rs, &kgo.Record{Partition: p, Value: fmt.Appendf(nil, "%d-%d-%d", round, p, i)})
		}
	}
	if err := cl.ProduceSync(testCtx(lg.t, 30*time.Second), rs...).FirstErr(); err != nil {
		lg.t.Fatal(err)
	}
	lg.mu.Lock()
	lg.total += len(rs)
	lg.mu.Unlock()
}

// await polls cond for up to 90 seconds.
func (lg *liveGroup) await(what string, cond func() (bool, string)) {
	lg.t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			lg.t.Fatalf("%s: %s", what, state)
		}
		time.Sleep(100 * time.Millisecond) // polling an outcome, not synchronising
	}
}

// waitRead waits until every record produced so far was read.
func (lg *liveGroup) waitRead(what string) {
	lg.t.Helper()
	lg.await(what, func() (bool, string) {
		lg.mu.Lock()
		defer lg.mu.Unlock()
		return len(lg.reads) == lg.total, fmt.Sprintf("%d of %d records read", len(lg.reads), lg.total)
	})
}

// start runs a member (classic cooperative-sticky unless opts say else)
// that commits what it read before it lets a rebalance take partitions
// away (BlockRebalanceOnPoll).
func (lg *liveGroup) start(opts ...kgo.Opt) *liveMember {
	lg.t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(lg.tg.Bootstrap), kgo.ConsumerGroup(lg.group), kgo.ConsumeTopics(lg.topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(), kgo.BlockRebalanceOnPoll(),
		kgo.FetchMaxWait(300 * time.Millisecond)}, opts...)...)
	if err != nil {
		lg.t.Fatal(err)
	}
	m := &liveMember{cl: cl, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		for {
			fs := cl.PollFetches(context.Background())
			if fs.IsClientClosed() {
				return
			}
			var vals []string
			fs.EachRecord(func(r *kgo.Record) { vals = append(vals, string(r.Value)) })
			cerr := error(nil)
			if len(vals) > 0 {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				cerr = cl.CommitUncommittedOffsets(ctx)
				cancel()
			}
			lg.mu.Lock()
			for _, v := range vals {
				lg.reads[v]++
				if cerr != nil {
					lg.uncommitted[v] = true
				}
			}
			lg.mu.Unlock()
			cl.AllowRebalance()
		}
	}()
	lg.t.Cleanup(func() { m.cl.Close(); <-m.done })
	return m
}

// stop closes the member's client, which leaves the group.
func (lg *liveGroup) stop(m *liveMember) {
	m.cl.Close()
	<-m.done
}

// groupType is the group's type in ListGroups.
func (lg *liveGroup) groupType() string {
	lg.t.Helper()
	ls, err := kadm.NewClient(newKgo(lg.t, lg.tg)).ListGroups(testCtx(lg.t, 10*time.Second))
	if err != nil {
		lg.t.Fatal(err)
	}
	return ls[lg.group].GroupType
}

// members counts the members ConsumerGroupDescribe shows.
func (lg *liveGroup) members() int {
	lg.t.Helper()
	dg, err := kadm.NewClient(newKgo(lg.t, lg.tg)).DescribeConsumerGroups(testCtx(lg.t, 10*time.Second), lg.group)
	if err != nil {
		lg.t.Fatal(err)
	}
	return len(dg[lg.group].Members)
}

// checkOnce fails the test for a record read twice whose first read was
// committed.
func (lg *liveGroup) checkOnce() {
	lg.t.Helper()
	lg.mu.Lock()
	defer lg.mu.Unlock()
	for v, n := range lg.reads {
		if n > 1 && !lg.uncommitted[v] {
			lg.t.Errorf("%s read %d times, its first read committed", v, n)
		}
	}
}

// membersTool summarises kafka-consumer-groups --describe --members
// --verbose of group (Kafka 4's tool): its columns, and per member its
// partition count, whether it is upgraded (UPGRADED, shown for a consumer
// group) and whether it owns its target (mixed groups); false when the
// Kafka 4 tools are not installed.
func membersTool(t *testing.T, tg Target, group string) (string, bool) {
	t.Helper()
	version := kafka4Version()
	if _, err := os.Stat(filepath.Join(KafkaCacheDir(version), "mainclasses")); err != nil {
		t.Logf("kafka-consumer-groups not checked: the Kafka %s tools are not installed", version)
		return "", false
	}
	out := runKafkaTool(t, version, 90*time.Second, "consumer-groups", "--bootstrap-server", tg.Bootstrap, "--describe", "--group", group, "--members", "--verbose")
	var header []string
	var rows []string
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) > 0 && f[0] == "GROUP":
			header = f
		case len(f) == len(header) && len(f) > 0 && f[0] == group:
			col := map[string]string{}
			for i, h := range header {
				col[h] = f[i]
			}
			r := col["#PARTITIONS"]
			if u, ok := col["UPGRADED"]; ok {
				r += " " + u
				if col["CURRENT-ASSIGNMENT"] == col["TARGET-ASSIGNMENT"] && col["CURRENT-EPOCH"] == col["TARGET-EPOCH"] {
					r += " as targeted"
				} else {
					r += " not as targeted"
				}
			}
			rows = append(rows, r)
		}
	}
	sort.Strings(rows)
	return fmt.Sprintf("%s; rows [%s]", strings.Join(header, " "), strings.Join(rows, ", ")), true
}
