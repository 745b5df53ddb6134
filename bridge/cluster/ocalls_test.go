package cluster

import (
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kafka-iggy/kafka-iggy/bridge/txnoffsets"
)

// The pending-offsets bodies decode to what was encoded; the owner serves
// them from its local store while the group's shard is ACTIVE there, and
// answers NOT_COORDINATOR once it is not.
func TestTxnOffsetsCalls(t *testing.T) {
	offs := []txnoffsets.Offset{{Topic: "a", Partition: 1, Offset: 1 << 40}, {Topic: "b", Partition: 0, Offset: 0}}
	req := pendReq{group: "g", pid: 1<<62 | 5, epoch: 7, offs: offs}
	if got := roundTrip(t, pendReqBody, req); !reflect.DeepEqual(got, req) {
		t.Fatalf("request %+v", got)
	}
	ans := pendAnswer{code: 0, offs: offs, flags: []bool{true, false}}
	if got := roundTrip(t, pendAnswerBody, ans); !reflect.DeepEqual(got, ans) {
		t.Fatalf("answer %+v", got)
	}

	own := ownerRouter(shardActive)
	own.olocal = txnoffsets.New(nil)
	if a := serveCall(t, own, pendAddCall, req); a.code != 0 {
		t.Fatalf("add: %+v", a)
	}
	if a := serveCall(t, own, pendUnstableCall, pendReq{group: "g", offs: []txnoffsets.Offset{{Topic: "a", Partition: 1}, {Topic: "a", Partition: 2}}}); a.code != 0 || !reflect.DeepEqual(a.flags, []bool{true, false}) {
		t.Fatalf("unstable: %+v", a)
	}
	if a := serveCall(t, own, pendPendingCall, pendReq{group: "g", pid: req.pid, epoch: 7}); a.code != 0 || len(a.offs) != 2 {
		t.Fatalf("pending: %+v", a)
	}
	if a := serveCall(t, own, pendForgetCall, pendReq{group: "g", pid: req.pid, epoch: 7}); a.code != 0 {
		t.Fatalf("forget: %+v", a)
	}
	if a := serveCall(t, own, pendPendingCall, pendReq{group: "g", pid: req.pid, epoch: 7}); a.code != 0 || len(a.offs) != 0 {
		t.Fatalf("pending after forget: %+v", a)
	}
	moved := ownerRouter(shardPending)
	moved.olocal = txnoffsets.New(nil)
	if a := serveCall(t, moved, pendAddCall, req); a.code != kerr.NotCoordinator.Code {
		t.Fatalf("add after the shard moved: %+v", a)
	}
}
