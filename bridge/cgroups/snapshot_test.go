package cgroups

import (
	"bytes"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// A group restored from its snapshot by another coordinator (an owner
// move) goes on where it was: the members heartbeat at their epochs with no
// error and keep their partitions, a fourth member joins and nobody loses a
// partition it keeps, and a member revoking at the snapshot may still
// finish its revocation at the new coordinator.
func TestSnapshotRestoreKeepsEpochsAndAssignment(t *testing.T) {
	c, clk := newTestCoordinator()
	topics := map[string]int32{"t": 12}
	var cls []*client
	for i := range 3 {
		cl := &client{id: fmt.Sprint("m", i)}
		cl.join(t, c, topics, []string{"t"}, "")
		cls = append(cls, cl)
	}
	settle(t, c, topics, cls)
	snap, held := c.Snapshot("g")
	if !held {
		t.Fatal("no snapshot of a held group")
	}
	if again, _ := c.Snapshot("g"); !bytes.Equal(snap, again) {
		t.Fatal("the same state encoded twice differs")
	}
	before, _ := c.Describe("g")

	c2 := New(DefaultConfig(), zerolog.Nop(), clk.now)
	if err := c2.Restore("g", snap); err != nil {
		t.Fatal(err)
	}
	after, _ := c2.Describe("g")
	if after.Epoch != before.Epoch || after.AssignmentEpoch != before.AssignmentEpoch || after.State != StateStable || len(after.Members) != 3 {
		t.Fatalf("restored %+v, was %+v", after, before)
	}
	if again, _ := c2.Snapshot("g"); !bytes.Equal(snap, again) {
		t.Fatalf("restored state encodes differently:\n%s\n%s", snap, again)
	}
	owned := map[string][]TP{}
	for _, cl := range cls {
		owned[cl.id] = slices.Clone(cl.owned)
		r := cl.beat(t, c2, topics)
		if r.MemberEpoch != before.Epoch || !slices.Equal(cl.owned, owned[cl.id]) {
			t.Fatalf("%s after the move: epoch %d owned %v, was %d %v", cl.id, r.MemberEpoch, cl.owned, before.Epoch, owned[cl.id])
		}
	}

	// The fourth member joins at the new coordinator; the snapshot taken
	// while the others revoke restores into a third coordinator.
	m3 := &client{id: "m3"}
	m3.join(t, c2, topics, []string{"t"}, "")
	cls = append(cls, m3)
	cls[0].beat(t, c2, topics) // m0 is asked to revoke
	mid, _ := c2.Snapshot("g")
	clk.t = clk.t.Add(time.Second)
	c3 := New(DefaultConfig(), zerolog.Nop(), clk.now)
	if err := c3.Restore("g", mid); err != nil {
		t.Fatal(err)
	}
	settle(t, c3, topics, cls)
	for _, cl := range cls {
		if len(cl.owned) != 3 {
			t.Fatalf("%s owns %v, want 3", cl.id, cl.owned)
		}
		for _, tp := range cl.owned {
			if cl.id != "m3" && !slices.Contains(owned[cl.id], tp) {
				t.Fatalf("%s gained %v", cl.id, tp)
			}
		}
	}

	// A tombstone restores nothing; another group's record is refused.
	c4 := New(DefaultConfig(), zerolog.Nop(), clk.now)
	if err := c4.Restore("g", Tombstone("g")); err != nil || c4.Has("g") {
		t.Fatalf("tombstone: %v, held %v", err, c4.Has("g"))
	}
	if err := c4.Restore("h", snap); err == nil {
		t.Fatal("a snapshot of g restored as h")
	}
}
