package plog

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/rs/zerolog"

	"github.com/kafka-iggy/kafka-iggy/codec/iggy"
	"github.com/kafka-iggy/kafka-iggy/codec/wire"
)

// clock is a settable fake clock in µs.
type clock struct{ now atomic.Uint64 }

func (c *clock) Now() uint64                 { return c.now.Load() }
func (c *clock) set(v uint64)                { c.now.Store(v) }
func newClock(v uint64) *clock               { c := &clock{}; c.set(v); return c }
func testLogger(t testing.TB) zerolog.Logger { return zerolog.New(zerolog.NewTestWriter(t)) }

// makeBatch builds an unstamped batch of n messages for offsets first..
// first+n-1: message ids and the first 8 payload bytes carry the offset the
// message is expected to get, followed by size-8 filler bytes.
func makeBatch(t testing.TB, first uint64, n, size int) []byte {
	t.Helper()
	var b iggy.BatchBuilder
	b.Begin(nil)
	payload := make([]byte, max(size, 8))
	for i := range n {
		off := first + uint64(i)
		binary.LittleEndian.PutUint64(payload, off)
		for j := 8; j < len(payload); j++ {
			payload[j] = byte(off) + byte(j)
		}
		if err := b.Add(wire.U128{Lo: off, Hi: 7}, 1_000+uint64(i), payload, nil); err != nil {
			t.Fatal(err)
		}
	}
	rec, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	if err := iggy.CheckBatch(rec); err != nil {
		t.Fatal(err)
	}
	return rec
}

// mode is a storage variant every behavioural test runs against.
type mode struct {
	name string
	dir  bool
}

var modes = []mode{{"memory", false}, {"file", true}}

