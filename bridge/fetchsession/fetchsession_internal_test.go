package fetchsession

import (
	"math"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// fullFetch builds a v12 full fetch (epoch 0) of n partitions of topic
// and the response skeleton its read would give.
func fullFetch(topic string, n int) (*kmsg.FetchRequest, *kmsg.FetchResponse) {
	req := kmsg.NewPtrFetchRequest()
	req.SessionEpoch = 0
	resp := kmsg.NewPtrFetchResponse()
	t := kmsg.NewFetchRequestTopic()
	t.Topic = topic
	rt := kmsg.NewFetchResponseTopic()
	rt.Topic = topic
	for i := 0; i < n; i++ {
		p := kmsg.NewFetchRequestTopicPartition()
		p.Partition = int32(i)
		t.Partitions = append(t.Partitions, p)
		rp := kmsg.NewFetchResponseTopicPartition()
		rp.Partition = int32(i)
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, t)
	resp.Topics = append(resp.Topics, rt)
	return req, resp
}

// TestFetchSessionEviction: a full cache creates no session for a newcomer
// while its sessions are young; a session idle for two minutes gives its
// slot away; a session older than two minutes but in use gives it only to
// a strictly larger newcomer.
func TestFetchSessionEviction(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	c := New(2)
	c.now = func() time.Time { return now }
	create := func(topic string, n int) int32 {
		t.Helper()
		req, resp := fullFetch(topic, n)
		_, sf, code := c.Begin(12, req)
		if code != 0 || sf == nil || !sf.full {
			t.Fatalf("begin full fetch: code %d, %+v", code, sf)
		}
		c.Finish(sf, 12, resp)
		return resp.SessionID
	}
	touch := func(id, epoch int32) {
		t.Helper()
		req := kmsg.NewPtrFetchRequest()
		req.SessionID, req.SessionEpoch = id, epoch
		_, sf, code := c.Begin(12, req)
		if code != 0 || sf == nil || sf.sess.id != id {
			t.Fatalf("incremental on %d epoch %d: code %d", id, epoch, code)
		}
		c.Finish(sf, 12, kmsg.NewPtrFetchResponse())
	}
	a, b := create("a", 2), create("b", 3)
	if a <= 0 || b <= 0 || a == b {
		t.Fatalf("ids %d %d", a, b)
	}
	if id := create("c", 10); id != 0 || c.Len() != 2 {
		t.Fatalf("full cache of young sessions: id %d, %d sessions", id, c.Len())
	}
	// Three minutes on, a is touched and b is not: b is stale and goes.
	now = now.Add(3 * time.Minute)
	touch(a, 1)
	d := create("d", 1)
	if d == 0 || c.m[b] != nil || c.m[a] == nil {
		t.Fatalf("stale session not evicted: d %d, sessions %v", d, c.m)
	}
	// a (2 partitions, older than two minutes, just used) and d (young):
	// a newcomer of 2 partitions is not larger than a; one of 3 is.
	touch(a, 2)
	touch(d, 1)
	if id := create("e", 2); id != 0 {
		t.Fatalf("an equal newcomer evicted: id %d", id)
	}
	e := create("e", 3)
	if e == 0 || c.m[a] != nil || c.m[d] == nil {
		t.Fatalf("a larger newcomer did not take the old session's slot: e %d, sessions %v", e, c.m)
	}
	// No slots: no sessions.
	none := New(0)
	req, resp := fullFetch("a", 1)
	_, sf, _ := none.Begin(12, req)
	none.Finish(sf, 12, resp)
	if resp.SessionID != 0 || none.Len() != 0 {
		t.Fatalf("0 slots: session %d", resp.SessionID)
	}
}

// TestFetchSessionOrderAndEpochs: partitions that returned records move to
// the end of the session's order; the epoch after MaxInt32 is 1.
func TestFetchSessionOrderAndEpochs(t *testing.T) {
	c := New(10)
	req, resp := fullFetch("t", 3)
	_, sf, _ := c.Begin(12, req)
	c.Finish(sf, 12, resp)
	id := resp.SessionID
	inc := kmsg.NewPtrFetchRequest()
	inc.SessionID, inc.SessionEpoch = id, 1
	all, sf, code := c.Begin(12, inc)
	if code != 0 || len(all.Topics) != 1 || len(all.Topics[0].Partitions) != 3 {
		t.Fatalf("incremental reads %+v (code %d)", all.Topics, code)
	}
	_, resp = fullFetch("t", 3)
	resp.Topics[0].Partitions[1].RecordBatches = []byte{1}
	c.Finish(sf, 12, resp)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Partitions[0].Partition != 1 {
		t.Fatalf("answered %+v", resp.Topics)
	}
	inc.SessionEpoch = 2
	all, _, _ = c.Begin(12, inc)
	var order []int32
	for _, p := range all.Topics[0].Partitions {
		order = append(order, p.Partition)
	}
	if len(order) != 3 || order[0] != 0 || order[1] != 2 || order[2] != 1 {
		t.Fatalf("order after p1 returned records: %v", order)
	}
	for _, tc := range [][2]int32{{-1, -1}, {0, 1}, {1, 2}, {math.MaxInt32, 1}} {
		if got := nextFetchEpoch(tc[0]); got != tc[1] {
			t.Fatalf("nextFetchEpoch(%d) = %d, want %d", tc[0], got, tc[1])
		}
	}
}
