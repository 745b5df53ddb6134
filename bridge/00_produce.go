package bridge

// Produce: v0-v13
//
// Behavior:
//   - A received Produce is written even when its connection closes first
//     (API.Completes), as Kafka does: an acks=0 producer that writes and
//     closes at once loses nothing.
//   - Size: from v3 a partition's record batch larger than the topic's
//     max.message.bytes (else topics.max_message_bytes, Kafka's
//     message.max.bytes) is refused with MESSAGE_TOO_LARGE before it is
//     decoded (topicconfig/held.go; the topic's value comes from the topic-config
//     store in Iggy, topicconfig/store.go, read at most a second ago).
//   - Records: every partition's Records bytes go through the record mapping
//     v1 (codec/records, KAFKA-ON-IGGY §2): record batches v2 and magic 0/1
//     message sets, codecs none/gzip/snappy/lz4/zstd, one Kafka record = one
//     Iggy message. Decompression of the whole request shares ONE
//     DecompressBudget of budget.DecompressLimit bytes (Kafka's
//     socket.request.max.bytes default, what the front door accepts as a
//     frame) and at most a quarter of the memory budget, taken from it
//     (twice: the records and their Iggy messages) before anything is
//     decompressed (produce_budget.go; no room within the request's
//     timeout: REQUEST_TIMED_OUT, nothing written). Control batches, and
//     transactional batches without a TransactionalID, are refused with the
//     codes of records.ErrorCode; nothing of a refused partition is
//     written.
//   - Transactional batches (v3+ with a TransactionalID; bridge/txn's Gate):
//     admitted only for a partition of the producer's open transaction
//     (AddPartitionsToTxn answered), with its current epoch, and never while
//     its EndTxn runs: else INVALID_TXN_STATE (48; from v11
//     TRANSACTION_ABORTABLE (121), as Kafka 4.4), INVALID_PRODUCER_EPOCH
//     (47, an older epoch), PRODUCER_FENCED (90, a newer one),
//     INVALID_PRODUCER_ID_MAPPING (49). A producer this sidecar does not
//     know (after a restart) is looked up from its coordinator. Each record
//     carries the user header kafka.t = the transaction's mark
//     (codec/records/txn.go); EndTxn waits for the batches in flight.
//     v12+ (transaction protocol v2, bridge/txn/v2.go): a partition not in
//     the producer's transaction is added to it at the coordinator first
//     (no AddPartitionsToTxn); a fenced producer there:
//     INVALID_PRODUCER_EPOCH, a busy coordinator NOT_ENOUGH_REPLICAS.
//   - Writes: one SEND_MESSAGES per partition (Partitioning = the Kafka
//     partition id), partitions of one request in parallel. The Iggy client
//     coalesces concurrent sends of a partition and splits a send whose
//     origin timestamps span more than 2^32-1 µs (71.6 min) into
//     consecutive batches: still one offset range. BaseOffset = the
//     confirmation's base offset; -1 when Iggy confirmed without one.
//   - acks: -1, 0 and 1 all wait for Iggy's confirmation (Iggy has no
//     replica acks to wait for beyond it). acks=0 answers nothing (the
//     handler returns no response after doing the work); when a partition
//     of an acks=0 request failed, the connection is closed instead, as
//     Kafka does, so the producer notices and refreshes its metadata. Any
//     other acks value: INVALID_REQUIRED_ACKS (21) for every partition,
//     nothing written.
//   - TimeoutMillis is not applied to the Iggy write: Kafka's timeout bounds
//     replication waits, not the local append. The Iggy client's request
//     timeout bounds it instead (REQUEST_TIMED_OUT when it passes).
//   - Missing topics are created (stream too) when topics.auto_create is on
//     (KAFKA-ON-IGGY §1), else UNKNOWN_TOPIC_OR_PARTITION; names Kafka
//     refuses answer INVALID_TOPIC_EXCEPTION with no Iggy call. A partition
//     outside the topic answers UNKNOWN_TOPIC_OR_PARTITION (after one fresh
//     lookup, in case partitions were added).
//   - Iggy failures map through kafkaCode (errors.go): retriable ones to
//     NOT_LEADER_OR_FOLLOWER, deadlines to REQUEST_TIMED_OUT, oversized
//     messages to MESSAGE_TOO_LARGE. A write whose outcome is unknown is
//     reported as a retriable failure: the client retries; for an
//     idempotent producer the retry is checked against what Iggy holds
//     first (bridge/producers/tail.go), otherwise Iggy may hold the records twice
//     (at-least-once, as a Kafka producer without idempotence).
//   - Every successful write wakes the fetches waiting on the partition.
//   - LogAppendTime is -1 for CreateTime topics. A topic whose
//     message.timestamp.type is LogAppendTime (topicconfig/held.go) gets the
//     gateway's clock: every record of the partition is written with the
//     append time (ms) as its timestamp, in place of the producer's, and
//     LogAppendTime answers it. LogStartOffset is -1 (not
//     looked up on the write path; clients read it only on
//     UNKNOWN_PRODUCER_ID, where -1 makes them start over with a new
//     producer id or epoch).
//   - Idempotent batches (v3+, producer id set) go through bridge/producers first:
//     a retried batch (same producer, epoch and sequence as one of the last
//     5 confirmed) gets its original base offset and is not written again;
//     a sequence gap answers OUT_OF_ORDER_SEQUENCE_NUMBER and an old epoch
//     INVALID_PRODUCER_EPOCH; one batch per producer and partition is
//     written at a time, so Iggy receives them in sequence order. Each
//     message of such a batch gets a message id naming its producer id,
//     epoch and sequence (bridge/producers/id.go), from which the state is read back
//     after a restart (bridge/producers/tail.go).
//
// Version notes:
//   - v0-v2 accept any number of batches of any magic (Kafka does not check
//     old versions either). v3+: exactly one batch per partition, magic 2,
//     else INVALID_RECORD (87), the code Kafka's ProduceRequest.
//     validateRecords produces; zstd below v7: UNSUPPORTED_COMPRESSION_TYPE.
//   - v1: ThrottleMillis; v2: LogAppendTime; v3: TransactionalID (refused
//     through its transactional batches); v5: LogStartOffset; v8:
//     ErrorRecords/ErrorMessage (ErrorMessage says why a partition was
//     refused); v9: flexible; v10-v11: tagged leader hints (not sent: we are
//     always the leader); v12: no wire change (transaction protocol v2); v13: topics by id
//     (UNKNOWN_TOPIC_ID (100) for an id no Kafka topic has).
//
// Iggy commands: SEND_MESSAGES (101), GET_TOPIC (300), GET_TOPICS (301,
// topic ids), CREATE_STREAM (202) and CREATE_TOPIC (302) for auto-creation.

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
	"github.com/kafka-iggy/kafka-iggy/bridge/producers"
	"github.com/kafka-iggy/kafka-iggy/bridge/quotas"
	"github.com/kafka-iggy/kafka-iggy/codec/records"
	"github.com/kafka-iggy/kafka-iggy/internal/panics"
)

