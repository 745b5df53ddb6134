package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestMutationQuotaDifferential: a controller_mutation_rate quota of 1
// partition per second on a client id, then CreateTopics (v7, strict) of
// six topics of 3 partitions each, CreatePartitions (which Kafka 4.4 does
// not count) and DeleteTopics from that client, against Kafka and the
// sidecar: which topics are refused with THROTTLING_QUOTA_EXCEEDED and
// whether the answer is throttled.
// Kafka's rate counts at least 10 of its 11 one-second windows, so 4
// topics (12 partitions over 10 s: 1.2/s) pass before the rate is above 1.
func TestMutationQuotaDifferential(t *testing.T) {
	kafkaDiff(t, mutationQuotaScenario, mutationQuotaWant, nil)
}

var mutationQuotaWant = map[string]map[string]string{
	"create six topics of 3 partitions": {"version": "7", "throttled": "true", "topic 0": "0 NONE null", "topic 1": "0 NONE null", "topic 2": "0 NONE null",
		"topic 3": "0 NONE null", "topic 4": "89 THROTTLING_QUOTA_EXCEEDED null", "topic 5": "89 THROTTLING_QUOTA_EXCEEDED null"},
	"create partitions over the quota": {"throttled": "false", "topic": "0 NONE null"},
	"delete a topic over the quota":    {"throttled": "true", "topic": "89 THROTTLING_QUOTA_EXCEEDED null"},
}

func mutationQuotaScenario(t *testing.T, tg Target) *transcript {
	t.Helper()
	tr := &transcript{}
	ctx := testCtx(t, 60*time.Second)
	clientID := uniqueTopic("mutq")
	admin := newKgo(t, tg)
	setQuota := func(remove bool) {
		req := kmsg.NewPtrAlterClientQuotasRequest()
		e := kmsg.NewAlterClientQuotasRequestEntry()
		e.Entity = []kmsg.AlterClientQuotasRequestEntryEntity{{Type: "client-id", Name: &clientID}}
		e.Ops = []kmsg.AlterClientQuotasRequestEntryOp{{Key: "controller_mutation_rate", Value: 1, Remove: remove}}
		req.Entries = append(req.Entries, e)
		if resp, err := req.RequestWith(ctx, admin); err != nil || resp.Entries[0].ErrorCode != 0 {
			t.Fatalf("%s: alter client quotas: %v %+v", tg.Name, err, resp)
		}
	}
	setQuota(false)
	t.Cleanup(func() { setQuota(true) })
	// The quota reaches Kafka's brokers through the metadata log: wait
	// until a DescribeClientQuotas shows it (the sidecar reads Iggy).
	pollValue(func() string {
		req := kmsg.NewPtrDescribeClientQuotasRequest()
		c := kmsg.NewDescribeClientQuotasRequestComponent()
		c.EntityType, c.MatchType, c.Match = "client-id", kmsg.QuotasMatchTypeExact, &clientID
		req.Components = append(req.Components, c)
		if resp, err := req.RequestWith(ctx, admin); err == nil && len(resp.Entries) == 1 {
			return "set"
		}
		return ""
	}, "")
	cl := newKgo(t, tg, kgo.ClientID(clientID))
	prefix := uniqueTopic("mutq-t")
	create := kmsg.NewPtrCreateTopicsRequest()
	create.TimeoutMillis = 30000
	for i := 0; i < 6; i++ {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = fmt.Sprintf("%s-%d", prefix, i), 3, 1
		create.Topics = append(create.Topics, rt)
	}
	resp, err := create.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("%s: create topics: %v", tg.Name, err)
	}
	kv := []string{"version", fmt.Sprint(resp.Version), "throttled", fmt.Sprint(resp.ThrottleMillis > 0)}
	for i, rt := range resp.Topics {
		kv = append(kv, fmt.Sprintf("topic %d", i), errStr(rt.ErrorCode)+" "+strPtr(rt.ErrorMessage))
	}
	tr.add("create six topics of 3 partitions", kv...)

	grow := kmsg.NewPtrCreatePartitionsRequest()
	grow.TimeoutMillis = 30000
	gt := kmsg.NewCreatePartitionsRequestTopic()
	gt.Topic, gt.Count = prefix+"-0", 4
	grow.Topics = append(grow.Topics, gt)
	if gresp, err := grow.RequestWith(ctx, cl); err != nil {
		tr.add("create partitions over the quota", "error", "client error: "+err.Error())
	} else {
		tr.add("create partitions over the quota", "throttled", fmt.Sprint(gresp.ThrottleMillis > 0),
			"topic", errStr(gresp.Topics[0].ErrorCode)+" "+strPtr(gresp.Topics[0].ErrorMessage))
	}
	del := kmsg.NewPtrDeleteTopicsRequest()
	del.TimeoutMillis = 30000
	dt := kmsg.NewDeleteTopicsRequestTopic()
	dt.Topic = kmsg.StringPtr(prefix + "-1")
	del.Topics = append(del.Topics, dt)
	del.TopicNames = []string{prefix + "-1"}
	if dresp, err := del.RequestWith(ctx, cl); err != nil {
		tr.add("delete a topic over the quota", "error", "client error: "+err.Error())
	} else {
		tr.add("delete a topic over the quota", "throttled", fmt.Sprint(dresp.ThrottleMillis > 0),
			"topic", errStr(dresp.Topics[0].ErrorCode)+" "+strPtr(dresp.Topics[0].ErrorMessage))
	}
	return tr
}
