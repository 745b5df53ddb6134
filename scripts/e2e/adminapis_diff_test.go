package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestAdminAPIsDifferential: the admin APIs of issue 28 (ElectLeaders,
// ListPartitionReassignments, AlterPartitionReassignments,
// DescribeLogDirs, OffsetForLeaderEpoch, DescribeTopicPartitions,
// DescribeClientQuotas, AlterClientQuotas), raw, against Kafka and the
// sidecar.
func TestAdminAPIsDifferential(t *testing.T) {
	kafkaDiff(t, adminAPIsScenario, adminAPIsWant, adminAPIsIntended)
}

// adminAPIsWant is what Kafka 4.4 answers in adminAPIsScenario.
var adminAPIsWant = map[string]map[string]string{
	"elect preferred leaders":                     {"error": "0 NONE", "topic p0": "84 ELECTION_NOT_NEEDED \"Leader election not needed for topic partition.\"", "topic p1": "84 ELECTION_NOT_NEEDED \"Leader election not needed for topic partition.\"", "topic p7": "3 UNKNOWN_TOPIC_OR_PARTITION \"No such partition as T-7\"", "unknown p0": "3 UNKNOWN_TOPIC_OR_PARTITION \"No such topic as T-unknown\""},
	"elect unclean leaders":                       {"error": "0 NONE", "topic p0": "84 ELECTION_NOT_NEEDED \"Leader election not needed for topic partition.\""},
	"elect leaders of every partition":            {"error": "0 NONE"},
	"list reassignments":                          {"error": "0 NONE", "message": "null", "topics": "0"},
	"list reassignments of a topic":               {"error": "0 NONE", "topics": "0"},
	"reassign to the current replica":             {"error": "0 NONE", "message": "null", "p0": "0 NONE null"},
	"reassign to an unknown broker":               {"error": "0 NONE", "message": "null", "p0": "39 INVALID_REPLICA_ASSIGNMENT \"The manual partition assignment includes broker OTHER, but no such broker is registered.\""},
	"reassign to two replicas":                    {"error": "0 NONE", "message": "null", "p0": "39 INVALID_REPLICA_ASSIGNMENT \"The manual partition assignment includes broker OTHER, but no such broker is registered.\""},
	"reassign to an empty list":                   {"error": "0 NONE", "message": "null", "p0": "39 INVALID_REPLICA_ASSIGNMENT \"The manual partition assignment includes an empty replica list.\""},
	"reassign to the current replica twice":       {"error": "0 NONE", "message": "null", "p0": "39 INVALID_REPLICA_ASSIGNMENT \"The manual partition assignment includes the broker SELF more than once.\""},
	"cancel a reassignment that does not exist":   {"error": "0 NONE", "message": "null", "p0": "85 NO_REASSIGNMENT_IN_PROGRESS null"},
	"reassign an unknown topic":                   {"error": "0 NONE", "message": "null", "p0": "3 UNKNOWN_TOPIC_OR_PARTITION \"Unable to find a topic named T-unknown.\""},
	"describe log dirs of a topic":                {"error": "0 NONE", "dirs": "1", "dir 0  p0": "size>0=true lag=0 future=false", "dir 0  p1": "size>0=false lag=0 future=false"},
	"offset for leader epoch":                     {"p0 current=-1 epoch=0": "0 NONE leader_epoch=0 end_offset=3", "p1 current=-1 epoch=0": "0 NONE leader_epoch=0 end_offset=0", "p0 current=0 epoch=0": "0 NONE leader_epoch=0 end_offset=3", "p0 current=-1 epoch=-1": "0 NONE leader_epoch=-1 end_offset=-1", "p0 current=-1 epoch=5": "0 NONE leader_epoch=-1 end_offset=-1", "p0 current=-1 epoch=-3": "0 NONE leader_epoch=-3 end_offset=0", "p0 current=3 epoch=0": "75 UNKNOWN_LEADER_EPOCH leader_epoch=-1 end_offset=-1", "p0 current=-5 epoch=0": "74 FENCED_LEADER_EPOCH leader_epoch=-1 end_offset=-1", "p7 current=-1 epoch=0": "3 UNKNOWN_TOPIC_OR_PARTITION leader_epoch=-1 end_offset=-1", "unknown p0": "3 UNKNOWN_TOPIC_OR_PARTITION leader_epoch=-1 end_offset=-1"},
	"describe topic partitions one at a time":     {"pages": ":0 next :1 | :1 next -b:0 | -b 3 UNKNOWN_TOPIC_OR_PARTITION"},
	"describe topic partitions":                   {"next cursor": "false", "topic": "0 NONE id_set=true internal=false partitions=2 ops=3576", "topic p0": "0 NONE leader_is_self=true epoch=0 replicas=1 isr=1 elr=[] last_known_elr=[] offline=0", "topic p1": "0 NONE leader_is_self=true epoch=0 replicas=1 isr=1 elr=[] last_known_elr=[] offline=0", "unknown": "3 UNKNOWN_TOPIC_OR_PARTITION id_set=false internal=false partitions=0 ops=3576"},
	"describe every client quota":                 {"error": "0 NONE", "message": "\"\"", "entries": "0"},
	"describe the quotas of a client id":          {"error": "0 NONE", "message": "\"\"", "entries": "0"},
	"describe default user quotas":                {"error": "0 NONE", "message": "\"\"", "entries": "0"},
	"describe quotas of an unknown entity type":   {"error": "35 UNSUPPORTED_VERSION", "message": "\"Unsupported entity type nobody\"", "entries": "0"},
	"describe quotas with an exact match of null": {"error": "42 INVALID_REQUEST", "message": "\"Request specified MATCH_TYPE_EXACT, but set match string to null.\"", "entries": "0"},
	"describe quotas of ip and user":              {"error": "42 INVALID_REQUEST", "message": "\"Invalid entity filter component combination. IP filter component should not be used with user or clientId filter component.\"", "entries": "0"},
	"validate a client quota":                     {"error": "0 NONE"},
	"remove a client quota that is not set":       {"error": "0 NONE"},
	"validate a quota with an unknown key":        {"error": "42 INVALID_REQUEST"},
	"validate a quota of an unknown entity type":  {"error": "42 INVALID_REQUEST"},
	"validate an ip quota with a user key":        {"error": "42 INVALID_REQUEST"},
	"validate a quota of ip and user":             {"error": "42 INVALID_REQUEST"},
	"set a client quota":                          {"error": "0 NONE"},
	"describe the quota set":                      {"error": "0 NONE", "entries": "1", "values": "consumer_byte_rate=2.097152e+06 producer_byte_rate=1.048576e+06"},
	"set the same client quota again":             {"error": "0 NONE"},
	"remove one key of a client quota":            {"error": "0 NONE"},
	"describe the quota after removing a key":     {"error": "0 NONE", "entries": "1", "values": "consumer_byte_rate=2.097152e+06"},
	"remove the last key of a client quota":       {"error": "0 NONE"},
	"describe the quota removed":                  {"error": "0 NONE", "entries": "0", "values": ""},
}

// adminAPIsIntended are the documented differences (docs/COMPATIBILITY.md).
var adminAPIsIntended = []intendedDifference{
	{Step: "describe log dirs of a topic", Field: "dir 0", Target: "sidecar", Want: "0 NONE named=true total_known=false usable_known=false",
		Why: "Iggy does not report its volume's capacity: the sidecar answers TotalBytes and UsableBytes -1 (not available)"},
}

func adminAPIsScenario(t *testing.T, tg Target) *transcript {
	t.Helper()
	tr := &transcript{}
	cl := newKgo(t, tg, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	adm := kadm.NewClient(cl)
	ctx := testCtx(t, 60*time.Second)
	topic := uniqueTopic("admin")
	unknown := topic + "-unknown"
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, topic); err != nil {
		t.Fatalf("%s: create topic: %v", tg.Name, err)
	}
	td, err := adm.ListTopics(ctx, topic)
	if err != nil || td[topic].Err != nil {
		t.Fatalf("%s: metadata: %v %v", tg.Name, err, td[topic].Err)
	}
	self := td[topic].Partitions[0].Leader
	for i := 0; i < 3; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 0, Value: []byte(fmt.Sprintf("v%d", i))}).FirstErr(); err != nil {
			t.Fatalf("%s: produce: %v", tg.Name, err)
		}
	}
	request := func(name string, req kmsg.Request) kmsg.Response {
		var resp kmsg.Response
		var err error
		switch req.(type) {
		case *kmsg.DescribeLogDirsRequest, *kmsg.OffsetForLeaderEpochRequest:
			// Straight to the broker: kgo would split them by leader and
			// answer unknown partitions itself.
			resp, err = cl.Broker(int(self)).Request(ctx, req)
		default:
			resp, err = cl.Request(ctx, req)
		}
		if err != nil {
			tr.add(name, "error", "client error: "+err.Error())
			return nil
		}
		return resp
	}
	// Messages without run-specific values: the topic name, broker ids.
	names := strings.NewReplacer(topic, "T", fmt.Sprintf("broker %d,", self+1000), "broker OTHER,", fmt.Sprintf("broker %d more", self), "broker SELF more")
	msg := func(s *string) string {
		if s == nil {
			return "null"
		}
		return fmt.Sprintf("%q", names.Replace(*s))
	}

	// ElectLeaders.
	elect := func(name string, typ int8, topics map[string][]int32) {
		req := kmsg.NewPtrElectLeadersRequest()
		req.ElectionType = typ
		req.TimeoutMillis = 10000
		if topics != nil {
			for _, n := range []string{topic, unknown} {
				if ps, ok := topics[n]; ok {
					rt := kmsg.NewElectLeadersRequestTopic()
					rt.Topic, rt.Partitions = n, ps
					req.Topics = append(req.Topics, rt)
				}
			}
		}
		kresp := request(name, req)
		if kresp == nil {
			return
		}
		resp := kresp.(*kmsg.ElectLeadersResponse)
		kv := []string{"error", errStr(resp.ErrorCode)}
		for _, rt := range resp.Topics {
			label := "topic"
			if rt.Topic == unknown {
				label = "unknown"
			} else if rt.Topic != topic {
				continue // other topics of the broker
			}
			for _, rp := range rt.Partitions {
				kv = append(kv, fmt.Sprintf("%s p%d", label, rp.Partition), errStr(rp.ErrorCode)+" "+msg(rp.ErrorMessage))
			}
		}
		tr.add(name, kv...)
	}
	elect("elect preferred leaders", 0, map[string][]int32{topic: {0, 1, 7}, unknown: {0}})
	elect("elect unclean leaders", 1, map[string][]int32{topic: {0}})
	elect("elect leaders of every partition", 0, nil)

	// Partition reassignments.
	{
		req := kmsg.NewPtrListPartitionReassignmentsRequest()
		req.TimeoutMillis = 10000
		if resp, ok := request("list reassignments", req).(*kmsg.ListPartitionReassignmentsResponse); ok {
			tr.add("list reassignments", "error", errStr(resp.ErrorCode), "message", msg(resp.ErrorMessage), "topics", fmt.Sprint(len(resp.Topics)))
		}
		rt := kmsg.NewListPartitionReassignmentsRequestTopic()
		rt.Topic, rt.Partitions = topic, []int32{0, 7}
		req.Topics = append(req.Topics, rt)
		if resp, ok := request("list reassignments of a topic", req).(*kmsg.ListPartitionReassignmentsResponse); ok {
			tr.add("list reassignments of a topic", "error", errStr(resp.ErrorCode), "topics", fmt.Sprint(len(resp.Topics)))
		}
	}
	alter := func(name, tp string, replicas []int32) {
		req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
		req.TimeoutMillis = 10000
		rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
		rt.Topic = tp
		rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
		rp.Partition, rp.Replicas = 0, replicas
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		kresp := request(name, req)
		if kresp == nil {
			return
		}
		resp := kresp.(*kmsg.AlterPartitionAssignmentsResponse)
		kv := []string{"error", errStr(resp.ErrorCode), "message", msg(resp.ErrorMessage)}
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				kv = append(kv, fmt.Sprintf("p%d", rp.Partition), errStr(rp.ErrorCode)+" "+msg(rp.ErrorMessage))
			}
		}
		tr.add(name, kv...)
	}
	alter("reassign to the current replica", topic, []int32{self})
	alter("reassign to an unknown broker", topic, []int32{self + 1000})
	alter("reassign to two replicas", topic, []int32{self, self + 1000})
	alter("reassign to an empty list", topic, []int32{})
	alter("reassign to the current replica twice", topic, []int32{self, self})
	alter("cancel a reassignment that does not exist", topic, nil)
	alter("reassign an unknown topic", unknown, []int32{self})

	// DescribeLogDirs.
	logDirs := func(name string, topics []string) {
		req := kmsg.NewPtrDescribeLogDirsRequest()
		for _, n := range topics {
			rt := kmsg.NewDescribeLogDirsRequestTopic()
			rt.Topic, rt.Partitions = n, []int32{0, 1, 7}
			req.Topics = append(req.Topics, rt)
		}
		kresp := request(name, req)
		if kresp == nil {
			return
		}
		resp := kresp.(*kmsg.DescribeLogDirsResponse)
		kv := []string{"error", errStr(resp.ErrorCode), "dirs", fmt.Sprint(len(resp.Dirs))}
		for i, d := range resp.Dirs {
			kv = append(kv, fmt.Sprintf("dir %d", i), fmt.Sprintf("%s named=%v total_known=%v usable_known=%v", errStr(d.ErrorCode), d.Dir != "", d.TotalBytes > 0, d.UsableBytes > 0))
			for _, rt := range d.Topics {
				if rt.Topic != topic && rt.Topic != unknown {
					continue
				}
				slices.SortFunc(rt.Partitions, func(a, b kmsg.DescribeLogDirsResponseDirTopicPartition) int { return int(a.Partition - b.Partition) })
				for _, rp := range rt.Partitions {
					kv = append(kv, fmt.Sprintf("dir %d %s p%d", i, strings.TrimPrefix(rt.Topic, topic), rp.Partition),
						fmt.Sprintf("size>0=%v lag=%d future=%v", rp.Size > 0, rp.OffsetLag, rp.IsFuture))
				}
			}
		}
		tr.add(name, kv...)
	}
	logDirs("describe log dirs of a topic", []string{topic, unknown})

	// OffsetForLeaderEpoch.
	{
		req := kmsg.NewPtrOffsetForLeaderEpochRequest()
		req.ReplicaID = -1
		type q struct{ p, current, epoch int32 }
		qs := []q{{0, -1, 0}, {1, -1, 0}, {0, 0, 0}, {0, -1, -1}, {0, -1, 5}, {0, -1, -3}, {0, 3, 0}, {0, -5, 0}, {7, -1, 0}}
		rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
		rt.Topic = topic
		for _, x := range qs {
			rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
			rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = x.p, x.current, x.epoch
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		ru := kmsg.NewOffsetForLeaderEpochRequestTopic()
		ru.Topic = unknown
		rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		ru.Partitions = append(ru.Partitions, rp)
		req.Topics = append(req.Topics, ru)
		if resp, ok := request("offset for leader epoch", req).(*kmsg.OffsetForLeaderEpochResponse); ok {
			var kv []string
			for _, rt := range resp.Topics {
				for i, rp := range rt.Partitions {
					label := fmt.Sprintf("unknown p%d", rp.Partition)
					if rt.Topic == topic && i < len(qs) {
						label = fmt.Sprintf("p%d current=%d epoch=%d", rp.Partition, qs[i].current, qs[i].epoch)
					}
					kv = append(kv, label, fmt.Sprintf("%s leader_epoch=%d end_offset=%d", errStr(rp.ErrorCode), rp.LeaderEpoch, rp.EndOffset))
				}
			}
			tr.add("offset for leader epoch", kv...)
		}
	}

	// DescribeTopicPartitions.
	{
		req := kmsg.NewPtrDescribeTopicPartitionsRequest()
		req.ResponsePartitionLimit = 1
		for _, n := range []string{topic + "-b", topic} {
			rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
			rt.Topic = n
			req.Topics = append(req.Topics, rt)
		}
		var pages []string
		for page := 0; page < 4; page++ {
			resp, ok := request("describe topic partitions one at a time", req).(*kmsg.DescribeTopicPartitionsResponse)
			if !ok {
				break
			}
			var got []string
			for _, rt := range resp.Topics {
				for _, rp := range rt.Partitions {
					got = append(got, fmt.Sprintf("%s:%d", strings.TrimPrefix(*rt.Topic, topic), rp.Partition))
				}
				if len(rt.Partitions) == 0 {
					got = append(got, strings.TrimPrefix(*rt.Topic, topic)+" "+errStr(rt.ErrorCode))
				}
			}
			if c := resp.NextCursor; c != nil {
				got = append(got, fmt.Sprintf("next %s:%d", strings.TrimPrefix(c.Topic, topic), c.Partition))
				req.Cursor = &kmsg.DescribeTopicPartitionsRequestCursor{Topic: c.Topic, Partition: c.Partition}
			}
			pages = append(pages, strings.Join(got, " "))
			if resp.NextCursor == nil {
				break
			}
		}
		tr.add("describe topic partitions one at a time", "pages", strings.Join(pages, " | "))
	}
	{
		req := kmsg.NewPtrDescribeTopicPartitionsRequest()
		req.ResponsePartitionLimit = 2000
		for _, n := range []string{topic, unknown} {
			rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
			rt.Topic = n
			req.Topics = append(req.Topics, rt)
		}
		if resp, ok := request("describe topic partitions", req).(*kmsg.DescribeTopicPartitionsResponse); ok {
			kv := []string{"next cursor", fmt.Sprint(resp.NextCursor != nil)}
			for _, rt := range resp.Topics {
				label := "topic"
				if rt.Topic == nil || *rt.Topic != topic {
					label = "unknown"
				}
				kv = append(kv, label, fmt.Sprintf("%s id_set=%v internal=%v partitions=%d ops=%d", errStr(rt.ErrorCode), rt.TopicID != [16]byte{}, rt.IsInternal, len(rt.Partitions), rt.AuthorizedOperations))
				for _, rp := range rt.Partitions {
					kv = append(kv, fmt.Sprintf("%s p%d", label, rp.Partition), fmt.Sprintf("%s leader_is_self=%v epoch=%d replicas=%d isr=%d elr=%v last_known_elr=%v offline=%d",
						errStr(rp.ErrorCode), rp.LeaderID == self, rp.LeaderEpoch, len(rp.Replicas), len(rp.ISR), rp.EligibleLeaderReplicas, rp.LastKnownELR, len(rp.OfflineReplicas)))
				}
			}
			tr.add("describe topic partitions", kv...)
		}
	}

	// DescribeClientQuotas.
	quotas := func(name string, strict bool, comps ...kmsg.DescribeClientQuotasRequestComponent) {
		req := kmsg.NewPtrDescribeClientQuotasRequest()
		req.Strict = strict
		req.Components = comps
		if resp, ok := request(name, req).(*kmsg.DescribeClientQuotasResponse); ok {
			tr.add(name, "error", errStr(resp.ErrorCode), "message", msg(resp.ErrorMessage), "entries", fmt.Sprint(len(resp.Entries)))
		}
	}
	comp := func(typ string, match int8, name *string) kmsg.DescribeClientQuotasRequestComponent {
		c := kmsg.NewDescribeClientQuotasRequestComponent()
		c.EntityType, c.MatchType, c.Match = typ, kmsg.QuotasMatchType(match), name
		return c
	}
	quotas("describe every client quota", false)
	quotas("describe the quotas of a client id", true, comp("client-id", 0, kmsg.StringPtr("app")))
	quotas("describe default user quotas", false, comp("user", 1, nil))
	quotas("describe quotas of an unknown entity type", false, comp("nobody", 2, nil))
	quotas("describe quotas with an exact match of null", false, comp("user", 0, nil))
	quotas("describe quotas of ip and user", false, comp("ip", 2, nil), comp("user", 2, nil))

	// AlterClientQuotas: validation, and what needs no stored quota.
	alterQuotas := func(name string, validateOnly bool, entity map[string]*string, ops ...kmsg.AlterClientQuotasRequestEntryOp) {
		req := kmsg.NewPtrAlterClientQuotasRequest()
		req.ValidateOnly = validateOnly
		e := kmsg.NewAlterClientQuotasRequestEntry()
		for _, typ := range []string{"user", "client-id", "ip", "nobody"} {
			if n, ok := entity[typ]; ok {
				e.Entity = append(e.Entity, kmsg.AlterClientQuotasRequestEntryEntity{Type: typ, Name: n})
			}
		}
		e.Ops = ops
		req.Entries = append(req.Entries, e)
		if resp, ok := request(name, req).(*kmsg.AlterClientQuotasResponse); ok && len(resp.Entries) == 1 {
			tr.add(name, "error", errStr(resp.Entries[0].ErrorCode))
		}
	}
	op := func(key string, v float64, remove bool) kmsg.AlterClientQuotasRequestEntryOp {
		return kmsg.AlterClientQuotasRequestEntryOp{Key: key, Value: v, Remove: remove}
	}
	app := kmsg.StringPtr("e2e-quota-app")
	alterQuotas("validate a client quota", true, map[string]*string{"client-id": app}, op("producer_byte_rate", 1<<20, false))
	alterQuotas("remove a client quota that is not set", false, map[string]*string{"client-id": app}, op("consumer_byte_rate", 0, true))
	alterQuotas("validate a quota with an unknown key", true, map[string]*string{"client-id": app}, op("bytes_per_fortnight", 1, false))
	alterQuotas("validate a quota of an unknown entity type", true, map[string]*string{"nobody": app}, op("producer_byte_rate", 1, false))
	alterQuotas("validate an ip quota with a user key", true, map[string]*string{"ip": kmsg.StringPtr("10.0.0.1")}, op("producer_byte_rate", 1, false))
	alterQuotas("validate a quota of ip and user", true, map[string]*string{"ip": nil, "user": nil}, op("connection_creation_rate", 1, false))

	// A quota kept, described and removed (a client id of this run). Kafka
	// describes from the broker's metadata image, which follows the
	// controller's commit: the describe is repeated until the change shows
	// (at most 10s), and what it answers is recorded.
	kept := kmsg.StringPtr(uniqueTopic("quota-app"))
	describeKept := func(name string, done func(values string) bool) {
		deadline := time.Now().Add(10 * time.Second)
		for {
			req := kmsg.NewPtrDescribeClientQuotasRequest()
			req.Strict = true
			req.Components = []kmsg.DescribeClientQuotasRequestComponent{comp("client-id", 0, kept)}
			resp, ok := request(name, req).(*kmsg.DescribeClientQuotasResponse)
			if !ok {
				return
			}
			var values []string
			for _, e := range resp.Entries {
				for _, v := range e.Values {
					values = append(values, fmt.Sprintf("%s=%g", v.Key, v.Value))
				}
			}
			slices.Sort(values)
			vs := strings.Join(values, " ")
			if done(vs) || time.Now().After(deadline) {
				tr.add(name, "error", errStr(resp.ErrorCode), "entries", fmt.Sprint(len(resp.Entries)), "values", vs)
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	alterQuotas("set a client quota", false, map[string]*string{"client-id": kept}, op("producer_byte_rate", 1<<20, false), op("consumer_byte_rate", 2<<20, false))
	describeKept("describe the quota set", func(vs string) bool { return vs != "" })
	alterQuotas("set the same client quota again", false, map[string]*string{"client-id": kept}, op("producer_byte_rate", 1<<20, false))
	alterQuotas("remove one key of a client quota", false, map[string]*string{"client-id": kept}, op("producer_byte_rate", 0, true))
	describeKept("describe the quota after removing a key", func(vs string) bool { return !strings.Contains(vs, "producer") })
	alterQuotas("remove the last key of a client quota", false, map[string]*string{"client-id": kept}, op("consumer_byte_rate", 0, true))
	describeKept("describe the quota removed", func(vs string) bool { return vs == "" })
	return tr
}
