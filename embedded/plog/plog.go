package plog

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
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
