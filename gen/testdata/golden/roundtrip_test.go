package iggy

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/kafka-iggy/kafka-iggy/codec/wire"
)

func numeric(id uint32) Identifier {
	return Identifier{Kind: IdentifierKindNumeric, Value: wire.AppendU32LE(nil, id)}
}

func TestRoundTripVersionedShapes(t *testing.T) {
	old := CreateStreamRequest{StreamID: numeric(7), Name: "orders", Entries: []Entry{{ID: 1, Label: "a"}}, Options: Options{1, 2}}
	neu := CreateStreamRequestV12{StreamID: numeric(7), Secret: [4]byte{9, 9, 9, 9}, Name: "orders", Entries: []Entry{{ID: 1, Label: "a"}}, Options: Options{1, 2}}
	bo, bn := old.AppendTo(nil), neu.AppendTo(nil)
	if len(bn) != len(bo)+4 || len(bo) != old.EncodedSize() || len(bn) != neu.EncodedSize() {
		t.Fatalf("sizes: old %d/%d new %d/%d", len(bo), old.EncodedSize(), len(bn), neu.EncodedSize())
	}
	// length_of: meta_len covers name + entries = (1+6) + (4 + 4+2) = 17.
	if got := bo[6:10]; !bytes.Equal(got, []byte{17, 0, 0, 0}) {
		t.Fatalf("meta_len = % x, want 17", got)
	}
	var d CreateStreamRequest
	n, err := d.DecodeFrom(bo)
	if err != nil || n != len(bo) {
		t.Fatalf("decode: n=%d err=%v", n, err)
	}
	if !reflect.DeepEqual(d, old) {
		t.Fatalf("decoded %+v, want %+v", d, old)
	}
	var d2 CreateStreamRequestV12
	if _, err := d2.DecodeFrom(bn); err != nil || !reflect.DeepEqual(d2, neu) {
		t.Fatalf("v12 decode: %+v %v", d2, err)
	}
	if (&CreateStreamRequestV12{}).Code() != 202 || (&CreateStreamRequest{}).Operation() != OperationCreateStream {
		t.Fatal("code/operation")
	}
}

func TestDecodeErrorsNameFieldAndOffset(t *testing.T) {
	good := (&CreateStreamRequest{StreamID: numeric(1), Name: "x", Entries: []Entry{{ID: 5, Label: "b"}}}).AppendTo(nil)
	cases := []struct {
		name   string
		mutate func([]byte) []byte
		field  string
		off    int
		err    error
	}{
		{"short", func(b []byte) []byte { return b[:3] }, "stream_id.value", 2, wire.ErrShortBuffer},
		{"bad kind", func(b []byte) []byte { b[0] = 9; return b }, "stream_id.kind", 0, wire.ErrUnknownDiscriminant},
		{"numeric needs 4 bytes", func(b []byte) []byte {
			return append([]byte{1, 2, 0, 0}, b[6:]...)
		}, "stream_id.value", 0, wire.ErrConstraint},
		{"meta_len too big", func(b []byte) []byte { b[6] = 200; return b }, "meta_len", 6, wire.ErrShortBuffer},
		{"meta_len mismatch", func(b []byte) []byte { b[6]--; return append(b, 0) }, "meta_len", 6, wire.ErrConstraint},
		{"range", func(b []byte) []byte { b[16] = 101; return b }, "entries.id", 16, wire.ErrConstraint},
		{"huge count, no allocation", func(b []byte) []byte { b[12], b[13], b[14], b[15] = 0xff, 0xff, 0xff, 0x7f; return b }, "entries", 12, wire.ErrShortBuffer},
		{"odd options", func(b []byte) []byte { return append(b, 1) }, "options", len(good), wire.ErrConstraint},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.mutate(append([]byte(nil), good...))
			var m CreateStreamRequest
			_, err := m.DecodeFrom(in)
			var de *wire.DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("err = %v, want *wire.DecodeError", err)
			}
			if de.Field != tc.field || de.Offset != tc.off || !errors.Is(err, tc.err) || de.Message != "create_stream.request" {
				t.Fatalf("got %s (field %q off %d), want field %q off %d %v", de, de.Field, de.Offset, tc.field, tc.off, tc.err)
			}
		})
	}
}

