package bridge

import (
	"cmp"
	"context"
	"time"

	"github.com/kafka-iggy/kafka-iggy/auth"
	"github.com/kafka-iggy/kafka-iggy/bridge/quotas"
)

// quotaUser: the connection's principal (SASL, TLS certificate), else ANONYMOUS.
func quotaUser(ctx context.Context) string { return cmp.Or(auth.PrincipalFrom(ctx), quotas.Anonymous) }

// quotaThrottle records n bytes of kind against the client quota of the
// request's connection (bridge/quotas) and returns the throttle_time_ms
// to answer: 0 when no quota applies or the rate is within it. The front
// door stops reading the connection for that long (as Kafka mutes the
// channel), seeing it in the response's throttle. The client id is the
// request header's.
func (b *Bridge) quotaThrottle(ctx context.Context, rq *Request, kind quotas.Kind, n int) int32 {
	clientID := ""
	if rq.ClientID != nil {
		clientID = *rq.ClientID
	}
	d := b.quotas.Record(ctx, kind, quotaUser(ctx), clientID, n, time.Now())
	return int32(min(d.Milliseconds(), 1<<31-1))
}

// requestQuotaExempt are the APIs request_percentage does not count: the
// connection's handshake (ApiVersions, SASL) and the requests that park
// (Fetch, JoinGroup, SyncGroup), whose wait Kafka spends in purgatory, not
// on a handler thread.
var requestQuotaExempt = map[int16]bool{1: true, 11: true, 14: true, 17: true, 18: true, 36: true}

type throttled interface {
	Throttle() (int32, bool)
	SetThrottle(int32)
}

// quotaTime records d of handler time against request_percentage and
// returns the throttle_time_ms to answer (at most 1 s, as Kafka).
func (b *Bridge) quotaTime(ctx context.Context, rq *Request, d time.Duration) int32 {
	clientID := ""
	if rq.ClientID != nil {
		clientID = *rq.ClientID
	}
	return int32(b.quotas.RecordTime(ctx, quotaUser(ctx), clientID, d, time.Now()).Milliseconds())
}

// mutations is a CreateTopics or DeleteTopics request's
// controller_mutation_rate quota, strict from version strictSince (the
// versions that know THROTTLING_QUOTA_EXCEEDED), as Kafka's.
func (b *Bridge) mutations(ctx context.Context, rq *Request, strictSince int16) *quotas.MutationQuota {
	clientID := ""
	if rq.ClientID != nil {
		clientID = *rq.ClientID
	}
	return b.quotas.Mutations(ctx, quotaUser(ctx), clientID, rq.Version >= strictSince)
}
