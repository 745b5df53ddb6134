package bridge_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestFetchSessionLongPoll: an incremental fetch that sends no partition
// waits on every partition of its session, and a produce to one of them
// answers it (with that partition alone) well before max_wait, with
// re-polling too slow to be what answered it. The session, created by
// topic ids (v13), refuses a request by names (v12).
func TestFetchSessionLongPoll(t *testing.T) {
	s := startStack(t, func(o *stackOpts) {
		o.bridge.Topics.DefaultPartitions = 2
		o.bridge.Fetch.RepollInterval = time.Minute
	})
	rk := dialRaw(t, s.Addr)
	const topic = "sessionpoll"
	id := createTopic(t, rk, topic)
	rk.produceValues(topic, 0, []byte("a"))

	req := fetchReq(0, 0, 1<<20, fetchPart{topicID: id, partition: 0, maxBytes: 1 << 20}, fetchPart{topicID: id, partition: 1, maxBytes: 1 << 20})
	req.SessionID, req.SessionEpoch = 0, 0
	full := rk.fetch(13, req)
	if full.ErrorCode != 0 || full.SessionID <= 0 || len(full.Topics) != 1 || len(full.Topics[0].Partitions) != 2 {
		t.Fatalf("full fetch: error %d, session %d, %+v", full.ErrorCode, full.SessionID, full.Topics)
	}
	// p0 moves past its record; nothing else changed: nothing is answered.
	inc := fetchReq(0, 0, 1<<20, fetchPart{topicID: id, partition: 0, offset: 1, maxBytes: 1 << 20})
	inc.SessionID, inc.SessionEpoch = full.SessionID, 1
	if resp := rk.fetch(13, inc); resp.ErrorCode != 0 || resp.SessionID != full.SessionID || len(resp.Topics) != 0 {
		t.Fatalf("incremental, nothing new: error %d, session %d, %+v", resp.ErrorCode, resp.SessionID, resp.Topics)
	}

	wait := fetchReq(5000, 1, 1<<20)
	wait.SessionID, wait.SessionEpoch = full.SessionID, 2
	start := time.Now()
	corr := rk.send(wait, 13)
	producer := dialRaw(t, s.Addr)
	producer.produceValues(topic, 1, []byte("late"))
	resp := kmsg.NewPtrFetchResponse()
	resp.SetVersion(13)
	rk.read(resp, corr, 15*time.Second)
	took := time.Since(start)
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || resp.Topics[0].TopicID != id || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("long poll: error %d, %+v", resp.ErrorCode, resp.Topics)
	}
	p := resp.Topics[0].Partitions[0]
	recs, _ := decodeBatches(t, p.RecordBatches)
	if p.Partition != 1 || len(recs) != 1 || string(recs[0].value) != "late" || p.HighWatermark != 1 {
		t.Fatalf("long poll answered p%d with %d records, hw %d", p.Partition, len(recs), p.HighWatermark)
	}
	if took > 4*time.Second {
		t.Fatalf("long poll answered after %v (max_wait 5s)", took)
	}

	byName := fetchReq(0, 0, 1<<20)
	byName.SessionID, byName.SessionEpoch = full.SessionID, 3
	if resp := rk.fetch(12, byName); resp.ErrorCode != kerr.FetchSessionTopicIDError.Code {
		t.Fatalf("v12 request on a v13 session: error %d", resp.ErrorCode)
	}
}

// TestFetchSessionCacheDisabled: with fetch.session_cache_slots 0 a full
// fetch creates no session (id 0) and still answers the data.
func TestFetchSessionCacheDisabled(t *testing.T) {
	s := startStack(t, func(o *stackOpts) { o.bridge.Fetch.SessionCacheSlots = 0 })
	rk := dialRaw(t, s.Addr)
	const topic = "nosessions"
	createTopic(t, rk, topic)
	rk.produceValues(topic, 0, []byte("a"))
	req := fetchReq(0, 0, 1<<20, fetchPart{topic: topic, maxBytes: 1 << 20})
	req.SessionEpoch = 0
	resp := rk.fetch(12, req)
	if recs, _ := decodeBatches(t, resp.Topics[0].Partitions[0].RecordBatches); resp.ErrorCode != 0 || resp.SessionID != 0 || len(recs) != 1 {
		t.Fatalf("error %d, session %d, %d records", resp.ErrorCode, resp.SessionID, len(recs))
	}
}

// TestFetchSessionWakeAsksNothing: an incremental long poll over eight
// caught-up partitions asks Iggy for the topic's end offsets once (its
// first pass), and a produce to one partition then costs one poll of that
// partition: no second GET_TOPIC, no poll of the seven others.
func TestFetchSessionWakeAsksNothing(t *testing.T) {
	var cc callCounter
	s := startStack(t, func(o *stackOpts) {
		o.iggyMetrics = &cc
		o.bridge.Topics.DefaultPartitions = 8
		o.bridge.Fetch.RepollInterval = time.Minute
	})
	rk := dialRaw(t, s.Addr)
	const topic = "sessionwake"
	id := createTopic(t, rk, topic)
	producer := dialRaw(t, s.Addr)
	producer.produceValues(topic, 0, []byte("first")) // the producer's topic lookup, cached
	var parts []fetchPart
	for p := range int32(8) {
		parts = append(parts, fetchPart{topicID: id, partition: p, maxBytes: 1 << 20})
	}
	req := fetchReq(0, 0, 1<<20, parts...)
	req.SessionID, req.SessionEpoch = 0, 0
	full := rk.fetch(13, req)
	if full.ErrorCode != 0 || full.SessionID <= 0 {
		t.Fatalf("full fetch: error %d, session %d", full.ErrorCode, full.SessionID)
	}
	inc := fetchReq(0, 0, 1<<20, fetchPart{topicID: id, partition: 0, offset: 1, maxBytes: 1 << 20})
	inc.SessionID, inc.SessionEpoch = full.SessionID, 1
	if resp := rk.fetch(13, inc); resp.ErrorCode != 0 || len(resp.Topics) != 0 {
		t.Fatalf("incremental, caught up: error %d, %+v", resp.ErrorCode, resp.Topics)
	}

	polls, gets := cc.count("message.poll"), cc.count("topic.get")
	wait := fetchReq(30_000, 1, 1<<20)
	wait.SessionID, wait.SessionEpoch = full.SessionID, 2
	corr := rk.send(wait, 13)
	deadline := time.Now().Add(10 * time.Second)
	for cc.count("topic.get") == gets { // the first pass's look at the end offsets
		if time.Now().After(deadline) {
			t.Fatal("the waiting fetch's first pass asked nothing")
		}
		runtime.Gosched()
	}
	producer.produceValues(topic, 3, []byte("late"))
	resp := kmsg.NewPtrFetchResponse()
	resp.SetVersion(13)
	rk.read(resp, corr, 15*time.Second)
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Partitions[0].Partition != 3 {
		t.Fatalf("long poll: error %d, %+v", resp.ErrorCode, resp.Topics)
	}
	if n := cc.count("topic.get") - gets; n != 1 {
		t.Errorf("%d GET_TOPIC for the waiting fetch, want 1 (its first pass)", n)
	}
	if n := cc.count("message.poll") - polls; n != 1 {
		t.Errorf("%d polls for the waiting fetch, want 1 (the written partition)", n)
	}
}
