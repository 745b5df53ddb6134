package plog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

// Batch header fields used here (iggy-protocol.md §4.1).
const (
	hdrPartitionID   = iggy.BatchHeaderPartitionIDOffset   // u64
	hdrBaseOffset    = iggy.BatchHeaderBaseOffsetOffset    // u64
	hdrBaseTimestamp = iggy.BatchHeaderBaseTimestampOffset // u64
	hdrLength        = iggy.BatchHeaderBatchLengthOffset   // u64
	hdrMessageCount  = iggy.BatchHeaderMessageCountOffset  // u32
)

const (
	// DefaultSegmentSize is the segment size used when Options.SegmentSize
	// is 0: 1 GiB, the default of the segment_size topic option (§6.1).
	DefaultSegmentSize = 1 << 30
	// MaxBatchSize is the largest batch record Append accepts and recovery
	// keeps: 64 MiB, the largest Iggy frame (§4.7).
	MaxBatchSize = 64 << 20
	// minBatchSize is a batch header plus one empty message frame.
	minBatchSize = iggy.BatchHeaderSize + iggy.MessageHeaderSize
	// segmentExt is the extension of segment files.
	segmentExt = ".log"
	// corruptExt is appended to segment files set aside by recovery.
	corruptExt = ".corrupt"
	// maxKeptWriteBuf bounds the write buffer kept between Appends.
	maxKeptWriteBuf = 4 << 20
)

var (
	// ErrClosed is returned by operations on a closed or removed Log.
	ErrClosed = errors.New("plog: log closed")
	// ErrInvalidBatch is returned by Append for input that is not one batch
	// record of at most MaxBatchSize bytes with at least one message.
	ErrInvalidBatch = errors.New("plog: invalid batch record")
	// ErrOffsetOverflow is returned by Append when the batch's offsets
	// would pass 2^64-1.
	ErrOffsetOverflow = errors.New("plog: offsets exhausted")
	// ErrPartitionMismatch is returned by Open when a segment file holds a
	// checksum-valid batch stamped with another partition id.
	ErrPartitionMismatch = errors.New("plog: segment belongs to another partition")
)

// Options configures a Log.
type Options struct {
	// Dir is the partition's directory, created if missing; "" keeps the
	// log in memory only.
	Dir string
	// PartitionID is stamped into every batch and checked on recovery.
	PartitionID uint32
	// SegmentSize is the size in bytes at which the active segment is
	// sealed (topic option segment_size); 0 means DefaultSegmentSize.
	SegmentSize uint64
	// EnforceFsync makes Append fsync the segment file before it returns,
	// and segment creation and deletion fsync the directory.
	EnforceFsync bool
	// MessageExpiry is the retention time in µs (topic option
	// message_expiry); 0 or 2^64-1 means never.
	MessageExpiry uint64
	// MaxSize is the retention size in bytes of this partition; 0 or
	// 2^64-1 means unlimited.
	MaxSize uint64
	// Now returns the time in µs since the Unix epoch; nil means the
	// system clock.
	Now func() uint64
}

// State is a snapshot of a Log's counters.
type State struct {
	// HasMessages reports whether any message is retained.
	HasMessages bool
	// FirstOffset is the offset of the first retained message; without
	// messages, the offset the next message will get.
	FirstOffset uint64
	// CurrentOffset is the offset of the last message appended since the
	// log was created or purged (it stays when retention deletes it); 0
	// when there is none.
	CurrentOffset uint64
	// MessagesCount is the number of retained messages.
	MessagesCount uint64
	// SizeBytes is the total size of the retained batch records.
	SizeBytes uint64
	// SegmentsCount is the number of segments, the active one included.
	SegmentsCount uint32
}

// NextOffset is the offset the next appended message gets: the exclusive
// bound of what this snapshot saw (pass it to PollBefore).
func (s State) NextOffset() uint64 {
	if s.HasMessages {
		return s.CurrentOffset + 1
	}
	return s.FirstOffset
}

// entry indexes one stored batch record.
type entry struct {
	offset uint64 // base_offset
	ts     uint64 // base_timestamp
	pos    int64  // position in the segment file
	length uint32 // batch_length
	count  uint32 // message_count
	data   []byte // the record itself, in a memory-only log
}

