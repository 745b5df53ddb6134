package proxy

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestParseRequestHeader(t *testing.T) {
	cid := "client-1"
	cases := []struct {
		name     string
		req      kmsg.Request
		clientID *string
	}{
		{"v1 header", apiVersionsReq(2), &cid},
		{"v1 header, null client id", apiVersionsReq(0), nil},
		{"v2 header (flexible)", apiVersionsReq(3), &cid},
		{"v2 header, null client id", func() kmsg.Request { r := kmsg.NewPtrMetadataRequest(); r.Version = 12; return r }(), nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			frame := appendRequest(nil, 77, tc.clientID, tc.req)[FrameHeaderSize:]
			key, version, corr, err := parseHeaderPrefix(frame)
			if err != nil || key != tc.req.Key() || version != tc.req.GetVersion() || corr != 77 {
				t.Fatalf("prefix = %d, %d, %d, %v", key, version, corr, err)
			}
			id, null, off, err := parseHeaderRest(frame, tc.req.IsFlexible())
			if err != nil {
				t.Fatal(err)
			}
			if null != (tc.clientID == nil) || (tc.clientID != nil && string(id) != *tc.clientID) {
				t.Fatalf("client id %q null=%v", id, null)
			}
			body := tc.req.AppendTo(nil)
			if !bytes.Equal(frame[off:], body) {
				t.Fatalf("body offset %d wrong", off)
			}
		})
	}
}

func TestParseRequestHeaderTags(t *testing.T) {
	// Prefix, empty client id, then 2 tagged fields: tag 0 (3 bytes), tag 300 (0 bytes).
	frame := rawFrame(18, 3, 5, nil)[FrameHeaderSize:]
	frame = append(frame, 2, 0, 3, 'a', 'b', 'c', 0xac, 0x02, 0)
	frame = append(frame, 0xee) // body
	_, _, off, err := parseHeaderRest(frame, true)
	if err != nil || frame[off] != 0xee || off != len(frame)-1 {
		t.Fatalf("off %d err %v", off, err)
	}
	for cut := 10; cut < len(frame)-1; cut++ {
		if _, _, _, err := parseHeaderRest(frame[:cut], true); !errors.Is(err, ErrBadHeader) {
			t.Fatalf("truncated at %d: err %v", cut, err)
		}
	}
}

func TestParseRequestHeaderErrors(t *testing.T) {
	prefix := rawFrame(3, 1, 1, nil)[FrameHeaderSize:]
	cases := map[string][]byte{
		"no client id length": prefix[:9],
		"client id length -2": append(append([]byte{}, prefix[:8]...), 0xff, 0xfe),
		"client id truncated": append(append([]byte{}, prefix[:8]...), 0, 5, 'a'),
	}
	for name, frame := range cases {
		if _, _, _, err := parseHeaderRest(frame, false); !errors.Is(err, ErrBadHeader) {
			t.Errorf("%s: err %v", name, err)
		}
	}
	if _, _, _, err := parseHeaderPrefix(prefix[:7]); !errors.Is(err, ErrBadHeader) {
		t.Errorf("short prefix: err %v", err)
	}
}

