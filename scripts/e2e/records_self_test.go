package e2e

import (
	"strings"
	"testing"
)

// TestDiffRecordsIsStrict proves the shared assertion tells apart every
// difference a broker could introduce, so a passing round trip means exact.
func TestDiffRecordsIsStrict(t *testing.T) {
	base := canonicalRecords()
	for i := range base {
		base[i].Offset = int64(i)
	}
	if d := diffRecords(base, cloneRecs(base)); len(d) != 0 {
		t.Fatalf("identical sets differ: %v", d)
	}
	find := func(label string) int {
		for i, r := range base {
			if r.Label == label {
				return i
			}
		}
		t.Fatalf("no record %q", label)
		return -1
	}
	cases := []struct {
		name, field string
		mutate      func(rs []Rec)
	}{
		{"null key read as empty", "key", func(rs []Rec) { rs[find("null key")].Key = []byte{} }},
		{"empty key read as null", "key", func(rs []Rec) { rs[find("empty key")].Key = nil }},
		{"tombstone read as empty", "value", func(rs []Rec) { rs[find("tombstone")].Value = []byte{} }},
		{"empty value read as null", "value", func(rs []Rec) { rs[find("empty value")].Value = nil }},
		{"large key truncated", "key", func(rs []Rec) { i := find("300-byte key"); rs[i].Key = rs[i].Key[:255] }},
		{"duplicate headers reordered", "headers", func(rs []Rec) {
			h := rs[find("duplicate headers")].Headers
			h[0], h[2] = h[2], h[0]
		}},
		{"duplicate header dropped", "headers", func(rs []Rec) {
			i := find("duplicate headers")
			rs[i].Headers = rs[i].Headers[:3]
		}},
		{"empty header value read as null", "headers", func(rs []Rec) { rs[find("empty header value")].Headers[0].Value = nil }},
		{"0 ms read as now", "timestamp", func(rs []Rec) { rs[find("CreateTime 0 ms")].Timestamp = tsBase }},
		{"offset shifted", "offset", func(rs []Rec) { rs[find("far-past CreateTime")].Offset++ }},
		{"partition changed", "partition", func(rs []Rec) { rs[find("p1 first")].Partition = 0 }},
		{"record lost", "record count", func(rs []Rec) {}},
	}
	for _, c := range cases {
		got := cloneRecs(base)
		c.mutate(got)
		if c.name == "record lost" {
			got = got[1:]
		}
		d := diffRecords(base, got)
		if len(d) == 0 || !strings.Contains(strings.Join(d, "\n"), c.field) {
			t.Errorf("%s: diffRecords = %q, want a %s difference", c.name, d, c.field)
		}
	}
}

// TestTranscriptDiffs proves the differential comparison reports a changed,
// a missing and an extra field, and applies intended differences as written.
func TestTranscriptDiffs(t *testing.T) {
	mk := func(kv ...string) *transcript {
		tr := &transcript{}
		tr.add("step", kv...)
		return tr
	}
	ref := mk("a", "1", "b", "2")
	if d := transcriptDiffs("ref", "other", ref, mk("a", "1", "b", "2"), nil); len(d) != 0 {
		t.Errorf("equal transcripts differ: %q", d)
	}
	if d := transcriptDiffs("ref", "other", ref, mk("a", "1", "b", "3"), nil); len(d) != 1 {
		t.Errorf("changed field: %q, want 1 difference", d)
	}
	if d := transcriptDiffs("ref", "other", ref, mk("a", "1"), nil); len(d) != 1 {
		t.Errorf("missing field: %q, want 1 difference", d)
	}
	if d := transcriptDiffs("ref", "other", ref, mk("a", "1", "b", "2", "c", "4"), nil); len(d) != 1 {
		t.Errorf("extra field: %q, want 1 difference", d)
	}
	anyValue := []intendedDifference{{Step: "step", Field: "b", Why: "test"}}
	if d := transcriptDiffs("ref", "other", ref, mk("a", "1", "b", "3"), anyValue); len(d) != 0 {
		t.Errorf("intended difference (any value) reported: %q", d)
	}
	wants := []intendedDifference{{Step: "step", Field: "b", Want: "9", Why: "test"}}
	if d := transcriptDiffs("ref", "other", ref, mk("a", "1", "b", "3"), wants); len(d) != 1 {
		t.Errorf("intended difference with the wrong value: %q, want 1 difference", d)
	}
	if d := transcriptDiffs("ref", "other", ref, mk("a", "1", "b", "9"), wants); len(d) != 0 {
		t.Errorf("intended difference with the wanted value reported: %q", d)
	}
}
