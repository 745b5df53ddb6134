package iggy

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
	"github.com/kafka-iggy/kafka-iggy/embedded"
	"github.com/kafka-iggy/kafka-iggy/embedded/embedtest"
)

// createTopic creates stream and topic with n partitions.
func createTopic(tb testing.TB, c *Client, t TopicRef, n uint32) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.CreateStream(ctx, t.Stream); err != nil && !errors.Is(err, icodec.StatusStreamNameAlreadyExists) {
		tb.Fatal(err)
	}
	if _, err := c.CreateTopic(ctx, t, n, nil); err != nil {
		tb.Fatal(err)
	}
}

// readAll polls a whole partition: payload by offset.
func readAll(t *testing.T, c *Client, tr TopicRef, partition uint32) map[uint64]string {
	t.Helper()
	out := map[uint64]string{}
	next := uint64(0)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		p, err := c.Poll(ctx, &icodec.PollMessagesRequest{
			Consumer:    icodec.Consumer{Kind: icodec.ConsumerKindConsumer, ID: icodec.Identifier{Kind: icodec.IdentifierKindNumeric, Value: []byte{1, 0, 0, 0}}},
			StreamID:    tr.StreamID(),
			TopicID:     tr.TopicID(),
			PartitionID: icodec.OptionalPartition{Present: true, PartitionID: partition},
			Strategy:    icodec.PollingStrategy{Kind: icodec.PollingKindOffset, Value: next},
			Count:       1000,
		})
		cancel()
		if err != nil {
			t.Fatalf("poll partition %d at %d: %v", partition, next, err)
		}
		n := 0
		it := p.Messages()
		for it.Next() {
			m := it.Message()
			if _, dup := out[m.Offset]; dup {
				t.Fatalf("partition %d: offset %d twice", partition, m.Offset)
			}
			out[m.Offset] = string(m.Payload)
			next = m.Offset + 1
			n++
		}
		if err := it.Err(); err != nil {
			t.Fatal(err)
		}
		p.Release()
		if n == 0 {
			return out
		}
	}
}

// TestAcceptanceManyCallers: 1,000 concurrent callers producing to 10
// partitions through a pool of 4 use exactly 4 Iggy connections, every
// caller gets its own correct offsets, and each caller's sends land in the
// order it made them.
func TestAcceptanceManyCallers(t *testing.T) {
	srv := embedtest.Start(t, "127.0.0.1:0", nil)
	defer srv.Close()
	cfg := testConfig(srv.Addr().String())
	cfg.PoolSize = 4
	cfg.RequestTimeout = 20 * time.Second
	rm := &countMetrics{}
	c := startClient(t, cfg, WithMetrics(rm))
	embedtest.WaitFor(t, 10*time.Second, "4 sessions", func() bool { return c.SessionsUp() == 4 })
	tr := TopicRef{"kafka", "acceptance"}
	createTopic(t, c, tr, 10)

	const callers, sendsEach = 1000, 3
	type sent struct {
		partition uint32
		payloads  []string
		base      int64
	}
	results := make([][]sent, callers)
	var wg sync.WaitGroup
	var failed atomic.Int32
	start := make(chan struct{})
	for i := range callers {
		wg.Go(func() {
			<-start
			p := uint32(i % 10)
			for j := range sendsEach {
				m := c.NewMessages()
				var payloads []string
				for k := range 1 + (i+j)%3 {
					s := fmt.Sprintf("c%d-s%d-m%d", i, j, k)
					payloads = append(payloads, s)
					if err := m.Add(randID(), uint64(time.Now().UnixMicro()), []byte(s), nil); err != nil {
						t.Error(err)
					}
				}
				off, err := c.Send(context.Background(), tr, p, m)
				if err != nil {
					failed.Add(1)
					t.Errorf("caller %d send %d: %v", i, j, err)
					return
				}
				results[i] = append(results[i], sent{p, payloads, off})
			}
		})
	}
	close(start)
	wg.Wait()
	if failed.Load() > 0 {
		t.FailNow()
	}
	if n := srv.ConnCount(); n != 4 {
		t.Fatalf("server sees %d connections, want 4", n)
	}
	if rm.reconnects.Load() != 0 {
		t.Fatalf("%d reconnects during the load", rm.reconnects.Load())
	}

	stored := make([]map[uint64]string, 10)
	for p := range uint32(10) {
		stored[p] = readAll(t, c, tr, p)
	}
	total := 0
	for i, rs := range results {
		prev := int64(-1)
		for j, r := range rs {
			if r.base <= prev {
				t.Fatalf("caller %d send %d at %d after %d: caller order lost", i, j, r.base, prev)
			}
			prev = r.base
			for k, want := range r.payloads {
				if got := stored[r.partition][uint64(r.base)+uint64(k)]; got != want {
					t.Fatalf("caller %d: offset %d of partition %d holds %q, want %q", i, r.base+int64(k), r.partition, got, want)
				}
			}
			total += len(r.payloads)
		}
	}
	storedTotal := 0
	for p := range stored {
		storedTotal += len(stored[p])
		for off := range uint64(len(stored[p])) {
			if _, ok := stored[p][off]; !ok {
				t.Fatalf("partition %d: gap at offset %d", p, off)
			}
		}
	}
	if storedTotal != total {
		t.Fatalf("server stores %d messages, callers were confirmed %d", storedTotal, total)
	}
	t.Logf("%d messages in %d batches (%d coalesced sends); server connections %d",
		total, rm.batches.Load(), rm.coalescedCallers.Load(), srv.ConnCount())
}

