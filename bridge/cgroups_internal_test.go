package bridge

import (
	"context"
	"testing"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafka-iggy/kafka-iggy/bridge/groups"
	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
)

// With groups across sidecars (Options.Groups set) but no router for
// consumer-protocol groups (Options.ConsumerGroups nil), a heartbeat
// answers UNSUPPORTED_VERSION before any Iggy call (the client here never
// connects), so no sidecar assigns partitions another sidecar also assigns.
func TestConsumerProtocolRefusedAcrossSidecars(t *testing.T) {
	icfg := iggy.DefaultConfig()
	icfg.Address = "127.0.0.1:1"
	cl, err := iggy.New(icfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	for _, cluster := range []bool{false, true} {
		o := Options{Config: DefaultConfig(), Client: cl, Log: zerolog.Nop()}
		if cluster {
			o.Groups = func(local *groups.Coordinator) groups.Service { return local }
		}
		b, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Version = 1
		req.Group, req.MemberID, req.RebalanceTimeoutMillis = "g", "m", 1000
		req.SubscribedTopicNames, req.Topics = []string{"t"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		ctx, cancel := context.WithCancel(context.Background())
		if !cluster {
			cancel() // one sidecar goes on to Iggy, which a cancelled context cuts short
		}
		resp, err := b.Table().Dispatch(ctx, &Request{Key: 68, Version: 1, Msg: req})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		code := resp.(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode
		if cluster != (code == kerr.UnsupportedVersion.Code) {
			t.Errorf("cluster=%v: code %d", cluster, code)
		}
	}
}
