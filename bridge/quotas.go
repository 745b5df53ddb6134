package bridge

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafka-iggy/kafka-iggy/auth"
	"github.com/kafka-iggy/kafka-iggy/bridge/quotas"
)

// quotaThrottle records n bytes of kind against the client quota of the
// request's connection (bridge/quotas) and returns the throttle_time_ms
// to answer: 0 when no quota applies or the rate is within it. The front
// door stops reading the connection for that long (as Kafka mutes the
// channel), seeing it in the response's throttle. The user is the
// connection's principal (SASL, or a TLS client certificate's mapped
// name), Kafka's ANONYMOUS without one; the client id is the header's.
func (b *Bridge) quotaThrottle(ctx context.Context, rq *Request, kind quotas.Kind, n int) int32 {
	clientID := ""
	if rq.ClientID != nil {
		clientID = *rq.ClientID
	}
	user := auth.PrincipalFrom(ctx)
	if user == "" {
		user = quotas.Anonymous
	}
	d := b.quotas.Record(ctx, kind, user, clientID, n, time.Now())
	return int32(min(d.Milliseconds(), 1<<31-1))
}

// produceBytes is what a Produce counts against producer_byte_rate: its
// record batches (Kafka counts the whole request; the rest is a few dozen
// bytes per partition).
func produceBytes(req *kmsg.ProduceRequest) int {
	n := 0
	for i := range req.Topics {
		for j := range req.Topics[i].Partitions {
			n += len(req.Topics[i].Partitions[j].Records)
		}
	}
	return n
}
