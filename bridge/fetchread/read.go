// Package fetchread reads one partition for Fetch: the polls of Iggy
// (sized from the partition's average message size), the record batches
// they become (codec/records), the high watermark and log start offset,
// and where the read stops (byte limits, read_committed's last stable
// offset). It takes the poll and first-offset reads as funcs and a logger;
// the Fetch room (bridge/01_fetch.go) resolves topics, maps errors and
// builds the response.
package fetchread

import (
	"context"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
	"github.com/kafka-iggy/kafka-iggy/codec/records"
	"github.com/kafka-iggy/kafka-iggy/codec/wire"
)

const (
	// MaxPollBytes bounds the bytes one poll should bring (at the
	// partition's average message size).
	MaxPollBytes = 16 << 20
	// logStartTTL is how long a partition's log start offset is
	// trusted before a First poll asks again.
	logStartTTL = 5 * time.Second
	// maxPolls bounds the polls of one partition in one pass.
	maxPolls = 8
	// maxPollCount bounds the messages asked for in one poll.
	maxPollCount = 10000
	// probeCount is the message count of a poll that knows nothing
	// about the partition's message sizes yet.
	probeCount = 16
	// partCacheMax bounds the per-partition cache; past it the cache
	// starts afresh.
	partCacheMax = 1 << 16
)

// PollFunc polls one partition (the bridge's single-consumer poll).
type PollFunc func(ctx context.Context, ref iggy.TopicRef, partition int32, kind icodec.PollingKind, value uint64, count uint32) (*iggy.Polled, error)

// FirstFunc returns a partition's first retained offset (hw when none is).
type FirstFunc func(ctx context.Context, ref iggy.TopicRef, partition int32, hw int64) (int64, error)

// Reader reads partitions; it owns the per-partition cache and a pool of
// batch writers. Safe for concurrent use.
type Reader struct {
	pollFn  PollFunc
	first   FirstFunc
	log     zerolog.Logger
	parts   partCache
	writers sync.Pool
}

// New builds a Reader; onSkip is called for every message the mapping
// cannot read, seq gives an idempotent message id's sequence.
func New(poll PollFunc, first FirstFunc, onSkip func(uint64, records.SkipReason), seq func(id wire.U128) (int32, bool), log zerolog.Logger) *Reader {
	f := &Reader{pollFn: poll, first: first, log: log}
	f.parts.m = map[partKey]partState{}
	f.writers.New = func() any { return &records.BatchWriter{OnSkip: onSkip, Sequence: seq} }
	return f
}

// Part is one partition to read.
type Part struct {
	Topic         string
	Partition     int32
	Info          *iggy.TopicInfo
	Offset        int64
	StoreStart    int64 // the log start DeleteRecords set (0: none)
	LogAppendTime bool  // the topic's message.timestamp.type
	Stop          bool  // read_committed: nothing at or past StopBefore
	StopBefore    int64
	Drop          func(records.TxnMark, uint64) bool // read_committed: records.BatchWriter.Drop
	Version       int16                              // the Fetch version (v0-v3: message sets)
	ConnID        uint64
	CorrID        int32
}

// Avg returns the bytes per message the last read of a partition saw (0:
// unknown).
func (f *Reader) Avg(topic string, partition int32) int {
	return f.parts.get(partKey{topic, partition}).avg
}

// partKey names a partition.
type partKey struct {
	topic     string
	partition int32
}

// LogEnd is a partition's high watermark from a topic lookup (-1 when the
// lookup does not list the partition).
func LogEnd(info *iggy.TopicInfo, partition int32) int64 {
	for i := range info.Details.Partitions {
		if pr := &info.Details.Partitions[i]; pr.ID == uint32(partition) {
			if pr.MessagesCount == 0 {
				return 0
			}
			return int64(pr.CurrentOffset) + 1
		}
	}
	return -1
}

// Result is the outcome of reading one partition.
type Result struct {
	Code     int16 // a Kafka code for the partition (0: read)
	Err      error // a failed Iggy read (Code is 0): the caller maps it
	HW       int64
	LogStart int64
	Records  bool  // at least one record (or an all-skipped batch) was appended
	Cut      bool  // the byte limit left records of the partition unread
	LSO      int64 // Part.StopBefore when Part.Stop
	Upto     int64 // offset after the last message read (Records true)
	Txn      bool  // a transactional or control batch was read
}

