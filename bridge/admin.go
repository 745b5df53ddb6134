// The admin floor shared by CreateTopics, DeleteTopics, DescribeConfigs,
// AlterConfigs, CreatePartitions and IncrementalAlterConfigs: the admin
// scope's error answer, Kafka's topic-name messages, replica-list checks,
// broker defaults and BROKER resources, and the per-resource loop of the
// two alter APIs.

package bridge

import (
	"context"
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafka-iggy/kafka-iggy/bridge/clientmetrics"
	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
	"github.com/kafka-iggy/kafka-iggy/bridge/topicconfig"
	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

// adminError maps an Iggy failure of an admin request on resource name to
// a Kafka code and message. Failures without a Kafka equivalent
// (UNKNOWN_SERVER_ERROR) are logged with their Iggy code and carry the Iggy
// error as message; mapped ones carry none, as Kafka's do.
func (b *Bridge) adminError(resource, api string, err error) (int16, string) {
	code := kafkaCode(err, scopeAdmin)
	if code != kerr.UnknownServerError.Code {
		return code, ""
	}
	b.log.Warn().Err(err).Str("resource", resource).Uint32("iggy_code", iggyCode(err)).Msg(api + ": iggy call failed")
	return code, err.Error()
}

// brokerDefaults are the defaults topics the gateway creates get.
func (b *Bridge) brokerDefaults() topicconfig.BrokerDefaults {
	bd := topicconfig.NewBrokerDefaults(b.topics.opts, b.cfg.Topics.DefaultPartitions, b.cfg.Topics.MaxMessageBytes)
	bd.FetchMaxBytes = b.cfg.Fetch.MaxBytes
	return bd
}

// checkBrokerResource checks a BROKER resource name other than "": it must
// be this gateway's node id.
func (b *Bridge) checkBrokerResource(name string) (int16, string) {
	id, err := strconv.ParseInt(name, 10, 32)
	if err != nil {
		return kerr.InvalidRequest.Code, "Broker id must be an integer, but it is: " + name
	}
	if self := b.self().NodeID; int32(id) != self {
		return kerr.InvalidRequest.Code, fmt.Sprintf("Unexpected broker id, expected %d or empty string, but received %s", self, name)
	}
	return 0, ""
}

// alterOutcome is one resource's answer to an alter request.
type alterOutcome struct {
	code int16
	msg  *string // nil when there is nothing to say
}

// alterResources answers every resource of an IncrementalAlterConfigs
// request, or of an AlterConfigs request put in that form (every config a
// SET, replace: the configs it leaves out go back to their defaults), in
// request order: a resource named twice is INVALID_REQUEST, the others go
// through alterResource.
func (b *Bridge) alterResources(ctx context.Context, req *kmsg.IncrementalAlterConfigsRequest, replace bool) []alterOutcome {
	keys := make([]resourceKey, len(req.Resources))
	for i := range req.Resources {
		keys[i] = resourceKey{req.Resources[i].ResourceType, req.Resources[i].ResourceName}
	}
	dups := duplicateResources(keys)
	out := make([]alterOutcome, len(keys))
	for i, k := range keys {
		var msg string
		if dups[k] {
			out[i].code, msg = kerr.InvalidRequest.Code, "Each resource must appear at most once."
		} else {
			ops := make([]topicconfig.AlterOp, 0, len(req.Resources[i].Configs))
			for _, c := range req.Resources[i].Configs {
				ops = append(ops, topicconfig.AlterOp{Name: c.Name, Op: c.Op, Value: c.Value})
			}
			out[i].code, msg = b.alterResource(ctx, k.typ, k.name, ops, replace, req.ValidateOnly)
		}
		if msg != "" {
			out[i].msg = &msg
		}
	}
	return out
}

// resourceKey identifies a config resource of a request.
type resourceKey struct {
	typ  kmsg.ConfigResourceType
	name string
}

// duplicateResources returns the resources a request names more than once.
func duplicateResources(keys []resourceKey) map[resourceKey]bool {
	seen := make(map[resourceKey]int, len(keys))
	for _, k := range keys {
		seen[k]++
	}
	dups := map[resourceKey]bool{}
	for k, n := range seen {
		if n > 1 {
			dups[k] = true
		}
	}
	return dups
}

// alterResource applies ops to one resource (AlterConfigs with replace,
// IncrementalAlterConfigs without) and returns the Kafka outcome.
func (b *Bridge) alterResource(ctx context.Context, typ kmsg.ConfigResourceType, name string, ops []topicconfig.AlterOp, replace, validateOnly bool) (int16, string) {
	switch typ {
	case kmsg.ConfigResourceTypeTopic:
	case kmsg.ConfigResourceTypeBroker:
		if name != "" {
			if code, msg := b.checkBrokerResource(name); code != 0 {
				return code, msg
			}
		}
		if len(ops) > 0 {
			return kerr.InvalidRequest.Code, fmt.Sprintf(
				"Invalid config value for resource ConfigResource(type=BROKER, name='%s'): broker configs of the gateway are read-only (%s); set them in its configuration", name, ops[0].Name)
		}
		return 0, ""
	case kmsg.ConfigResourceTypeClientMetrics:
		cops := make([]clientmetrics.AlterOp, len(ops))
		for i, o := range ops {
			cops[i] = clientmetrics.AlterOp(o)
		}
		p, err := b.cmetrics.Alter(ctx, name, cops, replace, validateOnly)
		if err != nil {
			return b.adminError(name, "alter configs", err)
		} else if p != nil {
			return p.Code, p.Msg
		}
		return 0, ""
	default:
		return kerr.InvalidRequest.Code, fmt.Sprintf("Unsupported resource type: %s", typ)
	}
	if name == "" {
		return kerr.InvalidRequest.Code, "Default topic resources are not allowed."
	}
	if msg := topicconfig.NameProblem(name); msg != "" {
		return kerr.InvalidTopicException.Code, msg
	}
	ref := b.topics.ref(name)
	info, err := b.iggy.RefreshTopic(ctx, ref)
	if err != nil {
		if iggy.IsNotFound(err) {
			return kerr.UnknownTopicOrPartition.Code, fmt.Sprintf("The topic '%s' does not exist.", name)
		}
		return b.adminError(name, "alter configs", err)
	}
	cur, err := b.store.Settings(ctx, info)
	if err != nil {
		return b.adminError(name, "alter configs", err)
	}
	patch, next, e := topicconfig.PlanAlter(cur, info.PartitionsCount, ops, replace, b.brokerDefaults())
	if e != nil {
		return e.Code, e.Msg
	}
	if validateOnly {
		return 0, ""
	}
	if len(patch) > 0 {
		req := &icodec.UpdateTopicRequest{StreamID: ref.StreamID(), TopicID: ref.TopicID(), Name: ref.Topic, Options: patch}
		err = b.iggy.Do(ctx, req, nil)
		b.iggy.InvalidateTopic(ref)
		if err != nil {
			if iggy.IsNotFound(err) {
				return kerr.UnknownTopicOrPartition.Code, fmt.Sprintf("The topic '%s' does not exist.", name)
			}
			return b.adminError(name, "alter configs", err)
		}
	}
	if !topicconfig.SameConfigs(topicconfig.StoredConfigs(cur), topicconfig.StoredConfigs(next)) {
		if err := b.store.PutConfigs(ctx, info, next); err != nil {
			return b.adminError(name, "alter configs", err)
		}
	}
	b.log.Info().Str("topic", name).Int("options", len(patch)).Msg("altered topic configs")
	return 0, ""
}

// eachTopic runs a request's topics in order, as CreateTopics and
// CreatePartitions do: a name that appears more than once is answered once
// by dup (Kafka: INVALID_REQUEST "Duplicate topic name.") and none of its
// entries run; every other topic runs do.
func eachTopic[T any](topics []T, name func(*T) string, dup func(name string), do func(*T)) {
	count := make(map[string]int, len(topics))
	for i := range topics {
		count[name(&topics[i])]++
	}
	answered := map[string]bool{}
	for i := range topics {
		t := &topics[i]
		n := name(t)
		if count[n] > 1 {
			if !answered[n] {
				answered[n] = true
				dup(n)
			}
			continue
		}
		do(t)
	}
}
