package main

// The rebalance workload: how long a consumer group takes to be whole
// again after a member joins, after a member leaves, and (sidecars only)
// after the sidecar that coordinates the group is killed.
//
// Sidecar side: three `kafka-iggy serve` processes of one coordination
// domain (peer link on, as cmd/kafka-iggy/cluster_test.go starts them) on
// the bench's embedded Iggy server, each member connected to its own
// sidecar only. Kafka side: the bench's single-node broker, every member on
// it. The same franz-go group consumers on both: default balancers
// (cooperative-sticky first), session timeout plan.RebalSession, heartbeat
// interval plan.RebalHeartbeat, each polling its own loop.
//
// Each event is timed from the call that causes it (newKgo of the
// joining member, Close of the leaving one, SIGKILL of the owner) to the
// first DescribeGroups answer, polled every rebalancePoll, that shows the
// group Stable with exactly the expected members (by member id) and every
// partition of the topic assigned to exactly one of them, each member
// holding at least one.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafka-iggy/kafka-iggy/bridge/cluster"
)

// The events of the rebalance workload (Result.Variant): with the classic
// group protocol, and with the consumer protocol (KIP-848, franz-go's
// ServerSideBalancer).
const (
	evJoin    = "member join"
	evLeave   = "member leave"
	evKill    = "owner SIGKILL"
	evJoinCP  = "member join (consumer protocol)"
	evLeaveCP = "member leave (consumer protocol)"
	evKillCP  = "owner SIGKILL (consumer protocol)"
)

var rebalanceEvents = []string{evJoin, evLeave, evKill, evJoinCP, evLeaveCP, evKillCP}

// rbProtocol is one protocol's pass of the workload: its events and
// whether the members use the consumer protocol.
type rbProtocol struct {
	cp                bool
	join, leave, kill string
}

var (
	rbClassic  = rbProtocol{false, evJoin, evLeave, evKill}
	rbConsumer = rbProtocol{true, evJoinCP, evLeaveCP, evKillCP}
)

// rebalancePoll is how often DescribeGroups is asked while an event is
// timed: the figures' resolution.
const rebalancePoll = 50 * time.Millisecond

// killNA is why the Kafka column has no owner-SIGKILL figure.
const killNA = "n/a: the reference is one broker; killing it ends the group's only coordinator (a multi-broker cluster would fail the coordinator over)"

// rbMember is one group consumer of the workload, polling in its own loop.
type rbMember struct {
	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}
}

func startMember(ctx context.Context, seed, group, topic string, session, heartbeat time.Duration, cp bool) (*rbMember, error) {
	opts := []kgo.Opt{kgo.SeedBrokers(seed), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic)}
	if cp { // the coordinator hands out the heartbeat interval and keeps the session timeout
		opts = append(opts, kgo.ServerSideBalancer())
	} else {
		opts = append(opts, kgo.SessionTimeout(session), kgo.HeartbeatInterval(heartbeat))
	}
	cl, err := newKgo(opts...)
	if err != nil {
		return nil, err
	}
	pctx, cancel := context.WithCancel(ctx)
	m := &rbMember{cl: cl, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		for pctx.Err() == nil {
			f := cl.PollFetches(pctx)
			if f.IsClientClosed() {
				return
			}
			if len(f.Errors()) > 0 && f.NumRecords() == 0 {
				// An error is reported once; do not spin on a run of them.
				select {
				case <-pctx.Done():
				case <-time.After(100 * time.Millisecond):
				}
			}
		}
	}()
	return m, nil
}

// id is the member id the client holds now ("" before its first join).
func (m *rbMember) id() string {
	id, _ := m.cl.GroupMetadata()
	return id
}

// close leaves the group (kgo's Close sends LeaveGroup) and ends the poll
// loop.
func (m *rbMember) close() {
	m.cancel()
	m.cl.Close()
	<-m.done
}

