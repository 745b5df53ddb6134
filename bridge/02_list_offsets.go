package bridge

// ListOffsets: v0-v11
//
// Behavior (KAFKA-ON-IGGY §3), per partition, one Iggy poll (a timestamp
// search may read on):
//   - -1 (latest): the high watermark = current_offset + 1 when the
//     partition holds messages, else 0 (a Last poll of one message).
//     Timestamp -1. With isolation_level read_committed (v2+) the last
//     stable offset instead (bridge/txnread: the first offset of the
//     earliest open transaction, else the high watermark), and -3 and
//     timestamp searches answer only offsets below it (else -1/-1), as
//     Kafka's fetchOffsetForTimestamp.
//   - -2 (earliest) and -4 (earliest local, v8+): the log start offset, the
//     first retained offset (a First poll of one message), or the one
//     DeleteRecords set when higher (the topic-config store, topicconfig/store.go,
//     read to its end first); the high watermark when nothing is
//     retained. Timestamp -1. No answer below that log start: a timestamp
//     search goes on from it, -3 is -1/-1 when every record is below it.
//   - -3 (max timestamp, v7+): the last record, with its Kafka timestamp
//     (a Last poll). Kafka answers the record with the largest timestamp;
//     Iggy does not index producer timestamps, so the newest record stands
//     for it, which is the same record whenever producers' clocks move
//     forward. -1/-1 on an empty partition.
//   - -5 (latest tiered, v9+) and -6 (earliest pending upload, v11): no
//     tiered storage, so no such offset: -1/-1.
//   - t >= 0: the first record whose Kafka timestamp is at least t, with
//     that timestamp, as Kafka answers; -1/-1 when there is none. Iggy
//     indexes the server's append time only, so the search starts at Iggy's
//     Timestamp poll (the first batch appended at or after t: records
//     appended earlier were created earlier, unless their producer's clock
//     ran ahead of the server's) and reads forward record by record, at
//     most listScanMessages; past that bound the append-time answer of
//     KAFKA-ON-IGGY §3 stands (the first record appended at or after t).
//     For records written through the gateway CreateTime tracks append
//     time and the forward read is short. Other negative values search
//     from time 0, as Kafka's index search does.
//   - The same partition twice in one request (v1+) answers INVALID_REQUEST
//     (42) for every occurrence, as Kafka does. Unknown topics or partitions
//     answer UNKNOWN_TOPIC_OR_PARTITION (no auto-creation); Iggy failures
//     map through kafkaCode (errors.go).
//   - LeaderEpoch (v4+) is 0 (the epoch Metadata reports) when an offset is
//     returned, else -1. CurrentLeaderEpoch is not checked.
//   - __consumer_offsets (internaltopics.go) is an empty partition 0: 0
//     for the log ends, -1/-1 for everything else, no Iggy call.
//
// Version notes: v0 answers OldStyleOffsets (the one offset, or none when
// MaxNumOffsets is 0 or no offset exists); v1 single Timestamp/Offset; v2
// IsolationLevel; v4 leader epochs; v6 flexible; v7 -3; v8 -4; v9 -5; v10
// TimeoutMillis (not needed: every answer is immediate); v11 -6.
//
// Iggy commands: POLL_MESSAGES (100), GET_TOPIC (300), the store's
// POLL_MESSAGES.

import (
	"context"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
	"github.com/kafka-iggy/kafka-iggy/bridge/txnread"
	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
	"github.com/kafka-iggy/kafka-iggy/codec/records"
)

// listOffsetsMaxVersion is the highest ListOffsets version served (kmsg's).
const listOffsetsMaxVersion = 11

const (
	// listScanPoll is the message count of one poll of a timestamp search.
	listScanPoll = 1000
	// listScanMessages bounds the messages a timestamp search reads past
	// Iggy's append-time answer.
	listScanMessages = 20 * listScanPoll
)

// Special ListOffsets timestamps.
const (
	listLatest          = -1
	listEarliest        = -2
	listMaxTimestamp    = -3
	listEarliestLocal   = -4
	listLatestTiered    = -5
	listEarliestPending = -6
)

// lister serves ListOffsets; its writers decode record timestamps.
type lister struct {
	b       *Bridge
	writers sync.Pool
}

func (b *Bridge) listOffsetsAPI() API {
	l := &lister{b: b}
	l.writers.New = func() any { return new(records.BatchWriter) }
	return API{Key: 2, Name: "ListOffsets", MinVersion: 0, MaxVersion: listOffsetsMaxVersion, Handle: l.handle, ErrorCodes: errorCodes(listOffsetsErrorCodes)}
}

