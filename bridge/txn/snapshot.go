package txn

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
	"github.com/kafka-iggy/kafka-iggy/codec/records"
)

// Decision-log snapshots (Config.SnapshotEvery). A snapshot is the whole
// state of the coordinator (every id's last record that counts, and every
// shard's current claim, fence.go) after the decision-log records below an
// offset, Covers: a new owner that loads it and reads the
// log from Covers on holds what it would after reading the log from 0.
//
// Snapshots live in two one-partition topics beside the log, the slots
// `<log topic>.snap.0` and `.snap.1` (messages that never expire), so the
// log's records are unchanged and a log without snapshots (written before
// them, or with snapshot_every 0) is read from 0. One snapshot is one
// SEND_MESSAGES of consecutive messages: its chunks (version byte 2,
// snapshot id u64, the state, a JSON object {"txns": records, "claims":
// claims}, cut at snapChunk bytes), then its trailer (version byte 4,
// JSON: id, covers, chunk count). A reader takes each slot's last message;
// if it is a trailer whose chunks are the n messages before it, that slot
// holds a snapshot; it loads the one covering more, else it reads the log
// from 0 (a snapshot is an optimisation, never needed for correctness).
//
// A writer deletes and re-creates the slot that does not hold the latest
// snapshot, then writes there: the latest snapshot stays readable while
// the next one is written, and the two slots hold at most two snapshots
// (and one being written), however long the log grows. Writers racing (two
// sidecars, or a view gone stale) can at worst delete both slots; a reader
// then reads the log from 0 until the next snapshot.
//
// Every coordinator of the domain reads the whole log, so any of them may
// write a snapshot; one writes when it has read SnapshotEvery records past
// the latest snapshot it knows (loaded, written, or seen at the topic's end
// just before writing), in the background, from a copy of its state taken
// right after a read of the log. A coordinator applies its own records only
// when it reads them back, so the copy holds exactly the records below
// Covers. A snapshot of the format before claims (trailer version 3, a
// JSON array) is not a snapshot to this reader: it reads the log from 0.

const (
	snapChunkVersion   = 2
	snapTrailerVersion = 4
	// snapChunk is the most state bytes one snapshot message carries.
	snapChunk = 1 << 20
	// snapMaxBytes is the largest snapshot written (and the most chunks a
	// trailer may name, times snapChunk): one SEND_MESSAGES frame below
	// Iggy's 64 MiB.
	snapMaxBytes = 48 << 20
)

// snapState is the coordinator's snapshot bookkeeping; guarded by
// Coordinator.mu but writers and loaded (syncMu).
type snapState struct {
	loaded  bool   // the latest snapshot was looked for (syncMu)
	covers  uint64 // the latest snapshot known covers the log below this
	read    int    // decision-log records read (tests count them)
	written int    // snapshots written (tests count them)
	running bool   // a snapshot is being written
	writers sync.WaitGroup
}

// snapSlots is how many snapshot topics a decision log has.
const snapSlots = 2

// snapLog is the decision log's snapshot topic of slot (0 or 1).
func (c *Coordinator) snapLog(slot int) iggy.TopicRef {
	return iggy.TopicRef{Stream: c.deps.Log.Stream, Topic: c.deps.Log.Topic + ".snap." + strconv.Itoa(slot)}
}

// latestTrailer returns the slot whose last message is the trailer covering
// the most, its trailer and offset; errSnapshot when no slot has one.
func (c *Coordinator) latestTrailer(ctx context.Context) (int, snapTrailer, uint64, error) {
	best, found := -1, false
	var tr snapTrailer
	var off uint64
	var firstErr error
	for slot := range snapSlots {
		t, o, err := c.lastTrailer(ctx, slot)
		if err != nil {
			if !errors.Is(err, errSnapshot) && firstErr == nil {
				firstErr = err
			}
			continue
		}
		if !found || t.Covers > tr.Covers {
			best, tr, off, found = slot, t, o, true
		}
	}
	switch {
	case found:
		return best, tr, off, nil
	case firstErr != nil:
		return -1, tr, 0, firstErr
	}
	return -1, tr, 0, errSnapshot
}

var snapConsumer = icodec.Consumer{
	Kind: icodec.ConsumerKindConsumer,
	ID:   icodec.Identifier{Kind: icodec.IdentifierKindString, Value: []byte("kafka-iggy.txn.snap")},
}

type snapTrailer struct {
	ID     uint64 `json:"id"`
	Covers uint64 `json:"covers"`
	Chunks int    `json:"chunks"`
	IDs    int    `json:"ids"`
}

var errSnapshot = errors.New("txn: no usable snapshot")

// snapContent is what a snapshot holds: every id's last record that counts
// and every shard's current claim.
type snapContent struct {
	Txns   []*Txn     `json:"txns"`
	Claims []ClaimRef `json:"claims"`
}

