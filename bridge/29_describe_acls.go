package bridge

// DescribeAcls: v1-v3
//
// Behavior:
//   - With sasl.authorization principal (per-principal Iggy sessions):
//     the Iggy permissions of the asking principal's own Iggy user as Kafka
//     ACLs (User:<principal>, host *, ALLOW, LITERAL; the global and
//     default-stream flags on Topic "*", per-topic flags on the topic, the
//     server flags on the cluster, Group "*" ALL since Iggy does not check
//     groups), filtered as Kafka filters (auth.DescribeACLs).
//   - Otherwise (no SASL, or every request as iggy.username) as Kafka
//     without an authorizer: SECURITY_DISABLED "No Authorizer is
//     configured on the broker".
//
// Version notes: v2 flexible.
//
// Iggy commands: GET_USER (the principal's own, as the principal),
// GET_STREAM (as the sidecar, to name topic ids).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafka-iggy/kafka-iggy/auth"
)

func (b *Bridge) describeACLsAPI() API {
	return API{Key: 29, Name: "DescribeAcls", MinVersion: 1, MaxVersion: 3, Handle: b.handleDescribeACLs,
		ErrorCodes: errorCodes(func(r *kmsg.DescribeACLsResponse, f func(int16)) { f(r.ErrorCode) })}
}

func init() { registerAPI((*Bridge).describeACLsAPI) }

func (b *Bridge) handleDescribeACLs(ctx context.Context, rq *Request) (kmsg.Response, error) {
	req := rq.Msg.(*kmsg.DescribeACLsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeACLsResponse)
	if b.users == nil {
		msg := auth.NoAuthorizerDescribe
		resp.ErrorCode, resp.ErrorMessage = kerr.SecurityDisabled.Code, &msg
		return resp, nil
	}
	auth.DescribeACLs(ctx, b.iggy, b.cfg.Topics.DefaultStream, req, resp)
	return resp, nil
}
