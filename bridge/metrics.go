package bridge

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Metrics receives the bridge's own measurements; the admin listener
// exports them (proxy/admin.BridgeMetrics implements it). Implementations
// must be safe for concurrent use and must not block.
type Metrics interface {
	// KafkaError counts one non-zero error code put into a response of API key.
	KafkaError(key, code int16)
	// SetGroups sets the number of live consumer groups.
	SetGroups(n int)
	// SetGroupMembers sets the number of members across those groups.
	SetGroupMembers(n int)
	// AddFetchWaiters moves the number of fetches waiting for data by delta.
	AddFetchWaiters(delta int)
	// SetCompactBytes sets the bytes Iggy holds for topics whose
	// cleanup.policy includes compact (topicheld.go: never compacted).
	SetCompactBytes(n int64)
	// QuotaBytes and QuotaThrottle: the client-quota throttle
	// (bridge/quotas.Metrics).
	QuotaBytes(kind, level string, n int)
	QuotaThrottle(kind, level string, ms int64)
}

// NopMetrics discards every measurement.
type NopMetrics struct{}

// KafkaError implements Metrics.
func (NopMetrics) KafkaError(int16, int16) {}

// SetGroups implements Metrics.
func (NopMetrics) SetGroups(int) {}

// SetGroupMembers implements Metrics.
func (NopMetrics) SetGroupMembers(int) {}

// AddFetchWaiters implements Metrics.
func (NopMetrics) AddFetchWaiters(int) {}

// SetCompactBytes implements Metrics.
func (NopMetrics) SetCompactBytes(int64) {}

// QuotaBytes implements Metrics.
func (NopMetrics) QuotaBytes(string, string, int) {}

// QuotaThrottle implements Metrics.
func (NopMetrics) QuotaThrottle(string, string, int64) {}

// instrument wraps every handler so the error codes of its response are
// counted (and the group gauges refreshed after group APIs), in one place
// instead of in every handler.
func (b *Bridge) instrument(apis []API) []API {
	for i := range apis {
		h, key, walk, group := apis[i].Handle, apis[i].Key, apis[i].ErrorCodes, apis[i].Group
		apis[i].Handle = func(ctx context.Context, rq *Request) (kmsg.Response, error) {
			start := time.Now()
			resp, err := h(ctx, rq)
			if t, ok := resp.(throttled); ok && !requestQuotaExempt[key] { // request_percentage (quotas.go)
				if ms, cur := b.quotaTime(ctx, rq, time.Since(start)), int32(0); ms > 0 {
					if cur, _ = t.Throttle(); ms > cur {
						t.SetThrottle(ms)
					}
				}
			}
			if resp != nil && walk != nil {
				walk(resp, func(code int16) {
					if code == 0 {
						return
					}
					b.metrics.KafkaError(key, code)
					if rq.ErrorCodes == 0 {
						rq.FirstErrorCode = code
					}
					rq.ErrorCodes++
				})
			}
			if group && b.groups != nil {
				g, m := b.groups.Counts()
				cg, cm := b.cgroups.Counts() // consumer-protocol groups (KIP-848)
				b.metrics.SetGroups(g + cg)
				b.metrics.SetGroupMembers(m + cm)
			}
			return resp, err
		}
	}
	return apis
}
