package quotas

import "testing"

// TestRateThrottleHoldsQuota: a client that sends as fast as its throttle
// lets it (virtual clock) gets the quota over whole quota periods, as on
// Kafka: an opening burst up to the minimum window, then the quota.
func TestRateThrottleHoldsQuota(t *testing.T) {
	const quota = 1 << 20
	for _, chunk := range []int64{16 << 10, 100 << 10} {
		var r rate
		now, sent := int64(1_000_000), int64(0)
		start := now
		var at [34]int64 // at[s]: bytes sent in the first s seconds
		for now-start < 33_000 {
			r.record(float64(chunk), now)
			sent += chunk
			for s := (now-start)/1000 + 1; s < int64(len(at)); s++ {
				at[s] = sent
			}
			now += 2 + r.throttleMs(quota, now) // a request takes 2ms
		}
		for _, sec := range []int64{11, 22, 33} {
			got := float64(at[sec]) / float64(sec)
			if got < 0.9*quota || got > 1.1*quota {
				t.Errorf("chunk %d: %.0f B/s over the first %ds, want %d within 10%%", chunk, got, sec, quota)
			}
		}
	}
}