func init() { registerAPI((*Bridge).listOffsetsAPI) }

func (l *lister) handle(ctx context.Context, rq *Request) (kmsg.Response, error) {
	req := rq.Msg.(*kmsg.ListOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)

	seen := make(map[partKey]int, 8)
	for i := range req.Topics {
		for _, p := range req.Topics[i].Partitions {
			seen[partKey{req.Topics[i].Topic, p.Partition}]++
		}
	}

	resp.Topics = make([]kmsg.ListOffsetsResponseTopic, len(req.Topics))
	for i := range req.Topics {
		t := &req.Topics[i]
		rt := &resp.Topics[i]
		*rt = kmsg.NewListOffsetsResponseTopic()
		rt.Topic = t.Topic
		var info *iggy.TopicInfo
		var code int16
		internal := isInternalTopic(t.Topic)
		if validTopicName(t.Topic) != nil {
			code = kerr.UnknownTopicOrPartition.Code
		} else if !internal {
			var err error
			if info, err = l.b.lookupTopic(ctx, t.Topic); err != nil {
				code = dataErrCode(ctx, l.b.log, rq, err, t.Topic, "list offsets: topic lookup failed")
			}
		}
		rt.Partitions = make([]kmsg.ListOffsetsResponseTopicPartition, len(t.Partitions))
		for j := range t.Partitions {
			tp := &t.Partitions[j]
			rp := &rt.Partitions[j]
			*rp = kmsg.NewListOffsetsResponseTopicPartition()
			rp.Partition = tp.Partition
			switch {
			case rq.Version >= 1 && seen[partKey{t.Topic, tp.Partition}] > 1:
				rp.ErrorCode = kerr.InvalidRequest.Code
			case code != 0:
				rp.ErrorCode = code
			case internal:
				// An empty partition: 0 for the log ends, -1 (no such
				// record) for a timestamp.
				rp.ErrorCode = 0
				if tp.Partition != 0 {
					rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				} else if rq.Version == 0 {
					rp.OldStyleOffsets = []int64{}
				} else if tp.Timestamp == listLatest || tp.Timestamp == listEarliest || tp.Timestamp == listEarliestLocal {
					rp.Offset, rp.Timestamp, rp.LeaderEpoch = 0, -1, 0
				} else {
					rp.Offset, rp.Timestamp = -1, -1
				}
				continue
			default:
				rp.ErrorCode, info = checkPartition(ctx, l.b.iggy, info, tp.Partition)
			}
			if rp.ErrorCode != 0 {
				continue
			}
			logStart, err := l.b.store.LogStartFresh(ctx, info, tp.Partition)
			if err != nil {
				rp.ErrorCode = dataErrCode(ctx, l.b.log, rq, err, t.Topic, "list offsets: topic-config store read failed")
				continue
			}
			offset, ts, err := l.offsetFor(ctx, info.Ref, tp.Partition, tp.Timestamp, logStart)
			if err == nil && rq.Version >= 2 && req.IsolationLevel == 1 && tp.Timestamp != listEarliest && tp.Timestamp != listEarliestLocal && offset >= 0 {
				var lso int64
				if lso, err = l.b.txnReads.Stable(ctx, txnread.Key{Topic: t.Topic, Partition: tp.Partition}, info.Ref, 0); tp.Timestamp == listLatest {
					offset = min(offset, lso)
				} else if offset >= lso {
					offset, ts = -1, -1
				}
			}
			if err != nil {
				rp.ErrorCode = dataErrCode(ctx, l.b.log, rq, err, t.Topic, "list offsets: poll failed")
				continue
			}
			if rq.Version == 0 {
				rp.OldStyleOffsets = []int64{}
				if offset >= 0 && tp.MaxNumOffsets > 0 {
					rp.OldStyleOffsets = append(rp.OldStyleOffsets, offset)
				}
				continue
			}
			rp.Offset, rp.Timestamp = offset, ts
			if offset >= 0 {
				rp.LeaderEpoch = 0
			}
		}
	}
	return resp, nil
}

