package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/kafka-iggy/kafka-iggy/bridge/cluster"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// bigMetaBalancer is the range balancer with 5,000 bytes of user data in
// every member's JoinGroup metadata.
type bigMetaBalancer struct{ kgo.GroupBalancer }

func (b bigMetaBalancer) JoinGroupMetadata(topics []string, _ map[string][]int32, _ int32) []byte {
	m := kmsg.NewConsumerMemberMetadata()
	m.Topics = topics
	m.UserData = make([]byte, 5000)
	return m.AppendTo(nil)
}

// TestLargeJoinGroupAcrossSidecars: a group whose JoinGroup requests and
// answers are larger than one peer frame (peers.max_frame_bytes 4096;
// each member's metadata 5 KB, the leader's answer 20 KB) rebalances when
// its owner is another sidecar: four franz-go members on sidecar 0, the
// group owned by sidecar 1, every partition assigned once and every record
// consumed.
func TestLargeJoinGroupAcrossSidecars(t *testing.T) {
	bin := buildSidecarBinary(t)
	iggyAddr := acrossProc(t, bin, nil, "embedded Iggy server listening", "listen", "embedded-iggy", "--listen", "127.0.0.1:0")
	sidecars := make([]string, 2)
	logs := make([]*acrossLog, 2)
	for i := range sidecars {
		sidecars[i], logs[i] = acrossProcLog(t, bin, []string{
			"KAFKA_IGGY_EMBEDDED__MODE=off",
			"KAFKA_IGGY_IGGY__ADDRESS=" + iggyAddr,
			"KAFKA_IGGY_LISTENER__ADDRESS=127.0.0.1:0",
			"KAFKA_IGGY_ADMIN__ADDRESS=127.0.0.1:0",
			"KAFKA_IGGY_PEERS__ADDRESS=127.0.0.1:0",
			"KAFKA_IGGY_PEERS__SECRET=" + acrossSecret,
			"KAFKA_IGGY_PEERS__MAX_FRAME_BYTES=4096",
			"KAFKA_IGGY_LOG__FORMAT=json",
		}, "ready for Kafka clients", "kafka_address", "serve")
	}
	group := ""
	for deadline := time.Now().Add(30 * time.Second); group == "" && time.Now().Before(deadline); {
		for i := range 500 {
			if g := fmt.Sprintf("g-large-%d", i); logs[1].owns(cluster.Shard(g, cluster.DefaultShards)) && !logs[0].owns(cluster.Shard(g, cluster.DefaultShards)) {
				group = g
				break
			}
		}
		if group == "" {
			time.Sleep(200 * time.Millisecond)
		}
	}
	if group == "" {
		t.Fatal("sidecar 1 owns no shard")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	acl, err := kgo.NewClient(kgo.SeedBrokers(sidecars[0]))
	if err != nil {
		t.Fatal(err)
	}
	defer acl.Close()
	adm := kadm.NewClient(acl)
	const topic, partitions, records, members = "large-join", 8, 200, 4
	if _, err := adm.CreateTopic(ctx, partitions, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	var rs []*kgo.Record
	for i := range records {
		rs = append(rs, &kgo.Record{Topic: topic, Value: []byte(fmt.Sprintf("r%04d", i))})
	}
	if err := acl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	got := &acrossLines{seen: map[string]bool{}}
	for i := range members {
		cl, err := kgo.NewClient(kgo.SeedBrokers(sidecars[0]), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.Balancers(bigMetaBalancer{kgo.RangeBalancer()}),
			kgo.ClientID(fmt.Sprint("large-", i)))
		if err != nil {
			t.Fatal(err)
		}
		mctx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			for mctx.Err() == nil {
				cl.PollFetches(mctx).EachRecord(func(r *kgo.Record) { got.add(string(r.Value)) })
			}
		}()
		defer func() { stop(); <-done; cl.Close() }()
	}
	var last string
	for {
		missing := 0
		for i := range records {
			if !got.has(fmt.Sprintf("r%04d", i)) {
				missing++
			}
		}
		assigned, n := 0, 0
		if dg, err := adm.DescribeGroups(ctx, group); err == nil {
			g := dg[group]
			n = len(g.Members)
			for _, m := range g.Members {
				if ca, ok := m.Assigned.AsConsumer(); ok {
					for _, tp := range ca.Topics {
						assigned += len(tp.Partitions)
					}
				}
			}
			last = fmt.Sprintf("state %s, %d members, %d partitions assigned, %d records missing", g.State, n, assigned, missing)
			if missing == 0 && g.State == "Stable" && n == members && assigned == partitions {
				return
			}
		} else {
			last = fmt.Sprintf("describe: %v; %d records missing", err, missing)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the group never settled: %s", last)
		case <-time.After(500 * time.Millisecond):
		}
	}
}