// segment is a run of batches with contiguous offsets, held in one file
// (or in memory).
type segment struct {
	base    uint64 // first offset; the file name
	next    uint64 // offset after its last message
	size    int64  // bytes of batch records
	entries []entry
	f       *os.File // nil in a memory-only log
	path    string
}

// lastOffset is the offset of the segment's last message; only meaningful
// for a non-empty segment.
func (s *segment) lastOffset() uint64 { return s.next - 1 }

// Log is the append-only log of one partition. Create it with Open.
type Log struct {
	opts    Options // normalised: SegmentSize and Now set
	segSize int64
	log     zerolog.Logger

	// wmu serialises mutations (Append, Purge, deletion, Sync, Close).
	// Lock order: wmu, then mu.
	wmu  sync.Mutex
	wbuf []byte // Append's stamping buffer (file-backed logs); guarded by wmu

	// mu guards everything below and the entries and sizes of segments.
	mu      sync.RWMutex
	segs    []*segment // never empty while open; the last one is active
	next    uint64     // offset of the next message
	lastTS  uint64     // newest base_timestamp handed out
	msgs    uint64
	size    uint64
	expiry  uint64
	maxSize uint64
	pinned  bool
	pin     uint64
	trimTo  uint64 // delete watermark (Truncate); 0 = none
	closed  bool
}

// Open opens the log described by opts. For a directory it recovers the
// segment files found there (see the package documentation): a torn or
// corrupt tail is truncated with a logged warning and everything before it
// is kept. It fails on I/O errors and with ErrPartitionMismatch.
func Open(opts Options, log zerolog.Logger) (*Log, error) {
	if opts.SegmentSize == 0 {
		opts.SegmentSize = DefaultSegmentSize
	}
	if opts.Now == nil {
		opts.Now = func() uint64 { return uint64(time.Now().UnixMicro()) }
	}
	l := &Log{
		opts:    opts,
		segSize: int64(min(opts.SegmentSize, math.MaxInt64)),
		log:     log.With().Str("component", "plog").Uint32("partition_id", opts.PartitionID).Logger(),
		expiry:  opts.MessageExpiry,
		maxSize: opts.MaxSize,
	}
	if opts.Dir == "" {
		l.segs = []*segment{{}}
		return l, nil
	}
	l.log = l.log.With().Str("dir", opts.Dir).Logger()
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("plog: %w", err)
	}
	if err := l.recover(); err != nil {
		l.closeFiles()
		return nil, err
	}
	if l.segs[len(l.segs)-1].size >= l.segSize {
		if err := l.roll(); err != nil {
			l.closeFiles()
			return nil, err
		}
	}
	return l, nil
}

// segmentPath returns the file of the segment starting at base.
func (l *Log) segmentPath(base uint64) string {
	return filepath.Join(l.opts.Dir, fmt.Sprintf("%020d%s", base, segmentExt))
}

// createSegment makes a new empty segment starting at base (with its file,
// truncated if it exists).
func (l *Log) createSegment(base uint64) (*segment, error) {
	s := &segment{base: base, next: base}
	if l.opts.Dir == "" {
		return s, nil
	}
	s.path = l.segmentPath(base)
	f, err := os.OpenFile(s.path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("plog: create segment: %w", err)
	}
	s.f = f
	if l.opts.EnforceFsync {
		if err := syncDir(l.opts.Dir); err != nil {
			_ = f.Close()
			return nil, err
		}
	}
	return s, nil
}

// roll seals the active segment and starts a new one at the next offset.
// Caller holds wmu.
func (l *Log) roll() error {
	s, err := l.createSegment(l.next)
	if err != nil {
		return err
	}
	l.mu.Lock()
	l.segs = append(l.segs, s)
	l.mu.Unlock()
	l.log.Debug().Uint64("base_offset", s.base).Msg("segment sealed; new active segment")
	return nil
}

