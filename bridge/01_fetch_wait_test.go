package bridge

import (
	"testing"
	"time"
)

// TestFetchMaxWaitIsCapped: a Fetch's max_wait_ms is honoured up to
// fetch.max_wait (30s by default); a negative one waits not at all.
func TestFetchMaxWaitIsCapped(t *testing.T) {
	f := &fetcher{b: &Bridge{}}
	for _, tc := range []struct {
		limit time.Duration
		ms    int32
		want  time.Duration
	}{
		{0, 500, 500 * time.Millisecond},
		{0, 1 << 30, defaultFetchMaxWait},
		{0, -1, 0},
		{time.Second, 5000, time.Second},
		{time.Second, 200, 200 * time.Millisecond},
	} {
		f.b.cfg.Fetch.MaxWait = tc.limit
		if got := f.maxWait(tc.ms); got != tc.want {
			t.Errorf("fetch.max_wait %v, max_wait_ms %d: waits %v, want %v", tc.limit, tc.ms, got, tc.want)
		}
	}
}
