package iggy

import (
	"context"
	"errors"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
	"github.com/kafka-iggy/kafka-iggy/embedded"
	"github.com/kafka-iggy/kafka-iggy/embedded/embedtest"
)

// startEmbeddedProtocol starts an in-memory embedded server speaking proto.
func startEmbeddedProtocol(tb testing.TB, proto string) *embedded.Server {
	tb.Helper()
	return embedtest.Start(tb, "127.0.0.1:0", func(c *embedded.Config) { c.Protocol = proto })
}

// protoMetrics records the protocol labels reported.
type protoMetrics struct {
	NopMetrics
	mu     sync.Mutex
	labels []string
}

func (m *protoMetrics) Protocol(l string) {
	m.mu.Lock()
	m.labels = append(m.labels, l)
	m.mu.Unlock()
}

func (m *protoMetrics) last() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.labels) == 0 {
		return ""
	}
	return m.labels[len(m.labels)-1]
}

// TestProtocolGenerations: against a server of either generation, a client
// configured with that generation or with auto logs in, reports the
// generation (Protocol, the metric label) and runs every command shape the
// gateway uses: stream and topic create/get/list with their 0.12 reply
// shapes, an options update (UPDATE_TOPIC at 0.11, UPDATE_RESOURCE at 0.12),
// send, poll (the 40-byte poll head at 0.12), offsets and cluster metadata.
func TestProtocolGenerations(t *testing.T) {
	for _, tc := range []struct{ server, client string }{
		{"0.11", "0.11"}, {"0.11", "auto"}, {"0.12", "0.12"}, {"0.12", "auto"},
	} {
		t.Run("server_"+tc.server+"_client_"+tc.client, func(t *testing.T) {
			srv := startEmbeddedProtocol(t, tc.server)
			cfg := testConfig(srv.Addr().String())
			cfg.Protocol = tc.client
			cfg.PoolSize = 2
			m := &protoMetrics{}
			c := startClient(t, cfg, WithMetrics(m))
			if got := c.Protocol().Label(); got != tc.server {
				t.Fatalf("protocol %s, want %s", got, tc.server)
			}
			if got := m.last(); got != tc.server {
				t.Fatalf("metric label %q, want %q", got, tc.server)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			tr := TopicRef{"kafka", "gen"}
			createTopic(t, c, tr, 2)
			ti, err := c.GetTopic(ctx, tr)
			if err != nil || ti.PartitionsCount != 2 || len(ti.Details.Partitions) != 2 || ti.Details.MessageExpiry == 0 {
				t.Fatalf("get topic: %+v %v", ti, err)
			}
			// retention.ms → message_expiry, through the generation's update command.
			spec, _ := icodec.LookupOption(icodec.TopicOptions, "message_expiry")
			opt := icodec.Option{Key: spec.Key, Kind: icodec.HeaderKindUint64, Value: []byte{0x40, 0x42, 0x0f, 0, 0, 0, 0, 0}}
			if err := c.Do(ctx, &icodec.UpdateTopicRequest{StreamID: tr.StreamID(), TopicID: tr.TopicID(), Name: tr.Topic, Options: icodec.Options{opt}}, nil); err != nil {
				t.Fatalf("update topic options: %v", err)
			}
			ti, err = c.RefreshTopic(ctx, tr)
			if err != nil || ti.Details.MessageExpiry != 1_000_000 {
				t.Fatalf("message_expiry after update: %+v %v", ti.Details.TopicHeader, err)
			}
			var topics icodec.GetTopicsResponse
			if err := c.Do(ctx, &icodec.GetTopicsRequest{StreamID: tr.StreamID()}, &topics); err != nil || len(topics.Topics) != 1 || topics.Topics[0].MessageExpiry != 1_000_000 {
				t.Fatalf("get topics: %+v %v", topics, err)
			}
			var sd icodec.StreamDetails
			if err := c.Do(ctx, &icodec.GetStreamRequest{StreamID: tr.StreamID()}, &sd); err != nil || sd.Name != "kafka" || len(sd.Topics) != 1 {
				t.Fatalf("get stream: %+v %v", sd, err)
			}
			var md icodec.GetClusterMetadataResponse
			if err := c.Do(ctx, &icodec.GetClusterMetadataRequest{}, &md); err != nil || len(md.Nodes) != 1 || md.Nodes[0].Role != icodec.NodeRoleLeader {
				t.Fatalf("cluster metadata: %+v %v", md, err)
			}
			for i := range 3 {
				if off, err := sendOne(c, ctx, tr, 1, "m"); err != nil || off != int64(i) {
					t.Fatalf("send %d: %d %v", i, off, err)
				}
			}
			got := readAll(t, c, tr, 1)
			if len(got) != 3 || got[2] != "m" {
				t.Fatalf("poll: %v", got)
			}
			consumer := icodec.Consumer{Kind: icodec.ConsumerKindConsumer, ID: icodec.Identifier{Kind: icodec.IdentifierKindString, Value: []byte("kafka.cg.g")}}
			if c.Protocol().ExternalGroupOffsets() {
				consumer.Kind = icodec.ConsumerKindExternalGroup
			}
			if err := c.StoreOffset(ctx, tr, 1, consumer, 2); err != nil {
				t.Fatalf("store offset (kind %v): %v", consumer.Kind, err)
			}
			if o, found, err := c.GetOffset(ctx, tr, 1, consumer); err != nil || !found || o.StoredOffset != 2 {
				t.Fatalf("get offset: %+v %v %v", o, found, err)
			}
		})
	}
}

// TestProtocolMismatch: a client pinned to a generation the server does not
// speak fails at Start with the incompatible-protocol error (no retry with
// another generation), in both directions.
func TestProtocolMismatch(t *testing.T) {
	for _, tc := range []struct{ server, client string }{{"0.11", "0.12"}, {"0.12", "0.11"}} {
		t.Run("server_"+tc.server+"_client_"+tc.client, func(t *testing.T) {
			srv := startEmbeddedProtocol(t, tc.server)
			cfg := testConfig(srv.Addr().String())
			cfg.Protocol = tc.client
			c, err := New(cfg, zerolog.New(io.Discard))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err = c.Start(ctx)
			if !errors.Is(err, icodec.StatusIncompatibleProtocolVersion) {
				t.Fatalf("start: %v, want incompatible protocol", err)
			}
		})
	}
}

// TestPickProtocol: the generation chosen from an eviction's window.
func TestPickProtocol(t *testing.T) {
	for _, tc := range []struct {
		lo, hi, want icodec.ProtocolVersion
		ok           bool
	}{
		{icodec.Protocol011, icodec.Protocol011, icodec.Protocol011, true},                               // 0.9 server
		{icodec.Protocol012, icodec.Protocol012, icodec.Protocol012, true},                               // 0.10.0 server (spec gate)
		{icodec.PackVersion(0, 12, 2), icodec.PackVersion(0, 12, 2), icodec.PackVersion(0, 12, 2), true}, // edge server: exact patch
		{icodec.PackVersion(0, 13, 0), icodec.PackVersion(0, 13, 0), 0, false},                           // a future line
		{0, 0, 0, false},
	} {
		got, ok := icodec.PickProtocol(tc.lo, tc.hi)
		if got != tc.want || ok != tc.ok {
			t.Errorf("PickProtocol(%v, %v) = %v %v, want %v %v", tc.lo, tc.hi, got, ok, tc.want, tc.ok)
		}
	}
}

func TestConfigProtocol(t *testing.T) {
	for _, v := range []string{"auto", "0.11", "0.12", "0.12.0"} {
		cfg := DefaultConfig()
		cfg.Protocol = v
		if err := cfg.Validate(); err != nil {
			t.Errorf("%q: %v", v, err)
		}
	}
	for _, v := range []string{"0.13", "0.12.1", "latest", "1"} {
		cfg := DefaultConfig()
		cfg.Protocol = v
		if err := cfg.Validate(); err == nil {
			t.Errorf("%q accepted", v)
		}
	}
}