// Read appends the partition's record batches from p.Offset to dst within
// limit bytes (atLeastOne: the first record goes in anyway).
func (f *Reader) Read(ctx context.Context, p *Part, dst []byte, limit int, atLeastOne bool) ([]byte, Result) {
	var r Result
	if p.Offset < 0 || p.Offset < p.StoreStart {
		// Negative, or below the log start offset DeleteRecords set
		// (topicconfig/store.go).
		r.Code = kerr.OffsetOutOfRange.Code
		return dst, r
	}
	key := partKey{p.Topic, p.Partition}
	st := f.parts.get(key)
	ref := p.Info.Ref
	storeStart := p.StoreStart
	w := f.writers.Get().(*records.BatchWriter)
	defer f.writers.Put(w)
	w.LogAppendTime = p.LogAppendTime
	w.Stop, w.StopBefore, r.LSO = p.Stop, uint64(max(p.StopBefore, 0)), p.StopBefore
	w.Drop = p.Drop

	begin := len(dst)
	next := uint64(p.Offset)
	remaining := limit
	hw := int64(-1)
	avg := st.avg
	if avg == 0 {
		avg = topicAvgMessageSize(p.Info, p.Partition)
	}
	for poll := 0; poll < maxPolls; poll++ {
		count := PollCount(remaining, avg, atLeastOne && !r.Records)
		if w.Stop && next >= w.StopBefore {
			count = 0 // at the last stable offset: only the offsets
		}
		polled, err := f.poll(ctx, ref, p.Partition, icodec.PollingKindOffset, next, count)
		if err != nil {
			if poll == 0 {
				r.Err = err
				return dst, r
			}
			break // answer what was read; the next fetch sees the failure
		}
		cur := polled.CurrentOffset
		if polled.Count == 0 {
			polled.Release()
			if poll == 0 {
				// count 0 (no room left) reads only the offsets: then an
				// empty answer says nothing about what is retained.
				probed := count > 0
				if hw, err = f.hwWhenEmpty(ctx, ref, p.Partition, cur, next, probed); err != nil {
					r.Err = err
					return dst, r
				}
				r.Cut = !probed && hw > int64(next) && !(w.Stop && next >= w.StopBefore)
				if probed && p.Offset < hw {
					// Messages may have landed between the server's read
					// and its current offset (a produce racing the poll):
					// out of range only if the log now starts above.
					if first, ferr := f.first(ctx, ref, p.Partition, hw); ferr == nil && first <= p.Offset {
						probed = false
					}
				}
				if p.Offset > hw || (probed && p.Offset < hw) {
					// Above the end, or below it with nothing retained
					// from the offset on (the log starts at its end):
					// outside the log either way.
					if p.Offset < hw {
						f.parts.setLogStart(key, hw)
					}
					r.Code = kerr.OffsetOutOfRange.Code
					return dst, r
				}
			}
			break
		}
		hw = int64(cur) + 1
		it := polled.Messages()
		if poll == 0 {
			peek := it
			if peek.Next() {
				if first := peek.Message().Offset; first > next {
					// Offsets are contiguous: the log now starts there.
					polled.Release()
					f.parts.setLogStart(key, int64(first))
					r.Code = kerr.OffsetOutOfRange.Code
					return dst, r
				}
			}
		}
		got := polled.Count
		avg = max(len(polled.Batches)/int(got), 1)
		// Room for what this poll can add (Kafka batches take about the
		// bytes of the Iggy messages they carry), in one step, rather than
		// append's doubling past the budget's grant.
		dst = records.GrowFetch(dst, min(max(remaining, 0), len(polled.Batches)+records.BatchHeaderSize))
		before := len(dst)
		var stats records.BatchStats
		dst, stats, err = w.AppendBatches(dst, &it, remaining, atLeastOne && !r.Records)
		polled.Release()
		if stats.Batches > 0 {
			r.Records = true
		}
		r.Txn = r.Txn || stats.Txn
		if stats.Consumed {
			r.Upto = int64(stats.NextOffset)
		}
		remaining -= len(dst) - before
		r.Cut = r.Cut || stats.Full || (remaining <= 0 && hw > int64(stats.NextOffset))
		if err != nil {
			f.log.Warn().Err(err).Uint64("conn_id", p.ConnID).Int32("corr_id", p.CorrID).Str("topic", p.Topic).
				Int32("partition", p.Partition).Msg("fetch: iggy messages do not walk")
			break
		}
		if stats.Full || stats.Stopped || got < count || !stats.Consumed || remaining <= 0 {
			break
		}
		next = stats.NextOffset
	}
	f.parts.setAvg(key, avg)
	if p.Version < 4 && len(dst) > begin {
		// Fetch v0-v3 clients read message sets, not record batches.
		magic := int8(1)
		if p.Version < 2 {
			magic = 0
		}
		dst = records.DownConvert(dst, begin, magic, limit, atLeastOne)
		r.Records = len(dst) > begin
	}
	r.HW = hw
	ls, err := f.logStart(ctx, key, ref, p.Offset, hw, st)
	switch {
	case err != nil:
		ls = -1 // the records are fine; the next fetch asks again
	case p.Offset < ls && !r.Records:
		// Only an offsets-only read (no room left) gets here below the
		// log start: out of range all the same.
		r.Code = kerr.OffsetOutOfRange.Code
		return dst[:begin], r
	}
	if ls >= 0 && ls < storeStart {
		ls = storeStart
	}
	r.LogStart = ls
	return dst, r
}

