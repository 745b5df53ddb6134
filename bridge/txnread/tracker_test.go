package txnread

import (
	"context"
	"encoding/binary"
	"slices"
	"testing"

	"github.com/rs/zerolog"

	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
	"github.com/kafka-iggy/kafka-iggy/budget"
	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
	"github.com/kafka-iggy/kafka-iggy/codec/records"
	"github.com/kafka-iggy/kafka-iggy/codec/wire"
)

// fakePart is a partition: one message per entry, offset = index.
type fakePart struct {
	t     *testing.T
	msgs  [][]byte // user headers
	polls int
}

func (f *fakePart) data(m records.TxnMark) {
	h := icodec.AppendHeader(nil, "kafka.v", icodec.HeaderKindRaw, []byte{1})
	f.msgs = append(f.msgs, icodec.AppendHeader(h, records.HeaderTxn, icodec.HeaderKindRaw, records.AppendTxnMark(nil, m)))
}

func (f *fakePart) plain() {
	f.msgs = append(f.msgs, icodec.AppendHeader(nil, "kafka.v", icodec.HeaderKindRaw, []byte{1}))
}

func (f *fakePart) marker(m records.TxnMark, ctl byte) {
	h := icodec.AppendHeader(nil, "kafka.v", icodec.HeaderKindRaw, []byte{1})
	h = icodec.AppendHeader(h, records.HeaderControl, icodec.HeaderKindRaw, []byte{ctl})
	h = icodec.AppendHeader(h, records.HeaderTxn, icodec.HeaderKindRaw, records.AppendTxnMark(nil, m))
	f.msgs = append(f.msgs, icodec.AppendHeader(h, records.HeaderCoordEpoch, icodec.HeaderKindRaw, binary.LittleEndian.AppendUint32(nil, 9)))
}

func (f *fakePart) poll(_ context.Context, _ iggy.TopicRef, _ int32, kind icodec.PollingKind, value uint64, count uint32) (*iggy.Polled, error) {
	f.polls++
	from := value
	if kind == icodec.PollingKindLast {
		from = uint64(max(len(f.msgs)-int(count), 0))
	}
	p := &iggy.Polled{}
	if len(f.msgs) > 0 {
		p.CurrentOffset = uint64(len(f.msgs) - 1)
	}
	if from >= uint64(len(f.msgs)) || count == 0 {
		return p, nil
	}
	end := min(from+uint64(count), uint64(len(f.msgs)))
	var b icodec.BatchBuilder
	b.Begin(nil)
	for i := from; i < end; i++ {
		if err := b.Add(wire.U128{Lo: i + 1}, 1_000_000*(i+1), []byte{0}, f.msgs[i]); err != nil {
			f.t.Fatal(err)
		}
	}
	out, err := b.Finish()
	if err != nil {
		f.t.Fatal(err)
	}
	icodec.StampBatch(out, 0, from, 5)
	p.Count, p.Batches = uint32(end-from), out
	return p, nil
}

var key = Key{Topic: "t", Partition: 0}

