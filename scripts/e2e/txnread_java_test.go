package e2e

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// TestReadCommittedJava (issue 25): the Java consumer of Kafka 4.x
// (kafka-console-consumer --isolation-level) reads txnTopic's partition from
// the start on every target: at read_committed the committed records only,
// at read_uncommitted every record and no marker. It runs until 4 s pass
// without a record (--timeout-ms), so it shows anything it must not read.
func TestReadCommittedJava(t *testing.T) {
	version := kafka4Version()
	kafkaToolsReady(version)(t)
	for _, tg := range targets(t) {
		if tg.Reference && !tg.Kafka {
			continue
		}
		t.Run(tg.Name, func(t *testing.T) {
			topic := txnTopic(t, tg)
			for _, c := range []struct {
				level string
				want  []string
			}{
				{"read_committed", []string{"c0", "c1", "c2"}},
				{"read_uncommitted", []string{"c0", "c1", "c2", "a0", "a1", "o0", "o1"}},
			} {
				out := runKafkaTool(t, version, 90*time.Second, "console-consumer", "--bootstrap-server", tg.Bootstrap,
					"--topic", topic, "--partition", "0", "--offset", "earliest", "--isolation-level", c.level, "--timeout-ms", "4000")
				got := strings.Fields(out)
				if !slices.Equal(got, c.want) {
					t.Errorf("%s: %s read %v, want %v", tg.Name, c.level, got, c.want)
				}
			}
		})
	}
}