func TestListsChainsOptionals(t *testing.T) {
	resp := CreateStreamResponse{ID: 3, Items: []Detailed{
		{Entry: Entry{ID: 1, Label: "x"}, Count: 2, Parts: []uint64{10, 20}, Chain: []Entry{{ID: 2, Label: "y"}, {ID: 3, Label: "z"}}, Opt: &Entry{ID: 4, Label: "w"}},
		{Entry: Entry{ID: 9, Label: "q"}, Kinds: []IdentifierKind{IdentifierKindString}, Padded: &Entry{ID: 5, Label: "p"}},
	}}
	if err := resp.Validate(); err != nil {
		t.Fatal(err)
	}
	b := resp.AppendTo(nil)
	if len(b) != resp.EncodedSize() {
		t.Fatalf("size %d vs %d", len(b), resp.EncodedSize())
	}
	var d CreateStreamResponse
	if n, err := d.DecodeFrom(b); err != nil || n != len(b) {
		t.Fatalf("decode n=%d err=%v", n, err)
	}
	if !reflect.DeepEqual(d, resp) {
		t.Fatalf("got %+v\nwant %+v", d, resp)
	}
	// An absent padded value is 4 zero bytes: item 0 ends with 00 00 00 00.
	one := Detailed{Entry: Entry{ID: 9, Label: "q"}}
	enc := one.AppendTo(nil)
	if !bytes.HasSuffix(enc, []byte{0, 0, 0, 0, 0, 0, 0, 0}) { // kinds count 0 + padded absent
		t.Fatalf("absent padding: % x", enc)
	}
	bad := resp
	bad.Items = []Detailed{{Entry: Entry{ID: 1, Label: "x"}, Count: 3, Parts: []uint64{1}}}
	if err := bad.Validate(); !errors.Is(err, wire.ErrConstraint) {
		t.Fatalf("count mismatch not caught: %v", err)
	}
}

func TestEnumListAndPaddingRejected(t *testing.T) {
	one := Detailed{Entry: Entry{ID: 9, Label: "q"}, Kinds: []IdentifierKind{IdentifierKindNumeric}}
	enc := one.AppendTo(nil)
	kindAt := len(enc) - 5 // last kind byte, before the 4-byte absent padding
	enc[kindAt] = 7
	var d Detailed
	if _, err := d.DecodeFrom(enc); !errors.Is(err, wire.ErrUnknownDiscriminant) {
		t.Fatalf("bad enum element: %v", err)
	}
	enc[kindAt] = 1
	enc[len(enc)-1] = 1 // nonzero padding
	if _, err := d.DecodeFrom(enc); !errors.Is(err, wire.ErrConstraint) {
		t.Fatalf("nonzero padding: %v", err)
	}
}

func TestEnumsAndTables(t *testing.T) {
	if !IdentifierKindUUID.Valid() || IdentifierKindUUID.ValidIn(Protocol011) || !IdentifierKindUUID.ValidIn(Protocol012) {
		t.Fatal("versioned enum value")
	}
	if lo, hi, ok := HeaderKindUint64.ValueSize(); !ok || lo != 8 || hi != 8 {
		t.Fatal("ValueSize")
	}
	if EvictionReasonNoSession.Status() != StatusUnauthenticated {
		t.Fatal("eviction status")
	}
	if c, ok := LookupCommand(202); !ok || c.Name != "create_stream" || !c.ResultFramed || c.Plane != PlaneMetadata {
		t.Fatalf("LookupCommand: %+v", c)
	}
	if !errors.Is(error(StatusStreamIDNotFound), StatusStreamIDNotFound) || StatusStreamIDNotFound.Error() != "iggy: StreamIdNotFound (1009)" {
		t.Fatal("Status error")
	}
	if !OperationRegister.ResultFramedWhenBody() || OperationNonReplicated.ResultFramed() {
		t.Fatal("operations")
	}
	if o, ok := LookupOption(TopicOptions, "message_expiry"); !ok || !o.Updatable || len(o.Default) != 8 {
		t.Fatal("options")
	}
	if MiniHeaderSize != 8 || MiniHeaderReservedOffset != 5 || LimitHeaderSize != 256 {
		t.Fatal("layout constants")
	}
}
