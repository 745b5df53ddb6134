package admin

import (
	"sync"
	"sync/atomic"
)

// Readiness decides what /readyz answers: ready when the sidecar is not
// draining and every registered check passes. It also holds the liveness
// checks behind /healthz (AddLiveness). Checks are called on every
// probe, so they must be cheap and safe for concurrent use (an atomic load,
// like iggy.Client.Ready). All methods are safe for concurrent use.
type Readiness struct {
	mu       sync.Mutex
	checks   []check
	live     []liveCheck
	draining atomic.Bool
}

type liveCheck struct {
	name    string
	stalled func() string
}

type check struct {
	name string
	ok   func() bool
}

// NewReadiness returns a Readiness with no checks: ready until a check is
// added or SetDraining is called.
func NewReadiness() *Readiness { return &Readiness{} }

// AddCheck registers a named condition of readiness, e.g. "listener" (the
// Kafka listener is bound) or "iggy" (at least one Iggy session is logged
// in). The name is shown by /readyz when the check fails.
func (r *Readiness) AddCheck(name string, ok func() bool) {
	r.mu.Lock()
	r.checks = append(r.checks, check{name: name, ok: ok})
	r.mu.Unlock()
}

// SetDraining makes the sidecar unready for good: call it first on
// SIGTERM, before the Kafka listener starts draining, so readiness drops
// before anything else changes.
func (r *Readiness) SetDraining() { r.draining.Store(true) }

// Draining reports whether SetDraining was called.
func (r *Readiness) Draining() bool { return r.draining.Load() }

// Ready reports whether the sidecar is ready and, when it is not, the names
// of what is missing ("draining" and the failing checks, in the order they
// were added).
func (r *Readiness) Ready() (ok bool, failing []string) {
	if r.draining.Load() {
		failing = append(failing, "draining")
	}
	r.mu.Lock()
	checks := r.checks
	r.mu.Unlock()
	for _, c := range checks {
		if !c.ok() {
			failing = append(failing, c.name)
		}
	}
	return len(failing) == 0, failing
}

// AddLiveness registers a named liveness condition: stalled returns what
// has stopped making progress, or "" while it is alive (e.g. "proxy" with
// proxy.Server.Stalled). It is called on every /healthz probe, so it must
// be cheap and safe for concurrent use.
func (r *Readiness) AddLiveness(name string, stalled func() string) {
	r.mu.Lock()
	r.live = append(r.live, liveCheck{name: name, stalled: stalled})
	r.mu.Unlock()
}

// Alive reports whether every liveness check passes and, when one does
// not, "<name>: <what stalled>" for each failing one. Draining does not
// make the sidecar dead: a sidecar finishing its requests keeps answering
// /healthz.
func (r *Readiness) Alive() (ok bool, failing []string) {
	r.mu.Lock()
	live := r.live
	r.mu.Unlock()
	for _, c := range live {
		if why := c.stalled(); why != "" {
			failing = append(failing, c.name+": "+why)
		}
	}
	return len(failing) == 0, failing
}