func openLog(t testing.TB, m mode, opts Options) *Log {
	t.Helper()
	if m.dir && opts.Dir == "" {
		opts.Dir = filepath.Join(t.TempDir(), "p")
	}
	l, err := Open(opts, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// appendSizes appends batches of the given message counts and returns the
// base offsets.
func appendSizes(t testing.TB, l *Log, sizes ...int) []uint64 {
	t.Helper()
	var bases []uint64
	next := uint64(0)
	if st := l.State(); st.HasMessages || st.CurrentOffset > 0 {
		next = st.CurrentOffset + 1
	}
	for _, n := range sizes {
		base, err := l.Append(makeBatch(t, next, n, 40))
		if err != nil {
			t.Fatal(err)
		}
		if base != next {
			t.Fatalf("Append base offset %d, want %d", base, next)
		}
		bases = append(bases, base)
		next += uint64(n)
	}
	return bases
}

// checkMessages verifies poll output: it is well-formed, every record
// passes CheckBatch (frame and batch checksums), is stamped with partition
// pid, and the messages have offsets first, first+1, ... matching their
// payloads; it returns how many there are.
func checkMessages(t testing.TB, out []byte, pid uint32, first uint64) int {
	t.Helper()
	if err := iggy.CheckBatches(out); err != nil {
		t.Fatalf("CheckBatches: %v", err)
	}
	for rest := out; len(rest) > 0; {
		n := binary.LittleEndian.Uint64(rest[hdrLength:])
		if err := iggy.CheckBatch(rest[:n]); err != nil {
			t.Fatalf("CheckBatch on a served record: %v", err)
		}
		rest = rest[n:]
	}
	it := iggy.NewMessageIter(out)
	want := first
	for it.Next() {
		m := it.Message()
		if m.Offset != want {
			t.Fatalf("message offset %d, want %d", m.Offset, want)
		}
		if got := binary.LittleEndian.Uint64(m.Payload); got != want || m.ID.Lo != want {
			t.Fatalf("offset %d carries message %d (id %d)", want, got, m.ID.Lo)
		}
		if m.PartitionID != pid {
			t.Fatalf("partition id %d, want %d", m.PartitionID, pid)
		}
		if !it.ChecksumOK() {
			t.Fatalf("offset %d: frame checksum", want)
		}
		want++
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	return int(want - first)
}

// records returns the base offset and message count of each record.
func records(out []byte) (bases []uint64, counts []uint32) {
	for len(out) >= iggy.BatchHeaderSize {
		bases = append(bases, binary.LittleEndian.Uint64(out[hdrBaseOffset:]))
		counts = append(counts, binary.LittleEndian.Uint32(out[hdrMessageCount:]))
		out = out[binary.LittleEndian.Uint64(out[hdrLength:]):]
	}
	return bases, counts
}

func TestAppendPoll(t *testing.T) {
	// Offsets: [0] [1 2 3] [4 .. 8] [9 10] [11 .. 17]
	sizes := []int{1, 3, 5, 2, 7}
	tests := []struct {
		name        string
		start       uint64
		count       uint32
		wantFirst   uint64
		wantN       int
		wantBases   []uint64 // base_offset of each served record
		wantRecords []uint32 // message_count of each served record
	}{
		{"all", 0, 100, 0, 18, []uint64{0, 1, 4, 9, 11}, []uint32{1, 3, 5, 2, 7}},
		{"exact", 0, 18, 0, 18, []uint64{0, 1, 4, 9, 11}, []uint32{1, 3, 5, 2, 7}},
		{"first message", 0, 1, 0, 1, []uint64{0}, []uint32{1}},
		{"one whole batch", 1, 3, 1, 3, []uint64{1}, []uint32{3}},
		{"head of a batch", 1, 2, 1, 2, []uint64{1}, []uint32{2}},
		{"middle of a batch", 2, 1, 2, 1, []uint64{1}, []uint32{1}},
		{"tail then head", 2, 5, 2, 5, []uint64{1, 4}, []uint32{2, 3}},
		{"inside one batch", 5, 3, 5, 3, []uint64{4}, []uint32{3}},
		{"across three", 7, 6, 7, 6, []uint64{4, 9, 11}, []uint32{2, 2, 2}},
		{"last message", 17, 10, 17, 1, []uint64{11}, []uint32{1}},
		{"past the end", 18, 5, 0, 0, nil, nil},
		{"far past the end", 1 << 40, 5, 0, 0, nil, nil},
		{"count zero", 0, 0, 0, 0, nil, nil},
		{"count max", 3, math.MaxUint32, 3, 15, []uint64{1, 4, 9, 11}, []uint32{1, 5, 2, 7}},
		{"wrapping range", math.MaxUint64 - 1, math.MaxUint32, 0, 0, nil, nil},
	}
	for _, m := range modes {
		for _, segSize := range []uint64{0, 1} { // 1: every batch seals its segment
			name := m.name
			if segSize == 1 {
				name += "/segment per batch"
			}
			t.Run(name, func(t *testing.T) {
				l := openLog(t, m, Options{PartitionID: 3, SegmentSize: segSize})
				appendSizes(t, l, sizes...)
				st := l.State()
				if !st.HasMessages || st.FirstOffset != 0 || st.CurrentOffset != 17 || st.MessagesCount != 18 {
					t.Fatalf("State %+v", st)
				}
				for _, tt := range tests {
					t.Run(tt.name, func(t *testing.T) {
						prefix := []byte("prefix")
						out, n := l.Poll(prefix, tt.start, tt.count)
						if !bytes.Equal(out[:len(prefix)], prefix) {
							t.Fatal("Poll overwrote dst")
						}
						out = out[len(prefix):]
						if int(n) != tt.wantN {
							t.Fatalf("n = %d, want %d", n, tt.wantN)
						}
						if got := checkMessages(t, out, 3, tt.wantFirst); got != tt.wantN {
							t.Fatalf("%d messages in the records, want %d", got, tt.wantN)
						}
						bases, counts := records(out)
						if !slices.Equal(bases, tt.wantBases) || !slices.Equal(counts, tt.wantRecords) {
							t.Fatalf("records bases %v counts %v, want %v %v", bases, counts, tt.wantBases, tt.wantRecords)
						}
					})
				}
			})
		}
	}
}

func TestAppendRejects(t *testing.T) {
	good := makeBatch(t, 0, 2, 10)
	zeroCount := slices.Clone(good)
	binary.LittleEndian.PutUint32(zeroCount[hdrMessageCount:], 0)
	tests := []struct {
		name  string
		batch []byte
	}{
		{"nil", nil},
		{"header only", good[:iggy.BatchHeaderSize]},
		{"length mismatch", good[:len(good)-1]},
		{"trailing bytes", append(slices.Clone(good), 0)},
		{"zero messages", zeroCount},
	}
	for _, m := range modes {
		l := openLog(t, m, Options{})
		for _, tt := range tests {
			t.Run(m.name+"/"+tt.name, func(t *testing.T) {
				if _, err := l.Append(tt.batch); !errors.Is(err, ErrInvalidBatch) {
					t.Fatalf("err = %v, want ErrInvalidBatch", err)
				}
			})
		}
		if st := l.State(); st.HasMessages || st.SizeBytes != 0 {
			t.Fatalf("%s: rejected batches changed the state: %+v", m.name, st)
		}
	}
}

func TestAppendDoesNotAliasInput(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			l := openLog(t, m, Options{})
			in := makeBatch(t, 0, 3, 20)
			orig := slices.Clone(in)
			if _, err := l.Append(in); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(in, orig) {
				t.Fatal("Append modified its input")
			}
			clear(in)
			out, n := l.Poll(nil, 0, 3)
			if n != 3 || checkMessages(t, out, 0, 0) != 3 {
				t.Fatal("stored batch changed with the caller's buffer")
			}
		})
	}
}

