package plog

// Appending: stamping a batch and storing it in memory or in the active segment.

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

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
