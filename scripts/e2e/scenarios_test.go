package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The compatibility scenarios beyond the round trips, run per client and
// target as TestScenarios/<client>/<target>/<scenario> (the compat report,
// scripts/e2e/compat, reads these names):
//
//   - group: member A of a fresh group subscribes to a 4-partition topic and
//     is assigned every partition; member B joins; after the rebalance the
//     two hold disjoint, non-empty shares that cover the topic, and the
//     broker's DescribeGroups (kadm) shows the group Stable with two members
//     whose assignments are exactly those shares.
//   - commit: a member reads 4 of 10 records, commits offset 4 and leaves; the
//     client reads back 4 as committed, the broker's OffsetFetch says 4, and
//     a new member resumes at offset 4 and reads the 6 others (kcat, which
//     commits what it read on exit, leaves 10).
//   - seek: 6 records one second apart; the client's lookup by timestamp
//     (between records 2 and 3) gives offset 3, reading there gives record 3
//     with its CreateTime, and a timestamp after the last record gives no
//     offset (-1).
//   - idempotent: a producer with the client's stock settings sends 20
//     records; they arrive once each, in order, at offsets 0..19; on a target
//     that keeps producer batches, batches carry a producer id exactly when
//     the client is idempotent by default.
//   - admin: create (3 partitions, retention.ms=3600000), create again
//     (TOPIC_ALREADY_EXISTS), describe (3 partitions), describe configs,
//     alter retention.ms to 7200000, describe configs, delete, describe
//     (UNKNOWN_TOPIC_OR_PARTITION), through the client's own admin API.
//
// A client that cannot express a scenario says so (the cell reads "n/a" with
// the reason); the checks are the same for every client and target.

var scenarioNames = []string{"group", "commit", "seek", "idempotent", "admin"}

const (
	groupPartitions = 4
	commitRecords   = 10
	seekRecords     = 6
	idemRecords     = 20
)

// scenarioParams is what a scenario's client function gets (and what the
// external programs read as JSON).
type scenarioParams struct {
	Topic      string `json:"topic"`
	Group      string `json:"group,omitempty"`
	Partitions int    `json:"partitions,omitempty"`
	Records    int    `json:"records,omitempty"`
	Timestamp  int64  `json:"timestamp,omitempty"`
	After      int64  `json:"after,omitempty"`
}

type groupObs struct {
	Before []int32 `json:"before"`
	A      []int32 `json:"a"`
	B      []int32 `json:"b"`
}

type commitObs struct {
	Committed    int64 `json:"committed"`
	Resumed      int64 `json:"resumed"`
	ResumedCount int   `json:"resumed_count"`
	// ResumeCommits: the resuming member commits what it read on its way
	// out (kcat does), so the group's offset ends at the last record + 1.
	ResumeCommits bool `json:"resume_commits"`
}

type seekObs struct {
	Offset        int64 `json:"offset"`
	AfterOffset   int64 `json:"after_offset"`
	ReadOffset    int64 `json:"read_offset"`
	ReadTimestamp int64 `json:"read_timestamp"`
}

type idemObs struct {
	Offsets           []int64 `json:"offsets"` // nil when the client reports none (acks=0)
	IdempotentDefault bool    `json:"idempotent_default"`
}

type adminObs struct {
	Create              string `json:"create"`
	CreateAgain         string `json:"create_again"`
	Partitions          int    `json:"partitions"`
	Retention           string `json:"retention"`
	RetentionAfterAlter string `json:"retention_after_alter"`
	Delete              string `json:"delete"`
	DescribeAfterDelete string `json:"describe_after_delete"`
}

// scenarioClient is one client's implementation of the scenarios; a nil
// function is a scenario the client cannot express, with the reason in na.
type scenarioClient struct {
	name  string
	ready func(t *testing.T)
	// group runs the group scenario; it calls rebalanced once both members
	// hold their shares, while they are still members.
	group      func(t *testing.T, tg Target, p scenarioParams, rebalanced func(a, b []int32)) groupObs
	commit     func(t *testing.T, tg Target, p scenarioParams) commitObs
	seek       func(t *testing.T, tg Target, p scenarioParams) seekObs
	idempotent func(t *testing.T, tg Target, p scenarioParams) idemObs
	admin      func(t *testing.T, tg Target, p scenarioParams) adminObs
	na         map[string]string
}

