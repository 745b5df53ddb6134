package iggy

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/kafka-iggy/kafka-iggy/codec/wire"
)

func u32le(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }
func u64le(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }

func TestUserHeadersVector(t *testing.T) {
	block := vec(t, "user_headers_block")
	type pair struct {
		kk HeaderKind
		k  string
		vk HeaderKind
		v  string
	}
	want := []pair{
		{HeaderKindString, "content-type", HeaderKindString, "text/plain"},
		{HeaderKindString, "retries", HeaderKindUint32, string(u32le(3))},
	}
	var got []pair
	it := NewHeaderIter(block)
	for it.Next() {
		kk, k := it.Key()
		vk, v := it.Value()
		got = append(got, pair{kk, string(k), vk, string(v)})
	}
	if err := it.Err(); err != nil {
		t.Fatalf("HeaderIter: %v", err)
	}
	if len(got) != len(want) {
		t.Fatalf("got %d pairs, want %d", len(got), len(want))
	}
	var enc []byte
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("pair %d = %+v, want %+v", i, got[i], want[i])
		}
		enc = AppendHeader(enc, got[i].k, got[i].vk, []byte(got[i].v))
	}
	if !bytes.Equal(enc, block) {
		t.Fatalf("re-encoded block differs\n got %x\nwant %x", enc, block)
	}
	if it.Offset() != len(block) {
		t.Fatalf("Offset %d, want %d", it.Offset(), len(block))
	}
	if err := CheckTLV(block); err != nil {
		t.Fatalf("CheckTLV: %v", err)
	}
	// The user-headers vector is also an acceptable options block.
	if _, err := ParseOptions(block); err != nil {
		t.Fatalf("ParseOptions(user_headers_block): %v", err)
	}
}

func TestOptionsVectors(t *testing.T) {
	block := vec(t, "options_block_golden")
	opts, err := ParseOptions(block)
	if err != nil {
		t.Fatalf("ParseOptions: %v", err)
	}
	want := Options{
		{Key: "enforce_fsync", Kind: HeaderKindBool, Value: []byte{1}},
		{Key: "segment_size", Kind: HeaderKindUint64, Value: u64le(1 << 30)},
	}
	assertOptions(t, opts, want)
	if n := opts.EncodedSize(); n != len(block) {
		t.Fatalf("EncodedSize %d, want %d", n, len(block))
	}
	if enc := opts.AppendTo(nil); !bytes.Equal(enc, block) {
		t.Fatalf("re-encoded\n got %x\nwant %x", enc, block)
	}
	if err := opts.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	// ParseOptions copies: mutating the input leaves the result alone.
	block[len(block)-4] ^= 0xFF
	if !bytes.Equal(opts[1].Value, u64le(1<<30)) {
		t.Fatal("ParseOptions result aliases its input")
	}
	if o, ok := opts.Get("segment_size"); !ok || o.Kind != HeaderKindUint64 {
		t.Fatalf("Get(segment_size) = %+v, %v", o, ok)
	}
	if _, ok := opts.Get("missing"); ok {
		t.Fatal("Get(missing) found something")
	}

	// CREATE_TOPIC carries its options unsorted after stream id (6), partitions
	// count (4) and name (1+6).
	payload := vec(t, "create_topic_payload_with_options")
	tblock := payload[17:]
	topts, err := ParseOptions(tblock)
	if err != nil {
		t.Fatalf("ParseOptions(create_topic options): %v", err)
	}
	assertOptions(t, topts, Options{
		{Key: "message_expiry", Kind: HeaderKindString, Value: []byte("7 days")},
		{Key: "max_topic_size", Kind: HeaderKindUint64, Value: u64le(2 << 30)},
	})
	if enc := topts.AppendTo(nil); !bytes.Equal(enc, tblock) {
		t.Fatalf("re-encoded topic options differ")
	}
	SortOptions(topts)
	if topts[0].Key != "max_topic_size" || topts[1].Key != "message_expiry" {
		t.Fatalf("SortOptions order: %q, %q", topts[0].Key, topts[1].Key)
	}
	sorted, _ := ParseOptions(topts.AppendTo(nil))
	assertOptions(t, sorted, topts)
}

