package bridge

// Fetch: v0-v18
//
// Behavior:
//   - Each requested partition is read with single-consumer POLL_MESSAGES
//     (kind 1, a fixed consumer id, strategy Offset at the fetch offset,
//     never auto-commit: a fetch stores no offsets). Iggy messages become
//     record batches v2 through records.BatchWriter (codec/records): base
//     offset = the Iggy offset of the first message, CreateTime, no
//     compression, producer fields -1, CRC32C. Messages whose mapping
//     marker does not parse are skipped (offset gap), counted in
//     kafka_iggy_fetch_skipped_messages_total{reason} (fetch_skips.go) and
//     logged rate-limited.
//   - Offsets (KAFKA-ON-IGGY §3): high watermark = current_offset + 1 when
//     the partition holds messages, else 0; last stable offset = the high
//     watermark, or for a partition holding transactions the first offset
//     of its earliest open one (bridge/txnread; KAFKA-ON-IGGY
//     "Transactions"), at both isolation levels as Kafka;
//     log start offset = the first retained offset (a First poll, cached
//     per partition for 5 s (fetchread), refreshed early when a poll shows
//     it moved). A fetch offset below the log start or above the high
//     watermark answers OFFSET_OUT_OF_RANGE (1) with -1 offsets, as Kafka
//     does, so the client applies auto.offset.reset.
//   - Sizes: MaxBytes (v3+) bounds the whole response and PartitionMaxBytes
//     each partition, counting record-batch bytes, both within the broker's
//     own cap fetch.max_bytes (Kafka's fetch.max.bytes, 55 MiB; MinBytes is
//     lowered to it; like Kafka, no broker cap per partition beyond what
//     is left of the response); the first record of the
//     first partition that has one is always returned whatever its size
//     (Kafka's KIP-74 rule, applied to every version so a consumer always
//     makes progress). Polls ask Iggy for as many messages as the remaining
//     bytes should hold (from the average message size seen, or the topic's
//     bytes per message), and poll again while the budget is not used up.
//   - __consumer_offsets (internaltopics.go) reads as an empty partition
//     0 (offsets 0; a fetch offset beyond 0 is OFFSET_OUT_OF_RANGE), with
//     no Iggy read.
//   - Long poll: the response goes out at once when it holds at least
//     MinBytes of records, when any partition has an error, or when
//     MaxWaitMillis is 0. Otherwise the handler waits (counted from when the
//     frame arrived) until MaxWaitMillis (at most fetch.max_wait, 30s).
//     A local write wakes it (Produce, transaction markers, DeleteTopics;
//     notify.go): it re-reads the partitions written, and those that held
//     records, not the ones an earlier pass found empty. Every
//     fetch.repoll_interval it re-reads every partition, for writes made
//     elsewhere (other sidecars, Iggy clients): when the fetch spans fewer
//     topics than partitions, that
//     interval check is one GET_TOPIC per topic (every partition's end
//     offset) and the partitions are read again only when one moved. It
//     answers what it has when the deadline passes or the connection closes.
//   - Sessions (KIP-227, package bridge/fetchsession): epoch -1 is a sessionless full
//     fetch (answered with SessionID 0), epoch 0 a full fetch that creates
//     a session, then incremental fetches send and are answered only what
//     changed; the cache holds fetch.session_cache_slots sessions.
//   - Unknown topics and partitions answer UNKNOWN_TOPIC_OR_PARTITION (no
//     auto-creation on fetch); unknown topic ids (v13+) UNKNOWN_TOPIC_ID
//     (100). Iggy failures map through kafkaCode (errors.go).
//   - Leader epochs (CurrentLeaderEpoch, LastFetchedEpoch) are not checked:
//     every partition has leader epoch 0 and no divergence to report.
//     PreferredReadReplica is -1.
//   - Transactions (KAFKA-ON-IGGY "Transactions"): records carrying
//     kafka.t come as transactional batches, end markers as control
//     batches. read_committed (v4+) returns nothing at or past the last
//     stable offset and lists the aborted transactions overlapping what it
//     returns (the client filters); read_uncommitted returns everything.
//
// Version notes: v0-v3 get message sets, not record batches: v0-v1 magic 0,
// v2-v3 magic 1 with CreateTime, headers dropped, as Kafka down-converts
// for consumers that predate record batches (a skipped message is an
// offset gap there too); v1 ThrottleMillis; v3 MaxBytes; v4 IsolationLevel,
// LastStableOffset, AbortedTransactions; v5 LogStartOffset; v7 sessions;
// v9 CurrentLeaderEpoch; v11 Rack, PreferredReadReplica; v12 flexible,
// LastFetchedEpoch; v13 topic ids instead of names; v14-v18 change nothing a
// consumer sends or reads (tiered storage, broker-only fields, tagged
// leader hints not sent).
//
// Iggy commands: POLL_MESSAGES (100), GET_TOPIC (300), GET_TOPICS (301,
// topic ids).