// TestAcceptanceServerRestart: the server is closed in the middle of the
// load and started again on the same address and data dir. The pool
// recovers by itself; every confirmed send is stored at its offset, every
// unconfirmed one got an error, sends that failed as "not sent" are not
// stored, and nothing is stored twice.
func TestAcceptanceServerRestart(t *testing.T) {
	dir := t.TempDir()
	srv := embedtest.Start(t, "127.0.0.1:0", func(c *embedded.Config) { c.DataDir = dir })
	addr := srv.Addr().String()
	cfg := testConfig(addr)
	cfg.PoolSize = 4
	cfg.RequestTimeout = 2 * time.Second
	cfg.BackoffMax = 100 * time.Millisecond
	rm := &countMetrics{}
	c := startClient(t, cfg, WithMetrics(rm))
	tr := TopicRef{"kafka", "restart"}
	createTopic(t, c, tr, 10)

	type outcome struct {
		partition uint32
		payload   string
		off       int64
		err       error
	}
	var (
		mu        sync.Mutex
		outcomes  []outcome
		confirmed atomic.Int64
		errored   atomic.Int64
		stop      atomic.Bool
		wg        sync.WaitGroup
	)
	for i := range 100 {
		wg.Go(func() {
			for j := 0; !stop.Load(); j++ {
				p := uint32((i + j) % 10)
				payload := fmt.Sprintf("w%d-%d", i, j)
				m := c.NewMessages()
				_ = m.Add(randID(), uint64(time.Now().UnixMicro()), []byte(payload), nil)
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				off, err := c.Send(ctx, tr, p, m)
				cancel()
				if err != nil {
					errored.Add(1)
				} else {
					confirmed.Add(1)
				}
				mu.Lock()
				outcomes = append(outcomes, outcome{p, payload, off, err})
				mu.Unlock()
			}
		})
	}
	embedtest.WaitFor(t, 10*time.Second, "confirmed sends before the restart", func() bool { return confirmed.Load() >= 2000 })
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	embedtest.WaitFor(t, 10*time.Second, "sends failing while the server is down", func() bool { return errored.Load() >= 50 })
	embedtest.WaitFor(t, 10*time.Second, "sessions down", func() bool { return !c.Ready() })
	before := confirmed.Load()
	srv = embedtest.Start(t, addr, func(c *embedded.Config) { c.DataDir = dir })
	defer srv.Close()
	embedtest.WaitFor(t, 10*time.Second, "confirmed sends after the restart", func() bool { return confirmed.Load() >= before+2000 })
	stop.Store(true)
	wg.Wait()
	embedtest.WaitFor(t, 10*time.Second, "pool recovered", func() bool { return c.SessionsUp() == 4 })
	if n := srv.ConnCount(); n != 4 {
		t.Fatalf("server sees %d connections, want 4", n)
	}

	stored := make([]map[uint64]string, 10)
	where := map[string]int{}
	for p := range uint32(10) {
		stored[p] = readAll(t, c, tr, p)
		for _, payload := range stored[p] {
			where[payload]++
		}
	}
	for payload, n := range where {
		if n > 1 {
			t.Fatalf("%q stored %d times", payload, n)
		}
	}
	var nConfirmed, nNotSent, nUnknown, nUnknownStored int
	seenOff := map[[2]int64]string{}
	for _, o := range outcomes {
		switch {
		case o.err == nil:
			nConfirmed++
			k := [2]int64{int64(o.partition), o.off}
			if prev, dup := seenOff[k]; dup {
				t.Fatalf("offset %v confirmed to %q and %q", k, prev, o.payload)
			}
			seenOff[k] = o.payload
			if got := stored[o.partition][uint64(o.off)]; got != o.payload {
				t.Fatalf("confirmed %q at %d/%d, stored %q", o.payload, o.partition, o.off, got)
			}
		case errors.Is(o.err, ErrNotSent):
			nNotSent++
			if where[o.payload] != 0 {
				t.Fatalf("%q failed as not sent (%v) but is stored", o.payload, o.err)
			}
		default:
			nUnknown++
			if !Retriable(o.err) {
				t.Fatalf("unconfirmed send with a non-retriable error: %v", o.err)
			}
			nUnknownStored += where[o.payload]
		}
	}
	t.Logf("confirmed %d, failed not-sent %d, failed unknown %d (%d of them stored), reconnects %d",
		nConfirmed, nNotSent, nUnknown, nUnknownStored, rm.reconnects.Load())
	if rm.reconnects.Load() < 4 {
		t.Fatalf("only %d reconnects", rm.reconnects.Load())
	}
}

