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
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

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
