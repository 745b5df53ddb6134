package e2e

import (
	"encoding/binary"
	"hash/crc32"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// Transactions (issue 25), on every target:
//
//   - answers: one transactional id driven request by request
//     (InitProducerId, AddPartitionsToTxn, Produce, EndTxn) through the
//     refusals a client meets: a timeout above the maximum, a produce to a
//     partition not added, a stale epoch, a retried EndTxn, the other
//     outcome after a commit, a produce after EndTxn. The codes are compared
//     with Apache Kafka's (KAFKA_IGGY_E2E_KAFKA=1); kfake's are logged only
//     (it checks no transaction state on Produce). Then the same under
//     transaction protocol v2 (KIP-890 part 2): Produce v12 with no
//     AddPartitionsToTxn, EndTxn v5 and the epoch it answers, a retried
//     EndTxn with the old epoch, the committed transaction's late write
//     (old epoch), aborts with and without a transaction open.
//   - java-producer: kafka-producer-perf-test of Kafka 4.x with
//     --transactional-id (the Java KafkaProducer in transactions, committing
//     every 100 ms) sends 2,000 records; then kafka-transactions.sh list and
//     describe show the id, its producer id and state CompleteCommit, and
//     its epoch moved on (the producer used transaction protocol v2).

// txnBatchBytes is a transactional record batch v2 of one record.
func txnBatchBytes(pid int64, epoch int16, seq int32, value string) []byte {
	now := time.Now().UnixMilli()
	rec := kmsg.Record{Value: []byte(value)}
	rec.Length = int32(len(rec.AppendTo(nil)) - 1) // the record's length varint (0: one byte) excluded
	body := rec.AppendTo(nil)
	b := kmsg.RecordBatch{PartitionLeaderEpoch: -1, Magic: 2, Attributes: 0x10, FirstTimestamp: now, MaxTimestamp: now,
		ProducerID: pid, ProducerEpoch: epoch, FirstSequence: seq, NumRecords: 1, Records: body}
	out := b.AppendTo(nil)
	binary.BigEndian.PutUint32(out[8:], uint32(len(out)-12))
	binary.BigEndian.PutUint32(out[17:], crc32.Checksum(out[21:], crc32.MakeTable(crc32.Castagnoli)))
	return out
}

// txnAnswers drives one transactional id by hand and returns each step's
// code, in order.
func txnAnswers(t *testing.T, tg Target) []string {
	t.Helper()
	topic := uniqueTopic("txn-raw")
	createTopic(t, tg, topic, 1)
	vs := kversion.Stable()
	// Transaction protocol v1 on every target (what the sidecar serves):
	// Produce v11, AddPartitionsToTxn v3, EndTxn v4; Kafka 4.x switches a
	// transaction to v2 from Produce v12 / EndTxn v5 on.
	vs.SetMaxKeyVersion(0, 11)
	vs.SetMaxKeyVersion(24, 3)
	vs.SetMaxKeyVersion(26, 4)
	cl := newKgo(t, tg, kgo.MaxVersions(vs))
	ctx := testCtx(t, 60*time.Second)
	id := uniqueTopic("txid")
	var out []string
	step := func(name string, code int16) {
		out = append(out, name+"="+codeName(code))
	}
	ip := kmsg.NewPtrInitProducerIDRequest()
	ip.TransactionalID, ip.TransactionTimeoutMillis = &id, int32((16 * time.Minute).Milliseconds())
	r, err := ip.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	step("init_timeout_above_max", r.ErrorCode)
	ip.TransactionTimeoutMillis = 60000
	var pid int64
	var epoch int16
	for { // a broker answers COORDINATOR_LOAD_IN_PROGRESS / NOT_COORDINATOR while its txn log loads
		r, err = ip.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if r.ErrorCode == kerr.CoordinatorLoadInProgress.Code || r.ErrorCode == kerr.CoordinatorNotAvailable.Code || r.ErrorCode == kerr.NotCoordinator.Code {
			time.Sleep(200 * time.Millisecond) // the broker's own retry signal: back off, then ask again
			continue
		}
		break
	}
	step("init", r.ErrorCode)
	pid, epoch = r.ProducerID, r.ProducerEpoch

	vs10 := kversion.Stable()
	vs10.SetMaxKeyVersion(0, 10)
	cl10 := newKgo(t, tg, kgo.MaxVersions(vs10))
	produceWith := func(cl *kgo.Client, seq int32, ep int16, v string) int16 {
		req := kmsg.NewPtrProduceRequest()
		req.TransactionID, req.Acks, req.TimeoutMillis = &id, -1, 10000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = txnBatchBytes(pid, ep, seq, v)
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	produce := func(seq int32, ep int16, v string) int16 { return produceWith(cl, seq, ep, v) }
	step("produce_not_added", produce(0, epoch, "x"))
	step("produce_v10_not_added", produceWith(cl10, 0, epoch, "x"))
	add := func(ep int16) int16 {
		req := kmsg.NewPtrAddPartitionsToTxnRequest()
		req.TransactionalID, req.ProducerID, req.ProducerEpoch = id, pid, ep
		at := kmsg.NewAddPartitionsToTxnRequestTopic()
		at.Topic, at.Partitions = topic, []int32{0}
		req.Topics = append(req.Topics, at)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	step("add_old_epoch", add(epoch-1))
	step("add", add(epoch))
	step("produce", produce(0, epoch, "in"))
	end := func(ep int16, commit bool) int16 {
		req := kmsg.NewPtrEndTxnRequest()
		req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = id, pid, ep, commit
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.ErrorCode
	}
	step("end_old_epoch", end(epoch-1, true))
	step("end_commit", end(epoch, true))
	for i := 0; i < 50; i++ { // Kafka writes its markers after answering: CONCURRENT_TRANSACTIONS meanwhile
		if c := end(epoch, true); c != kerr.ConcurrentTransactions.Code {
			step("end_commit_again", c)
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	step("end_abort_after_commit", end(epoch, false))
	step("produce_after_end", produce(1, epoch, "late"))
	step("produce_v10_after_end", produceWith(cl10, 1, epoch, "late"))
	return out
}

// txnAnswersV2 drives one transactional id by hand under transaction
// protocol v2 (KIP-890 part 2: Produce v12 with no AddPartitionsToTxn,
// EndTxn v5 moving the epoch on) and returns each step's code (and how the
// answered epoch relates to the producer's), in order.
func txnAnswersV2(t *testing.T, tg Target) []string {
	t.Helper()
	topic := uniqueTopic("txn-v2")
	createTopic(t, tg, topic, 1)
	vs := kversion.Stable()
	vs.SetMaxKeyVersion(0, 12) // v13 names topics by id
	cl := newKgo(t, tg, kgo.MaxVersions(vs))
	ctx := testCtx(t, 60*time.Second)
	id := uniqueTopic("txid-v2")
	var out []string
	step := func(name string, code int16) { out = append(out, name+"="+codeName(code)) }
	retriable := func(c int16) bool {
		return c == kerr.CoordinatorLoadInProgress.Code || c == kerr.CoordinatorNotAvailable.Code || c == kerr.NotCoordinator.Code ||
			c == kerr.ConcurrentTransactions.Code || c == kerr.NotEnoughReplicas.Code
	}
	ip := kmsg.NewPtrInitProducerIDRequest()
	ip.TransactionalID, ip.TransactionTimeoutMillis = &id, 60000
	var r *kmsg.InitProducerIDResponse
	for {
		var err error
		if r, err = ip.RequestWith(ctx, cl); err != nil {
			t.Fatal(err)
		}
		if !retriable(r.ErrorCode) {
			break
		}
		time.Sleep(200 * time.Millisecond) // the broker's own retry signal
	}
	step("v2_init", r.ErrorCode)
	pid, epoch := r.ProducerID, r.ProducerEpoch
	produce := func(seq int32, ep int16, v string) int16 {
		for {
			req := kmsg.NewPtrProduceRequest()
			req.TransactionID, req.Acks, req.TimeoutMillis = &id, -1, 10000
			rt := kmsg.NewProduceRequestTopic()
			rt.Topic = topic
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Records = txnBatchBytes(pid, ep, seq, v)
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				t.Fatal(err)
			}
			if c := resp.Topics[0].Partitions[0].ErrorCode; !retriable(c) || ctx.Err() != nil {
				return c
			}
			time.Sleep(100 * time.Millisecond) // a coordinator still writing its markers
		}
	}
	end := func(name string, ep int16, commit, retry bool) int16 {
		for {
			req := kmsg.NewPtrEndTxnRequest()
			req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = id, pid, ep, commit
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				t.Fatal(err)
			}
			if retry && resp.ErrorCode == kerr.ConcurrentTransactions.Code && ctx.Err() == nil {
				time.Sleep(100 * time.Millisecond) // Kafka writes its markers after answering
				continue
			}
			step(name, resp.ErrorCode)
			if resp.ErrorCode == 0 {
				out = append(out, name+"_epoch=epoch+"+strconv.Itoa(int(resp.ProducerEpoch-epoch)))
			}
			return resp.ProducerEpoch
		}
	}
	step("v2_produce_no_add", produce(0, epoch, "in"))
	end("v2_end_old_epoch", epoch-1, true, false)
	e1 := end("v2_end_commit", epoch, true, false)
	end("v2_end_commit_retry", epoch, true, true)
	end("v2_end_abort_old_epoch", epoch, false, true)
	step("v2_produce_late", produce(1, epoch, "late"))
	end("v2_end_commit_nothing_open", e1, true, true)
	e2 := end("v2_end_abort_nothing_open", e1, false, true)
	step("v2_produce_new_epoch", produce(0, e2, "next"))
	// TxnOffsetCommit at the newest version both serve (v6 names topics by
	// id; the names are set too, for a broker that stops at v5): the
	// topic's own id, and an id no topic has.
	md, err := kadm.NewClient(cl).ListTopics(ctx, topic)
	if err != nil || md[topic].Err != nil {
		t.Fatalf("metadata: %v %v", err, md[topic].Err)
	}
	for _, c := range []struct {
		name, topic string
		id          [16]byte
	}{{"v2_txn_offset_commit", topic, md[topic].ID}, {"v2_txn_offset_commit_unknown_id", "no-such-topic", [16]byte{0xde, 0xad}}} {
		for {
			req := kmsg.NewPtrTxnOffsetCommitRequest()
			req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch, req.Generation = id, id+"-g", pid, e2, -1
			rt := kmsg.NewTxnOffsetCommitRequestTopic()
			rt.Topic, rt.TopicID = c.topic, c.id
			rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
			rp.Offset = 1
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				t.Fatal(err)
			}
			if code := resp.Topics[0].Partitions[0].ErrorCode; !retriable(code) || ctx.Err() != nil {
				step(c.name, code)
				break
			}
			time.Sleep(100 * time.Millisecond) // the group's coordinator loading
		}
	}
	end("v2_end_abort", e2, false, true)
	return out
}

func codeName(code int16) string {
	if code == 0 {
		return "NONE"
	}
	if e := kerr.ErrorForCode(code); e != nil {
		if ke, ok := e.(*kerr.Error); ok {
			return ke.Message
		}
	}
	return strconv.Itoa(int(code))
}

func TestTransactions(t *testing.T) {
	answers := map[string][]string{}
	sidecars := map[string]bool{}
	ref := referenceTarget(t)
	for _, tg := range targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			t.Run("answers", func(t *testing.T) {
				answers[tg.Name], sidecars[tg.Name] = append(txnAnswers(t, tg), txnAnswersV2(t, tg)...), tg.Sidecar
				t.Logf("%s: %s", tg.Name, strings.Join(answers[tg.Name], " "))
			})
			if tg.Reference {
				return // kfake: no kafka-transactions.sh
			}
			t.Run("java-producer", func(t *testing.T) { javaTransactions(t, tg) })
		})
	}
	want, ok := answers[ref.Name]
	if !ok || !ref.Kafka { // kfake checks no transaction state on Produce: not a reference here
		return
	}
	for name, got := range answers {
		if !sidecars[name] || len(got) == 0 {
			continue
		}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("%s answers differ from %s:\n got  %s\n want %s", name, ref.Name, strings.Join(got, " "), strings.Join(want, " "))
		}
	}
}