// scenarioClients lists every client; scenarios_ext_test.go and
// scenarios_go_test.go fill in the functions.
func scenarioClients() []scenarioClient {
	return []scenarioClient{
		javaScenarioClient("java-"+kafka4Version(), kafka4Version()),
		javaScenarioClient("java-"+kafka3Version(), kafka3Version()),
		pythonScenarioClient("confluent-kafka-python", "confluent"),
		pythonScenarioClient("kafka-python", "kafka-python"),
		kcatScenarioClient(),
		kgoScenarioClient(),
		saramaScenarioClient(),
		kafkaGoScenarioClient(),
	}
}

func TestScenarios(t *testing.T) {
	for _, c := range scenarioClients() {
		t.Run(c.name, func(t *testing.T) {
			if c.ready != nil {
				c.ready(t)
			}
			for _, tg := range targets(t) {
				t.Run(tg.Name, func(t *testing.T) {
					runScenarios(t, c, tg)
				})
			}
		})
	}
}

// kfakeDeviations are the scenarios where kfake (the in-process reference of
// `make test`) answers differently from Apache Kafka and the client cannot
// cope: against kfake they are skipped with the reason (the compat report
// shows them as n/a on kfake); against Kafka and the sidecar they run. Keys
// are "client/scenario"; "java-*" is every Java version.
var kfakeDeviations = map[string]string{
	"java-*/admin": "kfake deviation: it answers DescribeTopicPartitions with a null eligible-leader-replicas list, " +
		"which the Java AdminClient's describeTopics dereferences (NullPointerException)",
	"java-*/admin-tools": "kfake deviation: its CreateTopics answer gives config source -1, which the Java AdminClient " +
		"behind kafka-topics --create refuses (IllegalArgumentException: id should be positive)",
	"java-*/cluster-tools": "kfake deviation: it answers DescribeClientQuotas with a null entries list, which " +
		"kafka-configs --entity-type clients dereferences (NullPointerException), and a preferred election of a partition " +
		"led by its preferred replica with success where Kafka answers ELECTION_NOT_NEEDED",
	"kafka-python/admin": "kfake deviation: its CreateTopics answer gives config source -1, which kafka-python refuses " +
		"(ValueError: Unrecognized ConfigSourceType)",
}

// skipKfakeDeviation skips a scenario that kfake cannot serve (see
// kfakeDeviations) when tg is kfake.
func skipKfakeDeviation(t *testing.T, tg Target, client, scenario string) {
	t.Helper()
	if !tg.Reference {
		return
	}
	for _, key := range []string{client + "/" + scenario, wildcardClient(client) + "/" + scenario} {
		if why, ok := kfakeDeviations[key]; ok {
			t.Skip(why)
		}
	}
}

func wildcardClient(client string) string {
	if strings.HasPrefix(client, "java-") {
		return "java-*"
	}
	return client
}

func runScenarios(t *testing.T, c scenarioClient, tg Target) {
	for _, sc := range scenarioNames {
		t.Run(sc, func(t *testing.T) {
			skipKfakeDeviation(t, tg, c.name, sc)
			start := time.Now()
			defer func() {
				t.Logf("%s %s against %s in %v", c.name, sc, tg.Name, time.Since(start).Round(time.Millisecond))
			}()
			switch sc {
			case "group":
				if c.group == nil {
					t.Skip("n/a: " + c.na[sc])
				}
				scenarioGroup(t, c, tg)
			case "commit":
				if c.commit == nil {
					t.Skip("n/a: " + c.na[sc])
				}
				scenarioCommit(t, c, tg)
			case "seek":
				if c.seek == nil {
					t.Skip("n/a: " + c.na[sc])
				}
				scenarioSeek(t, c, tg)
			case "idempotent":
				if c.idempotent == nil {
					t.Skip("n/a: " + c.na[sc])
				}
				scenarioIdempotent(t, c, tg)
			case "admin":
				if c.admin == nil {
					t.Skip("n/a: " + c.na[sc])
				}
				scenarioAdmin(t, c, tg)
			}
		})
	}
}

func allPartitions(n int) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(i)
	}
	return out
}

func sortedParts(ps []int32) []int32 {
	out := slices.Clone(ps)
	slices.Sort(out)
	return out
}

