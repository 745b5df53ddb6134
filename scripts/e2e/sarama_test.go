package e2e

import (
	"testing"
	"time"

	"github.com/IBM/sarama"
)

// saramaVersion is the protocol version sarama is told the broker speaks.
// sarama picks its request versions from this setting (it does not negotiate
// them from ApiVersions); 2.8 is accepted by every 3.x and 4.x broker and
// needs record batches v2 (headers, zstd) for Produce v8 / Fetch v12.
var saramaVersion = sarama.V2_8_0_0

func saramaConfig(codec string) *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.Version = saramaVersion
	cfg.ClientID = "kafka-iggy-e2e-sarama"
	cfg.Net.DialTimeout = 10 * time.Second
	cfg.Net.MaxOpenRequests = 1
	cfg.Metadata.AllowAutoTopicCreation = false
	cfg.Producer.Return.Successes = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Producer.Flush.Frequency = 20 * time.Millisecond
	cfg.Producer.Compression = map[string]sarama.CompressionCodec{
		"none": sarama.CompressionNone, "gzip": sarama.CompressionGZIP, "snappy": sarama.CompressionSnappy,
		"lz4": sarama.CompressionLZ4, "zstd": sarama.CompressionZSTD,
	}[codec]
	cfg.Consumer.Return.Errors = true
	cfg.Consumer.MaxWaitTime = 500 * time.Millisecond
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	return cfg
}

// TestSaramaRoundTrip: IBM sarama's SyncProducer (manual partitioner) and
// PartitionConsumer, every canonical case unadapted.
func TestSaramaRoundTrip(t *testing.T) {
	runRoundTrips(t, roundTripClient{
		name:    "sarama",
		records: canonicalRecords,
		produce: saramaProduce,
		consume: saramaConsume,
	})
}

func saramaProduce(t *testing.T, tg Target, topic, codec string, recs []Rec) []Rec {
	t.Helper()
	p, err := sarama.NewSyncProducer([]string{tg.Bootstrap}, saramaConfig(codec))
	if err != nil {
		t.Fatalf("%s: sarama producer: %v", tg.Name, err)
	}
	defer p.Close()
	msgs := make([]*sarama.ProducerMessage, len(recs))
	for i, r := range recs {
		m := &sarama.ProducerMessage{Topic: topic, Partition: r.Partition, Timestamp: time.UnixMilli(r.Timestamp)}
		if r.Key != nil {
			m.Key = sarama.ByteEncoder(r.Key)
		}
		if r.Value != nil {
			m.Value = sarama.ByteEncoder(r.Value)
		}
		for _, h := range r.Headers {
			m.Headers = append(m.Headers, sarama.RecordHeader{Key: []byte(h.Key), Value: h.Value})
		}
		msgs[i] = m
	}
	if err := p.SendMessages(msgs); err != nil {
		t.Fatalf("%s: sarama SendMessages (%s): %v", tg.Name, codec, err)
	}
	out := cloneRecs(recs)
	for i, m := range msgs {
		out[i].Partition = m.Partition
		out[i].Offset = m.Offset
	}
	return out
}

func saramaConsume(t *testing.T, tg Target, topic string, partitions int32, want int) []Rec {
	t.Helper()
	c, err := sarama.NewConsumer([]string{tg.Bootstrap}, saramaConfig("none"))
	if err != nil {
		t.Fatalf("%s: sarama consumer: %v", tg.Name, err)
	}
	defer c.Close()
	msgs := make(chan *sarama.ConsumerMessage, want)
	errs := make(chan error, partitions)
	for p := range partitions {
		pc, err := c.ConsumePartition(topic, p, sarama.OffsetOldest)
		if err != nil {
			t.Fatalf("%s: sarama ConsumePartition %s[%d]: %v", tg.Name, topic, p, err)
		}
		defer pc.AsyncClose()
		go func() {
			for m := range pc.Messages() {
				msgs <- m
			}
		}()
		go func() {
			for e := range pc.Errors() {
				errs <- e
			}
		}()
	}
	deadline := time.After(20 * time.Second)
	var out []Rec
	for len(out) < want {
		select {
		case m := <-msgs:
			out = append(out, fromSarama(m))
		case e := <-errs:
			t.Fatalf("%s: sarama consumer: %v", tg.Name, e)
		case <-deadline:
			t.Fatalf("%s: sarama consumer read %d of %d records before the deadline", tg.Name, len(out), want)
		}
	}
	return out
}

func fromSarama(m *sarama.ConsumerMessage) Rec {
	r := Rec{Partition: m.Partition, Offset: m.Offset, Key: m.Key, Value: m.Value, Timestamp: m.Timestamp.UnixMilli()}
	for _, h := range m.Headers {
		r.Headers = append(r.Headers, Header{string(h.Key), h.Value})
	}
	return r
}
