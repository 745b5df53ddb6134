package txn

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/rs/zerolog"

	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
	"github.com/kafka-iggy/kafka-iggy/codec/records"
)

// TestSnapshotRecovery: a coordinator with snapshot_every 50 runs 300
// transactions over 30 transactional ids (about 930 decision-log records);
// a new owner loads the latest snapshot and reads only the log's tail (fewer
// than 2 x 50 records), and holds exactly the state of a coordinator that
// reads the whole log from offset 0; the recovered ids go on (InitProducerId
// bumps the epoch the log left).
func TestSnapshotRecovery(t *testing.T) {
	cl := iggyFor(t, "sn", 2)
	ref := func(topic string) iggy.TopicRef { return iggy.TopicRef{Stream: "kafka", Topic: topic} }
	var ids pids
	cfg := DefaultConfig()
	cfg.SnapshotEvery = 50
	ctx := context.Background()
	deps := Deps{Client: cl, Ref: ref, NewProducerID: ids.next}
	c1 := New(cfg, deps, zerolog.Nop())
	for i := range 30 {
		id := fmt.Sprintf("s%d", i)
		r := c1.InitProducerID(ctx, InitParams{ID: id, TimeoutMs: 60000, ProducerID: -1, Epoch: -1})
		if r.Code != 0 {
			t.Fatalf("init %s: %+v", id, r)
		}
		for j := range 10 {
			if add := c1.AddPartitions(ctx, id, r.ProducerID, r.Epoch, []Partition{{"sn", int32(j % 2)}}); add.Code != 0 {
				t.Fatalf("add %s: %+v", id, add)
			}
			if i == 29 && j == 9 {
				break // the last id's last transaction stays open
			}
			if code := c1.EndTxn(ctx, id, r.ProducerID, r.Epoch, j%3 != 0); code != 0 {
				t.Fatalf("end %s: %d", id, code)
			}
		}
	}
	if _, code := c1.List(ctx); code != 0 { // reads the log to its end: a last snapshot may start
		t.Fatal(code)
	}
	c1.Close() // waits for its snapshot writer
	total := c1.snap.read

	c2 := New(cfg, deps, zerolog.Nop())
	if _, code := c2.List(ctx); code != 0 {
		t.Fatal(code)
	}
	full := New(cfg, deps, zerolog.Nop())
	full.snap.loaded = true // no snapshot: the log from offset 0
	full.cfg.SnapshotEvery = 0
	if _, code := full.List(ctx); code != 0 {
		t.Fatal(code)
	}
	c2.Close()
	t.Logf("decision log: %d records; a new owner read %d after the snapshot covering %d, a full replay %d", total, c2.snap.read, c2.snap.covers, full.snap.read)
	if full.snap.read < 900 {
		t.Fatalf("a full replay read %d records, want the whole log (900+)", full.snap.read)
	}
	if c2.snap.read >= 2*cfg.SnapshotEvery || c2.snap.covers == 0 {
		t.Fatalf("a new owner read %d records (snapshot covering %d), want fewer than %d", c2.snap.read, c2.snap.covers, 2*cfg.SnapshotEvery)
	}
	if !reflect.DeepEqual(c2.txns, full.txns) || len(c2.txns) != 30 {
		t.Fatalf("state after the snapshot and the tail differs from the full replay:\n%v\n%v", c2.txns, full.txns)
	}
	if d := c2.Describe(ctx, "s29"); d.Code != 0 || d.State != Ongoing {
		t.Fatalf("the open transaction after recovery: %+v", d)
	}
	before := full.txns["s7"]
	r := c2.InitProducerID(ctx, InitParams{ID: "s7", TimeoutMs: 60000, ProducerID: -1, Epoch: -1})
	if r.Code != 0 || r.ProducerID != before.ProducerID || r.Epoch != before.Epoch+1 {
		t.Fatalf("init of a recovered id: %+v, want producer %d epoch %d", r, before.ProducerID, before.Epoch+1)
	}
	checkSnapshotsPruned(t, c1)
}

