package bridge_test

import (
	"net"
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestFindCoordinator(t *testing.T) {
	s := startStack(t)
	rk := dialRaw(t, s.Addr)

	host, port, _ := net.SplitHostPort(s.Addr)
	p, _ := strconv.Atoi(port)

	// v0-v3: one key, top-level answer; group keys: this instance.
	for _, v := range []int16{0, 1, 3} {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorKey = "group-a"
		resp := rk.do(req, v).(*kmsg.FindCoordinatorResponse)
		if resp.ErrorCode != 0 || resp.NodeID != 0 || resp.Port != int32(p) || resp.Host != host {
			t.Errorf("v%d group: %+v", v, resp)
		}
	}
	txn := kmsg.NewPtrFindCoordinatorRequest()
	txn.CoordinatorKey, txn.CoordinatorType = "txn-a", 1
	if resp := rk.do(txn, 2).(*kmsg.FindCoordinatorResponse); resp.ErrorCode != 0 || resp.NodeID != 0 || resp.Port != int32(p) || resp.Host != host {
		t.Errorf("v2 transaction key: %+v", resp)
	}

	// v4+: batched keys, one answer per key.
	for _, c := range []struct {
		keyType int8
		code    int16
	}{{0, 0}, {1, 0}, {2, kerr.InvalidRequest.Code}, {9, kerr.InvalidRequest.Code}} {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorType = c.keyType
		req.CoordinatorKeys = []string{"k1", "k2"}
		resp := rk.do(req, 6).(*kmsg.FindCoordinatorResponse)
		if len(resp.Coordinators) != 2 {
			t.Fatalf("type %d: %+v", c.keyType, resp)
		}
		for i, co := range resp.Coordinators {
			ok := co.Key == req.CoordinatorKeys[i] && co.ErrorCode == c.code
			if c.code == 0 {
				ok = ok && co.NodeID == 0 && co.Host == host && co.Port == int32(p)
			} else {
				ok = ok && co.NodeID == -1 && co.Host == "" && co.Port == -1 && co.ErrorMessage != nil
			}
			if !ok {
				t.Errorf("type %d key %d: %+v", c.keyType, i, co)
			}
		}
	}
}

// TestDataPathAdvertised: ApiVersions lists the data APIs with the version
// ranges they serve, from v0 (librdkafka infers features from overlaps with
// low versions).
func TestDataPathAdvertised(t *testing.T) {
	s := startStack(t)
	rk := dialRaw(t, s.Addr)
	resp := rk.do(kmsg.NewPtrApiVersionsRequest(), 3).(*kmsg.ApiVersionsResponse)
	want := map[int16][2]int16{0: {0, 13}, 1: {0, 18}, 2: {0, 11}, 10: {0, 6}}
	for _, k := range resp.ApiKeys {
		if w, ok := want[k.ApiKey]; ok {
			if k.MinVersion != w[0] || k.MaxVersion != w[1] {
				t.Errorf("key %d: v%d-v%d, want v%d-v%d", k.ApiKey, k.MinVersion, k.MaxVersion, w[0], w[1])
			}
			delete(want, k.ApiKey)
		}
	}
	if len(want) != 0 {
		t.Errorf("not advertised: %v", want)
	}
}
