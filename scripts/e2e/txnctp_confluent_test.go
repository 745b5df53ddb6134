//go:build cgo

package e2e

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// TestTxnProducerConfluent: the consume-transform-produce scenario
// (txnctp_test.go) with librdkafka (confluent-kafka-go) on every target: a
// consumer of the input in a consumer group (subscribe, read_committed, no
// auto commit) and a transactional producer (init_transactions, begin,
// produce to both output partitions, send_offsets_to_transaction with the
// consumer's group metadata, commit; then the same aborted, its records
// flushed first so that they reach the broker). A librdkafka read_committed
// consumer reads the committed transaction's records once and none of the
// aborted one's, a read_uncommitted one all 20; franz-go checks the same
// and the group's committed offset (10).
func TestTxnProducerConfluent(t *testing.T) {
	for _, tg := range targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			c := ctpSetup(t, tg, "ctp-rdk")
			confluentCTP(t, tg, c)
			got := confluentReadTopic(t, tg, c.out, 2, "read_committed", ctpPerTxn)
			slices.Sort(got)
			if want := ctpWantCommitted(); !slices.Equal(got, want) {
				t.Errorf("%s: librdkafka read_committed read %v, want %v once each", tg.Name, got, want)
			}
			if all := confluentReadTopic(t, tg, c.out, 2, "read_uncommitted", ctpInputs); len(all) != ctpInputs {
				t.Errorf("%s: librdkafka read_uncommitted read %d records (%v), want %d", tg.Name, len(all), all, ctpInputs)
			}
			ctpCheck(t, tg, c)
		})
	}
}

// confluentCTP runs the two transactions (commit, then abort).
func confluentCTP(t *testing.T, tg Target, c ctpTopics) {
	t.Helper()
	ctx := testCtx(t, 90*time.Second)
	cons, err := kafka.NewConsumer(&kafka.ConfigMap{
		"bootstrap.servers":  tg.Bootstrap,
		"group.id":           c.group,
		"isolation.level":    "read_committed",
		"enable.auto.commit": false,
		"auto.offset.reset":  "earliest",
	})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	if err := cons.Subscribe(c.in, nil); err != nil {
		t.Fatal(err)
	}
	prod, err := kafka.NewProducer(&kafka.ConfigMap{
		"bootstrap.servers": tg.Bootstrap,
		"transactional.id":  c.txid,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	go func() { // delivery reports and errors: drained, failures reported
		for ev := range prod.Events() {
			switch e := ev.(type) {
			case *kafka.Message:
				if e.TopicPartition.Error != nil {
					t.Errorf("%s: delivery: %v", tg.Name, e.TopicPartition.Error)
				}
			case kafka.Error:
				t.Errorf("%s: producer: %v", tg.Name, e)
			}
		}
	}()
	if err := prod.InitTransactions(ctx); err != nil {
		t.Fatalf("%s: init_transactions: %v", tg.Name, err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for i, commit := range []bool{true, false} {
		if err := prod.BeginTransaction(); err != nil {
			t.Fatalf("%s: begin %d: %v", tg.Name, i, err)
		}
		var next kafka.Offset
		for n := 0; n < ctpPerTxn; {
			if time.Now().After(deadline) {
				t.Fatalf("%s: transaction %d consumed %d records, want %d", tg.Name, i, n, ctpPerTxn)
			}
			switch ev := cons.Poll(100).(type) {
			case *kafka.Message:
				out := fmt.Sprintf("out-%s", ev.Value)
				if err := prod.Produce(&kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &c.out, Partition: int32(n % 2)}, Value: []byte(out)}, nil); err != nil {
					t.Fatalf("%s: produce: %v", tg.Name, err)
				}
				next = ev.TopicPartition.Offset + 1
				n++
			case kafka.Error:
				t.Fatalf("%s: consumer: %v", tg.Name, ev)
			}
		}
		meta, err := cons.GetConsumerGroupMetadata()
		if err != nil {
			t.Fatal(err)
		}
		offs := []kafka.TopicPartition{{Topic: &c.in, Partition: 0, Offset: next}}
		if err := prod.SendOffsetsToTransaction(ctx, offs, meta); err != nil {
			t.Fatalf("%s: send_offsets_to_transaction %d: %v", tg.Name, i, err)
		}
		if commit {
			if err := prod.CommitTransaction(ctx); err != nil {
				t.Fatalf("%s: commit_transaction: %v", tg.Name, err)
			}
			continue
		}
		// abort_transaction purges what is still queued: flush first so
		// the aborted records are on the broker.
		if left := prod.Flush(30_000); left != 0 {
			t.Fatalf("%s: %d records not flushed", tg.Name, left)
		}
		if err := prod.AbortTransaction(ctx); err != nil {
			t.Fatalf("%s: abort_transaction: %v", tg.Name, err)
		}
	}
}

// confluentReadTopic reads partitions 0..parts-1 of topic from the start at
// the given isolation level until it has n values, then for one more second
// (to see anything it must not read).
func confluentReadTopic(t *testing.T, tg Target, topic string, parts int32, level string, n int) []string {
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
	var tps []kafka.TopicPartition
	for p := range parts {
		tps = append(tps, kafka.TopicPartition{Topic: &topic, Partition: p, Offset: kafka.OffsetBeginning})
	}
	if err := c.Assign(tps); err != nil {
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
