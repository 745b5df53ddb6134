package iggy

import (
	"bufio"

	"github.com/valyala/bytebufferpool"

	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
	"github.com/kafka-iggy/kafka-iggy/codec/wire"
)

// replyKeep holds the large reply buffers (poll replies of wire.KeepMin and
// up) of every client across garbage collections (see wire.Keep): 1/64 of
// the memory budget, at most 16 MiB (a session reads one reply at a time;
// a Fetch's polls are about 1 MiB each).
var replyKeep = wire.NewKeep(64, 16<<20)

// replyBufs is the pool of reply buffers: small ones in a sync.Pool, large
// ones in replyKeep.
type replyBufs struct {
	pool bytebufferpool.Pool
}

// Get returns a reply buffer (its bytes empty).
func (p *replyBufs) Get() *bytebufferpool.ByteBuffer { return p.pool.Get() }

// Put returns rb, whose bytes nobody reads any more.
func (p *replyBufs) Put(rb *bytebufferpool.ByteBuffer) {
	if replyKeep.Put(rb.B) {
		rb.B = nil
	}
	p.pool.Put(rb)
}

// sizeFor gives rb a kept buffer that holds the whole frame br is about to
// deliver, when its header is there and the frame is large: ReadFrame then
// reads it without growing. Otherwise rb is left as it is (ReadFrame grows
// its buffer as the bytes arrive, and reports any error).
func (p *replyBufs) sizeFor(rb *bytebufferpool.ByteBuffer, br *bufio.Reader) {
	hdr, err := br.Peek(icodec.HeaderSize)
	if err != nil {
		return
	}
	size, _, err := icodec.PeekFrame(hdr, icodec.MaxFrameSize)
	if err != nil || int(size) <= cap(rb.B) || int(size) < wire.KeepMin {
		return
	}
	if b := replyKeep.Get(int(size)); b != nil {
		rb.B = b
	}
}
