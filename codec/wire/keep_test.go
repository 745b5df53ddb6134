package wire

import (
	"runtime"
	"testing"
	"time"
	"unsafe"
)

// newTestKeep is a Keep outside the registry, of limit bytes.
func newTestKeep(limit int) *Keep { return &Keep{share: 1, most: limit, limit: limit} }

func data(b []byte) *byte { return unsafe.SliceData(b) }

// TestKeepSurvivesCollections: what a sync.Pool loses to two collections,
// a Keep still holds.
func TestKeepSurvivesCollections(t *testing.T) {
	k := newTestKeep(8 << 20)
	b := make([]byte, 100, 1<<20)
	p := data(b)
	if !k.Put(b) {
		t.Fatal("a 1 MiB buffer was not kept under an 8 MiB limit")
	}
	runtime.GC()
	runtime.GC()
	got := k.Get(512 << 10)
	if got == nil || data(got) != p {
		t.Fatal("the kept buffer did not survive two collections")
	}
	if len(got) != 0 || cap(got) != 1<<20 {
		t.Fatalf("Get returned len %d cap %d, want an empty 1 MiB buffer", len(got), cap(got))
	}
	if k.Get(1) != nil || k.Held() != 0 || k.Taken() != 1 {
		t.Fatalf("after taking the only buffer: held %d, taken %d", k.Held(), k.Taken())
	}
}

// TestKeepBestFit: Get takes the smallest buffer that holds what is asked,
// so a small need does not take the buffer a large one needs.
func TestKeepBestFit(t *testing.T) {
	k := newTestKeep(16 << 20)
	big, mid, small := make([]byte, 0, 4<<20), make([]byte, 0, 1<<20), make([]byte, 0, KeepMin)
	for _, b := range [][]byte{big, mid, small} {
		k.Put(b)
	}
	if got := k.Get(KeepMin + 1); data(got) != data(mid) {
		t.Fatalf("Get(KeepMin+1) took a buffer of %d, want the 1 MiB one", cap(got))
	}
	if got := k.Get(4 << 20); data(got) != data(big) {
		t.Fatalf("Get(4 MiB) took a buffer of %d, want the 4 MiB one", cap(got))
	}
	if got := k.Get(KeepMin + 1); got != nil {
		t.Fatalf("Get(KeepMin+1) took a buffer of %d with only a KeepMin one left", cap(got))
	}
}

// TestKeepBounds: below KeepMin and above the limit are not kept; past the
// limit or the entry bound the buffers kept longest go first.
func TestKeepBounds(t *testing.T) {
	k := newTestKeep(3 << 20)
	if k.Put(make([]byte, 0, KeepMin-1)) {
		t.Fatal("a buffer below KeepMin was kept")
	}
	if k.Put(make([]byte, 0, 4<<20)) {
		t.Fatal("a buffer above the limit was kept")
	}
	first, second, third := make([]byte, 0, 1<<20), make([]byte, 0, 1<<20), make([]byte, 0, 2<<20)
	k.Put(first)
	k.Put(second)
	k.Put(third) // 4 MiB would be held: the oldest goes
	if k.Held() != 3<<20 {
		t.Fatalf("held %d bytes, want 3 MiB", k.Held())
	}
	if got := k.Get(1 << 20); data(got) != data(second) {
		t.Fatal("the oldest buffer was not the one dropped")
	}

	k = newTestKeep(1 << 30)
	for range keepEntries + 5 {
		k.Put(make([]byte, 0, KeepMin))
	}
	if n := len(k.bufs); n != keepEntries {
		t.Fatalf("%d buffers kept, want at most %d", n, keepEntries)
	}
}

// TestKeepGrow: Grow copies into a kept buffer when one fits, and grows
// as slices.Grow does otherwise.
func TestKeepGrow(t *testing.T) {
	k := newTestKeep(8 << 20)
	kept := make([]byte, 0, 2<<20)
	k.Put(kept)
	dst := []byte("head")
	got := k.Grow(dst, 1<<20)
	if data(got) != data(kept) || string(got) != "head" {
		t.Fatalf("Grow did not move the bytes into the kept buffer: %q", got[:min(len(got), 8)])
	}
	if again := k.Grow(got, 1<<20); data(again) != data(got) {
		t.Fatal("Grow replaced a buffer that had room")
	}
	fresh := k.Grow([]byte("x"), 3<<20) // nothing kept fits
	if string(fresh) != "x" || cap(fresh) < 3<<20+1 {
		t.Fatalf("Grow without a kept buffer: %q cap %d", fresh, cap(fresh))
	}
	small := k.Grow(nil, 10) // below KeepMin: never from the keep
	if cap(small) < 10 || k.Taken() != 1 {
		t.Fatalf("a small Grow took from the keep (taken %d)", k.Taken())
	}
}

// TestKeepBudgetAndDrop: SetKeepBudget sizes every registered Keep from
// the memory budget (dropping what no longer fits); DropKept empties them;
// buffers idle past keepIdle are trimmed.
func TestKeepBudgetAndDrop(t *testing.T) {
	k := NewKeep(32, 32<<20)
	defer SetKeepBudget(1 << 30)
	k.Put(make([]byte, 0, 4<<20))
	k.Put(make([]byte, 0, 4<<20))
	SetKeepBudget(192 << 20) // 6 MiB
	if k.Limit() != 6<<20 || k.Held() != 4<<20 {
		t.Fatalf("after a 192 MiB budget: limit %d held %d, want 6 MiB and 4 MiB", k.Limit(), k.Held())
	}
	SetKeepBudget(1 << 40)
	if k.Limit() != 32<<20 {
		t.Fatalf("limit %d under a huge budget, want the 32 MiB bound", k.Limit())
	}
	DropKept()
	if k.Held() != 0 {
		t.Fatalf("DropKept left %d bytes", k.Held())
	}

	k.Put(make([]byte, 0, 1<<20))
	k.Put(make([]byte, 0, 1<<20))
	k.mu.Lock()
	k.bufs[0].at = time.Now().Add(-2 * keepIdle) // idle long enough
	k.mu.Unlock()
	k.trim()
	if k.Held() != 1<<20 {
		t.Fatalf("trim left %d bytes, want the one recent buffer", k.Held())
	}
}
