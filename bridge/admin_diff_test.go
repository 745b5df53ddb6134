package bridge_test

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestAdminDifferential runs the same admin requests against franz-go's
// kfake (a one-broker cluster) and against the gateway, and compares the
// outcomes that should match: error codes per topic or resource, partition
// counts, replication factors, the configs a topic has set, broker counts.
//
// Where the gateway follows real Kafka (or the issue) and kfake does not,
// the step says so in differs and pins the gateway's outcome in gateway;
// kfake's outcome is only logged. The intended differences:
//   - duplicate topic in CreateTopics: Kafka answers only the duplicated
//     name INVALID_REQUEST; kfake fails every topic of the request.
//   - replication factor 0: Kafka refuses (INVALID_REPLICATION_FACTOR);
//     kfake creates the topic.
//   - unknown config keys: the gateway answers INVALID_CONFIG naming the
//     key, as Kafka does; kfake accepts any config.
//   - CreatePartitions to the current count: Kafka answers
//     INVALID_PARTITIONS; kfake succeeds.
//   - APPEND to a non-LIST config: Kafka answers INVALID_CONFIG, kfake
//     INVALID_REQUEST.
//   - DescribeConfigs with an empty (non-null) name list: Kafka lists every
//     config, kfake none.
//   - BROKER resource "": Kafka lists only cluster-wide dynamic configs
//     (none here); kfake lists its static ones.
//   - AlterConfigs on a BROKER resource: the gateway's broker configs are
//     read-only (INVALID_REQUEST); kfake stores them.
//   - Default values differ by design (Iggy's defaults, e.g. retention.ms
//     -1, against kfake's Kafka defaults), so only configs a topic has set
//     (DYNAMIC_TOPIC_CONFIG) are compared.
func TestAdminDifferential(t *testing.T) {
	fake, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.DefaultNumPartitions(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Close)
	fcl, err := kgo.NewClient(kgo.SeedBrokers(fake.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fcl.Close)
	s := startStack(t)
	gcl := s.kgoClient(t)

	fst, gst := &diffState{ids: map[string][16]byte{}}, &diffState{ids: map[string][16]byte{}}
	for _, step := range diffSteps() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		fo, ferr := step.run(ctx, fcl, fst)
		goo, gerr := step.run(ctx, gcl, gst)
		cancel()
		if ferr != nil || gerr != nil {
			t.Fatalf("%s: kfake %v, gateway %v", step.name, ferr, gerr)
		}
		if step.differs != "" {
			t.Logf("%s: intended difference (%s): kfake %v", step.name, step.differs, fo)
			if !slices.Equal(goo, step.gateway) {
				t.Errorf("%s: gateway %v, want %v", step.name, goo, step.gateway)
			}
			continue
		}
		if !slices.Equal(fo, goo) {
			t.Errorf("%s:\n  kfake   %v\n  gateway %v", step.name, fo, goo)
		}
	}
}

// diffState carries what later steps need (topic ids) per cluster.
type diffState struct{ ids map[string][16]byte }

type diffStep struct {
	name    string
	run     func(context.Context, *kgo.Client, *diffState) ([]string, error)
	differs string   // why the gateway differs from kfake on purpose
	gateway []string // the gateway's pinned outcome when it differs
}

func codeName(c int16) string {
	if c == 0 {
		return "OK"
	}
	if e := kerr.ErrorForCode(c); e != nil {
		return e.(*kerr.Error).Message
	}
	return fmt.Sprint(c)
}

func diffCreate(validateOnly bool, topics ...kmsg.CreateTopicsRequestTopic) func(context.Context, *kgo.Client, *diffState) ([]string, error) {
	return func(ctx context.Context, cl *kgo.Client, st *diffState) ([]string, error) {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.Topics, req.ValidateOnly, req.TimeoutMillis = topics, validateOnly, 5000
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return nil, err
		}
		var out []string
		for _, rt := range resp.Topics {
			if rt.ErrorCode == 0 && !validateOnly {
				st.ids[rt.Topic] = rt.TopicID
			}
			out = append(out, fmt.Sprintf("%s=%s p=%d rf=%d", rt.Topic, codeName(rt.ErrorCode), rt.NumPartitions, rt.ReplicationFactor))
		}
		sort.Strings(out)
		return out, nil
	}
}

type delTopic struct {
	name string // "" = by id
	id   string // name whose recorded id to use; "?" = an unknown id
}

