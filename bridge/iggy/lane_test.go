package iggy

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
	"github.com/kafka-iggy/kafka-iggy/embedded/embedtest"
)

// sendLog is a test tool for the script server: it checks every
// SEND_MESSAGES it is given with the codec's batch checker, appends the
// payloads to a per-partition list and confirms with the list position.
// It records each batch's partition and message count, and the frames of
// partition writes in arrival order.
type sendLog struct {
	mu       sync.Mutex
	payloads map[uint32][][]byte
	batches  []batchSeen
	order    []string // "send:<p>" / "store:<p>" in arrival order
}

type batchSeen struct {
	partition uint32
	count     uint32
}

func newSendLog() *sendLog { return &sendLog{payloads: map[uint32][][]byte{}} }

func (l *sendLog) handle(h icodec.RequestHeader, body []byte) []byte {
	switch h.Operation {
	case icodec.OperationStoreConsumerOffset:
		var r icodec.StoreConsumerOffsetRequest
		if _, err := r.DecodeFrom(body); err != nil {
			return reply(h, icodec.StatusInvalidCommand, nil)
		}
		l.mu.Lock()
		l.order = append(l.order, fmt.Sprintf("store:%d", r.PartitionID.PartitionID))
		l.mu.Unlock()
		return reply(h, 0, resultOK(nil))
	case icodec.OperationSendMessages:
	default:
		return nil
	}
	var req icodec.SendMessagesRequest
	if _, err := req.DecodeFrom(body); err != nil {
		return reply(h, icodec.StatusInvalidCommand, nil)
	}
	if err := req.Validate(); err != nil { // includes CheckBatch: checksums, tiling, counts
		return reply(h, icodec.StatusInvalidCommand, nil)
	}
	p := binary.LittleEndian.Uint32(req.Partitioning.Value)
	l.mu.Lock()
	defer l.mu.Unlock()
	base := uint64(len(l.payloads[p]))
	it := icodec.NewMessageIter(req.Batch)
	for i := uint64(0); it.Next(); i++ {
		m := it.Message()
		if m.Offset != i { // offset deltas must be 0..n-1
			return reply(h, icodec.StatusInvalidCommand, nil)
		}
		l.payloads[p] = append(l.payloads[p], append([]byte(nil), m.Payload...))
	}
	l.batches = append(l.batches, batchSeen{p, req.MessagesCount})
	l.order = append(l.order, fmt.Sprintf("send:%d", p))
	resp := icodec.SendMessagesResponse{Confirmations: []icodec.SendConfirmation{{PartitionID: p, BaseOffset: base}}}
	return reply(h, 0, resp.AppendTo(nil))
}

func (l *sendLog) snapshot() ([]batchSeen, map[uint32][][]byte, []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	pl := map[uint32][][]byte{}
	for k, v := range l.payloads {
		pl[k] = slices.Clone(v)
	}
	return slices.Clone(l.batches), pl, slices.Clone(l.order)
}

// gatedServer answers like sendLog but holds the first partition write
// until gate is closed (signalling held when it arrives).
func gatedServer(t *testing.T, log *sendLog) (srv *scriptServer, held chan struct{}, gate chan struct{}) {
	held, gate = make(chan struct{}, 1), make(chan struct{})
	var once sync.Once
	srv = newScriptServer(t, nil, basic(func(sc *scriptConn, h icodec.RequestHeader, body []byte) [][]byte {
		if h.Operation.Plane() == icodec.PlanePartition {
			once.Do(func() { held <- struct{}{}; <-gate })
		}
		return [][]byte{log.handle(h, body)}
	}))
	t.Cleanup(func() {
		select {
		case <-gate:
		default:
			close(gate)
		}
	})
	return srv, held, gate
}

func laneDepth(c *Client) int {
	n := 0
	for _, l := range c.lanes {
		l.mu.Lock()
		n += l.depth
		l.mu.Unlock()
	}
	return n
}

func sendOne(c *Client, ctx context.Context, t TopicRef, p uint32, payload string) (int64, error) {
	m := c.NewMessages()
	if err := m.Add(randID(), uint64(time.Now().UnixMicro()), []byte(payload), nil); err != nil {
		return -1, err
	}
	return c.Send(ctx, t, p, m)
}

type sendResult struct {
	payload string
	off     int64
	err     error
}