// Append stores one batch record that already passed iggy.CheckBatch (it
// only re-checks the length and message count). It stamps a copy with the
// partition id, base_offset = the last offset + 1 (0 for the first batch
// and after Purge) and base_timestamp = max(Now(), previous base_timestamp
// + 1) (so at least 1, and strictly increasing even when the clock stalls
// or steps back), recomputes the batch checksum, and stores it: in memory,
// or written to the active segment file (and fsynced with EnforceFsync)
// before it becomes visible to polls. It returns the base offset. The
// caller keeps batch. Retention is not applied here: call ApplyRetention.
func (l *Log) Append(batch []byte) (baseOffset uint64, err error) {
	base, _, err := l.appendBatch(batch, false)
	return base, err
}

// AppendOwned is Append for a batch the caller gives away: it is stamped
// in place (no copy). A memory-only log keeps it as the stored record and
// owned reports true: the caller must then neither change nor reuse batch's
// backing array, which the log keeps alive whole (so pass a batch that
// fills it). A file-backed log writes it and owned is false: the caller
// may reuse batch (now stamped). On error owned is false and batch may be
// stamped.
func (l *Log) AppendOwned(batch []byte) (baseOffset uint64, owned bool, err error) {
	return l.appendBatch(batch, true)
}

// appendBatch is Append, keeping batch itself in a memory-only log when
// own is set.
func (l *Log) appendBatch(batch []byte, own bool) (baseOffset uint64, owned bool, err error) {
	if len(batch) < minBatchSize || len(batch) > MaxBatchSize ||
		binary.LittleEndian.Uint64(batch[hdrLength:]) != uint64(len(batch)) {
		return 0, false, ErrInvalidBatch
	}
	count := binary.LittleEndian.Uint32(batch[hdrMessageCount:])
	if count == 0 {
		return 0, false, ErrInvalidBatch
	}

	l.wmu.Lock()
	defer l.wmu.Unlock()
	if l.closed {
		return 0, false, ErrClosed
	}
	active := l.segs[len(l.segs)-1]
	if active.size >= l.segSize { // an earlier roll failed: retry it
		if err := l.roll(); err != nil {
			return 0, false, err
		}
		active = l.segs[len(l.segs)-1]
	}
	base := l.next
	if base > math.MaxUint64-uint64(count) {
		return 0, false, ErrOffsetOverflow
	}
	ts := l.opts.Now()
	if ts <= l.lastTS && l.lastTS < math.MaxUint64 {
		ts = l.lastTS + 1
	}

	var rec []byte
	switch {
	case own:
		rec, owned = batch, active.f == nil
	case active.f == nil:
		rec = append([]byte(nil), batch...)
	default:
		l.wbuf = append(l.wbuf[:0], batch...)
		rec = l.wbuf
	}
	iggy.StampBatch(rec, l.opts.PartitionID, base, ts)

	e := entry{offset: base, ts: ts, pos: active.size, length: uint32(len(rec)), count: count}
	if active.f == nil {
		e.data = rec
	} else {
		if err := l.write(active, rec); err != nil {
			return 0, false, err
		}
		if cap(l.wbuf) > maxKeptWriteBuf {
			l.wbuf = nil
		}
	}

	l.mu.Lock()
	active.entries = append(active.entries, e)
	active.size += int64(len(rec))
	active.next = base + uint64(count)
	l.next = active.next
	l.lastTS = ts
	l.msgs += uint64(count)
	l.size += uint64(len(rec))
	l.mu.Unlock()

	if active.size >= l.segSize {
		if err := l.roll(); err != nil {
			// The batch is stored; the next Append retries the roll.
			l.log.Error().Err(err).Msg("cannot start a new segment")
		}
	}
	return base, owned, nil
}

// write puts rec at the end of the active segment's file (and fsyncs it
// with EnforceFsync). On failure the file is cut back so that no partial
// record stays. Caller holds wmu.
func (l *Log) write(s *segment, rec []byte) error {
	_, err := s.f.WriteAt(rec, s.size)
	if err == nil && l.opts.EnforceFsync {
		err = s.f.Sync()
	}
	if err != nil {
		if terr := s.f.Truncate(s.size); terr != nil {
			l.log.Error().Err(terr).Str("segment", s.path).Msg("cannot cut back a failed write; recovery will truncate it")
		}
		return fmt.Errorf("plog: write: %w", err)
	}
	return nil
}

