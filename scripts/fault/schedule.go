package main

// The fault schedule: drawn from the seed before the run starts, so one seed
// always gives the same faults, targets, holds and gaps (what the processes
// do in between is up to them).

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// Fault kinds.
const (
	faultSidecarKill = "sidecar_kill"    // SIGKILL a sidecar, restart it after Hold
	faultSidecarStop = "sidecar_stop"    // SIGSTOP a sidecar, SIGCONT after Hold
	faultIggyKill    = "iggy_kill"       // SIGKILL the Iggy server, restart it (same data dir) after Hold
	faultRolling     = "rolling_restart" // SIGTERM, wait, restart each sidecar in turn
)

var faultKinds = []string{faultSidecarKill, faultSidecarStop, faultIggyKill, faultRolling}

// fault is one planned fault: Gap after the previous one ended, then Kind on
// Target (a sidecar index; -1 for the Iggy server and rolling restarts),
// Hold how long the process stays down or stopped.
type fault struct {
	N      int           `json:"n"`
	Kind   string        `json:"kind"`
	Target int           `json:"target"`
	Gap    time.Duration `json:"gap_ns"`
	Hold   time.Duration `json:"hold_ns"`
}

func (f fault) String() string {
	target := "iggy"
	switch {
	case f.Kind == faultRolling:
		target = "all sidecars"
	case f.Target >= 0:
		target = fmt.Sprintf("sidecar%d", f.Target)
	}
	return fmt.Sprintf("#%d %s %s (after %s, hold %s)", f.N, f.Kind, target, f.Gap, f.Hold)
}

// plan draws the schedule. Smoke: perKind faults of each kind in a seeded
// order with short gaps. Full: faults of random kinds until their planned
// time (gaps, holds and an estimate of each restart) fills duration, and at
// least minFaults.
func plan(seed uint64, smoke bool, perKind, minFaults int, duration time.Duration) []fault {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	between := func(lo, hi time.Duration) time.Duration {
		return lo + time.Duration(rng.Int64N(int64(hi-lo)+1)).Round(100*time.Millisecond)
	}
	draw := func(kind string) fault {
		f := fault{Kind: kind, Target: -1}
		if smoke {
			f.Gap = between(3*time.Second, 8*time.Second)
		} else {
			f.Gap = between(8*time.Second, 25*time.Second)
		}
		switch kind {
		case faultSidecarKill:
			f.Target, f.Hold = rng.IntN(3), between(500*time.Millisecond, 5*time.Second)
		case faultSidecarStop:
			f.Target, f.Hold = rng.IntN(3), between(2*time.Second, 12*time.Second)
		case faultIggyKill:
			f.Hold = between(500*time.Millisecond, 4*time.Second)
		case faultRolling:
			f.Hold = between(time.Second, 3*time.Second) // pause between two sidecars
		}
		return f
	}
	var fs []fault
	if smoke {
		var kinds []string
		for _, k := range faultKinds {
			for range perKind {
				kinds = append(kinds, k)
			}
		}
		rng.Shuffle(len(kinds), func(i, j int) { kinds[i], kinds[j] = kinds[j], kinds[i] })
		for _, k := range kinds {
			fs = append(fs, draw(k))
		}
	} else {
		var planned time.Duration
		for planned < duration || len(fs) < minFaults {
			f := draw(faultKinds[rng.IntN(len(faultKinds))])
			planned += f.Gap + f.Hold + estimate(f.Kind)
			fs = append(fs, f)
		}
	}
	for i := range fs {
		fs[i].N = i + 1
	}
	return fs
}

// estimate is the planner's guess of a fault's time beyond its hold
// (restarts, drains; measured on loopback: a sidecar restarts in about 0.1 s
// and drains in under 0.1 s when idle, a rolling restart takes about its two
// holds plus 0.5 s).
func estimate(kind string) time.Duration {
	switch kind {
	case faultRolling:
		return time.Duration(2.5 * float64(time.Second)) // the second hold, and the restarts
	case faultIggyKill:
		return time.Second
	default:
		return 500 * time.Millisecond
	}
}