func TestStamping(t *testing.T) {
	tests := []struct {
		name   string
		clock  []uint64 // clock value before each append
		wantTS []uint64
	}{
		{"advancing clock", []uint64{100, 200, 300}, []uint64{100, 200, 300}},
		{"stuck clock", []uint64{500, 500, 500, 500}, []uint64{500, 501, 502, 503}},
		{"clock going back", []uint64{900, 100, 950, 2000}, []uint64{900, 901, 950, 2000}},
		{"zero clock", []uint64{0, 0}, []uint64{1, 2}}, // stamps start above 0
	}
	for _, m := range modes {
		for _, tt := range tests {
			t.Run(m.name+"/"+tt.name, func(t *testing.T) {
				c := newClock(0)
				l := openLog(t, m, Options{PartitionID: 9, Now: c.Now})
				for i, now := range tt.clock {
					c.set(now)
					appendSizes(t, l, 2)
					out, _ := l.Poll(nil, uint64(2*i), 2)
					if got := binary.LittleEndian.Uint64(out[hdrBaseTimestamp:]); got != tt.wantTS[i] {
						t.Fatalf("batch %d base_timestamp %d, want %d", i, got, tt.wantTS[i])
					}
					if got := binary.LittleEndian.Uint64(out[hdrPartitionID:]); got != 9 {
						t.Fatalf("partition_id %d", got)
					}
					it := iggy.NewMessageIter(out)
					for it.Next() {
						if it.Message().Timestamp != tt.wantTS[i] {
							t.Fatalf("message timestamp %d", it.Message().Timestamp)
						}
					}
				}
			})
		}
	}
}

func TestPollTimestamp(t *testing.T) {
	// Batches (ts: offsets): 100: [0 1], 200: [2 3 4], 300: [5], 400: [6 7 8 9]
	tests := []struct {
		name      string
		ts        uint64
		count     uint32
		wantFirst uint64
		wantN     int
	}{
		{"from zero", 0, 100, 0, 10},
		{"exact first", 100, 100, 0, 10},
		{"between batches", 150, 100, 2, 8},
		{"exact middle", 200, 3, 2, 3},
		{"just after a batch", 201, 100, 5, 5},
		{"count cuts a batch", 200, 4, 2, 4},
		{"count one", 400, 1, 6, 1},
		{"last batch", 301, 100, 6, 4},
		{"after the last", 401, 100, 0, 0},
		{"count zero", 0, 0, 0, 0},
	}
	for _, m := range modes {
		for _, segSize := range []uint64{0, 1} {
			t.Run(m.name+"/segment_size="+strconv.FormatUint(segSize, 10), func(t *testing.T) {
				c := newClock(0)
				l := openLog(t, m, Options{Now: c.Now, SegmentSize: segSize})
				for i, n := range []int{2, 3, 1, 4} {
					c.set(uint64(i+1) * 100)
					appendSizes(t, l, n)
				}
				for _, tt := range tests {
					t.Run(tt.name, func(t *testing.T) {
						out, n := l.PollTimestamp(nil, tt.ts, tt.count)
						if int(n) != tt.wantN || checkMessages(t, out, 0, tt.wantFirst) != tt.wantN {
							t.Fatalf("n = %d, want %d from %d", n, tt.wantN, tt.wantFirst)
						}
					})
				}
			})
		}
	}
}

func TestPollTimestampStuckClock(t *testing.T) {
	c := newClock(1000)
	l := openLog(t, modes[0], Options{Now: c.Now})
	appendSizes(t, l, 1, 1, 1) // stamped 1000, 1001, 1002
	out, n := l.PollTimestamp(nil, 1001, 10)
	if n != 2 || checkMessages(t, out, 0, 1) != 2 {
		t.Fatalf("n = %d", n)
	}
}

func TestPurge(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			c := newClock(100)
			dir := ""
			if m.dir {
				dir = filepath.Join(t.TempDir(), "p")
			}
			l := openLog(t, m, Options{Dir: dir, Now: c.Now, SegmentSize: 1})
			appendSizes(t, l, 3, 4, 5)
			l.SetPinned(0, true)
			if err := l.Purge(); err != nil {
				t.Fatal(err)
			}
			want := State{FirstOffset: 0, SegmentsCount: 1}
			if st := l.State(); st != want {
				t.Fatalf("after purge %+v, want %+v", st, want)
			}
			if _, n := l.Poll(nil, 0, 100); n != 0 {
				t.Fatalf("poll after purge: %d messages", n)
			}
			bases := appendSizes(t, l, 2)
			if bases[0] != 0 {
				t.Fatalf("first offset after purge %d", bases[0])
			}
			out, _ := l.Poll(nil, 0, 100)
			if checkMessages(t, out, 0, 0) != 2 {
				t.Fatal("messages after purge")
			}
			if got := binary.LittleEndian.Uint64(out[hdrBaseTimestamp:]); got != 103 {
				t.Fatalf("base_timestamp after purge %d, want 103 (still increasing)", got)
			}
			if n, err := l.DeleteSegments(1); n != 1 || err != nil { // the pin went with the purge
				t.Fatalf("DeleteSegments after purge: %d, %v", n, err)
			}
			if m.dir {
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
				l2 := openLog(t, m, Options{Dir: dir, Now: c.Now, SegmentSize: 1})
				if st := l2.State(); st.HasMessages || st.FirstOffset != 2 || st.CurrentOffset != 1 || st.SegmentsCount != 1 {
					t.Fatalf("reopened after purge: %+v", st)
				}
			}
		})
	}
}

// batchLen is the size of a batch from makeBatch(_, _, n, 40).
func batchLen(n int) uint64 { return uint64(iggy.BatchHeaderSize + n*(iggy.MessageHeaderSize+40)) }

