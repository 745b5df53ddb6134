package cgroups

import (
	"errors"
	"testing"
	"time"
)

// A view is reused within MaxAge, loaded again after it or after an
// Invalidate, and a load that an Invalidate overtook is not kept.
func TestMetadataCache(t *testing.T) {
	var c MetadataCache
	loads := 0
	load := func() (Metadata, error) {
		loads++
		return Metadata{Counts: map[string]int32{"t": int32(loads)}}, nil
	}
	t0 := time.Unix(1_700_000_000, 0)
	get := func(at time.Time) int32 {
		t.Helper()
		md, err := c.Get(at, load)
		if err != nil {
			t.Fatal(err)
		}
		return md.Counts["t"]
	}
	if get(t0) != 1 || get(t0.Add(500*time.Millisecond)) != 1 || loads != 1 {
		t.Fatalf("not reused: %d loads", loads)
	}
	if get(t0.Add(time.Second)) != 2 {
		t.Fatal("not loaded again after MaxAge")
	}
	c.Invalidate()
	if get(t0.Add(time.Second)) != 3 {
		t.Fatal("not loaded again after Invalidate")
	}
	if _, err := c.Get(t0.Add(5*time.Second), func() (Metadata, error) { return Metadata{}, errors.New("down") }); err == nil {
		t.Fatal("a failed load answered")
	}
	_, _ = c.Get(t0.Add(6*time.Second), func() (Metadata, error) { c.Invalidate(); return load() })
	if get(t0.Add(6*time.Second)) != 5 || loads != 5 {
		t.Fatalf("a load overtaken by Invalidate was kept (%d loads)", loads)
	}
}
