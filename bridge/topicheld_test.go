package bridge_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafka-iggy/kafka-iggy/bridge"
)

// max.message.bytes is enforced as Kafka does: a topic's own value, else
// the gateway's topics.max_message_bytes; a batch above it is refused with
// MESSAGE_TOO_LARGE and nothing of it is stored; raising the limit with an
// alter lets the same record through.
func TestMaxMessageBytes(t *testing.T) {
	s := startStack(t, func(o *stackOpts) { o.bridge.Topics.MaxMessageBytes = 64 << 10 })
	admin := s.kgoClient(t)
	if c := topicCodes(createTopics(t, admin, false,
		createTopicReq("mmb-small", 1, 1, map[string]string{"max.message.bytes": "2000"}),
		createTopicReq("mmb-gateway", 1, 1, nil),
		createTopicReq("mmb-bad", 1, 1, map[string]string{"max.message.bytes": "-1"}))); c["mmb-small"] != 0 || c["mmb-gateway"] != 0 ||
		c["mmb-bad"] != kerr.InvalidConfig.Code {
		t.Fatalf("create: %v", c)
	}
	if c := describeTopic(t, admin, "mmb-small", true, "max.message.bytes")["max.message.bytes"]; *c.Value != "2000" || len(c.ConfigSynonyms) != 3 {
		t.Errorf("mmb-small max.message.bytes: %s %+v", *c.Value, c.ConfigSynonyms)
	}
	if c := describeTopic(t, admin, "mmb-gateway", false, "max.message.bytes")["max.message.bytes"]; *c.Value != "65536" || c.Source != kmsg.ConfigSourceStaticBrokerConfig {
		t.Errorf("mmb-gateway max.message.bytes: %s source %d", *c.Value, c.Source)
	}

	// The producer's own limit is well above the broker's, so the refusal
	// is the sidecar's.
	p := s.kgoClient(t, kgo.ProducerBatchMaxBytes(16<<20), kgo.MaxBufferedBytes(64<<20), kgo.RecordRetries(0))
	produce := func(topic string, size int) error {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		v := make([]byte, size)
		_, _ = rand.Read(v) // incompressible: the batch is as large as the record
		return p.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: v}).FirstErr()
	}
	for _, tc := range []struct {
		topic string
		size  int
		want  error
	}{
		{"mmb-small", 1000, nil},
		{"mmb-small", 3000, kerr.MessageTooLarge},
		{"mmb-gateway", 60 << 10, nil},
		{"mmb-gateway", 70 << 10, kerr.MessageTooLarge},
	} {
		if err := produce(tc.topic, tc.size); !errors.Is(err, tc.want) && !(err == nil && tc.want == nil) {
			t.Errorf("%s, %d bytes: %v, want %v", tc.topic, tc.size, err, tc.want)
		}
	}

	// Raise the topic's limit: the same record passes.
	adm := kadm.NewClient(admin)
	rs, err := adm.AlterTopicConfigs(adminCtx(t), []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "max.message.bytes", Value: strp("1000000")}}, "mmb-small")
	if err != nil || rs[0].Err != nil {
		t.Fatalf("alter: %v %+v", err, rs)
	}
	if err := produce("mmb-small", 3000); err != nil {
		t.Errorf("after raising max.message.bytes: %v", err)
	}
	// Deleting the topic's value puts it back on the gateway's.
	rs, err = adm.AlterTopicConfigs(adminCtx(t), []kadm.AlterConfig{{Op: kadm.DeleteConfig, Name: "max.message.bytes"}}, "mmb-small")
	if err != nil || rs[0].Err != nil {
		t.Fatalf("alter delete: %v %+v", err, rs)
	}
	if err := produce("mmb-small", 70<<10); !errors.Is(err, kerr.MessageTooLarge) {
		t.Errorf("after deleting max.message.bytes, 70 KiB: %v", err)
	}

	// What was acknowledged is all there is: two records on each topic.
	offs, err := adm.ListEndOffsets(adminCtx(t), "mmb-small", "mmb-gateway")
	if err != nil {
		t.Fatal(err)
	}
	for _, topic := range []string{"mmb-small", "mmb-gateway"} {
		want := int64(2)
		if topic == "mmb-gateway" {
			want = 1
		}
		if o, _ := offs.Lookup(topic, 0); o.Offset != want {
			t.Errorf("%s end offset %d, want %d", topic, o.Offset, want)
		}
	}
}

func TestMaxMessageBytesConfigValidated(t *testing.T) {
	cfg := bridge.DefaultConfig()
	cfg.Topics.MaxMessageBytes = 0
	if err := cfg.Validate(); err == nil || !bytes.Contains([]byte(err.Error()), []byte("topics.max_message_bytes")) {
		t.Errorf("validate: %v", err)
	}
}
