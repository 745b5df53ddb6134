package main

import (
	"context"
	"fmt"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafka-iggy/kafka-iggy/embedded/embedtest"
)

// TestMetricsMoveUnderProduceAndConsume scrapes the admin listener of a
// running sidecar process while a client produces, consumes in a group and
// sends a request that fails: the request, byte, upstream, error and group
// series move, and /readyz is 200.
func TestMetricsMoveUnderProduceAndConsume(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a sidecar process")
	}
	p := startSidecarProc(t, t.TempDir(), 5*time.Second)
	defer func() { _ = p.cmd.Process.Signal(syscall.SIGTERM); <-p.done }()
	// /readyz turns 200 once an Iggy session is up (the pool connects in
	// the background after the listener starts).
	embedtest.WaitFor(t, 30*time.Second, "/readyz 200", func() bool {
		r, err := http.Get("http://" + p.admin + "/readyz")
		if err != nil {
			return false
		}
		r.Body.Close()
		return r.StatusCode == http.StatusOK
	})
	metrics := "http://" + p.admin + "/metrics"
	before := embedtest.Scrape(t, metrics)

	const topic = "metered"
	pr, err := kgo.NewClient(kgo.SeedBrokers(p.kafka), kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := 0; i < 50; i++ {
		if err := pr.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	requestError(ctx, t, pr)

	co, err := kgo.NewClient(kgo.SeedBrokers(p.kafka), kgo.ConsumeTopics(topic), kgo.ConsumerGroup("metered-group"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer co.Close()
	got := 0
	for got < 50 && ctx.Err() == nil {
		fs := co.PollFetches(ctx)
		got += fs.NumRecords()
	}
	if got < 50 {
		t.Fatalf("consumed %d of 50", got)
	}
	after := embedtest.Scrape(t, metrics)

	moved := func(what string, name string, labels ...string) {
		t.Helper()
		if b, a := before.Value(name, labels...), after.Value(name, labels...); a <= b {
			t.Errorf("%s did not move: %v -> %v", what, b, a)
		}
	}
	moved("produce requests", "kafka_iggy_requests_total", "api", "Produce")
	moved("fetch requests", "kafka_iggy_requests_total", "api", "Fetch")
	moved("bytes in", "kafka_iggy_received_bytes_total")
	moved("bytes out", "kafka_iggy_sent_bytes_total")
	moved("upstream requests", "kafka_iggy_upstream_requests_total")
	moved("error codes", "kafka_iggy_errors_total", "api", "Metadata")
	if g := after.Value("kafka_iggy_groups"); g < 1 {
		t.Errorf("groups gauge %v, want >= 1 while a group consumes", g)
	}
	if s := after.Value("kafka_iggy_upstream_sessions_up"); s < 1 {
		t.Errorf("upstream sessions up %v", s)
	}
}

// requestError sends a request that fails with an error code: Metadata
// for a topic name Kafka refuses.
func requestError(ctx context.Context, t *testing.T, cl *kgo.Client) {
	t.Helper()
	md := kmsg.NewPtrMetadataRequest()
	bad := "no/slashes"
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = &bad
	md.Topics = append(md.Topics, mt)
	if _, err := md.RequestWith(ctx, cl); err != nil {
		t.Fatal(err)
	}
}