// closeWithin is close, waited for at most d (a member whose sidecar is
// gone cannot leave; its Close ends in the background).
func (m *rbMember) closeWithin(d time.Duration) {
	done := make(chan struct{})
	go func() { m.close(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
	}
}

// abandon is what an app whose sidecar died looks like to the group: it
// sends nothing more (the leave is cancelled at once; Close then ends in
// the background).
func (m *rbMember) abandon() {
	m.cancel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = m.cl.LeaveGroupContext(ctx)
	go m.cl.Close()
}

// assignments reads a described group: each member's partitions of topic.
func assignments(d kadm.DescribedGroup, topic string) (map[string][]int32, error) {
	if d.Err != nil {
		return nil, d.Err
	}
	out := map[string][]int32{}
	for _, m := range d.Members {
		ca, ok := m.Assigned.AsConsumer()
		if !ok {
			return nil, fmt.Errorf("member %s has no consumer assignment", m.MemberID)
		}
		out[m.MemberID] = nil
		for _, tp := range ca.Topics {
			if tp.Topic == topic {
				out[m.MemberID] = append(out[m.MemberID], tp.Partitions...)
			}
		}
	}
	return out, nil
}

// groupWhole reports nil when a group in state with these assignments
// (member id -> partitions of the topic) is Stable with exactly the members
// want (every id known), every partition 0..partitions-1 assigned to
// exactly one of them and each of them holding at least one; else what is
// missing.
func groupWhole(state string, assigned map[string][]int32, partitions int, want []string) error {
	if state != "Stable" {
		return fmt.Errorf("state %s", state)
	}
	wanted := map[string]bool{}
	for _, id := range want {
		if id == "" {
			return errors.New("a member has no member id yet")
		}
		wanted[id] = true
	}
	if len(assigned) != len(wanted) {
		return fmt.Errorf("%d members, want %d", len(assigned), len(wanted))
	}
	owner := map[int32]string{}
	for id, ps := range assigned {
		if !wanted[id] {
			return fmt.Errorf("member %s is not one of the live members", id)
		}
		if len(ps) == 0 {
			return fmt.Errorf("member %s holds no partition", id)
		}
		for _, p := range ps {
			if p < 0 || int(p) >= partitions {
				return fmt.Errorf("member %s holds partition %d of %d", id, p, partitions)
			}
			if prev, dup := owner[p]; dup {
				return fmt.Errorf("partition %d assigned to %s and %s", p, prev, id)
			}
			owner[p] = id
		}
	}
	if len(owner) != partitions {
		return fmt.Errorf("%d of %d partitions assigned", len(owner), partitions)
	}
	return nil
}

// cgAssignments reads a consumer-protocol group (ConsumerGroupDescribe):
// its state and each member's partitions of topic.
func cgAssignments(ctx context.Context, adm *kadm.Client, group, topic string) (string, map[string][]int32, error) {
	ds, err := adm.DescribeConsumerGroups(ctx, group)
	if err != nil {
		return "", nil, err
	}
	d := ds[group]
	if d.Err != nil {
		return "", nil, d.Err
	}
	out := map[string][]int32{}
	for _, m := range d.Members {
		out[m.MemberID] = nil
		for p := range m.Assignment[topic] {
			out[m.MemberID] = append(out[m.MemberID], p)
		}
	}
	return d.State, out, nil
}

// waitWhole polls DescribeGroups (ConsumerGroupDescribe with cp) through
// adm until the group is whole (groupWhole with the ids of members, read at
// each poll) and returns when that answer arrived; bounded by d.
func waitWhole(ctx context.Context, adm *kadm.Client, group, topic string, partitions int, members []*rbMember, d time.Duration, cp bool) (time.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	for {
		want := make([]string, len(members))
		for i, m := range members {
			want[i] = m.id()
		}
		dctx, dcancel := context.WithTimeout(ctx, 2*time.Second)
		var state string
		var as map[string][]int32
		var err error
		if cp {
			state, as, err = cgAssignments(dctx, adm, group, topic)
		} else {
			var ds kadm.DescribedGroups
			if ds, err = adm.DescribeGroups(dctx, group); err == nil {
				state = ds[group].State
				as, err = assignments(ds[group], topic)
			}
		}
		dcancel()
		at := time.Now()
		if err == nil {
			if err = groupWhole(state, as, partitions, want); err == nil {
				return at, nil
			}
		}
		select {
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("group %s not whole within %s: %v", group, d, err)
		case <-time.After(rebalancePoll):
		}
	}
}

// activeShards reads a sidecar's JSON log: the shards it activated and has
// not released since (the lines "coordination: shard active here" and
// "coordination: shard released" with their `shard` field).
func activeShards(logText string) map[int]bool {
	active := map[int]bool{}
	for _, l := range strings.Split(logText, "\n") {
		if !strings.Contains(l, "coordination: shard") {
			continue
		}
		var line struct {
			Message string `json:"message"`
			Shard   *int   `json:"shard"`
		}
		if json.Unmarshal([]byte(l), &line) != nil || line.Shard == nil {
			continue
		}
		switch line.Message {
		case "coordination: shard active here":
			active[*line.Shard] = true
		case "coordination: shard released":
			delete(active, *line.Shard)
		}
	}
	return active
}

// shardsSettled reports nil when every shard 0..shards-1 is active on
// exactly one of the sidecars whose logs are given.
func shardsSettled(logs []string, shards int) error {
	owners := make([]int, shards)
	for _, l := range logs {
		for k := range activeShards(l) {
			if k >= 0 && k < shards {
				owners[k]++
			}
		}
	}
	for k, n := range owners {
		if n != 1 {
			return fmt.Errorf("shard %d active on %d sidecars", k, n)
		}
	}
	return nil
}

// rbTarget is one target of the workload: where each of the three members
// connects and through which admin client the group is described.
type rbTarget struct {
	name   string
	seeds  [3]string
	admins [3]*kadm.Client
	// owner, when set, finds the sidecar that owns the group (its index
	// and pid) and kill SIGKILLs sidecar i (the member on it is abandoned).
	owner func(group string) (int, int, error)
	kill  func(i int) error
}

// runRebalance runs the workload: plan.Passes passes, the targets
// interleaved (sidecars, Kafka; then Kafka, sidecars).
func (b *bench) runRebalance() {
	if b.plan.Smoke {
		// Real rebalances wait for heartbeats and an owner takeover for the
		// lease and the dead member's session timeout: about 90 s in all,
		// more than the whole smoke budget.
		b.note("rebalance times not measured in -smoke: the workload waits for real rebalances and a lease takeover (about 90 s), more than the smoke budget")
		return
	}
	var group []string
	if _, ok := b.targets[tSidecar]; ok && b.embedded != nil {
		group = append(group, tSidecar)
	}
	if _, ok := b.targets[tKafka]; ok {
		group = append(group, tKafka)
	}
	if len(group) == 0 {
		b.note("rebalance times not measured: they need the sidecar or the kafka target")
		return
	}
	for pass := 1; pass <= max(1, b.plan.Passes); pass++ {
		for _, proto := range []rbProtocol{rbClassic, rbConsumer} {
			for _, t := range order(group, pass) {
				if t == tSidecar {
					b.rebalanceSidecars(pass, proto)
				} else {
					b.rebalanceKafka(pass, proto)
				}
			}
		}
	}
}

// rebalanceResults are the results of one pass on one target, recorded
// when the pass ends (a failure marks the events not yet timed).
type rebalanceResults struct {
	b   *bench
	t   string
	got map[string]*Result
}

func (rr *rebalanceResults) set(ev string, r *Result) { rr.got[ev] = r }

// finish records every event of the pass: timed, or failed/skipped with why.
func (rr *rebalanceResults) finish(pass int, events []string, why error, skipped string) {
	for _, ev := range events {
		r := rr.got[ev]
		if r == nil {
			r = &Result{Workload: wRebalance, Variant: ev, Target: rr.t, Pass: pass, ForeignCores: -1}
			switch {
			case skipped != "":
				r.Skipped = skipped
			case why != nil:
				r.Error = "not timed: " + why.Error()
			default:
				r.Error = "not timed"
			}
		}
		rr.b.add(r)
	}
}

// rbMeter is a meter of the machine's load while one event is timed;
// exclude is a pid about to be killed (its CPU would vanish from ours).
func (b *bench) rbMeter(extra []int, exclude int) *meter {
	m := &meter{every: 200 * time.Millisecond}
	for _, pid := range extra {
		if pid != exclude && pid > 0 {
			m.ours = append(m.ours, pid)
		}
	}
	for _, o := range b.targets {
		if o.pid > 0 {
			m.ours = append(m.ours, o.pid)
		}
	}
	if b.embedded != nil {
		m.ours = append(m.ours, b.embedded.pid)
	}
	return m
}

// timed runs one event: begins the meter, calls act, waits until the group
// is whole with members, and returns the result.
func (b *bench) timed(t, ev string, pass int, m *meter, act func() error, wait func() (time.Time, error)) (*Result, error) {
	r := &Result{Workload: wRebalance, Variant: ev, Target: t, Pass: pass}
	m.begin()
	t0 := time.Now()
	err := act()
	var at time.Time
	if err == nil {
		at, err = wait()
	}
	ms := m.end()
	r.Load1Before, r.Load1After, r.ForeignCores = ms.Load1Before, ms.Load1After, ms.ForeignCores
	if err != nil {
		r.Error = err.Error()
		return r, err
	}
	r.RebalanceS = at.Sub(t0).Seconds()
	r.Seconds = r.RebalanceS
	return r, nil
}

// scenario runs the events on one target: members 0 and 1 form the group;
// member 2 joins (timed) and leaves (timed); with tg.kill, member 2 joins
// again and the owner is killed (timed).
func (b *bench) scenario(tg rbTarget, pass int, topic, group string, pids []int, rr *rebalanceResults, proto rbProtocol) error {
	pl := b.plan
	ctx := b.ctx
	var members [3]*rbMember
	defer func() {
		var wg sync.WaitGroup
		for _, m := range members {
			if m != nil {
				wg.Add(1)
				go func() { defer wg.Done(); m.closeWithin(15 * time.Second) }()
			}
		}
		wg.Wait()
	}()
	start := func(i int) error {
		m, err := startMember(ctx, tg.seeds[i], group, topic, pl.RebalSession, pl.RebalHeartbeat, proto.cp)
		if err != nil {
			return err
		}
		members[i] = m
		return nil
	}
	adm := tg.admins[0]
	for i := 0; i < 2; i++ {
		if err := start(i); err != nil {
			return err
		}
	}
	formStart := time.Now()
	if _, err := waitWhole(ctx, adm, group, topic, pl.RebalPartitions, members[:2], pl.RebalWait, proto.cp); err != nil {
		return fmt.Errorf("forming the group of 2: %w", err)
	}
	b.logf("rebalance %s #%d (consumer protocol %v): group of 2 formed in %.2fs", tg.name, pass, proto.cp, time.Since(formStart).Seconds())

	r, err := b.timed(tg.name, proto.join, pass, b.rbMeter(pids, 0), func() error { return start(2) },
		func() (time.Time, error) {
			return waitWhole(ctx, adm, group, topic, pl.RebalPartitions, members[:3], pl.RebalWait, proto.cp)
		})
	rr.set(proto.join, r)
	if err != nil {
		return err
	}
	leaving := members[2]
	members[2] = nil
	closed := make(chan struct{})
	r, err = b.timed(tg.name, proto.leave, pass, b.rbMeter(pids, 0), func() error {
		go func() { leaving.close(); close(closed) }()
		return nil
	}, func() (time.Time, error) {
		return waitWhole(ctx, adm, group, topic, pl.RebalPartitions, members[:2], pl.RebalWait, proto.cp)
	})
	select {
	case <-closed:
	case <-time.After(15 * time.Second):
	}
	rr.set(proto.leave, r)
	if err != nil || tg.kill == nil {
		return err
	}

	if err := start(2); err != nil {
		return err
	}
	if _, err := waitWhole(ctx, adm, group, topic, pl.RebalPartitions, members[:3], pl.RebalWait, proto.cp); err != nil {
		return fmt.Errorf("re-forming the group of 3 before the kill: %w", err)
	}
	killed, killedPID, err := tg.owner(group)
	if err != nil {
		return err
	}
	var survivors []*rbMember
	var survivorAdm *kadm.Client
	for j, m := range members {
		if j != killed {
			survivors = append(survivors, m)
			if survivorAdm == nil {
				survivorAdm = tg.admins[j]
			}
		}
	}
	b.logf("rebalance %s #%d: killing sidecar %d (owner of the group's shard)", tg.name, pass, killed)
	r, err = b.timed(tg.name, proto.kill, pass, b.rbMeter(pids, killedPID), func() error {
		if err := tg.kill(killed); err != nil {
			return err
		}
		members[killed].abandon()
		members[killed] = nil
		return nil
	}, func() (time.Time, error) {
		return waitWhole(ctx, survivorAdm, group, topic, pl.RebalPartitions, survivors, pl.RebalSession+pl.RebalWait, proto.cp)
	})
	rr.set(proto.kill, r)
	return err
}

// rebalanceKafka runs the join and leave events on Apache Kafka.
func (b *bench) rebalanceKafka(pass int, proto rbProtocol) {
	rr := &rebalanceResults{b: b, t: tKafka, got: map[string]*Result{}}
	events := []string{proto.join, proto.leave}
	if s := b.skipFor(2*b.plan.RebalWait/3 + b.slack(15*time.Second)); s != "" {
		rr.finish(pass, events, nil, s)
		return
	}
	s := b.targets[tKafka]
	topic := b.topicName("rebalance", tKafka)
	ctx, cancel := context.WithTimeout(b.ctx, 40*time.Second)
	err := kafkaCreateTopic(ctx, s.addr, topic, b.plan.RebalPartitions)
	cancel()
	if err != nil {
		rr.finish(pass, events, err, "")
		return
	}
	defer b.deleteTopic(tKafka, topic)
	adm, cl, err := kafkaAdmin(s.addr)
	if err != nil {
		rr.finish(pass, events, err, "")
		return
	}
	defer cl.Close()
	tg := rbTarget{name: tKafka, seeds: [3]string{s.addr, s.addr, s.addr}, admins: [3]*kadm.Client{adm, adm, adm}}
	err = b.scenario(tg, pass, topic, topic+"-group", nil, rr, proto)
	rr.finish(pass, events, err, "")
}

// rebalanceSidecars starts three sidecars of a fresh coordination domain on
// the embedded Iggy server, runs every event on them, and stops them.
func (b *bench) rebalanceSidecars(pass int, proto rbProtocol) {
	rr := &rebalanceResults{b: b, t: tSidecar, got: map[string]*Result{}}
	events := []string{proto.join, proto.leave, proto.kill}
	need := b.plan.RebalSession + b.plan.RebalWait + b.slack(30*time.Second)
	if s := b.skipFor(need); s != "" {
		rr.finish(pass, events, nil, s)
		return
	}
	err := b.sidecarScenario(pass, rr, proto)
	rr.finish(pass, events, err, "")
}

func (b *bench) sidecarScenario(pass int, rr *rebalanceResults, proto rbProtocol) error {
	secret := make([]byte, 16)
	if _, err := rand.Read(secret); err != nil {
		return err
	}
	b.seq++
	domain := fmt.Sprintf("bench-%d", b.seq)
	procs := make([]*server, 3)
	defer func() {
		var wg sync.WaitGroup
		for _, s := range procs {
			if s != nil {
				wg.Add(1)
				go func() { defer wg.Done(); s.proc.stop(10 * time.Second) }()
			}
		}
		wg.Wait()
	}()
	var pids []int
	for i := range procs {
		s, err := b.startServeFrom(b.bin, "rebalance-sidecar", map[string]string{
			// As startClusterSidecar in cmd/kafka-iggy/cluster_test.go.
			"peers.address":        "127.0.0.1:0",
			"peers.secret":         hex.EncodeToString(secret),
			"limits.drain_timeout": "5s",
			"coordination.domain":  domain,
			// Its own producer-id range; info for the coordination lines.
			"producer.instance_id": fmt.Sprint(100 + i),
			"log.level":            "info",
			// The consumer protocol's session timeout, which the
			// coordinator keeps: the classic members' own (plan).
			"consumer_groups.session_timeout": b.plan.RebalSession.String(),
		})
		if err != nil {
			return fmt.Errorf("sidecar %d: %w", i, err)
		}
		procs[i] = s
		pids = append(pids, s.pid)
	}
	dead := make([]bool, len(procs))
	logs := func() []string {
		out := make([]string, len(procs))
		for i, s := range procs {
			if !dead[i] {
				out[i] = readString(s.proc.Log)
			}
		}
		return out
	}
	// The shards settle (each active on exactly one sidecar, the same view
	// for two sync intervals) before the group forms, so that no owner move
	// falls inside an event.
	settleStart := time.Now()
	settleBy := settleStart.Add(30 * time.Second)
	var since time.Time
	view := ""
	for {
		err := shardsSettled(logs(), cluster.DefaultShards)
		v := strings.Join(shardView(logs()), "; ")
		if err != nil || v != view {
			since = time.Now()
		}
		view = v
		if err == nil && time.Since(since) >= 2*cluster.DefaultSyncInterval {
			break
		}
		if err == nil {
			err = errors.New("shard owners still moving")
		}
		if time.Now().After(settleBy) || b.ctx.Err() != nil {
			return fmt.Errorf("coordination shards did not settle within 30s: %v (%s)", err, view)
		}
		time.Sleep(100 * time.Millisecond)
	}
	b.logf("rebalance sidecars #%d: shards settled in %.1fs: %s", pass, time.Since(settleStart).Seconds(), view)

	tg := rbTarget{name: tSidecar}
	for i, s := range procs {
		adm, cl, err := kafkaAdmin(s.addr)
		if err != nil {
			return err
		}
		defer cl.Close()
		tg.seeds[i], tg.admins[i] = s.addr, adm
	}
	tg.owner = func(group string) (int, int, error) {
		k := cluster.Shard(group, cluster.DefaultShards)
		owner := -1
		for i, l := range logs() {
			if activeShards(l)[k] {
				owner = i
			}
		}
		if owner < 0 {
			return 0, 0, fmt.Errorf("no sidecar logs shard %d of group %s active", k, group)
		}
		return owner, procs[owner].pid, nil
	}
	tg.kill = func(i int) error {
		dead[i] = true
		return syscall.Kill(procs[i].pid, syscall.SIGKILL)
	}
	topic := b.topicName("rebalance", tSidecar)
	ctx, cancel := context.WithTimeout(b.ctx, 40*time.Second)
	err := kafkaCreateTopic(ctx, procs[0].addr, topic, b.plan.RebalPartitions)
	cancel()
	if err != nil {
		return err
	}
	defer func() {
		for i, s := range procs {
			if !dead[i] {
				if err := kafkaDeleteTopic(s.addr, topic); err != nil {
					fmt.Fprintf(os.Stderr, "bench: deleting topic %s: %v\n", topic, err)
				}
				return
			}
		}
	}()
	return b.scenario(tg, pass, topic, topic+"-group", pids, rr, proto)
}

// shardView is the owner index of every active shard, for logs.
func shardView(logs []string) []string {
	var out []string
	for i, l := range logs {
		var ks []int
		for k := range activeShards(l) {
			ks = append(ks, k)
		}
		sort.Ints(ks)
		out = append(out, fmt.Sprintf("sidecar %d: %v", i, ks))
	}
	return out
}

// rbStat is one rebalance figure over its passes: the median and the range.
type rbStat struct {
	median, lo, hi float64
	vals           []float64
}

func rebalanceStat(runs []*Result) rbStat {
	var s rbStat
	for _, r := range runs {
		s.vals = append(s.vals, r.RebalanceS)
	}
	if len(s.vals) == 0 {
		return s
	}
	v := append([]float64{}, s.vals...)
	sort.Float64s(v)
	s.lo, s.hi = v[0], v[len(v)-1]
	if n := len(v); n%2 == 1 {
		s.median = v[n/2]
	} else {
		s.median = (v[n/2-1] + v[n/2]) / 2
	}
	return s
}

// show is "2.31 s ±8% (2.12, 2.49)": the median, half the range as a
// percentage of it, and every pass in the order run.
func (s rbStat) show() string {
	if len(s.vals) == 0 {
		return "–"
	}
	v := fmt.Sprintf("%.2f s", s.median)
	if len(s.vals) > 1 && s.median > 0 {
		var each []string
		for _, x := range s.vals {
			each = append(each, fmt.Sprintf("%.2f", x))
		}
		v += fmt.Sprintf(" ±%.0f%% (%s)", (s.hi-s.lo)/2/s.median*100, strings.Join(each, ", "))
	}
	return v
}

// rbRatio is a's median ÷ b's, "(noise)" when their ranges, each widened
// by the poll interval (the figures' resolution), overlap.
func rbRatio(a, b rbStat) string {
	if len(a.vals) == 0 || len(b.vals) == 0 || b.median <= 0 {
		return "–"
	}
	v := fmt.Sprintf("%.2f×", a.median/b.median)
	res := rebalancePoll.Seconds()
	if a.lo-res <= b.hi && b.lo-res <= a.hi {
		v += " (noise)"
	}
	return v
}

// rebalanceWhat says what each event times.
var rebalanceWhat = map[string]string{
	evJoin:    "a 2-member Stable group; a 3rd member's `kgo.NewClient` (on the third sidecar) → Stable with the 3 members",
	evLeave:   "the 3rd member's `Close` (LeaveGroup) → Stable with the other 2",
	evKill:    "the 3rd member back (3 members, one per sidecar); SIGKILL of the sidecar owning the group's shard → Stable with the 2 members on the surviving sidecars",
	evJoinCP:  "the same with `kgo.ServerSideBalancer()` members (KIP-848), ConsumerGroupDescribe polled: a 3rd member's `kgo.NewClient` → Stable with the 3",
	evLeaveCP: "the 3rd member's `Close` (a leave heartbeat) → Stable with the other 2",
	evKillCP:  "the 3rd member back; SIGKILL of the sidecar owning the group's shard → Stable with the 2 survivors owning every partition (the new owner restores the group from Iggy; the dead member's partitions move after its session timeout)",
}

// writeRebalance writes the "Rebalance times" section.
func (b *bench) writeRebalance(p func(string, ...any)) {
	any := false
	for _, r := range b.results {
		if r.Workload == wRebalance {
			any = true
		}
	}
	if !any {
		return
	}
	pl := b.plan
	p("## Rebalance times (one group across three sidecars; Apache Kafka)\n\n")
	p("How long a consumer group takes to be whole again. **Sidecars**: three `kafka-iggy serve` processes of one coordination domain (peer link on: `peers.address=127.0.0.1:0`, a shared `peers.secret`, `limits.drain_timeout=5s`; shards, lease and sync interval at their defaults: %d shards, lease %s, sync %s) on the bench's embedded Iggy server, started fresh for each pass, each group member connected only to its own sidecar; the shards are settled (each active on exactly one sidecar, unchanged for two sync intervals) before the group forms. **Apache Kafka**: the bench's single-node broker, every member on it. ",
		cluster.DefaultShards, cluster.DefaultLease, cluster.DefaultSyncInterval)
	p("Both with the same client: franz-go group consumers (default balancers, so cooperative-sticky: a join or leave is two rounds), session timeout %s, heartbeat interval %s (the settings of the cross-sidecar tests; the same on both targets), each polling its own loop, on a fresh topic of %d partitions and a fresh group per pass. ", pl.RebalSession, pl.RebalHeartbeat, pl.RebalPartitions)
	p("**Timed**: from the call that causes the event to the first DescribeGroups answer (polled every %s through one sidecar, or the broker) showing the group **Stable with exactly the expected members (by member id) and every partition assigned to exactly one of them**, each holding at least one: the coordinator's view, not the moment each client's OnPartitionsAssigned ran; the poll interval is the figures' resolution, and a ratio is *(noise)* when the two ranges, each widened by it, overlap. ", rebalancePoll)
	p("%d passes, the targets interleaved (sidecars then Kafka, then the reverse); each cell is the **median** with ±half the range as a percentage of it and every pass in the order run. The sidecars keep their defaults, `groups.initial_rebalance_delay` 3 s included: it delays the first rebalance of a group that starts empty, which is the group's forming (not timed) and, on the sidecars, the group a new owner takes over (inside the owner-SIGKILL figure); the Kafka broker runs with 0 (scripts/kafka).\n\n", pl.Passes)
	p("| event | what is timed | sidecars (3 × serve, 1 embedded Iggy) | Apache Kafka | sidecars ÷ Kafka | load / others: sidecars; Kafka |\n|---|---|---|---|---|---|\n")
	for _, ev := range rebalanceEvents {
		sRuns, kRuns := b.runsOf(wRebalance, ev, tSidecar), b.runsOf(wRebalance, ev, tKafka)
		ss, ks := rebalanceStat(sRuns), rebalanceStat(kRuns)
		cell := func(t string, st rbStat) string {
			if !b.ran(t) {
				return "not run"
			}
			if len(st.vals) > 0 {
				return st.show()
			}
			if t == tKafka && (ev == evKill || ev == evKillCP) {
				return killNA
			}
			return status(b.anyResult(wRebalance, ev, t))
		}
		p("| %s | %s | %s | %s | %s | %s; %s |\n", ev, rebalanceWhat[ev], cell(tSidecar, ss), cell(tKafka, ks), rbRatio(ss, ks), loadCell(sRuns), loadCell(kRuns))
	}
	p("\nThe consumer-protocol rows run the same events with franz-go's `kgo.ServerSideBalancer()` members on fresh sidecars (or a fresh group on Kafka), the group read with ConsumerGroupDescribe; the coordinator hands out the heartbeat interval (5 s, Kafka's and the sidecar's default) and keeps the session timeout (the sidecars here `consumer_groups.session_timeout` %s; Kafka's 45 s default does not enter its figures).\n", pl.RebalSession)
	p("\n**Reading.** A join or a leave costs up to about a heartbeat interval (%s: the members learn of the rebalance in their next heartbeat; where in their heartbeat cycle the event falls moves the figure within that) plus the rounds of the cooperative protocol; on the sidecars every group request of the members on the other sidecars also crosses the peer link to the owner. ", pl.RebalHeartbeat)
	p("After the owner's SIGKILL its own member is gone with it (its app lost its sidecar): Iggy re-deals the shards (the killed sidecar's TCP connections reset), the new owner waits the lease (a killed owner leaves no release marker), takes the group over when the first survivor comes back (log line `coordination: group taken over`; franz-go retries with backoff) and rebuilds it from the survivors' rejoins without the dead member, its first join phase waiting `groups.initial_rebalance_delay` like any group that starts empty (extended while members keep arriving). The figure is all of that; the sidecars' logs give each step's time. docs/OPERATIONS.md (failure table) points here. With the consumer protocol a join or a leave is reconciled through the members' heartbeats (up to a heartbeat interval, 5 s, per step: the others give partitions up at their next heartbeat, the newcomer gets them at its next one after that); after the owner's SIGKILL the survivors keep their partitions (the group is restored from Iggy, nobody rejoins) and the figure is the lease wait plus the dead member's session timeout.\n\n")
}

// rebalanceSummary is the Summary line of the rebalance times, or "".
func (b *bench) rebalanceSummary() string {
	var parts []string
	for _, ev := range rebalanceEvents {
		ss, ks := rebalanceStat(b.runsOf(wRebalance, ev, tSidecar)), rebalanceStat(b.runsOf(wRebalance, ev, tKafka))
		if len(ss.vals) == 0 {
			continue
		}
		v := fmt.Sprintf("%s %.2f s", ev, ss.median)
		if len(ks.vals) > 0 {
			v += fmt.Sprintf(" (Kafka %.2f s, %s)", ks.median, rbRatio(ss, ks))
		}
		parts = append(parts, v)
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf("**Rebalance times**, one group across three sidecars (medians, session timeout %s): %s.", b.plan.RebalSession, strings.Join(parts, "; "))
}
