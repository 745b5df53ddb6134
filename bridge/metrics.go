package bridge

import (
	"context"

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

// groupAPIs change group membership: after them the group gauges are
// refreshed.
var groupAPIs = map[int16]bool{11: true, 12: true, 13: true, 14: true, 42: true}

// instrument wraps every handler so the error codes of its response are
// counted (and the group gauges refreshed after group APIs), in one place
// instead of in every handler.
func (b *Bridge) instrument(apis []API) []API {
	for i := range apis {
		h, key := apis[i].Handle, apis[i].Key
		apis[i].Handle = func(ctx context.Context, rq *Request) (kmsg.Response, error) {
			resp, err := h(ctx, rq)
			if resp != nil {
				eachErrorCode(resp, func(code int16) {
					b.metrics.KafkaError(key, code)
					if rq.ErrorCodes == 0 {
						rq.FirstErrorCode = code
					}
					rq.ErrorCodes++
				})
			}
			if groupAPIs[key] && b.groups != nil {
				g, m := b.groups.counts()
				b.metrics.SetGroups(g)
				b.metrics.SetGroupMembers(m)
			}
			return resp, err
		}
	}
	return apis
}

// eachErrorCode calls f for every non-zero error code in a response of the
// APIs the bridge serves (top level, per topic, per partition).
func eachErrorCode(resp kmsg.Response, f func(int16)) {
	c := func(code int16) {
		if code != 0 {
			f(code)
		}
	}
	switch r := resp.(type) {
	case *kmsg.ProduceResponse:
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				c(p.ErrorCode)
			}
		}
	case *kmsg.FetchResponse:
		c(r.ErrorCode)
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				c(p.ErrorCode)
			}
		}
	case *kmsg.ListOffsetsResponse:
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				c(p.ErrorCode)
			}
		}
	case *kmsg.MetadataResponse:
		c(r.ErrorCode)
		for _, t := range r.Topics {
			c(t.ErrorCode)
		}
	case *kmsg.OffsetCommitResponse:
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				c(p.ErrorCode)
			}
		}
	case *kmsg.OffsetFetchResponse:
		c(r.ErrorCode)
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				c(p.ErrorCode)
			}
		}
		for _, g := range r.Groups {
			c(g.ErrorCode)
			for _, t := range g.Topics {
				for _, p := range t.Partitions {
					c(p.ErrorCode)
				}
			}
		}
	case *kmsg.FindCoordinatorResponse:
		c(r.ErrorCode)
		for _, k := range r.Coordinators {
			c(k.ErrorCode)
		}
	case *kmsg.JoinGroupResponse:
		c(r.ErrorCode)
	case *kmsg.SyncGroupResponse:
		c(r.ErrorCode)
	case *kmsg.HeartbeatResponse:
		c(r.ErrorCode)
	case *kmsg.LeaveGroupResponse:
		c(r.ErrorCode)
		for _, m := range r.Members {
			c(m.ErrorCode)
		}
	case *kmsg.InitProducerIDResponse:
		c(r.ErrorCode)
	case *kmsg.CreateTopicsResponse:
		for _, t := range r.Topics {
			c(t.ErrorCode)
		}
	case *kmsg.DeleteTopicsResponse:
		for _, t := range r.Topics {
			c(t.ErrorCode)
		}
	case *kmsg.CreatePartitionsResponse:
		for _, t := range r.Topics {
			c(t.ErrorCode)
		}
	case *kmsg.DescribeConfigsResponse:
		for _, res := range r.Resources {
			c(res.ErrorCode)
		}
	case *kmsg.AlterConfigsResponse:
		for _, res := range r.Resources {
			c(res.ErrorCode)
		}
	case *kmsg.IncrementalAlterConfigsResponse:
		for _, res := range r.Resources {
			c(res.ErrorCode)
		}
	case *kmsg.DescribeGroupsResponse:
		for _, g := range r.Groups {
			c(g.ErrorCode)
		}
	case *kmsg.ListGroupsResponse:
		c(r.ErrorCode)
	case *kmsg.DeleteGroupsResponse:
		for _, g := range r.Groups {
			c(g.ErrorCode)
		}
	case *kmsg.OffsetDeleteResponse:
		c(r.ErrorCode)
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				c(p.ErrorCode)
			}
		}
	case *kmsg.DescribeClusterResponse:
		c(r.ErrorCode)
	case *kmsg.ApiVersionsResponse:
		c(r.ErrorCode)
	}
}
