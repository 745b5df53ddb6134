package plog

// Dropping data: purge, the pin of the slowest consumer, retention by age and size,
// truncation and DELETE_SEGMENTS; only sealed segments are deleted.

import (
	"errors"
	"fmt"
	"math"
	"os"
)

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
