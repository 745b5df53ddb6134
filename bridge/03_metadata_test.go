package bridge_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestMetadataAutoCreateAndList(t *testing.T) {
	s := startStack(t)
	cl := s.kgoClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()

	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	name := "orders"
	rt.Topic = &name
	bad := "bad/name"
	rt2 := kmsg.NewMetadataRequestTopic()
	rt2.Topic = &bad
	req.Topics = append(req.Topics, rt, rt2)
	req.AllowAutoTopicCreation = true
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Brokers) != 1 || resp.Brokers[0].Host != "127.0.0.1" || resp.ClusterID == nil || *resp.ClusterID == "" {
		t.Fatalf("brokers/cluster: %+v %v", resp.Brokers, resp.ClusterID)
	}
	if len(resp.Topics) != 2 {
		t.Fatalf("topics: %+v", resp.Topics)
	}
	if got := resp.Topics[0]; got.ErrorCode != 0 || len(got.Partitions) != 1 || got.TopicID == [16]byte{} {
		t.Fatalf("auto-created topic: %+v", got)
	}
	if resp.Topics[1].ErrorCode != kerr.InvalidTopicException.Code {
		t.Fatalf("invalid name: %d", resp.Topics[1].ErrorCode)
	}

	// A null topic list lists every topic (and the internal
	// __consumer_offsets, last); the id is stable.
	all := kmsg.NewPtrMetadataRequest()
	all.Topics = nil
	resp2, err := all.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp2.Topics) != 2 || *resp2.Topics[0].Topic != "orders" || resp2.Topics[0].TopicID != resp.Topics[0].TopicID ||
		*resp2.Topics[1].Topic != "__consumer_offsets" || !resp2.Topics[1].IsInternal || resp2.Topics[0].IsInternal {
		t.Fatalf("list: %+v", resp2.Topics)
	}

	// Without auto-creation a missing topic is UNKNOWN_TOPIC_OR_PARTITION.
	miss := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	other := "missing"
	mt.Topic = &other
	miss.Topics = append(miss.Topics, mt)
	miss.AllowAutoTopicCreation = false
	resp3, err := miss.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if resp3.Topics[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("missing topic: %d", resp3.Topics[0].ErrorCode)
	}
}