// State returns a snapshot of the log's counters.
func (l *Log) State() State {
	l.mu.RLock()
	defer l.mu.RUnlock()
	st := State{
		HasMessages:   l.msgs > 0,
		MessagesCount: l.msgs,
		SizeBytes:     l.size,
		SegmentsCount: uint32(min(len(l.segs), math.MaxUint32)),
		FirstOffset:   l.next,
	}
	if l.next > 0 {
		st.CurrentOffset = l.next - 1
	}
	if l.msgs > 0 {
		st.FirstOffset = l.segs[0].base
	}
	return st
}

// Poll appends to dst the stored batch records holding the retained
// messages with offsets start .. start+count-1, in offset order: whole
// records, or slices (iggy.AppendBatchSlice) where only part of a record is
// in range. It returns the extended buffer and the number of messages
// appended; past the end, count 0, an empty or closed log give (dst, 0).
func (l *Log) Poll(dst []byte, start uint64, count uint32) (out []byte, n uint32) {
	return l.PollBefore(dst, start, count, math.MaxUint64)
}

// PollBefore is Poll limited to the messages with offsets below before:
// given a State's NextOffset, it returns only messages that State saw, so
// a reply can pair them with that State's CurrentOffset (the real server
// bounds a poll by the commit offset it reports, build_poll_plan).
func (l *Log) PollBefore(dst []byte, start uint64, count uint32, before uint64) (out []byte, n uint32) {
	if count == 0 {
		return dst, 0
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	limit := min(l.next, before)
	if l.closed || l.msgs == 0 || start >= limit {
		return dst, 0
	}
	end := limit - 1
	if e := start + uint64(count) - 1; e >= start && e < end { // e < start: wrapped
		end = e
	}
	start = max(start, l.segs[0].base)
	if start > end {
		return dst, 0
	}
	si := sort.Search(len(l.segs), func(i int) bool { return l.segs[i].next > start })
	if si == len(l.segs) {
		return dst, 0
	}
	s := l.segs[si]
	ei := sort.Search(len(s.entries), func(i int) bool {
		return s.entries[i].offset+uint64(s.entries[i].count) > start
	})
	return l.collect(dst, si, ei, start, end)
}

// PollTimestamp appends to dst up to count messages starting with the first
// message of the first stored batch whose base_timestamp is >= ts (batch
// granularity, §7.3), as Poll does.
func (l *Log) PollTimestamp(dst []byte, ts uint64, count uint32) (out []byte, n uint32) {
	return l.PollTimestampBefore(dst, ts, count, math.MaxUint64)
}

// PollTimestampBefore is PollTimestamp limited to offsets below before, as
// PollBefore.
func (l *Log) PollTimestampBefore(dst []byte, ts uint64, count uint32, before uint64) (out []byte, n uint32) {
	if count == 0 {
		return dst, 0
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	limit := min(l.next, before)
	if l.closed || l.msgs == 0 || limit == 0 {
		return dst, 0
	}
	// Base timestamps strictly increase over the whole log; an empty
	// (active) segment sorts after everything.
	si := sort.Search(len(l.segs), func(i int) bool {
		es := l.segs[i].entries
		return len(es) == 0 || es[len(es)-1].ts >= ts
	})
	if si == len(l.segs) || len(l.segs[si].entries) == 0 {
		return dst, 0
	}
	es := l.segs[si].entries
	ei := sort.Search(len(es), func(i int) bool { return es[i].ts >= ts })
	start := es[ei].offset
	if start >= limit {
		return dst, 0
	}
	end := limit - 1
	if e := start + uint64(count) - 1; e >= start && e < end {
		end = e
	}
	return l.collect(dst, si, ei, start, end)
}

// scratchPool holds buffers for batches read from files to be sliced.
var scratchPool = sync.Pool{New: func() any { return new([]byte) }}

// collect appends the messages start..end (all retained, end <= last
// offset), beginning at entry ei of segment si which holds start. Caller
// holds mu for reading.
func (l *Log) collect(dst []byte, si, ei int, start, end uint64) ([]byte, uint32) {
	var n uint32
	for ; si < len(l.segs); si, ei = si+1, 0 {
		s := l.segs[si]
		// A run of consecutive whole records of a file, read at once.
		var run fileRun
		for ; ei < len(s.entries); ei++ {
			e := &s.entries[ei]
			if e.offset > end {
				break
			}
			from, to := uint32(0), e.count
			if start > e.offset {
				from = uint32(start - e.offset)
			}
			if last := e.offset + uint64(e.count) - 1; end < last {
				to = uint32(end-e.offset) + 1
			}
			whole := from == 0 && to == e.count
			var ok bool
			switch {
			case e.data != nil && whole:
				dst, ok = append(dst, e.data...), true
			case e.data != nil:
				at := len(dst)
				dst = iggy.AppendBatchSlice(dst, e.data, from, to)
				ok = len(dst) > at
			case whole:
				if run.length == 0 {
					run.pos = e.pos
				}
				run.length += int64(e.length)
				run.msgs += e.count
				continue
			default:
				if dst, ok = l.readRun(dst, s, &run); ok {
					dst, ok = l.readSlice(dst, s, e, from, to)
				}
				n += run.msgs
				run = fileRun{}
			}
			if !ok {
				return dst, n
			}
			n += to - from
		}
		var ok bool
		if dst, ok = l.readRun(dst, s, &run); ok {
			n += run.msgs
		}
		if !ok || ei < len(s.entries) {
			return dst, n
		}
	}
	return dst, n
}

// fileRun is a stretch of consecutive whole records of one segment file.
type fileRun struct {
	pos, length int64
	msgs        uint32
}

// readRun appends the records of run to dst with one ReadAt. On failure
// dst is returned unchanged and run.msgs is zeroed.
func (l *Log) readRun(dst []byte, s *segment, run *fileRun) ([]byte, bool) {
	if run.length == 0 {
		return dst, true
	}
	at := len(dst)
	dst = grow(dst, int(run.length))
	if _, err := s.f.ReadAt(dst[at:], run.pos); err != nil {
		l.log.Error().Err(err).Str("segment", s.path).Int64("pos", run.pos).Msg("poll read failed")
		run.msgs = 0
		return dst[:at], false
	}
	return dst, true
}

// readSlice reads the record of e from its file into a scratch buffer and
// appends frames from..to-1 of it to dst.
func (l *Log) readSlice(dst []byte, s *segment, e *entry, from, to uint32) ([]byte, bool) {
	bp := scratchPool.Get().(*[]byte)
	buf := grow((*bp)[:0], int(e.length))
	defer func() {
		*bp = buf
		if cap(buf) > maxKeptWriteBuf {
			*bp = nil
		}
		scratchPool.Put(bp)
	}()
	if _, err := s.f.ReadAt(buf, e.pos); err != nil {
		l.log.Error().Err(err).Str("segment", s.path).Int64("pos", e.pos).Msg("poll read failed")
		return dst, false
	}
	at := len(dst)
	dst = iggy.AppendBatchSlice(dst, buf, from, to)
	if len(dst) == at {
		l.log.Error().Str("segment", s.path).Int64("pos", e.pos).Msg("stored batch no longer well-formed")
		return dst, false
	}
	return dst, true
}

// grow extends b by n bytes (contents of the new bytes unspecified).
func grow(b []byte, n int) []byte {
	if cap(b)-len(b) < n {
		nb := make([]byte, len(b), len(b)+max(n, len(b)))
		copy(nb, b)
		b = nb
	}
	return b[:len(b)+n]
}

// Purge deletes every message, sealed or not, regardless of the pin, which
// it clears (purging drops the consumer offsets too, §7.2); offsets restart
// at 0 and base timestamps keep increasing. If no new active segment can be
// created the log is left closed.
func (l *Log) Purge() error {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if l.closed {
		return ErrClosed
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var errs []error
	for _, s := range l.segs {
		errs = append(errs, l.dropSegment(s))
	}
	l.segs = nil
	l.next, l.msgs, l.size = 0, 0, 0
	l.pinned, l.pin, l.trimTo = false, 0, 0
	s, err := l.createSegment(0)
	if err != nil {
		// Without an active segment the log cannot go on.
		l.closed = true
		return errors.Join(append(errs, err)...)
	}
	l.segs = []*segment{s}
	if l.opts.EnforceFsync && l.opts.Dir != "" {
		errs = append(errs, syncDir(l.opts.Dir))
	}
	l.log.Info().Msg("partition purged")
	return errors.Join(errs...)
}

// dropSegment closes and deletes the file of s (no-op in memory).
func (l *Log) dropSegment(s *segment) error {
	if s.f == nil {
		return nil
	}
	err := s.f.Close()
	s.f = nil
	if rerr := os.Remove(s.path); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
		err = errors.Join(err, rerr)
	}
	if err != nil {
		return fmt.Errorf("plog: delete segment: %w", err)
	}
	return nil
}

// SetPinned sets (ok) or clears (!ok) the pinned offset: no deletion
// removes a segment holding an offset above minOffset. The server pins the
// lowest stored consumer offset of the partition (§7.2). A pin that moves
// up releases the segments the delete watermark (Truncate) was waiting
// for: they are deleted now, and how many is returned.
func (l *Log) SetPinned(minOffset uint64, ok bool) (deleted int, err error) {
	// Fast path without wmu (an Append may hold it through an fsync): the
	// pin and the check share one mu section, and Truncate raises the
	// watermark under mu before it reads the pin, so one of the two sees
	// the other's change.
	l.mu.Lock()
	l.pin, l.pinned = minOffset, ok
	work := !l.closed && l.trimTo != 0 && len(l.segs) > 1 && len(l.segs[0].entries) > 0 &&
		l.segs[0].lastOffset() <= l.trimTo && (!ok || l.segs[0].lastOffset() <= minOffset)
	l.mu.Unlock()
	if !work {
		return 0, nil
	}
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if l.closed {
		return 0, nil
	}
	return l.trimLocked()
}

// SetRetention changes the message expiry (µs) and size cap (bytes) used by
// ApplyRetention; 0 or 2^64-1 disables either.
func (l *Log) SetRetention(expiry, maxSize uint64) {
	l.mu.Lock()
	l.expiry, l.maxSize = expiry, maxSize
	l.mu.Unlock()
}

// ApplyRetention deletes sealed segments from the oldest on while the
// oldest is expired (its newest base_timestamp + MessageExpiry < Now) or
// the log is larger than MaxSize, stopping at a pinned segment. The active
// segment is never deleted. It returns the number of segments deleted.
func (l *Log) ApplyRetention() (deletedSegments int, err error) {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if l.closed {
		return 0, ErrClosed
	}
	l.mu.RLock()
	expiry, maxSize, size := l.expiry, l.maxSize, l.size
	l.mu.RUnlock()
	expires := expiry != 0 && expiry != math.MaxUint64
	capped := maxSize != 0 && maxSize != math.MaxUint64
	if !expires && !capped {
		return 0, nil
	}
	now := l.opts.Now()
	k := 0
	for ; k < len(l.segs)-1 && l.deletable(l.segs[k]); k++ {
		s := l.segs[k]
		newest := s.entries[len(s.entries)-1].ts
		expired := expires && now > newest && now-newest > expiry
		if !expired && !(capped && size > maxSize) {
			break
		}
		size -= uint64(s.size)
	}
	return l.deleteOldest(k)
}

// SealedEnd returns the last offset of the n-th oldest sealed segment, of
// the newest sealed one when fewer than n are sealed; ok is false when n is
// 0 or no segment is sealed. The pin is not consulted: this is what a
// DELETE_SEGMENTS count resolves to before the consumer barrier applies
// (the real server's nth_oldest_sealed_end).
func (l *Log) SealedEnd(n uint32) (end uint64, ok bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	for i := 0; i < len(l.segs)-1 && uint64(i) < uint64(n); i++ {
		if len(l.segs[i].entries) == 0 {
			break
		}
		end, ok = l.segs[i].lastOffset(), true
	}
	return end, ok
}

// Truncate raises the delete watermark to upTo (it never goes down; 0
// leaves it as it is) and deletes the oldest sealed segments whose last
// offset is at or below the watermark, stopping at a pinned one, and
// returns how many it deleted. The segments the pin holds back are deleted
// when a later SetPinned releases them. Purge clears the watermark.
func (l *Log) Truncate(upTo uint64) (deleted int, err error) {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if l.closed {
		return 0, ErrClosed
	}
	l.mu.Lock()
	l.trimTo = max(l.trimTo, upTo)
	l.mu.Unlock()
	return l.trimLocked()
}

// TruncatedTo is the delete watermark (0: none).
func (l *Log) TruncatedTo() uint64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.trimTo
}

// DeleteSegments resolves n with SealedEnd and truncates there: up to n of
// the oldest sealed segments go, fewer while the pin holds them back.
func (l *Log) DeleteSegments(n uint32) (deleted int, err error) {
	end, _ := l.SealedEnd(n)
	return l.Truncate(end)
}

// trimLocked deletes the oldest sealed segments at or below the delete
// watermark that the pin allows. Caller holds wmu.
func (l *Log) trimLocked() (int, error) {
	l.mu.RLock()
	w := l.trimTo
	l.mu.RUnlock()
	if w == 0 {
		return 0, nil
	}
	k := 0
	for k < len(l.segs)-1 && l.deletable(l.segs[k]) && l.segs[k].lastOffset() <= w {
		k++
	}
	return l.deleteOldest(k)
}

// deletable reports whether pinning allows deleting sealed segment s.
// Caller holds wmu.
func (l *Log) deletable(s *segment) bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return len(s.entries) > 0 && (!l.pinned || s.lastOffset() <= l.pin)
}

