package bridge

// ListConfigResources: v0-v1
//
// Behavior (as Kafka 4.4 answers; v0 is KIP-714's ListClientMetricsResources):
//   - v0 lists the client metrics subscriptions (bridge/clientmetrics, the
//     log read to its end).
//   - v1 lists the resources of the types asked, or of every supported
//     type when none is: CLIENT_METRICS (the subscriptions), BROKER_LOGGER
//     and BROKER (this sidecar's node id), TOPIC (every Kafka topic) and
//     GROUP (none: no group has configs here). A type outside those five
//     answers UNSUPPORTED_VERSION with no resource.
//
// Iggy commands: POLL_MESSAGES (the subscription log), GET_TOPICS (TOPIC).

import (
	"context"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// listConfigTypes are the resource types Kafka 4.4 lists, in its order.
var listConfigTypes = []int8{16, 8, 4, 2, 32}

func (b *Bridge) listConfigResourcesAPI() API {
	return API{Key: 74, Name: "ListConfigResources", MinVersion: 0, MaxVersion: 1, Handle: b.handleListConfigResources,
		ErrorCodes: errorCodes(func(r *kmsg.ListConfigResourcesResponse, f func(int16)) { f(r.ErrorCode) })}
}

func init() { registerAPI((*Bridge).listConfigResourcesAPI) }

func (b *Bridge) handleListConfigResources(ctx context.Context, rq *Request) (kmsg.Response, error) {
	req := rq.Msg.(*kmsg.ListConfigResourcesRequest)
	resp := req.ResponseKind().(*kmsg.ListConfigResourcesResponse)
	types := req.ResourceTypes
	if rq.Version == 0 {
		types = []int8{16}
	} else if len(types) == 0 {
		types = listConfigTypes
	}
	for _, t := range types {
		if !slices.Contains(listConfigTypes, t) {
			resp.ErrorCode = kerr.UnsupportedVersion.Code
			return resp, nil
		}
	}
	add := func(typ int8, names ...string) {
		for _, n := range names {
			r := kmsg.NewListConfigResourcesResponseConfigResource()
			r.Name, r.Type = n, typ
			resp.ConfigResources = append(resp.ConfigResources, r)
		}
	}
	var err error
	for _, t := range listConfigTypes {
		if !slices.Contains(types, t) || err != nil {
			continue
		}
		var names []string
		switch t {
		case 16:
			names, err = b.cmetrics.Names(ctx)
		case 8, 4:
			names = []string{strconv.Itoa(int(b.self().NodeID))}
		case 2:
			names, err = b.listTopics(ctx)
		}
		add(t, names...)
	}
	if err != nil {
		resp.ConfigResources = nil
		resp.ErrorCode, _ = b.adminError("", "list config resources", err)
	}
	return resp, nil
}
