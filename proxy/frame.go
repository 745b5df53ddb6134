package proxy

import (
	"encoding/binary"
	"errors"
	"io"
)

// FrameHeaderSize is the size of the big-endian length prefix in front of
// every Kafka request and response.
const FrameHeaderSize = 4

// Frame and header errors (the connection closes with the matching
// CloseReason: frame_too_large, internal_error, bad_header).
var (
	// ErrFrameTooLarge: a size prefix exceeds the configured maximum (a
	// negative int32 size counts as too large).
	ErrFrameTooLarge = errors.New("proxy: frame exceeds max_frame_bytes")
	// ErrShortFrame: the inbound buffer returned fewer bytes than it
	// reported (an internal invariant, never expected).
	ErrShortFrame = errors.New("proxy: inbound buffer shorter than reported")
	// ErrBadHeader: the request header is truncated or malformed.
	ErrBadHeader = errors.New("proxy: malformed request header")
)

// ParseFrameSize reads the size prefix at the start of hdr (which must hold
// at least FrameHeaderSize bytes) and checks it against maxFrame. It never
// allocates; the caller allocates only after this has accepted the size.
func ParseFrameSize(hdr []byte, maxFrame int) (int, error) {
	if len(hdr) < FrameHeaderSize {
		return 0, io.ErrShortBuffer
	}
	size := binary.BigEndian.Uint32(hdr)
	// Compared as uint32, so a negative int32 is a huge size.
	if uint64(size) > uint64(maxFrame) {
		return 0, ErrFrameTooLarge
	}
	return int(size), nil
}

// NextFrame splits the first complete frame off buf, a contiguous view of
// buffered input. It returns the frame body (aliasing buf) and the bytes
// consumed (prefix included); n == 0 with a nil error means more input is
// needed. It is the pure form of what the event loop does on gnet's buffer
// (see takeFrame), used by tests and fuzzing.
func NextFrame(buf []byte, maxFrame int) (frame []byte, n int, err error) {
	if len(buf) < FrameHeaderSize {
		return nil, 0, nil
	}
	size, err := ParseFrameSize(buf, maxFrame)
	if err != nil {
		return nil, 0, err
	}
	if len(buf)-FrameHeaderSize < size {
		return nil, 0, nil
	}
	end := FrameHeaderSize + size
	return buf[FrameHeaderSize:end:end], end, nil
}

// inbound is the part of gnet.Conn the frame splitter reads through. All
// its methods are event-loop only.
type inbound interface {
	InboundBuffered() int
	Peek(n int) ([]byte, error)
	Discard(n int) (int, error)
	Read(p []byte) (int, error)
}

// pendingFrame reports whether in holds a complete frame and its body size.
// ok == false with a nil error means more input is needed. A bad size
// prefix is reported as soon as its 4 bytes are buffered, before the body
// arrives and before anything is allocated.
func pendingFrame(in inbound, maxFrame int) (size int, ok bool, err error) {
	buffered := in.InboundBuffered()
	if buffered < FrameHeaderSize {
		return 0, false, nil
	}
	hdr, err := in.Peek(FrameHeaderSize)
	if err != nil {
		return 0, false, ErrShortFrame
	}
	size, err = ParseFrameSize(hdr, maxFrame)
	if err != nil {
		return 0, false, err
	}
	if buffered-FrameHeaderSize < size {
		return size, false, nil
	}
	return size, true, nil
}

// takeFrame consumes the frame pendingFrame reported, copying its body
// into dst (len(dst) == size): one copy out of gnet's buffer, whatever its
// ring layout.
func takeFrame(in inbound, dst []byte) error {
	if _, err := in.Discard(FrameHeaderSize); err != nil {
		return ErrShortFrame
	}
	n, err := in.Read(dst)
	if n != len(dst) {
		return ErrShortFrame
	}
	if err != nil && len(dst) > 0 {
		return ErrShortFrame
	}
	return nil
}

// fillPartial moves buffered input into dst, a frame body being assembled
// that is size bytes long in the end, and reports whether it is complete.
// dst grows with the bytes that actually arrived (geometrically, never past
// size), so a size prefix claiming much more than was sent allocates
// nothing ahead of the data.
func fillPartial(in inbound, dst []byte, size int) ([]byte, bool, error) {
	want := min(size-len(dst), in.InboundBuffered())
	if want > 0 {
		dst = growFrame(dst, want, size)
		at := len(dst)
		dst = dst[:at+want]
		n, err := in.Read(dst[at:])
		if n != want || (err != nil && want > 0) {
			return dst[:at], false, ErrShortFrame
		}
	}
	return dst, len(dst) == size, nil
}

// growFrame returns b with room for n more bytes: capacity at least
// doubles (amortised appends) but never exceeds limit (limit >= len(b)+n).
func growFrame(b []byte, n, limit int) []byte {
	need := len(b) + n
	if need <= cap(b) {
		return b
	}
	c := max(2*cap(b), need, 4096)
	c = min(c, limit)
	nb := make([]byte, len(b), c)
	copy(nb, b)
	return nb
}
