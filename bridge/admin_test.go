package bridge_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
)

// Integration tests of the admin APIs (CreateTopics, DeleteTopics,
// CreatePartitions, DescribeConfigs, AlterConfigs, IncrementalAlterConfigs,
// DescribeCluster) over the whole stack. One stack serves every subtest;
// each subtest uses its own topic names.

func adminCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func strp(s string) *string { return &s }

// topicConfigCount is the number of configs a topic describes with: the 7
// that map to Iggy options or the gateway (max.message.bytes) and the 26
// held in the topic-config store (topicconfig/held.go).
const topicConfigCount = 33

// clientAt returns a client of s that speaks at most version v of key.
func clientAt(t *testing.T, s *stack, key, v int16) *kgo.Client {
	vs := kversion.Stable()
	vs.SetMaxKeyVersion(key, v)
	return s.kgoClient(t, kgo.MaxVersions(vs))
}

// createTopicReq builds a one-topic CreateTopics request.
func createTopicReq(name string, partitions int32, rf int16, configs map[string]string) kmsg.CreateTopicsRequestTopic {
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic = name
	rt.NumPartitions = partitions
	rt.ReplicationFactor = rf
	for k, v := range configs {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name = k
		c.Value = strp(v)
		rt.Configs = append(rt.Configs, c)
	}
	return rt
}

