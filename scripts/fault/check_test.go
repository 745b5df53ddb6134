package main

import (
	"reflect"
	"testing"
	"time"
)

// The checker on a hand-made journal and log: each kind of anomaly it must
// find is planted once, beside records that are fine.
func TestCheckFindsEachAnomaly(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	faults := []faultRun{
		{fault: fault{N: 1, Kind: faultSidecarKill, Target: 2}, Start: t0.Add(10 * time.Second), End: t0.Add(12 * time.Second)},
		{fault: fault{N: 2, Kind: faultIggyKill, Target: -1}, Start: t0.Add(20 * time.Second), End: t0.Add(24 * time.Second)},
	}
	log := []logRecord{
		{0, 0, "go0-000000000"},
		{0, 1, "go0-000000001"},
		{0, 2, "go0-000000001"}, // duplicate of an acked record
		{1, 0, "java1-000000000"},
		{1, 1, "java1-000000002"}, // acked at 1/2: misplaced
		{1, 2, "other"},           // not a record of the run
		{1, 3, "go0-000000004"},   // never acked: fine
	}
	acks := []ack{
		{Producer: "go0", Key: "go0-000000000", Partition: 0, Offset: 0, At: t0.Add(5 * time.Second)},
		{Producer: "go0", Key: "go0-000000001", Partition: 0, Offset: 1, At: t0.Add(15 * time.Second)},
		{Producer: "go0", Key: "go0-000000002", Partition: 0, Offset: 3, At: t0.Add(25 * time.Second)}, // lost
		{Producer: "java1", Key: "java1-000000000", Partition: 1, Offset: 0, At: t0.Add(time.Second)},
		{Producer: "java1", Key: "java1-000000002", Partition: 1, Offset: 2, At: t0.Add(2 * time.Second)},
	}
	assigns := []assignment{
		{Member: "member0", Generation: 1, Partitions: []int32{0, 1}},
		{Member: "member1", Generation: 1, Partitions: []int32{1}}, // partition 1 twice in generation 1
		{Member: "member0", Generation: 2, Partitions: []int32{0}},
		{Member: "member1", Generation: 2, Partitions: []int32{1}},
	}
	commits := []commit{
		{Member: "member0", Generation: 1, Partition: 0, Offset: 5, At: t0.Add(11 * time.Second)},
		{Member: "member0", Generation: 2, Partition: 0, Offset: 7, At: t0.Add(13 * time.Second)},
		{Member: "member1", Generation: 2, Partition: 0, Offset: 6, At: t0.Add(21 * time.Second)}, // backwards
		{Member: "member1", Generation: 2, Partition: 1, Offset: 3, At: t0.Add(22 * time.Second)},
	}
	f := check(log, acks, map[string]int{"java1": 4}, assigns, commits, nil, faults)

	wantDup := []duplicate{{Producer: "go0", Partition: 0, Sequence: 1, Offsets: []int64{1, 2}, Acked: true,
		AckedAt: t0.Add(15 * time.Second).Format(time.RFC3339Nano), AfterFault: faults[0].fault.String()}}
	if !reflect.DeepEqual(f.Duplicates, wantDup) {
		t.Errorf("duplicates %+v, want %+v", f.Duplicates, wantDup)
	}
	wantLost := []lostRecord{
		{Producer: "go0", Key: "go0-000000002", Partition: 0, Offset: 3, AfterFault: faults[1].fault.String()},
		{Producer: "java1", Key: "java1-000000002", Partition: 1, Offset: 2, FoundAt: "1/1"},
	}
	if !reflect.DeepEqual(f.Lost, wantLost) {
		t.Errorf("lost %+v, want %+v", f.Lost, wantLost)
	}
	wantBack := []backwardCommit{{Source: "commit", Partition: 0, From: 7, FromMember: "member0", FromGen: 2, To: 6, ToMember: "member1", ToGen: 2,
		At: t0.Add(21 * time.Second).Format(time.RFC3339Nano), AfterFault: faults[1].fault.String()}}
	if !reflect.DeepEqual(f.BackwardCommits, wantBack) {
		t.Errorf("backward commits %+v, want %+v", f.BackwardCommits, wantBack)
	}
	wantOwners := []doubleOwner{{Generation: 1, Partition: 1, Members: []string{"member0", "member1"}}}
	if !reflect.DeepEqual(f.DoubleOwners, wantOwners) {
		t.Errorf("double owners %+v, want %+v", f.DoubleOwners, wantOwners)
	}
	if got := f.anomalies(); got != 5 {
		t.Errorf("anomalies %d, want 5", got)
	}
	if f.ForeignRecords != 1 || f.LogRecords != 7 || f.Commits != 4 || f.Generations != 2 || f.Assignments != 4 {
		t.Errorf("counts: foreign %d log %d commits %d generations %d assignments %d",
			f.ForeignRecords, f.LogRecords, f.Commits, f.Generations, f.Assignments)
	}
	go0 := producerStats{Acked: 3, InLog: 3, Duplicates: 1, Lost: 1, UnackedInLog: 1}
	java1 := producerStats{Acked: 2, Failed: 4, InLog: 2, Misplaced: 1}
	if *f.Producers["go0"] != go0 || *f.Producers["java1"] != java1 {
		t.Errorf("producer stats go0 %+v java1 %+v, want %+v and %+v", *f.Producers["go0"], *f.Producers["java1"], go0, java1)
	}
}