func TestSegmentRolling(t *testing.T) {
	one := batchLen(1)
	tests := []struct {
		name     string
		segSize  uint64
		batches  int
		wantSegs uint32
	}{
		{"one segment", 0, 10, 1},
		{"two batches each", 2 * one, 10, 6},   // 5 full + empty active
		{"sealed just over", 2*one - 1, 10, 6}, // a batch pushes past the size
		{"three batches each", 3 * one, 10, 4}, // 3 full + 1 partial active
		{"every batch", 1, 4, 5},               // 4 full + empty active
	}
	for _, m := range modes {
		for _, tt := range tests {
			t.Run(m.name+"/"+tt.name, func(t *testing.T) {
				dir := ""
				if m.dir {
					dir = filepath.Join(t.TempDir(), "p")
				}
				opts := Options{Dir: dir, SegmentSize: tt.segSize}
				l := openLog(t, m, opts)
				appendSizes(t, l, slices.Repeat([]int{1}, tt.batches)...)
				st := l.State()
				want := State{HasMessages: true, CurrentOffset: uint64(tt.batches - 1), MessagesCount: uint64(tt.batches),
					SizeBytes: uint64(tt.batches) * one, SegmentsCount: tt.wantSegs}
				if st != want {
					t.Fatalf("State %+v, want %+v", st, want)
				}
				if !m.dir {
					return
				}
				files, _ := filepath.Glob(filepath.Join(dir, "*"+segmentExt))
				if uint32(len(files)) != tt.wantSegs {
					t.Fatalf("%d segment files, want %d", len(files), tt.wantSegs)
				}
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
				l2 := openLog(t, m, opts)
				if st2 := l2.State(); st2 != want {
					t.Fatalf("reopened: %+v, want %+v", st2, want)
				}
				out, n := l2.Poll(nil, 0, 1000)
				if int(n) != tt.batches || checkMessages(t, out, 0, 0) != tt.batches {
					t.Fatalf("reopened poll: %d", n)
				}
			})
		}
	}
}

func TestRetention(t *testing.T) {
	one := batchLen(1)
	// Every test appends 6 one-message batches, two per segment, at
	// clock 100, 200, ..., 600: sealed segments [0 1] (newest ts 200),
	// [2 3] (400), [4 5] (600), then an empty active segment.
	tests := []struct {
		name        string
		expiry      uint64
		maxSize     uint64
		now         uint64
		pin         *uint64
		wantDeleted int
		wantFirst   uint64
	}{
		{"nothing configured", 0, 0, 10_000, nil, 0, 0},
		{"sentinels", math.MaxUint64, math.MaxUint64, 10_000, nil, 0, 0},
		{"nothing expired yet", 100, 0, 250, nil, 0, 0},
		{"boundary not expired", 100, 0, 300, nil, 0, 0},
		{"oldest expired", 100, 0, 301, nil, 1, 2},
		{"two expired", 100, 0, 501, nil, 2, 4},
		{"all sealed expired", 100, 0, 10_000, nil, 3, 6},
		{"huge expiry", math.MaxUint64 - 1, 0, math.MaxUint64, nil, 0, 0},
		{"size under cap", 0, 6 * one, 0, nil, 0, 0},
		{"size over by one", 0, 6*one - 1, 0, nil, 1, 2},
		{"size cap small", 0, 2 * one, 0, nil, 2, 4},
		{"size cap tiny: never the active", 0, 1, 0, nil, 3, 6},
		{"pinned at 0", 100, 0, 10_000, ptr(0), 0, 0},
		{"pinned at end of first", 100, 0, 10_000, ptr(1), 1, 2},
		{"pinned mid second", 100, 0, 10_000, ptr(2), 1, 2},
		{"pinned at end of second", 0, 1, 0, ptr(3), 2, 4},
		{"pinned beyond", 0, 1, 0, ptr(100), 3, 6},
	}
	for _, m := range modes {
		for _, tt := range tests {
			t.Run(m.name+"/"+tt.name, func(t *testing.T) {
				c := newClock(0)
				l := openLog(t, m, Options{Now: c.Now, SegmentSize: 2 * one, MessageExpiry: 12345})
				for i := range 6 {
					c.set(uint64(i+1) * 100)
					appendSizes(t, l, 1)
				}
				l.SetRetention(tt.expiry, tt.maxSize)
				if tt.pin != nil {
					l.SetPinned(*tt.pin, true)
				}
				c.set(tt.now)
				got, err := l.ApplyRetention()
				if err != nil || got != tt.wantDeleted {
					t.Fatalf("ApplyRetention = %d, %v; want %d", got, err, tt.wantDeleted)
				}
				checkAfterDelete(t, l, tt.wantDeleted, tt.wantFirst)
			})
		}
	}
}

func ptr(v uint64) *uint64 { return &v }