func assertOptions(t *testing.T, got, want Options) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d options, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i].Key != want[i].Key || got[i].Kind != want[i].Kind || !bytes.Equal(got[i].Value, want[i].Value) {
			t.Fatalf("option %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

// field builds a raw TLV field with an arbitrary length word.
func field(kind uint8, length uint32, data string) []byte {
	return append(append([]byte{kind}, u32le(length)...), data...)
}

func TestCheckTLV(t *testing.T) {
	ok := AppendHeader(nil, "k", HeaderKindRaw, []byte("v"))
	tests := []struct {
		name    string
		block   []byte
		wantErr error
		pairs   int
	}{
		{name: "empty", block: nil},
		{name: "one pair", block: ok, pairs: 1},
		{name: "any key kind", block: concat(field(9, 1, "x"), field(200, 2, "yz")), pairs: 1},
		{name: "255-byte value", block: concat(field(2, 1, "k"), field(1, 255, strings.Repeat("v", 255))), pairs: 1},
		{name: "key kind 0", block: concat(field(0, 1, "k"), field(1, 1, "v")), wantErr: wire.ErrConstraint},
		{name: "value kind 0", block: concat(field(2, 1, "k"), field(0, 1, "v")), wantErr: wire.ErrConstraint},
		{name: "length 0", block: concat(field(2, 0, ""), field(1, 1, "v")), wantErr: wire.ErrConstraint},
		{name: "length 256", block: concat(field(2, 1, "k"), field(1, 256, strings.Repeat("v", 256))), wantErr: wire.ErrConstraint},
		{name: "huge length", block: concat(field(2, 1, "k"), field(1, 0xFFFFFFFF, "v")), wantErr: wire.ErrConstraint},
		{name: "runs past end", block: concat(field(2, 1, "k"), field(1, 5, "v")), wantErr: wire.ErrShortBuffer},
		{name: "odd count", block: concat(ok, field(2, 1, "k")), wantErr: wire.ErrConstraint},
		{name: "partial field header", block: concat(ok, []byte{2, 1, 0}), wantErr: wire.ErrShortBuffer},
		{name: "one stray byte", block: concat(ok, []byte{2}), wantErr: wire.ErrShortBuffer},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckTLV(tc.block)
			it := NewHeaderIter(tc.block)
			n := 0
			for it.Next() {
				n++
			}
			if tc.wantErr == nil {
				if err != nil || it.Err() != nil || n != tc.pairs {
					t.Fatalf("CheckTLV %v, iter %v, %d pairs; want nil, %d pairs", err, it.Err(), n, tc.pairs)
				}
				return
			}
			wantDecodeErr(t, err, tc.wantErr)
			if !errors.Is(it.Err(), tc.wantErr) {
				t.Fatalf("iterator error %v, want %v", it.Err(), tc.wantErr)
			}
			if it.Next() {
				t.Fatal("Next after an error returned true")
			}
		})
	}
}