// hwWhenEmpty derives the high watermark from an empty poll at offset:
// current_offset > 0 means the log ends at current+1; current 0 is either an
// empty partition or one holding only offset 0. A poll that asked for
// messages (probed) from offset 0 and got none settles it: empty. Otherwise
// a Last poll tells them apart.
func (f *Reader) hwWhenEmpty(ctx context.Context, ref iggy.TopicRef, partition int32, cur, offset uint64, probed bool) (int64, error) {
	if cur > 0 {
		return int64(cur) + 1, nil
	}
	if offset == 0 && probed {
		return 0, nil
	}
	last, err := f.poll(ctx, ref, partition, icodec.PollingKindLast, 0, 1)
	if err != nil {
		return 0, err
	}
	defer last.Release()
	if last.Count == 0 {
		return 0, nil
	}
	return int64(last.CurrentOffset) + 1, nil
}

// logStart returns the partition's first retained offset: from the cache
// while fresh and consistent with what the fetch just read, else from a
// First poll (the high watermark when nothing is retained).
func (f *Reader) logStart(ctx context.Context, key partKey, ref iggy.TopicRef, offset, hw int64, st partState) (int64, error) {
	if !st.at.IsZero() && time.Since(st.at) < logStartTTL && st.logStart <= min(offset, hw) {
		return st.logStart, nil
	}
	ls, err := f.first(ctx, ref, key.partition, hw)
	if err != nil {
		return 0, err
	}
	f.parts.setLogStart(key, ls)
	return ls, nil
}

// poll runs one single-consumer poll of a partition.
func (f *Reader) poll(ctx context.Context, ref iggy.TopicRef, partition int32, kind icodec.PollingKind, value uint64, count uint32) (*iggy.Polled, error) {
	return f.pollFn(ctx, ref, partition, kind, value, count)
}

// PollCount is the message count of the next poll: what remaining
// bytes should hold at avg bytes per message (0 = unknown: a small probe),
// at least one when a record must go in anyway, 0 (a poll that only reads
// the partition's offsets) when nothing fits.
func PollCount(remaining, avg int, atLeastOne bool) uint32 {
	if remaining <= 0 {
		if atLeastOne {
			return 1
		}
		return 0
	}
	if avg <= 0 {
		return uint32(min(remaining/1024+1, probeCount))
	}
	n := remaining/avg + 1
	n = min(n, maxPollCount, max(MaxPollBytes/avg, 1))
	return uint32(n)
}

// topicAvgMessageSize estimates a partition's bytes per message from the
// cached topic lookup (0 when it knows nothing).
func topicAvgMessageSize(info *iggy.TopicInfo, partition int32) int {
	for i := range info.Details.Partitions {
		p := &info.Details.Partitions[i]
		if p.ID == uint32(partition) && p.MessagesCount > 0 {
			return int(min(p.SizeBytes/p.MessagesCount, MaxPollBytes))
		}
	}
	return 0
}

// partState is what the fetcher remembers of a partition.
type partState struct {
	logStart int64
	at       time.Time // when logStart was learned; zero: unknown
	avg      int       // Iggy bytes per message in the last poll; 0: unknown
}

// partCache holds partState per Kafka topic-partition.
type partCache struct {
	mu sync.Mutex
	m  map[partKey]partState
}

func (c *partCache) get(k partKey) partState {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[k]
}

func (c *partCache) update(k partKey, fn func(*partState)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= partCacheMax {
		if _, ok := c.m[k]; !ok {
			clear(c.m)
		}
	}
	s := c.m[k]
	fn(&s)
	c.m[k] = s
}

func (c *partCache) setLogStart(k partKey, ls int64) {
	c.update(k, func(s *partState) { s.logStart, s.at = ls, time.Now() })
}

func (c *partCache) setAvg(k partKey, avg int) {
	c.update(k, func(s *partState) { s.avg = avg })
}
