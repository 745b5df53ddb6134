package main

// The checker: after the run, a fresh reader (no group) reads every
// partition from its start to its end, and the journal is held against it.
// Anomalies: an acknowledged record that is not in the log (lost) or not at
// the offset its acknowledgement gave; a record of one producer present
// twice in a partition (duplicate); a committed offset of the group lower
// than one accepted before it on the same partition; a partition assigned
// to two members in one generation.

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// logRecord is one record read back.
type logRecord struct {
	Partition int32
	Offset    int64
	Key       string
}

// readBack reads every partition of topic from start to end through seed.
func readBack(ctx context.Context, seed, topic string) ([]logRecord, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seed), kgo.ClientID("fault-checker"))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("list end offsets: %w", err)
	}
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("list start offsets: %w", err)
	}
	want := map[int32]int64{} // partition -> end offset still to reach
	from := map[int32]kgo.Offset{}
	var firstErr error
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil && firstErr == nil {
			firstErr = fmt.Errorf("end offset of partition %d: %w", o.Partition, o.Err)
		}
		s, _ := starts.Lookup(topic, o.Partition)
		if o.Offset > s.Offset {
			want[o.Partition] = o.Offset
			from[o.Partition] = kgo.NewOffset().AtStart()
		}
	})
	if firstErr != nil {
		return nil, firstErr
	}
	var out []logRecord
	if len(want) == 0 {
		return out, nil
	}
	cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{topic: from})
	for len(want) > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return out, fmt.Errorf("read back: %d partitions not read to their end: %w", len(want), ctx.Err())
		}
		fs.EachError(func(t string, p int32, err error) {
			if firstErr == nil {
				firstErr = fmt.Errorf("fetch %s/%d: %w", t, p, err)
			}
		})
		fs.EachRecord(func(r *kgo.Record) {
			out = append(out, logRecord{Partition: r.Partition, Offset: r.Offset, Key: string(r.Key)})
			if end, ok := want[r.Partition]; ok && r.Offset+1 >= end {
				delete(want, r.Partition)
			}
		})
	}
	return out, nil
}

// duplicate is one record of a producer found more than once in a partition.
type duplicate struct {
	Producer   string  `json:"producer"`
	Partition  int32   `json:"partition"`
	Sequence   int64   `json:"sequence"`
	Offsets    []int64 `json:"offsets"`
	Acked      bool    `json:"acked"`
	AckedAt    string  `json:"acked_at,omitempty"`
	AfterFault string  `json:"after_fault,omitempty"` // the last fault that started before the acknowledgement
}

type lostRecord struct {
	Producer   string `json:"producer"`
	Key        string `json:"key"`
	Partition  int32  `json:"partition"`
	Offset     int64  `json:"offset"`
	FoundAt    string `json:"found_at,omitempty"` // "partition/offset" when the record is elsewhere
	AfterFault string `json:"after_fault,omitempty"`
}

type backwardCommit struct {
	Source     string `json:"source"` // "commit": an accepted commit lower than one before; "offset_fetch": a read lower than a commit acknowledged before it was sent
	Partition  int32  `json:"partition"`
	From       int64  `json:"from"`
	FromMember string `json:"from_member"`
	FromGen    int32  `json:"from_generation"`
	To         int64  `json:"to"`
	ToMember   string `json:"to_member"`
	ToGen      int32  `json:"to_generation"`
	At         string `json:"at"`
	AfterFault string `json:"after_fault,omitempty"`
}

type doubleOwner struct {
	Generation int32    `json:"generation"`
	Partition  int32    `json:"partition"`
	Members    []string `json:"members"`
}

type producerStats struct {
	Acked        int `json:"acked"`
	Failed       int `json:"failed"`
	InLog        int `json:"in_log"`
	Duplicates   int `json:"duplicates"`
	Lost         int `json:"lost"`
	Misplaced    int `json:"misplaced"`
	UnackedInLog int `json:"unacked_in_log"` // written, acknowledgement never seen (not an anomaly)
}