import (
	"context"
	"slices"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/valyala/bytebufferpool"

	"github.com/kafka-iggy/kafka-iggy/bridge/fetchread"
	"github.com/kafka-iggy/kafka-iggy/bridge/fetchsession"
	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
	"github.com/kafka-iggy/kafka-iggy/bridge/producers"
	"github.com/kafka-iggy/kafka-iggy/bridge/quotas"
	"github.com/kafka-iggy/kafka-iggy/bridge/txnread"
	"github.com/kafka-iggy/kafka-iggy/codec/records"
)

const (
	// fetchMaxVersion is the highest Fetch version served (kmsg's maximum).
	fetchMaxVersion = 18
)

// fetcher serves Fetch: it owns the per-partition cache and a pool of
// batch writers.
type fetcher struct {
	b       *Bridge
	reader  *fetchread.Reader   // one partition's read (package fetchread)
	session *fetchsession.Cache // the fetch session cache (package fetchsession)
	skipped atomic.Uint64
	skipLog zerolog.Logger // sampled: at most a few lines a minute
}

// fetchCharge is the row's memory charge (API.FrameCharge): a 33-byte
// partition (v12) answers a partition entry (struct ~140 bytes, encoded
// ~30); the record bytes draw from the budget on their own (fetchread.Reserve).
const fetchCharge = 16

func (b *Bridge) fetchAPI() API {
	f := &fetcher{b: b, session: fetchsession.New(b.cfg.Fetch.SessionCacheSlots)}
	f.skipLog = b.log.Sample(&zerolog.BurstSampler{Burst: 5, Period: time.Minute})
	first := func(ctx context.Context, ref iggy.TopicRef, partition int32, hw int64) (int64, error) {
		return firstOffset(ctx, b.iggy, ref, partition, hw)
	}
	f.reader = fetchread.New(b.pollTail, first, f.onSkip, producers.SequenceOf, b.log)
	return API{Key: 1, Name: "Fetch", MinVersion: 0, MaxVersion: fetchMaxVersion, Handle: f.handle, FrameCharge: fetchCharge, ErrorCodes: fetchErrorCodes}
}

func init() { registerAPI((*Bridge).fetchAPI) }

// onSkip counts and logs (rate-limited) a message the mapping cannot read.
func (f *fetcher) onSkip(offset uint64, reason records.SkipReason) {
	n := f.skipped.Add(1)
	f.b.countSkip(reason)
	f.skipLog.Error().Uint64("offset", offset).Str("reason", reason.String()).Uint64("skipped_total", n).
		Msg("fetch: skipped a message the record mapping cannot read (consumers see an offset gap)")
}

// maxWait is how long a Fetch asking max_wait_ms may wait for data:
// fetch.max_wait at most (0: defaultFetchMaxWait), never negative.
func (f *fetcher) maxWait(ms int32) time.Duration {
	limit := f.b.cfg.Fetch.MaxWait
	if limit <= 0 {
		limit = defaultFetchMaxWait
	}
	return min(time.Duration(max(ms, 0))*time.Millisecond, limit)
}

// fetchPart is one requested partition.
type fetchPart struct {
	rp        *kmsg.FetchResponseTopicPartition
	topic     string // Kafka name ("" when the topic is unknown)
	info      *iggy.TopicInfo
	partition int32
	offset    int64
	maxBytes  int
	code      int16 // resolution failure, fixed for the request
	internal  bool  // __consumer_offsets: an empty partition, no Iggy read
	start     int   // record bytes in the response buffer: [start, end)
	end       int
	lastHW    int64 // incremental session: the high watermark last answered
	lastLS    int64 // and log start (valid when lastHW >= 0)
	committed bool  // isolation_level read_committed (v4+)
	quiet     bool  // the last pass read it without error and found no records
	written   bool  // this pass is a wake-up's and the wake-up named it
}

