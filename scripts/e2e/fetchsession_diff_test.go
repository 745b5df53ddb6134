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
// epoch -1), max_bytes 0 (KIP-74: the first batch anyway), and the session
// epoch rules.
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
	return tr
}
