package telemetry

import (
	"bytes"
	"errors"
	"io"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy/xerial"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Kafka compression type ids (PushTelemetry's CompressionType).
const (
	compressionNone   = 0
	compressionGzip   = 1
	compressionSnappy = 2
	compressionLZ4    = 3
	compressionZstd   = 4
)

// AcceptedCompression is what GetTelemetrySubscriptions offers, Kafka's
// list in Kafka's order of preference.
var AcceptedCompression = []int8{compressionZstd, compressionLZ4, compressionGzip, compressionSnappy}

// snappyMaxRatio bounds what one byte of snappy can decode to (the densest
// element copies 64 bytes for 3), so the output buffer is never larger
// than this many times the input.
const snappyMaxRatio = 22

// errTooLarge: the payload decompresses to more than the limit.
var errTooLarge = errors.New("telemetry: decompressed payload above its limit")

// errCompression: a compression type not offered.
var errCompression = errors.New("telemetry: compression type not accepted")

// zstdMaxWindow bounds the history a zstd frame may ask for.
const zstdMaxWindow = 8 << 20

// decompress returns payload decoded with codec, at most limit bytes.
func decompress(codec int8, payload []byte, limit int) ([]byte, error) {
	var r io.Reader
	switch codec {
	case compressionNone:
		if len(payload) > limit {
			return nil, errTooLarge
		}
		return payload, nil
	case compressionGzip:
		gz, err := gzip.NewReader(bytes.NewReader(payload))
		if err != nil {
			return nil, ErrMalformed
		}
		defer gz.Close()
		r = gz
	case compressionSnappy:
		// The Java client writes xerial-framed snappy; DecodeCapped reads
		// it (or one raw block) into a buffer of bounded capacity.
		size := min(limit, snappyMaxRatio*len(payload)+4096)
		out, err := xerial.DecodeCapped(make([]byte, 0, size), payload)
		if errors.Is(err, xerial.ErrDstTooSmall) && size == limit {
			return nil, errTooLarge
		}
		if err != nil {
			return nil, ErrMalformed
		}
		return out, nil
	case compressionLZ4:
		r = lz4.NewReader(bytes.NewReader(payload))
	case compressionZstd:
		zd, err := zstd.NewReader(bytes.NewReader(payload), zstd.WithDecoderConcurrency(1),
			zstd.WithDecoderMaxWindow(zstdMaxWindow), zstd.WithDecoderMaxMemory(uint64(limit)+1))
		if err != nil {
			return nil, ErrMalformed
		}
		defer zd.Close()
		r = zd
	default:
		return nil, errCompression
	}
	out, err := io.ReadAll(io.LimitReader(r, int64(limit)+1))
	if err != nil {
		if errors.Is(err, zstd.ErrDecoderSizeExceeded) || errors.Is(err, zstd.ErrWindowSizeExceeded) {
			return nil, errTooLarge
		}
		return nil, ErrMalformed
	}
	if len(out) > limit {
		return nil, errTooLarge
	}
	return out, nil
}
