package main

// The report: JSON for machines (report.json), a summary for people (stdout),
// and, for a full run with -out, docs/FAULTS.md.

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

type report struct {
	Seed        uint64         `json:"seed"`
	Smoke       bool           `json:"smoke"`
	Started     time.Time      `json:"started"`
	Duration    string         `json:"duration"`
	Topic       string         `json:"topic"`
	Partitions  int            `json:"partitions"`
	Group       string         `json:"group"`
	Faults      []faultRun     `json:"faults"`
	FaultCounts map[string]int `json:"fault_counts"`
	Consumed    int            `json:"consumed"`
	CommitErrs  int            `json:"commit_errors"`
	Errors      []string       `json:"errors"` // run errors (a process that would not restart, a flush that timed out)
	Findings    *findings      `json:"findings"`
	Anomalies   int            `json:"anomalies"`
	RunDir      string         `json:"run_dir"`
}

func (r *report) writeJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

func (r *report) producers() []string {
	var ps []string
	for p := range r.Findings.Producers {
		ps = append(ps, p)
	}
	sort.Strings(ps)
	return ps
}

// summary writes the human summary.
func (r *report) summary(w io.Writer) {
	f := r.Findings
	fmt.Fprintf(w, "fault workload: seed %d, %s, %d faults (%s)\n", r.Seed, r.Duration, len(r.Faults), r.countsText())
	fmt.Fprintf(w, "records: %d in the log (%d partitions), %d consumed by the group, %d commits accepted (%d refused), %d committed offsets read back, %d assignments over %d generations\n",
		f.LogRecords, r.Partitions, r.Consumed, f.Commits, r.CommitErrs, f.OffsetReads, f.Assignments, f.Generations)
	for _, p := range r.producers() {
		s := f.Producers[p]
		fmt.Fprintf(w, "  producer %-6s acked %6d  failed %4d  in log %6d  duplicates %4d  lost %4d  misplaced %4d  unacked in log %4d\n",
			p, s.Acked, s.Failed, s.InLog, s.Duplicates, s.Lost, s.Misplaced, s.UnackedInLog)
	}
	fmt.Fprintf(w, "anomalies: %d (duplicates %d, lost or misplaced %d, backward commits %d, double owners %d)\n",
		r.Anomalies, len(f.Duplicates), len(f.Lost), len(f.BackwardCommits), len(f.DoubleOwners))
	const show = 10
	for i, d := range f.Duplicates {
		if i == show {
			fmt.Fprintf(w, "  ... %d more duplicates in the JSON report\n", len(f.Duplicates)-show)
			break
		}
		fmt.Fprintf(w, "  duplicate: producer %s partition %d sequence %d at offsets %v (acked %v; after %s)\n",
			d.Producer, d.Partition, d.Sequence, d.Offsets, d.Acked, orNone(d.AfterFault))
	}
	for i, l := range f.Lost {
		if i == show {
			fmt.Fprintf(w, "  ... %d more lost records in the JSON report\n", len(f.Lost)-show)
			break
		}
		fmt.Fprintf(w, "  lost: %s acked at %d/%d, found at %s (after %s)\n", l.Key, l.Partition, l.Offset, orNone(l.FoundAt), orNone(l.AfterFault))
	}
	for _, b := range f.BackwardCommits {
		fmt.Fprintf(w, "  backward commit (%s): partition %d from %d (%s, gen %d) to %d (%s, gen %d) at %s (after %s)\n",
			b.Source, b.Partition, b.From, b.FromMember, b.FromGen, b.To, b.ToMember, b.ToGen, b.At, orNone(b.AfterFault))
	}
	for _, d := range f.DoubleOwners {
		fmt.Fprintf(w, "  two owners: generation %d partition %d: %s\n", d.Generation, d.Partition, strings.Join(d.Members, ", "))
	}
	for _, e := range r.Errors {
		fmt.Fprintf(w, "run error: %s\n", e)
	}
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func (r *report) countsText() string {
	var parts []string
	for _, k := range faultKinds {
		parts = append(parts, fmt.Sprintf("%s %d", k, r.FaultCounts[k]))
	}
	return strings.Join(parts, ", ")
}

// writeMarkdown writes dir/FAULTS.md.
func (r *report) writeMarkdown(dir, note string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# Fault workload results\n\n")
	fmt.Fprintf(&b, "Written by `go run ./scripts/fault` (`make fault`); see docs/OPERATIONS.md,\n")
	fmt.Fprintf(&b, "\"The fault workload\", for what it runs and checks. Rerun with the same\n")
	fmt.Fprintf(&b, "`-seed` for the same fault schedule.\n\n")
	if note != "" {
		fmt.Fprintf(&b, "%s\n\n", note)
	}
	fmt.Fprintf(&b, "| run | value |\n| --- | --- |\n")
	fmt.Fprintf(&b, "| started | %s |\n", r.Started.UTC().Format(time.RFC3339))
	fmt.Fprintf(&b, "| seed | %d |\n| length | %s |\n| faults | %d (%s) |\n", r.Seed, r.Duration, len(r.Faults), r.countsText())
	fmt.Fprintf(&b, "| topic | %s, %d partitions |\n| records in the log | %d |\n", r.Topic, r.Partitions, r.Findings.LogRecords)
	fmt.Fprintf(&b, "| group | %s: %d consumed, %d commits accepted, %d refused, %d assignments over %d generations |\n",
		r.Group, r.Consumed, r.Findings.Commits, r.CommitErrs, r.Findings.Assignments, r.Findings.Generations)
	fmt.Fprintf(&b, "| anomalies | %d |\n\n", r.Anomalies)
	fmt.Fprintf(&b, "Summary as the tool printed it:\n\n```\n")
	r.summary(&b)
	fmt.Fprintf(&b, "```\n\nFaults in the order they ran:\n\n| # | kind | target | start (s into the run) | took |\n| --- | --- | --- | --- | --- |\n")
	for _, f := range r.Faults {
		target := "iggy"
		if f.Kind == faultRolling {
			target = "all sidecars"
		} else if f.Target >= 0 {
			target = fmt.Sprintf("sidecar%d", f.Target)
		}
		fmt.Fprintf(&b, "| %d | %s | %s | %.1f | %s |\n", f.N, f.Kind, target, f.Start.Sub(r.Started).Seconds(), f.End.Sub(f.Start).Round(100*time.Millisecond))
	}
	return os.WriteFile(filepath.Join(dir, "FAULTS.md"), []byte(b.String()), 0o644)
}
