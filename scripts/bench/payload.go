package main

import (
	"fmt"
	"hash/fnv"

	"github.com/pierrec/lz4/v4"
)

// poolSize is the number of distinct payloads; record j carries payload
// j % poolSize. 1024 KiB-sized payloads span far more than lz4's 64 KiB
// window, so records do not compress against copies of themselves.
const poolSize = 1024

// words are the tokens of the payload text. rustdirect/src/main.rs has the
// same list in the same order: both programs must build the same bytes.
var words = [64]string{
	"order", "customer", "amount", "currency", "status", "created", "updated", "region",
	"warehouse", "shipment", "invoice", "payment", "refund", "account", "session", "device",
	"latency", "request", "response", "timeout", "partition", "offset", "segment", "replica",
	"leader", "follower", "producer", "consumer", "topic", "stream", "message", "header",
	"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel",
	"india", "juliet", "kilo", "lima", "mike", "november", "oscar", "papa",
	"quebec", "romeo", "sierra", "tango", "uniform", "victor", "whiskey", "xray",
	"yankee", "zulu", "north", "south", "east", "west", "true", "false",
}

// rng is xorshift64* with a fixed seed (the same sequence as the Rust
// program's Rng).
type rng uint64

func (r *rng) next() uint64 {
	x := uint64(*r)
	x ^= x >> 12
	x ^= x << 25
	x ^= x >> 27
	*r = rng(x)
	return x * 0x2545F4914F6CDD1D
}

// payloadPool builds poolSize payloads of size bytes: space-separated
// tokens, every 8th a six-digit number and the rest words. Such text
// compresses with lz4 roughly as log lines or JSON records do; random bytes
// would not compress at all and would make the lz4 runs meaningless.
func payloadPool(size int) [][]byte {
	r := rng(0x9E3779B97F4A7C15)
	pool := make([][]byte, poolSize)
	for i := range pool {
		buf := make([]byte, 0, size+16)
		for token := 0; len(buf) < size; token++ {
			v := r.next()
			if token%8 == 7 {
				buf = fmt.Appendf(buf, "%06d", v%1000000)
			} else {
				buf = append(buf, words[v>>58]...)
			}
			buf = append(buf, ' ')
		}
		pool[i] = buf[:size:size]
	}
	return pool
}

// poolHash is FNV-1a (64-bit) over every payload in order: the Rust program
// prints the same hash of its pool.
func poolHash(pool [][]byte) string {
	h := fnv.New64a()
	for _, p := range pool {
		h.Write(p)
	}
	return fmt.Sprintf("%016x", h.Sum64())
}

// lz4Ratio is the compression ratio (in/out) of the pool with lz4 in 64 KiB
// chunks, about what a producer's lz4 batches achieve.
func lz4Ratio(pool [][]byte) float64 {
	var in, out int
	var chunk []byte
	dst := make([]byte, lz4.CompressBlockBound(128<<10))
	var c lz4.Compressor
	flush := func() {
		if len(chunk) == 0 {
			return
		}
		n, err := c.CompressBlock(chunk, dst)
		if err != nil || n == 0 {
			n = len(chunk)
		}
		in += len(chunk)
		out += n
		chunk = chunk[:0]
	}
	for _, p := range pool {
		chunk = append(chunk, p...)
		if len(chunk) >= 64<<10 {
			flush()
		}
	}
	flush()
	if out == 0 {
		return 1
	}
	return float64(in) / float64(out)
}