// findings is what the checker found.
type findings struct {
	Producers       map[string]*producerStats `json:"producers"`
	LogRecords      int                       `json:"log_records"`
	ForeignRecords  int                       `json:"foreign_records"`
	Duplicates      []duplicate               `json:"duplicates"`
	Lost            []lostRecord              `json:"lost"`
	BackwardCommits []backwardCommit          `json:"backward_commits"`
	DoubleOwners    []doubleOwner             `json:"double_owners"`
	Assignments     int                       `json:"assignments"`
	Generations     int                       `json:"generations"`
	Commits         int                       `json:"commits"`
	OffsetReads     int                       `json:"offset_reads"`
}

func (f *findings) anomalies() int {
	return len(f.Duplicates) + len(f.Lost) + len(f.BackwardCommits) + len(f.DoubleOwners)
}

// lastFaultBefore names the last fault that started before t.
func lastFaultBefore(faults []faultRun, t time.Time) string {
	name := ""
	for _, f := range faults {
		if !f.Start.After(t) {
			name = f.fault.String()
		}
	}
	return name
}

// check holds the journal against the log read back.
func check(log []logRecord, acks []ack, failed map[string]int, assigns []assignment, commits []commit, samples []observed, faults []faultRun) *findings {
	f := &findings{Producers: map[string]*producerStats{}, LogRecords: len(log), Duplicates: []duplicate{},
		Lost: []lostRecord{}, BackwardCommits: []backwardCommit{}, DoubleOwners: []doubleOwner{}}
	stats := func(p string) *producerStats {
		s := f.Producers[p]
		if s == nil {
			s = &producerStats{}
			f.Producers[p] = s
		}
		return s
	}
	for p, n := range failed {
		stats(p).Failed = n
	}
	type loc struct {
		partition int32
		offset    int64
	}
	where := map[string][]loc{}
	for _, r := range log {
		if _, _, ok := parseKey(r.Key); !ok {
			f.ForeignRecords++
			continue
		}
		where[r.Key] = append(where[r.Key], loc{r.Partition, r.Offset})
	}
	acked := map[string]ack{}
	for _, a := range acks {
		acked[a.Key] = a
		stats(a.Producer).Acked++
	}
	keys := make([]string, 0, len(where))
	for k := range where {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		producer, seq, _ := parseKey(k)
		s := stats(producer)
		s.InLog++
		a, isAcked := acked[k]
		if !isAcked {
			s.UnackedInLog++
		}
		byPart := map[int32][]int64{}
		for _, l := range where[k] {
			byPart[l.partition] = append(byPart[l.partition], l.offset)
		}
		parts := make([]int32, 0, len(byPart))
		for p := range byPart {
			parts = append(parts, p)
		}
		sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
		for _, p := range parts {
			offs := byPart[p]
			if len(offs) < 2 {
				continue
			}
			s.Duplicates += len(offs) - 1
			d := duplicate{Producer: producer, Partition: p, Sequence: seq, Offsets: offs, Acked: isAcked}
			if isAcked {
				d.AckedAt = a.At.UTC().Format(time.RFC3339Nano)
				d.AfterFault = lastFaultBefore(faults, a.At)
			}
			f.Duplicates = append(f.Duplicates, d)
		}
	}
	ackKeys := make([]string, 0, len(acked))
	for k := range acked {
		ackKeys = append(ackKeys, k)
	}
	sort.Strings(ackKeys)
	for _, k := range ackKeys {
		a := acked[k]
		found, at := false, ""
		for _, l := range where[k] {
			if l.partition == a.Partition && l.offset == a.Offset {
				found = true
			}
			at = fmt.Sprintf("%d/%d", l.partition, l.offset)
		}
		if found {
			continue
		}
		lr := lostRecord{Producer: a.Producer, Key: k, Partition: a.Partition, Offset: a.Offset, FoundAt: at,
			AfterFault: lastFaultBefore(faults, a.At)}
		if at == "" {
			stats(a.Producer).Lost++
		} else {
			stats(a.Producer).Misplaced++
		}
		f.Lost = append(f.Lost, lr)
	}

	// Committed offsets, in the order the coordinator acknowledged them.
	cs := append([]commit(nil), commits...)
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].At.Before(cs[j].At) })
	f.Commits = len(cs)
	last := map[int32]commit{}
	for _, c := range cs {
		if prev, ok := last[c.Partition]; ok && c.Offset < prev.Offset {
			f.BackwardCommits = append(f.BackwardCommits, backwardCommit{Source: "commit", Partition: c.Partition,
				From: prev.Offset, FromMember: prev.Member, FromGen: prev.Generation,
				To: c.Offset, ToMember: c.Member, ToGen: c.Generation,
				At: c.At.UTC().Format(time.RFC3339Nano), AfterFault: lastFaultBefore(faults, c.At)})
		}
		last[c.Partition] = c
	}
	f.BackwardCommits = append(f.BackwardCommits, backwardReads(cs, samples, faults)...)
	f.OffsetReads = len(samples)

	// Owners per generation.
	owners := map[int32]map[int32]map[string]bool{} // generation -> partition -> members
	for _, a := range assigns {
		if owners[a.Generation] == nil {
			owners[a.Generation] = map[int32]map[string]bool{}
		}
		for _, p := range a.Partitions {
			if owners[a.Generation][p] == nil {
				owners[a.Generation][p] = map[string]bool{}
			}
			owners[a.Generation][p][a.Member] = true
		}
	}
	f.Assignments, f.Generations = len(assigns), len(owners)
	gens := make([]int32, 0, len(owners))
	for g := range owners {
		gens = append(gens, g)
	}
	sort.Slice(gens, func(i, j int) bool { return gens[i] < gens[j] })
	for _, g := range gens {
		for p, ms := range owners[g] {
			if len(ms) < 2 {
				continue
			}
			d := doubleOwner{Generation: g, Partition: p}
			for m := range ms {
				d.Members = append(d.Members, m)
			}
			sort.Strings(d.Members)
			f.DoubleOwners = append(f.DoubleOwners, d)
		}
	}
	sort.Slice(f.DoubleOwners, func(i, j int) bool {
		a, b := f.DoubleOwners[i], f.DoubleOwners[j]
		return a.Generation < b.Generation || a.Generation == b.Generation && a.Partition < b.Partition
	})
	return f
}

