package bridge

import (
	"context"
	"time"

	"github.com/kafka-iggy/kafka-iggy/bridge/quotas"
)

// quotaThrottle records n bytes of kind against the client quota of the
// request's connection (bridge/quotas) and returns the throttle_time_ms
// to answer: 0 when no quota applies or the rate is within it. The front
// door stops reading the connection for that long (as Kafka mutes the
// channel), seeing it in the response's throttle. Without SASL the user
// is Kafka's ANONYMOUS; the client id is the request header's.
func (b *Bridge) quotaThrottle(ctx context.Context, rq *Request, kind quotas.Kind, n int) int32 {
	clientID := ""
	if rq.ClientID != nil {
		clientID = *rq.ClientID
	}
	d := b.quotas.Record(ctx, kind, quotas.Anonymous, clientID, n, time.Now())
	return int32(min(d.Milliseconds(), 1<<31-1))
}