// checkSnapshotsPruned: of the many snapshots c1 wrote, the two slots hold
// one each (every message of a slot is its one snapshot's chunks and
// trailer); with the latest slot gone a new owner loads the other, older
// one, and with both gone it reads the log from 0: either way it holds
// the full replay's state.
func checkSnapshotsPruned(t *testing.T, c1 *Coordinator) {
	t.Helper()
	ctx := context.Background()
	full := New(c1.cfg, c1.deps, zerolog.Nop())
	full.snap.loaded = true // no snapshot: the log from offset 0
	full.cfg.SnapshotEvery = 0
	if _, code := full.List(ctx); code != 0 {
		t.Fatal(code)
	}
	if c1.snap.written < 3 {
		t.Fatalf("%d snapshots written, want several", c1.snap.written)
	}
	latest, _, _, err := c1.latestTrailer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for slot := range snapSlots {
		tr, _, err := c1.lastTrailer(ctx, slot)
		if err != nil {
			t.Fatalf("slot %d: %v", slot, err)
		}
		c1.deps.Client.InvalidateTopic(c1.snapLog(slot))
		info, err := c1.deps.Client.GetTopic(ctx, c1.snapLog(slot))
		if err != nil || len(info.Details.Partitions) != 1 {
			t.Fatal(err)
		}
		if n := info.Details.Partitions[0].MessagesCount; n != uint64(tr.Chunks+1) {
			t.Errorf("slot %d holds %d messages, want one snapshot's %d (%d snapshots written)", slot, n, tr.Chunks+1, c1.snap.written)
		}
	}
	recovered := func(what string) {
		t.Helper()
		c := New(c1.cfg, c1.deps, zerolog.Nop())
		c.cfg.SnapshotEvery = 0 // reads, writes none
		if _, code := c.List(ctx); code != 0 {
			t.Fatal(code)
		}
		if !reflect.DeepEqual(c.txns, full.txns) {
			t.Errorf("%s: the state differs from the full replay", what)
		}
		t.Logf("%s: a new owner read %d records after a snapshot covering %d", what, c.snap.read, c.snap.covers)
	}
	for i, slot := range []int{latest, 1 - latest} {
		ref := c1.snapLog(slot)
		if err := c1.deps.Client.Do(ctx, &icodec.DeleteTopicRequest{StreamID: ref.StreamID(), TopicID: ref.TopicID()}, nil); err != nil {
			t.Fatal(err)
		}
		c1.deps.Client.InvalidateTopic(ref)
		recovered([]string{"the latest snapshot deleted", "both snapshots deleted"}[i])
	}
}

// TestSnapshotOldFormat: a snapshot of the format before claims (trailer
// version 3, the state a JSON array) is no snapshot to a coordinator that
// fences with claims: it reads the decision log from 0 and holds the full
// replay's state.
func TestSnapshotOldFormat(t *testing.T) {
	cl := iggyFor(t, "so", 1)
	ref := func(topic string) iggy.TopicRef { return iggy.TopicRef{Stream: "kafka", Topic: topic} }
	var ids pids
	cfg := DefaultConfig()
	cfg.SnapshotEvery = 0
	ctx := context.Background()
	deps := Deps{Client: cl, Ref: ref, NewProducerID: ids.next}
	c1 := New(cfg, deps, zerolog.Nop())
	r := c1.InitProducerID(ctx, InitParams{ID: "o", TimeoutMs: 60000, ProducerID: -1, Epoch: -1})
	if r.Code != 0 {
		t.Fatal(r)
	}
	// An old-format snapshot covering the whole log, with a wrong state.
	snap := c1.snapLog(0)
	if _, err := cl.CreateTopic(ctx, snap, 1, iggy.NeverExpire()); err != nil {
		t.Fatal(err)
	}
	msgs := cl.NewMessages()
	var d records.Decoder
	chunk := binary.LittleEndian.AppendUint64([]byte{snapChunkVersion}, 7)
	chunk = append(chunk, `[{"id":"o","pid":5,"e":9,"s":0,"st":-1}]`...)
	tr, _ := json.Marshal(snapTrailer{ID: 7, Covers: c1.f.Next, Chunks: 1, IDs: 1})
	for _, p := range [][]byte{chunk, append([]byte{3}, tr...)} {
		if err := msgs.Add(d.NewID(), 1, p, nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cl.Send(ctx, snap, 0, msgs); err != nil {
		t.Fatal(err)
	}
	c2 := New(cfg, deps, zerolog.Nop())
	if got := c2.Describe(ctx, "o"); got.Code != 0 || got.ProducerID != r.ProducerID || got.Epoch != r.Epoch || c2.snap.covers != 0 {
		t.Fatalf("after an old-format snapshot: %+v (covers %d), want producer %d epoch %d read from the log", got, c2.snap.covers, r.ProducerID, r.Epoch)
	}
}