var _ VectoredResponse = (*records.FetchResponse)(nil)

func (f *fetcher) handle(ctx context.Context, rq *Request) (kmsg.Response, error) {
	req := rq.Msg.(*kmsg.FetchRequest)
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	var sess *fetchsession.Fetch
	if rq.Version >= 7 {
		// fetchsession: an incremental fetch reads every partition of
		// its session; finish keeps the ones to answer.
		var code int16
		if req, sess, code = f.session.Begin(rq.Version, req); code != 0 {
			resp.ErrorCode = code
			return resp, nil
		}
	}
	parts := f.plan(ctx, rq, req, resp)
	for i := range parts {
		parts[i].lastHW = -1
		if hw, ls, ok := sess.LastAnswered(i); ok {
			parts[i].lastHW, parts[i].lastLS = hw, ls
		}
	}

	deadline := receivedAt(rq).Add(f.maxWait(req.MaxWaitMillis))
	var wake *fetchWaiter
	if req.MaxWaitMillis > 0 && req.MinBytes > 0 && len(parts) > 0 {
		keys := make([]partKey, 0, len(parts))
		for i := range parts {
			if parts[i].code == 0 {
				keys = append(keys, partKey{parts[i].topic, parts[i].partition})
			}
		}
		wake = newFetchWaiter()
		// Registered before the first read: a produce landing between a
		// read and the wait still wakes us.
		defer f.b.notify.wait(wake, keys)()
		f.b.metrics.AddFetchWaiters(1)
		defer f.b.metrics.AddFetchWaiters(-1)
	}
	// fetch.max_bytes caps what the client asks, as Kafka's broker caps
	// with fetch.max.bytes (v0-v2 ask no limit: the cap alone applies), and
	// MinBytes above the cap is lowered to it (else a long poll could never
	// be satisfied).
	respMax := f.b.cfg.Fetch.MaxBytes
	if rq.Version >= 3 {
		respMax = min(int(max(req.MaxBytes, 0)), respMax)
	}
	minBytes := min(int(req.MinBytes), respMax)

	buf := records.NewFetchBuffer()
	res := &fetchread.Reserve{Budget: f.b.budget, Deadline: deadline}
	got, failed, cut := f.pass(ctx, rq, parts, buf, res, respMax, nil)
	if wake != nil && !failed && !cut && got < minBytes {
		f.wait(ctx, rq, parts, buf, res, respMax, minBytes, deadline, wake)
	}
	if resp.ThrottleMillis = f.b.quotaThrottle(ctx, rq, quotas.Fetch, len(buf.B)); resp.ThrottleMillis > 0 {
		for i := range parts { // client quotas (quotas.go): answered without records, as Kafka
			parts[i].end = parts[i].start
		}
	}
	for i := range parts {
		p := &parts[i]
		if p.end > p.start {
			p.rp.RecordBatches = buf.B[p.start:p.end:p.end]
		} else {
			p.rp.RecordBatches = []byte{} // empty, not null: some clients refuse null records
		}
	}
	if sess != nil {
		f.session.Finish(sess, rq.Version, resp)
	}
	return &records.FetchResponse{FetchResponse: resp, Buf: buf, Owner: res}, nil
}

// wait is the long poll: when a local write wakes it, it reads again the
// partitions written (and those that held records: the pass starts the
// response over); when the re-poll interval finds a partition whose log
// end moved, every partition; until min bytes are there, a partition
// fails, the deadline passes or the client leaves. With more partitions
// than topics the interval check is one GET_TOPIC per topic (every
// partition's end offset) instead of one poll per partition.
func (f *fetcher) wait(ctx context.Context, rq *Request, parts []fetchPart, buf *bytebufferpool.ByteBuffer, res *fetchread.Reserve, respMax, minBytes int, deadline time.Time, wake *fetchWaiter) {
	byTopic := fetchTopicsCheaper(parts)
	var timer *time.Timer
	var woken []partKey
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return
		}
		wait := min(left, f.b.cfg.Fetch.RepollInterval)
		if timer == nil {
			timer = time.NewTimer(wait)
		} else {
			timer.Reset(wait)
		}
		var only []partKey // nil: every partition
		select {
		case <-wake.ch:
			timer.Stop()
			if woken = wake.take(woken); len(woken) == 0 {
				continue // taken by the pass before this signal
			}
			only = woken
		case <-timer.C:
			if byTopic && !f.moved(ctx, parts) {
				continue
			}
		case <-ctx.Done():
			timer.Stop()
			return
		}
		got, failed, cut := f.pass(ctx, rq, parts, buf, res, respMax, only)
		if failed || cut || got >= minBytes {
			return
		}
	}
}

