package wire

import (
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"
	"testing/quick"
)

// TestPrimitivesAgainstEncodingBinary checks every fixed-width primitive
// against the standard library (a differential test, as kbin does).
func TestPrimitivesAgainstEncodingBinary(t *testing.T) {
	check := func(name string, f any) {
		t.Helper()
		if err := quick.Check(f, nil); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	check("u16", func(v uint16) bool {
		b := AppendU16LE(nil, v)
		r := NewReader(b, "t")
		return binary.LittleEndian.Uint16(b) == v && r.U16LE("", "v") == v && r.Err() == nil && r.Remaining() == 0
	})
	check("u32", func(v uint32) bool {
		b := AppendU32LE(nil, v)
		r := NewReader(b, "t")
		return binary.LittleEndian.Uint32(b) == v && r.U32LE("", "v") == v && r.Off() == 4
	})
	check("u64", func(v uint64) bool {
		b := AppendU64LE(nil, v)
		r := NewReader(b, "t")
		return binary.LittleEndian.Uint64(b) == v && r.U64LE("", "v") == v
	})
	check("u128", func(lo, hi uint64) bool {
		b := AppendU128LE(nil, U128{Lo: lo, Hi: hi})
		r := NewReader(b, "t")
		return binary.LittleEndian.Uint64(b) == lo && binary.LittleEndian.Uint64(b[8:]) == hi && r.U128LE("", "v") == U128{lo, hi}
	})
	check("i64", func(v int64) bool {
		r := NewReader(AppendI64LE(nil, v), "t")
		return r.I64LE("", "v") == v
	})
	check("i32/i16/i8", func(a int32, b int16, c int8) bool {
		buf := AppendI8(AppendI16LE(AppendI32LE(nil, a), b), c)
		r := NewReader(buf, "t")
		return r.I32LE("", "a") == a && r.I16LE("", "b") == b && r.I8("", "c") == c && r.Remaining() == 0
	})
	check("f64", func(v float64) bool {
		r := NewReader(AppendF64LE(nil, v), "t")
		got := r.F64LE("", "v")
		return got == v || (math.IsNaN(v) && math.IsNaN(got))
	})
	check("f32", func(v float32) bool {
		r := NewReader(AppendF32LE(nil, v), "t")
		got := r.F32LE("", "v")
		return got == v || (got != got && v != v)
	})
}

func TestBoolAndFlag(t *testing.T) {
	r := NewReader([]byte{2, 2, 1, 0}, "t")
	if !r.Bool("", "a") || r.Flag("", "b") || !r.Flag("", "c") || r.Bool("", "d") {
		t.Fatal("bool: nonzero is true; flag: only 1 is true")
	}
	if got := AppendBool(AppendBool(nil, true), false); got[0] != 1 || got[1] != 0 {
		t.Fatalf("AppendBool = %v", got)
	}
}

// TestStickyError: the first failure is kept with message, field path and
// offset; later reads return zero values and do not move.
func TestStickyError(t *testing.T) {
	r := NewReader([]byte{1, 2, 3, 4, 5, 6}, "create_topic.request")
	if r.U32LE("stream_id", "value") != 0x04030201 {
		t.Fatal("first read")
	}
	if v := r.U64LE("", "partitions_count"); v != 0 {
		t.Fatal("failed read must return zero")
	}
	if r.U8("", "x") != 0 || r.Bytes("", "y", 1) != nil || r.Rest("", "z") != nil {
		t.Fatal("reads after a failure return zero values")
	}
	var de *DecodeError
	if !errors.As(r.Err(), &de) || !errors.Is(r.Err(), ErrShortBuffer) {
		t.Fatalf("err = %v", r.Err())
	}
	if de.Field != "partitions_count" || de.Offset != 4 || de.Need != 8 || de.Have != 2 {
		t.Fatalf("DecodeError = %+v", de)
	}
	want := "create_topic.request.partitions_count at offset 4: codec: short buffer (need 8, have 2)"
	if de.Error() != want {
		t.Fatalf("Error() = %q, want %q", de.Error(), want)
	}
}

func TestLengthsCheckedBeforeSlicing(t *testing.T) {
	r := NewReader(make([]byte, 10), "m")
	if b := r.Bytes("p", "f", math.MaxInt32); b != nil || !errors.Is(r.Err(), ErrShortBuffer) {
		t.Fatal("a huge length must fail, not slice")
	}
	r = NewReader(make([]byte, 10), "m")
	if b := r.Bytes("p", "f", -1); b != nil || !errors.Is(r.Err(), ErrShortBuffer) {
		t.Fatal("a negative length must fail")
	}
	r = NewReader([]byte{0xff, 0xfe}, "m")
	if s := r.UTF8("p", "name", 2); s != "" || !errors.Is(r.Err(), ErrInvalidUTF8) || !strings.Contains(r.Err().Error(), "m.p.name at offset 0") {
		t.Fatalf("invalid UTF-8: %v", r.Err())
	}
}

func TestBytesAliasAndCapacity(t *testing.T) {
	src := []byte{1, 2, 3, 4}
	r := NewReader(src, "m")
	b := r.Bytes("", "f", 2)
	_ = append(b, 9) // must not overwrite src[2]
	if src[2] != 3 {
		t.Fatal("Bytes must cap the slice so appends cannot clobber the input")
	}
	if rest := r.Rest("", "r"); len(rest) != 2 || rest[0] != 3 {
		t.Fatal("Rest")
	}
}

func TestReaderDoesNotAllocateOnSuccess(t *testing.T) {
	buf := AppendU64LE(AppendU32LE(nil, 7), 9)
	allocs := testing.AllocsPerRun(100, func() {
		r := NewReader(buf, "m")
		_ = r.U32LE("a.b", "c")
		_ = r.U64LE("a.b", "d")
		if r.Err() != nil {
			t.Fatal(r.Err())
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations", allocs)
	}
}
