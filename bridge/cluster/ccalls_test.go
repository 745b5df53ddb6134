package cluster

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/kafka-iggy/kafka-iggy/bridge/cgroups"
)

// The consumer-protocol bodies decode to what was encoded, null lists
// (unchanged subscription, owned partitions not reported) included.
func TestConsumerCallBodies(t *testing.T) {
	inst, regex := "i1", "a.*"
	for _, p := range []cgroups.HeartbeatParams{
		{Group: "g", MemberID: "m", MemberEpoch: 3, InstanceID: &inst, RebalanceTimeout: time.Minute,
			SubscribedTopics: []string{"a", "b"}, SubscribedRegex: &regex, OwnedSet: true,
			Owned: []cgroups.TP{{Topic: "a", Partition: 1}}, ClientID: "c", ClientHost: "/h", NeedMemberID: true},
		{Group: "g", MemberID: "m", MemberEpoch: 4, RebalanceTimeout: -1, SubscribedTopics: []string{}, OwnedSet: true, Owned: []cgroups.TP{}},
		{Group: "g", MemberID: "m", MemberEpoch: 5, RebalanceTimeout: -1},
	} {
		req := newCGHeartbeatReq(p, map[string]int32{"a": 2, "b": 3})
		got := roundTrip(t, cgHeartbeatBody, *req)
		if got.p.Owned == nil && req.p.Owned != nil && len(req.p.Owned) == 0 {
			got.p.Owned = []cgroups.TP{}
		}
		if !reflect.DeepEqual(got.p, req.p) || !reflect.DeepEqual(got.topicMap(), req.topicMap()) {
			t.Fatalf("heartbeat:\n got %+v\nwant %+v", got, req)
		}
	}
	res := cgroups.HeartbeatResult{MemberID: "m", MemberEpoch: 7, HeartbeatInterval: 5 * time.Second, HasAssignment: true,
		Assignment: []cgroups.TP{{Topic: "a", Partition: 0}, {Topic: "a", Partition: 2}}}
	if got := roundTrip(t, cgHeartbeatResult, res); !reflect.DeepEqual(got, res) {
		t.Fatalf("result %+v", got)
	}
	d := cgDescribeAnswer{found: true, d: cgroups.Description{Group: "g", State: "Stable", Epoch: 4, AssignmentEpoch: 4, Assignor: "uniform",
		Members: []cgroups.MemberDescription{{MemberID: "m", InstanceID: &inst, MemberEpoch: 4, ClientID: "c", ClientHost: "/h",
			SubscribedTopics: []string{"a"}, SubscribedRegex: &regex, Assignment: []cgroups.TP{{Topic: "a", Partition: 0}},
			Target: []cgroups.TP{{Topic: "a", Partition: 0}}},
			{MemberID: "k", MemberEpoch: 4, ClientID: "c", ClientHost: "/h", SubscribedTopics: []string{"a"}, SubscribedRegex: new(string),
				Assignment: []cgroups.TP{{Topic: "a", Partition: 1}}, Target: []cgroups.TP{{Topic: "a", Partition: 1}}, Classic: true}}}}
	if got := roundTrip(t, cgDescribeBody, d); !reflect.DeepEqual(got, d) {
		t.Fatalf("describe %+v", got)
	}
	l := cgListAnswer{groups: []cgroups.Listing{{Group: "g", State: "Empty"}}}
	if got := roundTrip(t, cgListBody, l); !reflect.DeepEqual(got, l) {
		t.Fatalf("list %+v", got)
	}
	m := "m"
	v := cgValidateReq{group: "g", memberID: &m, epoch: 3, version: 9}
	if got := roundTrip(t, cgValidateBody, v); !reflect.DeepEqual(got, v) {
		t.Fatalf("validate %+v", got)
	}
	inst2 := "i2"
	cc := commitCheckReq{group: "g", memberID: "m", instanceID: &inst2, generation: 4, version: 10}
	if got := roundTrip(t, commitCheckBody, cc); !reflect.DeepEqual(got, cc) {
		t.Fatalf("commit check %+v", got)
	}
}

// The consumer-protocol checks of classic calls cost no peer call: Release
// and Holds answer at once (the owner applies them within JoinGroup,
// DeleteGroups and DescribeGroups), so a Router is never touched.
func TestClassicChecksMakeNoCall(t *testing.T) {
	cr := consumerRouter{r: nil} // any call would dereference it
	if busy, dropped := cr.Release(context.Background(), "g"); busy || dropped || cr.Holds(context.Background(), "g") {
		t.Fatal("answered true without asking the owner")
	}
}