// produceSeq produces n records "k<i>"/"v<i>" to partition p of topic with
// franz-go, CreateTime ts(i), and waits for every ack.
func produceSeq(t *testing.T, tg Target, topic string, partitions int32, n int, ts func(i int) int64) {
	t.Helper()
	var recs []Rec
	for i := range n {
		recs = append(recs, Rec{Partition: int32(i) % partitions, Key: fmt.Appendf(nil, "k%d", i), Value: fmt.Appendf(nil, "v%d", i), Timestamp: ts(i), Offset: -1})
	}
	kgoProduce(t, tg, topic, "none", recs)
}

func nowTS(int) int64 { return time.Now().UnixMilli() }

func scenarioGroup(t *testing.T, c scenarioClient, tg Target) {
	p := scenarioParams{Topic: uniqueTopic(c.name + "-group"), Group: uniqueTopic("g-" + c.name), Partitions: groupPartitions}
	createTopic(t, tg, p.Topic, groupPartitions)
	produceSeq(t, tg, p.Topic, groupPartitions, 2*groupPartitions, nowTS)
	described := false
	obs := c.group(t, tg, p, func(a, b []int32) {
		described = true
		describeGroupCheck(t, tg, p.Group, a, b)
	})
	if t.Failed() {
		return
	}
	who := fmt.Sprintf("%s group %s on %s", c.name, p.Group, tg.Name)
	if !slices.Equal(sortedParts(obs.Before), allPartitions(groupPartitions)) {
		t.Errorf("%s: member A alone was assigned %v, want every partition %v", who, obs.Before, allPartitions(groupPartitions))
	}
	a, b := sortedParts(obs.A), sortedParts(obs.B)
	union := sortedParts(append(slices.Clone(a), b...))
	if len(a) == 0 || len(b) == 0 || !slices.Equal(union, allPartitions(groupPartitions)) {
		t.Errorf("%s: after the rebalance A has %v and B has %v; want disjoint, non-empty shares covering %v", who, a, b, allPartitions(groupPartitions))
	}
	if len(a) != groupPartitions/2 || len(b) != groupPartitions/2 {
		t.Errorf("%s: after the rebalance A has %v and B has %v; every client's default assignor splits %d partitions 2/2", who, a, b, groupPartitions)
	}
	if !described {
		t.Errorf("%s: the client never reported the rebalance while both members were in the group", who)
	}
	t.Logf("%s: before %v, after A=%v B=%v", who, obs.Before, a, b)
}