// checkAfterDelete checks a log of 6 one-message batches, two per segment,
// after deleting `deleted` segments.
func checkAfterDelete(t *testing.T, l *Log, deleted int, wantFirst uint64) {
	t.Helper()
	st := l.State()
	want := State{HasMessages: wantFirst < 6, FirstOffset: wantFirst, CurrentOffset: 5,
		MessagesCount: 6 - wantFirst, SizeBytes: (6 - wantFirst) * batchLen(1), SegmentsCount: uint32(4 - deleted)}
	if st != want {
		t.Fatalf("State %+v, want %+v", st, want)
	}
	out, n := l.Poll(nil, 0, 100)
	if uint64(n) != 6-wantFirst || checkMessages(t, out, 0, wantFirst) != int(n) {
		t.Fatalf("poll from 0: %d messages", n)
	}
	if base := appendSizes(t, l, 1)[0]; base != 6 {
		t.Fatalf("next append at %d, want 6", base)
	}
}

func TestDeleteSegments(t *testing.T) {
	tests := []struct {
		name        string
		n           uint32
		pin         *uint64
		wantDeleted int
		wantFirst   uint64
	}{
		{"zero", 0, nil, 0, 0},
		{"one", 1, nil, 1, 2},
		{"two", 2, nil, 2, 4},
		{"all sealed", 3, nil, 3, 6},
		{"more than exist", math.MaxUint32, nil, 3, 6},
		{"pinned", 3, ptr(2), 1, 2},
		{"pinned below", 3, ptr(0), 0, 0},
	}
	for _, m := range modes {
		for _, tt := range tests {
			t.Run(m.name+"/"+tt.name, func(t *testing.T) {
				dir := ""
				if m.dir {
					dir = filepath.Join(t.TempDir(), "p")
				}
				l := openLog(t, m, Options{Dir: dir, SegmentSize: 2 * batchLen(1)})
				appendSizes(t, l, 1, 1, 1, 1, 1, 1)
				if tt.pin != nil {
					l.SetPinned(*tt.pin, true)
				}
				got, err := l.DeleteSegments(tt.n)
				if err != nil || got != tt.wantDeleted {
					t.Fatalf("DeleteSegments = %d, %v; want %d", got, err, tt.wantDeleted)
				}
				if m.dir {
					files, _ := filepath.Glob(filepath.Join(dir, "*"+segmentExt))
					if len(files) != 4-tt.wantDeleted {
						t.Fatalf("%d files left, want %d", len(files), 4-tt.wantDeleted)
					}
				}
				checkAfterDelete(t, l, tt.wantDeleted, tt.wantFirst)
				if m.dir {
					// The deletion survives a reopen.
					st := l.State()
					if err := l.Close(); err != nil {
						t.Fatal(err)
					}
					l2 := openLog(t, m, Options{Dir: dir, SegmentSize: 2 * batchLen(1)})
					if got := l2.State(); got != st {
						t.Fatalf("reopened %+v, want %+v", got, st)
					}
				}
			})
		}
	}
}

func TestPinCleared(t *testing.T) {
	l := openLog(t, modes[0], Options{SegmentSize: 1})
	appendSizes(t, l, 1, 1, 1)
	l.SetPinned(0, true)
	if n, _ := l.DeleteSegments(10); n != 1 {
		t.Fatalf("pinned at 0 deleted %d, want 1 (segment holding only offset 0)", n)
	}
	if n, _ := l.DeleteSegments(10); n != 0 {
		t.Fatalf("deleted %d past the pin", n)
	}
	if w := l.TruncatedTo(); w != 2 {
		t.Fatalf("watermark %d, want 2 (the newest sealed segment's last offset)", w)
	}
	// The watermark waits for the pin: clearing it deletes the rest at once.
	if n, err := l.SetPinned(0, false); n != 2 || err != nil {
		t.Fatalf("after clearing the pin deleted %d (%v), want 2", n, err)
	}
	if st := l.State(); st.FirstOffset != 3 || st.SegmentsCount != 1 {
		t.Fatalf("after the released trim: %+v", st)
	}
}

// TestTruncateWatermark: the watermark never goes down, is enforced as the
// pin moves up (only up to itself), and Purge clears it.
func TestTruncateWatermark(t *testing.T) {
	l := openLog(t, modes[0], Options{SegmentSize: 1})
	appendSizes(t, l, 1, 1, 1, 1, 1) // sealed [0] [1] [2] [3] [4], active empty
	if end, ok := l.SealedEnd(0); ok {
		t.Fatalf("SealedEnd(0) = %d, true", end)
	}
	if end, ok := l.SealedEnd(2); !ok || end != 1 {
		t.Fatalf("SealedEnd(2) = %d, %v; want 1", end, ok)
	}
	if end, ok := l.SealedEnd(math.MaxUint32); !ok || end != 4 {
		t.Fatalf("SealedEnd(max) = %d, %v; want 4", end, ok)
	}
	l.SetPinned(0, true)
	if n, _ := l.Truncate(2); n != 1 {
		t.Fatalf("Truncate(2) pinned at 0 deleted %d, want 1", n)
	}
	if n, _ := l.Truncate(1); n != 0 || l.TruncatedTo() != 2 {
		t.Fatalf("a lower Truncate deleted %d, watermark %d", n, l.TruncatedTo())
	}
	// The pin moves past the watermark: only what the watermark covers goes.
	if n, _ := l.SetPinned(3, true); n != 2 {
		t.Fatalf("pin 3 released %d, want 2 (offsets 1, 2)", n)
	}
	if st := l.State(); st.FirstOffset != 3 {
		t.Fatalf("first offset %d, want 3", st.FirstOffset)
	}
	if err := l.Purge(); err != nil {
		t.Fatal(err)
	}
	if l.TruncatedTo() != 0 {
		t.Fatal("Purge kept the watermark")
	}
	appendSizes(t, l, 1, 1)
	if n, _ := l.SetPinned(0, false); n != 0 {
		t.Fatalf("after Purge, releasing the pin deleted %d", n)
	}
}

