package quotas

import (
	"context"
	"sync"
	"time"
)

// Kind is what a byte-rate quota limits.
type Kind uint8

const (
	Produce Kind = iota // producer_byte_rate: the bytes of Produce requests
	Fetch               // consumer_byte_rate: the bytes of Fetch responses
)

func (k Kind) key() string {
	if k == Produce {
		return ProducerByteRate
	}
	return ConsumerByteRate
}

// String is the kind's metric label.
func (k Kind) String() string {
	if k == Produce {
		return "produce"
	}
	return "fetch"
}

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
	r.record(float64(n), ms)
	th := r.throttleMs(bound, ms)
	if th > 0 && kind == Fetch {
		r.record(-float64(n), ms)
	}
	t.mu.Unlock()
	if m := s.metrics; m != nil {
		m.QuotaBytes(kind.String(), level.String(), n)
		if th > 0 {
			m.QuotaThrottle(kind.String(), level.String(), th)
		}
	}
	return time.Duration(th) * time.Millisecond
}
