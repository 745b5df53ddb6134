package plog

// Reading: polls by offset or timestamp, collected from memory or segment files.

import (
	"math"
	"sort"
	"sync"

	"github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

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