// durableLog appends a known set of batches to a file-backed log.
func durableLog(t *testing.T, dir string, fsync bool) (*Log, []byte) {
	t.Helper()
	l, err := Open(Options{Dir: dir, PartitionID: 5, EnforceFsync: fsync, SegmentSize: 4 * batchLen(3)}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	appendSizes(t, l, slices.Repeat([]int{3}, 10)...)
	out, n := l.Poll(nil, 0, 1000)
	if n != 30 {
		t.Fatalf("poll %d", n)
	}
	return l, out
}

func reopen(t *testing.T, dir string) (*Log, *bytes.Buffer) {
	t.Helper()
	var logs bytes.Buffer
	l, err := Open(Options{Dir: dir, PartitionID: 5, SegmentSize: 4 * batchLen(3)}, zerolog.New(&logs))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l, &logs
}

func TestDurability(t *testing.T) {
	for _, fsync := range []bool{true, false} {
		name := "no fsync"
		if fsync {
			name = "fsync"
		}
		t.Run(name+"/close and reopen", func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "p")
			l, want := durableLog(t, dir, fsync)
			st := l.State()
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			l2, logs := reopen(t, dir)
			if got := l2.State(); got != st {
				t.Fatalf("reopened %+v, want %+v", got, st)
			}
			if got, _ := l2.Poll(nil, 0, 1000); !bytes.Equal(got, want) {
				t.Fatal("reopened log serves different bytes")
			}
			if strings.Contains(logs.String(), `"level":"warn"`) {
				t.Fatalf("clean reopen logged warnings: %s", logs)
			}
			if base := appendSizes(t, l2, 2)[0]; base != 30 {
				t.Fatalf("append after reopen at %d", base)
			}
		})
		t.Run(name+"/crash", func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "p")
			l, want := durableLog(t, dir, fsync)
			defer l.Close()
			crashed := copyDir(t, dir)
			l2, _ := reopen(t, crashed)
			if got := l2.State(); got != l.State() {
				t.Fatalf("after crash %+v, want %+v", got, l.State())
			}
			if got, _ := l2.Poll(nil, 0, 1000); !bytes.Equal(got, want) {
				t.Fatal("log after crash serves different bytes")
			}
		})
	}
}

// copyDir copies the regular files of dir into a new directory, as the disk
// would look after the process died.
func copyDir(t *testing.T, dir string) string {
	t.Helper()
	to := filepath.Join(t.TempDir(), "copy")
	if err := os.Mkdir(to, 0o755); err != nil {
		t.Fatal(err)
	}
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, de := range des {
		b, err := os.ReadFile(filepath.Join(dir, de.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, de.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return to
}

func TestRecoverCorruptTail(t *testing.T) {
	// 10 batches of 3 messages, 4 per segment: files 0 (4), 12 (4), 24 (2).
	bl := int64(batchLen(3))
	last := func(dir string) string { return filepath.Join(dir, "00000000000000000024.log") }
	tests := []struct {
		name     string
		corrupt  func(t *testing.T, path string)
		wantMsgs uint64
		wantWarn bool
		wantSize int64 // of the last file after recovery
	}{
		{"intact", func(*testing.T, string) {}, 30, false, 2 * bl},
		{"cut mid batch", func(t *testing.T, p string) { truncate(t, p, 2*bl-100) }, 27, true, bl},
		{"cut mid header", func(t *testing.T, p string) { truncate(t, p, bl+10) }, 27, true, bl},
		{"cut after header", func(t *testing.T, p string) { truncate(t, p, bl+iggy.BatchHeaderSize) }, 27, true, bl},
		{"cut to one byte", func(t *testing.T, p string) { truncate(t, p, 1) }, 24, true, 0},
		{"flip payload byte", func(t *testing.T, p string) { flip(t, p, 2*bl-5) }, 27, true, bl},
		{"flip base_offset", func(t *testing.T, p string) { flip(t, p, bl+hdrBaseOffset) }, 27, true, bl},
		{"flip batch checksum", func(t *testing.T, p string) { flip(t, p, bl+40) }, 27, true, bl},
		{"flip first batch", func(t *testing.T, p string) { flip(t, p, 300) }, 24, true, 0},
		{"huge batch_length", func(t *testing.T, p string) { putU64(t, p, bl+hdrLength, math.MaxUint64) }, 27, true, bl},
		{"garbage after", func(t *testing.T, p string) { appendBytes(t, p, bytes.Repeat([]byte{0xAB}, 1000)) }, 30, true, 2 * bl},
		{"zeros after", func(t *testing.T, p string) { appendBytes(t, p, make([]byte, 4096)) }, 30, true, 2 * bl},
		{"duplicated last batch", func(t *testing.T, p string) {
			b, _ := os.ReadFile(p)
			appendBytes(t, p, b[bl:])
		}, 30, true, 2 * bl},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "p")
			l, want := durableLog(t, dir, false)
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			tt.corrupt(t, last(dir))
			l2, logs := reopen(t, dir)
			st := l2.State()
			if st.MessagesCount != tt.wantMsgs || st.CurrentOffset != tt.wantMsgs-1 {
				t.Fatalf("recovered %+v, want %d messages", st, tt.wantMsgs)
			}
			if warned := strings.Contains(logs.String(), `"level":"warn"`); warned != tt.wantWarn {
				t.Fatalf("warning logged: %v, want %v: %s", warned, tt.wantWarn, logs)
			}
			got, n := l2.Poll(nil, 0, 1000)
			if uint64(n) != tt.wantMsgs || !bytes.HasPrefix(want, got) {
				t.Fatal("recovered log is not a prefix of the original")
			}
			if fi, err := os.Stat(last(dir)); err != nil || fi.Size() != tt.wantSize {
				t.Fatalf("last file after recovery: %v %v, want size %d", fi.Size(), err, tt.wantSize)
			}
			if base := appendSizes(t, l2, 1)[0]; base != tt.wantMsgs {
				t.Fatalf("append after recovery at %d, want %d", base, tt.wantMsgs)
			}
			out, n := l2.Poll(nil, 0, 1000)
			if checkMessages(t, out, 5, 0) != int(tt.wantMsgs)+1 || uint64(n) != tt.wantMsgs+1 {
				t.Fatal("log after recovery and append")
			}
		})
	}
}

