package bridge

// AlterClientQuotas: v0-v1
//
// Behavior:
//   - Each entry is validated (entity types user, client-id or ip, each
//     once, ip alone; quota keys producer_byte_rate, consumer_byte_rate,
//     request_percentage, controller_mutation_rate for users and client
//     ids, connection_creation_rate for ips; values positive, each key
//     once); invalid entries (an unknown entity type too) answer
//     INVALID_REQUEST with the reason, as Kafka does.
//   - A valid user / client-id entry is kept in the client-quota log in
//     Iggy (bridge/quotas), where every sidecar reads it: sets and
//     removals in order, nothing written when nothing changes (removing a
//     key that is not set answers NONE, as on Kafka). ValidateOnly writes
//     nothing.
//   - An ip entry (connection_creation_rate) is not kept: the sidecar does
//     not limit connection creation; setting one answers
//     UNSUPPORTED_VERSION saying so, removing one NONE.
//
// Version notes: v1 flexible.
//
// Iggy commands: POLL_MESSAGES and SEND_MESSAGES (the quota log), and
// GET_TOPIC, CREATE_STREAM, CREATE_TOPIC the first time it is written.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafka-iggy/kafka-iggy/bridge/quotas"
)

func (b *Bridge) alterClientQuotasAPI() API {
	return API{Key: 49, Name: "AlterClientQuotas", MinVersion: 0, MaxVersion: 1, Handle: b.handleAlterClientQuotas,
		ErrorCodes: errorCodes(func(r *kmsg.AlterClientQuotasResponse, f func(int16)) {
			for _, e := range r.Entries {
				f(e.ErrorCode)
			}
		})}
}

func init() { registerAPI((*Bridge).alterClientQuotasAPI) }

func (b *Bridge) handleAlterClientQuotas(ctx context.Context, rq *Request) (kmsg.Response, error) {
	req := rq.Msg.(*kmsg.AlterClientQuotasRequest)
	resp := req.ResponseKind().(*kmsg.AlterClientQuotasResponse)
	for _, e := range req.Entries {
		re := kmsg.NewAlterClientQuotasResponseEntry()
		for _, ent := range e.Entity {
			re.Entity = append(re.Entity, kmsg.AlterClientQuotasResponseEntryEntity{Type: ent.Type, Name: ent.Name})
		}
		code, msg := quotas.EntryProblem(&e)
		if code == 0 && !req.ValidateOnly {
			code, msg = b.alterQuotaEntry(ctx, &e)
		}
		if code != 0 {
			re.ErrorCode, re.ErrorMessage = code, &msg
		}
		resp.Entries = append(resp.Entries, re)
	}
	return resp, nil
}

// alterQuotaEntry keeps one valid entry in the quota log.
func (b *Bridge) alterQuotaEntry(ctx context.Context, e *kmsg.AlterClientQuotasRequestEntry) (int16, string) {
	var entity quotas.Entity
	for _, ent := range e.Entity {
		entity = append(entity, quotas.Component{Type: ent.Type, Name: ent.Name})
	}
	ops := make([]quotas.Op, 0, len(e.Ops))
	for _, op := range e.Ops {
		if !op.Remove && len(entity) == 1 && entity[0].Type == quotas.TypeIP {
			return kerr.UnsupportedVersion.Code, "connection_creation_rate is not kept by this kafka-iggy sidecar: it does not limit connection creation"
		}
		ops = append(ops, quotas.Op{Key: op.Key, Value: op.Value, Remove: op.Remove})
	}
	if len(entity) == 1 && entity[0].Type == quotas.TypeIP {
		return 0, "" // removals of a quota never kept
	}
	if err := b.quotas.Alter(ctx, entity, ops); err != nil {
		return kafkaCode(err, scopeAdmin), err.Error()
	}
	return 0, ""
}
