package e2e

import (
	"encoding/binary"
	"testing"
)

// Differential scenarios against Apache Kafka for the APIs of issue 28
// (fetch sessions, KIP-74, and the admin APIs a client or tool sends): each
// scenario records a transcript (differential_test.go) and runs on every
// target but kfake, which implements neither fetch sessions nor most of
// these APIs. Every target must show the values Kafka 4.4 gives (want), and
// with a real Kafka broker among the targets every other target is diffed
// field by field against it, except the intended differences (documented
// in docs/COMPATIBILITY.md).

// kafkaDiff runs scenario on every non-kfake target, checks each transcript
// against want, and diffs every other target against the Kafka broker when
// one runs.
func kafkaDiff(t *testing.T, scenario func(*testing.T, Target) *transcript, want map[string]map[string]string, intended []intendedDifference) {
	t.Helper()
	var kafkaTr *transcript
	trs := map[string]*transcript{}
	var names []string
	for _, tg := range targets(t) {
		if tg.Reference {
			continue
		}
		t.Run(tg.Name, func(t *testing.T) {
			tr := scenario(t, tg)
			for stepName, fields := range want {
				for key, w := range fields {
					if got, ok := tr.get(stepName, key); !ok {
						t.Errorf("%s: step %q has no field %q", tg.Name, stepName, key)
					} else if got != w && !excused(intended, tg, stepName, key, got) {
						t.Errorf("%s: step %q, %s: got %s, want %s (Kafka's behaviour)", tg.Name, stepName, key, shorten(got), w)
					}
				}
			}
			if t.Failed() || testing.Verbose() {
				t.Logf("%s transcript:\n%s", tg.Name, tr)
			}
			if tg.Kafka {
				kafkaTr = tr
				return
			}
			trs[tg.Name] = tr
			names = append(names, tg.Name)
		})
	}
	if kafkaTr == nil {
		t.Logf("no Kafka broker among the targets (KAFKA_IGGY_E2E_KAFKA=1 or KAFKA_IGGY_E2E_KAFKA_BOOTSTRAP): checked against Kafka's recorded values only")
		return
	}
	for _, name := range names {
		var mine []intendedDifference
		for _, d := range intended {
			if d.Target == "" || d.Target == "sidecar" || d.Target == name {
				mine = append(mine, d)
			}
		}
		diffTranscripts(t, "kafka", name, kafkaTr, trs[name], mine)
	}
}

// excused reports whether an intended difference lets tg show got.
func excused(intended []intendedDifference, tg Target, stepName, key, got string) bool {
	for _, d := range intended {
		if (d.Target == "" || d.appliesTo(tg)) && !tg.Kafka && d.Step == stepName && (d.Field == "" || d.Field == key) && (d.Want == "" || d.Want == got) {
			return true
		}
	}
	return false
}

// batchRecords counts the records of the complete record batches (v2) in b
// and returns the first one's offset (-1 when none); a partial batch at the
// end (a broker may cut one at the byte limit) is not counted, as a client
// drops it.
func batchRecords(b []byte) (n int, first int64) {
	first = -1
	for len(b) >= 61 {
		size := int(binary.BigEndian.Uint32(b[8:12])) + 12
		if size > len(b) {
			break
		}
		if first < 0 {
			first = int64(binary.BigEndian.Uint64(b[0:8]))
		}
		n += int(binary.BigEndian.Uint32(b[57:61]))
		b = b[size:]
	}
	return n, first
}