// produceMaxVersion is the highest Produce version served (kmsg's maximum).
const produceMaxVersion = 13

// producer serves Produce.
type producer struct {
	b *Bridge
}

// decoderPool recycles records.Decoders (their scratch buffers and codec
// readers) across Produce requests.
var decoderPool = sync.Pool{New: func() any { return new(records.Decoder) }}

// produceCharge is the row's memory charge (API.FrameCharge): the frame,
// and the smallest records (7 bytes) become Iggy messages of ~90 bytes
// (13x).
const produceCharge = 14

func (b *Bridge) produceAPI() API {
	p := &producer{b: b}
	return API{Key: 0, Name: "Produce", MinVersion: 0, MaxVersion: produceMaxVersion, Handle: p.handle, Completes: true, FrameCharge: produceCharge, ErrorCodes: errorCodes(produceErrorCodes)}
}

func init() { registerAPI((*Bridge).produceAPI) }

// produceSend is one partition's mapped messages waiting to be sent.
type produceSend struct {
	rp        *kmsg.ProduceResponseTopicPartition
	topic     string // Kafka name (wake-ups)
	ref       iggy.TopicRef
	partition int32
	msgs      *iggy.Messages
	idem      *records.BatchInfo // the batch of an idempotent producer (v3+), else nil
	release   func()             // a transactional batch: called once written (txn.Gate), else nil
}

