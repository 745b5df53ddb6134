// The Fetch response encoder that leaves record bytes in place: a
// response whose record blocks are written from where they lie (vectored
// I/O) instead of being copied into the reply buffer.

package records

import (
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/valyala/bytebufferpool"

	"github.com/kafka-iggy/kafka-iggy/codec/wire"
)

// Cut is one block of a vectored encoding that is not copied into the
// reply buffer: Data belongs at offset At of the bytes AppendVectored
// produced (between dst[:At] and dst[At:]).
type Cut struct {
	At   int
	Data []byte
}

// cutMin is the smallest record block AppendVectored leaves out of the
// reply buffer: below it a copy is cheaper than one more iovec.
const cutMin = 4 << 10

// fetchBufPool holds the record buffers of Fetch responses.
var fetchBufPool bytebufferpool.Pool

// fetchPoolMaxBuf is the largest record buffer the sync.Pool keeps (4 MiB):
// larger ones go to the collector, so idle pooled buffers do not hold
// memory outside the budget that a burst of large fetches grew.
const fetchPoolMaxBuf = 4 << 20

// fetchKeep holds the large record buffers (wire.KeepMin and up) of recent
// Fetch responses across garbage collections (see wire.Keep): 1/32 of the
// memory budget, at most 32 MiB (a franz-go consumer of 4 partitions
// fetches about 4.2 MiB, the Java consumer's 10 partitions about 10 MiB).
var fetchKeep = wire.NewKeep(32, 32<<20)

// GrowFetch returns dst, a Fetch response's record bytes, with room for n
// more, taking a kept buffer when one fits (GrowFetch copies dst into it).
// Release gives the buffer back.
func GrowFetch(dst []byte, n int) []byte { return fetchKeep.Grow(dst, n) }

// NewFetchBuffer returns an empty record buffer for a FetchResponse, from
// the pool Release returns it to.
func NewFetchBuffer() *bytebufferpool.ByteBuffer {
	b := fetchBufPool.Get()
	b.B = b.B[:0]
	return b
}

// BufferOwner is told when the record buffer of a FetchResponse went back
// to the pool (its bytes written, dropped, or copied by AppendTo), so it
// can return what it reserved for them.
type BufferOwner interface {
	BufferReleased()
}

// FetchResponse is a FetchResponse whose record bytes live in Buf
// (NewFetchBuffer), returned to the pool and reported to Owner (when set)
// by AppendTo, or by Release after AppendVectored: encode it once.
type FetchResponse struct {
	*kmsg.FetchResponse
	Buf   *bytebufferpool.ByteBuffer
	Owner BufferOwner
	cuts  []Cut
}

// AppendTo encodes the response, then releases the record buffer (the
// partitions' record bytes are emptied: a second encoding carries none).
func (r *FetchResponse) AppendTo(dst []byte) []byte {
	dst = r.FetchResponse.AppendTo(dst)
	r.Release()
	return dst
}

// AppendVectored encodes the response like AppendTo, except that the
// record bytes of partitions holding at least cutMin of them (at most
// maxCuts partitions) stay in the record buffer: the front door writes
// them from there, which saves copying every fetched byte once more. The
// record buffer is released by Release.
func (r *FetchResponse) AppendVectored(dst []byte, maxCuts int) []byte {
	r.cuts = r.cuts[:0]
	if r.Buf == nil || maxCuts <= 0 || !plainFetchEncoding(r.FetchResponse) {
		return r.AppendTo(dst)
	}
	return appendFetchResponse(dst, r.FetchResponse, func(dst, b []byte) []byte {
		if len(b) < cutMin || len(r.cuts) >= maxCuts {
			return append(dst, b...)
		}
		r.cuts = append(r.cuts, Cut{At: len(dst), Data: b})
		return dst
	})
}

// Cuts returns the record blocks AppendVectored left out.
func (r *FetchResponse) Cuts() []Cut { return r.cuts }

// Release returns the record buffer to the pool and tells the owner (the
// partitions' record bytes are emptied: a later encoding carries none).
// Calling it again does nothing.
func (r *FetchResponse) Release() {
	if r.Buf == nil {
		return
	}
	for i := range r.Topics {
		for j := range r.Topics[i].Partitions {
			r.Topics[i].Partitions[j].RecordBatches = []byte{}
		}
	}
	clear(r.cuts)
	r.cuts = r.cuts[:0]
	switch {
	case fetchKeep.Put(r.Buf.B):
		r.Buf.B = nil
		fetchBufPool.Put(r.Buf)
	case cap(r.Buf.B) <= fetchPoolMaxBuf:
		fetchBufPool.Put(r.Buf)
	}
	r.Buf = nil
	if r.Owner != nil {
		r.Owner.BufferReleased()
	}
}