// deleteOldest removes the k oldest segments (all sealed). Caller holds wmu.
func (l *Log) deleteOldest(k int) (int, error) {
	if k == 0 {
		return 0, nil
	}
	l.mu.Lock()
	gone := l.segs[:k]
	l.segs = append([]*segment(nil), l.segs[k:]...)
	for _, s := range gone {
		l.msgs -= s.next - s.base
		l.size -= uint64(s.size)
	}
	l.mu.Unlock()
	// No reader can still use gone: they held mu for reading while they did.
	var errs []error
	for _, s := range gone {
		errs = append(errs, l.dropSegment(s))
		l.log.Info().Uint64("base_offset", s.base).Uint64("last_offset", s.lastOffset()).Msg("segment deleted")
	}
	if l.opts.EnforceFsync && l.opts.Dir != "" {
		errs = append(errs, syncDir(l.opts.Dir))
	}
	return k, errors.Join(errs...)
}

// Sync flushes the active segment file and the directory to stable
// storage (no-op in memory).
func (l *Log) Sync() error {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if l.closed {
		return ErrClosed
	}
	return l.syncLocked()
}

func (l *Log) syncLocked() error {
	if l.opts.Dir == "" {
		return nil
	}
	f := l.segs[len(l.segs)-1].f
	if f == nil {
		return nil
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("plog: sync: %w", err)
	}
	return syncDir(l.opts.Dir)
}