func javaTransactions(t *testing.T, tg Target) {
	version := kafka4Version()
	kafkaToolsReady(version)(t)
	topic := uniqueTopic("txn-java")
	createTopic(t, tg, topic, 2)
	id := uniqueTopic("txid-java")
	out := runKafkaTool(t, version, 180*time.Second, "producer-perf-test",
		"--topic", topic, "--num-records", "2000", "--record-size", "100", "--throughput", "-1",
		"--transactional-id", id, "--transaction-duration-ms", "100",
		"--producer-props", "bootstrap.servers="+tg.Bootstrap)
	m := perfSent.FindAllStringSubmatch(out, -1)
	if len(m) == 0 || m[len(m)-1][1] != "2000" {
		t.Fatalf("kafka-producer-perf-test --transactional-id: %s", tail(out, 10))
	}
	ends := listEnds(t, tg, topic)
	if ends[0]+ends[1] <= 2000 { // the records and at least one marker per partition
		t.Errorf("high watermarks %v after 2000 transactional records", ends)
	}
	list := runKafkaTool(t, version, 60*time.Second, "transactions", "--bootstrap-server", tg.Bootstrap, "list")
	if !strings.Contains(list, id) {
		t.Errorf("kafka-transactions list does not show %s:\n%s", id, tail(list, 20))
	}
	desc := runKafkaTool(t, version, 60*time.Second, "transactions", "--bootstrap-server", tg.Bootstrap, "describe", "--transactional-id", id)
	if !strings.Contains(desc, "CompleteCommit") || !strings.Contains(desc, id) {
		t.Errorf("kafka-transactions describe --transactional-id %s:\n%s", id, desc)
	}
	t.Logf("%s: kafka-transactions describe:\n%s", tg.Name, desc)
	// The Java 4.4 producer used transaction protocol v2 (ApiVersions
	// finalizes transaction.version 2): its EndTxn v5 moved the epoch on,
	// which v1 never does after InitProducerId's epoch 0.
	dreq := kmsg.NewPtrDescribeTransactionsRequest()
	dreq.TransactionalIDs = []string{id}
	dresp, err := dreq.RequestWith(testCtx(t, 30*time.Second), newKgo(t, tg))
	if err != nil || len(dresp.TransactionStates) != 1 {
		t.Fatalf("describe transactions: %+v %v", dresp, err)
	}
	if s := dresp.TransactionStates[0]; s.ErrorCode != 0 || s.ProducerEpoch < 1 {
		t.Errorf("%s: the Java producer's epoch after its transactions is %d (code %d): transaction protocol v2 not used", tg.Name, s.ProducerEpoch, s.ErrorCode)
	}
}