func (p *producer) handle(ctx context.Context, rq *Request) (kmsg.Response, error) {
	req := rq.Msg.(*kmsg.ProduceRequest)
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	b := p.b

	// Response skeleton, in request order; the partitions' slices are
	// sized once so the pointers kept in sends stay valid.
	resp.Topics = make([]kmsg.ProduceResponseTopic, len(req.Topics))
	for i := range req.Topics {
		rt := &resp.Topics[i]
		*rt = kmsg.NewProduceResponseTopic()
		rt.Topic, rt.TopicID = req.Topics[i].Topic, req.Topics[i].TopicID
		rt.Partitions = make([]kmsg.ProduceResponseTopicPartition, len(req.Topics[i].Partitions))
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			*rp = kmsg.NewProduceResponseTopicPartition()
			rp.Partition = req.Topics[i].Partitions[j].Partition
			rp.BaseOffset = -1
			rp.LogAppendTime = -1
			rp.LogStartOffset = -1
		}
	}
	if req.Acks != -1 && req.Acks != 0 && req.Acks != 1 {
		setProduceCodes(resp, kerr.InvalidRequiredAcks.Code)
		return p.answer(req, resp)
	}

	limit, release, ok := b.budget.DecompressAllowance(ctx, produceCompressed(req), req.TimeoutMillis)
	if !ok { // no room to decompress in time: retriable, as Kafka's timeouts are
		setProduceCodes(resp, kerr.RequestTimedOut.Code)
		return p.answer(req, resp)
	}
	defer release()
	budget := records.NewDecompressBudget(limit)
	d := decoderPool.Get().(*records.Decoder)
	var sends []produceSend
	for i := range req.Topics {
		rt := &resp.Topics[i]
		name, info, code := p.resolve(ctx, rq, &req.Topics[i])
		for j := range req.Topics[i].Partitions {
			rp := &rt.Partitions[j]
			if code != 0 {
				rp.ErrorCode = code
				continue
			}
			rp.ErrorCode, info = checkPartition(ctx, b.iggy, info, rp.Partition)
			if rp.ErrorCode != 0 {
				continue
			}
			refused, why := b.checkMessageSize(ctx, rq.Version, info, req.Topics[i].Partitions[j].Records)
			var msgs *iggy.Messages
			var release func() // a transactional batch's hold on its EndTxn (txn.Gate)
			if refused == 0 {
				appendTS := int64(-1)
				if b.store.LogAppendTime(ctx, info) {
					appendTS = time.Now().UnixMilli()
				}
				if req.TransactionID != nil { // transactional batches (bridge/txn)
					d.Txn = b.txns.Check(ctx, rq.Version, req.TransactionID, name, rp.Partition, &release)
				}
				msgs, refused, why = p.mapRecords(d, rq.Version, req.Topics[i].Partitions[j].Records, budget, appendTS)
				d.Txn = nil
				if refused == 0 {
					rp.LogAppendTime = appendTS
				}
			}
			if (refused != 0 || msgs == nil) && release != nil {
				release()
			}
			if refused != 0 {
				rp.ErrorCode = refused
				if rq.Version >= 8 {
					rp.ErrorMessage = &why
				}
				b.log.Debug().Uint64("conn_id", rq.ConnID).Int32("corr_id", rq.CorrID).Str("topic", name).
					Int32("partition", rp.Partition).Int16("error_code", refused).Str("reason", why).Msg("produce: records refused")
				continue
			}
			if msgs == nil { // no records: nothing to write
				continue
			}
			ps := produceSend{rp: rp, topic: name, ref: info.Ref, partition: rp.Partition, msgs: msgs, release: release}
			if bs := d.Batches(); rq.Version >= 3 && len(bs) == 1 && bs[0].Idempotent() {
				bi := bs[0]
				ps.idem = &bi
			}
			sends = append(sends, ps)
		}
	}
	decoderPool.Put(d)

	switch len(sends) {
	case 0:
	case 1:
		p.send(ctx, rq, &sends[0])
	default:
		var g panics.Group // a panic in a send reaches the front door
		for i := range sends {
			s := &sends[i]
			g.Go(func() { p.send(ctx, rq, s) })
		}
		g.Wait()
	}
	resp.ThrottleMillis = b.quotaThrottle(ctx, rq, quotas.Produce, quotas.ProduceBytes(req)) // client quotas (quotas.go)
	return p.answer(req, resp)
}

// errAcksZeroFailed closes the connection of an acks=0 producer whose
// request failed somewhere, as Kafka does: it cannot learn it otherwise.
var errAcksZeroFailed = errors.New("bridge: acks=0 produce failed: closing the connection so the producer refreshes its metadata, as Kafka does")

// answer returns resp, or for acks=0 no response at all, or, when a
// partition failed, errAcksZeroFailed.
func (p *producer) answer(req *kmsg.ProduceRequest, resp *kmsg.ProduceResponse) (kmsg.Response, error) {
	if req.Acks != 0 {
		return resp, nil
	}
	for i := range resp.Topics {
		for j := range resp.Topics[i].Partitions {
			if resp.Topics[i].Partitions[j].ErrorCode != 0 {
				return nil, errAcksZeroFailed
			}
		}
	}
	return nil, nil
}

