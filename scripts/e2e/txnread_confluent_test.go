//go:build cgo

package e2e

import (
	"slices"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// TestReadCommittedConfluent (issue 25): librdkafka (confluent-kafka-go)
// reads txnTopic's partition from the start on every target: at
// read_committed the committed records only (the aborted ones filtered
// through aborted_transactions and the control batches, nothing from the
// open transaction), at read_uncommitted every record and no marker.
func TestReadCommittedConfluent(t *testing.T) {
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
				if got := confluentReadAll(t, tg, topic, c.level, len(c.want)); !slices.Equal(got, c.want) {
					t.Errorf("%s: %s read %v, want %v", tg.Name, c.level, got, c.want)
				}
			}
		})
	}
}

// confluentReadAll reads partition 0 of topic from the start until it has
// n values, then for one more second (to see anything it must not read).
func confluentReadAll(t *testing.T, tg Target, topic, level string, n int) []string {
	t.Helper()
	c, err := kafka.NewConsumer(&kafka.ConfigMap{
		"bootstrap.servers":  tg.Bootstrap,
		"group.id":           uniqueTopic("txn-read-group"),
		"isolation.level":    level,
		"enable.auto.commit": false,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Assign([]kafka.TopicPartition{{Topic: &topic, Partition: 0, Offset: kafka.OffsetBeginning}}); err != nil {
		t.Fatal(err)
	}
	var got []string
	deadline := time.Now().Add(30 * time.Second)
	var extra time.Time
	for time.Now().Before(deadline) && (extra.IsZero() || time.Now().Before(extra)) {
		switch ev := c.Poll(100).(type) {
		case *kafka.Message:
			got = append(got, string(ev.Value))
		case kafka.Error:
			t.Fatalf("%s: %s consumer: %v", tg.Name, level, ev)
		}
		if len(got) >= n && extra.IsZero() {
			extra = time.Now().Add(time.Second)
		}
	}
	return got
}