// countMetrics counts what the acceptance tests report.
type countMetrics struct {
	NopMetrics
	reconnects       atomic.Int64
	batches          atomic.Int64
	coalescedCallers atomic.Int64
}

func (m *countMetrics) Reconnect() { m.reconnects.Add(1) }

func (m *countMetrics) Batch(messages, bytes, callers int) {
	m.batches.Add(1)
	if callers > 1 {
		m.coalescedCallers.Add(int64(callers))
	}
}

// TestEmbeddedAPI runs the typed helpers against the embedded server.
func TestEmbeddedAPI(t *testing.T) {
	srv := embedtest.Start(t, "127.0.0.1:0", nil)
	defer srv.Close()
	cfg := testConfig(srv.Addr().String())
	cfg.PoolSize = 2
	c := startClient(t, cfg)
	ctx := context.Background()
	tr := TopicRef{"kafka", "api"}
	createTopic(t, c, tr, 3)

	ti, err := c.GetTopic(ctx, tr)
	if err != nil || ti.PartitionsCount != 3 || ti.Ref != tr || len(ti.Details.Partitions) != 3 {
		t.Fatalf("get topic: %+v %v", ti, err)
	}
	if _, err := c.CreateTopic(ctx, tr, 3, nil); !errors.Is(err, icodec.StatusTopicNameAlreadyExists) {
		t.Fatalf("create existing topic: %v", err)
	}
	if _, err := c.GetTopic(ctx, TopicRef{"kafka", "missing"}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing topic: %v", err)
	}
	if _, err := c.GetTopic(ctx, TopicRef{"missing", "t"}); !IsNotFound(err) {
		t.Fatalf("missing stream: %v", err)
	}
	if _, err := sendOne(c, ctx, TopicRef{"kafka", "missing"}, 0, "x"); !IsNotFound(err) {
		t.Fatalf("send to a missing topic: %v", err)
	}

	m := c.NewMessages()
	for i := range 3 {
		_ = m.Add(randID(), uint64(1000+i), []byte(fmt.Sprint("v", i)), icodec.AppendHeader(nil, "k", icodec.HeaderKindRaw, []byte{byte(i)}))
	}
	if off, err := c.Send(ctx, tr, 2, m); err != nil || off != 0 {
		t.Fatalf("send: %d %v", off, err)
	}
	ti, err = c.RefreshTopic(ctx, tr)
	if err != nil || ti.Details.Partitions[2].MessagesCount != 3 || ti.Details.Partitions[2].CurrentOffset != 2 {
		t.Fatalf("refresh: %+v %v", ti.Details.Partitions, err)
	}

	consumer := icodec.Consumer{Kind: icodec.ConsumerKindConsumer, ID: icodec.Identifier{Kind: icodec.IdentifierKindString, Value: []byte("kafka.cg.g")}}
	if _, found, err := c.GetOffset(ctx, tr, 2, consumer); err != nil || found {
		t.Fatalf("offset before store: %v %v", found, err)
	}
	if err := c.StoreOffset(ctx, tr, 2, consumer, 1); err != nil {
		t.Fatal(err)
	}
	if err := c.StoreOffset(ctx, tr, 2, consumer, 9); !errors.Is(err, icodec.StatusInvalidOffset) {
		t.Fatalf("store beyond the end: %v", err)
	}
	got, found, err := c.GetOffset(ctx, tr, 2, consumer)
	if err != nil || !found || got.StoredOffset != 1 || got.CurrentOffset != 2 {
		t.Fatalf("offset: %+v %v %v", got, found, err)
	}
	if err := c.DeleteOffset(ctx, tr, 2, consumer); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteOffset(ctx, tr, 2, consumer); !errors.Is(err, icodec.StatusConsumerOffsetNotFound) {
		t.Fatalf("delete twice: %v", err)
	}

	p, err := c.Poll(ctx, &icodec.PollMessagesRequest{
		Consumer: consumer, StreamID: tr.StreamID(), TopicID: tr.TopicID(),
		PartitionID: icodec.OptionalPartition{Present: true, PartitionID: 2},
		Strategy:    icodec.PollingStrategy{Kind: icodec.PollingKindOffset, Value: 1}, Count: 10,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Release()
	it := p.Messages()
	var offs []uint64
	for it.Next() {
		msg := it.Message()
		offs = append(offs, msg.Offset)
		if string(msg.Payload) != fmt.Sprint("v", msg.Offset) || msg.OriginTimestamp != 1000+msg.Offset {
			t.Fatalf("message %+v", msg)
		}
	}
	if it.Err() != nil || len(offs) != 2 || p.CurrentOffset != 2 || p.Count != 2 {
		t.Fatalf("poll offsets %v current %d count %d err %v", offs, p.CurrentOffset, p.Count, it.Err())
	}
	if err := c.Ping(ctx); err != nil {
		t.Fatal(err)
	}
}