// loadSnapshot loads the latest snapshot before the first read of the log
// (the caller holds syncMu); without one the log is read from 0.
func (c *Coordinator) loadSnapshot(ctx context.Context) {
	if c.snap.loaded {
		return
	}
	c.snap.loaded = true
	tr, st, err := c.readSnapshot(ctx)
	if err != nil {
		if !errors.Is(err, errSnapshot) {
			c.log.Warn().Err(err).Msg("transactions: reading the latest decision-log snapshot failed; reading the log from its start")
		}
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.f.Next != 0 || len(c.txns) != 0 || len(c.claims) != 0 {
		return // the log was read meanwhile (never: syncMu is held)
	}
	for _, t := range st.Txns {
		c.txns[t.ID] = t // counted when it was read: its claim may have been superseded since
	}
	for _, cl := range st.Claims {
		c.claims[cl.Shard] = cl
	}
	c.f.Next, c.snap.covers = tr.Covers, tr.Covers
	c.log.Info().Uint64("covers", tr.Covers).Int("ids", len(st.Txns)).Int("claims", len(st.Claims)).Msg("transactions: loaded the decision log's snapshot")
}

// lastTrailer returns the last message of a slot's snapshot topic as a
// trailer and its offset; errSnapshot when there is none.
func (c *Coordinator) lastTrailer(ctx context.Context, slot int) (snapTrailer, uint64, error) {
	ctx = iggy.Sidecar(ctx)
	ref := c.snapLog(slot)
	if _, err := c.deps.Client.GetTopic(ctx, ref); err != nil {
		if iggy.IsNotFound(err) {
			return snapTrailer{}, 0, errSnapshot
		}
		return snapTrailer{}, 0, err
	}
	p, err := c.deps.Client.Poll(ctx, &icodec.PollMessagesRequest{
		Consumer: snapConsumer, StreamID: ref.StreamID(), TopicID: ref.TopicID(),
		PartitionID: icodec.OptionalPartition{Present: true, PartitionID: 0},
		Strategy:    icodec.PollingStrategy{Kind: icodec.PollingKindLast}, Count: 1,
	})
	if err != nil {
		if iggy.IsNotFound(err) {
			return snapTrailer{}, 0, errSnapshot
		}
		return snapTrailer{}, 0, err
	}
	defer p.Release()
	var tr snapTrailer
	var off uint64
	ok := false
	it := p.Messages()
	for it.Next() {
		m := it.Message()
		ok = len(m.Payload) > 1 && m.Payload[0] == snapTrailerVersion && json.Unmarshal(m.Payload[1:], &tr) == nil &&
			tr.Chunks >= 0 && tr.Chunks <= snapMaxBytes/snapChunk && uint64(tr.Chunks) <= m.Offset
		off = m.Offset
	}
	if !ok {
		return snapTrailer{}, 0, errSnapshot
	}
	return tr, off, nil
}

// readSnapshot reads the latest snapshot: its trailer and its state. A
// slot whose snapshot cannot be read (torn, deleted meanwhile) gives way
// to the other.
func (c *Coordinator) readSnapshot(ctx context.Context) (snapTrailer, snapContent, error) {
	var st snapContent
	slot, tr, off, err := c.latestTrailer(ctx)
	if err != nil {
		return tr, st, err
	}
	tr2, st, err := c.readSlot(ctx, slot, tr, off)
	if err == nil {
		return tr2, st, nil
	}
	other := 1 - slot
	if tr, off, err2 := c.lastTrailer(ctx, other); err2 == nil {
		return c.readSlot(ctx, other, tr, off)
	}
	return tr2, st, err
}

// readSlot reads the snapshot of a slot whose trailer tr is at offset off.
func (c *Coordinator) readSlot(ctx context.Context, slot int, tr snapTrailer, off uint64) (snapTrailer, snapContent, error) {
	var st snapContent
	var state []byte
	next := uint64(0)
	var err error
	if tr.Chunks > 0 {
		ref := c.snapLog(slot)
		from := off - uint64(tr.Chunks)
		_, err = c.deps.Client.PollLog(ctx, snapConsumer, ref, from, uint32(tr.Chunks), func(o uint64, p []byte) {
			if o != from+next || o >= off || len(p) < 9 || p[0] != snapChunkVersion || binary.LittleEndian.Uint64(p[1:]) != tr.ID {
				return
			}
			state = append(state, p[9:]...)
			next++
		})
		if err != nil {
			return tr, st, err
		}
	}
	if int(next) != tr.Chunks || json.Unmarshal(state, &st) != nil {
		return tr, snapContent{}, errSnapshot
	}
	for _, t := range st.Txns {
		if t == nil || t.ID == "" {
			return tr, snapContent{}, errSnapshot
		}
	}
	for _, cl := range st.Claims {
		if cl.Token == 0 || cl.Epoch < 1 || cl.Shard < 0 {
			return tr, snapContent{}, errSnapshot
		}
	}
	return tr, st, nil
}

// maybeSnapshot starts writing a snapshot when SnapshotEvery records were
// read past the latest one known (the caller holds syncMu, right after a
// read of the log).
func (c *Coordinator) maybeSnapshot() {
	if c.cfg.SnapshotEvery <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.snap.running || c.f.Next < c.snap.covers+uint64(c.cfg.SnapshotEvery) {
		return
	}
	st := snapContent{Txns: make([]*Txn, 0, len(c.txns)), Claims: make([]ClaimRef, 0, len(c.claims))}
	for _, t := range c.txns {
		st.Txns = append(st.Txns, t) // records in the map are never changed in place
	}
	for _, cl := range c.claims {
		st.Claims = append(st.Claims, cl)
	}
	covers := c.f.Next
	c.snap.running = true
	c.snap.writers.Add(1)
	go func() {
		defer c.snap.writers.Done()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		err := c.writeSnapshot(ctx, covers, st)
		c.mu.Lock()
		c.snap.running = false
		if err == nil && covers > c.snap.covers {
			c.snap.covers = covers
		}
		if err == nil {
			c.snap.written++
		}
		c.mu.Unlock()
	}()
}

// writeSnapshot writes a snapshot of st covering the log below covers to
// the slot not holding the latest snapshot (deleted and created again
// first), unless the latest snapshot already covers as much.
func (c *Coordinator) writeSnapshot(ctx context.Context, covers uint64, st snapContent) error {
	ctx = iggy.Sidecar(ctx)
	slot, tr, _, err := c.latestTrailer(ctx)
	if err != nil && !errors.Is(err, errSnapshot) {
		return err // a slot could not be read: never delete what may be the latest
	}
	if err == nil && tr.Covers+uint64(c.cfg.SnapshotEvery) > covers {
		c.mu.Lock()
		if tr.Covers > c.snap.covers {
			c.snap.covers = tr.Covers // another sidecar wrote one
		}
		c.mu.Unlock()
		return nil
	}
	state, err := json.Marshal(st)
	if err != nil {
		return err
	}
	if len(state) > snapMaxBytes {
		c.log.Warn().Int("bytes", len(state)).Int("ids", len(st.Txns)).Int("max_bytes", snapMaxBytes).
			Msg("transactions: the decision-log snapshot is too large to write; a new owner reads the log from the previous snapshot")
		return errSnapshot
	}
	target := 0
	if slot >= 0 {
		target = 1 - slot // the latest snapshot stays where it is
	}
	ref := c.snapLog(target)
	if _, err := c.deps.Client.EnsureStream(ctx, ref.Stream); err != nil {
		return err
	}
	err = c.deps.Client.Do(ctx, &icodec.DeleteTopicRequest{StreamID: ref.StreamID(), TopicID: ref.TopicID()}, nil)
	c.deps.Client.InvalidateTopic(ref)
	if err != nil && !iggy.IsNotFound(err) {
		return err
	}
	if _, err := c.deps.Client.CreateTopic(ctx, ref, 1, iggy.NeverExpire()); err != nil && !errors.Is(err, icodec.StatusTopicNameAlreadyExists) {
		return err
	}
	id := rand.Uint64()
	msgs := c.deps.Client.NewMessages()
	ts := uint64(c.now().UnixMicro()) // one timestamp: one batch
	var d records.Decoder
	add := func(p []byte) error {
		if err := msgs.Add(d.NewID(), ts, p, nil); err != nil {
			msgs.Release()
			return err
		}
		return nil
	}
	chunks := 0
	for len(state) > 0 {
		n := min(len(state), snapChunk)
		p := binary.LittleEndian.AppendUint64([]byte{snapChunkVersion}, id)
		if err := add(append(p, state[:n]...)); err != nil {
			return err
		}
		state = state[n:]
		chunks++
	}
	tb, _ := json.Marshal(snapTrailer{ID: id, Covers: covers, Chunks: chunks, IDs: len(st.Txns)})
	if err := add(append([]byte{snapTrailerVersion}, tb...)); err != nil {
		return err
	}
	if _, err := c.deps.Client.Send(ctx, ref, 0, msgs); err != nil {
		c.log.Warn().Err(err).Msg("transactions: writing a decision-log snapshot failed; retried after the next records")
		return err
	}
	c.log.Debug().Uint64("covers", covers).Int("ids", len(st.Txns)).Int("chunks", chunks).Msg("transactions: wrote a decision-log snapshot")
	return nil
}
