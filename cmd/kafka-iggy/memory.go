package main

import (
	"context"
	"os"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/rs/zerolog"

	"github.com/kafka-iggy/kafka-iggy/budget"
	"github.com/kafka-iggy/kafka-iggy/codec/wire"
)

// goMemLimit is the Go runtime's soft memory limit for a memory budget of
// budget bytes: the budget plus 1/16 for the runtime's own use (goroutine
// stacks, gnet's per-connection buffers, caches, garbage not yet
// collected). With a budget derived from a 256 MiB cgroup limit (192 MiB)
// that is 204 MiB, leaving the rest before an OOM kill. An eighth (216
// MiB) let one huge answer (a DescribeConfigs naming one resource 20,000
// times: 55 MB encoded, and again in gnet's outbound buffer) peak at
// 266-281 MiB of RSS; a sixteenth kept it at 235 (the amplify process test).
func goMemLimit(budget int64) int64 { return budget + budget/16 }

// applyGoMemLimit sets the runtime's memory limit from the budget unless
// the environment sets GOMEMLIMIT, and returns the limit in force.
func applyGoMemLimit(budget int64, log zerolog.Logger) int64 {
	if v := os.Getenv("GOMEMLIMIT"); v != "" {
		limit := debug.SetMemoryLimit(-1)
		log.Info().Str("gomemlimit", v).Int64("gomemlimit_bytes", limit).Msg("GOMEMLIMIT from the environment kept")
		return limit
	}
	limit := goMemLimit(budget)
	debug.SetMemoryLimit(limit)
	return limit
}

// Burst detection of returnAfterBursts.
const (
	memCheckEvery = time.Second
	// A burst held more than half the budget; it is over once less than
	// 1/8 is held for memQuietChecks checks in a row.
	memQuietChecks = 3
)

// returnAfterBursts gives memory back to the OS once a burst is over: when
// the budget was more than half used and has stayed below 1/8 for a few
// seconds, the heap is collected and its free pages returned at once
// (debug.FreeOSMemory), instead of the background scavenger's slow pace
// keeping the burst's peak as RSS. It runs until ctx ends.
func returnAfterBursts(ctx context.Context, b *budget.Budget, log zerolog.Logger) {
	total := b.Total()
	if total <= 0 {
		return
	}
	t := time.NewTicker(memCheckEvery)
	defer t.Stop()
	high, quiet := false, 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		use := b.InUse()
		switch {
		case use > total/2:
			high, quiet = true, 0
		case high && use < total/8:
			quiet++
			if quiet >= memQuietChecks {
				// Two collections: pooled buffers survive the first
				// (sync.Pool's victim cache), not the second; the
				// kept large buffers go first.
				wire.DropKept()
				runtime.GC()
				debug.FreeOSMemory()
				high, quiet = false, 0
				log.Debug().Int64("budget_in_use", use).Msg("burst over: heap returned to the OS")
			}
		default:
			quiet = 0
		}
	}
}
