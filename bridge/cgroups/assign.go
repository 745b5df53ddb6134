package cgroups

// The server-side assignors of KIP-848 (Kafka's group.consumer.assignors):
// "uniform", the default, spreads every subscribed partition evenly and
// keeps a partition with its current owner whenever balance allows; "range"
// gives each subscriber of a topic a contiguous range of its partitions.
// A member's ServerAssignor (group.remote.assignor) picks one; the group
// uses the one most of its members ask for.

import (
	"cmp"
	"slices"
	"sort"
)

// TP is one topic partition.
type TP struct {
	Topic     string
	Partition int32
}

// Assignors are the assignor names served, the default first.
var Assignors = []string{"uniform", "range"}

// knownAssignor reports whether name is served.
func knownAssignor(name string) bool { return slices.Contains(Assignors, name) }

// assignInput is what an assignor decides from: every member's subscribed
// topics (resolved against the metadata), the partition counts, and the
// previous target assignment (for stickiness).
type assignInput struct {
	members map[string][]string // member id -> subscribed topics (sorted)
	topics  map[string]int32    // topic -> partitions
	prev    map[string]map[TP]struct{}
}

// assign runs the named assignor; the result has an entry (maybe empty)
// for every member.
func assign(name string, in assignInput) map[string]map[TP]struct{} {
	if name == "range" {
		return assignRange(in)
	}
	return assignUniform(in)
}

// assignRange: for each topic, its subscribers sorted by member id; each
// gets partitions/subscribers partitions in a row, the first
// partitions%subscribers one more.
func assignRange(in assignInput) map[string]map[TP]struct{} {
	out := make(map[string]map[TP]struct{}, len(in.members))
	subs := map[string][]string{}
	for id, topics := range in.members {
		out[id] = map[TP]struct{}{}
		for _, t := range topics {
			subs[t] = append(subs[t], id)
		}
	}
	for t, ids := range subs {
		n := in.topics[t]
		sort.Strings(ids)
		per, extra := n/int32(len(ids)), n%int32(len(ids))
		p := int32(0)
		for i, id := range ids {
			k := per
			if int32(i) < extra {
				k++
			}
			for ; k > 0; k-- {
				out[id][TP{t, p}] = struct{}{}
				p++
			}
		}
	}
	return out
}

// assignUniform balances the number of partitions per member among the
// members subscribed to each partition's topic. Partitions stay with their
// previous owner while it is still subscribed and not above the fair share;
// the rest go to the least loaded eligible member; then partitions move
// from a member holding two more than an eligible one until none does.
func assignUniform(in assignInput) map[string]map[TP]struct{} {
	out := make(map[string]map[TP]struct{}, len(in.members))
	ids := make([]string, 0, len(in.members))
	subscribed := map[string]map[string]bool{} // topic -> members
	for id, topics := range in.members {
		out[id] = map[TP]struct{}{}
		ids = append(ids, id)
		for _, t := range topics {
			if subscribed[t] == nil {
				subscribed[t] = map[string]bool{}
			}
			subscribed[t][id] = true
		}
	}
	sort.Strings(ids)
	var all []TP
	for t := range subscribed {
		for p := int32(0); p < in.topics[t]; p++ {
			all = append(all, TP{t, p})
		}
	}
	slices.SortFunc(all, compareTP)
	if len(ids) == 0 {
		return out
	}
	// Fair share when everyone could take everything: ceil(all/members).
	share := (len(all) + len(ids) - 1) / len(ids)
	owner := map[TP]string{}
	for _, id := range ids {
		for _, tp := range sortedTPs(in.prev[id]) {
			if subscribed[tp.Topic][id] && tp.Partition < in.topics[tp.Topic] && len(out[id]) < share {
				out[id][tp] = struct{}{}
				owner[tp] = id
			}
		}
	}
	for _, tp := range all {
		if _, ok := owner[tp]; ok {
			continue
		}
		best := ""
		for _, id := range ids {
			if subscribed[tp.Topic][id] && (best == "" || len(out[id]) < len(out[best])) {
				best = id
			}
		}
		out[best][tp] = struct{}{}
		owner[tp] = best
	}
	// Even out what the greedy passes left uneven (heterogeneous
	// subscriptions): move a partition from a member with two more than an
	// eligible one. Each move lowers the sum of squares, so it ends.
	for moved := true; moved; {
		moved = false
		for _, tp := range all {
			from := owner[tp]
			for _, to := range ids {
				if to != from && subscribed[tp.Topic][to] && len(out[from]) > len(out[to])+1 {
					delete(out[from], tp)
					out[to][tp] = struct{}{}
					owner[tp] = to
					moved = true
					break
				}
			}
		}
	}
	return out
}

// sortedTPs lists a set of partitions by topic, then partition.
func sortedTPs(set map[TP]struct{}) []TP {
	out := make([]TP, 0, len(set))
	for tp := range set {
		out = append(out, tp)
	}
	slices.SortFunc(out, compareTP)
	return out
}

func compareTP(a, b TP) int {
	return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
}
