package iggy

import (
	"encoding/binary"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/kafka-iggy/kafka-iggy/codec/wire"
)

// TLV field layout shared by user headers and options (§2.8):
// [kind u8][length u32][data: length bytes].
const (
	tlvKindOff   = 0
	tlvLenOff    = 1
	tlvDataOff   = 5
	tlvMinData   = 1
	tlvMaxData   = 255
	tlvFieldSize = tlvDataOff // fixed part of a field
)

// Limits of §2.8 and §2.9.
const (
	// MaxUserHeadersSize bounds a user-headers block (SDK rule, §2.8).
	MaxUserHeadersSize = LimitMaxUserHeadersSize
	// MaxOptionsSize bounds an options block in bytes (§2.9).
	MaxOptionsSize = LimitMaxOptionsBytes
	// MaxOptions bounds the number of key/value pairs of an options block (§2.9).
	MaxOptions = LimitMaxOptions
)

// AppendTLVField appends one TLV field [kind][u32 len(data)][data]. It does
// not validate; CheckTLV and ParseOptions state the rules.
func AppendTLVField(dst []byte, kind HeaderKind, data []byte) []byte {
	dst = append(dst, uint8(kind))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(data)))
	return append(dst, data...)
}

// appendTLVString is AppendTLVField for a String-kinded string, without
// converting it to a byte slice.
func appendTLVString(dst []byte, s string) []byte {
	dst = append(dst, uint8(HeaderKindString))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(s)))
	return append(dst, s...)
}

// AppendHeader appends one user-header pair: key as a String field, then the
// value field of the given kind. It does not validate.
func AppendHeader(dst []byte, key string, kind HeaderKind, value []byte) []byte {
	dst = appendTLVString(dst, key)
	return AppendTLVField(dst, kind, value)
}

// tlvField decodes the field at block[off:]. It returns the field's kind and
// data (aliasing block) and the offset after it, or a *wire.DecodeError named
// msg: kind 0 and a length outside 1..255 wrap wire.ErrConstraint, a field
// running past the end wraps wire.ErrShortBuffer.
func tlvField(block []byte, off int, msg string) (HeaderKind, []byte, int, error) {
	if len(block)-off < tlvFieldSize {
		return 0, nil, off, &wire.DecodeError{Message: msg, Field: "field", Offset: off, Need: tlvFieldSize, Have: len(block) - off, Err: wire.ErrShortBuffer}
	}
	kind := HeaderKind(block[off+tlvKindOff])
	if kind == 0 {
		return 0, nil, off, &wire.DecodeError{Message: msg, Field: "kind", Offset: off + tlvKindOff, Err: wire.ErrConstraint, Detail: "kind 0 is reserved"}
	}
	n := binary.LittleEndian.Uint32(block[off+tlvLenOff:])
	if n < tlvMinData || n > tlvMaxData {
		return 0, nil, off, &wire.DecodeError{Message: msg, Field: "length", Offset: off + tlvLenOff, Err: wire.ErrConstraint,
			Detail: "length " + strconv.FormatUint(uint64(n), 10) + " outside 1..255"}
	}
	start := off + tlvDataOff
	if int(n) > len(block)-start {
		return 0, nil, off, &wire.DecodeError{Message: msg, Field: "data", Offset: start, Need: int(n), Have: len(block) - start, Err: wire.ErrShortBuffer}
	}
	end := start + int(n)
	return kind, block[start:end:end], end, nil
}

// CheckTLV applies the structural rules of §2.8 shared by user headers and
// options: every kind nonzero, every length 1..255, no field past the end,
// fields tiling the block exactly, an even number of fields. An empty block
// is valid. The error is a *wire.DecodeError.
func CheckTLV(block []byte) error {
	it := NewHeaderIter(block)
	for it.Next() {
	}
	return it.Err()
}

// HeaderIter walks the key/value pairs of a user-headers block (§2.8)
// without allocating. The zero value is an empty iterator.
//
//	it := iggy.NewHeaderIter(block)
//	for it.Next() {
//		kk, k := it.Key()
//		vk, v := it.Value()
//		...
//	}
//	if err := it.Err(); err != nil { ... }
//
// It checks the structural rules only (as CheckTLV); the server stores user
// headers unvalidated, so fixed-size kinds and key kinds are the reader's
// business (HeaderKind.ValueSize).
type HeaderIter struct {
	block    []byte
	off      int
	keyKind  HeaderKind
	valKind  HeaderKind
	key, val []byte
	err      error
}

// NewHeaderIter returns an iterator over block.
func NewHeaderIter(block []byte) HeaderIter { return HeaderIter{block: block} }