// fetchTopicsCheaper reports whether parts span fewer topics than
// partitions (then checking topics costs fewer Iggy requests than polling).
func fetchTopicsCheaper(parts []fetchPart) bool {
	topics := 0
	for i := range parts {
		if i == 0 || parts[i].info != parts[i-1].info {
			topics++
		}
	}
	return topics < len(parts)
}

// moved reports whether the log end of any partition differs from what the
// last pass saw (or cannot be checked: then the pass finds out why).
func (f *fetcher) moved(ctx context.Context, parts []fetchPart) bool {
	var info *iggy.TopicInfo
	for i := range parts {
		p := &parts[i]
		if p.internal {
			continue // never moves
		}
		if info == nil || p.info != parts[i-1].info {
			var err error
			if info, err = f.b.iggy.RefreshTopic(ctx, p.info.Ref); err != nil {
				return true
			}
		}
		if fetchread.LogEnd(info, p.partition) != p.rp.HighWatermark {
			return true
		}
	}
	return false
}

// plan builds the response skeleton in request order and resolves every
// topic once.
func (f *fetcher) plan(ctx context.Context, rq *Request, req *kmsg.FetchRequest, resp *kmsg.FetchResponse) []fetchPart {
	n := 0
	for i := range req.Topics {
		n += len(req.Topics[i].Partitions)
	}
	parts := make([]fetchPart, 0, n)
	resp.Topics = make([]kmsg.FetchResponseTopic, len(req.Topics))
	for i := range req.Topics {
		t := &req.Topics[i]
		rt := &resp.Topics[i]
		*rt = kmsg.NewFetchResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		name, info, code := f.resolve(ctx, rq, t)
		rt.Partitions = make([]kmsg.FetchResponseTopicPartition, len(t.Partitions))
		for j := range t.Partitions {
			rp := &rt.Partitions[j]
			*rp = kmsg.NewFetchResponseTopicPartition()
			rp.Partition = t.Partitions[j].Partition
			rp.PreferredReadReplica = -1
			p := fetchPart{
				rp: rp, topic: name, info: info, partition: rp.Partition,
				offset: t.Partitions[j].FetchOffset, maxBytes: int(max(t.Partitions[j].PartitionMaxBytes, 0)),
				code: code, committed: rq.Version >= 4 && req.IsolationLevel == 1,
			}
			switch {
			case p.code == 0 && isInternalTopic(name) && info == nil:
				p.internal = true
			case p.code == 0:
				p.code, p.info = checkPartition(ctx, f.b.iggy, info, p.partition)
			}
			parts = append(parts, p)
		}
	}
	return parts
}

// resolve finds the topic of one request entry: by name up to v12, by id
// from v13. Fetch never creates topics.
func (f *fetcher) resolve(ctx context.Context, rq *Request, t *kmsg.FetchRequestTopic) (string, *iggy.TopicInfo, int16) {
	if rq.Version >= 13 {
		if t.TopicID == internalTopicID(consumerOffsetsTopic) {
			return consumerOffsetsTopic, nil, 0
		}
		name, info, err := f.b.topicIDs.Lookup(ctx, t.TopicID, receivedAt(rq))
		if err != nil {
			return "", nil, dataErrCode(ctx, f.b.log, rq, err, name, "fetch: topic id lookup failed")
		}
		if info == nil {
			return "", nil, kerr.UnknownTopicID.Code
		}
		return name, info, 0
	}
	if validTopicName(t.Topic) != nil {
		return "", nil, kerr.UnknownTopicOrPartition.Code
	}
	if isInternalTopic(t.Topic) {
		return t.Topic, nil, 0
	}
	info, err := f.b.lookupTopic(ctx, t.Topic)
	if err != nil {
		return "", nil, dataErrCode(ctx, f.b.log, rq, err, t.Topic, "fetch: topic lookup failed")
	}
	return t.Topic, info, 0
}

