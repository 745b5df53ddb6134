package main

// The direct baseline in Go: the same payloads sent straight to the
// embedded Iggy server with the project's own Iggy client (bridge/iggy),
// shaped like the Rust program's runs: C connections in lockstep, each
// sending batches of B messages to its own partition.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/rs/zerolog"

	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
	"github.com/kafka-iggy/kafka-iggy/codec/wire"
)

// benchStream is the Iggy stream that holds the direct runs' topics.
const benchStream = "bench"

// directClient starts one Iggy client of pool size 1 without coalescing:
// one connection in lockstep, as the official SDK's client is.
func directClient(ctx context.Context, addr string, pool int) (*iggy.Client, error) {
	cfg := iggy.DefaultConfig()
	cfg.Address = addr
	cfg.PoolSize = pool
	cfg.Coalesce = pool > 1
	cfg.RequestTimeout = flushGrace
	cfg.KeepaliveInterval = 0
	c, err := iggy.New(cfg, zerolog.New(io.Discard))
	if err != nil {
		return nil, err
	}
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := c.Start(sctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// iggyCreateTopic creates stream benchStream (once) and topic in it.
func iggyCreateTopic(ctx context.Context, addr, topic string, partitions int) error {
	c, err := directClient(ctx, addr, 1)
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if _, err := c.CreateStream(ctx, benchStream); err != nil && !errors.Is(err, icodec.StatusStreamNameAlreadyExists) {
		return fmt.Errorf("create stream: %w", err)
	}
	_, err = c.CreateTopic(ctx, iggy.TopicRef{Stream: benchStream, Topic: topic}, uint32(partitions), nil)
	if err != nil {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	return nil
}

func iggyDeleteTopic(addr, topic string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := directClient(ctx, addr, 1)
	if err != nil {
		return err
	}
	defer c.Close()
	t := iggy.TopicRef{Stream: benchStream, Topic: topic}
	return c.Do(ctx, &icodec.DeleteTopicRequest{StreamID: t.StreamID(), TopicID: t.TopicID()}, nil)
}

// sendBatch sends payloads [first, first+n) of the pool as one Send.
func sendBatch(ctx context.Context, c *iggy.Client, t iggy.TopicRef, partition uint32, pool [][]byte, first, n int) (int64, error) {
	msgs := c.NewMessages()
	var bytes int64
	ts := uint64(time.Now().UnixMicro())
	for k := 0; k < n; k++ {
		p := pool[(first+k)%poolSize]
		if err := msgs.Add(wire.U128{}, ts, p, nil); err != nil {
			msgs.Release()
			return 0, err
		}
		bytes += int64(len(p))
	}
	_, err := c.Send(ctx, t, partition, msgs)
	return bytes, err
}

// directSpec is one direct produce run.
type directSpec struct {
	addr, topic       string
	partitions, conns int
	batch, records    int // records: upper bound (0: none)
	win               windowSpec
	rate              float64 // records/s offered by all connections together; 0: as fast as they can
}

// directProduce: s.conns lockstep connections, connection i sending
// batches of s.batch messages to partition i % partitions, through the
// warm-up and the measured window (see window); only batches confirmed
// inside the window count. With s.rate each connection paces its batches.
func directProduce(ctx context.Context, s directSpec, pool [][]byte, m *meter) (r Result, err error) {
	clients := make([]*iggy.Client, s.conns)
	defer closeAll(clients, func(c *iggy.Client) { c.Close() })
	if stopped, err := openSlots(ctx, clients, func(ctx context.Context, _ int) (*iggy.Client, error) {
		return directClient(ctx, s.addr, 1)
	}); err != nil || stopped {
		return r, cmp.Or(err, ctx.Err())
	}
	t := iggy.TopicRef{Stream: benchStream, Topic: s.topic}
	limit := s.records
	if limit <= 0 {
		limit = 1 << 40
	}
	per := max(1, limit/s.conns)
	var sent, bytes atomic.Int64
	var firstErr atomic.Value
	w, runCtx, cancel := openWindow(ctx, m, s.win)
	defer cancel()
	rate := s.rate / float64(s.conns)
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for done := 0; done < per && runCtx.Err() == nil; {
				if rate > 0 {
					due := w.start.Add(time.Duration(float64(done) / rate * float64(time.Second)))
					if !sleepUntil(runCtx, due) {
						return
					}
				}
				n := min(s.batch, per-done)
				b, err := sendBatch(ctx, c, t, uint32(i%s.partitions), pool, per*i+done, n)
				if err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				done += n
				now := time.Now()
				switch {
				case w.before(now):
					w.warmCount.Add(int64(n))
				case w.in(now):
					sent.Add(int64(n))
					bytes.Add(b)
				}
			}
		}()
	}
	wg.Wait()
	mm := w.wait()
	r.Records, r.Bytes = sent.Load(), bytes.Load()
	r.finish(w.seconds(), &mm)
	r.CalRecPerS = w.calRate()
	if s.rate > 0 {
		r.OfferedRecPerS = s.rate
		r.OfferedMBPerS = s.rate * 1024 / 1e6
	}
	if e, ok := firstErr.Load().(error); ok {
		return r, e
	}
	if !mm.Began {
		return r, errors.New("the run ended before its window opened")
	}
	return r, nil
}

// directConsume is a steady-state read: one connection polls every
// partition from offset 0, pollCount messages per poll, and starts over
// once every partition is read to its end, through the warm-up and the
// measured window; only polls answered inside the window count.
func directConsume(ctx context.Context, addr, topic string, partitions, pollCount int, win windowSpec, m *meter) (r Result, err error) {
	c, err := directClient(ctx, addr, 1)
	if err != nil {
		return r, err
	}
	defer c.Close()
	t := iggy.TopicRef{Stream: benchStream, Topic: topic}
	consumer := icodec.Consumer{Kind: icodec.ConsumerKindConsumer,
		ID: icodec.Identifier{Kind: icodec.IdentifierKindNumeric, Value: []byte{1, 0, 0, 0}}}
	w, runCtx, cancel := openWindow(ctx, m, win)
	defer cancel()
	var perr error
passes:
	for runCtx.Err() == nil {
		readAny := false
		for p := 0; p < partitions; p++ {
			offset := uint64(0)
			for {
				if runCtx.Err() != nil {
					break passes
				}
				polled, err := c.Poll(ctx, &icodec.PollMessagesRequest{
					Consumer: consumer, StreamID: t.StreamID(), TopicID: t.TopicID(),
					PartitionID: icodec.OptionalPartition{Present: true, PartitionID: uint32(p)},
					Strategy:    icodec.PollingStrategy{Kind: icodec.PollingKindOffset, Value: offset},
					Count:       uint32(pollCount),
				})
				if err != nil {
					perr = err
					break passes
				}
				n := 0
				var b int64
				it := polled.Messages()
				for it.Next() {
					msg := it.Message()
					b += int64(len(msg.Payload))
					offset = msg.Offset + 1
					n++
				}
				polled.Release()
				if n == 0 {
					break
				}
				readAny = true
				now := time.Now()
				switch {
				case w.before(now):
					w.warmCount.Add(int64(n))
				case w.in(now):
					r.Records += int64(n)
					r.Bytes += b
				}
			}
		}
		if !readAny {
			break
		}
	}
	cancel()
	mm := w.wait()
	r.finish(w.seconds(), &mm)
	r.CalRecPerS = w.calRate()
	if perr != nil {
		return r, perr
	}
	if !mm.Began {
		return r, errors.New("the run ended before its window opened (is the topic empty?)")
	}
	return r, nil
}

// directLatency sends one message at a time on one connection.
func directLatency(ctx context.Context, addr, topic string, pool [][]byte, records, warmup int, dur time.Duration, m *meter) (r Result, h *hdr.Histogram, err error) {
	c, err := directClient(ctx, addr, 1)
	if err != nil {
		return r, nil, err
	}
	defer c.Close()
	t := iggy.TopicRef{Stream: benchStream, Topic: topic}
	for i := 0; i < warmup; i++ {
		if _, err := sendBatch(ctx, c, t, 0, pool, i, 1); err != nil {
			return r, nil, fmt.Errorf("warm-up: %w", err)
		}
	}
	h = newHist()
	m.begin()
	start := time.Now()
	deadline := start.Add(dur)
	for i := 0; i < records && time.Now().Before(deadline); i++ {
		t0 := time.Now()
		b, err := sendBatch(ctx, c, t, 0, pool, i, 1)
		if err != nil {
			mm := m.end()
			r.finish(time.Since(start), &mm)
			return r, h, err
		}
		_ = h.RecordValue(max(time.Since(t0).Microseconds(), 1))
		r.Records++
		r.Bytes += b
	}
	elapsed := time.Since(start)
	mm := m.end()
	r.finish(elapsed, &mm)
	r.Latency, r.CDF = summarize(h)
	return r, h, nil
}

// directConns opens n Iggy connections (one client each, logged in), then
// lets each send per messages as one batch at once; the sending part is
// measured.
func directConns(ctx context.Context, addr, topic string, pool [][]byte, partitions, n, per int, dur time.Duration, m *meter) (r Result, err error) {
	clients := make([]*iggy.Client, n)
	defer closeAll(clients, func(c *iggy.Client) { c.Close() })
	took, err := openAll(ctx, dur+flushGrace, clients, func(cctx context.Context, _ int) (*iggy.Client, error) {
		return directClient(cctx, addr, 1)
	})
	r.ConnectSeconds = took.Seconds()
	if err != nil {
		return r, fmt.Errorf("connecting %d clients: %w", n, err)
	}
	var firstErr atomic.Value
	var wg sync.WaitGroup
	t := iggy.TopicRef{Stream: benchStream, Topic: topic}
	var sent, bytes atomic.Int64
	m.begin()
	start := time.Now()
	rctx, cancel := context.WithDeadline(ctx, start.Add(dur+flushGrace))
	defer cancel()
	for i, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b, err := sendBatch(rctx, c, t, uint32(i%partitions), pool, i*per, per)
			if err != nil {
				firstErr.CompareAndSwap(nil, err)
				return
			}
			sent.Add(int64(per))
			bytes.Add(b)
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	mm := m.end()
	r.Records, r.Bytes = sent.Load(), bytes.Load()
	r.finish(elapsed, &mm)
	if e, ok := firstErr.Load().(error); ok {
		return r, e
	}
	return r, nil
}

// directFill sends n messages of the payload pool to topic: conns
// connections, batches of batch, connection i to partition i % partitions.
func directFill(ctx context.Context, addr, topic string, pool [][]byte, partitions, conns, batch, n int) error {
	t := iggy.TopicRef{Stream: benchStream, Topic: topic}
	per := n / conns
	var wg sync.WaitGroup
	var firstErr atomic.Value
	for i := 0; i < conns; i++ {
		quota := per
		if i == conns-1 {
			quota = n - per*(conns-1)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := directClient(ctx, addr, 1)
			if err != nil {
				firstErr.CompareAndSwap(nil, err)
				return
			}
			defer c.Close()
			for done := 0; done < quota; {
				k := min(batch, quota-done)
				if _, err := sendBatch(ctx, c, t, uint32(i%partitions), pool, per*i+done, k); err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				done += k
			}
		}()
	}
	wg.Wait()
	if e, ok := firstErr.Load().(error); ok {
		return e
	}
	return nil
}