func TestParseOptionsErrors(t *testing.T) {
	kv := func(k string, kind HeaderKind, v []byte) []byte { return AppendHeader(nil, k, kind, v) }
	many := func(n int) []byte {
		var b []byte
		for i := range n {
			b = AppendHeader(b, "k"+strconv.Itoa(i), HeaderKindUint8, []byte{1})
		}
		return b
	}
	big := func() []byte {
		var b []byte
		for i := 0; len(b) <= MaxOptionsSize; i++ {
			b = AppendHeader(b, "key-"+strconv.Itoa(i), HeaderKindRaw, bytes.Repeat([]byte{'x'}, 200))
		}
		return b
	}
	tests := []struct {
		name    string
		block   []byte
		wantErr error
		count   int
	}{
		{name: "empty", block: nil},
		{name: "1024 pairs", block: many(1024), count: 1024},
		{name: "unknown value kind", block: kv("k", 99, []byte("abc")), count: 1},
		{name: "string value", block: kv("k", HeaderKindString, []byte("7 days")), count: 1},
		{name: "1025 pairs", block: many(1025), wantErr: wire.ErrTooLarge},
		{name: "over 100000 bytes", block: big(), wantErr: wire.ErrTooLarge},
		{name: "key kind raw", block: concat(field(1, 1, "k"), field(1, 1, "v")), wantErr: wire.ErrConstraint},
		{name: "key kind uint8", block: concat(field(9, 1, "k"), field(1, 1, "v")), wantErr: wire.ErrConstraint},
		{name: "invalid utf8 key", block: kv("\xff\xfe", HeaderKindRaw, []byte("v")), wantErr: wire.ErrInvalidUTF8},
		{name: "duplicate key", block: concat(kv("a", HeaderKindBool, []byte{1}), kv("b", HeaderKindBool, []byte{0}), kv("a", HeaderKindBool, []byte{0})), wantErr: wire.ErrConstraint},
		{name: "bool 2 bytes", block: kv("k", HeaderKindBool, []byte{1, 0}), wantErr: wire.ErrConstraint},
		{name: "uint64 4 bytes", block: kv("k", HeaderKindUint64, []byte{1, 2, 3, 4}), wantErr: wire.ErrConstraint},
		{name: "uint128 8 bytes", block: kv("k", HeaderKindUint128, make([]byte, 8)), wantErr: wire.ErrConstraint},
		{name: "float32 8 bytes", block: kv("k", HeaderKindFloat32, make([]byte, 8)), wantErr: wire.ErrConstraint},
		{name: "odd fields", block: field(2, 1, "k"), wantErr: wire.ErrConstraint},
		{name: "value kind 0", block: concat(field(2, 1, "k"), field(0, 1, "v")), wantErr: wire.ErrConstraint},
		{name: "truncated", block: kv("k", HeaderKindRaw, []byte("vv"))[:11], wantErr: wire.ErrShortBuffer},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts, err := ParseOptions(tc.block)
			if tc.wantErr != nil {
				wantDecodeErr(t, err, tc.wantErr)
				if opts != nil {
					t.Fatal("options returned with an error")
				}
				return
			}
			if err != nil || len(opts) != tc.count {
				t.Fatalf("ParseOptions = %d options, %v; want %d", len(opts), err, tc.count)
			}
			if err := opts.Validate(); err != nil {
				t.Fatalf("Validate of parsed options: %v", err)
			}
		})
	}
}

func TestOptionsValidate(t *testing.T) {
	tooMany := make(Options, MaxOptions+1)
	for i := range tooMany {
		tooMany[i] = Option{Key: "k" + strconv.Itoa(i), Kind: HeaderKindUint8, Value: []byte{1}}
	}
	tooBig := Options{}
	for i := 0; tooBig.EncodedSize() <= MaxOptionsSize; i++ {
		tooBig = append(tooBig, Option{Key: "key-" + strconv.Itoa(i), Kind: HeaderKindRaw, Value: make([]byte, 255)})
	}
	tests := []struct {
		name    string
		opts    Options
		wantErr error
	}{
		{name: "nil", opts: nil},
		{name: "good", opts: Options{{Key: "segment_size", Kind: HeaderKindUint64, Value: u64le(1)}, {Key: "enforce_fsync", Kind: HeaderKindBool, Value: []byte{0}}}},
		{name: "too many", opts: tooMany, wantErr: wire.ErrTooLarge},
		{name: "too big", opts: tooBig, wantErr: wire.ErrTooLarge},
		{name: "empty key", opts: Options{{Key: "", Kind: HeaderKindBool, Value: []byte{0}}}, wantErr: wire.ErrConstraint},
		{name: "long key", opts: Options{{Key: strings.Repeat("k", 256), Kind: HeaderKindBool, Value: []byte{0}}}, wantErr: wire.ErrConstraint},
		{name: "bad utf8 key", opts: Options{{Key: "\xc3", Kind: HeaderKindBool, Value: []byte{0}}}, wantErr: wire.ErrInvalidUTF8},
		{name: "kind 0", opts: Options{{Key: "k", Kind: 0, Value: []byte{0}}}, wantErr: wire.ErrConstraint},
		{name: "empty value", opts: Options{{Key: "k", Kind: HeaderKindRaw}}, wantErr: wire.ErrConstraint},
		{name: "long value", opts: Options{{Key: "k", Kind: HeaderKindRaw, Value: make([]byte, 256)}}, wantErr: wire.ErrConstraint},
		{name: "wrong fixed size", opts: Options{{Key: "k", Kind: HeaderKindInt32, Value: make([]byte, 2)}}, wantErr: wire.ErrConstraint},
		{name: "duplicate", opts: Options{{Key: "k", Kind: HeaderKindBool, Value: []byte{0}}, {Key: "k", Kind: HeaderKindBool, Value: []byte{1}}}, wantErr: wire.ErrConstraint},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.opts.Validate()
			if tc.wantErr == nil {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				// Whatever validates must parse back identically.
				back, err := ParseOptions(tc.opts.AppendTo(nil))
				if err != nil {
					t.Fatalf("ParseOptions of validated options: %v", err)
				}
				if len(tc.opts) > 0 {
					assertOptions(t, back, tc.opts)
				}
				return
			}
			wantDecodeErr(t, err, tc.wantErr)
			// Anything Validate rejects, ParseOptions rejects too.
			if _, err := ParseOptions(tc.opts.AppendTo(nil)); err == nil {
				t.Fatal("ParseOptions accepted what Validate rejected")
			}
		})
	}
}

