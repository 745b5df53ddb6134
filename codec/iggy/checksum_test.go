package iggy

import (
	"encoding/binary"
	"testing"
)

func TestXXH32(t *testing.T) {
	seq := make([]byte, 101)
	for i := range seq {
		seq[i] = byte(i)
	}
	// Expected values from the reference C implementation (libxxhash 0.8).
	tests := []struct {
		in   []byte
		seed uint32
		want uint32
	}{
		{nil, 0, 0x02CC5D05},
		{[]byte("a"), 0, 0x550D7456},
		{[]byte("abc"), 0, 0x32D153FF},
		{[]byte("abcd"), 0, 0xA3643705},
		{[]byte("user-42"), 0, 0x61819A7E},
		{[]byte("my-consumer"), 0, 0x7E13444F},
		{[]byte("0123456789abcdef"), 0, 0xC2C45B69},
		{[]byte("The quick brown fox jumps over the lazy dog"), 0, 0xE85EA4DE},
		{[]byte("The quick brown fox jumps over the lazy dog"), 0x9747B28C, 0xC8579D72},
		{seq, 1, 0x4EDDDD26},
	}
	for _, tc := range tests {
		if got := XXH32(tc.in, tc.seed); got != tc.want {
			t.Errorf("XXH32(%q, %#x) = %#08x, want %#08x", tc.in, tc.seed, got, tc.want)
		}
	}
}

func TestXXH32Vector(t *testing.T) {
	want := binary.LittleEndian.Uint32(vec(t, "xxh32_consumer_name_my_consumer"))
	if got := XXH32([]byte("my-consumer"), 0); got != want {
		t.Fatalf("XXH32(my-consumer) = %#x, vector says %#x", got, want)
	}
}

func TestXXH3(t *testing.T) {
	tests := []struct {
		in   string
		want uint64
	}{
		{"", 0x2D06800538D394C2},
		{"abc", 0x78AF5F94892F3950},
	}
	for _, tc := range tests {
		if got := XXH3([]byte(tc.in)); got != tc.want {
			t.Errorf("XXH3(%q) = %#x, want %#x", tc.in, got, tc.want)
		}
	}
}

func TestChecksumAllocs(t *testing.T) {
	b := make([]byte, 1000)
	if n := testing.AllocsPerRun(100, func() { _ = XXH32(b, 0); _ = XXH3(b) }); n != 0 {
		t.Fatalf("%.1f allocs", n)
	}
}

func BenchmarkXXH32(b *testing.B) {
	key := []byte("customer-000123")
	b.SetBytes(int64(len(key)))
	b.ReportAllocs()
	for b.Loop() {
		_ = XXH32(key, 0)
	}
}