func TestRecoverCorruptMiddleSegment(t *testing.T) {
	bl := int64(batchLen(3))
	dir := filepath.Join(t.TempDir(), "p")
	l, want := durableLog(t, dir, false)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	flip(t, filepath.Join(dir, "00000000000000000012.log"), 2*bl+7) // third batch of the second file
	l2, logs := reopen(t, dir)
	st := l2.State()
	if st.MessagesCount != 18 || st.SegmentsCount != 2 {
		t.Fatalf("recovered %+v, want 18 messages in 2 segments", st)
	}
	got, _ := l2.Poll(nil, 0, 1000)
	if !bytes.HasPrefix(want, got) {
		t.Fatal("not a prefix")
	}
	if _, err := os.Stat(filepath.Join(dir, "00000000000000000024.log.corrupt")); err != nil {
		t.Fatalf("later segment not set aside: %v", err)
	}
	if !strings.Contains(logs.String(), "set aside") {
		t.Fatalf("no log about the set-aside segment: %s", logs)
	}
	if base := appendSizes(t, l2, 1)[0]; base != 18 {
		t.Fatalf("append at %d", base)
	}
}

func TestRecoverGap(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "p")
	l, _ := durableLog(t, dir, false)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "00000000000000000012.log")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("ignored"), 0o644); err != nil {
		t.Fatal(err)
	}
	l2, _ := reopen(t, dir)
	// File 0 is full, so a new active segment 12 starts after it.
	if st := l2.State(); st.MessagesCount != 12 || st.CurrentOffset != 11 || st.SegmentsCount != 2 {
		t.Fatalf("recovered %+v", st)
	}
}

func TestRecoverPartitionMismatch(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "p")
	l, _ := durableLog(t, dir, false)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	_, err := Open(Options{Dir: dir, PartitionID: 6}, testLogger(t))
	if !errors.Is(err, ErrPartitionMismatch) {
		t.Fatalf("err = %v, want ErrPartitionMismatch", err)
	}
	l2, _ := reopen(t, dir) // nothing was destroyed
	if st := l2.State(); st.MessagesCount != 30 {
		t.Fatalf("after a mismatched open: %+v", st)
	}
}

func TestRecoverFirstSegmentAboveZero(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "p")
	l, want := durableLog(t, dir, false)
	if n, err := l.DeleteSegments(1); n != 1 || err != nil {
		t.Fatal(n, err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l2, _ := reopen(t, dir)
	st := l2.State()
	if st.FirstOffset != 12 || st.MessagesCount != 18 {
		t.Fatalf("%+v", st)
	}
	got, _ := l2.Poll(nil, 0, 1000)
	if !bytes.HasSuffix(want, got) || checkMessages(t, got, 5, 12) != 18 {
		t.Fatal("poll after reopen")
	}
}

func truncate(t *testing.T, p string, size int64) {
	t.Helper()
	if err := os.Truncate(p, size); err != nil {
		t.Fatal(err)
	}
}

func flip(t *testing.T, p string, at int64) {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	b[at] ^= 0x40
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func putU64(t *testing.T, p string, at int64, v uint64) {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	binary.LittleEndian.PutUint64(b[at:], v)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func appendBytes(t *testing.T, p string, extra []byte) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(extra); err != nil {
		t.Fatal(err)
	}
}

func TestClosedAndRemoved(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			l := openLog(t, m, Options{})
			appendSizes(t, l, 2)
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			if err := l.Close(); err != nil {
				t.Fatalf("second Close: %v", err)
			}
			if _, err := l.Append(makeBatch(t, 2, 1, 8)); !errors.Is(err, ErrClosed) {
				t.Fatalf("Append after Close: %v", err)
			}
			if _, n := l.Poll(nil, 0, 10); n != 0 {
				t.Fatal("Poll after Close returned data")
			}
			if _, n := l.PollTimestamp(nil, 0, 10); n != 0 {
				t.Fatal("PollTimestamp after Close returned data")
			}
			for name, err := range map[string]error{"Purge": l.Purge(), "Sync": l.Sync()} {
				if !errors.Is(err, ErrClosed) {
					t.Fatalf("%s after Close: %v", name, err)
				}
			}
			if _, err := l.ApplyRetention(); !errors.Is(err, ErrClosed) {
				t.Fatal(err)
			}
			if _, err := l.DeleteSegments(1); !errors.Is(err, ErrClosed) {
				t.Fatal(err)
			}
		})
	}
}

