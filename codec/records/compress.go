// Decompression of Kafka record batches under a DecompressBudget.

package records

import (
	"bytes"
	"errors"
	"io"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy/xerial"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Kafka compression codecs (attributes bits 0-2).
const (
	CodecNone   = 0
	CodecGzip   = 1
	CodecSnappy = 2
	CodecLZ4    = 3
	CodecZstd   = 4
)

const (
	// recZstdMaxWindow is the largest zstd window accepted. The decoder's
	// history buffer is as large as the window a frame declares, so a tiny
	// hostile frame could otherwise pin up to 512 MiB. 8 MiB covers the
	// windows of Kafka's zstd levels up to 19 and of franz-go's encoder.
	recZstdMaxWindow = 8 << 20
	// recSnappyMaxRatio bounds what one byte of snappy data can decode to:
	// the densest snappy element copies 64 bytes for 3 bytes of input, so
	// a block declaring more than ~21.3x its size is not snappy. Output
	// buffers are never grown past this ratio (nor past the budget).
	recSnappyMaxRatio = 22
	// recMinOutput is the smallest output buffer a stream decode starts with.
	recMinOutput = 4 << 10
	// recMaxRetained is the largest buffer a decoder keeps for reuse once
	// an input is done; larger ones are dropped for the GC.
	recMaxRetained = 4 << 20
	// recMaxRetainedHeaders is the same for header scratch (entries).
	recMaxRetainedHeaders = 4 << 10
)

// recDecompressor decompresses batches into one reused output buffer. The
// codec readers are created on first use and reset afterwards, so a pooled
// decoder decompresses without allocating in steady state (the codecs' own
// block buffers aside).
type recDecompressor struct {
	src bytes.Reader
	gz  *gzip.Reader
	lz  *lz4.Reader
	zd  *zstd.Decoder
	out []byte
}

// errBudget is the internal signal that the budget ran out.
var errBudget = errors.New("budget")

// decompress decodes src (compressed with codec) into z.out and charges
// the budget with the output size. The result aliases z.out and is valid
// until the next call. Errors: errBudget when the output would exceed the
// budget, otherwise the codec's error (the caller reports both).
func (z *recDecompressor) decompress(codec int, src []byte, budget *DecompressBudget) ([]byte, error) {
	limit := budget.Left()
	var (
		out []byte
		err error
	)
	switch codec {
	case CodecGzip:
		z.src.Reset(src)
		if z.gz == nil {
			z.gz, err = gzip.NewReader(&z.src)
		} else {
			err = z.gz.Reset(&z.src)
		}
		if err != nil {
			return nil, err
		}
		out, err = z.readAll(z.gz, limit, len(src))
	case CodecSnappy:
		out, err = z.snappy(src, limit)
	case CodecLZ4:
		z.src.Reset(src)
		if z.lz == nil {
			z.lz = lz4.NewReader(&z.src)
		} else {
			z.lz.Reset(&z.src)
		}
		out, err = z.readAll(z.lz, limit, len(src))
	case CodecZstd:
		z.src.Reset(src)
		if z.zd == nil {
			z.zd, err = zstd.NewReader(&z.src,
				zstd.WithDecoderConcurrency(1),
				zstd.WithDecoderLowmem(true),
				zstd.WithDecoderMaxWindow(recZstdMaxWindow))
		} else {
			err = z.zd.Reset(&z.src)
		}
		if err != nil {
			return nil, err
		}
		out, err = z.readAll(z.zd, limit, len(src))
	default:
		return nil, ErrUnsupportedCompression
	}
	if err != nil {
		return nil, err
	}
	if !budget.charge(len(out)) {
		return nil, errBudget
	}
	return out, nil
}

// readAll streams r into z.out, never holding more than limit bytes: the
// buffer grows by doubling from a guess based on the compressed size and is
// capped at limit, and one byte more than limit means errBudget, so a
// decompression bomb stops at the budget instead of expanding.
func (z *recDecompressor) readAll(r io.Reader, limit, srcLen int) ([]byte, error) {
	out := z.out[:0]
	for {
		end := min(cap(out), limit)
		if len(out) == end {
			if end == limit {
				var one [1]byte
				n, err := io.ReadAtLeast(r, one[:], 1)
				if n > 0 {
					z.out = out
					return nil, errBudget
				}
				if err == io.EOF {
					break
				}
				z.out = out
				return nil, err
			}
			want := min(max(2*cap(out), 4*srcLen, recMinOutput), limit)
			grown := make([]byte, len(out), want)
			copy(grown, out)
			out = grown
			continue
		}
		n, err := r.Read(out[len(out):end])
		out = out[:len(out)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			z.out = out
			return nil, err
		}
	}
	z.out = out
	return out, nil
}

// snappy decodes Kafka's snappy: the xerial framing the Java client writes,
// or one raw snappy block (librdkafka and others), via klauspost's xerial
// package. Output space is bounded by the budget and by recSnappyMaxRatio
// times the input; the decode is retried with a doubled buffer while the
// declared size does not fit.
func (z *recDecompressor) snappy(src []byte, limit int) ([]byte, error) {
	hardCap := min(limit, recSnappyMaxRatio*len(src)+recMinOutput)
	size := min(max(cap(z.out), 4*len(src), recMinOutput), hardCap)
	for {
		if cap(z.out) < size {
			z.out = make([]byte, 0, size)
		}
		out, err := xerial.DecodeCapped(z.out[:0:size], src)
		if err == nil {
			return out, nil
		}
		if !errors.Is(err, xerial.ErrDstTooSmall) {
			return nil, err
		}
		if size >= hardCap {
			if hardCap == limit {
				return nil, errBudget
			}
			return nil, err
		}
		size = min(2*size, hardCap)
	}
}

// trim drops an output buffer too large to keep in a pooled decoder.
func (z *recDecompressor) trim() {
	if cap(z.out) > recMaxRetained {
		z.out = nil
	}
}
