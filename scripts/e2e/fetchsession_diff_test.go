package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestFetchSessionsDifferential: raw Fetch requests (the session fields set
// by hand) against Kafka and the sidecar: a sessionless fetch (session -1,
// epoch -1), max_bytes 0 (KIP-74: the first batch anyway), and fetch
// sessions (KIP-227): creation, incremental requests answered with only
// what changed, forgotten partitions, the epoch rules, closing and
// replacing a session.
func TestFetchSessionsDifferential(t *testing.T) {
	kafkaDiff(t, fetchSessionScenario, fetchSessionWant, nil)
}

// fetchSessionWant is what Kafka 4.4 answers in fetchSessionScenario.
var fetchSessionWant = map[string]map[string]string{
	"sessionless fetch (session -1, epoch -1)": {"error": "0 NONE", "session": "0", "partitions": "p0 0 NONE records=3 first=0 hw=3 | p1 0 NONE records=0 first=-1 hw=0"},
	"fetch with max_bytes 0":                   {"error": "0 NONE", "session": "0", "partitions": "p0 0 NONE records=1 first=0 hw=3"},
	"fetch with max_bytes 0 at offset 2":       {"partitions": "p0 0 NONE records=1 first=2 hw=3"},
	"session 0 with epoch 3":                   {"error": "70 FETCH_SESSION_ID_NOT_FOUND", "session": "0", "partitions": ""},
	"unknown session with epoch 1":             {"error": "70 FETCH_SESSION_ID_NOT_FOUND", "session": "0", "partitions": ""},
	"full fetch (epoch 0) creates a session": {"error": "0 NONE", "session": "new",
		"partitions": "p0 0 NONE records=3 first=0 hw=3 | p1 0 NONE records=0 first=-1 hw=0"},
	"incremental: p0 moved to 3":                      {"error": "0 NONE", "session": "same", "partitions": ""},
	"incremental after a produce to p1":               {"session": "same", "partitions": "p1 0 NONE records=1 first=0 hw=1"},
	"incremental: p1 moved to 1":                      {"session": "same", "partitions": ""},
	"incremental with a used epoch":                   {"error": "71 INVALID_FETCH_SESSION_EPOCH", "session": "0", "partitions": ""},
	"incremental with a future epoch":                 {"error": "71 INVALID_FETCH_SESSION_EPOCH", "session": "0"},
	"incremental forgetting p1":                       {"session": "same", "partitions": ""},
	"incremental after a produce to the forgotten p1": {"session": "same", "partitions": ""},
	"incremental adding p1 back at 1":                 {"session": "same", "partitions": "p1 0 NONE records=1 first=1 hw=2"},
	"incremental forgetting every partition":          {"error": "0 NONE", "session": "0", "partitions": ""},
	"incremental on the emptied session":              {"error": "70 FETCH_SESSION_ID_NOT_FOUND"},
	"full fetch creates another session": {"session": "new",
		"partitions": "p0 0 NONE records=0 first=-1 hw=3 | p1 0 NONE records=0 first=-1 hw=2"},
	"epoch -1 on the session closes it": {"error": "0 NONE", "session": "0",
		"partitions": "p0 0 NONE records=0 first=-1 hw=3 | p1 0 NONE records=0 first=-1 hw=2"},
	"incremental on the closed session":   {"error": "70 FETCH_SESSION_ID_NOT_FOUND"},
	"epoch 0 on the session replaces it":  {"session": "new", "partitions": "p0 0 NONE records=3 first=0 hw=3"},
	"incremental on the replaced session": {"error": "70 FETCH_SESSION_ID_NOT_FOUND"},
	"incremental on the new session":      {"session": "same", "partitions": "p0 0 NONE records=3 first=0 hw=3"},
}

// sessionFetcher sends raw Fetch requests for one topic to its leader and
// renders the answers.
type sessionFetcher struct {
	t       *testing.T
	tg      Target
	br      *kgo.Broker
	topic   string
	id      [16]byte
	session int32 // the last session id handed out
}

// fetchAt is one partition of a request: its fetch offset and max bytes.
type fetchAt struct {
	p        int32
	offset   int64
	maxBytes int32
}

func (f *sessionFetcher) request(session, epoch, maxBytes int32, parts []fetchAt, forget []int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MaxWaitMillis = 0
	req.MinBytes = 0
	req.MaxBytes = maxBytes
	req.SessionID, req.SessionEpoch = session, epoch
	if len(parts) > 0 {
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic, ft.TopicID = f.topic, f.id
		for _, p := range parts {
			fp := kmsg.NewFetchRequestTopicPartition()
			fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes = p.p, p.offset, p.maxBytes
			fp.CurrentLeaderEpoch, fp.LastFetchedEpoch, fp.LogStartOffset = -1, -1, -1
			ft.Partitions = append(ft.Partitions, fp)
		}
		req.Topics = append(req.Topics, ft)
	}
	if len(forget) > 0 {
		fg := kmsg.NewFetchRequestForgottenTopic()
		fg.Topic, fg.TopicID, fg.Partitions = f.topic, f.id, forget
		req.ForgottenTopics = append(req.ForgottenTopics, fg)
	}
	return req
}

// fetch sends a request and records the answer as step name: the top-level
// error, the session id ("0", "new" for an id not seen before, "same" for
// the last one handed out) and every partition answered, in order.
func (f *sessionFetcher) fetch(tr *transcript, name string, req *kmsg.FetchRequest) *kmsg.FetchResponse {
	f.t.Helper()
	kresp, err := f.br.Request(testCtx(f.t, 20*time.Second), req)
	if err != nil {
		tr.add(name, "error", "client error: "+err.Error())
		return nil
	}
	resp := kresp.(*kmsg.FetchResponse)
	session := "0"
	switch {
	case resp.SessionID == 0:
	case resp.SessionID == f.session:
		session = "same"
	default:
		session = "new"
		f.session = resp.SessionID
	}
	var parts []string
	for _, rt := range resp.Topics {
		if rt.Topic != f.topic && rt.TopicID != f.id {
			parts = append(parts, "another topic")
			continue
		}
		for _, rp := range rt.Partitions {
			n, first := batchRecords(rp.RecordBatches)
			parts = append(parts, fmt.Sprintf("p%d %s records=%d first=%d hw=%d", rp.Partition, errStr(rp.ErrorCode), n, first, rp.HighWatermark))
		}
	}
	tr.add(name, "error", errStr(resp.ErrorCode), "session", session, "partitions", strings.Join(parts, " | "))
	return resp
}

func fetchSessionScenario(t *testing.T, tg Target) *transcript {
	t.Helper()
	tr := &transcript{}
	cl := newKgo(t, tg, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	adm := kadm.NewClient(cl)
	ctx := testCtx(t, 60*time.Second)
	topic := uniqueTopic("fsess")
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, topic); err != nil {
		t.Fatalf("%s: create topic: %v", tg.Name, err)
	}
	td, err := adm.ListTopics(ctx, topic)
	if err != nil || td[topic].Err != nil {
		t.Fatalf("%s: metadata: %v %v", tg.Name, err, td[topic].Err)
	}
	leader := td[topic].Partitions[0].Leader
	if td[topic].Partitions[1].Leader != leader {
		t.Fatalf("%s: partitions led by %d and %d", tg.Name, leader, td[topic].Partitions[1].Leader)
	}
	// One batch per record: Kafka returns a producer's batch whole, the
	// sidecar one record (docs/COMPATIBILITY.md).
	for i := 0; i < 3; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 0, Value: []byte(fmt.Sprintf("v%d", i))}).FirstErr(); err != nil {
			t.Fatalf("%s: produce: %v", tg.Name, err)
		}
	}
	f := &sessionFetcher{t: t, tg: tg, br: cl.Broker(int(leader)), topic: topic, id: td[topic].ID}
	both := []fetchAt{{0, 0, 1 << 20}, {1, 0, 1 << 20}}

	f.fetch(tr, "sessionless fetch (session -1, epoch -1)", f.request(-1, -1, 1<<20, both, nil))
	f.fetch(tr, "fetch with max_bytes 0", f.request(0, -1, 0, []fetchAt{{0, 0, 0}}, nil))
	f.fetch(tr, "fetch with max_bytes 0 at offset 2", f.request(0, -1, 0, []fetchAt{{0, 2, 0}}, nil))
	f.fetch(tr, "session 0 with epoch 3", f.request(0, 3, 1<<20, both, nil))
	f.fetch(tr, "unknown session with epoch 1", f.request(1234567, 1, 1<<20, both, nil))

	// A session: created by a full fetch, then incremental fetches that
	// send and are answered only what changed.
	produceP1 := func(v string) {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 1, Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatalf("%s: produce: %v", tg.Name, err)
		}
	}
	f.fetch(tr, "full fetch (epoch 0) creates a session", f.request(0, 0, 1<<20, both, nil))
	id := f.session
	f.fetch(tr, "incremental: p0 moved to 3", f.request(id, 1, 1<<20, []fetchAt{{0, 3, 1 << 20}}, nil))
	produceP1("w0")
	f.fetch(tr, "incremental after a produce to p1", f.request(id, 2, 1<<20, nil, nil))
	f.fetch(tr, "incremental: p1 moved to 1", f.request(id, 3, 1<<20, []fetchAt{{1, 1, 1 << 20}}, nil))
	f.fetch(tr, "incremental with a used epoch", f.request(id, 3, 1<<20, nil, nil))
	f.fetch(tr, "incremental with a future epoch", f.request(id, 9, 1<<20, nil, nil))
	f.fetch(tr, "incremental forgetting p1", f.request(id, 4, 1<<20, nil, []int32{1}))
	produceP1("w1")
	f.fetch(tr, "incremental after a produce to the forgotten p1", f.request(id, 5, 1<<20, nil, nil))
	f.fetch(tr, "incremental adding p1 back at 1", f.request(id, 6, 1<<20, []fetchAt{{1, 1, 1 << 20}}, nil))
	f.fetch(tr, "incremental forgetting every partition", f.request(id, 7, 1<<20, nil, []int32{0, 1}))
	f.fetch(tr, "incremental on the emptied session", f.request(id, 8, 1<<20, nil, nil))

	f.fetch(tr, "full fetch creates another session", f.request(0, 0, 1<<20, []fetchAt{{0, 3, 1 << 20}, {1, 2, 1 << 20}}, nil))
	id = f.session
	f.fetch(tr, "epoch -1 on the session closes it", f.request(id, -1, 1<<20, []fetchAt{{0, 3, 1 << 20}, {1, 2, 1 << 20}}, nil))
	f.fetch(tr, "incremental on the closed session", f.request(id, 1, 1<<20, nil, nil))
	f.fetch(tr, "full fetch creates a third session", f.request(0, 0, 1<<20, []fetchAt{{0, 3, 1 << 20}}, nil))
	id = f.session
	f.fetch(tr, "epoch 0 on the session replaces it", f.request(id, 0, 1<<20, []fetchAt{{0, 0, 1 << 20}}, nil))
	f.fetch(tr, "incremental on the replaced session", f.request(id, 1, 1<<20, nil, nil))
	f.fetch(tr, "incremental on the new session", f.request(f.session, 1, 1<<20, nil, nil))
	return tr
}
