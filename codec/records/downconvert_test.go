package records

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"math"
	"testing"
)

// ownBatch encodes a record batch v2 the way BatchWriter does
// (uncompressed); values[i] nil is a null value.
func ownBatch(base, firstTS int64, keys, values [][]byte) []byte {
	var recs []byte
	for i := range values {
		var r []byte
		r = append(r, 0)
		r = binary.AppendVarint(r, int64(i)*10)
		r = binary.AppendVarint(r, int64(i))
		r = appendVarintBytes(r, keys[i])
		r = appendVarintBytes(r, values[i])
		r = binary.AppendVarint(r, 0)
		recs = binary.AppendVarint(recs, int64(len(r)))
		recs = append(recs, r...)
	}
	b := make([]byte, kbHeaderSize, kbHeaderSize+len(recs))
	binary.BigEndian.PutUint64(b[kbBaseOffset:], uint64(base))
	binary.BigEndian.PutUint32(b[kbLength:], uint32(kbHeaderSize-kbLeaderEpoch+len(recs)))
	b[kbMagic] = 2
	binary.BigEndian.PutUint64(b[kbFirstTimestamp:], uint64(firstTS))
	binary.BigEndian.PutUint32(b[kbRecordCount:], uint32(len(values)))
	return append(b, recs...)
}

func appendVarintBytes(b, v []byte) []byte {
	if v == nil {
		return binary.AppendVarint(b, -1)
	}
	return append(binary.AppendVarint(b, int64(len(v))), v...)
}

func TestDownConvert(t *testing.T) {
	keys := [][]byte{[]byte("k0"), nil, {}}
	values := [][]byte{[]byte("v0"), nil, bytes.Repeat([]byte("x"), 100)}
	in := append(ownBatch(40, 1000, keys, values), ownBatch(43, 2000, keys[:1], values[:1])...)
	for _, magic := range []int8{0, 1} {
		prefix := []byte("keep")
		out := DownConvert(append(append([]byte{}, prefix...), in...), len(prefix), magic, math.MaxInt32, true)
		if !bytes.HasPrefix(out, prefix) {
			t.Fatal("prefix lost")
		}
		b := out[len(prefix):]
		wantOffsets := []int64{40, 41, 42, 43}
		wantTS := []int64{1000, 1010, 1020, 2000}
		for i := 0; len(b) > 0; i++ {
			off := int64(binary.BigEndian.Uint64(b))
			size := int(binary.BigEndian.Uint32(b[8:]))
			m := b[12 : 12+size]
			b = b[12+size:]
			if off != wantOffsets[i] || int8(m[4]) != magic || crc32.ChecksumIEEE(m[4:]) != binary.BigEndian.Uint32(m) {
				t.Fatalf("magic %d message %d: offset %d magic %d", magic, i, off, m[4])
			}
			m = m[6:]
			if magic == 1 {
				if ts := int64(binary.BigEndian.Uint64(m)); ts != wantTS[i] {
					t.Fatalf("message %d: ts %d", i, ts)
				}
				m = m[8:]
			}
			k, m := legacyField(m)
			v, m := legacyField(m)
			wk, wv := keys[i%3], values[i%3]
			if len(m) != 0 || (k == nil) != (wk == nil) || !bytes.Equal(k, wk) || (v == nil) != (wv == nil) || !bytes.Equal(v, wv) {
				t.Fatalf("message %d: key %q value %q", i, k, v)
			}
		}
	}
	// The limit keeps whole messages, at least one with atLeastOne.
	if out := DownConvert(append([]byte{}, in...), 0, 1, 10, true); countLegacy(out) != 1 {
		t.Fatalf("limit 10, at least one: %d messages", countLegacy(out))
	}
	if out := DownConvert(append([]byte{}, in...), 0, 1, 10, false); len(out) != 0 {
		t.Fatalf("limit 10: %d bytes", len(out))
	}
	if out := DownConvert(append([]byte{}, in...), 0, 0, 80, false); countLegacy(out) != 2 || len(out) > 80 {
		t.Fatalf("limit 80: %d messages in %d bytes", countLegacy(out), len(out))
	}
}

func legacyField(m []byte) ([]byte, []byte) {
	n := int32(binary.BigEndian.Uint32(m))
	if n < 0 {
		return nil, m[4:]
	}
	return m[4 : 4+n], m[4+n:]
}

func countLegacy(b []byte) int {
	n := 0
	for len(b) >= 12 {
		b = b[12+int(binary.BigEndian.Uint32(b[8:])):]
		n++
	}
	return n
}

// FuzzDownConvert: whatever the bytes, down-conversion neither panics nor
// writes before from.
func FuzzDownConvert(f *testing.F) {
	f.Add(ownBatch(7, 1, [][]byte{[]byte("k")}, [][]byte{[]byte("v")}), 100)
	f.Add([]byte{}, 0)
	f.Add(bytes.Repeat([]byte{0xff}, 70), 1<<20)
	f.Fuzz(func(t *testing.T, in []byte, limit int) {
		dst := append([]byte("head"), in...)
		out := DownConvert(dst, 4, 1, limit, true)
		if len(out) < 4 || string(out[:4]) != "head" {
			t.Fatal("prefix changed")
		}
	})
}
