package bridge

// DescribeClientQuotas: v0-v1
//
// Behavior:
//   - Answered from the client quotas kept in Iggy (bridge/quotas), read
//     to the end first: every entity matching the filter with its quotas,
//     as Kafka's ClientQuotasImage.describe matches (exact name, default,
//     any entity of the type; strict: no other type); NONE with no entry
//     when none matches.
//   - The filter is validated as Kafka's broker validates it, with its
//     messages: an empty entity type or one given twice, a match type with
//     a match string it does not take (exact without one, default or any
//     with one), an unknown match type, and IP combined with user or
//     client-id answer INVALID_REQUEST; an entity type other than user,
//     client-id and ip UNSUPPORTED_VERSION ("Unsupported entity type T").
//
// Version notes: v1 flexible.
//
// Iggy commands: POLL_MESSAGES (the quota log, to its end).

import (
	"context"
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafka-iggy/kafka-iggy/bridge/quotas"
)

func (b *Bridge) describeClientQuotasAPI() API {
	return API{Key: 48, Name: "DescribeClientQuotas", MinVersion: 0, MaxVersion: 1, Handle: b.handleDescribeClientQuotas,
		ErrorCodes: errorCodes(func(r *kmsg.DescribeClientQuotasResponse, f func(int16)) { f(r.ErrorCode) })}
}

func init() { registerAPI((*Bridge).describeClientQuotasAPI) }

func (b *Bridge) handleDescribeClientQuotas(ctx context.Context, rq *Request) (kmsg.Response, error) {
	req := rq.Msg.(*kmsg.DescribeClientQuotasRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClientQuotasResponse)
	if code, msg := quotas.FilterProblem(req.Components); code != 0 {
		resp.ErrorCode, resp.ErrorMessage = code, &msg
		return resp, nil
	}
	filters := make([]quotas.Filter, 0, len(req.Components))
	for _, c := range req.Components {
		f := quotas.Filter{Type: c.EntityType, Match: int8(c.MatchType)}
		if c.Match != nil {
			f.Name = *c.Match
		}
		filters = append(filters, f)
	}
	found, err := b.quotas.Describe(ctx, filters, req.Strict)
	if err != nil {
		msg := err.Error()
		resp.ErrorCode, resp.ErrorMessage = kafkaCode(err, scopeAdmin), &msg
		return resp, nil
	}
	resp.Entries = []kmsg.DescribeClientQuotasResponseEntry{}
	for _, e := range found {
		re := kmsg.NewDescribeClientQuotasResponseEntry()
		for _, c := range e.Entity {
			re.Entity = append(re.Entity, kmsg.DescribeClientQuotasResponseEntryEntity{Type: c.Type, Name: c.Name})
		}
		for k, v := range e.Values {
			re.Values = append(re.Values, kmsg.DescribeClientQuotasResponseEntryValue{Key: k, Value: v})
		}
		sort.Slice(re.Values, func(i, j int) bool { return re.Values[i].Key < re.Values[j].Key })
		resp.Entries = append(resp.Entries, re)
	}
	resp.ErrorMessage = kmsg.StringPtr("") // Kafka's: empty, not null
	return resp, nil
}
