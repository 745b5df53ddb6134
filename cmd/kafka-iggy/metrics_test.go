package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// scrape returns the samples of /metrics whose series name starts with one
// of the prefixes, keyed by the full series text (name and labels).
func scrape(t *testing.T, admin string) map[string]float64 {
	t.Helper()
	resp, err := http.Get("http://" + admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || line == "" {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			out[line[:i]] = v
		}
	}
	return out
}

// sum adds every sample whose series starts with prefix and contains all of
// the label fragments.
func sum(m map[string]float64, prefix string, frags ...string) float64 {
	total := 0.0
next:
	for k, v := range m {
		if !strings.HasPrefix(k, prefix) {
			continue
		}
		for _, f := range frags {
			if !strings.Contains(k, f) {
				continue next
			}
		}
		total += v
	}
	return total
}

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
	deadline := time.Now().Add(30 * time.Second)
	for {
		r, err := http.Get("http://" + p.admin + "/readyz")
		if err == nil {
			r.Body.Close()
			if r.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz not 200 within 30s: %v", err)
		}
		time.Sleep(20 * time.Millisecond) // polling an HTTP endpoint, not synchronising goroutines
	}
	before := scrape(t, p.admin)

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
	// A request that fails: Metadata for a topic name Kafka refuses.
	md := kmsg.NewPtrMetadataRequest()
	bad := "no/slashes"
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = &bad
	md.Topics = append(md.Topics, mt)
	if _, err := md.RequestWith(ctx, pr); err != nil {
		t.Fatal(err)
	}

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
	after := scrape(t, p.admin)

	moved := func(what string, prefix string, frags ...string) {
		t.Helper()
		if b, a := sum(before, prefix, frags...), sum(after, prefix, frags...); a <= b {
			t.Errorf("%s did not move: %v -> %v", what, b, a)
		}
	}
	moved("produce requests", "kafka_iggy_requests_total", `api="Produce"`)
	moved("fetch requests", "kafka_iggy_requests_total", `api="Fetch"`)
	moved("bytes in", "kafka_iggy_received_bytes_total")
	moved("bytes out", "kafka_iggy_sent_bytes_total")
	moved("upstream requests", "kafka_iggy_upstream_requests_total")
	moved("error codes", "kafka_iggy_errors_total", `api="Metadata"`)
	if g := sum(after, "kafka_iggy_groups"); g < 1 {
		t.Errorf("groups gauge %v, want >= 1 while a group consumes", g)
	}
	if s := sum(after, "kafka_iggy_upstream_sessions_up"); s < 1 {
		t.Errorf("upstream sessions up %v", s)
	}
}
