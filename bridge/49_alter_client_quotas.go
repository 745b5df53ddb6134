package bridge

// AlterClientQuotas: v0-v1
//
// Behavior:
//   - The sidecar does not enforce client quotas and keeps none, so it
//     does not pretend to store one: each entry is validated (entity types
//     user, client-id or ip, each once, ip alone; quota keys
//     producer_byte_rate, consumer_byte_rate, request_percentage,
//     controller_mutation_rate for users and client ids,
//     connection_creation_rate for ips; values positive, each key once),
//     and then
//   - an entry of removals only, or any valid entry with ValidateOnly,
//     answers NONE: with no quota configured, removing one changes nothing
//     (as on Kafka);
//   - an entry that sets a quota answers UNSUPPORTED_VERSION with a message
//     saying quotas are not kept (Kafka's code for a quota request the
//     broker cannot serve), so kafka-configs --alter reports it rather than
//     a setting that would be silently ignored.
//   - Invalid entries (an unknown entity type too) answer INVALID_REQUEST
//     with the reason, as Kafka does.
//
// Version notes: v1 flexible.
//
// Iggy commands: none.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// quotaKeys lists the quota keys Kafka accepts per entity kind.
var quotaKeys = map[string]bool{
	"producer_byte_rate": true, "consumer_byte_rate": true, "request_percentage": true, "controller_mutation_rate": true,
}

func (b *Bridge) alterClientQuotasAPI() API {
	return API{Key: 49, Name: "AlterClientQuotas", MinVersion: 0, MaxVersion: 1, Handle: b.handleAlterClientQuotas,
		ErrorCodes: errorCodes(func(r *kmsg.AlterClientQuotasResponse, f func(int16)) {
			for _, e := range r.Entries {
				f(e.ErrorCode)
			}
		})}
}

func init() { registerAPI((*Bridge).alterClientQuotasAPI) }

func (b *Bridge) handleAlterClientQuotas(_ context.Context, rq *Request) (kmsg.Response, error) {
	req := rq.Msg.(*kmsg.AlterClientQuotasRequest)
	resp := req.ResponseKind().(*kmsg.AlterClientQuotasResponse)
	for _, e := range req.Entries {
		re := kmsg.NewAlterClientQuotasResponseEntry()
		for _, ent := range e.Entity {
			re.Entity = append(re.Entity, kmsg.AlterClientQuotasResponseEntryEntity{Type: ent.Type, Name: ent.Name})
		}
		code, msg := quotaEntryProblem(&e)
		if code == 0 && !req.ValidateOnly {
			for _, op := range e.Ops {
				if !op.Remove {
					code, msg = kerr.UnsupportedVersion.Code, "client quotas are not kept by this kafka-iggy sidecar: "+op.Key+" is not set"
					break
				}
			}
		}
		if code != 0 {
			re.ErrorCode, re.ErrorMessage = code, &msg
		}
		resp.Entries = append(resp.Entries, re)
	}
	return resp, nil
}

// quotaEntryProblem validates one AlterClientQuotas entry.
func quotaEntryProblem(e *kmsg.AlterClientQuotasRequestEntry) (int16, string) {
	seen := map[string]bool{}
	for _, ent := range e.Entity {
		switch {
		case ent.Type != "user" && ent.Type != "client-id" && ent.Type != "ip":
			return kerr.InvalidRequest.Code, "Unhandled client quota entity type: " + ent.Type
		case seen[ent.Type]:
			return kerr.InvalidRequest.Code, "Invalid empty or duplicate entity type " + ent.Type
		}
		seen[ent.Type] = true
	}
	switch {
	case len(seen) == 0:
		return kerr.InvalidRequest.Code, "Invalid empty client quota entity"
	case seen["ip"] && len(seen) > 1:
		return kerr.InvalidRequest.Code, "Invalid quota entity combination, IP entity should not be combined with User or ClientId entity."
	}
	keys := map[string]bool{}
	for _, op := range e.Ops {
		valid := quotaKeys[op.Key]
		if seen["ip"] {
			valid = op.Key == "connection_creation_rate"
		}
		switch {
		case !valid:
			return kerr.InvalidRequest.Code, "Invalid configuration key " + op.Key
		case keys[op.Key]:
			return kerr.InvalidRequest.Code, "Duplicate quota key " + op.Key
		case !op.Remove && op.Value <= 0:
			return kerr.InvalidRequest.Code, "Illegal value for quota key " + op.Key + ": it must be positive"
		}
		keys[op.Key] = true
	}
	return 0, ""
}
