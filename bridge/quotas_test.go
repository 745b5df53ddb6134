package bridge_test

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// quotaOp is an AlterClientQuotas op; remove when v < 0.
func quotaOp(key string, v float64) kmsg.AlterClientQuotasRequestEntryOp {
	return kmsg.AlterClientQuotasRequestEntryOp{Key: key, Value: v, Remove: v < 0}
}

// alterQuota sends one AlterClientQuotas entry (entity as type, name pairs;
// name "" is the default) and returns its error code.
func alterQuota(t *testing.T, rk *rawKafka, validateOnly bool, entity []string, ops ...kmsg.AlterClientQuotasRequestEntryOp) int16 {
	t.Helper()
	req := kmsg.NewPtrAlterClientQuotasRequest()
	req.ValidateOnly = validateOnly
	e := kmsg.NewAlterClientQuotasRequestEntry()
	for i := 0; i < len(entity); i += 2 {
		var name *string
		if entity[i+1] != "" {
			name = kmsg.StringPtr(entity[i+1])
		}
		e.Entity = append(e.Entity, kmsg.AlterClientQuotasRequestEntryEntity{Type: entity[i], Name: name})
	}
	e.Ops = ops
	req.Entries = append(req.Entries, e)
	return rk.do(req, 1).(*kmsg.AlterClientQuotasResponse).Entries[0].ErrorCode
}