func TestUvarint32(t *testing.T) {
	for _, v := range []uint32{0, 1, 127, 128, 300, 1 << 21, 1<<28 - 1, 1 << 28, math.MaxUint32} {
		b := binary.AppendUvarint(nil, uint64(v))
		got, n, ok := uvarint32(b)
		if !ok || got != v || n != len(b) {
			t.Errorf("%d: got %d n=%d ok=%v", v, got, n, ok)
		}
	}
	for name, b := range map[string][]byte{
		"empty":          nil,
		"unterminated":   {0x80, 0x80},
		"above uint32":   binary.AppendUvarint(nil, math.MaxUint32+1),
		"six bytes long": {0x80, 0x80, 0x80, 0x80, 0x80, 0x00},
	} {
		if _, _, ok := uvarint32(b); ok {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestAppendResponseHeader(t *testing.T) {
	cases := []struct {
		name     string
		flexible bool
		key      int16
		want     []byte
	}{
		{"v0", false, 3, []byte{0, 0, 0, 0, 0, 0, 0, 9}},
		{"v1 (flexible)", true, 3, []byte{0, 0, 0, 0, 0, 0, 0, 9, 0}},
		{"ApiVersions is v0 even when flexible", true, 18, []byte{0, 0, 0, 0, 0, 0, 0, 9}},
	}
	for _, tc := range cases {
		if got := appendResponseHeader(nil, 9, tc.flexible, tc.key); !bytes.Equal(got, tc.want) {
			t.Errorf("%s: % x, want % x", tc.name, got, tc.want)
		}
	}
	b := appendResponseHeader(nil, 9, false, 3)
	b = append(b, 1, 2, 3)
	if !finishFrame(b, 0) || binary.BigEndian.Uint32(b) != 7 {
		t.Fatalf("size prefix % x", b[:4])
	}
}

func FuzzRequestHeader(f *testing.F) {
	cid := "fuzz"
	for _, r := range []kmsg.Request{apiVersionsReq(0), apiVersionsReq(3), kmsg.NewPtrMetadataRequest(), kmsg.NewPtrHeartbeatRequest()} {
		f.Add(appendRequest(nil, 1, &cid, r)[FrameHeaderSize:], r.IsFlexible())
		f.Add(appendRequest(nil, 1, nil, r)[FrameHeaderSize:], r.IsFlexible())
	}
	f.Add([]byte{0, 18, 0, 3, 0, 0, 0, 1, 0, 0, 2, 0, 3, 'a', 'b', 'c', 0xac, 0x02, 0}, true)
	f.Add([]byte{0, 18, 0, 3, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x0f}, true)
	f.Fuzz(func(t *testing.T, frame []byte, flexible bool) {
		// Differential: our varint against encoding/binary's.
		if v, n, ok := uvarint32(frame); ok {
			bv, bn := binary.Uvarint(frame)
			if bn != n || bv != uint64(v) {
				t.Fatalf("uvarint32 = %d/%d, binary.Uvarint = %d/%d", v, n, bv, bn)
			}
		}

		key, version, corr, err := parseHeaderPrefix(frame)
		if (err == nil) != (len(frame) >= headerPrefixSize) {
			t.Fatalf("prefix of %d bytes: err %v", len(frame), err)
		}
		if err != nil {
			return
		}
		id, null, off, err := parseHeaderRest(frame, flexible)
		if err != nil {
			if !errors.Is(err, ErrBadHeader) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		if off < headerPrefixSize+2 || off > len(frame) {
			t.Fatalf("body offset %d outside [10, %d]", off, len(frame))
		}
		if null && id != nil {
			t.Fatal("null client id with bytes")
		}
		// Re-encode what was parsed: it must be exactly the consumed bytes
		// (for flexible headers, up to the tag section, which must then
		// span the rest of the header).
		enc := binary.BigEndian.AppendUint16(nil, uint16(key))
		enc = binary.BigEndian.AppendUint16(enc, uint16(version))
		enc = binary.BigEndian.AppendUint32(enc, uint32(corr))
		if null {
			enc = append(enc, 0xff, 0xff)
		} else {
			enc = binary.BigEndian.AppendUint16(enc, uint16(len(id)))
			enc = append(enc, id...)
		}
		if !bytes.Equal(frame[:len(enc)], enc) {
			t.Fatalf("re-encoded header differs")
		}
		if !flexible && off != len(enc) {
			t.Fatalf("non-flexible header: offset %d, encoded %d", off, len(enc))
		}
		if flexible {
			n, ok := skipTags(frame[len(enc):])
			if !ok || len(enc)+n != off {
				t.Fatalf("tag section: %d ok=%v, offset %d", n, ok, off)
			}
		}
	})
}