// plainFetchEncoding reports whether resp holds only what appendFetchResponse
// encodes: no aborted transactions, no tagged fields (diverging epoch,
// current leader, snapshot id, node endpoints), no unknown tags. The
// bridge's Fetch handler never sets any of them; anything else goes
// through kmsg.
func plainFetchEncoding(resp *kmsg.FetchResponse) bool {
	if len(resp.Brokers) > 0 || resp.UnknownTags.Len() > 0 {
		return false
	}
	for i := range resp.Topics {
		t := &resp.Topics[i]
		if t.UnknownTags.Len() > 0 {
			return false
		}
		for j := range t.Partitions {
			p := &t.Partitions[j]
			if len(p.AbortedTransactions) > 0 || p.UnknownTags.Len() > 0 ||
				p.DivergingEpoch.Epoch != -1 || p.DivergingEpoch.EndOffset != -1 || p.DivergingEpoch.UnknownTags.Len() > 0 ||
				p.CurrentLeader.LeaderID != -1 || p.CurrentLeader.LeaderEpoch != -1 || p.CurrentLeader.UnknownTags.Len() > 0 ||
				p.SnapshotID.EndOffset != -1 || p.SnapshotID.Epoch != -1 || p.SnapshotID.UnknownTags.Len() > 0 {
				return false
			}
		}
	}
	return true
}

// appendFetchResponse encodes resp (which plainFetchEncoding accepted)
// byte for byte as kmsg's FetchResponse.AppendTo does, except that every
// partition's record bytes go through records(dst, b) after their length
// prefix (which appends them, or records where they belong).
func appendFetchResponse(dst []byte, resp *kmsg.FetchResponse, records func(dst, b []byte) []byte) []byte {
	version := resp.Version
	flexible := version >= 12
	arrayLen := func(dst []byte, n int) []byte {
		if flexible {
			return kbin.AppendCompactArrayLen(dst, n)
		}
		return kbin.AppendArrayLen(dst, n)
	}
	if version >= 1 {
		dst = kbin.AppendInt32(dst, resp.ThrottleMillis)
	}
	if version >= 7 {
		dst = kbin.AppendInt16(dst, resp.ErrorCode)
		dst = kbin.AppendInt32(dst, resp.SessionID)
	}
	dst = arrayLen(dst, len(resp.Topics))
	for i := range resp.Topics {
		t := &resp.Topics[i]
		switch {
		case version >= 13:
			dst = kbin.AppendUuid(dst, t.TopicID)
		case flexible:
			dst = kbin.AppendCompactString(dst, t.Topic)
		default:
			dst = kbin.AppendString(dst, t.Topic)
		}
		dst = arrayLen(dst, len(t.Partitions))
		for j := range t.Partitions {
			p := &t.Partitions[j]
			dst = kbin.AppendInt32(dst, p.Partition)
			dst = kbin.AppendInt16(dst, p.ErrorCode)
			dst = kbin.AppendInt64(dst, p.HighWatermark)
			if version >= 4 {
				dst = kbin.AppendInt64(dst, p.LastStableOffset)
			}
			if version >= 5 {
				dst = kbin.AppendInt64(dst, p.LogStartOffset)
			}
			if version >= 4 {
				isNil := p.AbortedTransactions == nil
				if flexible {
					dst = kbin.AppendCompactNullableArrayLen(dst, 0, isNil)
				} else {
					dst = kbin.AppendNullableArrayLen(dst, 0, isNil)
				}
			}
			if version >= 11 {
				dst = kbin.AppendInt32(dst, p.PreferredReadReplica)
			}
			b := p.RecordBatches
			switch {
			case b == nil && flexible:
				dst = append(dst, 0)
			case b == nil:
				dst = kbin.AppendInt32(dst, -1)
			default:
				if flexible {
					dst = kbin.AppendUvarint(dst, 1+uint32(len(b)))
				} else {
					dst = kbin.AppendInt32(dst, int32(len(b)))
				}
				dst = records(dst, b)
			}
			if flexible {
				dst = append(dst, 0) // no tagged fields
			}
		}
		if flexible {
			dst = append(dst, 0)
		}
	}
	if flexible {
		dst = append(dst, 0)
	}
	return dst
}
