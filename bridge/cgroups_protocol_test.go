package bridge_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// cgJoin sends an epoch-0 ConsumerGroupHeartbeat for member of group.
func cgJoin(ctx context.Context, t *testing.T, cl *kgo.Client, group, member, topic string) *kmsg.ConsumerGroupHeartbeatResponse {
	t.Helper()
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Group, req.MemberID, req.RebalanceTimeoutMillis = group, member, 30000
	req.SubscribedTopicNames = []string{topic}
	req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// A group id is classic or consumer-protocol: ListGroups and DescribeGroups
// tell them apart, JoinGroup refuses a live consumer-protocol group, a
// consumer-protocol join refuses a live classic group, and OffsetCommit /
// OffsetFetch check member epochs of a consumer-protocol group.
func TestConsumerProtocolGroupTypeAndEpochs(t *testing.T) {
	s := startStack(t, func(o *stackOpts) { o.bridge.Groups.InitialRebalanceDelay = 0 })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl := s.kgoClient(t)
	topic := "cg-types"
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 2, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	hb := cgJoin(ctx, t, cl, "cg", "m1", topic)
	if hb.ErrorCode != 0 || hb.MemberEpoch <= 0 || hb.HeartbeatIntervalMillis != 5000 || hb.Assignment == nil || len(hb.Assignment.Topics) != 1 || len(hb.Assignment.Topics[0].Partitions) != 2 {
		t.Fatalf("join: %+v", hb)
	}
	if id := topicIDOf(t, s, topic); hb.Assignment.Topics[0].TopicID != id {
		t.Fatalf("assigned topic id %x, Metadata says %x", hb.Assignment.Topics[0].TopicID, id)
	}
	epoch := hb.MemberEpoch

	// ListGroups: type and filter.
	lg := kmsg.NewPtrListGroupsRequest()
	lresp, err := lg.RequestWith(ctx, cl)
	if err != nil || len(lresp.Groups) != 1 || lresp.Groups[0].GroupType != "consumer" || lresp.Groups[0].ProtocolType != "consumer" || lresp.Groups[0].GroupState != "Stable" {
		t.Fatalf("list groups: %+v %v", lresp, err)
	}
	lg.TypesFilter = []string{"classic"}
	if lresp, err = lg.RequestWith(ctx, cl); err != nil || len(lresp.Groups) != 0 {
		t.Fatalf("list classic groups: %+v %v", lresp, err)
	}

	// DescribeGroups (classic) does not describe it; ConsumerGroupDescribe does.
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Groups = []string{"cg"}
	dresp, err := dg.RequestWith(ctx, cl)
	if err != nil || dresp.Groups[0].ErrorCode != kerr.GroupIDNotFound.Code || dresp.Groups[0].State != "Dead" {
		t.Fatalf("describe groups: %+v %v", dresp, err)
	}
	cd := kmsg.NewPtrConsumerGroupDescribeRequest()
	cd.Groups = []string{"cg", "nope"}
	cresp, err := cd.RequestWith(ctx, cl)
	if err != nil || cresp.Groups[0].ErrorCode != 0 || len(cresp.Groups[0].Members) != 1 || cresp.Groups[0].Members[0].MemberEpoch != epoch ||
		cresp.Groups[1].ErrorCode != kerr.GroupIDNotFound.Code || cresp.Groups[0].AssignorName != "uniform" {
		t.Fatalf("consumer group describe: %+v %v", cresp, err)
	}

	// JoinGroup on the consumer-protocol group.
	jg := kmsg.NewPtrJoinGroupRequest()
	jg.Group, jg.ProtocolType, jg.SessionTimeoutMillis, jg.RebalanceTimeoutMillis = "cg", "consumer", 10000, 10000
	jg.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0}}}
	if jresp, err := jg.RequestWith(ctx, cl); err != nil || jresp.ErrorCode != kerr.InconsistentGroupProtocol.Code {
		t.Fatalf("join group: %+v %v", jresp, err)
	}

	// OffsetCommit / OffsetFetch with the member epoch.
	commit := func(e int32) int16 {
		oc := kmsg.NewPtrOffsetCommitRequest()
		oc.Group, oc.MemberID, oc.Generation = "cg", "m1", e
		ot := kmsg.NewOffsetCommitRequestTopic()
		ot.Topic, ot.TopicID = topic, hb.Assignment.Topics[0].TopicID
		op := kmsg.NewOffsetCommitRequestTopicPartition()
		op.Partition, op.Offset = 0, 0
		ot.Partitions = append(ot.Partitions, op)
		oc.Topics = append(oc.Topics, ot)
		r, err := oc.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return r.Topics[0].Partitions[0].ErrorCode
	}
	if code := commit(epoch - 1); code != kerr.StaleMemberEpoch.Code {
		t.Fatalf("commit with a stale epoch: %d", code)
	}
	if code := commit(epoch); code != 0 {
		t.Fatalf("commit with the member epoch: %d", code)
	}
	fetch := func(e int32) int16 {
		of := kmsg.NewPtrOffsetFetchRequest()
		g := kmsg.NewOffsetFetchRequestGroup()
		m := "m1"
		g.Group, g.MemberID, g.MemberEpoch = "cg", &m, e
		of.Groups = append(of.Groups, g)
		r, err := of.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return r.Groups[0].ErrorCode
	}
	if code := fetch(epoch + 1); code != kerr.StaleMemberEpoch.Code {
		t.Fatalf("fetch with another epoch: %d", code)
	}
	if code := fetch(epoch); code != 0 {
		t.Fatalf("fetch with the member epoch: %d", code)
	}

	// DeleteGroups: refused while the member is in, done once it left.
	del := func() int16 {
		dr := kmsg.NewPtrDeleteGroupsRequest()
		dr.Groups = []string{"cg"}
		r, err := dr.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return r.Groups[0].ErrorCode
	}
	if code := del(); code != kerr.NonEmptyGroup.Code {
		t.Fatalf("delete of a group with a member: %d", code)
	}
	leave := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	leave.Group, leave.MemberID, leave.MemberEpoch = "cg", "m1", -1
	if r, err := leave.RequestWith(ctx, cl); err != nil || r.ErrorCode != 0 || r.MemberEpoch != -1 {
		t.Fatalf("leave: %+v %v", r, err)
	}
	if code := del(); code != 0 {
		t.Fatalf("delete of the emptied group: %d", code)
	}
	if code := fetch(-1); code != 0 {
		t.Fatalf("admin fetch after the delete: %d", code)
	}

	// A classic group with a member refuses a consumer-protocol join.
	jg.Group = "classic"
	jresp, err := jg.RequestWith(ctx, cl)
	if err == nil && jresp.ErrorCode == kerr.MemberIDRequired.Code {
		jg.MemberID = jresp.MemberID // KIP-394: join again with the id
		jresp, err = jg.RequestWith(ctx, cl)
	}
	if err != nil || jresp.ErrorCode != 0 {
		t.Fatalf("classic join: %+v %v", jresp, err)
	}
	if r := cgJoin(ctx, t, cl, "classic", "m2", topic); r.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("consumer-protocol join of a classic group: %+v", r)
	}
}

