package iggy

import (
	"bytes"
	"encoding/binary"
	"reflect"
	"testing"
)

// FuzzCommandBodies decodes arbitrary bytes as the request and the response
// body of every command (the command is chosen by the first two input bytes),
// in every protocol generation. Invariants: no panic, consumed <= len(input),
// and decode(encode(decode(x))) re-encodes to the same bytes.
func FuzzCommandBodies(f *testing.F) {
	vs := vectors(f)
	seed := func(code uint32, b []byte) {
		f.Add(append(binary.LittleEndian.AppendUint16(nil, uint16(code)), b...))
	}
	for name, mk := range vectorBodies {
		if mk == nil || bytes.HasSuffix([]byte(name), []byte("_frame")) {
			continue
		}
		for _, c := range Commands {
			for _, p := range Protocols {
				if m, ok := NewRequestBody(c.Code, p); ok && sameType(m, mk()) {
					seed(c.Code, vs[name])
				}
				if m, ok := NewResponseBody(c.Code, p); ok && sameType(m, mk()) {
					seed(c.Code, vs[name])
				}
			}
		}
	}
	for _, c := range Commands {
		seed(c.Code, nil)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) < 2 {
			return
		}
		idx := int(binary.LittleEndian.Uint16(in)) % len(Commands)
		code, data := Commands[idx].Code, in[2:]
		for _, p := range Protocols {
			for _, mk := range []func(uint32, ProtocolVersion) (Body, bool){NewRequestBody, NewResponseBody} {
				m, ok := mk(code, p)
				if !ok {
					continue
				}
				n, err := m.DecodeFrom(data)
				if n > len(data) {
					t.Fatalf("code %d: consumed %d of %d", code, n, len(data))
				}
				if err != nil {
					continue
				}
				enc := m.AppendTo(nil)
				if len(enc) != m.EncodedSize() {
					t.Fatalf("code %d: EncodedSize %d, AppendTo wrote %d", code, m.EncodedSize(), len(enc))
				}
				m2, _ := mk(code, p)
				if _, err := m2.DecodeFrom(enc); err != nil {
					t.Fatalf("code %d: re-decoding our own encoding failed: %v", code, err)
				}
				if enc2 := m2.AppendTo(nil); !bytes.Equal(enc, enc2) {
					t.Fatalf("code %d: decode(encode(decode(x))) is not stable\n% x\n% x", code, enc, enc2)
				}
			}
		}
	})
}

// sameType reports whether two bodies have the same Go type (test-only reflection).
func sameType(a, b Body) bool { return reflect.TypeOf(a) == reflect.TypeOf(b) }