func TestRemove(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "p")
	l := openLog(t, modes[1], Options{Dir: dir, EnforceFsync: true})
	appendSizes(t, l, 2, 3)
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := l.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("directory still there: %v", err)
	}
	if _, err := l.Append(makeBatch(t, 0, 1, 8)); !errors.Is(err, ErrClosed) {
		t.Fatal(err)
	}
	if st := l.State(); st.HasMessages {
		t.Fatalf("%+v", st)
	}
}

func TestConcurrent(t *testing.T) {
	const writers, batches, per = 2, 100, 3
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			l := openLog(t, m, Options{SegmentSize: 8 * batchLen(per)})
			batch := makeBatch(t, 0, per, 40) // payload offsets are not checked here
			var wg sync.WaitGroup
			var done atomic.Bool
			errs := make(chan error, writers+2)
			for range writers {
				wg.Go(func() {
					for range batches {
						if _, err := l.Append(batch); err != nil {
							errs <- err
							return
						}
					}
				})
			}
			var readers sync.WaitGroup
			for r := range 2 {
				readers.Go(func() {
					var buf []byte
					for !done.Load() {
						st := l.State()
						var n uint32
						buf, n = l.Poll(buf[:0], uint64(r*7)%(st.CurrentOffset+1), 50)
						it := iggy.NewMessageIter(buf)
						k := uint32(0)
						prev := uint64(0)
						for it.Next() {
							if k > 0 && it.Message().Offset != prev+1 {
								errs <- errors.New("offsets not contiguous")
								return
							}
							prev = it.Message().Offset
							k++
						}
						if it.Err() != nil || k != n {
							errs <- errors.New("malformed poll")
							return
						}
						_, _ = l.ApplyRetention()
					}
				})
			}
			wg.Wait()
			done.Store(true)
			readers.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			st := l.State()
			if st.MessagesCount != writers*batches*per || st.CurrentOffset != writers*batches*per-1 {
				t.Fatalf("%+v", st)
			}
			out, n := l.Poll(nil, 0, math.MaxUint32)
			if uint64(n) != st.MessagesCount || iggy.CheckBatches(out) != nil {
				t.Fatal("final poll")
			}
		})
	}
}

func TestParseSegmentName(t *testing.T) {
	tests := []struct {
		name string
		base uint64
		ok   bool
	}{
		{"00000000000000000000.log", 0, true},
		{"00000000000000001024.log", 1024, true},
		{"18446744073709551615.log", math.MaxUint64, true},
		{"18446744073709551616.log", 0, false},
		{"0000000000000000000.log", 0, false},
		{"0000000000000000000a.log", 0, false},
		{"00000000000000000000.log.corrupt", 0, false},
		{"00000000000000000000.idx", 0, false},
		{"+0000000000000000000.log", 0, false},
	}
	for _, tt := range tests {
		base, ok := parseSegmentName(tt.name)
		if base != tt.base || ok != tt.ok {
			t.Errorf("%q: %d %v, want %d %v", tt.name, base, ok, tt.base, tt.ok)
		}
	}
}

func TestPollAllocs(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("allocation counts")
	}
	for _, m := range modes {
		l := openLog(t, m, Options{SegmentSize: 4 * batchLen(10)})
		appendSizes(t, l, slices.Repeat([]int{10}, 12)...)
		buf := make([]byte, 0, 1<<16)
		tests := []struct {
			name  string
			start uint64
			count uint32
		}{
			{"whole batches", 10, 30},
			{"slices", 15, 30},
			{"across segments", 35, 30},
			{"timestamp", 0, 30},
		}
		for _, tt := range tests {
			t.Run(m.name+"/"+tt.name, func(t *testing.T) {
				allocs := testing.AllocsPerRun(50, func() {
					var n uint32
					if tt.name == "timestamp" {
						buf, n = l.PollTimestamp(buf[:0], tt.start, tt.count)
					} else {
						buf, n = l.Poll(buf[:0], tt.start, tt.count)
					}
					if n != tt.count {
						t.Fatalf("n = %d", n)
					}
				})
				if allocs != 0 {
					t.Fatalf("%v allocations per poll into a large enough buffer", allocs)
				}
			})
		}
	}
}
