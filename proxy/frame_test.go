package proxy

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"

	"github.com/panjf2000/gnet/v2/pkg/buffer/elastic"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// gnetInbound presents input the way a gnet connection does inside
// OnTraffic: bytes left over from earlier reads in an elastic ring buffer
// (gnet's own type), the bytes of the current read in a plain slice. After
// OnTraffic gnet moves whatever was not consumed into the ring.
type gnetInbound struct {
	ring   elastic.RingBuffer
	latest []byte
}

var _ inbound = (*gnetInbound)(nil)

// deliver simulates one socket read arriving.
func (g *gnetInbound) deliver(b []byte) { g.latest = b }

// endTraffic simulates the end of OnTraffic: the unconsumed read is kept.
func (g *gnetInbound) endTraffic() {
	if len(g.latest) > 0 {
		_, _ = g.ring.Write(g.latest)
	}
	g.latest = nil
}

func (g *gnetInbound) InboundBuffered() int { return g.ring.Buffered() + len(g.latest) }

func (g *gnetInbound) Peek(n int) ([]byte, error) {
	if n > g.InboundBuffered() {
		return nil, io.ErrShortBuffer
	}
	inRing := g.ring.Buffered()
	if inRing == 0 {
		return g.latest[:n], nil
	}
	head, tail := g.ring.Peek(n)
	if len(head) == n {
		return head, nil
	}
	out := make([]byte, 0, n)
	out = append(out, head...)
	out = append(out, tail...)
	if len(out) < n {
		out = append(out, g.latest[:n-len(out)]...)
	}
	return out, nil
}

func (g *gnetInbound) Discard(n int) (int, error) {
	fromRing := min(n, g.ring.Buffered())
	if fromRing > 0 {
		_, _ = g.ring.Discard(fromRing)
	}
	rest := min(n-fromRing, len(g.latest))
	g.latest = g.latest[rest:]
	return fromRing + rest, nil
}

func (g *gnetInbound) Read(p []byte) (int, error) {
	n := 0
	if g.ring.Buffered() > 0 {
		n, _ = g.ring.Read(p)
	}
	m := copy(p[n:], g.latest)
	g.latest = g.latest[m:]
	if n+m == 0 && len(p) > 0 {
		return 0, io.ErrShortBuffer
	}
	return n + m, nil
}

func frameOf(body []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
	return append(b, body...)
}

func TestNextFrame(t *testing.T) {
	two := append(frameOf([]byte("abc")), frameOf(nil)...)
	cases := []struct {
		name    string
		in      []byte
		frame   []byte
		n       int
		wantErr error
	}{
		{"empty", nil, nil, 0, nil},
		{"partial prefix", []byte{0, 0}, nil, 0, nil},
		{"partial body", frameOf([]byte("abcdef"))[:7], nil, 0, nil},
		{"exact", frameOf([]byte("abc")), []byte("abc"), 7, nil},
		{"first of two", two, []byte("abc"), 7, nil},
		{"empty body", frameOf(nil), []byte{}, 4, nil},
		{"at max", frameOf(make([]byte, 16)), make([]byte, 16), 20, nil},
		{"above max", frameOf(make([]byte, 17)), nil, 0, ErrFrameTooLarge},
		{"above max, body absent", []byte{0, 0, 0, 17}, nil, 0, ErrFrameTooLarge},
		{"negative size", []byte{0xff, 0xff, 0xff, 0xff}, nil, 0, ErrFrameTooLarge},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			frame, n, err := NextFrame(tc.in, 16)
			if !errors.Is(err, tc.wantErr) || n != tc.n || !bytes.Equal(frame, tc.frame) {
				t.Fatalf("NextFrame = %q, %d, %v; want %q, %d, %v", frame, n, err, tc.frame, tc.n, tc.wantErr)
			}
			if tc.frame != nil && cap(frame) != len(frame) {
				t.Fatalf("frame capacity %d leaks into the next frame", cap(frame))
			}
		})
	}
}