// describeGroupCheck asks the broker (kadm DescribeGroups) about the group
// while both members are in it.
func describeGroupCheck(t *testing.T, tg Target, group string, a, b []int32) {
	t.Helper()
	adm := kadm.NewClient(newKgo(t, tg))
	ctx := testCtx(t, 20*time.Second)
	want := [][]int32{sortedParts(a), sortedParts(b)}
	slices.SortFunc(want, slices.Compare)
	// The members have their assignments; the coordinator may still be
	// completing the generation: poll until Stable, with a deadline.
	deadline := time.Now().Add(15 * time.Second)
	var last string
	for {
		dg, err := adm.DescribeGroups(ctx, group)
		if err == nil {
			err = dg.Error()
		}
		if err != nil {
			t.Errorf("%s: describe group %s: %v", tg.Name, group, err)
			return
		}
		g := dg[group]
		var got [][]int32
		for _, m := range g.Members {
			ca, ok := m.Assigned.AsConsumer()
			if !ok {
				continue
			}
			var ps []int32
			for _, tp := range ca.Topics {
				ps = append(ps, tp.Partitions...)
			}
			got = append(got, sortedParts(ps))
		}
		slices.SortFunc(got, slices.Compare)
		last = fmt.Sprintf("state %s, protocol type %q, %d members, assignments %v", g.State, g.ProtocolType, len(g.Members), got)
		if g.State == "Stable" && len(g.Members) == 2 && g.ProtocolType == "consumer" && slices.EqualFunc(got, want, slices.Equal) {
			t.Logf("%s: describe group %s: %s", tg.Name, group, last)
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%s: describe group %s: %s; want Stable, protocol type \"consumer\", 2 members with assignments %v", tg.Name, group, last, want)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func scenarioCommit(t *testing.T, c scenarioClient, tg Target) {
	p := scenarioParams{Topic: uniqueTopic(c.name + "-commit"), Group: uniqueTopic("g-" + c.name), Records: commitRecords}
	createTopic(t, tg, p.Topic, 1)
	produceSeq(t, tg, p.Topic, 1, commitRecords, nowTS)
	obs := c.commit(t, tg, p)
	if t.Failed() {
		return
	}
	who := fmt.Sprintf("%s commit/resume in group %s on %s", c.name, p.Group, tg.Name)
	if obs.Committed != 4 {
		t.Errorf("%s: the client reads back committed offset %d, want 4", who, obs.Committed)
	}
	adm := kadm.NewClient(newKgo(t, tg))
	fo, err := adm.FetchOffsets(testCtx(t, 20*time.Second), p.Group)
	if err == nil {
		err = fo.Error()
	}
	if err != nil {
		t.Errorf("%s: OffsetFetch: %v", who, err)
	} else {
		want := int64(4)
		if obs.ResumeCommits {
			want = commitRecords
		}
		if o, ok := fo.Lookup(p.Topic, 0); !ok || o.At != want {
			t.Errorf("%s: the broker's OffsetFetch gives %+v (found %v), want offset %d", who, o.Offset, ok, want)
		}
	}
	if obs.Resumed != 4 || obs.ResumedCount != commitRecords-4 {
		t.Errorf("%s: the second member resumed at offset %d and read %d records, want offset 4 and %d records", who, obs.Resumed, obs.ResumedCount, commitRecords-4)
	}
}

func scenarioSeek(t *testing.T, c scenarioClient, tg Target) {
	p := scenarioParams{Topic: uniqueTopic(c.name + "-seek"), Timestamp: tsBase + 2500, After: tsBase + 100_000, Records: seekRecords}
	createTopic(t, tg, p.Topic, 1)
	produceSeq(t, tg, p.Topic, 1, seekRecords, func(i int) int64 { return tsBase + int64(i)*1000 })
	obs := c.seek(t, tg, p)
	if t.Failed() {
		return
	}
	who := fmt.Sprintf("%s seek by timestamp on %s", c.name, tg.Name)
	if obs.Offset != 3 {
		t.Errorf("%s: lookup of CreateTime %s gave offset %d, want 3 (the first record at or after it)", who, fmtTime(p.Timestamp), obs.Offset)
	}
	if obs.ReadOffset != 3 || obs.ReadTimestamp != tsBase+3000 {
		t.Errorf("%s: read offset %d with CreateTime %s after the seek, want offset 3 with %s", who, obs.ReadOffset, fmtTime(obs.ReadTimestamp), fmtTime(tsBase+3000))
	}
	if obs.AfterOffset != -1 {
		t.Errorf("%s: lookup of a CreateTime after every record gave offset %d, want none (-1)", who, obs.AfterOffset)
	}
}

func scenarioIdempotent(t *testing.T, c scenarioClient, tg Target) {
	p := scenarioParams{Topic: uniqueTopic(c.name + "-idem"), Records: idemRecords}
	createTopic(t, tg, p.Topic, 1)
	obs := c.idempotent(t, tg, p)
	if t.Failed() {
		return
	}
	who := fmt.Sprintf("%s producer with stock settings on %s", c.name, tg.Name)
	if obs.Offsets != nil {
		for i, o := range obs.Offsets {
			if o != int64(i) {
				t.Errorf("%s: producer offsets %v, want 0..%d", who, obs.Offsets, idemRecords-1)
				break
			}
		}
	}
	got := kgoConsume(t, tg, p.Topic, 1, idemRecords)
	for i, r := range got {
		if r.Offset != int64(i) || string(r.Value) != fmt.Sprintf("v%d", i) {
			t.Errorf("%s: record %d read back as offset %d value %q, want offset %d value %q (each record once, in order)", who, i, r.Offset, r.Value, i, fmt.Sprintf("v%d", i))
			break
		}
	}
	if !tg.KeepsProducerBatches {
		return
	}
	pids, err := batchProducerIDs(testCtx(t, 20*time.Second), newKgo(t, tg), p.Topic)
	if err != nil {
		t.Errorf("%s: raw fetch: %v", who, err)
		return
	}
	for _, pid := range pids {
		if (pid >= 0) != obs.IdempotentDefault {
			t.Errorf("%s: batches carry producer ids %v; the client is idempotent by default: %v", who, pids, obs.IdempotentDefault)
			break
		}
	}
	t.Logf("%s: idempotent by default: %v; batch producer ids %v", who, obs.IdempotentDefault, pids)
}

// batchProducerIDs returns the producer id of every batch of partition 0.
func batchProducerIDs(ctx context.Context, cl *kgo.Client, topic string) ([]int64, error) {
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MaxWaitMillis = 100
	req.MaxBytes = 1 << 20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = topic
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes = 1 << 20
	ft.Partitions = append(ft.Partitions, fp)
	req.Topics = append(req.Topics, ft)
	mreq := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(topic)
	mreq.Topics = append(mreq.Topics, mt)
	mresp, err := mreq.RequestWith(ctx, cl)
	if err != nil || len(mresp.Topics) != 1 || len(mresp.Topics[0].Partitions) == 0 {
		return nil, fmt.Errorf("metadata: %v", err)
	}
	req.Topics[0].TopicID = mresp.Topics[0].TopicID
	kresp, err := cl.Broker(int(mresp.Topics[0].Partitions[0].Leader)).Request(ctx, req)
	if err != nil {
		return nil, err
	}
	var out []int64
	for _, rt := range kresp.(*kmsg.FetchResponse).Topics {
		for _, rp := range rt.Partitions {
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
				return nil, err
			}
			b := rp.RecordBatches
			for len(b) >= 12 {
				size := 12 + int(int32(uint32(b[8])<<24|uint32(b[9])<<16|uint32(b[10])<<8|uint32(b[11])))
				if size > len(b) {
					break
				}
				var rb kmsg.RecordBatch
				if err := rb.ReadFrom(b[:size]); err != nil {
					return nil, err
				}
				out = append(out, rb.ProducerID)
				b = b[size:]
			}
		}
	}
	return out, nil
}

func scenarioAdmin(t *testing.T, c scenarioClient, tg Target) {
	p := scenarioParams{Topic: uniqueTopic(c.name + "-admin")}
	obs := c.admin(t, tg, p)
	if t.Failed() {
		return
	}
	want := adminObs{Create: "NONE", CreateAgain: "TOPIC_ALREADY_EXISTS", Partitions: 3, Retention: "3600000",
		RetentionAfterAlter: "7200000", Delete: "NONE", DescribeAfterDelete: "UNKNOWN_TOPIC_OR_PARTITION"}
	if obs != want {
		t.Errorf("%s admin on %s:\n  got  %+v\n  want %+v", c.name, tg.Name, obs, want)
	}
}

// kerrName renders a Kafka error code as Kafka's name for it.
func kerrName(code int16) string {
	if code == 0 {
		return "NONE"
	}
	if e, ok := kerr.ErrorForCode(code).(*kerr.Error); ok {
		return e.Message
	}
	return fmt.Sprintf("UNKNOWN_CODE_%d", code)
}

// members tracks two group members' assignments for the Go clients.
type members struct {
	mu   sync.Mutex
	sets [2]map[int32]bool
}

func newMembers() *members {
	return &members{sets: [2]map[int32]bool{{}, {}}}
}

func (m *members) add(i int, ps ...int32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, p := range ps {
		m.sets[i][p] = true
	}
}

func (m *members) remove(i int, ps ...int32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, p := range ps {
		delete(m.sets[i], p)
	}
}

func (m *members) set(i int, ps []int32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sets[i] = map[int32]bool{}
	for _, p := range ps {
		m.sets[i][p] = true
	}
}

func (m *members) get(i int) []int32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []int32
	for p := range m.sets[i] {
		out = append(out, p)
	}
	return sortedParts(out)
}

