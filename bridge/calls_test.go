package bridge_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

// Needless Iggy calls: the mapped stream is created once, not per topic,
// and the zero marker is deleted only when one is stored (a real server
// logs every delete of a missing offset).

// callCounter counts the Iggy client's requests by command and outcome.
type callCounter struct {
	iggy.NopMetrics
	mu    sync.Mutex
	calls map[string]int
}

func (c *callCounter) Request(op string, _ time.Duration, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.calls == nil {
		c.calls = map[string]int{}
	}
	key := op
	var st icodec.Status
	if errors.As(err, &st) {
		key = fmt.Sprintf("%s:%d", op, uint32(st))
	} else if err != nil {
		key = op + ":err"
	}
	c.calls[key]++
}

func (c *callCounter) count(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls[key]
}

func (c *callCounter) snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.calls))
	for k, v := range c.calls {
		out[k] = v
	}
	return out
}

func TestCreateTopicsCreateTheStreamOnce(t *testing.T) {
	var cc callCounter
	s := startStack(t, func(o *stackOpts) { o.iggyMetrics = &cc })
	adm := kadm.NewClient(s.kgoClient(t))
	for i := range 4 {
		name := fmt.Sprintf("once-%d", i)
		if r, err := adm.CreateTopic(offCtx(t), 1, 1, nil, name); err != nil || r.Err != nil {
			t.Fatalf("create %s: %v %v", name, err, r.Err)
		}
	}
	if n := cc.count("stream.create"); n != 1 {
		t.Errorf("%d successful CREATE_STREAM for 4 topics, want 1 (calls %v)", n, cc.snapshot())
	}
	if n := cc.count(fmt.Sprintf("stream.create:%d", uint32(icodec.StatusStreamNameAlreadyExists))); n != 0 {
		t.Errorf("%d CREATE_STREAM answered StreamNameAlreadyExists, want 0", n)
	}

	// An operator deletes the stream: the next topic creation creates it
	// again.
	del := icodec.DeleteStreamRequest{StreamID: iggy.TopicRef{Stream: "kafka"}.StreamID()}
	if err := s.Client.Do(offCtx(t), &del, nil); err != nil {
		t.Fatal(err)
	}
	if r, err := adm.CreateTopic(offCtx(t), 1, 1, nil, "after-delete"); err != nil || r.Err != nil {
		t.Fatalf("create after the stream was deleted: %v %v", err, r.Err)
	}
	if n := cc.count("stream.create"); n != 2 {
		t.Errorf("%d successful CREATE_STREAM after the stream was deleted, want 2", n)
	}
}

func TestCommitsDeleteOnlyStoredMarkers(t *testing.T) {
	var cc callCounter
	s := offsetsStack(t, false, "consumer", func(o *stackOpts) { o.iggyMetrics = &cc })
	offTopic(t, s, "markers", 2, map[int32]int{0: 10, 1: 10})
	r := dialRaw(t, s.Addr)
	commit := func(offsets map[int32]int64) {
		t.Helper()
		for p, c := range rawCommit(r, 8, "mg", "markers", [16]byte{}, offsets) {
			if c != 0 {
				t.Fatalf("commit %v: partition %d answered %d", offsets, p, c)
			}
		}
	}
	deletes := func() int { return cc.count("consumer_offset.delete") }
	missing := fmt.Sprintf("consumer_offset.delete:%d", uint32(icodec.StatusConsumerOffsetNotFound))

	commit(map[int32]int64{0: 5, 1: 5}) // first commits: no marker stored
	commit(map[int32]int64{0: 6, 1: 7})
	if n := deletes(); n != 0 {
		t.Fatalf("%d DELETE_CONSUMER_OFFSET for commits without a marker, want 0 (calls %v)", n, cc.snapshot())
	}
	commit(map[int32]int64{0: 0}) // marker stored, main key deleted
	commit(map[int32]int64{0: 3}) // the marker goes
	if n := deletes(); n != 2 {
		t.Fatalf("%d DELETE_CONSUMER_OFFSET after commit 0 then 3, want 2 (main key, marker)", n)
	}
	if got := iggyKeysOf(t, s, "mg", "markers", 0); got != (iggyKeys{main: 2}) {
		t.Fatalf("Iggy holds %+v, want main key 2 and no marker", got)
	}
	commit(map[int32]int64{1: -1}) // no marker known: only the main key
	if n := deletes(); n != 3 {
		t.Fatalf("%d DELETE_CONSUMER_OFFSET after a negative commit, want 3", n)
	}
	// A commit of 0 on a key nobody stored: the marker, and no delete of
	// the absent main key.
	commit(map[int32]int64{1: 0})
	if n := deletes(); n != 3 {
		t.Fatalf("%d DELETE_CONSUMER_OFFSET after commit 0 of an empty key, want 3", n)
	}
	if got := iggyKeysOf(t, s, "mg", "markers", 1); got != (iggyKeys{main: -1, marker: true}) {
		t.Fatalf("Iggy holds %+v, want the marker only", got)
	}
	if n := cc.count(missing); n != 0 {
		t.Fatalf("%d deletes of a missing offset, want 0 (calls %v)", n, cc.snapshot())
	}
}