func diffDelete(topics ...delTopic) func(context.Context, *kgo.Client, *diffState) ([]string, error) {
	return func(ctx context.Context, cl *kgo.Client, st *diffState) ([]string, error) {
		req := kmsg.NewPtrDeleteTopicsRequest()
		for _, d := range topics {
			rt := kmsg.NewDeleteTopicsRequestTopic()
			if d.name != "" {
				rt.Topic = kmsg.StringPtr(d.name)
			}
			switch d.id {
			case "":
			case "?":
				rt.TopicID = [16]byte{9, 9, 9}
			default:
				rt.TopicID = st.ids[d.id]
			}
			req.Topics = append(req.Topics, rt)
		}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return nil, err
		}
		var out []string
		for _, rt := range resp.Topics {
			// Kafka answers an unknown id with a null name; kfake with "".
			name := "<null>"
			if rt.Topic != nil && *rt.Topic != "" {
				name = *rt.Topic
			}
			out = append(out, fmt.Sprintf("%s id=%v =%s", name, rt.TopicID != [16]byte{}, codeName(rt.ErrorCode)))
		}
		sort.Strings(out)
		return out, nil
	}
}

func diffPartitions(validateOnly bool, counts map[string]int32) func(context.Context, *kgo.Client, *diffState) ([]string, error) {
	return func(ctx context.Context, cl *kgo.Client, _ *diffState) ([]string, error) {
		req := kmsg.NewPtrCreatePartitionsRequest()
		req.ValidateOnly, req.TimeoutMillis = validateOnly, 5000
		for n, c := range counts {
			rt := kmsg.NewCreatePartitionsRequestTopic()
			rt.Topic, rt.Count = n, c
			req.Topics = append(req.Topics, rt)
		}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return nil, err
		}
		var out []string
		for _, rt := range resp.Topics {
			out = append(out, rt.Topic+"="+codeName(rt.ErrorCode))
		}
		sort.Strings(out)
		return out, nil
	}
}

// partitionCount reads a topic's partition count from Metadata.
func partitionCount(topic string) func(context.Context, *kgo.Client, *diffState) ([]string, error) {
	return func(ctx context.Context, cl *kgo.Client, _ *diffState) ([]string, error) {
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return nil, err
		}
		var out []string
		for _, t := range resp.Topics {
			out = append(out, fmt.Sprintf("%s=%s p=%d", *t.Topic, codeName(t.ErrorCode), len(t.Partitions)))
		}
		return out, nil
	}
}

type descResource struct {
	typ   kmsg.ConfigResourceType
	name  string
	names []string
}

// diffDescribe lists per resource its code and the configs set on it
// (DYNAMIC_TOPIC_CONFIG), or with all the number of configs.
func diffDescribe(all bool, resources ...descResource) func(context.Context, *kgo.Client, *diffState) ([]string, error) {
	return func(ctx context.Context, cl *kgo.Client, _ *diffState) ([]string, error) {
		req := kmsg.NewPtrDescribeConfigsRequest()
		for _, r := range resources {
			rr := kmsg.NewDescribeConfigsRequestResource()
			rr.ResourceType, rr.ResourceName, rr.ConfigNames = r.typ, r.name, r.names
			req.Resources = append(req.Resources, rr)
		}
		// Straight to broker 0: kgo would route BROKER resources to the
		// broker they name, and refuse unknown ones itself.
		raw, err := cl.Broker(0).Request(ctx, req)
		if err != nil {
			return nil, err
		}
		resp := raw.(*kmsg.DescribeConfigsResponse)
		var out []string
		for _, r := range resp.Resources {
			out = append(out, fmt.Sprintf("%s/%s=%s", r.ResourceType, r.ResourceName, codeName(r.ErrorCode)))
			if all {
				out = append(out, fmt.Sprintf("%s/%s configs>0=%v", r.ResourceType, r.ResourceName, len(r.Configs) > 0))
				continue
			}
			var set []string // kfake's order is a map's: compare sorted
			for _, c := range r.Configs {
				if c.Source == kmsg.ConfigSourceDynamicTopicConfig && c.Value != nil {
					set = append(set, fmt.Sprintf("  %s=%s", c.Name, *c.Value))
				}
			}
			sort.Strings(set)
			out = append(out, set...)
		}
		return out, nil
	}
}

type alterCfg struct {
	name  string
	op    kmsg.IncrementalAlterConfigOp
	value string
}

