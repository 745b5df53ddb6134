package e2e

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	kafka "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/compress"
)

// TestKafkaGoRoundTrip: segmentio/kafka-go's Writer (a balancer that keeps
// the partition each record asks for; offsets from its Completion callback)
// and a partition Reader per partition. kafka-go negotiates request versions
// from ApiVersions itself: no version setting.
//
// What kafka-go cannot express, and how the test adapts (franz-go's read-back
// still checks every produced record exactly):
//   - Producing: kafka-go's record encoder writes the current time for a
//     CreateTime of 0 ms, so the "CreateTime 0 ms" record is sent at 1 ms.
//   - Consuming: the Reader returns nil for an empty key, an empty value and
//     an empty header value, so its own view compares those as null. It also
//     turns a CreateTime <= 0 into a zero time.Time (fromKafkaGo maps that
//     back to 0).
func TestKafkaGoRoundTrip(t *testing.T) {
	runRoundTrips(t, roundTripClient{
		name: "kafka-go",
		records: func() []Rec {
			return withTimestamp(canonicalRecords(), 0, 1)
		},
		produce:      kafkaGoProduce,
		consume:      kafkaGoConsume,
		consumerView: emptyAsNull,
	})
}

// emptyAsNull is a consumer's view that cannot tell empty from null bytes.
func emptyAsNull(rs []Rec) []Rec {
	for i := range rs {
		if len(rs[i].Key) == 0 {
			rs[i].Key = nil
		}
		if len(rs[i].Value) == 0 {
			rs[i].Value = nil
		}
		for j := range rs[i].Headers {
			if len(rs[i].Headers[j].Value) == 0 {
				rs[i].Headers[j].Value = nil
			}
		}
	}
	return rs
}

var kafkaGoCodecs = map[string]compress.Compression{
	"none": 0, "gzip": kafka.Gzip, "snappy": kafka.Snappy, "lz4": kafka.Lz4, "zstd": kafka.Zstd,
}

func kafkaGoProduce(t *testing.T, tg Target, topic, codec string, recs []Rec) []Rec {
	t.Helper()
	var (
		mu   sync.Mutex
		done = map[int][]kafka.Message{} // partition -> completed messages, in order
		werr error
	)
	// A Transport of its own: the shared default one caches metadata and
	// would not see the topic the test just created.
	tr := &kafka.Transport{DialTimeout: 10 * time.Second}
	defer tr.CloseIdleConnections()
	w := &kafka.Writer{
		Addr:      kafka.TCP(tg.Bootstrap),
		Transport: tr,
		Topic:     topic,
		// The record's partition is chosen by the test, as with a manual
		// partitioner in the other clients.
		Balancer:     kafka.BalancerFunc(func(m kafka.Message, _ ...int) int { return m.Partition }),
		Compression:  kafkaGoCodecs[codec],
		RequiredAcks: kafka.RequireAll,
		BatchSize:    len(recs),
		BatchTimeout: 20 * time.Millisecond,
		WriteTimeout: 15 * time.Second,
		ReadTimeout:  15 * time.Second,
		Completion: func(ms []kafka.Message, err error) {
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				werr = errors.Join(werr, err)
			}
			for _, m := range ms {
				done[m.Partition] = append(done[m.Partition], m)
			}
		},
	}
	defer w.Close()
	msgs := make([]kafka.Message, len(recs))
	for i, r := range recs {
		m := kafka.Message{Partition: int(r.Partition), Key: r.Key, Value: r.Value, Time: time.UnixMilli(r.Timestamp)}
		for _, h := range r.Headers {
			m.Headers = append(m.Headers, kafka.Header{Key: h.Key, Value: h.Value})
		}
		msgs[i] = m
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatalf("%s: kafka-go WriteMessages (%s): %v", tg.Name, codec, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if werr != nil {
		t.Fatalf("%s: kafka-go writer completion (%s): %v", tg.Name, codec, werr)
	}
	// Completion reports each partition's messages in the order written;
	// match them back to the records by that order.
	out := cloneRecs(recs)
	next := map[int]int{}
	for i := range out {
		p := int(recs[i].Partition)
		list := done[p]
		if next[p] >= len(list) {
			t.Fatalf("%s: kafka-go Completion reported %d messages for partition %d, fewer than written", tg.Name, len(list), p)
		}
		m := list[next[p]]
		next[p]++
		if !sameBytes(m.Key, recs[i].Key) || !sameBytes(m.Value, recs[i].Value) {
			t.Fatalf("%s: kafka-go Completion order does not match the write order at record %d [%s]", tg.Name, i, recs[i].Label)
		}
		out[i].Partition = int32(m.Partition)
		out[i].Offset = m.Offset
	}
	return out
}

func kafkaGoConsume(t *testing.T, tg Target, topic string, partitions int32, want int) []Rec {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// High watermarks tell how many records each partition's reader must get.
	ends := listEnds(t, tg, topic)
	var out []Rec
	for p := range partitions {
		n := int(ends[p])
		if n == 0 {
			continue
		}
		r := kafka.NewReader(kafka.ReaderConfig{
			Brokers:   []string{tg.Bootstrap},
			Topic:     topic,
			Partition: int(p),
			MinBytes:  1,
			MaxBytes:  10 << 20,
			MaxWait:   200 * time.Millisecond,
		})
		if err := r.SetOffset(kafka.FirstOffset); err != nil {
			t.Fatalf("%s: kafka-go SetOffset: %v", tg.Name, err)
		}
		for range n {
			m, err := r.ReadMessage(ctx)
			if err != nil {
				r.Close()
				t.Fatalf("%s: kafka-go reader %s[%d] after %d records: %v", tg.Name, topic, p, len(out), err)
			}
			out = append(out, fromKafkaGo(m))
		}
		r.Close()
	}
	if len(out) != want {
		t.Errorf("%s: kafka-go read %d records (high watermarks %v), want %d", tg.Name, len(out), ends, want)
	}
	return out
}

func fromKafkaGo(m kafka.Message) Rec {
	r := Rec{Partition: int32(m.Partition), Offset: m.Offset, Key: m.Key, Value: m.Value}
	if !m.Time.IsZero() {
		r.Timestamp = m.Time.UnixMilli()
	}
	for _, h := range m.Headers {
		r.Headers = append(r.Headers, Header{h.Key, h.Value})
	}
	return r
}
