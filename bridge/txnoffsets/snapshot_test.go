package txnoffsets

import (
	"context"
	"testing"

	"github.com/kafka-iggy/kafka-iggy/budget"
)

// A group's snapshot restored into another store (the next owner) gives
// the same pending offsets, unstable flags and budget charge; a tombstone
// empties the group; malformed snapshots and other groups' change nothing.
func TestSnapshotRestore(t *testing.T) {
	ctx := context.Background()
	a := New(nil)
	if c := a.Add(ctx, "g", 7, 2, []Offset{{"t", 0, 10}, {"t", 1, 11}, {"t", 0, 12}}); c != 0 {
		t.Fatal(c)
	}
	if c := a.Add(ctx, "g", 9, 0, []Offset{{"u", 3, 5}}); c != 0 {
		t.Fatal(c)
	}
	_ = a.Add(ctx, "other", 1, 0, []Offset{{"t", 0, 1}})
	snap := a.Snapshot("g")

	bud := budget.New(1 << 20)
	b := New(bud)
	if err := b.Restore("g", snap); err != nil {
		t.Fatal(err)
	}
	if got := b.Snapshot("g"); string(got) != string(snap) {
		t.Fatalf("snapshot after restore differs")
	}
	if bud.InUse() != 3*entryBytes {
		t.Fatalf("budget in use %d, want %d", bud.InUse(), 3*entryBytes)
	}
	offs, _ := b.Pending(ctx, "g", 7, 2)
	if len(offs) != 2 {
		t.Fatalf("pending %+v", offs)
	}
	for _, o := range offs {
		if o.Partition == 0 && o.Offset != 12 || o.Partition == 1 && o.Offset != 11 {
			t.Fatalf("pending %+v", offs)
		}
	}
	if fl, _ := b.Unstable(ctx, "g", []Offset{{"u", 3, 0}, {"u", 4, 0}}); !fl[0] || fl[1] {
		t.Fatalf("unstable %v", fl)
	}
	if c := b.Add(ctx, "g", 7, 1, []Offset{{"t", 0, 1}}); c == 0 {
		t.Fatal("an older epoch than the restored one was accepted")
	}

	for name, bad := range map[string][]byte{
		"empty":       nil,
		"version":     append([]byte{9}, snap[1:]...),
		"truncated":   snap[:len(snap)-3],
		"trailing":    append(append([]byte{}, snap...), 0),
		"huge count":  {1, 0, 1, 'g', 0xff, 0xff, 0xff, 0xff},
		"other group": a.Snapshot("other"),
	} {
		if err := b.Restore("g", bad); err == nil {
			t.Errorf("%s: restored", name)
		}
	}
	if got := b.Snapshot("g"); string(got) != string(snap) {
		t.Fatalf("a refused restore changed the group")
	}

	b.Forget(ctx, "g", 7, 2)
	b.Forget(ctx, "g", 9, 0)
	tomb := b.Snapshot("g")
	if b.Has("g") {
		t.Fatal("group held after forgetting every producer")
	}
	if err := b.Restore("g", snap); err != nil {
		t.Fatal(err)
	}
	if err := b.Restore("g", tomb); err != nil || b.Has("g") || bud.InUse() != 0 {
		t.Fatalf("tombstone restore: %v held %v budget %d", err, b.Has("g"), bud.InUse())
	}
	_ = b.Restore("g", snap)
	if n := b.Drop(func(g string) bool { return g == "g" }); n != 1 || b.Has("g") || bud.InUse() != 0 {
		t.Fatalf("drop: %d held %v budget %d", n, b.Has("g"), bud.InUse())
	}
}