// Close closes the log's files, after an fsync when EnforceFsync is set
// (call Sync first for a durable close otherwise). Later calls return
// ErrClosed (Poll returns nothing); a second Close returns nil.
func (l *Log) Close() error {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if l.closed {
		return nil
	}
	var err error
	if l.opts.EnforceFsync {
		err = l.syncLocked()
	}
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	return errors.Join(err, l.closeFiles())
}

// closeFiles closes every segment file. Caller holds wmu (or owns l).
func (l *Log) closeFiles() error {
	var errs []error
	for _, s := range l.segs {
		if s.f != nil {
			errs = append(errs, s.f.Close())
			s.f = nil
		}
	}
	return errors.Join(errs...)
}

// Remove closes the log and deletes its directory with everything in it
// (DELETE_TOPIC, DELETE_PARTITIONS). In memory it drops the data.
func (l *Log) Remove() error {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	l.mu.Lock()
	l.closed = true
	err := l.closeFiles()
	l.segs = []*segment{{}}
	l.next, l.msgs, l.size = 0, 0, 0
	l.mu.Unlock()
	if l.opts.Dir != "" {
		if rerr := os.RemoveAll(l.opts.Dir); rerr != nil {
			err = errors.Join(err, fmt.Errorf("plog: remove: %w", rerr))
		}
	}
	return err
}

// syncDir fsyncs a directory so that created, renamed and removed entries
// are durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("plog: sync dir: %w", err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("plog: sync dir: %w", err)
	}
	return nil
}