func diffIncremental(validateOnly bool, typ kmsg.ConfigResourceType, name string, cfgs ...alterCfg) func(context.Context, *kgo.Client, *diffState) ([]string, error) {
	return func(ctx context.Context, cl *kgo.Client, _ *diffState) ([]string, error) {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		req.ValidateOnly = validateOnly
		rr := kmsg.NewIncrementalAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = typ, name
		for _, c := range cfgs {
			rc := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
			rc.Name, rc.Op = c.name, c.op
			if c.op != kmsg.IncrementalAlterConfigOpDelete {
				rc.Value = kmsg.StringPtr(c.value)
			}
			rr.Configs = append(rr.Configs, rc)
		}
		req.Resources = append(req.Resources, rr)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return nil, err
		}
		var out []string
		for _, r := range resp.Resources {
			out = append(out, fmt.Sprintf("%s/%s=%s", r.ResourceType, r.ResourceName, codeName(r.ErrorCode)))
		}
		return out, nil
	}
}

func diffAlter(validateOnly bool, typ kmsg.ConfigResourceType, name string, cfgs map[string]string) func(context.Context, *kgo.Client, *diffState) ([]string, error) {
	return func(ctx context.Context, cl *kgo.Client, _ *diffState) ([]string, error) {
		req := kmsg.NewPtrAlterConfigsRequest()
		req.ValidateOnly = validateOnly
		rr := kmsg.NewAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = typ, name
		for k, v := range cfgs {
			rc := kmsg.NewAlterConfigsRequestResourceConfig()
			rc.Name, rc.Value = k, kmsg.StringPtr(v)
			rr.Configs = append(rr.Configs, rc)
		}
		req.Resources = append(req.Resources, rr)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return nil, err
		}
		var out []string
		for _, r := range resp.Resources {
			out = append(out, fmt.Sprintf("%s/%s=%s", r.ResourceType, r.ResourceName, codeName(r.ErrorCode)))
		}
		return out, nil
	}
}

func diffCluster(ctx context.Context, cl *kgo.Client, _ *diffState) ([]string, error) {
	req := kmsg.NewPtrDescribeClusterRequest()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	return []string{fmt.Sprintf("code=%s brokers=%d controller-is-broker=%v cluster-id=%v endpoint=%d",
		codeName(resp.ErrorCode), len(resp.Brokers), len(resp.Brokers) == 1 && resp.Brokers[0].NodeID == resp.ControllerID,
		resp.ClusterID != "", resp.EndpointType)}, nil
}

func topicReq(name string, partitions int32, rf int16, kv ...string) kmsg.CreateTopicsRequestTopic {
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, partitions, rf
	for i := 0; i+1 < len(kv); i += 2 {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = kv[i], kmsg.StringPtr(kv[i+1])
		rt.Configs = append(rt.Configs, c)
	}
	return rt
}

