package bridge

// DescribeCluster: v0-v2
//
// Behavior:
//   - Answers as a one-broker Kafka cluster: this gateway alone, at its
//     advertised host, port and rack, is every broker and the controller. The
//     cluster id is the one Metadata reports (derived from the Iggy cluster);
//     while Iggy cannot be asked for it the answer is REQUEST_TIMED_OUT
//     (retriable) rather than an empty id.
//   - EndpointType (v1+): BROKERS (1) is served; CONTROLLERS (2) is
//     MISMATCHED_ENDPOINT_TYPE and any other value UNSUPPORTED_ENDPOINT_TYPE
//     (INVALID_REQUEST for both at v0), with Kafka's messages. The answer's
//     EndpointType is 1.
//   - IncludeClusterAuthorizedOperations: the gateway has no authorizer, so
//     every operation Kafka defines on CLUSTER is reported allowed (CREATE,
//     ALTER, DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS,
//     IDEMPOTENT_WRITE); otherwise the field keeps its "not asked" value.
//   - IncludeFencedBrokers (v2): the one broker is never fenced.
//
// Version notes:
//   - v1: EndpointType (KIP-919)
//   - v2: IncludeFencedBrokers, IsFenced (KIP-1073)
//
// Iggy commands: GET_CLUSTER_METADATA (12), once per process.

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Kafka endpoint types (EndpointType).
const (
	endpointBrokers     int8 = 1
	endpointControllers int8 = 2
)

// clusterAuthorizedOps is Kafka's CLUSTER operation set as a bit field
// (bit n = ACL operation code n), all allowed without an authorizer.
var clusterAuthorizedOps = func() int32 {
	var f int32
	for _, op := range []kmsg.ACLOperation{
		kmsg.ACLOperationCreate, kmsg.ACLOperationAlter, kmsg.ACLOperationDescribe,
		kmsg.ACLOperationClusterAction, kmsg.ACLOperationDescribeConfigs,
		kmsg.ACLOperationAlterConfigs, kmsg.ACLOperationIdempotentWrite,
	} {
		f |= 1 << int32(op)
	}
	return f
}()

func (b *Bridge) describeClusterAPI() API {
	return API{Key: 60, Name: "DescribeCluster", MinVersion: 0, MaxVersion: 2, Handle: b.handleDescribeCluster, ErrorCodes: errorCodes(describeClusterErrorCodes)}
}

func init() { registerAPI((*Bridge).describeClusterAPI) }

func (b *Bridge) handleDescribeCluster(ctx context.Context, rq *Request) (kmsg.Response, error) {
	req := rq.Msg.(*kmsg.DescribeClusterRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	resp.EndpointType = endpointBrokers

	fail := func(v1code int16, msg string) (kmsg.Response, error) {
		resp.ErrorCode = v1code
		if rq.Version == 0 {
			resp.ErrorCode = kerr.InvalidRequest.Code
		}
		resp.ErrorMessage = &msg
		return resp, nil
	}
	if rq.Version >= 1 {
		switch req.EndpointType {
		case endpointBrokers:
		case endpointControllers:
			return fail(kerr.MismatchedEndpointType.Code, "The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER")
		default:
			return fail(kerr.UnsupportedEndpointType.Code, fmt.Sprintf("Unsupported endpoint type %d", req.EndpointType))
		}
	}

	id := b.clusterIDFor(ctx)
	if id == "" {
		resp.ErrorCode = kerr.RequestTimedOut.Code
		msg := "cluster id not known yet: the Iggy cluster could not be asked"
		resp.ErrorMessage = &msg
		return resp, nil
	}
	resp.ClusterID = id
	self := b.self()
	resp.ControllerID = self.NodeID
	br := kmsg.NewDescribeClusterResponseBroker()
	br.NodeID = self.NodeID
	br.Host = self.Host
	br.Port = self.Port
	br.Rack = self.Rack
	resp.Brokers = append(resp.Brokers, br)
	if req.IncludeClusterAuthorizedOperations {
		resp.ClusterAuthorizedOperations = clusterAuthorizedOps
	}
	return resp, nil
}

// describeClusterErrorCodes walks a DescribeCluster response for the metrics.
func describeClusterErrorCodes(r *kmsg.DescribeClusterResponse, f func(int16)) {
	f(r.ErrorCode)
}
