package txnoffsets

import (
	"context"
	"errors"
	"testing"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
)

// memStore is a Store whose saves can be made to fail.
type memStore struct {
	snaps map[string][]byte
	fail  bool
	saves int
	hook  func() // after a save
}

func (m *memStore) Load(_ context.Context, group string) ([]byte, bool, error) {
	b, ok := m.snaps[group]
	return b, ok, nil
}

func (m *memStore) Save(_ context.Context, group string, snap []byte) error {
	if m.fail {
		return errors.New("refused")
	}
	m.saves++
	m.snaps[group] = snap
	if m.hook != nil {
		m.hook()
	}
	return nil
}

// What Durable answered is in its store: a new Durable over the store (a
// restart, the next owner) holds the same; a save that fails undoes the
// change and answers COORDINATOR_LOAD_IN_PROGRESS; a committed resolution
// is forgotten durably, so resolving again after a restart commits nothing
// twice; reads write nothing.
func TestDurable(t *testing.T) {
	ctx := context.Background()
	st := &memStore{snaps: map[string][]byte{}}
	d := NewDurable(New(nil), st, zerolog.Nop())
	if c := d.Add(ctx, "g", 5, 1, []Offset{{"t", 0, 7}}); c != 0 {
		t.Fatal(c)
	}
	if fl, c := d.Unstable(ctx, "g", []Offset{{"t", 0, 0}}); c != 0 || !fl[0] {
		t.Fatalf("unstable %v %d", fl, c)
	}
	if st.saves != 1 {
		t.Fatalf("%d saves, want 1 (reads write nothing)", st.saves)
	}

	st.fail = true
	if c := d.Add(ctx, "g", 5, 1, []Offset{{"t", 1, 9}}); c != kerr.CoordinatorLoadInProgress.Code {
		t.Fatalf("add with a failing store: %d", c)
	}
	st.fail = false
	if offs, c := d.Pending(ctx, "g", 5, 1); c != 0 || len(offs) != 1 || offs[0] != (Offset{"t", 0, 7}) {
		t.Fatalf("after a failed save: %+v %d (the refused add must be undone)", offs, c)
	}

	restarted := NewDurable(New(nil), st, zerolog.Nop())
	var stored []Offset
	store := func(o Offset) error { stored = append(stored, o); return nil }
	if err := Resolve(ctx, restarted, "g", 5, 1, true, store); err != nil {
		t.Fatal(err)
	}
	if len(stored) != 1 || stored[0] != (Offset{"t", 0, 7}) {
		t.Fatalf("committed after the restart: %+v", stored)
	}
	again := NewDurable(New(nil), st, zerolog.Nop())
	if err := Resolve(ctx, again, "g", 5, 1, true, store); err != nil {
		t.Fatal(err)
	}
	if len(stored) != 1 {
		t.Fatalf("a second resolution after another restart committed again: %+v", stored)
	}

	// A failed forget keeps the offsets pending (the coordinator retries).
	_ = again.Add(ctx, "h", 6, 0, []Offset{{"t", 0, 3}})
	st.fail = true
	if err := Resolve(ctx, again, "h", 6, 0, false, store); err == nil {
		t.Fatal("resolution with a failing store succeeded")
	}
	st.fail = false
	if offs, _ := NewDurable(New(nil), st, zerolog.Nop()).Pending(ctx, "h", 6, 0); len(offs) != 1 {
		t.Fatalf("pending after a failed forget: %+v", offs)
	}
}

// A group whose shard moves away while its call is being served, and back
// after another owner changed it, is read again from the store.
func TestDurableMovedAwayAndBack(t *testing.T) {
	ctx := context.Background()
	st := &memStore{snaps: map[string][]byte{}}
	d := NewDurable(New(nil), st, zerolog.Nop())
	other := NewDurable(New(nil), st, zerolog.Nop())
	_ = d.Add(ctx, "g", 1, 0, []Offset{{"t", 0, 1}})
	st.hook = func() { // the shard leaves d while its Forget is saved
		st.hook = nil
		d.Drop(func(string) bool { return true })
	}
	if c := d.Forget(ctx, "g", 1, 0); c != 0 {
		t.Fatal(c)
	}
	if c := other.Add(ctx, "g", 2, 0, []Offset{{"t", 0, 9}}); c != 0 { // the other owner
		t.Fatal(c)
	}
	if offs, c := d.Pending(ctx, "g", 2, 0); c != 0 || len(offs) != 1 || offs[0].Offset != 9 {
		t.Fatalf("back at d: %+v %d, want the other owner's offset", offs, c)
	}
}