func TestHeaderIterAllocs(t *testing.T) {
	block := vec(t, "user_headers_block")
	n := 0
	allocs := testing.AllocsPerRun(100, func() {
		it := NewHeaderIter(block)
		for it.Next() {
			_, k := it.Key()
			_, v := it.Value()
			n += len(k) + len(v)
		}
	})
	if allocs != 0 {
		t.Fatalf("HeaderIter allocates %.1f times", allocs)
	}
	if err := CheckTLV(block); err != nil {
		t.Fatal(err)
	}
	if allocs := testing.AllocsPerRun(100, func() { _ = CheckTLV(block) }); allocs != 0 {
		t.Fatalf("CheckTLV allocates %.1f times", allocs)
	}
}

func seedTLV(f *testing.F) {
	vs := vectors(f)
	f.Add(vs["user_headers_block"])
	f.Add(vs["options_block_golden"])
	f.Add(vs["create_topic_payload_with_options"][17:])
	f.Add([]byte{})
	f.Add(concat(field(2, 1, "k"), field(12, 8, "12345678"), field(2, 1, "k"), field(3, 1, "\x01")))
}

// FuzzParseOptions: no panic; anything accepted validates, re-encodes to the
// same bytes and parses back to the same options.
func FuzzParseOptions(f *testing.F) {
	seedTLV(f)
	f.Fuzz(func(t *testing.T, in []byte) {
		opts, err := ParseOptions(in)
		if err != nil {
			if opts != nil {
				t.Fatal("options with an error")
			}
			var de *wire.DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error %T", err)
			}
			return
		}
		if err := CheckTLV(in); err != nil {
			t.Fatalf("ParseOptions accepted what CheckTLV rejects: %v", err)
		}
		if err := opts.Validate(); err != nil {
			t.Fatalf("Validate of parsed options: %v", err)
		}
		if opts.EncodedSize() != len(in) {
			t.Fatalf("EncodedSize %d, input %d", opts.EncodedSize(), len(in))
		}
		enc := opts.AppendTo(nil)
		if !bytes.Equal(enc, in) {
			t.Fatalf("re-encoding differs")
		}
		again, err := ParseOptions(enc)
		if err != nil {
			t.Fatal(err)
		}
		if len(again) != len(opts) {
			t.Fatal("re-parse differs")
		}
		for i := range opts {
			if again[i].Key != opts[i].Key || again[i].Kind != opts[i].Kind || !bytes.Equal(again[i].Value, opts[i].Value) {
				t.Fatal("re-parse differs")
			}
		}
	})
}

// FuzzHeaderIter: no panic; the iterator agrees with CheckTLV, never reads
// past the input, and a clean walk re-encodes to the input.
func FuzzHeaderIter(f *testing.F) {
	seedTLV(f)
	f.Fuzz(func(t *testing.T, in []byte) {
		it := NewHeaderIter(in)
		var enc []byte
		for it.Next() {
			kk, k := it.Key()
			vk, v := it.Value()
			if kk == 0 || vk == 0 || len(k) == 0 || len(v) == 0 || len(k) > 255 || len(v) > 255 {
				t.Fatal("structurally invalid field yielded")
			}
			enc = AppendTLVField(enc, kk, k)
			enc = AppendTLVField(enc, vk, v)
		}
		if it.Offset() > len(in) {
			t.Fatalf("offset %d beyond %d", it.Offset(), len(in))
		}
		check := CheckTLV(in)
		if (check == nil) != (it.Err() == nil) {
			t.Fatalf("CheckTLV %v, iterator %v", check, it.Err())
		}
		if check == nil && !bytes.Equal(enc, in) {
			t.Fatal("re-encoding differs")
		}
	})
}
