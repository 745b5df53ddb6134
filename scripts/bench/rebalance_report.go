package main

// The rebalance workload's figures: each event's median and range over
// the passes, the sidecar/Kafka ratios, and its section of the report.

import (
	"fmt"
	"sort"
	"strings"

	"github.com/kafka-iggy/kafka-iggy/bridge/cluster"
)

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