func TestPendingFrameRefusesOversizeWithoutAllocating(t *testing.T) {
	hdr := []byte{0x40, 0, 0, 0} // 1 GiB
	in := &gnetInbound{}
	allocs := testing.AllocsPerRun(100, func() {
		in.latest = hdr
		if _, _, err := pendingFrame(in, 1<<20); !errors.Is(err, ErrFrameTooLarge) {
			t.Fatalf("err %v", err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations refusing an oversize frame", allocs)
	}
}

func TestFramesAcrossRingAndRead(t *testing.T) {
	// A frame whose prefix and body straddle gnet's ring buffer and the
	// current read, consumed with one copy.
	body := bytes.Repeat([]byte("x"), 100)
	data := append(frameOf(body), frameOf([]byte("tail"))...)
	var in gnetInbound
	in.deliver(data[:2])
	if _, ok, err := pendingFrame(&in, 1<<10); ok || err != nil {
		t.Fatalf("2 bytes: ok=%v err=%v", ok, err)
	}
	in.endTraffic()
	in.deliver(data[2:50])
	if size, ok, err := pendingFrame(&in, 1<<10); ok || err != nil || size != 100 {
		t.Fatalf("50 bytes: size=%d ok=%v err=%v", size, ok, err)
	}
	in.endTraffic()
	in.deliver(data[50:])
	for _, want := range [][]byte{body, []byte("tail")} {
		size, ok, err := pendingFrame(&in, 1<<10)
		if !ok || err != nil {
			t.Fatalf("ok=%v err=%v", ok, err)
		}
		got := make([]byte, size)
		if err := takeFrame(&in, got); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("frame %q, %v", got, err)
		}
	}
	if n := in.InboundBuffered(); n != 0 {
		t.Fatalf("%d bytes left", n)
	}
}

// splitAll is the reference: NextFrame over contiguous input.
func splitAll(data []byte, maxFrame int) (frames [][]byte, consumed int, err error) {
	for {
		frame, n, err := NextFrame(data[consumed:], maxFrame)
		if err != nil || n == 0 {
			return frames, consumed, err
		}
		frames = append(frames, frame)
		consumed += n
	}
}

func FuzzFrameSplit(f *testing.F) {
	f.Add([]byte{}, uint16(0), uint16(0))
	f.Add(frameOf([]byte("hello")), uint16(2), uint16(6))
	f.Add(append(frameOf([]byte("a")), frameOf([]byte("bc"))...), uint16(5), uint16(7))
	f.Add([]byte{0, 0, 0x10, 1, 1, 2, 3}, uint16(1), uint16(3)) // too large
	f.Add([]byte{0x80, 0, 0, 0}, uint16(3), uint16(3))          // negative
	f.Add(append(frameOf(nil), 0, 0), uint16(4), uint16(5))     // empty frame + partial
	req := appendRequest(nil, 1, &testClientID, apiVersionsReq(3))
	req = appendRequest(req, 2, nil, kmsg.NewPtrMetadataRequest())
	f.Add(req, uint16(9), uint16(30))
	f.Fuzz(func(t *testing.T, data []byte, cut1, cut2 uint16) {
		const maxFrame = 4096
		want, wantConsumed, wantErr := splitAll(data, maxFrame)

		a, b := int(cut1)%(len(data)+1), int(cut2)%(len(data)+1)
		if a > b {
			a, b = b, a
		}
		var (
			in     gnetInbound
			got    [][]byte
			gotErr error
			took   int
		)
		for _, chunk := range [][]byte{data[:a], data[a:b], data[b:]} {
			in.deliver(chunk)
			for {
				size, ok, err := pendingFrame(&in, maxFrame)
				if err != nil {
					gotErr = err
					break
				}
				if !ok {
					break
				}
				if size > maxFrame {
					t.Fatalf("size %d accepted above max", size)
				}
				dst := make([]byte, size)
				if err := takeFrame(&in, dst); err != nil {
					t.Fatalf("takeFrame: %v", err)
				}
				got = append(got, dst)
				took += FrameHeaderSize + size
			}
			if gotErr != nil {
				break
			}
			in.endTraffic()
		}
		if !errors.Is(gotErr, wantErr) || (gotErr == nil) != (wantErr == nil) {
			t.Fatalf("chunked err %v, whole err %v", gotErr, wantErr)
		}
		if len(got) != len(want) {
			t.Fatalf("chunked gave %d frames, whole %d", len(got), len(want))
		}
		for i := range got {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("frame %d differs: %q vs %q", i, got[i], want[i])
			}
		}
		if took != wantConsumed {
			t.Fatalf("consumed %d, want %d", took, wantConsumed)
		}
		if gotErr == nil && in.InboundBuffered() != len(data)-wantConsumed {
			t.Fatalf("%d bytes left buffered, want %d", in.InboundBuffered(), len(data)-wantConsumed)
		}
		if wantConsumed > len(data) {
			t.Fatalf("consumed %d of %d bytes", wantConsumed, len(data))
		}
	})
}

// TestFillPartial assembles a frame larger than one read piece by piece,
// with leftovers in the ring between reads, and checks that the buffer
// grows with the data, not with the size prefix.
func TestFillPartial(t *testing.T) {
	body := make([]byte, 200_000)
	for i := range body {
		body[i] = byte(i * 7)
	}
	wire := frameOf(body)
	var g gnetInbound
	var dst []byte
	started := false
	for off := 0; off < len(wire); {
		n := min(65536, len(wire)-off)
		if off == 0 {
			n = 3 // the size prefix itself arrives split
		}
		g.deliver(wire[off : off+n])
		off += n
		if !started {
			if g.InboundBuffered() <= FrameHeaderSize {
				g.endTraffic()
				continue
			}
			size, ok, err := pendingFrame(&g, 1<<20)
			if err != nil || ok || size != len(body) {
				t.Fatalf("pendingFrame = %d, %v, %v", size, ok, err)
			}
			if _, err := g.Discard(FrameHeaderSize); err != nil {
				t.Fatal(err)
			}
			started = true
		}
		var done bool
		var err error
		dst, done, err = fillPartial(&g, dst, len(body))
		if err != nil {
			t.Fatal(err)
		}
		if cap(dst) > 2*max(len(dst), 4096) {
			t.Fatalf("capacity %d for %d bytes received", cap(dst), len(dst))
		}
		if done != (off == len(wire)) {
			t.Fatalf("done = %v at %d of %d", done, off, len(wire))
		}
		g.endTraffic()
	}
	if !bytes.Equal(dst, body) {
		t.Fatal("assembled frame differs")
	}
	// A huge claim with a few bytes behind it allocates for the bytes.
	var h gnetInbound
	h.deliver([]byte("0123456789"))
	got, done, err := fillPartial(&h, nil, 100<<20)
	if err != nil || done || len(got) != 10 || cap(got) > 4096 {
		t.Fatalf("fillPartial on a 100 MiB claim: len %d cap %d done %v err %v", len(got), cap(got), done, err)
	}
}

// skipWritten leaves exactly the bytes a short writev did not take, in
// order, whatever piece the write stopped in.
func TestSkipWritten(t *testing.T) {
	for n := 0; n <= 9; n++ {
		iov := [][]byte{[]byte("abc"), []byte("de"), []byte("fghi")}
		var got []byte
		for _, b := range skipWritten(iov, n) {
			got = append(got, b...)
		}
		if want := "abcdefghi"[n:]; string(got) != want {
			t.Errorf("after %d bytes: %q, want %q", n, got, want)
		}
	}
}