func createTopics(t *testing.T, cl *kgo.Client, validateOnly bool, topics ...kmsg.CreateTopicsRequestTopic) *kmsg.CreateTopicsResponse {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Topics = topics
	req.ValidateOnly = validateOnly
	req.TimeoutMillis = 5000
	resp, err := req.RequestWith(adminCtx(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// describeTopic returns the configs of a topic by name (failing on an error code).
func describeTopic(t *testing.T, cl *kgo.Client, topic string, synonyms bool, names ...string) map[string]kmsg.DescribeConfigsResponseResourceConfig {
	t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType = kmsg.ConfigResourceTypeTopic
	rr.ResourceName = topic
	rr.ConfigNames = names
	req.Resources = append(req.Resources, rr)
	req.IncludeSynonyms = synonyms
	resp, err := req.RequestWith(adminCtx(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Resources) != 1 || resp.Resources[0].ErrorCode != 0 {
		t.Fatalf("describe %s: %+v", topic, resp.Resources)
	}
	out := map[string]kmsg.DescribeConfigsResponseResourceConfig{}
	for _, c := range resp.Resources[0].Configs {
		out[c.Name] = c
	}
	return out
}

func topicCodes(resp *kmsg.CreateTopicsResponse) map[string]int16 {
	out := map[string]int16{}
	for _, rt := range resp.Topics {
		out[rt.Topic] = rt.ErrorCode
	}
	return out
}

func TestAdminAPIs(t *testing.T) {
	s := startStack(t)
	cl := s.kgoClient(t)
	adm := kadm.NewClient(cl)

	t.Run("CreateTopics", func(t *testing.T) {
		assign := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		assign.Partition, assign.Replicas = 0, []int32{0}
		withAssign := createTopicReq("ct-assigned", -1, -1, nil)
		withAssign.ReplicaAssignment = []kmsg.CreateTopicsRequestTopicReplicaAssignment{assign}
		badAssign := createTopicReq("ct-bad-assign", -1, -1, nil)
		a2 := assign
		a2.Replicas = []int32{5}
		badAssign.ReplicaAssignment = []kmsg.CreateTopicsRequestTopicReplicaAssignment{a2}
		assignWithCount := createTopicReq("ct-assign-count", 1, -1, nil)
		assignWithCount.ReplicaAssignment = []kmsg.CreateTopicsRequestTopicReplicaAssignment{assign}
		nullCfg := createTopicReq("ct-null", 1, 1, nil)
		nc := kmsg.NewCreateTopicsRequestTopicConfig()
		nc.Name = "retention.ms"
		nullCfg.Configs = append(nullCfg.Configs, nc)

		resp := createTopics(t, cl, false,
			createTopicReq("ct-plain", 3, -1, nil),
			createTopicReq("ct-default", -1, -1, nil),
			createTopicReq("ct-rf1", 2, 1, map[string]string{"retention.ms": "3600000", "cleanup.policy": "delete"}),
			createTopicReq("ct-rf3", 1, 3, nil),
			createTopicReq("ct-rf0", 1, 0, nil),
			createTopicReq("ct-zero", 0, 1, nil),
			createTopicReq("ct-many", 1001, 1, nil),
			createTopicReq("bad/name", 1, 1, nil),
			createTopicReq("ct-compact", 1, 1, map[string]string{"cleanup.policy": "compact"}),
			createTopicReq("ct-unknown-cfg", 1, 1, map[string]string{"no.such.config": "1"}),
			createTopicReq("ct-dup", 1, 1, nil),
			createTopicReq("ct-dup", 2, 1, nil),
			withAssign, badAssign, assignWithCount, nullCfg,
		)
		want := map[string]int16{
			"ct-plain": 0, "ct-default": 0, "ct-rf1": 0, "ct-assigned": 0,
			"ct-rf3":          kerr.InvalidReplicationFactor.Code,
			"ct-rf0":          kerr.InvalidReplicationFactor.Code,
			"ct-zero":         kerr.InvalidPartitions.Code,
			"ct-many":         kerr.InvalidPartitions.Code,
			"bad/name":        kerr.InvalidTopicException.Code,
			"ct-compact":      0,
			"ct-unknown-cfg":  kerr.InvalidConfig.Code,
			"ct-dup":          kerr.InvalidRequest.Code,
			"ct-bad-assign":   kerr.InvalidReplicaAssignment.Code,
			"ct-assign-count": kerr.InvalidRequest.Code,
			"ct-null":         kerr.InvalidConfig.Code,
		}
		got := topicCodes(resp)
		if len(resp.Topics) != len(want) {
			t.Errorf("%d answers, want %d: %v", len(resp.Topics), len(want), got)
		}
		for name, code := range want {
			if got[name] != code {
				t.Errorf("%s: code %d, want %d", name, got[name], code)
			}
		}
		for _, rt := range resp.Topics {
			switch {
			case rt.ErrorCode != 0:
				if rt.ErrorMessage == nil || rt.NumPartitions != -1 || rt.ReplicationFactor != -1 || rt.Configs != nil {
					t.Errorf("%s failed answer: %+v", rt.Topic, rt)
				}
			case rt.TopicID == [16]byte{} || rt.ReplicationFactor != 1 || len(rt.Configs) != topicConfigCount:
				t.Errorf("%s created answer: %+v", rt.Topic, rt)
			}
			if rt.Topic == "ct-rf1" {
				for _, c := range rt.Configs {
					if c.Name == "retention.ms" && (*c.Value != "3600000" || kmsg.ConfigSource(c.Source) != kmsg.ConfigSourceDynamicTopicConfig) {
						t.Errorf("retention.ms: %+v", c)
					}
				}
			}
		}
		parts := map[string]int32{}
		for _, rt := range resp.Topics {
			parts[rt.Topic] = rt.NumPartitions
		}
		if parts["ct-plain"] != 3 || parts["ct-default"] != 1 || parts["ct-assigned"] != 1 {
			t.Errorf("partitions: %v", parts)
		}

		// Again: exists. A '.'/'_' twin collides.
		again := createTopics(t, cl, false, createTopicReq("ct-plain", 3, -1, nil), createTopicReq("ct.twin", 1, 1, nil), createTopicReq("ct_twin", 1, 1, nil))
		if c := topicCodes(again); c["ct-plain"] != kerr.TopicAlreadyExists.Code || c["ct.twin"] != 0 || c["ct_twin"] != kerr.InvalidTopicException.Code {
			t.Errorf("second create: %v", c)
		}

		// validate_only: full answer, nothing created, bad options refused.
		vo := createTopics(t, cl, true,
			createTopicReq("ct-validate", 4, -1, map[string]string{"retention.bytes": "1073741824", "segment.bytes": "1048576"}),
			createTopicReq("ct-validate-bad", 4, -1, map[string]string{"segment.bytes": "1000"}),
			createTopicReq("ct-plain", 1, -1, nil))
		if c := topicCodes(vo); c["ct-validate"] != 0 || c["ct-validate-bad"] != kerr.InvalidConfig.Code || c["ct-plain"] != kerr.TopicAlreadyExists.Code {
			t.Errorf("validate only: %v", c)
		}
		for _, rt := range vo.Topics {
			if rt.Topic == "ct-validate" && (rt.NumPartitions != 4 || rt.TopicID != [16]byte{} || len(rt.Configs) != topicConfigCount) {
				t.Errorf("validate only answer: %+v", rt)
			}
			if rt.Topic == "ct-validate-bad" && (rt.ErrorMessage == nil || !strings.Contains(*rt.ErrorMessage, "segment.bytes")) {
				t.Errorf("validate only message: %v", rt.ErrorMessage)
			}
		}
		if _, err := s.Client.RefreshTopic(adminCtx(t), iggy.TopicRef{Stream: "kafka", Topic: "ct-validate"}); !iggy.IsNotFound(err) {
			t.Errorf("validate_only created the topic: %v", err)
		}
	})

	t.Run("DeleteTopics", func(t *testing.T) {
		created := createTopics(t, cl, false, createTopicReq("dt-a", 2, 1, nil), createTopicReq("dt-b", 1, 1, nil), createTopicReq("dt-c", 1, 1, nil))
		ids := map[string][16]byte{}
		for _, rt := range created.Topics {
			if rt.ErrorCode != 0 {
				t.Fatalf("create %s: %d", rt.Topic, rt.ErrorCode)
			}
			ids[rt.Topic] = rt.TopicID
		}
		req := kmsg.NewPtrDeleteTopicsRequest()
		byName := func(n string) kmsg.DeleteTopicsRequestTopic {
			x := kmsg.NewDeleteTopicsRequestTopic()
			x.Topic = strp(n)
			return x
		}
		byID := func(id [16]byte) kmsg.DeleteTopicsRequestTopic {
			x := kmsg.NewDeleteTopicsRequestTopic()
			x.TopicID = id
			return x
		}
		both := byName("dt-c")
		both.TopicID = ids["dt-c"]
		req.Topics = []kmsg.DeleteTopicsRequestTopic{
			byName("dt-a"), byID(ids["dt-b"]), byName("dt-missing"), byID([16]byte{1, 2, 3}), both, byID([16]byte{}),
		}
		resp, err := req.RequestWith(adminCtx(t), cl)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Topics) != 6 {
			t.Fatalf("answers: %+v", resp.Topics)
		}
		for i, want := range []struct {
			name *string
			id   [16]byte
			code int16
		}{
			{strp("dt-a"), ids["dt-a"], 0},
			{strp("dt-b"), ids["dt-b"], 0},
			{strp("dt-missing"), [16]byte{}, kerr.UnknownTopicOrPartition.Code},
			{nil, [16]byte{1, 2, 3}, kerr.UnknownTopicID.Code},
			{strp("dt-c"), ids["dt-c"], kerr.InvalidRequest.Code},
			{nil, [16]byte{}, kerr.InvalidRequest.Code},
		} {
			got := resp.Topics[i]
			if got.ErrorCode != want.code || got.TopicID != want.id || (got.Topic == nil) != (want.name == nil) ||
				(got.Topic != nil && *got.Topic != *want.name) {
				t.Errorf("answer %d: %+v, want %+v", i, got, want)
			}
		}
		// Gone, and creatable again at once (the client cache was dropped).
		md, err := adm.ListTopics(adminCtx(t), "dt-a", "dt-b")
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range md {
			if d.Err == nil {
				t.Errorf("%s still listed", d.Topic)
			}
		}
		again := createTopics(t, cl, false, createTopicReq("dt-a", 3, 1, nil))
		if again.Topics[0].ErrorCode != 0 || again.Topics[0].NumPartitions != 3 || again.Topics[0].TopicID == ids["dt-a"] {
			t.Errorf("recreate: %+v", again.Topics[0])
		}
		// v5: names only.
		old := kmsg.NewPtrDeleteTopicsRequest()
		old.TopicNames = []string{"dt-a", "dt-a2"}
		resp5, err := old.RequestWith(adminCtx(t), clientAt(t, s, 20, 5))
		if err != nil {
			t.Fatal(err)
		}
		if len(resp5.Topics) != 2 || resp5.Topics[0].ErrorCode != 0 || resp5.Topics[1].ErrorCode != kerr.UnknownTopicOrPartition.Code {
			t.Errorf("v5: %+v", resp5.Topics)
		}
	})

	t.Run("CreatePartitions", func(t *testing.T) {
		created := createTopics(t, cl, false, createTopicReq("cp-a", 2, 1, map[string]string{"retention.bytes": "1073741824"}))
		if created.Topics[0].ErrorCode != 0 {
			t.Fatalf("create: %+v", created.Topics[0])
		}
		grow := func(validateOnly bool, counts map[string]int32) map[string]int16 {
			req := kmsg.NewPtrCreatePartitionsRequest()
			req.ValidateOnly = validateOnly
			for n, c := range counts {
				rt := kmsg.NewCreatePartitionsRequestTopic()
				rt.Topic, rt.Count = n, c
				req.Topics = append(req.Topics, rt)
			}
			resp, err := req.RequestWith(adminCtx(t), cl)
			if err != nil {
				t.Fatal(err)
			}
			out := map[string]int16{}
			for _, rt := range resp.Topics {
				out[rt.Topic] = rt.ErrorCode
			}
			return out
		}
		if c := grow(true, map[string]int32{"cp-a": 5}); c["cp-a"] != 0 {
			t.Errorf("validate only: %v", c)
		}
		if c := grow(false, map[string]int32{"cp-a": 2, "cp-missing": 3}); c["cp-a"] != kerr.InvalidPartitions.Code || c["cp-missing"] != kerr.UnknownTopicOrPartition.Code {
			t.Errorf("equal/missing: %v", c)
		}
		if c := grow(false, map[string]int32{"cp-a": 1}); c["cp-a"] != kerr.InvalidPartitions.Code {
			t.Errorf("smaller: %v", c)
		}
		if c := grow(false, map[string]int32{"cp-a": 4}); c["cp-a"] != 0 {
			t.Errorf("grow: %v", c)
		}
		md, err := adm.ListTopics(adminCtx(t), "cp-a")
		if err != nil {
			t.Fatal(err)
		}
		if n := len(md["cp-a"].Partitions); n != 4 {
			t.Errorf("partitions after grow: %d", n)
		}
		// retention.bytes is per partition: unchanged by the growth.
		if c := describeTopic(t, cl, "cp-a", false, "retention.bytes"); *c["retention.bytes"].Value != "1073741824" {
			t.Errorf("retention.bytes after grow: %s", *c["retention.bytes"].Value)
		}
	})

	t.Run("DescribeAndAlterConfigs", func(t *testing.T) {
		if c := topicCodes(createTopics(t, cl, false, createTopicReq("cfg-a", 2, 1,
			map[string]string{"retention.ms": "60000", "segment.bytes": "1048576", "compression.type": "gzip", "max.message.bytes": "2000"}))); c["cfg-a"] != 0 {
			t.Fatalf("create: %v", c)
		}
		cfgs := describeTopic(t, cl, "cfg-a", false)
		for name, w := range map[string]struct {
			value    string
			source   kmsg.ConfigSource
			readOnly bool
		}{
			"retention.ms":      {"60000", kmsg.ConfigSourceDynamicTopicConfig, false},
			"segment.bytes":     {"1048576", kmsg.ConfigSourceDynamicTopicConfig, true},
			"compression.type":  {"gzip", kmsg.ConfigSourceDynamicTopicConfig, false},
			"retention.bytes":   {"-1", kmsg.ConfigSourceDefaultConfig, false},
			"flush.messages":    {"1024", kmsg.ConfigSourceDefaultConfig, true},
			"cleanup.policy":    {"delete", kmsg.ConfigSourceDefaultConfig, false},
			"max.message.bytes": {"2000", kmsg.ConfigSourceDynamicTopicConfig, false},
		} {
			c, ok := cfgs[name]
			if !ok || *c.Value != w.value || c.Source != w.source || c.ReadOnly != w.readOnly || c.IsSensitive || c.Documentation != nil || c.ConfigSynonyms != nil {
				t.Errorf("%s: %+v, want %+v", name, c, w)
			}
		}
		if len(cfgs) != topicConfigCount {
			t.Errorf("configs: %d", len(cfgs))
		}
		if syn := describeTopic(t, cl, "cfg-a", true, "retention.ms")["retention.ms"].ConfigSynonyms; len(syn) != 2 ||
			syn[0].Source != kmsg.ConfigSourceDynamicTopicConfig || syn[1].Name != "log.retention.ms" {
			t.Errorf("synonyms: %+v", syn)
		}

		incr := func(validateOnly bool, ops ...kmsg.IncrementalAlterConfigsRequestResourceConfig) (int16, *string) {
			req := kmsg.NewPtrIncrementalAlterConfigsRequest()
			req.ValidateOnly = validateOnly
			rr := kmsg.NewIncrementalAlterConfigsRequestResource()
			rr.ResourceType, rr.ResourceName, rr.Configs = kmsg.ConfigResourceTypeTopic, "cfg-a", ops
			req.Resources = append(req.Resources, rr)
			resp, err := req.RequestWith(adminCtx(t), cl)
			if err != nil {
				t.Fatal(err)
			}
			return resp.Resources[0].ErrorCode, resp.Resources[0].ErrorMessage
		}
		op := func(name string, o kmsg.IncrementalAlterConfigOp, v *string) kmsg.IncrementalAlterConfigsRequestResourceConfig {
			c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
			c.Name, c.Op, c.Value = name, o, v
			return c
		}
		if code, _ := incr(true, op("retention.ms", kmsg.IncrementalAlterConfigOpSet, strp("1000"))); code != 0 {
			t.Fatalf("validate only: %d", code)
		}
		if v := *describeTopic(t, cl, "cfg-a", false)["retention.ms"].Value; v != "60000" {
			t.Errorf("validate only changed retention.ms to %s", v)
		}
		if code, msg := incr(false, op("retention.bytes", kmsg.IncrementalAlterConfigOpSet, strp("536870912")), op("retention.ms", kmsg.IncrementalAlterConfigOpDelete, nil)); code != 0 {
			t.Fatalf("set/delete: %d %v", code, msg)
		}
		cfgs = describeTopic(t, cl, "cfg-a", false)
		if c := cfgs["retention.bytes"]; *c.Value != "536870912" || c.Source != kmsg.ConfigSourceDynamicTopicConfig {
			t.Errorf("retention.bytes: %+v", c)
		}
		if c := cfgs["retention.ms"]; *c.Value != "-1" || c.Source != kmsg.ConfigSourceDefaultConfig {
			t.Errorf("retention.ms after delete: %+v", c)
		}
		if c := cfgs["compression.type"]; *c.Value != "gzip" {
			t.Errorf("incremental alter touched compression.type: %+v", c)
		}
		for _, tc := range []struct {
			op   kmsg.IncrementalAlterConfigsRequestResourceConfig
			code int16
			msg  string
		}{
			{op("segment.bytes", kmsg.IncrementalAlterConfigOpSet, strp("2097152")), kerr.InvalidConfig.Code, "segment.bytes"},
			{op("no.such", kmsg.IncrementalAlterConfigOpSet, strp("1")), kerr.InvalidConfig.Code, "no.such"},
			{op("cleanup.policy", kmsg.IncrementalAlterConfigOpAppend, strp("shred")), kerr.InvalidConfig.Code, "String must be one of: compact, delete"},
			{op("retention.ms", kmsg.IncrementalAlterConfigOpAppend, strp("1")), kerr.InvalidConfig.Code, "LIST"},
			{op("retention.bytes", kmsg.IncrementalAlterConfigOpSet, strp("1000")), kerr.InvalidConfig.Code, "retention.bytes"},
		} {
			if code, msg := incr(false, tc.op); code != tc.code || msg == nil || !strings.Contains(*msg, tc.msg) {
				t.Errorf("%s: %d %v, want %d %q", tc.op.Name, code, msg, tc.code, tc.msg)
			}
		}

		// AlterConfigs replaces: compression.type and retention.bytes not
		// named go back to their defaults; the unchanged create-only key is
		// accepted.
		alter := kmsg.NewPtrAlterConfigsRequest()
		ar := kmsg.NewAlterConfigsRequestResource()
		ar.ResourceType, ar.ResourceName = kmsg.ConfigResourceTypeTopic, "cfg-a"
		for k, v := range map[string]string{"retention.ms": "120000", "segment.bytes": "1048576"} {
			c := kmsg.NewAlterConfigsRequestResourceConfig()
			c.Name, c.Value = k, strp(v)
			ar.Configs = append(ar.Configs, c)
		}
		missing := kmsg.NewAlterConfigsRequestResource()
		missing.ResourceType, missing.ResourceName = kmsg.ConfigResourceTypeTopic, "cfg-missing"
		broker := kmsg.NewAlterConfigsRequestResource()
		broker.ResourceType, broker.ResourceName = kmsg.ConfigResourceTypeBroker, "0"
		bc := kmsg.NewAlterConfigsRequestResourceConfig()
		bc.Name, bc.Value = "log.retention.ms", strp("1")
		broker.Configs = append(broker.Configs, bc)
		alter.Resources = append(alter.Resources, ar, missing, broker)
		aresp, err := alter.RequestWith(adminCtx(t), cl)
		if err != nil {
			t.Fatal(err)
		}
		acodes := map[string]int16{} // kgo splits BROKER resources off: match by name
		for _, r := range aresp.Resources {
			acodes[r.ResourceType.String()+"/"+r.ResourceName] = r.ErrorCode
		}
		if len(acodes) != 3 || acodes["TOPIC/cfg-a"] != 0 || acodes["TOPIC/cfg-missing"] != kerr.UnknownTopicOrPartition.Code ||
			acodes["BROKER/0"] != kerr.InvalidRequest.Code {
			t.Errorf("alter configs: %v", acodes)
		}
		cfgs = describeTopic(t, cl, "cfg-a", false)
		for name, w := range map[string]struct {
			value  string
			source kmsg.ConfigSource
		}{
			"retention.ms":      {"120000", kmsg.ConfigSourceDynamicTopicConfig},
			"retention.bytes":   {"-1", kmsg.ConfigSourceDefaultConfig},
			"compression.type":  {"none", kmsg.ConfigSourceDefaultConfig},
			"segment.bytes":     {"1048576", kmsg.ConfigSourceDynamicTopicConfig},
			"max.message.bytes": {"1048588", kmsg.ConfigSourceDefaultConfig},
		} {
			if c := cfgs[name]; *c.Value != w.value || c.Source != w.source {
				t.Errorf("after replace %s: %+v, want %+v", name, c, w)
			}
		}

		// Other resources.
		req := kmsg.NewPtrDescribeConfigsRequest()
		for _, r := range []struct {
			typ  kmsg.ConfigResourceType
			name string
		}{
			{kmsg.ConfigResourceTypeBroker, "0"}, {kmsg.ConfigResourceTypeBroker, ""}, {kmsg.ConfigResourceTypeBroker, "7"},
			{kmsg.ConfigResourceTypeBroker, "x"}, {kmsg.ConfigResourceTypeTopic, "cfg-missing"}, {kmsg.ConfigResourceTypeTopic, "bad/name"},
			{kmsg.ConfigResourceTypeGroupConfig, "g"},
		} {
			rr := kmsg.NewDescribeConfigsRequestResource()
			rr.ResourceType, rr.ResourceName = r.typ, r.name
			req.Resources = append(req.Resources, rr)
		}
		// Straight to broker 0: kgo would route BROKER resources to the
		// broker they name.
		raw, err := cl.Broker(0).Request(adminCtx(t), req)
		if err != nil {
			t.Fatal(err)
		}
		dresp := raw.(*kmsg.DescribeConfigsResponse)
		res := dresp.Resources
		if res[0].ErrorCode != 0 || len(res[0].Configs) < 10 || res[1].ErrorCode != 0 || len(res[1].Configs) != 0 ||
			res[2].ErrorCode != kerr.InvalidRequest.Code || res[3].ErrorCode != kerr.InvalidRequest.Code ||
			res[4].ErrorCode != kerr.UnknownTopicOrPartition.Code || res[5].ErrorCode != kerr.InvalidTopicException.Code ||
			res[6].ErrorCode != kerr.InvalidRequest.Code {
			t.Errorf("resources: %+v", res)
		}
		for _, c := range res[0].Configs {
			if !c.ReadOnly || c.Value == nil {
				t.Errorf("broker config %+v", c)
			}
		}

		// kadm round trip: what admin tools use.
		rc, err := adm.DescribeTopicConfigs(adminCtx(t), "cfg-a")
		if err != nil {
			t.Fatal(err)
		}
		if r, err := rc.On("cfg-a", nil); err != nil || len(r.Configs) != topicConfigCount {
			t.Errorf("kadm describe: %+v %v", r, err)
		}
	})

	// Every served version answers, with each version's fields.
	t.Run("Versions", func(t *testing.T) {
		for v := int16(0); v <= 7; v++ {
			name := fmt.Sprintf("ver-%d", v)
			req := kmsg.NewPtrCreateTopicsRequest()
			req.Topics = append(req.Topics, createTopicReq(name, 2, 1, map[string]string{"retention.ms": "1000"}), createTopicReq("bad/"+name, 1, 1, nil))
			resp, err := req.RequestWith(adminCtx(t), clientAt(t, s, 19, v))
			if err != nil || resp.Version != v {
				t.Fatalf("CreateTopics v%d: %v %v", v, resp, err)
			}
			ok, bad := resp.Topics[0], resp.Topics[1]
			if ok.ErrorCode != 0 || bad.ErrorCode != kerr.InvalidTopicException.Code ||
				(v >= 1) != (bad.ErrorMessage != nil) || (v >= 5) != (ok.NumPartitions == 2) || (v >= 7) != (ok.TopicID != [16]byte{}) {
				t.Errorf("CreateTopics v%d: %+v", v, resp.Topics)
			}
		}
		for v := int16(0); v <= 3; v++ {
			req := kmsg.NewPtrCreatePartitionsRequest()
			rt := kmsg.NewCreatePartitionsRequestTopic()
			rt.Topic, rt.Count = fmt.Sprintf("ver-%d", v), 3
			req.Topics = append(req.Topics, rt)
			resp, err := req.RequestWith(adminCtx(t), clientAt(t, s, 37, v))
			if err != nil || resp.Version != v || resp.Topics[0].ErrorCode != 0 {
				t.Errorf("CreatePartitions v%d: %+v %v", v, resp, err)
			}
		}
		for v := int16(0); v <= 4; v++ {
			req := kmsg.NewPtrDescribeConfigsRequest()
			rr := kmsg.NewDescribeConfigsRequestResource()
			rr.ResourceType, rr.ResourceName, rr.ConfigNames = kmsg.ConfigResourceTypeTopic, "ver-0", []string{"retention.ms", "retention.bytes"}
			req.Resources = append(req.Resources, rr)
			req.IncludeSynonyms = true
			resp, err := req.RequestWith(adminCtx(t), clientAt(t, s, 32, v))
			if err != nil || resp.Version != v || len(resp.Resources) != 1 || len(resp.Resources[0].Configs) != 2 {
				t.Fatalf("DescribeConfigs v%d: %+v %v", v, resp, err)
			}
			for _, c := range resp.Resources[0].Configs {
				dyn := c.Name == "retention.ms"
				if (v == 0 && c.IsDefault == dyn) || (v >= 1) != (c.ConfigSynonyms != nil) ||
					(v >= 1 && (c.Source == kmsg.ConfigSourceDynamicTopicConfig) != dyn) || (v >= 3) != (c.ConfigType == kmsg.ConfigTypeLong) {
					t.Errorf("DescribeConfigs v%d: %+v", v, c)
				}
			}
		}
		for v := int16(0); v <= 2; v++ {
			req := kmsg.NewPtrAlterConfigsRequest()
			rr := kmsg.NewAlterConfigsRequestResource()
			rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, fmt.Sprintf("ver-%d", v)
			c := kmsg.NewAlterConfigsRequestResourceConfig()
			c.Name, c.Value = "retention.ms", strp("2000")
			rr.Configs = append(rr.Configs, c)
			req.Resources = append(req.Resources, rr)
			resp, err := req.RequestWith(adminCtx(t), clientAt(t, s, 33, v))
			if err != nil || resp.Version != v || resp.Resources[0].ErrorCode != 0 {
				t.Errorf("AlterConfigs v%d: %+v %v", v, resp, err)
			}
		}
		for v := int16(0); v <= 1; v++ {
			req := kmsg.NewPtrIncrementalAlterConfigsRequest()
			rr := kmsg.NewIncrementalAlterConfigsRequestResource()
			rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, fmt.Sprintf("ver-%d", v)
			c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
			c.Name, c.Op, c.Value = "compression.type", kmsg.IncrementalAlterConfigOpSet, strp("gzip")
			rr.Configs = append(rr.Configs, c)
			req.Resources = append(req.Resources, rr)
			resp, err := req.RequestWith(adminCtx(t), clientAt(t, s, 44, v))
			if err != nil || resp.Version != v || resp.Resources[0].ErrorCode != 0 {
				t.Errorf("IncrementalAlterConfigs v%d: %+v %v", v, resp, err)
			}
		}
		for v := int16(0); v <= 6; v++ {
			req := kmsg.NewPtrDeleteTopicsRequest()
			name := fmt.Sprintf("ver-%d", v)
			if v <= 5 {
				req.TopicNames = []string{name}
			} else {
				rt := kmsg.NewDeleteTopicsRequestTopic()
				rt.Topic = &name
				req.Topics = append(req.Topics, rt)
			}
			resp, err := req.RequestWith(adminCtx(t), clientAt(t, s, 20, v))
			if err != nil || resp.Version != v || len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 || (v >= 6) != (resp.Topics[0].TopicID != [16]byte{}) {
				t.Errorf("DeleteTopics v%d: %+v %v", v, resp, err)
			}
		}
	})

	t.Run("DescribeCluster", func(t *testing.T) {
		for _, tc := range []struct {
			version  int16
			endpoint int8
			code     int16
		}{
			{0, 1, 0}, {1, 1, 0}, {2, 1, 0},
			{1, 2, kerr.MismatchedEndpointType.Code},
			{1, 9, kerr.UnsupportedEndpointType.Code},
		} {
			req := kmsg.NewPtrDescribeClusterRequest()
			req.EndpointType = tc.endpoint
			req.IncludeClusterAuthorizedOperations = true
			resp, err := req.RequestWith(adminCtx(t), clientAt(t, s, 60, tc.version))
			if err != nil {
				t.Fatal(err)
			}
			if resp.Version != tc.version {
				t.Fatalf("spoke v%d, want v%d", resp.Version, tc.version)
			}
			if resp.ErrorCode != tc.code {
				t.Errorf("v%d endpoint %d: code %d, want %d", tc.version, tc.endpoint, resp.ErrorCode, tc.code)
				continue
			}
			if tc.code != 0 {
				continue
			}
			if resp.ClusterID == "" || resp.ControllerID != 0 || len(resp.Brokers) != 1 || resp.Brokers[0].Host != "127.0.0.1" ||
				resp.ClusterAuthorizedOperations <= 0 {
				t.Errorf("v%d: %+v", tc.version, resp)
			}
		}
		details, err := adm.BrokerMetadata(adminCtx(t))
		if err != nil || len(details.Brokers) != 1 {
			t.Errorf("kadm broker metadata: %+v %v", details, err)
		}
	})
}

// TestAdminGatewayDefaults: topics.default_options act as Kafka's static
// broker config: new topics get them (STATIC_BROKER_CONFIG), deleting a
// topic's override falls back to them, the BROKER resource reports them.
func TestAdminGatewayDefaults(t *testing.T) {
	s := startStack(t, func(o *stackOpts) {
		o.bridge.Topics.DefaultOptions = map[string]string{"message_expiry": "1 day"}
		o.bridge.Topics.DefaultPartitions = 2
	})
	cl := s.kgoClient(t)
	if c := topicCodes(createTopics(t, cl, false, createTopicReq("gd-a", -1, -1, nil))); c["gd-a"] != 0 {
		t.Fatalf("create: %v", c)
	}
	check := func(stage, value string, source kmsg.ConfigSource) {
		t.Helper()
		c := describeTopic(t, cl, "gd-a", false)["retention.ms"]
		if *c.Value != value || c.Source != source {
			t.Errorf("%s: retention.ms %s %v, want %s %v", stage, *c.Value, c.Source, value, source)
		}
	}
	check("created", "86400000", kmsg.ConfigSourceStaticBrokerConfig)

	alter := func(op kmsg.IncrementalAlterConfigOp, v *string) {
		t.Helper()
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		rr := kmsg.NewIncrementalAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, "gd-a"
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Op, c.Value = "retention.ms", op, v
		rr.Configs = append(rr.Configs, c)
		req.Resources = append(req.Resources, rr)
		resp, err := req.RequestWith(adminCtx(t), cl)
		if err != nil || resp.Resources[0].ErrorCode != 0 {
			t.Fatalf("alter: %+v %v", resp, err)
		}
	}
	alter(kmsg.IncrementalAlterConfigOpSet, strp("5000"))
	check("set", "5000", kmsg.ConfigSourceDynamicTopicConfig)
	alter(kmsg.IncrementalAlterConfigOpDelete, nil)
	check("deleted", "86400000", kmsg.ConfigSourceStaticBrokerConfig)

	req := kmsg.NewPtrDescribeConfigsRequest()
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName, rr.ConfigNames = kmsg.ConfigResourceTypeBroker, "0", []string{"log.retention.ms", "num.partitions"}
	req.Resources = append(req.Resources, rr)
	raw, err := cl.Broker(0).Request(adminCtx(t), req)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, c := range raw.(*kmsg.DescribeConfigsResponse).Resources[0].Configs {
		got[c.Name] = *c.Value + " " + c.Source.String()
	}
	if got["log.retention.ms"] != "86400000 STATIC_BROKER_CONFIG" || got["num.partitions"] != "2 STATIC_BROKER_CONFIG" {
		t.Errorf("broker: %v", got)
	}
}
