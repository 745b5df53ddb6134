package records

import (
	"bytes"
	"math/rand/v2"
	"runtime"
	"testing"
	"unsafe"

	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/valyala/bytebufferpool"
)

// splice rebuilds the frame body a vectored encoding describes.
func splice(dst []byte, cuts []Cut) []byte {
	var out []byte
	at := 0
	for _, c := range cuts {
		out = append(out, dst[at:c.At]...)
		out = append(out, c.Data...)
		at = c.At
	}
	return append(out, dst[at:]...)
}

// randomFetchResponse builds a response as the handler does (plus some
// variety): names, ids, offsets, errors, null, empty, small and large
// record blocks out of one shared buffer.
func randomFetchResponse(r *rand.Rand, version int16) (*FetchResponse, []byte) {
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = version
	resp.ThrottleMillis = r.Int32N(100)
	resp.ErrorCode = int16(r.IntN(3))
	resp.SessionID = r.Int32N(5)
	buf := new(bytebufferpool.ByteBuffer)
	type span struct{ i, j, start, end int }
	var spans []span
	resp.Topics = make([]kmsg.FetchResponseTopic, r.IntN(4))
	for i := range resp.Topics {
		rt := &resp.Topics[i]
		*rt = kmsg.NewFetchResponseTopic()
		rt.Topic = string(bytes.Repeat([]byte{'a' + byte(i)}, r.IntN(200)))
		for k := range rt.TopicID {
			rt.TopicID[k] = byte(r.UintN(256))
		}
		rt.Partitions = make([]kmsg.FetchResponseTopicPartition, r.IntN(5))
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			*rp = kmsg.NewFetchResponseTopicPartition()
			rp.Partition = r.Int32N(1000)
			rp.ErrorCode = int16(r.IntN(2))
			rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = r.Int64(), r.Int64(), r.Int64()
			rp.PreferredReadReplica = -1
			switch r.IntN(4) {
			case 0:
				rp.RecordBatches = nil
			case 1:
				rp.RecordBatches = []byte{}
			default:
				n := r.IntN(3 * cutMin)
				start := len(buf.B)
				for range n {
					buf.B = append(buf.B, byte(r.UintN(256)))
				}
				spans = append(spans, span{i, j, start, len(buf.B)})
			}
		}
	}
	for _, s := range spans {
		resp.Topics[s.i].Partitions[s.j].RecordBatches = buf.B[s.start:s.end:s.end]
	}
	want := resp.AppendTo(nil)
	return &FetchResponse{FetchResponse: resp, Buf: buf}, want
}

// TestFetchVectoredMatchesKmsg checks that the vectored encoding, spliced,
// is byte for byte kmsg's at every version, whatever the cut limit.
func TestFetchVectoredMatchesKmsg(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for version := int16(0); version <= kmsg.NewPtrFetchRequest().MaxVersion(); version++ {
		for iter := range 200 {
			fr, want := randomFetchResponse(r, version)
			maxCuts := iter % 4
			prefix := []byte("hdr")
			got := fr.AppendVectored(append([]byte(nil), prefix...), maxCuts)
			cuts := fr.Cuts()
			if len(cuts) > maxCuts {
				t.Fatalf("v%d: %d cuts, limit %d", version, len(cuts), maxCuts)
			}
			for _, c := range cuts {
				if len(c.Data) < cutMin {
					t.Fatalf("v%d: a cut of %d bytes", version, len(c.Data))
				}
			}
			full := splice(got, cuts)
			if !bytes.Equal(full[:len(prefix)], prefix) || !bytes.Equal(full[len(prefix):], want) {
				t.Fatalf("v%d iteration %d: vectored encoding differs from kmsg's (%d vs %d bytes)", version, iter, len(full)-len(prefix), len(want))
			}
			fr.Release()
			fr.Release() // idempotent
		}
	}
}

// TestFetchVectoredFallsBack checks that a response with fields the fast
// encoder does not write goes through kmsg, without cuts.
func TestFetchVectoredFallsBack(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	fr, _ := randomFetchResponse(r, 12)
	fr.Topics = append(fr.Topics, kmsg.NewFetchResponseTopic())
	p := kmsg.NewFetchResponseTopicPartition()
	p.CurrentLeader.LeaderID = 1
	p.RecordBatches = make([]byte, 2*cutMin)
	fr.Topics[len(fr.Topics)-1].Partitions = []kmsg.FetchResponseTopicPartition{p}
	want := fr.FetchResponse.AppendTo(nil)
	got := fr.AppendVectored(nil, 8)
	cuts := fr.Cuts()
	if len(cuts) != 0 || !bytes.Equal(got, want) {
		t.Fatalf("fallback: %d cuts, equal %v", len(cuts), bytes.Equal(got, want))
	}
}

// TestFetchBufferKeptAcrossCollections: a large Fetch record buffer goes
// back to the keep on Release and is what the next Fetch grows into, even
// after two collections (which empty the sync.Pool of small buffers): a
// consumer's steady fetching allocates no record buffer whatever the
// collector does.
func TestFetchBufferKeptAcrossCollections(t *testing.T) {
	const size = 4<<20 + 200<<10 // franz-go's 4 partitions of 1 MiB
	buf := NewFetchBuffer()
	buf.B = GrowFetch(buf.B, size)
	buf.B = append(buf.B, "records"...)
	first := unsafe.SliceData(buf.B)
	r := &FetchResponse{FetchResponse: kmsg.NewPtrFetchResponse(), Buf: buf}
	r.Release()
	runtime.GC()
	runtime.GC()
	next := NewFetchBuffer()
	next.B = GrowFetch(next.B, 1<<20) // the first partition's poll
	next.B = GrowFetch(next.B, size-(1<<20))
	if unsafe.SliceData(next.B) != first {
		t.Fatal("the next Fetch did not reuse the released record buffer")
	}
	if len(next.B) != 0 {
		t.Fatalf("the reused buffer came with %d bytes", len(next.B))
	}
	(&FetchResponse{FetchResponse: kmsg.NewPtrFetchResponse(), Buf: next}).Release()
}