// pass reads every partition once into buf (from empty) and reports the
// record bytes read, whether any partition failed, and whether the
// response's limit left records unread (then more than the response can
// carry is there: a long poll is satisfied, as Kafka counts the bytes
// available). With only set (a wake-up's written partitions), a partition
// outside it that the last pass read empty is not read again: nothing was
// written there through this sidecar since, and its answer stands (a
// write made elsewhere waits for the re-poll interval's full pass).
// The pass draws on the memory budget through res: the response gets what
// the budget grants within respMax.
func (f *fetcher) pass(ctx context.Context, rq *Request, parts []fetchPart, buf *bytebufferpool.ByteBuffer, res *fetchread.Reserve, respMax int, only []partKey) (int, bool, bool) {
	buf.B = buf.B[:0]
	respMax, granted := res.Grow(ctx, respMax)
	defer func() { res.Settle(len(buf.B)) }()
	failed, cut := false, false
	// No record returned yet: the next one goes in whatever its size
	// (unless the budget granted nothing at all).
	first := granted
	for i := range parts {
		parts[i].written = only != nil && slices.Contains(only, partKey{parts[i].topic, parts[i].partition})
	}
	ends := f.sessionEnds(ctx, parts, only != nil)
	for i := range parts {
		p := &parts[i]
		rp := p.rp
		p.start, p.end = len(buf.B), len(buf.B)
		if only != nil && p.quiet && !p.written {
			continue
		}
		p.quiet = false
		if p.code != 0 {
			setFetchError(rp, p.code)
			failed = true
			continue
		}
		if p.lastHW >= 0 && !p.committed && !f.b.txnReads.Tracked(txnread.Key{Topic: p.topic, Partition: p.partition}) && p.offset == p.lastHW && ends[p.info] != nil && fetchread.LogEnd(ends[p.info], p.partition) == p.lastHW {
			// Incremental session, caught up, log end unmoved: nothing to
			// read, and the session leaves it out of the answer.
			rp.ErrorCode, rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = 0, p.lastHW, p.lastHW, p.lastLS
			p.quiet = true
			continue
		}
		if p.internal {
			// internaltopics.go: partition 0, always empty.
			switch {
			case p.partition != 0:
				setFetchError(rp, kerr.UnknownTopicOrPartition.Code)
				failed = true
			case p.offset != 0:
				setFetchError(rp, kerr.OffsetOutOfRange.Code)
				failed = true
			default:
				rp.ErrorCode, rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = 0, 0, 0, 0
			}
			continue
		}
		limit := max(min(p.maxBytes, respMax-len(buf.B)), 0)
		var r fetchread.Result
		buf.B, r = f.readPartition(ctx, rq, p, buf.B, limit, first)
		p.end = len(buf.B)
		if r.Code != 0 {
			setFetchError(rp, r.Code)
			failed = true
			continue
		}
		rp.ErrorCode = 0
		rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = r.HW, r.HW, r.LogStart
		k := txnread.Key{Topic: p.topic, Partition: p.partition}
		if !p.committed && (r.Txn || f.b.txnReads.Tracked(k)) {
			// Kafka answers the LSO at read_uncommitted too (only partitions holding transactions ask).
			if lso, err := f.b.txnReads.Stable(ctx, k, p.info.Ref, 0); err == nil {
				rp.LastStableOffset = min(lso, r.HW)
			}
		}
		if p.committed {
			rp.LastStableOffset = min(r.LSO, r.HW)
			rp.AbortedTransactions = nil
			if r.Records {
				for _, a := range f.b.txnReads.AbortedIn(nil, k, p.offset, r.Upto, r.LogStart) {
					rp.AbortedTransactions = append(rp.AbortedTransactions, kmsg.FetchResponseTopicPartitionAbortedTransaction{ProducerID: a.ProducerID, FirstOffset: a.First})
				}
			}
		}
		p.quiet = p.end == p.start
		if r.Records {
			first = false
			// Data is flowing: make room for what the partitions after
			// this one may add (bounded by the pass's grant) in one step,
			// so a response larger than the buffer pool keeps (a fresh
			// buffer each fetch) is not copied again for every partition
			// it grows by.
			if i+1 < len(parts) {
				rest := 0
				for j := i + 1; j < len(parts); j++ {
					rest += max(parts[j].maxBytes, 0)
				}
				rest = min(rest, respMax-len(buf.B))
				if rest > cap(buf.B)-len(buf.B) {
					buf.B = records.GrowFetch(buf.B, rest)
				}
			}
		}
		// Only the response's limit (or the budget's) counts: a partition
		// cut at its own PartitionMaxBytes adds that much and no more, as
		// Kafka counts it toward MinBytes.
		cut = cut || (r.Cut && limit < p.maxBytes)
	}
	return len(buf.B), failed, cut
}