// Next advances to the next pair and reports whether there is one. It
// returns false at the end of the block or on the first structural error.
func (it *HeaderIter) Next() bool {
	if it.err != nil || it.off >= len(it.block) {
		return false
	}
	kk, k, off, err := tlvField(it.block, it.off, "user_headers")
	if err != nil {
		it.fail(err)
		return false
	}
	if off == len(it.block) {
		it.fail(&wire.DecodeError{Message: "user_headers", Field: "value", Offset: off, Err: wire.ErrConstraint, Detail: "odd number of fields: key without a value"})
		return false
	}
	vk, v, off, err := tlvField(it.block, off, "user_headers")
	if err != nil {
		it.fail(err)
		return false
	}
	it.keyKind, it.key, it.valKind, it.val, it.off = kk, k, vk, v, off
	return true
}

func (it *HeaderIter) fail(err error) {
	it.err = err
	it.key, it.val, it.keyKind, it.valKind = nil, nil, 0, 0
}

// Key returns the current pair's key field (data aliases the block).
func (it *HeaderIter) Key() (kind HeaderKind, data []byte) { return it.keyKind, it.key }

// Value returns the current pair's value field (data aliases the block).
func (it *HeaderIter) Value() (kind HeaderKind, data []byte) { return it.valKind, it.val }

// Offset returns the number of bytes of the block consumed so far.
func (it *HeaderIter) Offset() int { return it.off }

// Err returns the first structural error, or nil.
func (it *HeaderIter) Err() error { return it.err }

// Option is one key/value pair of an options block (§2.9). Keys are always
// String-kinded on the wire.
type Option struct {
	Key   string     // 1..255 bytes of UTF-8
	Kind  HeaderKind // kind of Value
	Value []byte     // 1..255 bytes; exactly the kind's size for fixed-size kinds
}

// Options is an options block (§2.9): settings of streams, topics and users.
type Options []Option

// EncodedSize returns the size of the block AppendTo writes (without any
// length prefix).
func (o Options) EncodedSize() int {
	n := 0
	for i := range o {
		n += 2*tlvFieldSize + len(o[i].Key) + len(o[i].Value)
	}
	return n
}

// AppendTo appends the block (no length prefix) in the order of o; call
// SortOptions first for the canonical order servers emit. It does not
// validate (Validate does).
func (o Options) AppendTo(dst []byte) []byte {
	for i := range o {
		dst = appendTLVString(dst, o[i].Key)
		dst = AppendTLVField(dst, o[i].Kind, o[i].Value)
	}
	return dst
}

// Get returns the option with the given key.
func (o Options) Get(key string) (Option, bool) {
	for i := range o {
		if o[i].Key == key {
			return o[i], true
		}
	}
	return Option{}, false
}

// Validate checks o against the rules ParseOptions enforces: at most
// MaxOptions pairs and MaxOptionsSize bytes, keys 1..255 bytes of valid UTF-8
// and unique, values 1..255 bytes of a nonzero kind, fixed-size kinds exact.
// Errors are *wire.DecodeError with the field "options[i].key"/"value" and
// the byte offset the pair would have in the encoded block.
func (o Options) Validate() error {
	if len(o) > MaxOptions {
		return &wire.DecodeError{Message: "options", Err: wire.ErrTooLarge, Detail: strconv.Itoa(len(o)) + " pairs, at most 1024"}
	}
	if n := o.EncodedSize(); n > MaxOptionsSize {
		return &wire.DecodeError{Message: "options", Err: wire.ErrTooLarge, Detail: strconv.Itoa(n) + " bytes, at most 100000"}
	}
	off := 0
	for i := range o {
		field := "options[" + strconv.Itoa(i) + "]"
		k, v := o[i].Key, o[i].Value
		if len(k) < tlvMinData || len(k) > tlvMaxData {
			return &wire.DecodeError{Message: "options", Field: field + ".key", Offset: off, Err: wire.ErrConstraint, Detail: "length " + strconv.Itoa(len(k)) + " outside 1..255"}
		}
		if !utf8.ValidString(k) {
			return &wire.DecodeError{Message: "options", Field: field + ".key", Offset: off, Err: wire.ErrInvalidUTF8}
		}
		voff := off + tlvFieldSize + len(k)
		if err := checkOptionValue(o[i].Kind, v, voff, field); err != nil {
			return err
		}
		for j := range i {
			if o[j].Key == k {
				return &wire.DecodeError{Message: "options", Field: field + ".key", Offset: off, Err: wire.ErrConstraint, Detail: "duplicate key " + strconv.Quote(k)}
			}
		}
		off = voff + tlvFieldSize + len(v)
	}
	return nil
}

