package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// One consumer-protocol (KIP-848) group across three sidecars: three
// `kafka-iggy serve` processes of one coordination domain on one
// `kafka-iggy embedded-iggy`, a franz-go consumer with ServerSideBalancer
// behind each. The group's owner assigns: every partition is owned by
// exactly one member, ConsumerGroupDescribe through every sidecar shows the
// same Stable group, and every record is consumed.
func TestConsumerProtocolAcrossSidecars(t *testing.T) {
	bin := buildSidecarBinary(t)
	iggyAddr := acrossProc(t, bin, nil, "embedded Iggy server listening", "listen", "embedded-iggy", "--listen", "127.0.0.1:0")
	sidecars := make([]string, 3)
	for i := range sidecars {
		sidecars[i] = acrossProc(t, bin, []string{
			"KAFKA_IGGY_EMBEDDED__MODE=off",
			"KAFKA_IGGY_IGGY__ADDRESS=" + iggyAddr,
			"KAFKA_IGGY_LISTENER__ADDRESS=127.0.0.1:0",
			"KAFKA_IGGY_ADMIN__ADDRESS=127.0.0.1:0",
			"KAFKA_IGGY_PEERS__ADDRESS=127.0.0.1:0",
			"KAFKA_IGGY_PEERS__SECRET=" + acrossSecret,
			"KAFKA_IGGY_CONSUMER_GROUPS__HEARTBEAT_INTERVAL=300ms",
			"KAFKA_IGGY_LOG__FORMAT=json",
		}, "ready for Kafka clients", "kafka_address", "serve")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const topic, group, partitions, records = "cg-across", "cg-across-group", 6, 300
	admCl, err := kgo.NewClient(kgo.SeedBrokers(sidecars[0]))
	if err != nil {
		t.Fatal(err)
	}
	defer admCl.Close()
	if _, err := kadm.NewClient(admCl).CreateTopic(ctx, partitions, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	produce := func(from int) {
		prod, err := kgo.NewClient(kgo.SeedBrokers(sidecars[1]), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
		if err != nil {
			t.Fatal(err)
		}
		defer prod.Close()
		var rs []*kgo.Record
		for i := from; i < from+records; i++ {
			rs = append(rs, &kgo.Record{Value: fmt.Appendf(nil, "x%05d", i)})
		}
		if err := prod.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	produce(0)

	var mu sync.Mutex
	got := map[string]bool{}
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	for i, s := range sidecars {
		cl, err := kgo.NewClient(kgo.SeedBrokers(s), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.ServerSideBalancer(),
			kgo.Balancers(kgo.CooperativeStickyBalancer()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.FetchMaxWait(300*time.Millisecond), kgo.ClientID(fmt.Sprint("cg-across-", i)))
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer cl.Close()
			for ctx.Err() == nil {
				cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
					mu.Lock()
					got[string(r.Value)] = true
					mu.Unlock()
				})
			}
		}()
	}

	describe := func(s string) (string, error) {
		cl, err := kgo.NewClient(kgo.SeedBrokers(s))
		if err != nil {
			return "", err
		}
		defer cl.Close()
		req := kmsg.NewPtrConsumerGroupDescribeRequest()
		req.Groups = []string{group}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return "", err
		}
		g := resp.Groups[0]
		if g.ErrorCode != 0 || g.State != "Stable" || len(g.Members) != 3 {
			return "", fmt.Errorf("code %d state %q, %d members", g.ErrorCode, g.State, len(g.Members))
		}
		seen := map[int32]bool{}
		for _, m := range g.Members {
			n := 0
			for _, tp := range m.Assignment.TopicPartitions {
				for _, p := range tp.Partitions {
					if seen[p] {
						return "", fmt.Errorf("partition %d owned twice", p)
					}
					seen[p] = true
					n++
				}
			}
			if n != partitions/3 {
				return "", fmt.Errorf("member %s owns %d partitions", m.MemberID, n)
			}
		}
		return fmt.Sprintf("epoch %d, %d members", g.Epoch, len(g.Members)), nil
	}
	var last error
	for {
		var views []string
		last = nil
		for _, s := range sidecars {
			v, err := describe(s)
			if err != nil {
				last = fmt.Errorf("through %s: %w", s, err)
				break
			}
			views = append(views, v)
		}
		if last == nil && views[0] == views[1] && views[1] == views[2] {
			break
		}
		if last == nil {
			last = fmt.Errorf("the sidecars disagree: %v", views)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the group never split evenly and stably: %v", last)
		case <-time.After(200 * time.Millisecond):
		}
	}
	produce(records)
	for {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n == 2*records {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("consumed %d of %d records", n, 2*records)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
