package bridge_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestGroupsAgainstKfake sends one sequence of raw group requests to kfake
// and to the gateway and compares the outcomes step by step (error codes,
// generations, states).
func TestGroupsAgainstKfake(t *testing.T) {
	fake, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.GroupMinSessionTimeout(300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Close)
	s := grpStack(t)

	run := func(addr string) []string {
		rk := dialRaw(t, addr)
		var out []string
		add := func(step string, v any) { out = append(out, fmt.Sprintf("%-34s %v", step, v)) }
		const g = "diff-group"

		fc := kmsg.NewPtrFindCoordinatorRequest()
		fc.CoordinatorKeys = []string{g}
		add("find coordinator", rk.do(fc, 4).(*kmsg.FindCoordinatorResponse).Coordinators[0].ErrorCode)

		join := func(req *kmsg.JoinGroupRequest) *kmsg.JoinGroupResponse {
			return rk.do(req, 9).(*kmsg.JoinGroupResponse)
		}
		add("join empty group id", join(grpJoinReq("", "", nil, 10*time.Second, "m")).ErrorCode)
		add("join short session", join(grpJoinReq(g, "", nil, time.Millisecond, "m")).ErrorCode)
		noProto := grpJoinReq(g, "", nil, 10*time.Second, "m")
		noProto.Protocols = nil
		add("join without protocols", join(noProto).ErrorCode)
		add("join unknown group with id", join(grpJoinReq("nope", "m-1", nil, 10*time.Second, "m")).ErrorCode)
		jr := grpJoinReq(g, "", nil, 10*time.Second, "m")
		first := join(jr)
		add("join without member id", first.ErrorCode)
		jr.MemberID = first.MemberID
		j := join(jr)
		add("join with member id", fmt.Sprint(j.ErrorCode, " gen ", j.Generation, " members ", len(j.Members), " self-led ", j.LeaderID == j.MemberID))
		me := j.MemberID
		other := grpJoinReq(g, "", nil, 10*time.Second, "m")
		other.ProtocolType = "connect"
		add("join other protocol type", join(other).ErrorCode)

		add("sync wrong generation", grpSync(rk, 5, g, me, 9, nil).ErrorCode)
		add("sync unknown member", grpSync(rk, 5, g, "who", 1, nil).ErrorCode)
		bad := grpSyncReq(g, me, 1, nil, nil)
		bad.Protocol = grpStr("roundrobin")
		add("sync other protocol", rk.do(bad, 5).(*kmsg.SyncGroupResponse).ErrorCode)
		sy := grpSync(rk, 5, g, me, 1, map[string]string{me: "A"})
		add("sync", fmt.Sprint(sy.ErrorCode, " ", string(sy.MemberAssignment)))

		add("heartbeat", grpHeartbeat(rk, 4, g, me, 1, nil))
		add("heartbeat wrong generation", grpHeartbeat(rk, 4, g, me, 5, nil))
		add("heartbeat unknown member", grpHeartbeat(rk, 4, g, "who", 1, nil))
		add("heartbeat unknown group", grpHeartbeat(rk, 4, "nope", "who", 1, nil))
		add("heartbeat unknown instance", grpHeartbeat(rk, 4, g, me, 1, grpStr("inst")))

		d := grpDescribe(rk, 5, g).Groups[0]
		add("describe stable", fmt.Sprint(d.ErrorCode, " ", d.State, " ", d.Protocol, " ", len(d.Members)))
		_, listed := grpList(rk, 4, []string{"Stable"}, nil)[g]
		add("list stable", listed)
		add("delete non-empty", grpDelete(rk, 2, g).Groups[0].ErrorCode)

		leaveCodes := func(r *kmsg.LeaveGroupResponse) string {
			out := fmt.Sprint(r.ErrorCode)
			for _, m := range r.Members {
				out += fmt.Sprint(" ", m.ErrorCode)
			}
			return out
		}
		add("leave unknown member", leaveCodes(grpLeave(rk, 5, g, "who", nil)))
		add("leave unknown member v0", grpLeave(rk, 0, g, "who", nil).ErrorCode)
		add("leave", leaveCodes(grpLeave(rk, 5, g, me, nil)))
		d = grpDescribe(rk, 5, g).Groups[0]
		add("describe after leave", fmt.Sprint(d.ErrorCode, " ", d.State, " ", len(d.Members)))
		add("sync after leave", grpSync(rk, 5, g, me, 1, nil).ErrorCode)
		add("delete empty", grpDelete(rk, 2, g).Groups[0].ErrorCode)
		d = grpDescribe(rk, 5, g).Groups[0]
		add("describe deleted v5", fmt.Sprint(d.ErrorCode, " ", d.State))
		d = grpDescribe(rk, 6, g).Groups[0]
		add("describe deleted v6", fmt.Sprint(d.ErrorCode, " ", d.State))
		add("delete deleted", grpDelete(rk, 2, g).Groups[0].ErrorCode)
		add("leave unknown group", leaveCodes(grpLeave(rk, 5, "nope", "who", nil)))
		return out
	}
	// Where kfake and Kafka disagree, the gateway follows Kafka (Kafka's
	// GroupMetadataManager: classicGroupHeartbeat and classicGroupLeave
	// answer an unknown group with UNKNOWN_MEMBER_ID, per member for
	// LeaveGroup v3+; kfake answers GROUP_ID_NOT_FOUND).
	kafkaDiffers := map[string]string{
		"heartbeat unknown group": "25",
		"leave unknown group":     "0 25",
	}
	want, got := run(fake.ListenAddrs()[0]), run(s.Addr)
	for i := range want {
		step := strings.TrimSpace(want[i][:34])
		if w, ok := kafkaDiffers[step]; ok {
			if g := strings.TrimSpace(got[i][34:]); g != w {
				t.Errorf("%s: gateway %q, want Kafka's %q", step, g, w)
			}
			continue
		}
		if want[i] != got[i] {
			t.Errorf("kfake:   %s\n        gateway: %s", want[i], got[i])
		}
	}
}
