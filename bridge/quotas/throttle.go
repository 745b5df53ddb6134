package quotas

import (
	"context"
	"sync"
	"time"
)

// Kind is what a quota limits.
type Kind uint8

const (
	Produce  Kind = iota // producer_byte_rate: the bytes of Produce requests
	Fetch                // consumer_byte_rate: the bytes of Fetch responses
	Request              // request_percentage: handler time, % of one thread
	Mutation             // controller_mutation_rate: partitions created or deleted per second
)

func (k Kind) key() string {
	return [...]string{ProducerByteRate, ConsumerByteRate, RequestPercentage, ControllerMutationRate}[k]
}

// String is the kind's metric label.
func (k Kind) String() string { return [...]string{"produce", "fetch", "request", "mutation"}[k] }

// maxRequestThrottleMs bounds a request-time throttle: Kafka's
// ClientRequestQuotaManager throttles at most one quota window.
const maxRequestThrottleMs = windowMs

// Metrics is where the throttle reports what it measures. Labels are the
// kind ("produce", "fetch") and the level of the quota entity that applied
// ("user_client_id", "user", "client_id"): never names, so their number is
// bounded.
type Metrics interface {
	// QuotaBytes adds bytes counted against a quota.
	QuotaBytes(kind, level string, n int)
	// QuotaThrottle counts one throttle of ms milliseconds given.
	QuotaThrottle(kind, level string, ms int64)
}

// sensorKey names one rate, as Kafka's quota metric tags: the user and
// client id the applying quota entity is keyed by ("" when it has none).
type sensorKey struct {
	kind           Kind
	user, clientID string
}

// throttle holds the sidecar's rates.
type throttle struct {
	mu      sync.Mutex
	sensors map[sensorKey]*rate
	swept   int64 // unix ms of the last sweep
}

// sensorIdleMs is how long a rate nobody recorded to is kept (Kafka
// expires its quota sensors after an hour of inactivity): client ids come
// and go, their rates must not pile up.
const sensorIdleMs = 3600_000

// sweep drops the rates idle for sensorIdleMs, at most once a minute (mu
// held).
func (t *throttle) sweep(now int64) {
	if now-t.swept < 60_000 {
		return
	}
	t.swept = now
	for k, r := range t.sensors {
		if now-r.lastEvent() >= sensorIdleMs {
			delete(t.sensors, k)
		}
	}
}

// Record counts n bytes of kind for a connection of user and clientID at
// now, and returns how long it is throttled: zero when no quota applies
// or the rate is within it, else Kafka's throttle time (the time until the
// rate over the last windows falls back to the quota). A throttled Fetch
// is answered without its records (as Kafka answers it empty), so its
// bytes are taken back out of the rate, as Kafka's unrecordQuotaSensor.
func (s *Store) Record(ctx context.Context, kind Kind, user, clientID string, n int, now time.Time) time.Duration {
	return s.record(ctx, kind, user, clientID, float64(n), now, false)
}

// RecordTime counts d of handler time against request_percentage, as
// Kafka's ClientRequestQuotaManager (the percentage of one thread), and
// returns the throttle: at most one quota window (1 s).
func (s *Store) RecordTime(ctx context.Context, user, clientID string, d time.Duration, now time.Time) time.Duration {
	return s.record(ctx, Request, user, clientID, d.Seconds()*100, now, false)
}

// record counts v of kind; strict only checks whether the rate is already
// above the quota, and counts nothing then (a refused mutation).
func (s *Store) record(ctx context.Context, kind Kind, user, clientID string, v float64, now time.Time, strict bool) time.Duration {
	bound, level, ok := s.resolve(ctx, user, clientID, kind.key())
	if !ok {
		return 0
	}
	k := sensorKey{kind: kind}
	switch level {
	case levelUserClient:
		k.user, k.clientID = user, clientID
	case levelUser:
		k.user = user
	default:
		k.clientID = clientID
	}
	ms := now.UnixMilli()
	t := &s.thr
	t.mu.Lock()
	if t.sensors == nil {
		t.sensors = map[sensorKey]*rate{}
	}
	t.sweep(ms)
	r := t.sensors[k]
	if r == nil {
		r = &rate{}
		t.sensors[k] = r
	}
	var th int64
	if strict {
		// Kafka's StrictControllerMutationQuota: refused while the rate is
		// above the quota, else recorded even when it goes above.
		if th = r.throttleMs(bound, ms); th == 0 {
			r.record(v, ms)
		}
	} else {
		r.record(v, ms)
		th = r.throttleMs(bound, ms)
	}
	if th > 0 && kind == Fetch {
		r.record(-v, ms)
	}
	if kind == Request {
		th = min(th, maxRequestThrottleMs)
	}
	t.mu.Unlock()
	if m := s.metrics; m != nil {
		if kind <= Fetch {
			m.QuotaBytes(kind.String(), level.String(), int(v))
		}
		if th > 0 {
			m.QuotaThrottle(kind.String(), level.String(), th)
		}
	}
	return time.Duration(th) * time.Millisecond
}

// MutationQuota is one request's controller_mutation_rate quota
// (CreateTopics, DeleteTopics; Kafka 4.4 does not count CreatePartitions),
// as Kafka's
// ControllerMutationQuota: strict for the versions that know
// THROTTLING_QUOTA_EXCEEDED (a topic is refused while the rate is above the
// quota), permissive for older ones (every topic counts, the response is
// throttled).
type MutationQuota struct {
	s              *Store
	ctx            context.Context
	user, clientID string
	strict         bool
	throttle       time.Duration
}

// Mutations returns the mutation quota of one request.
func (s *Store) Mutations(ctx context.Context, user, clientID string, strict bool) *MutationQuota {
	return &MutationQuota{s: s, ctx: ctx, user: user, clientID: clientID, strict: strict}
}

// Take counts n partitions mutated; false means the topic is refused
// (THROTTLING_QUOTA_EXCEEDED) and nothing was counted.
func (q *MutationQuota) Take(n int) bool {
	d := q.s.record(q.ctx, Mutation, q.user, q.clientID, float64(n), time.Now(), q.strict)
	q.throttle = max(q.throttle, d)
	return !q.strict || d == 0
}

// ThrottleMs is the response's throttle_time_ms.
func (q *MutationQuota) ThrottleMs() int32 { return int32(min(q.throttle.Milliseconds(), 1<<31-1)) }
