package quotas

import "math"

// Kafka's quota windows: quota.window.num 11 samples of
// quota.window.size.seconds 1.
const (
	windowSamples = 11
	windowMs      = 1000
)

// sample is one window of a rate (Kafka's SampledStat.Sample).
type sample struct {
	start, last int64 // unix ms
	value       float64
}

// rate is Kafka's Rate over a SampledTotal: windowSamples windows of
// windowMs (and one overlapping window), the sum of the samples divided
// by the time they cover, at least windowSamples-1 full windows.
type rate struct {
	samples [windowSamples + 1]sample
	n, cur  int
}

// record adds v at now.
func (r *rate) record(v float64, now int64) {
	if r.n == 0 {
		r.samples[0], r.n, r.cur = sample{start: now, last: now}, 1, 0
	}
	s := &r.samples[r.cur]
	if now-s.start >= windowMs {
		r.cur = (r.cur + 1) % len(r.samples)
		if r.cur >= r.n {
			r.n++
		}
		s = &r.samples[r.cur]
		*s = sample{start: now, last: now}
	}
	s.value += v
	s.last = now
}

// lastEvent is when the rate last recorded (unix ms).
func (r *rate) lastEvent() int64 {
	var last int64
	for i := 0; i < r.n; i++ {
		last = max(last, r.samples[i].last)
	}
	return last
}

// purge resets the samples with no event within the whole window.
func (r *rate) purge(now int64) {
	for i := 0; i < r.n; i++ {
		if now-r.samples[i].last >= windowSamples*windowMs {
			r.samples[i] = sample{start: now, last: now}
		}
	}
}

// windowSize is the time the samples cover, in ms (Kafka's
// Rate.windowSize).
func (r *rate) windowSize(now int64) int64 {
	r.purge(now)
	oldest := now
	for i := 0; i < r.n; i++ {
		oldest = min(oldest, r.samples[i].start)
	}
	elapsed := now - oldest
	if full := elapsed / windowMs; full < windowSamples-1 {
		elapsed += (windowSamples - 1 - full) * windowMs
	}
	return max(elapsed, 1)
}

// measure is the rate per second at now.
func (r *rate) measure(now int64) float64 {
	size := r.windowSize(now)
	total := 0.0
	for i := 0; i < r.n; i++ {
		total += r.samples[i].value
	}
	return total / (float64(size) / 1000)
}

// throttleMs is Kafka's QuotaUtils.throttleTime for a rate above bound:
// the time until the rate over the window falls back to bound.
func (r *rate) throttleMs(bound float64, now int64) int64 {
	v := r.measure(now)
	if v <= bound {
		return 0
	}
	return int64(math.Round((v - bound) / bound * float64(r.windowSize(now))))
}
