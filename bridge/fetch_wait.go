package bridge

import "time"

// maxWait is how long a Fetch asking max_wait_ms may wait for data:
// fetch.max_wait at most (0: defaultFetchMaxWait), never negative.
func (f *fetcher) maxWait(ms int32) time.Duration {
	limit := f.b.cfg.Fetch.MaxWait
	if limit <= 0 {
		limit = defaultFetchMaxWait
	}
	return min(time.Duration(max(ms, 0))*time.Millisecond, limit)
}