// waitShares polls until member A alone holds every partition (b < 0) or
// both hold disjoint non-empty shares covering n partitions.
func (m *members) wait(t *testing.T, who string, n int, both bool, failed func() error) bool {
	t.Helper()
	deadline := time.Now().Add(45 * time.Second)
	for {
		if err := failed(); err != nil {
			t.Errorf("%s: group member failed: %v", who, err)
			return false
		}
		a, b := m.get(0), m.get(1)
		union := sortedParts(append(slices.Clone(a), b...))
		if !both && len(a) == n {
			return true
		}
		if both && len(a) > 0 && len(b) > 0 && len(a)+len(b) == n && len(slices.Compact(union)) == n {
			return true
		}
		if time.Now().After(deadline) {
			t.Errorf("%s: no stable split before the deadline: A has %v, B has %v (both joined: %v)", who, a, b, both)
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// pollValue calls get until it returns something other than old, or 15 s
// pass: a broker applies an altered config asynchronously (Apache Kafka's
// DescribeConfigs may show the old value for a moment after the alter).
func pollValue(get func() string, old string) string {
	deadline := time.Now().Add(15 * time.Second)
	for {
		v := get()
		if v != old || time.Now().After(deadline) {
			return v
		}
		time.Sleep(50 * time.Millisecond)
	}
}