// backwardReads finds committed offsets read back (OffsetFetch) lower than
// the highest offset known committed when the read was sent: a commit
// acknowledged, or a read answered, before it. Each drop is reported once.
func backwardReads(commits []commit, samples []observed, faults []faultRun) []backwardCommit {
	type event struct {
		at    time.Time
		check bool // a read to check (at its send time); else a known offset
		p     int32
		off   int64
		who   string
		gen   int32
	}
	var evs []event
	for _, c := range commits {
		evs = append(evs, event{at: c.At, p: c.Partition, off: c.Offset, who: c.Member, gen: c.Generation})
	}
	for _, s := range samples {
		who := "offset_fetch via " + s.Via
		evs = append(evs, event{at: s.Sent, check: true, p: s.Partition, off: s.Offset, who: who, gen: -1},
			event{at: s.Received, p: s.Partition, off: s.Offset, who: who, gen: -1})
	}
	// Checks before knowns at the same instant: only what was known strictly
	// before a read was sent binds it.
	sort.SliceStable(evs, func(i, j int) bool {
		if !evs[i].at.Equal(evs[j].at) {
			return evs[i].at.Before(evs[j].at)
		}
		return evs[i].check && !evs[j].check
	})
	known := map[int32]event{}
	reported := map[[3]int64]bool{}
	var out []backwardCommit
	for _, e := range evs {
		k, ok := known[e.p]
		if e.check {
			if ok && e.off < k.off && !reported[[3]int64{int64(e.p), k.off, e.off}] {
				reported[[3]int64{int64(e.p), k.off, e.off}] = true
				out = append(out, backwardCommit{Source: "offset_fetch", Partition: e.p, From: k.off, FromMember: k.who, FromGen: k.gen,
					To: e.off, ToMember: e.who, ToGen: -1, At: e.at.UTC().Format(time.RFC3339Nano), AfterFault: lastFaultBefore(faults, e.at)})
			}
			continue
		}
		if !ok || e.off > k.off { // the first to make an offset known names it
			known[e.p] = e
		}
	}
	return out
}