func diffSteps() []diffStep {
	topic, broker := kmsg.ConfigResourceTypeTopic, kmsg.ConfigResourceTypeBroker
	set, del, appendOp := kmsg.IncrementalAlterConfigOpSet, kmsg.IncrementalAlterConfigOpDelete, kmsg.IncrementalAlterConfigOpAppend
	return []diffStep{
		{name: "create", run: diffCreate(false,
			topicReq("d-a", 3, -1, "retention.ms", "3600000"),
			topicReq("d-b", -1, -1),
			topicReq("d-c", 2, 1, "retention.bytes", "2147483648", "compression.type", "gzip"),
			topicReq("d-rf2", 1, 2),
			topicReq("d-zero", 0, 1))},
		{name: "create existing", run: diffCreate(false, topicReq("d-a", 3, -1))},
		{name: "create validate only", run: diffCreate(true, topicReq("d-v", 2, -1, "retention.ms", "1000"))},
		{name: "validate only created nothing", run: diffDescribe(false, descResource{typ: topic, name: "d-v"})},
		{name: "create duplicate", run: diffCreate(false, topicReq("d-dup", 1, 1), topicReq("d-dup", 1, 1), topicReq("d-e", 1, 1)),
			differs: "Kafka answers only the duplicated name", gateway: []string{"d-dup=INVALID_REQUEST p=-1 rf=-1", "d-e=OK p=1 rf=1"}},
		{name: "create rf 0", run: diffCreate(false, topicReq("d-rf0", 1, 0)),
			differs: "Kafka refuses replication factor 0", gateway: []string{"d-rf0=INVALID_REPLICATION_FACTOR p=-1 rf=-1"}},
		{name: "create compact", run: diffCreate(false, topicReq("d-compact", 1, 1, "cleanup.policy", "compact"))},
		{name: "create unknown config", run: diffCreate(false, topicReq("d-unknown", 1, 1, "no.such.config", "1")),
			differs: "Kafka refuses unknown topic configs", gateway: []string{"d-unknown=INVALID_CONFIG p=-1 rf=-1"}},

		{name: "describe topics", run: diffDescribe(false,
			descResource{typ: topic, name: "d-a"}, descResource{typ: topic, name: "d-c"},
			descResource{typ: topic, name: "d-a", names: []string{"retention.ms", "no.such"}},
			descResource{typ: topic, name: "d-missing"})},
		{name: "describe brokers", run: diffDescribe(true,
			descResource{typ: broker, name: "0"}, descResource{typ: broker, name: "3"}, descResource{typ: broker, name: "x"},
			descResource{typ: kmsg.ConfigResourceType(3), name: "y"})},
		{name: "describe empty name list", run: diffDescribe(true, descResource{typ: topic, name: "d-a", names: []string{}}),
			differs: "Kafka lists every config for an empty name list", gateway: []string{"TOPIC/d-a=OK", "TOPIC/d-a configs>0=true"}},
		{name: "describe broker default resource", run: diffDescribe(true, descResource{typ: broker, name: ""}),
			differs: "Kafka lists only dynamic cluster defaults", gateway: []string{"BROKER/=OK", "BROKER/ configs>0=false"}},

		{name: "incremental set", run: diffIncremental(false, topic, "d-b", alterCfg{"retention.ms", set, "60000"}, alterCfg{"compression.type", set, "gzip"})},
		{name: "incremental validate only", run: diffIncremental(true, topic, "d-b", alterCfg{"retention.ms", set, "1"})},
		{name: "after incremental set", run: diffDescribe(false, descResource{typ: topic, name: "d-b"})},
		{name: "incremental delete", run: diffIncremental(false, topic, "d-b", alterCfg{"retention.ms", del, ""})},
		{name: "after incremental delete", run: diffDescribe(false, descResource{typ: topic, name: "d-b"})},
		{name: "incremental missing topic", run: diffIncremental(false, topic, "d-missing", alterCfg{"retention.ms", set, "1"})},
		{name: "incremental append scalar", run: diffIncremental(false, topic, "d-b", alterCfg{"retention.ms", appendOp, "1"}),
			differs: "Kafka answers INVALID_CONFIG", gateway: []string{"TOPIC/d-b=INVALID_CONFIG"}},

		{name: "alter replaces", run: diffAlter(false, topic, "d-c", map[string]string{"retention.ms": "7200000"})},
		{name: "after alter", run: diffDescribe(false, descResource{typ: topic, name: "d-c"})},
		{name: "alter validate only", run: diffAlter(true, topic, "d-c", map[string]string{"retention.ms": "1"})},
		{name: "after alter validate only", run: diffDescribe(false, descResource{typ: topic, name: "d-c"})},
		{name: "alter missing topic", run: diffAlter(false, topic, "d-missing", map[string]string{"retention.ms": "1"})},
		{name: "alter unknown key", run: diffAlter(false, topic, "d-c", map[string]string{"no.such": "1"}),
			differs: "the issue wants INVALID_CONFIG naming the key", gateway: []string{"TOPIC/d-c=INVALID_CONFIG"}},
		{name: "alter broker", run: diffAlter(false, broker, "0", map[string]string{"log.retention.ms": "1"}),
			differs: "the gateway's broker configs are read-only", gateway: []string{"BROKER/0=INVALID_REQUEST"}},

		{name: "partitions", run: diffPartitions(false, map[string]int32{"d-a": 5, "d-b": 0, "d-missing": 2})},
		{name: "partitions validate only", run: diffPartitions(true, map[string]int32{"d-c": 4})},
		{name: "partition counts", run: partitionCount("d-c")},
		{name: "partitions equal", run: diffPartitions(false, map[string]int32{"d-a": 5}),
			differs: "Kafka refuses a count that is not an increase", gateway: []string{"d-a=INVALID_PARTITIONS"}},
		{name: "partition count grown", run: partitionCount("d-a")},

		{name: "delete", run: diffDelete(delTopic{name: "d-a"}, delTopic{id: "d-b"}, delTopic{name: "d-missing"}, delTopic{id: "?"})},
		{name: "delete both name and id", run: diffDelete(delTopic{name: "d-c", id: "d-c"})},
		{name: "deleted", run: diffDescribe(false, descResource{typ: topic, name: "d-a"}, descResource{typ: topic, name: "d-b"})},
		{name: "recreate", run: diffCreate(false, topicReq("d-a", 1, 1))},

		{name: "describe cluster", run: diffCluster},
	}
}
