package fetchread

import "testing"

func TestFetchPollCount(t *testing.T) {
	cases := []struct {
		remaining, avg int
		atLeastOne     bool
		want           uint32
	}{
		{0, 100, false, 0},            // no room: offsets only
		{0, 100, true, 1},             // no room, but one record goes in anyway
		{-5, 0, true, 1},              // likewise with nothing known
		{1 << 20, 0, false, 16},       // unknown sizes: a small probe
		{100, 0, false, 1},            // ... never more than the room suggests
		{10_000, 100, false, 101},     // what the room holds, plus one
		{1 << 30, 10, false, 10000},   // capped by count
		{1 << 30, 1 << 20, false, 16}, // capped by expected bytes
		{1 << 30, 1 << 30, false, 1},  // a huge message: one
	}
	for _, c := range cases {
		if got := PollCount(c.remaining, c.avg, c.atLeastOne); got != c.want {
			t.Errorf("PollCount(%d, %d, %v) = %d, want %d", c.remaining, c.avg, c.atLeastOne, got, c.want)
		}
	}
}