// TestCoalescing: while the lane is busy, sends queue per partition and
// leave as one batch per partition (within the limits); each caller gets its
// own offset, which is where the server stored its message.
func TestCoalescing(t *testing.T) {
	tests := []struct {
		name     string
		coalesce bool
		maxMsgs  int
		want     []batchSeen // after the held first send to partition 0
	}{
		{"on", true, 1000, []batchSeen{{0, 10}, {1, 3}}},
		{"message limit", true, 4, []batchSeen{{0, 4}, {1, 3}, {0, 4}, {0, 2}}},
		{"off", false, 1000, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log := newSendLog()
			srv, held, gate := gatedServer(t, log)
			cfg := testConfig(srv.addr())
			cfg.Coalesce = tt.coalesce
			cfg.MaxBatchMessages = tt.maxMsgs
			rm := newRecMetrics()
			c := startClient(t, cfg, WithMetrics(rm))
			tr := TopicRef{"s", "t"}
			ctx := context.Background()

			results := make(chan sendResult, 32)
			go func() {
				off, err := sendOne(c, ctx, tr, 0, "first")
				results <- sendResult{"first", off, err}
			}()
			recv(t, "held first send", held)
			send := func(p uint32, payload string) {
				off, err := sendOne(c, ctx, tr, p, payload)
				results <- sendResult{payload, off, err}
			}
			// Queue in a known order: partition 0 m0..m9, partition 1 n0..n2.
			for i := range 10 {
				go send(0, fmt.Sprintf("m%d", i))
				embedtest.WaitFor(t, 10*time.Second, "queued", func() bool { return laneDepth(c) == i+1 })
			}
			for i := range 3 {
				go send(1, fmt.Sprintf("n%d", i))
				embedtest.WaitFor(t, 10*time.Second, "queued", func() bool { return laneDepth(c) == 11+i })
			}
			close(gate)
			got := map[string]int64{}
			for range 14 {
				r := recv(t, "send result", results)
				if r.err != nil {
					t.Fatalf("%s: %v", r.payload, r.err)
				}
				got[r.payload] = r.off
			}
			batches, payloads, _ := log.snapshot()
			if batches[0] != (batchSeen{0, 1}) {
				t.Fatalf("first batch %+v", batches[0])
			}
			rest := batches[1:]
			if !tt.coalesce {
				if len(rest) != 13 {
					t.Fatalf("coalescing off: %d batches after the first, want 13", len(rest))
				}
			} else if !slices.Equal(rest, tt.want) {
				t.Fatalf("batches %+v, want %+v", rest, tt.want)
			}
			// Every caller's offset holds its own message, in queue order.
			for payload, off := range got {
				p := uint32(0)
				if payload[0] == 'n' {
					p = 1
				}
				if off < 0 || int(off) >= len(payloads[p]) || string(payloads[p][off]) != payload {
					t.Fatalf("%s got offset %d; partition %d holds %q", payload, off, p, payloads[p])
				}
			}
			for i := range 10 {
				if got[fmt.Sprintf("m%d", i)] != int64(i+1) {
					t.Fatalf("m%d at %d: queue order not kept", i, got[fmt.Sprintf("m%d", i)])
				}
			}
			if tt.coalesce && tt.maxMsgs == 1000 && rm.maxCallers() != 10 {
				t.Fatalf("metrics saw at most %d callers in a batch", rm.maxCallers())
			}
		})
	}
}

// TestQueuedDeadline: a send whose deadline passes while it is queued fails
// with ErrTimeout and ErrNotSent, and its message is never sent.
func TestQueuedDeadline(t *testing.T) {
	log := newSendLog()
	srv, held, gate := gatedServer(t, log)
	c := startClient(t, testConfig(srv.addr()))
	tr := TopicRef{"s", "t"}
	first := make(chan error, 1)
	go func() { _, err := sendOne(c, context.Background(), tr, 0, "first"); first <- err }()
	recv(t, "held send", held)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	_, err := sendOne(c, ctx, tr, 0, "expired")
	errIs(t, err, ErrTimeout, ErrNotSent, context.DeadlineExceeded)
	if !IsTimeout(err) || !Retriable(err) {
		t.Fatalf("expired send: %v", err)
	}
	close(gate)
	if err := recv(t, "first send", first); err != nil {
		t.Fatal(err)
	}
	off, err := sendOne(c, context.Background(), tr, 0, "after")
	if err != nil || off != 1 {
		t.Fatalf("send after: %d %v", off, err)
	}
	_, payloads, _ := log.snapshot()
	for _, p := range payloads[0] {
		if string(p) == "expired" {
			t.Fatal("expired send reached the server")
		}
	}
	if laneDepth(c) != 0 {
		t.Fatalf("lane depth %d", laneDepth(c))
	}
}