func stable(t *testing.T, tr *Tracker) int64 {
	t.Helper()
	lso, err := tr.Stable(context.Background(), key, iggy.TopicRef{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	return lso
}

// The last stable offset follows open transactions; aborted ranges are
// Kafka's (producer, first offset) for the fetched range; a second marker
// and late records of a decided transaction change nothing.
func TestTrackerStableAndAborted(t *testing.T) {
	a := records.TxnMark{ProducerID: 1, Epoch: 0, Seq: 1}
	b := records.TxnMark{ProducerID: 2, Epoch: 0, Seq: 1}
	f := &fakePart{t: t}
	bud := budget.New(1 << 20)
	tr := New(Config{}, f.poll, nil, bud, zerolog.Nop())
	if got := stable(t, tr); got != 0 {
		t.Fatalf("empty partition: lso %d", got)
	}
	f.plain() // 0
	f.data(a) // 1
	f.data(b) // 2
	f.plain() // 3
	if got := stable(t, tr); got != 1 {
		t.Fatalf("lso %d, want 1 (a open)", got)
	}
	f.marker(a, records.ControlCommit) // 4
	if got := stable(t, tr); got != 2 {
		t.Fatalf("lso %d, want 2 (b open)", got)
	}
	f.data(b)                         // 5
	f.marker(b, records.ControlAbort) // 6
	f.marker(b, records.ControlAbort) // 7: the coordinator's retry
	f.data(a)                         // 8: a late record of a decided transaction
	if got := stable(t, tr); got != 9 {
		t.Fatalf("lso %d, want 9 (nothing open)", got)
	}
	if got := tr.AbortedIn(nil, key, 0, 9, 0); !slices.Equal(got, []Aborted{{ProducerID: 2, First: 2, Last: 6}}) {
		t.Fatalf("aborted %+v", got)
	}
	if got := tr.AbortedIn(nil, key, 7, 9, 0); len(got) != 0 {
		t.Fatalf("aborted past its marker %+v", got)
	}
	if got := tr.AbortedIn(nil, key, 0, 2, 0); len(got) != 0 {
		t.Fatalf("aborted before its first record %+v", got)
	}
	ps := tr.Producers(key)
	if len(ps) != 2 || ps[0].ProducerID != 1 || ps[0].TxnStartOffset != -1 || ps[1].CoordinatorEpoch != 9 {
		t.Fatalf("producers %+v", ps)
	}
	if bud.InUse() <= 0 {
		t.Fatal("nothing charged to the budget")
	}
	// A range wholly below the log start goes.
	if got := tr.AbortedIn(nil, key, 0, 9, 7); len(got) != 0 {
		t.Fatalf("aborted below the log start %+v", got)
	}
}

// A new tracker (a restart) starts Window messages back from the end: an
// abort whose first records lie before it is reported from the producer's
// previous marker when one is in the window, else from the window's start.
func TestTrackerWindow(t *testing.T) {
	a := records.TxnMark{ProducerID: 1, Seq: 1}
	a2 := records.TxnMark{ProducerID: 1, Seq: 2}
	c := records.TxnMark{ProducerID: 3, Seq: 1}
	f := &fakePart{t: t}
	for range 4 {
		f.plain() // 0-3
	}
	f.data(c)                          // 4: before the window
	f.data(a)                          // 5: before the window
	f.plain()                          // 6: the window starts here
	f.marker(a, records.ControlCommit) // 7
	f.data(a2)                         // 8
	f.marker(a2, records.ControlAbort) // 9
	f.marker(c, records.ControlAbort)  // 10
	f.plain()                          // 11
	tr := New(Config{Window: 6}, f.poll, nil, nil, zerolog.Nop())
	if got := stable(t, tr); got != 12 {
		t.Fatalf("lso %d", got)
	}
	want := []Aborted{{ProducerID: 1, First: 8, Last: 9}, {ProducerID: 3, First: 6, Last: 10}}
	if got := tr.AbortedIn(nil, key, 0, 12, 0); !slices.Equal(got, want) {
		t.Fatalf("aborted %+v, want %+v", got, want)
	}
}

// MaxScan bounds one call: the unscanned rest is unstable; MaxAborted keeps
// the newest ranges.
func TestTrackerBounds(t *testing.T) {
	f := &fakePart{t: t}
	for i := range 5 {
		m := records.TxnMark{ProducerID: int64(i + 1), Seq: 1}
		f.data(m)
		f.marker(m, records.ControlAbort)
	}
	open := records.TxnMark{ProducerID: 99, Seq: 1}
	f.data(open) // 10: a producer past MaxProducers still holds the LSO
	tr := New(Config{MaxScan: 4, MaxAborted: 2, MaxProducers: 1}, f.poll, nil, nil, zerolog.Nop())
	if got := stable(t, tr); got != 4 {
		t.Fatalf("lso %d after a bounded scan, want 4", got)
	}
	for i := 0; stable(t, tr) != 10 || tr.Tracked(key) && len(tr.Producers(key)) != 1; i++ {
		if i > 3 {
			t.Fatal("the scan does not reach the end")
		}
	}
	got := tr.AbortedIn(nil, key, 0, 10, 0)
	if len(got) != 2 || got[0].ProducerID != 4 || got[1].ProducerID != 5 {
		t.Fatalf("aborted %+v, want producers 4 and 5", got)
	}
}

// A topic deleted and created again under the same name: the partition ends
// below what was scanned, and the tracker starts afresh (an old open
// transaction does not hold the new partition's last stable offset).
func TestTrackerPartitionRecreated(t *testing.T) {
	f := &fakePart{t: t}
	bud := budget.New(1 << 20)
	tr := New(Config{}, f.poll, nil, bud, zerolog.Nop())
	for range 5 {
		f.plain()
	}
	f.data(records.TxnMark{ProducerID: 1, Seq: 1}) // 5: stays open
	f.plain()
	if got := stable(t, tr); got != 5 {
		t.Fatalf("lso %d", got)
	}
	f.msgs = f.msgs[:0]
	f.plain()
	f.plain()
	if got := stable(t, tr); got != 2 {
		t.Fatalf("lso %d after the partition was recreated, want 2", got)
	}
	if got := tr.Producers(key); len(got) != 0 {
		t.Fatalf("producers of the old partition: %+v", got)
	}
}

// TestTrackerLate: read_committed's filter drops a transaction's records
// written after its marker (a zombie's late writes) and records of an epoch
// below a later marker's, never a record before its transaction's marker.
func TestTrackerLate(t *testing.T) {
	old := records.TxnMark{ProducerID: 1, Epoch: 0, Seq: 1}
	other := records.TxnMark{ProducerID: 1, Epoch: 0, Seq: 7} // unknown to the partition's markers
	next := records.TxnMark{ProducerID: 1, Epoch: 2, Seq: 2}
	f := &fakePart{t: t}
	tr := New(Config{}, f.poll, nil, nil, zerolog.Nop())
	if tr.Late(key) != nil {
		t.Fatal("a filter for an untracked partition")
	}
	f.data(old)                          // 0
	f.marker(old, records.ControlAbort)  // 1: fenced
	f.data(old)                          // 2: the zombie
	f.data(next)                         // 3
	f.marker(next, records.ControlAbort) // 4
	f.data(other)                        // 5: the zombie, below the marker's epoch
	f.data(records.TxnMark{ProducerID: 2, Epoch: 0, Seq: 1})
	stable(t, tr)
	late := tr.Late(key)
	for off, want := range []bool{false, false, true, false, false, true, false} {
		mk := []records.TxnMark{old, old, old, next, next, other, {ProducerID: 2, Epoch: 0, Seq: 1}}[off]
		if got := late(mk, uint64(off)); got != want {
			t.Errorf("offset %d %+v: late %v, want %v", off, mk, got, want)
		}
	}
}