func checkOptionValue(kind HeaderKind, v []byte, off int, field string) error {
	if kind == 0 {
		return &wire.DecodeError{Message: "options", Field: field + ".kind", Offset: off, Err: wire.ErrConstraint, Detail: "kind 0 is reserved"}
	}
	if len(v) < tlvMinData || len(v) > tlvMaxData {
		return &wire.DecodeError{Message: "options", Field: field + ".value", Offset: off, Err: wire.ErrConstraint, Detail: "length " + strconv.Itoa(len(v)) + " outside 1..255"}
	}
	if lo, hi, _ := kind.ValueSize(); lo == hi && lo > 0 && len(v) != lo {
		return &wire.DecodeError{Message: "options", Field: field + ".value", Offset: off, Err: wire.ErrConstraint,
			Detail: "kind " + strconv.Itoa(int(kind)) + " needs " + strconv.Itoa(lo) + " bytes, got " + strconv.Itoa(len(v))}
	}
	return nil
}

// ParseOptions decodes an options block (the whole of block; requests carry
// it to the end of the body, responses after a u32 length the caller has
// already split off) and enforces §2.9: the structural TLV rules, at most
// MaxOptionsSize bytes and MaxOptions pairs (wire.ErrTooLarge), String keys
// of valid UTF-8 (wire.ErrConstraint, wire.ErrInvalidUTF8), no duplicate keys
// and fixed-size value kinds of exactly their size (wire.ErrConstraint).
// Value kinds are otherwise unrestricted (each key has its own accepted kinds,
// §6). The result is a copy: it does not alias block. An empty block gives
// nil, nil.
func ParseOptions(block []byte) (Options, error) {
	if len(block) == 0 {
		return nil, nil
	}
	if len(block) > MaxOptionsSize {
		return nil, &wire.DecodeError{Message: "options", Err: wire.ErrTooLarge, Detail: strconv.Itoa(len(block)) + " bytes, at most 100000"}
	}
	// First pass: structure, kinds, limits; count pairs and value bytes.
	pairs, valueBytes := 0, 0
	for off := 0; off < len(block); {
		kk, k, voff, err := tlvField(block, off, "options")
		if err != nil {
			return nil, err
		}
		if kk != HeaderKindString {
			return nil, &wire.DecodeError{Message: "options", Field: "key.kind", Offset: off, Err: wire.ErrConstraint, Detail: "key kind " + strconv.Itoa(int(kk)) + ", want 2 (String)"}
		}
		if !utf8.Valid(k) {
			return nil, &wire.DecodeError{Message: "options", Field: "key", Offset: off + tlvDataOff, Err: wire.ErrInvalidUTF8}
		}
		if voff == len(block) {
			return nil, &wire.DecodeError{Message: "options", Field: "value", Offset: voff, Err: wire.ErrConstraint, Detail: "odd number of fields: key without a value"}
		}
		vk, v, next, err := tlvField(block, voff, "options")
		if err != nil {
			return nil, err
		}
		if lo, hi, _ := vk.ValueSize(); lo == hi && lo > 0 && len(v) != lo {
			return nil, &wire.DecodeError{Message: "options", Field: "value", Offset: voff + tlvDataOff, Err: wire.ErrConstraint,
				Detail: "kind " + strconv.Itoa(int(vk)) + " needs " + strconv.Itoa(lo) + " bytes, got " + strconv.Itoa(len(v))}
		}
		pairs++
		if pairs > MaxOptions {
			return nil, &wire.DecodeError{Message: "options", Offset: off, Err: wire.ErrTooLarge, Detail: "more than 1024 pairs"}
		}
		valueBytes += len(v)
		off = next
	}
	// Second pass: copy out. Values share one backing array.
	opts := make(Options, 0, pairs)
	store := make([]byte, 0, valueBytes)
	for off := 0; off < len(block); {
		_, k, voff, _ := tlvField(block, off, "options")
		vk, v, next, _ := tlvField(block, voff, "options")
		for i := range opts {
			if opts[i].Key == string(k) {
				return nil, &wire.DecodeError{Message: "options", Field: "key", Offset: off + tlvDataOff, Err: wire.ErrConstraint, Detail: "duplicate key " + strconv.Quote(string(k))}
			}
		}
		start := len(store)
		store = append(store, v...)
		opts = append(opts, Option{Key: string(k), Kind: vk, Value: store[start:len(store):len(store)]})
		off = next
	}
	return opts, nil
}

// SortOptions sorts o into the canonical order servers emit: by key kind,
// then key bytes (§2.9). Option keys are always String-kinded, so this is
// byte order of the keys.
func SortOptions(o Options) {
	slices.SortStableFunc(o, func(a, b Option) int { return strings.Compare(a.Key, b.Key) })
}