// TestInFlightDeadline: a caller whose deadline passes with its send on the
// wire gets a timeout that does not claim "not sent".
func TestInFlightDeadline(t *testing.T) {
	log := newSendLog()
	srv, held, gate := gatedServer(t, log)
	c := startClient(t, testConfig(srv.addr()))
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	errs := make(chan error, 1)
	go func() { _, err := sendOne(c, ctx, TopicRef{"s", "t"}, 0, "slow"); errs <- err }()
	recv(t, "held send", held)
	err := recv(t, "timed-out send", errs)
	if !IsTimeout(err) || errors.Is(err, ErrNotSent) {
		t.Fatalf("in-flight timeout: %v", err)
	}
	close(gate)
	// The session finishes the exchange; the next send follows it.
	off, err := sendOne(c, context.Background(), TopicRef{"s", "t"}, 0, "next")
	if err != nil || off != 1 {
		t.Fatalf("next send: %d %v", off, err)
	}
}

// TestSplitSend: one Send beyond the batch limits or the timestamp span
// leaves as consecutive batches; the caller gets the first base offset.
func TestSplitSend(t *testing.T) {
	const span = uint64(icodec.MaxTimestampSpan)
	tests := []struct {
		name    string
		maxMsgs int
		ts      []uint64
		want    []uint32
	}{
		{"message limit", 3, []uint64{1, 2, 3, 4, 5, 6, 7}, []uint32{3, 3, 1}},
		{"timestamp span", 1000, []uint64{10, 20, 10 + span + 1, 30}, []uint32{2, 2}},
		{"timestamp span both ways", 1000, []uint64{10 + span + 1, 5, 10}, []uint32{1, 2}},
		{"span exactly allowed", 1000, []uint64{10, 10 + span}, []uint32{2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log := newSendLog()
			srv := newScriptServer(t, nil, basic(func(sc *scriptConn, h icodec.RequestHeader, body []byte) [][]byte {
				return [][]byte{log.handle(h, body)}
			}))
			cfg := testConfig(srv.addr())
			cfg.MaxBatchMessages = tt.maxMsgs
			c := startClient(t, cfg)
			tr := TopicRef{"s", "t"}
			if _, err := sendOne(c, context.Background(), tr, 0, "before"); err != nil {
				t.Fatal(err)
			}
			m := c.NewMessages()
			for i, ts := range tt.ts {
				if err := m.Add(randID(), ts, []byte(fmt.Sprint("p", i)), nil); err != nil {
					t.Fatal(err)
				}
			}
			off, err := c.Send(context.Background(), tr, 0, m)
			if err != nil || off != 1 {
				t.Fatalf("split send: %d %v", off, err)
			}
			batches, payloads, _ := log.snapshot()
			var counts []uint32
			for _, b := range batches[1:] {
				counts = append(counts, b.count)
			}
			if !slices.Equal(counts, tt.want) {
				t.Fatalf("batches %v, want %v", counts, tt.want)
			}
			for i := range tt.ts {
				if string(payloads[0][1+i]) != fmt.Sprint("p", i) {
					t.Fatalf("offset %d holds %q", 1+i, payloads[0][1+i])
				}
			}
		})
	}
}