// offsetFor answers one partition: the offset and the Kafka timestamp
// (-1/-1 when there is no such offset). logStart is the log start offset
// DeleteRecords set (0 when none): nothing below it is answered.
func (l *lister) offsetFor(ctx context.Context, ref iggy.TopicRef, partition int32, ts, logStart int64) (int64, int64, error) {
	switch ts {
	case listLatest:
		p, err := pollIggy(ctx, l.b.iggy, ref, partition, icodec.PollingKindLast, 0, 1)
		if err != nil {
			return 0, 0, err
		}
		defer p.Release()
		if p.Count > 0 || p.CurrentOffset > 0 {
			return int64(p.CurrentOffset) + 1, -1, nil
		}
		return 0, -1, nil
	case listEarliest, listEarliestLocal:
		off, err := firstOffset(ctx, l.b.iggy, ref, partition, -1)
		return max(off, logStart), -1, err
	case listLatestTiered, listEarliestPending:
		return -1, -1, nil
	case listMaxTimestamp:
		off, mts, err := l.oneMessage(ctx, ref, partition, icodec.PollingKindLast, 0)
		if err == nil && off < logStart {
			return -1, -1, nil // every record is below the log start
		}
		return off, mts, err
	}
	return l.byTimestamp(ctx, ref, partition, max(ts, 0), logStart)
}

// byTimestamp finds the first record whose Kafka timestamp is at least ts
// ms. Iggy indexes append times only, so it starts where Iggy's Timestamp
// poll puts it (the first batch appended at or after ts: a record appended
// before ts was created before ts too, unless its producer's clock ran
// ahead) and reads forward to the first record whose timestamp is at least
// ts, as Kafka answers. The forward read stops after listScanMessages;
// then the append-time answer stands (KAFKA-ON-IGGY §3). Records below
// logStart (DeleteRecords) are not answered: a search that lands below it
// goes on from it.
func (l *lister) byTimestamp(ctx context.Context, ref iggy.TopicRef, partition int32, ts, logStart int64) (int64, int64, error) {
	w := l.writers.Get().(*records.BatchWriter)
	defer l.writers.Put(w)
	kind, value := icodec.PollingKindTimestamp, uint64(ts)*1000 // ts <= MaxInt64: no overflow
	fallback, fallbackTS := int64(-1), int64(-1)
	for scanned := 0; scanned < listScanMessages; {
		p, err := pollIggy(ctx, l.b.iggy, ref, partition, kind, value, listScanPoll)
		if err != nil {
			return 0, 0, err
		}
		it := p.Messages()
		if kind == icodec.PollingKindTimestamp && logStart > 0 {
			if peek := it; peek.Next() && int64(peek.Message().Offset) < logStart {
				p.Release()
				kind, value = icodec.PollingKindOffset, uint64(logStart)
				continue
			}
		}
		n := 0
		var next uint64
		for it.Next() {
			m := it.Message()
			mts, reason := w.Decode(&m)
			if reason != 0 {
				mts = int64(m.Timestamp / 1000)
			}
			if fallback < 0 {
				fallback, fallbackTS = int64(m.Offset), mts
			}
			if mts >= ts {
				p.Release()
				return int64(m.Offset), mts, nil
			}
			next = m.Offset + 1
			n++
		}
		err = it.Err()
		p.Release()
		if err != nil {
			return 0, 0, err
		}
		if n < listScanPoll {
			return -1, -1, nil // read to the end: no such record
		}
		scanned += n
		kind, value = icodec.PollingKindOffset, next
	}
	return fallback, fallbackTS, nil
}

// oneMessage polls one message and returns its offset and Kafka timestamp,
// or -1/-1 when the poll finds none.
func (l *lister) oneMessage(ctx context.Context, ref iggy.TopicRef, partition int32, kind icodec.PollingKind, value uint64) (int64, int64, error) {
	p, err := pollIggy(ctx, l.b.iggy, ref, partition, kind, value, 1)
	if err != nil {
		return 0, 0, err
	}
	defer p.Release()
	it := p.Messages()
	if !it.Next() {
		return -1, -1, it.Err()
	}
	m := it.Message()
	return int64(m.Offset), l.kafkaTimestamp(&m), nil
}

// kafkaTimestamp is the timestamp a consumer sees on m (the record
// mapping's); a message the mapping skips falls back to its append time.
func (l *lister) kafkaTimestamp(m *icodec.Message) int64 {
	w := l.writers.Get().(*records.BatchWriter)
	defer l.writers.Put(w)
	ts, reason := w.Decode(m)
	if reason != 0 {
		return int64(m.Timestamp / 1000)
	}
	return ts
}

// listOffsetsErrorCodes walks a ListOffsets response for the metrics.
func listOffsetsErrorCodes(r *kmsg.ListOffsetsResponse, f func(int16)) {
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			f(p.ErrorCode)
		}
	}
}
