package plog

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/rs/zerolog"

	"github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

// validSegment returns the bytes of a segment file holding batches of the
// given sizes from offset base, as a log with partition id pid stores them.
func validSegment(t testing.TB, pid uint32, base uint64, sizes ...int) []byte {
	var out []byte
	next, ts := base, uint64(1_000)
	for _, n := range sizes {
		b := makeBatch(t, next, n, 16)
		iggy.StampBatch(b, pid, next, ts)
		out = append(out, b...)
		next += uint64(n)
		ts += 10
	}
	return out
}

// FuzzRecover writes arbitrary bytes as a segment file (named after base)
// and opens the log: Open must not panic, and what it recovers must be a
// well-formed log that serves valid batch records and takes new appends.
func FuzzRecover(f *testing.F) {
	good := validSegment(f, 1, 0, 1, 3, 2)
	f.Add([]byte{}, uint64(0))
	f.Add(good, uint64(0))
	f.Add(validSegment(f, 1, 40, 2, 2), uint64(40))
	f.Add(good, uint64(7)) // name does not match the first base_offset
	f.Add(good[:len(good)-3], uint64(0))
	f.Add(good[:300], uint64(0))
	f.Add(append(good[:len(good):len(good)], 0xff, 0xff), uint64(0))
	f.Add(validSegment(f, 2, 0, 1), uint64(0)) // other partition
	huge := append([]byte(nil), good...)
	binary.LittleEndian.PutUint64(huge[hdrLength:], math.MaxUint64)
	f.Add(huge, uint64(0))
	flipped := append([]byte(nil), good...)
	flipped[len(flipped)-1] ^= 1
	f.Add(flipped, uint64(0))
	f.Add(validSegment(f, 1, math.MaxUint64-3, 1, 1), uint64(math.MaxUint64-3))

	root := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte, base uint64) {
		dir := filepath.Join(root, "p")
		defer os.RemoveAll(dir)
		checkRecover(t, dir, data, base)
	})
}

// checkRecover is the body of FuzzRecover.
func checkRecover(t *testing.T, dir string, data []byte, base uint64) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	name := filepath.Join(dir, fmtSegmentName(base))
	if err := os.WriteFile(name, data, 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := Open(Options{Dir: dir, PartitionID: 1, SegmentSize: 1 << 20}, zerolog.Nop())
	if err != nil {
		return // a partition mismatch; nothing else is refused
	}
	defer l.Close()
	st := l.State()
	if st.HasMessages != (st.MessagesCount > 0) || st.SegmentsCount == 0 {
		t.Fatalf("inconsistent state %+v", st)
	}
	fi, err := os.Stat(name)
	if err != nil {
		t.Fatal(err)
	}
	if uint64(fi.Size()) != st.SizeBytes || fi.Size() > int64(len(data)) {
		t.Fatalf("file %d bytes, state %+v, input %d", fi.Size(), st, len(data))
	}
	out, n := l.Poll(nil, st.FirstOffset, math.MaxUint32)
	got, err := iggy.CountBatchMessages(out)
	if err != nil || got != uint64(n) || uint64(n) != st.MessagesCount {
		t.Fatalf("poll: %d messages (%d counted, %v), state %+v", n, got, err, st)
	}
	if string(out) != string(data[:len(out)]) {
		t.Fatal("recovered records are not a prefix of the file")
	}
	for rest := out; len(rest) > 0; {
		k := binary.LittleEndian.Uint64(rest[hdrLength:])
		if err := iggy.CheckBatch(rest[:k]); err != nil {
			t.Fatalf("served record fails CheckBatch: %v", err)
		}
		rest = rest[k:]
	}
	if st.HasMessages {
		// A slice from the middle must be well-formed too.
		mid, m := l.Poll(nil, st.FirstOffset+st.MessagesCount/2, 2)
		if c, err := iggy.CountBatchMessages(mid); err != nil || c != uint64(m) || m == 0 {
			t.Fatalf("mid poll: %d %d %v", m, c, err)
		}
	}
	next := st.FirstOffset // the offset the next message gets in an empty log
	if st.HasMessages {
		next = st.CurrentOffset + 1
	}
	if next > math.MaxUint64-10 {
		return
	}
	got2, err := l.Append(makeBatch(t, next, 2, 8))
	if err != nil || got2 != next {
		t.Fatalf("append after recovery: %d %v, want %d", got2, err, next)
	}
}

func fmtSegmentName(base uint64) string {
	var b [20]byte
	for i := len(b) - 1; i >= 0; i-- {
		b[i] = byte('0' + base%10)
		base /= 10
	}
	return string(b[:]) + segmentExt
}

// BenchmarkAppend appends batches of 100 messages of 1 KiB.
func BenchmarkAppend(b *testing.B) {
	batch := makeBatch(b, 0, 100, 1024)
	for _, m := range modes {
		b.Run(m.name, func(b *testing.B) {
			opts := Options{SegmentSize: 64 << 20}
			if m.dir {
				opts.Dir = b.TempDir()
			}
			l, err := Open(opts, zerolog.Nop())
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			b.SetBytes(int64(len(batch)))
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := l.Append(batch); err != nil {
					b.Fatal(err)
				}
				// Keep memory and disk bounded over long runs.
				if i++; i%500 == 0 {
					b.StopTimer()
					if err := l.Purge(); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
			}
		})
	}
}

// BenchmarkPoll polls 100 messages of 1 KiB from a log of batches of 100:
// aligned (one whole stored batch) and unaligned (two slices).
func BenchmarkPoll(b *testing.B) {
	batch := makeBatch(b, 0, 100, 1024)
	for _, m := range modes {
		opts := Options{SegmentSize: 16 << 20}
		if m.dir {
			opts.Dir = b.TempDir()
		}
		l, err := Open(opts, zerolog.Nop())
		if err != nil {
			b.Fatal(err)
		}
		for range 200 {
			if _, err := l.Append(batch); err != nil {
				b.Fatal(err)
			}
		}
		for _, shift := range []uint64{0, 50} {
			name := m.name + "/aligned"
			if shift != 0 {
				name = m.name + "/unaligned"
			}
			b.Run(name, func(b *testing.B) {
				buf := make([]byte, 0, 2*len(batch))
				b.SetBytes(int64(len(batch)))
				b.ReportAllocs()
				i := uint64(0)
				for b.Loop() {
					var n uint32
					buf, n = l.Poll(buf[:0], (i%199)*100+shift, 100)
					if n != 100 {
						b.Fatalf("n = %d", n)
					}
					i++
				}
			})
		}
		_ = l.Close()
	}
}

// BenchmarkRecover measures Open of a directory holding 200 batches of 100
// messages of 1 KiB (about 21 MB), which rebuilds the index by checking
// every batch.
func BenchmarkRecover(b *testing.B) {
	dir := b.TempDir()
	l, err := Open(Options{Dir: dir, SegmentSize: 8 << 20}, zerolog.Nop())
	if err != nil {
		b.Fatal(err)
	}
	batch := makeBatch(b, 0, 100, 1024)
	for range 200 {
		if _, err := l.Append(batch); err != nil {
			b.Fatal(err)
		}
	}
	size := l.State().SizeBytes
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for b.Loop() {
		l, err := Open(Options{Dir: dir, SegmentSize: 8 << 20}, zerolog.Nop())
		if err != nil {
			b.Fatal(err)
		}
		if l.State().SizeBytes != size {
			b.Fatal("size")
		}
		_ = l.Close()
	}
}
