package plog

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

// parseSegmentName returns the base offset named by a segment file name
// ("%020d.log"), or false for any other name.
func parseSegmentName(name string) (uint64, bool) {
	digits, ok := strings.CutSuffix(name, segmentExt)
	if !ok || len(digits) != 20 {
		return 0, false
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return 0, false
		}
	}
	base, err := strconv.ParseUint(digits, 10, 64)
	if err != nil {
		return 0, false
	}
	return base, true
}

// recover rebuilds the segments from the files in the directory. On return
// without error l.segs holds at least one segment.
func (l *Log) recover() error {
	des, err := os.ReadDir(l.opts.Dir)
	if err != nil {
		return fmt.Errorf("plog: %w", err)
	}
	var bases []uint64
	for _, de := range des {
		if base, ok := parseSegmentName(de.Name()); ok && de.Type().IsRegular() {
			bases = append(bases, base)
		}
	}
	slices.Sort(bases)
	if len(bases) == 0 {
		s, err := l.createSegment(0)
		if err != nil {
			return err
		}
		l.segs = []*segment{s}
		return nil
	}

	sc := scanner{r: bufio.NewReaderSize(nil, 1<<20)}
	l.next = bases[0]
	for i, base := range bases {
		if base != l.next {
			l.log.Error().Str("segment", l.segmentPath(base)).Uint64("expected_base_offset", l.next).
				Msg("segment does not continue the log; it and later segments are set aside")
			return l.setAside(bases[i:])
		}
		s, clean, err := l.recoverSegment(base, &sc)
		if err != nil {
			return err
		}
		l.segs = append(l.segs, s)
		if !clean {
			return l.setAside(bases[i+1:])
		}
	}
	return nil
}

// setAside renames the given segment files to "<name>.corrupt".
func (l *Log) setAside(bases []uint64) error {
	for _, base := range bases {
		p := l.segmentPath(base)
		if err := os.Rename(p, p+corruptExt); err != nil {
			return fmt.Errorf("plog: set aside segment: %w", err)
		}
		l.log.Error().Str("segment", p).Str("renamed_to", filepath.Base(p)+corruptExt).Msg("segment set aside")
	}
	if len(bases) > 0 && l.opts.EnforceFsync {
		return syncDir(l.opts.Dir)
	}
	return nil
}

// scanner holds the buffers reused while walking segment files.
type scanner struct {
	r   *bufio.Reader
	buf []byte
}

// recoverSegment opens the segment file starting at base (which is l.next),
// indexes its batches and truncates it after the last good one. It updates
// l.next, l.lastTS, l.msgs and l.size. clean is false when the file had a
// bad tail.
func (l *Log) recoverSegment(base uint64, sc *scanner) (s *segment, clean bool, err error) {
	path := l.segmentPath(base)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, false, fmt.Errorf("plog: open segment: %w", err)
	}
	s = &segment{base: base, next: base, f: f, path: path}
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, false, fmt.Errorf("plog: open segment: %w", err)
	}
	size := fi.Size()
	sc.r.Reset(io.NewSectionReader(f, 0, size))
	reason, err := l.scanSegment(s, size, sc)
	if err != nil {
		_ = f.Close()
		return nil, false, err
	}
	if cap(sc.buf) > maxKeptWriteBuf {
		sc.buf = nil
	}
	if reason == "" {
		return s, true, nil
	}
	l.log.Warn().Str("segment", path).Int64("pos", s.size).Int64("dropped_bytes", size-s.size).
		Str("reason", reason).Msg("corrupt or torn segment tail truncated")
	if err := f.Truncate(s.size); err != nil {
		_ = f.Close()
		return nil, false, fmt.Errorf("plog: truncate segment: %w", err)
	}
	if l.opts.EnforceFsync {
		if err := f.Sync(); err != nil {
			_ = f.Close()
			return nil, false, fmt.Errorf("plog: truncate segment: %w", err)
		}
	}
	return s, false, nil
}

// scanSegment walks the size bytes of s's file through sc.r, appending an
// entry per good batch and advancing s.size and the log's counters. It
// returns why it stopped before size ("" when it did not), or an I/O error
// or a partition mismatch.
func (l *Log) scanSegment(s *segment, size int64, sc *scanner) (reason string, err error) {
	var hdr [iggy.BatchHeaderSize]byte
	for s.size < size {
		rest := size - s.size
		if rest < iggy.BatchHeaderSize {
			return "partial batch header", nil
		}
		if _, err := io.ReadFull(sc.r, hdr[:]); err != nil {
			return "", readErr(err)
		}
		length := binary.LittleEndian.Uint64(hdr[hdrLength:])
		switch {
		case length < minBatchSize:
			return "batch_length " + strconv.FormatUint(length, 10) + " too small", nil
		case length > MaxBatchSize:
			return "batch_length " + strconv.FormatUint(length, 10) + " above the maximum", nil
		case length > uint64(rest):
			return "partial batch", nil
		}
		// length is now bounded by the bytes present and by MaxBatchSize.
		if uint64(cap(sc.buf)) < length {
			sc.buf = make([]byte, length)
		}
		b := sc.buf[:length]
		copy(b, hdr[:])
		if _, err := io.ReadFull(sc.r, b[iggy.BatchHeaderSize:]); err != nil {
			return "", readErr(err)
		}
		if err := iggy.CheckBatch(b); err != nil {
			return err.Error(), nil
		}
		if pid := binary.LittleEndian.Uint64(b[hdrPartitionID:]); pid != uint64(l.opts.PartitionID) {
			return "", fmt.Errorf("%w: %s at %d is stamped with partition %d", ErrPartitionMismatch, s.path, s.size, pid)
		}
		off := binary.LittleEndian.Uint64(b[hdrBaseOffset:])
		ts := binary.LittleEndian.Uint64(b[hdrBaseTimestamp:])
		count := binary.LittleEndian.Uint32(b[hdrMessageCount:])
		switch {
		case off != s.next:
			return "base_offset " + strconv.FormatUint(off, 10) + ", expected " + strconv.FormatUint(s.next, 10), nil
		case l.msgs > 0 && ts <= l.lastTS:
			return "base_timestamp not increasing", nil
		case off > math.MaxUint64-uint64(count):
			return "offsets overflow", nil
		}
		s.entries = append(s.entries, entry{offset: off, ts: ts, pos: s.size, length: uint32(length), count: count})
		s.size += int64(length)
		s.next = off + uint64(count)
		l.next, l.lastTS = s.next, ts
		l.msgs += uint64(count)
		l.size += length
	}
	return "", nil
}

// readErr turns a short read of bytes Stat said exist into an error.
func readErr(err error) error {
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("plog: read segment: %w", err)
}