// resolve finds (or auto-creates) the topic of one request entry: by name
// up to v12, by id from v13. A non-zero code answers every partition.
func (p *producer) resolve(ctx context.Context, rq *Request, t *kmsg.ProduceRequestTopic) (string, *iggy.TopicInfo, int16) {
	b := p.b
	if rq.Version >= 13 {
		if t.TopicID == internalTopicID(consumerOffsetsTopic) {
			return consumerOffsetsTopic, nil, kerr.InvalidTopicException.Code
		}
		name, info, err := p.b.topicIDs.Lookup(ctx, t.TopicID, receivedAt(rq))
		if err != nil {
			return "", nil, dataErrCode(ctx, b.log, rq, err, name, "produce: topic id lookup failed")
		}
		if info == nil {
			return "", nil, kerr.UnknownTopicID.Code
		}
		return name, info, 0
	}
	name := t.Topic
	if validTopicName(name) != nil || isInternalTopic(name) {
		return name, nil, kerr.InvalidTopicException.Code
	}
	var info *iggy.TopicInfo
	var err error
	if b.cfg.Topics.AutoCreate {
		info, err = b.ensureTopic(ctx, name, -1)
	} else {
		info, err = b.lookupTopic(ctx, name)
	}
	if err != nil {
		return name, nil, dataErrCode(ctx, b.log, rq, err, name, "produce: topic lookup failed")
	}
	return name, info, 0
}

// mapRecords maps one partition's records into Iggy messages. It returns
// nil messages (and code 0) when raw holds no record at all (v0-v2), or
// a Kafka error code and the reason.
func (p *producer) mapRecords(d *records.Decoder, version int16, raw []byte, budget *records.DecompressBudget, appendTS int64) (*iggy.Messages, int16, string) {
	msgs := p.b.iggy.NewMessages()
	d.Reset(raw, budget)
	if appendTS >= 0 {
		d.StampAppendTime(appendTS)
	}
	for d.Next() {
		m := d.Message()
		if bs := d.Batches(); version >= 3 && len(bs) == 1 && bs[0].Idempotent() {
			// Producer state carried in Iggy (bridge/producers/id.go).
			bi := &bs[0]
			m.ID = producers.MessageID(bi.ProducerID, bi.ProducerEpoch, producers.SeqAdd(bi.BaseSequence, msgs.Len()-bi.FirstIndex))
		}
		if err := msgs.Add(m.ID, m.OriginTimestamp, m.Payload, m.Headers); err != nil {
			msgs.Release()
			if errors.Is(err, iggy.ErrMessageTooLarge) {
				return nil, kerr.MessageTooLarge.Code, err.Error()
			}
			return nil, kerr.UnknownServerError.Code, err.Error()
		}
	}
	if err := d.Err(); err != nil {
		msgs.Release()
		return nil, records.ErrorCode(err), err.Error()
	}
	if code, why := produceVersionRules(version, d.Batches()); code != 0 {
		msgs.Release()
		return nil, code, why
	}
	if msgs.Len() == 0 {
		msgs.Release()
		return nil, 0, ""
	}
	return msgs, 0, ""
}

// produceVersionRules applies what Kafka's ProduceRequest.validateRecords
// requires from v3 on: exactly one batch, of magic 2, and no zstd before v7.
func produceVersionRules(version int16, batches []records.BatchInfo) (int16, string) {
	if version < 3 {
		return 0, ""
	}
	switch {
	case len(batches) == 0:
		return kerr.InvalidRecord.Code, "produce v3+ needs one record batch per partition"
	case batches[0].Magic != 2:
		return kerr.InvalidRecord.Code, "produce v3+ accepts record batches of magic 2 only"
	case version < 7 && batches[0].Compression == records.CodecZstd:
		return kerr.UnsupportedCompressionType.Code, "zstd needs produce v7+"
	case len(batches) > 1:
		return kerr.InvalidRecord.Code, "produce v3+ accepts exactly one record batch per partition"
	}
	return 0, ""
}

// send writes one partition's messages and fills its response.
func (p *producer) send(ctx context.Context, rq *Request, s *produceSend) {
	if s.release != nil {
		defer s.release()
	}
	done := producers.NoopDone
	if bi := s.idem; bi != nil {
		dup, code, d := p.b.pids.Admit(ctx, bi.ProducerID, bi.ProducerEpoch, s.topic, s.partition, bi.BaseSequence, int32(bi.Records))
		if code != 0 || dup != nil {
			s.msgs.Release()
			s.msgs = nil
			if code != 0 {
				s.rp.ErrorCode = code
			} else {
				s.rp.BaseOffset = dup.BaseOffset
			}
			return
		}
		done = d
	}
	base, err := p.b.iggy.Send(ctx, s.ref, uint32(s.partition), s.msgs)
	s.msgs = nil // Send owns it now
	done(base, err == nil)
	if err != nil {
		s.rp.ErrorCode = dataErrCode(ctx, p.b.log, rq, err, s.topic, "produce: send failed")
		return
	}
	s.rp.BaseOffset = base
	p.b.notify.wake(s.topic, s.partition)
}

// produceErrorCodes walks a Produce response for the metrics.
func produceErrorCodes(r *kmsg.ProduceResponse, f func(int16)) {
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			f(p.ErrorCode)
		}
	}
}