// sessionEnds asks Iggy once per topic (GET_TOPIC) for the end offsets of
// the topics holding an incremental session's caught-up partitions, so
// that pass polls only the partitions that may have something new; nil
// when there are none (a topic that cannot be asked is left out: its
// partitions are read). In a wake-up's pass the partitions written are
// known to have moved and the quiet ones are not read: neither is asked
// about.
func (f *fetcher) sessionEnds(ctx context.Context, parts []fetchPart, wakeUp bool) map[*iggy.TopicInfo]*iggy.TopicInfo {
	var ends map[*iggy.TopicInfo]*iggy.TopicInfo
	for i := range parts {
		p := &parts[i]
		if p.lastHW < 0 || p.offset != p.lastHW || p.code != 0 || p.internal || p.info == nil {
			continue
		}
		if wakeUp && (p.quiet || p.written) {
			continue
		}
		if _, done := ends[p.info]; done {
			continue
		}
		if ends == nil {
			ends = map[*iggy.TopicInfo]*iggy.TopicInfo{}
		}
		fresh, err := f.b.iggy.RefreshTopic(ctx, p.info.Ref)
		if err != nil {
			fresh = nil
		}
		ends[p.info] = fresh
	}
	return ends
}

// setFetchError fills a failed partition as Kafka does: the code and -1
// offsets.
func setFetchError(rp *kmsg.FetchResponseTopicPartition, code int16) {
	rp.ErrorCode = code
	rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = -1, -1, -1
}

// readPartition reads one partition (bridge/fetchread): the DeleteRecords
// log start and the timestamp type from the topic-config store, and at
// read_committed the last stable offset (bridge/txnread) as the stop.
func (f *fetcher) readPartition(ctx context.Context, rq *Request, p *fetchPart, dst []byte, limit int, atLeastOne bool) ([]byte, fetchread.Result) {
	in := fetchread.Part{Topic: p.topic, Partition: p.partition, Info: p.info, Offset: p.offset, Version: rq.Version, ConnID: rq.ConnID, CorrID: rq.CorrID}
	if p.offset >= 0 {
		in.StoreStart, in.LogAppendTime = f.b.store.LogStart(ctx, p.info, p.partition), f.b.store.LogAppendTime(ctx, p.info)
	}
	if p.committed && p.offset >= in.StoreStart {
		lso, err := f.b.txnReads.Stable(ctx, txnread.Key{Topic: p.topic, Partition: p.partition}, p.info.Ref, f.reader.Avg(p.topic, p.partition))
		if err != nil {
			return dst, fetchread.Result{Code: dataErrCode(ctx, f.b.log, rq, err, p.topic, "fetch: transaction scan failed")}
		}
		in.Stop, in.StopBefore, in.Drop = true, lso, f.b.txnReads.Late(txnread.Key{Topic: p.topic, Partition: p.partition})
	}
	dst, r := f.reader.Read(ctx, &in, dst, limit, atLeastOne)
	if r.Err != nil {
		r.Code = dataErrCode(ctx, f.b.log, rq, r.Err, p.topic, "fetch: poll failed")
	}
	return dst, r
}

// fetchErrorCodes walks a Fetch response (the handler's records.FetchResponse or
// a plain one) for the metrics.
func fetchErrorCodes(resp kmsg.Response, f func(int16)) {
	var r *kmsg.FetchResponse
	switch v := resp.(type) {
	case *records.FetchResponse:
		r = v.FetchResponse
	case *kmsg.FetchResponse:
		r = v
	default:
		return
	}
	f(r.ErrorCode)
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			f(p.ErrorCode)
		}
	}
}