// A regex subscription resolves as Kafka's broker does: to every matching
// topic, the internal __consumer_offsets included (one partition, its fixed
// id), and a topic created through the sidecar after the join joins the
// assignment at the next heartbeat (the cached metadata is dropped by
// CreateTopics).
func TestConsumerProtocolRegexResolution(t *testing.T) {
	s := startStack(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl := s.kgoClient(t)
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, "re-a"); err != nil {
		t.Fatal(err)
	}
	offsetsID := topicIDOf(t, s, "__consumer_offsets")
	beat := func(epoch int32, regex *string) *kmsg.ConsumerGroupHeartbeatResponse {
		t.Helper()
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Version = 1
		req.Group, req.MemberID, req.MemberEpoch, req.RebalanceTimeoutMillis = "re", "m1", epoch, 30000
		req.SubscribedTopicRegex = regex
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		if epoch != 0 {
			req.RebalanceTimeoutMillis = -1
			req.Topics = nil
		}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil || resp.ErrorCode != 0 {
			t.Fatalf("heartbeat: %+v %v", resp, err)
		}
		return resp
	}
	assigned := func(r *kmsg.ConsumerGroupHeartbeatResponse) map[[16]byte]int {
		out := map[[16]byte]int{}
		for _, tp := range r.Assignment.Topics {
			out[tp.TopicID] = len(tp.Partitions)
		}
		return out
	}
	re := "__consumer_offsets|re-.*"
	r := beat(0, &re)
	got := assigned(r)
	if len(got) != 2 || got[offsetsID] != 1 || got[topicIDOf(t, s, "re-a")] != 2 {
		t.Fatalf("regex %q assigned %v", re, got)
	}
	if _, err := adm.CreateTopic(ctx, 3, 1, nil, "re-b"); err != nil {
		t.Fatal(err)
	}
	r = beat(r.MemberEpoch, nil)
	if r.Assignment == nil || assigned(r)[topicIDOf(t, s, "re-b")] != 3 {
		t.Fatalf("the topic created after the join is not assigned at the next heartbeat: %+v", r.Assignment)
	}

	// Emptied (the member leaves) and never committed: DeleteGroups deletes
	// it as Kafka does (0), and a second delete finds nothing.
	beat(-1, nil)
	for i, want := range []int16{0, kerr.GroupIDNotFound.Code} {
		dr := kmsg.NewPtrDeleteGroupsRequest()
		dr.Groups = []string{"re"}
		resp, err := dr.RequestWith(ctx, cl)
		if err != nil || resp.Groups[0].ErrorCode != want {
			t.Fatalf("delete %d of the emptied group: %+v %v, want code %d", i+1, resp, err, want)
		}
	}
}