// A clean run: every acknowledged record once where its acknowledgement
// said, commits that only move forward, one owner per partition and
// generation.
func TestCheckCleanRun(t *testing.T) {
	var log []logRecord
	var acks []ack
	for i := range int64(50) {
		k := recordKey("go1", i)
		log = append(log, logRecord{Partition: int32(i % 3), Offset: i / 3, Key: k})
		acks = append(acks, ack{Producer: "go1", Key: k, Partition: int32(i % 3), Offset: i / 3})
	}
	assigns := []assignment{{Member: "a", Generation: 1, Partitions: []int32{0, 1}}, {Member: "b", Generation: 1, Partitions: []int32{2}},
		{Member: "b", Generation: 101, Partitions: []int32{0, 1, 2}}}
	commits := []commit{{Member: "a", Generation: 1, Partition: 0, Offset: 3}, {Member: "b", Generation: 101, Partition: 0, Offset: 3},
		{Member: "b", Generation: 101, Partition: 0, Offset: 9}}
	f := check(log, acks, nil, assigns, commits, nil, nil)
	if n := f.anomalies(); n != 0 {
		t.Fatalf("%d anomalies in a clean run: %+v", n, f)
	}
	if s := *f.Producers["go1"]; s != (producerStats{Acked: 50, InLog: 50}) {
		t.Errorf("stats %+v", s)
	}
}

func TestParseKey(t *testing.T) {
	for _, c := range []struct {
		key  string
		id   string
		seq  int64
		good bool
	}{
		{recordKey("java1", 42), "java1", 42, true},
		{"a-b-000000007", "a-b", 7, true},
		{"nodash", "", 0, false},
		{"-1", "", 0, false},
		{"go0-x", "", 0, false},
	} {
		id, seq, ok := parseKey(c.key)
		if ok != c.good || id != c.id || seq != c.seq {
			t.Errorf("parseKey(%q) = %q %d %v, want %q %d %v", c.key, id, seq, ok, c.id, c.seq, c.good)
		}
	}
}

// One seed, one schedule; a smoke schedule has each kind perKind times; a
// full one fills its duration with at least minFaults faults.
func TestPlan(t *testing.T) {
	a, b := plan(7, true, 3, 0, 0), plan(7, true, 3, 0, 0)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("same seed, different smoke schedules")
	}
	if reflect.DeepEqual(a, plan(8, true, 3, 0, 0)) {
		t.Error("seeds 7 and 8 give the same schedule")
	}
	counts := map[string]int{}
	for i, f := range a {
		counts[f.Kind]++
		if f.N != i+1 {
			t.Errorf("fault %d numbered %d", i+1, f.N)
		}
		if (f.Kind == faultSidecarKill || f.Kind == faultSidecarStop) != (f.Target >= 0 && f.Target < 3) {
			t.Errorf("%s: target %d", f, f.Target)
		}
	}
	for _, k := range faultKinds {
		if counts[k] != 3 {
			t.Errorf("smoke schedule: %d faults of kind %s, want 3", counts[k], k)
		}
	}
	full := plan(7, false, 0, 50, 30*time.Minute)
	if !reflect.DeepEqual(full, plan(7, false, 0, 50, 30*time.Minute)) {
		t.Fatal("same seed, different full schedules")
	}
	var planned time.Duration
	for _, f := range full {
		planned += f.Gap + f.Hold + estimate(f.Kind)
	}
	t.Logf("seed 7: %d faults planned over %s", len(full), planned)
	if len(full) < 50 || planned < 30*time.Minute {
		t.Errorf("full schedule: %d faults over %s, want >= 50 over >= 30m", len(full), planned)
	}
}

// A committed offset read back lower than a commit acknowledged before the
// read was sent is a backward move, reported once however often it is read;
// a read sent before the commit was acknowledged is not.
func TestBackwardReads(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	commits := []commit{
		{Member: "m0", Generation: 3, Partition: 0, Offset: 10, At: at(1)},
		{Member: "m0", Generation: 3, Partition: 1, Offset: 4, At: at(1)},
	}
	samples := []observed{
		{Via: "sidecar1", Partition: 1, Offset: 2, Sent: at(0.5), Received: at(1.5)}, // sent before the commit: fine
		{Via: "sidecar1", Partition: 0, Offset: 10, Sent: at(2), Received: at(2.1)},  // fine
		{Via: "sidecar2", Partition: 0, Offset: 7, Sent: at(3), Received: at(3.1)},   // lost 10 -> 7
		{Via: "sidecar0", Partition: 0, Offset: 7, Sent: at(4), Received: at(4.1)},   // the same drop again
		{Via: "sidecar0", Partition: 1, Offset: 4, Sent: at(4), Received: at(4.1)},   // fine
	}
	faults := []faultRun{{fault: fault{N: 1, Kind: faultIggyKill, Target: -1}, Start: at(2.5)}}
	got := backwardReads(commits, samples, faults)
	want := []backwardCommit{{Source: "offset_fetch", Partition: 0, From: 10, FromMember: "m0", FromGen: 3, To: 7,
		ToMember: "offset_fetch via sidecar2", ToGen: -1, At: at(3).Format(time.RFC3339Nano), AfterFault: faults[0].fault.String()}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("backward reads %+v, want %+v", got, want)
	}
	f := check(nil, nil, nil, nil, commits, samples, faults)
	if f.anomalies() != 1 || f.OffsetReads != len(samples) {
		t.Errorf("check: %d anomalies, %d offset reads", f.anomalies(), f.OffsetReads)
	}
}