// describeQuotas answers a DescribeClientQuotas as sorted lines
// "type=name,type=name: key=value key=value" (<default> for a default).
func describeQuotas(t *testing.T, rk *rawKafka, strict bool, comps ...kmsg.DescribeClientQuotasRequestComponent) []string {
	t.Helper()
	req := kmsg.NewPtrDescribeClientQuotasRequest()
	req.Strict, req.Components = strict, comps
	resp := rk.do(req, 1).(*kmsg.DescribeClientQuotasResponse)
	if resp.ErrorCode != 0 {
		t.Fatalf("describe: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	var out []string
	for _, e := range resp.Entries {
		var ent, vals []string
		for _, c := range e.Entity {
			n := "<default>"
			if c.Name != nil {
				n = *c.Name
			}
			ent = append(ent, c.Type+"="+n)
		}
		sort.Strings(ent)
		for _, v := range e.Values {
			vals = append(vals, fmt.Sprintf("%s=%g", v.Key, v.Value))
		}
		out = append(out, strings.Join(ent, ",")+": "+strings.Join(vals, " "))
	}
	sort.Strings(out)
	return out
}

func quotaFilter(typ string, match kmsg.QuotasMatchType, name string) kmsg.DescribeClientQuotasRequestComponent {
	c := kmsg.NewDescribeClientQuotasRequestComponent()
	c.EntityType, c.MatchType = typ, match
	if match == kmsg.QuotasMatchTypeExact {
		c.Match = kmsg.StringPtr(name)
	}
	return c
}

func wantLines(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s:\n got %q\nwant %q", what, got, want)
	}
}

// TestClientQuotasKept: quotas set through one sidecar are described by
// another sidecar of the same Iggy server with Kafka's filter semantics
// (exact, default, any; strict), removals take keys and then the entity
// away, validate-only and invalid entries write nothing, and an ip quota
// (not enforced) is refused rather than silently dropped.
func TestClientQuotasKept(t *testing.T) {
	a := startStack(t)
	b := sidecarOn(t, a)
	ra, rb := dialRaw(t, a.Addr), dialRaw(t, b.Addr)

	if got := describeQuotas(t, rb, false); len(got) != 0 {
		t.Fatalf("before any alter: %q", got)
	}
	for _, c := range []struct {
		entity []string
		ops    []kmsg.AlterClientQuotasRequestEntryOp
	}{
		{[]string{"client-id", "app"}, []kmsg.AlterClientQuotasRequestEntryOp{quotaOp("producer_byte_rate", 1<<20), quotaOp("consumer_byte_rate", 2<<20)}},
		{[]string{"client-id", ""}, []kmsg.AlterClientQuotasRequestEntryOp{quotaOp("request_percentage", 50)}},
		{[]string{"user", "alice", "client-id", "app"}, []kmsg.AlterClientQuotasRequestEntryOp{quotaOp("producer_byte_rate", 1000)}},
		{[]string{"user", ""}, []kmsg.AlterClientQuotasRequestEntryOp{quotaOp("controller_mutation_rate", 10)}},
	} {
		if code := alterQuota(t, ra, false, c.entity, c.ops...); code != 0 {
			t.Fatalf("alter %v: %v", c.entity, kerr.ErrorForCode(code))
		}
	}
	if code := alterQuota(t, ra, true, []string{"client-id", "other"}, quotaOp("producer_byte_rate", 5)); code != 0 {
		t.Fatalf("validate only: %v", kerr.ErrorForCode(code))
	}
	if code := alterQuota(t, ra, false, []string{"client-id", "other"}, quotaOp("no_such_key", 5)); code != kerr.InvalidRequest.Code {
		t.Fatalf("bad key: %v", kerr.ErrorForCode(code))
	}
	if code := alterQuota(t, ra, false, []string{"ip", "10.0.0.1"}, quotaOp("connection_creation_rate", 5)); code != kerr.UnsupportedVersion.Code {
		t.Fatalf("ip quota: %v", kerr.ErrorForCode(code))
	}

	all := []string{
		"client-id=<default>: request_percentage=50",
		"client-id=app,user=alice: producer_byte_rate=1000",
		"client-id=app: consumer_byte_rate=2.097152e+06 producer_byte_rate=1.048576e+06",
		"user=<default>: controller_mutation_rate=10",
	}
	wantLines(t, "all, through the other sidecar", describeQuotas(t, rb, false), all...)
	wantLines(t, "client-id any", describeQuotas(t, rb, false, quotaFilter("client-id", kmsg.QuotasMatchTypeAny, "")), all[:3]...)
	wantLines(t, "client-id any, strict", describeQuotas(t, rb, true, quotaFilter("client-id", kmsg.QuotasMatchTypeAny, "")), all[0], all[2])
	wantLines(t, "client-id app", describeQuotas(t, rb, false, quotaFilter("client-id", kmsg.QuotasMatchTypeExact, "app")), all[1:3]...)
	wantLines(t, "client-id default", describeQuotas(t, rb, false, quotaFilter("client-id", kmsg.QuotasMatchTypeDefault, "")), all[0])
	wantLines(t, "user alice and client-id any", describeQuotas(t, rb, true,
		quotaFilter("user", kmsg.QuotasMatchTypeExact, "alice"), quotaFilter("client-id", kmsg.QuotasMatchTypeAny, "")), all[1])
	wantLines(t, "user default", describeQuotas(t, rb, false, quotaFilter("user", kmsg.QuotasMatchTypeDefault, "")), all[3])

	// Removals through the other sidecar; removing a key never set is NONE.
	if code := alterQuota(t, rb, false, []string{"client-id", "app"}, quotaOp("producer_byte_rate", -1), quotaOp("request_percentage", -1)); code != 0 {
		t.Fatalf("remove: %v", kerr.ErrorForCode(code))
	}
	if code := alterQuota(t, rb, false, []string{"user", ""}, quotaOp("controller_mutation_rate", -1)); code != 0 {
		t.Fatalf("remove: %v", kerr.ErrorForCode(code))
	}
	wantLines(t, "after removals, through the first sidecar", describeQuotas(t, ra, false),
		all[0], all[1], "client-id=app: consumer_byte_rate=2.097152e+06")

	// A sidecar started now reads the whole log.
	c := sidecarOn(t, a)
	wantLines(t, "a new sidecar", describeQuotas(t, dialRaw(t, c.Addr), false),
		all[0], all[1], "client-id=app: consumer_byte_rate=2.097152e+06")
}