// TestLaneKeepsWriteOrder: offset writes and sends of one partition leave in
// call order, and an offset write is never merged into a batch.
func TestLaneKeepsWriteOrder(t *testing.T) {
	log := newSendLog()
	srv, held, gate := gatedServer(t, log)
	c := startClient(t, testConfig(srv.addr()))
	tr := TopicRef{"s", "t"}
	ctx := context.Background()
	errs := make(chan error, 8)
	go func() { _, err := sendOne(c, ctx, tr, 0, "a"); errs <- err }()
	recv(t, "held send", held)
	steps := []func() error{
		func() error { _, err := sendOne(c, ctx, tr, 0, "b"); return err },
		func() error {
			return c.StoreOffset(ctx, tr, 0, icodec.Consumer{Kind: icodec.ConsumerKindConsumer, ID: tr.TopicID()}, 0)
		},
		func() error { _, err := sendOne(c, ctx, tr, 0, "c"); return err },
		func() error { _, err := sendOne(c, ctx, tr, 0, "d"); return err },
	}
	for i, step := range steps {
		go func() { errs <- step() }()
		embedtest.WaitFor(t, 10*time.Second, "queued", func() bool { return laneDepth(c) == i+1 })
	}
	close(gate)
	for range 5 {
		if err := recv(t, "write", errs); err != nil {
			t.Fatal(err)
		}
	}
	batches, payloads, order := log.snapshot()
	if want := []string{"send:0", "send:0", "store:0", "send:0"}; !slices.Equal(order, want) {
		t.Fatalf("order %v, want %v", order, want)
	}
	if want := []batchSeen{{0, 1}, {0, 1}, {0, 2}}; !slices.Equal(batches, want) {
		t.Fatalf("batches %+v", batches)
	}
	if got := bytes.Join(payloads[0], nil); string(got) != "abcd" {
		t.Fatalf("stored %q", got)
	}
}

// TestMetadataCache: concurrent lookups share one request; a not-found
// send invalidates the entry.
func TestMetadataCache(t *testing.T) {
	var mu sync.Mutex
	counts := map[uint32]int{}
	srv := newScriptServer(t, nil, basic(func(sc *scriptConn, h icodec.RequestHeader, body []byte) [][]byte {
		mu.Lock()
		counts[h.Code]++
		mu.Unlock()
		switch h.Code {
		case icodec.CodeGetStream:
			sd := icodec.StreamDetails{StreamResponse: icodec.StreamResponse{ID: 4, Name: "s"}}
			return [][]byte{reply(h, 0, sd.AppendTo(nil))}
		case icodec.CodeGetTopic:
			td := icodec.TopicDetails{TopicHeader: icodec.TopicHeader{ID: 7, Name: "t", PartitionsCount: 2, CompressionAlgorithm: icodec.CompressionAlgorithmNone},
				Partitions: []icodec.PartitionResponse{{ID: 0, SegmentsCount: 1}, {ID: 1, SegmentsCount: 1}}}
			return [][]byte{reply(h, 0, td.AppendTo(nil))}
		}
		if h.Operation == icodec.OperationSendMessages {
			return [][]byte{reply(h, icodec.StatusResourceNotFound, nil)}
		}
		return nil
	}))
	cfg := testConfig(srv.addr())
	cfg.PoolSize = 3
	cfg.MetadataTTL = 0
	c := startClient(t, cfg)
	tr := TopicRef{"s", "t"}
	var wg sync.WaitGroup
	infos := make([]*TopicInfo, 20)
	errs := make([]error, 20)
	for i := range infos {
		wg.Go(func() { infos[i], errs[i] = c.GetTopic(context.Background(), tr) })
	}
	wg.Wait()
	for i := range infos {
		if errs[i] != nil || infos[i] != infos[0] {
			t.Fatalf("lookup %d: %v", i, errs[i])
		}
	}
	ti := infos[0]
	if ti.StreamID != 4 || ti.TopicID != 7 || ti.PartitionsCount != 2 || len(ti.Details.Partitions) != 2 {
		t.Fatalf("topic info %+v", ti)
	}
	mu.Lock()
	if counts[icodec.CodeGetTopic] != 1 || counts[icodec.CodeGetStream] != 1 {
		t.Fatalf("requests %v", counts)
	}
	mu.Unlock()
	_, err := sendOne(c, context.Background(), tr, 0, "x")
	if !IsNotFound(err) || !errors.Is(err, icodec.StatusResourceNotFound) {
		t.Fatalf("send: %v", err)
	}
	if _, err := c.GetTopic(context.Background(), tr); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if counts[icodec.CodeGetTopic] != 2 {
		t.Fatalf("not-found did not invalidate: %v", counts)
	}
}

// recMetrics records what the tests check.
type recMetrics struct {
	NopMetrics
	mu      sync.Mutex
	callers []int
}

func newRecMetrics() *recMetrics { return &recMetrics{} }

func (m *recMetrics) Batch(messages, bytes, callers int) {
	m.mu.Lock()
	m.callers = append(m.callers, callers)
	m.mu.Unlock()
}

func (m *recMetrics) maxCallers() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Max(m.callers)
}
