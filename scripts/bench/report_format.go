package main

// How the report writes numbers and cells: microseconds, MiB, ratios,
// optional values, allocations, connection counts, run status, Markdown escapes.

import (
	"fmt"
	"math"
	"strings"
)

func fmtUS(us float64) string {
	switch {
	case us >= 1e6:
		return fmt.Sprintf("%.2f s", us/1e6)
	case us >= 1000:
		return fmt.Sprintf("%.2f ms", us/1000)
	default:
		return fmt.Sprintf("%.0f µs", us)
	}
}

func fmtMiB(b int64) string {
	if b <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20))
}

func fmtNum(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.2f M", v/1e6)
	case v >= 1e4:
		return fmt.Sprintf("%.0f k", v/1e3)
	case v >= 1000:
		return fmt.Sprintf("%.1f k", v/1e3)
	default:
		return fmt.Sprintf("%.0f", v)
	}
}

func fmtRatio(a, b float64) string {
	if a <= 0 || b <= 0 || math.IsNaN(a/b) {
		return "–"
	}
	return fmt.Sprintf("%.2f×", a/b)
}

func fmtOpt(v float64, format string) string {
	if v < 0 {
		return "–"
	}
	return fmt.Sprintf(format, v)
}

// fmtAllocs shows allocations per record: small values keep 3 decimals
// (the sidecar works on batches, so it allocates far less than once per
// record).
func fmtAllocs(v float64) string {
	switch {
	case v < 0:
		return "–"
	case v < 1:
		return fmt.Sprintf("%.3f", v)
	default:
		return fmt.Sprintf("%.1f", v)
	}
}

func fmtConns(n int) string {
	if n < 0 {
		return "–"
	}
	return fmt.Sprint(n)
}

// status is what a table shows for a run without figures.
func status(r *Result) string {
	switch {
	case r == nil:
		return "not run"
	case r.Skipped != "":
		return "skipped: " + r.Skipped
	case r.Error != "":
		return "FAILED: " + mdEscape(firstLine(r.Error))
	}
	return "no records"
}

func mdEscape(s string) string {
	s = strings.ReplaceAll(s, "|", "\\|")
	if len(s) > 160 {
		s = s[:160] + "…"
	}
	return s
}
