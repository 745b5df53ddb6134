package bridge_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// An acks=0 producer that writes and closes at once (kafka-go's Writer
// with its stock settings does) loses nothing: every request the sidecar
// received is written to Iggy, even those queued behind the close, as
// Kafka's request handlers finish what they received.
func TestAcksZeroThenCloseLosesNothing(t *testing.T) {
	s := startStack(t)
	admin := s.kgoClient(t)
	if c := topicCodes(createTopics(t, admin, false, createTopicReq("acks0-close", 1, 1, nil))); c["acks0-close"] != 0 {
		t.Fatalf("create: %v", c)
	}
	const n = 50
	r := dialRaw(t, s.Addr)
	for i := range n {
		req := kmsg.NewPtrProduceRequest()
		req.Acks = 0
		req.TimeoutMillis = 10000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "acks0-close"
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = buildBatch(time.Now().UnixMilli(), 0, []testRecord{{value: fmt.Appendf(nil, "v%d", i)}}, nil, 0)
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		r.send(req, 9)
	}
	_ = r.conn.Close()

	adm := kadm.NewClient(admin)
	deadline := time.Now().Add(20 * time.Second)
	var end int64
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		offs, err := adm.ListEndOffsets(ctx, "acks0-close")
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		o, _ := offs.Lookup("acks0-close", 0)
		if end = o.Offset; end >= n {
			break
		}
		time.Sleep(20 * time.Millisecond) // polling for the condition, not synchronising
	}
	if end != n {
		t.Fatalf("end offset %d after %d acks=0 produces and a close, want %d", end, n, n)
	}
	got := consumeAll(t, s, "acks0-close", 0, n)
	for i, rec := range got {
		if string(rec.Value) != fmt.Sprintf("v%d", i) {
			t.Fatalf("record %d = %q: out of order or lost", i, rec.Value)
		}
	}
}
