package quotas

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// quotaKeys lists the quota keys Kafka accepts per entity kind.
var quotaKeys = map[string]bool{
	"producer_byte_rate": true, "consumer_byte_rate": true, "request_percentage": true, "controller_mutation_rate": true,
}

// FilterProblem validates a DescribeClientQuotas filter as Kafka's
// ClientQuotasImage.describe does.
func FilterProblem(comps []kmsg.DescribeClientQuotasRequestComponent) (int16, string) {
	seen := map[string]bool{}
	for _, c := range comps {
		switch {
		case c.EntityType == "":
			return kerr.InvalidRequest.Code, "Invalid empty entity type."
		case seen[c.EntityType]:
			return kerr.InvalidRequest.Code, "Entity type " + c.EntityType + " cannot appear more than once in the filter."
		case c.EntityType != "user" && c.EntityType != "client-id" && c.EntityType != "ip":
			return kerr.UnsupportedVersion.Code, "Unsupported entity type " + c.EntityType
		}
		seen[c.EntityType] = true
		switch c.MatchType {
		case kmsg.QuotasMatchTypeExact:
			if c.Match == nil {
				return kerr.InvalidRequest.Code, "Request specified MATCH_TYPE_EXACT, but set match string to null."
			}
		case kmsg.QuotasMatchTypeDefault:
			if c.Match != nil {
				return kerr.InvalidRequest.Code, "Request specified MATCH_TYPE_DEFAULT, but also specified a match string."
			}
		case kmsg.QuotasMatchTypeAny:
			if c.Match != nil {
				return kerr.InvalidRequest.Code, "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string."
			}
		default:
			return kerr.InvalidRequest.Code, fmt.Sprintf("Unknown match type %d", c.MatchType)
		}
	}
	if seen["ip"] && (seen["user"] || seen["client-id"]) {
		return kerr.InvalidRequest.Code, "Invalid entity filter component combination. IP filter component should not be used with user or clientId filter component."
	}
	return 0, ""
}

// EntryProblem validates one AlterClientQuotas entry.
func EntryProblem(e *kmsg.AlterClientQuotasRequestEntry) (int16, string) {
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

// ProduceBytes is what a Produce counts against producer_byte_rate: its
// record batches (Kafka counts the whole request; the rest is a few dozen
// bytes per partition).
func ProduceBytes(req *kmsg.ProduceRequest) int {
	n := 0
	for i := range req.Topics {
		for j := range req.Topics[i].Partitions {
			n += len(req.Topics[i].Partitions[j].Records)
		}
	}
	return n
}
