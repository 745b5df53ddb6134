//go:build cgo

package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// TestConfluentRoundTrip: confluent-kafka-go with its bundled librdkafka
// (cgo; the default build, which needs only gcc). The producer runs with
// enable.idempotence=true and reports offsets in delivery reports; the
// consumer assigns every partition at the beginning (no group rebalance).
//
// Adaptation: librdkafka treats a CreateTime of 0 as "not set" and stamps the
// current time, so the "CreateTime 0 ms" record is sent at 1 ms.
func TestConfluentRoundTrip(t *testing.T) {
	runRoundTrips(t, roundTripClient{
		name: "confluent",
		records: func() []Rec {
			return withTimestamp(canonicalRecords(), 0, 1)
		},
		produce: confluentProduce,
		consume: confluentConsume,
	})
}

func confluentProduce(t *testing.T, tg Target, topic, codec string, recs []Rec) []Rec {
	t.Helper()
	p, err := kafka.NewProducer(&kafka.ConfigMap{
		"bootstrap.servers":  tg.Bootstrap,
		"client.id":          "kafka-iggy-e2e-confluent",
		"compression.type":   codec,
		"enable.idempotence": true,
		"acks":               "all",
		"linger.ms":          20,
		"message.timeout.ms": 20000,
	})
	if err != nil {
		t.Fatalf("%s: confluent producer: %v", tg.Name, err)
	}
	defer p.Close()
	dr := make(chan kafka.Event, len(recs))
	for i, r := range recs {
		m := &kafka.Message{
			TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: r.Partition},
			Key:            r.Key,
			Value:          r.Value,
			Timestamp:      time.UnixMilli(r.Timestamp),
			Opaque:         i,
		}
		for _, h := range r.Headers {
			m.Headers = append(m.Headers, kafka.Header{Key: h.Key, Value: h.Value})
		}
		if err := p.Produce(m, dr); err != nil {
			t.Fatalf("%s: confluent Produce record %d [%s]: %v", tg.Name, i, r.Label, err)
		}
	}
	out := cloneRecs(recs)
	deadline := time.After(25 * time.Second)
	for range recs {
		select {
		case ev := <-dr:
			m, ok := ev.(*kafka.Message)
			if !ok {
				t.Fatalf("%s: confluent delivery channel sent %T: %v", tg.Name, ev, ev)
			}
			i := m.Opaque.(int)
			if m.TopicPartition.Error != nil {
				t.Fatalf("%s: confluent delivery of record %d [%s] (%s): %v", tg.Name, i, recs[i].Label, codec, m.TopicPartition.Error)
			}
			out[i].Partition = m.TopicPartition.Partition
			out[i].Offset = int64(m.TopicPartition.Offset)
		case <-deadline:
			t.Fatalf("%s: confluent delivery reports missing after 25 s (%s)", tg.Name, codec)
		}
	}
	return out
}

func confluentConsume(t *testing.T, tg Target, topic string, partitions int32, want int) []Rec {
	t.Helper()
	c, err := kafka.NewConsumer(&kafka.ConfigMap{
		"bootstrap.servers":  tg.Bootstrap,
		"client.id":          "kafka-iggy-e2e-confluent",
		"group.id":           fmt.Sprintf("e2e-confluent-%s", topic), // required by the Go binding; only assign() is used
		"enable.auto.commit": false,
		"auto.offset.reset":  "earliest",
		"fetch.wait.max.ms":  100,
	})
	if err != nil {
		t.Fatalf("%s: confluent consumer: %v", tg.Name, err)
	}
	defer c.Close()
	var tps []kafka.TopicPartition
	for p := range partitions {
		tps = append(tps, kafka.TopicPartition{Topic: &topic, Partition: p, Offset: kafka.OffsetBeginning})
	}
	if err := c.Assign(tps); err != nil {
		t.Fatalf("%s: confluent Assign: %v", tg.Name, err)
	}
	deadline := time.Now().Add(20 * time.Second)
	var out []Rec
	for len(out) < want {
		if time.Now().After(deadline) {
			t.Fatalf("%s: confluent consumer read %d of %d records before the deadline", tg.Name, len(out), want)
		}
		m, err := c.ReadMessage(500 * time.Millisecond)
		if err != nil {
			if kerr, ok := err.(kafka.Error); ok && kerr.IsTimeout() {
				continue
			}
			t.Fatalf("%s: confluent ReadMessage: %v", tg.Name, err)
		}
		r := Rec{
			Partition: m.TopicPartition.Partition,
			Offset:    int64(m.TopicPartition.Offset),
			Key:       m.Key,
			Value:     m.Value,
			Timestamp: m.Timestamp.UnixMilli(),
		}
		for _, h := range m.Headers {
			r.Headers = append(r.Headers, Header{h.Key, h.Value})
		}
		out = append(out, r)
	}
	return out
}
