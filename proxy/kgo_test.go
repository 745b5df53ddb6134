package proxy

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// newKgoClient is a franz-go client against the test server.
func newKgoClient(t *testing.T, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	opts = append([]kgo.Opt{
		kgo.SeedBrokers(addr),
		kgo.DefaultProduceTopic("t"),
		kgo.DisableIdempotentWrite(),
	}, opts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func TestKgoApiVersionsAndProduce(t *testing.T) {
	e := startEnv(t, nil)
	cl := newKgoClient(t, e.addr, kgo.RequiredAcks(kgo.LeaderAck()))
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()

	// kgo opens with ApiVersions at its own maximum (v5), served without a
	// fallback. This request then goes through the negotiated connection.
	av, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if av.ErrorCode != 0 {
		t.Fatalf("api versions error %d", av.ErrorCode)
	}
	served := map[int16]bool{}
	for _, k := range av.ApiKeys {
		served[k.ApiKey] = true
	}
	for _, k := range []int16{0, 3, 12, 18} {
		if !served[k] {
			t.Fatalf("key %d not advertised: %+v", k, av.ApiKeys)
		}
	}

	for i := 0; i < 3; i++ {
		r, err := cl.ProduceSync(ctx, &kgo.Record{Key: []byte("k"), Value: []byte("hello")}).First()
		if err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
		if r.Offset != 0 || r.Partition != 0 || r.Topic != "t" {
			t.Fatalf("produce %d: %s/%d@%d", i, r.Topic, r.Partition, r.Offset)
		}
	}
	got := <-e.produced
	if got.Acks != 1 || len(got.Topics) != 1 || got.Topics[0].Topic != "t" {
		t.Fatalf("produce request: acks %d topics %+v", got.Acks, got.Topics)
	}
}

func TestKgoProduceAcksZero(t *testing.T) {
	e := startEnv(t, nil)
	cl := newKgoClient(t, e.addr, kgo.RequiredAcks(kgo.NoAck()))
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()

	for i := 0; i < 3; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("fire and forget")}).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
		select {
		case got := <-e.produced:
			if got.Acks != 0 {
				t.Fatalf("acks %d", got.Acks)
			}
		case <-ctx.Done():
			t.Fatal("acks=0 produce never reached the handler")
		}
	}
	// Requests on the client's connections still line up with replies: a
	// stray reply to an acks=0 produce would break correlation here.
	m := kmsg.NewPtrMetadataRequest()
	topic := kmsg.NewMetadataRequestTopic()
	name := "t"
	topic.Topic = &name
	m.Topics = append(m.Topics, topic)
	resp, err := m.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Brokers) != 1 || len(resp.Topics) != 1 {
		t.Fatalf("metadata: %+v", resp)
	}
	if n := e.metrics.closedCount(CloseUnsupportedAPI) + e.metrics.closedCount(CloseDecodeError) + e.metrics.closedCount(CloseBadHeader); n != 0 {
		t.Fatalf("%d protocol-error closes", n)
	}
}
