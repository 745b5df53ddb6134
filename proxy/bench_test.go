package proxy

import (
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"
)

// readInto reads one response frame into buf (grown if needed), without
// allocating in steady state; it returns the correlation id.
func readInto(b *testing.B, c net.Conn, buf *[]byte) int32 {
	var hdr [4]byte
	if _, err := io.ReadFull(c, hdr[:]); err != nil {
		b.Fatal(err)
	}
	size := int(binary.BigEndian.Uint32(hdr[:]))
	if cap(*buf) < size {
		*buf = make([]byte, size)
	}
	*buf = (*buf)[:size]
	if _, err := io.ReadFull(c, *buf); err != nil {
		b.Fatal(err)
	}
	return int32(binary.BigEndian.Uint32(*buf))
}

// BenchmarkRoundTrip: one ApiVersions v3 request, one response, over
// loopback, sequentially. allocs/op counts the whole process (client,
// server, gnet).
func BenchmarkRoundTrip(b *testing.B) {
	e := startEnv(b, nil)
	c := dial(b, e.addr)
	_ = c.SetDeadline(time.Now().Add(time.Minute))
	req := appendRequest(nil, 1, &testClientID, apiVersionsReq(3))
	var buf []byte
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := c.Write(req); err != nil {
			b.Fatal(err)
		}
		if corr := readInto(b, c, &buf); corr != 1 {
			b.Fatalf("corr %d", corr)
		}
	}
}

// BenchmarkRoundTripPipelined: batches of 32 ApiVersions requests in one
// write, replies read back in order; ns/op is per request.
func BenchmarkRoundTripPipelined(b *testing.B) {
	const depth = 32
	e := startEnv(b, func(c *Config) { c.Limits.MaxInFlight = depth })
	c := dial(b, e.addr)
	_ = c.SetDeadline(time.Now().Add(time.Minute))
	var batch []byte
	for i := 0; i < depth; i++ {
		batch = appendRequest(batch, int32(i), &testClientID, apiVersionsReq(3))
	}
	var buf []byte
	b.ReportAllocs()
	b.ResetTimer()
	for n := 0; n < b.N; n += depth {
		if _, err := c.Write(batch); err != nil {
			b.Fatal(err)
		}
		for i := 0; i < depth; i++ {
			if corr := readInto(b, c, &buf); corr != int32(i) {
				b.Fatalf("reply %d has corr %d", i, corr)
			}
		}
	}
}

// BenchmarkLoopPerFrame is the event loop's share of one request: split the
// frame off gnet's buffer, copy it into a pooled buffer, parse the header.
func BenchmarkLoopPerFrame(b *testing.B) {
	frame := appendRequest(nil, 1, &testClientID, apiVersionsReq(3))
	s := &Server{}
	in := &gnetInbound{}
	b.ReportAllocs()
	b.SetBytes(int64(len(frame)))
	for i := 0; i < b.N; i++ {
		in.latest = frame
		size, ok, err := pendingFrame(in, DefaultMaxFrameBytes)
		if !ok || err != nil {
			b.Fatal(ok, err)
		}
		buf := s.inPool.Get()
		if cap(buf.B) < size {
			buf.B = make([]byte, size)
		}
		buf.B = buf.B[:size]
		if err := takeFrame(in, buf.B); err != nil {
			b.Fatal(err)
		}
		if _, _, _, err := parseHeaderPrefix(buf.B); err != nil {
			b.Fatal(err)
		}
		if _, _, _, err := parseHeaderRest(buf.B, true); err != nil {
			b.Fatal(err)
		}
		s.inPool.Put(buf)
	}
}
