package main

// The load generator for Kafka-protocol targets (the sidecar, Apache Kafka,
// kfake): franz-go's kgo client, every loop bounded by a record count and a
// deadline, latencies in HDR histograms.

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// flushGrace bounds how long a run waits for records still buffered or in
// flight after its deadline.
const flushGrace = 30 * time.Second

// kafkaAdmin creates and deletes topics on a Kafka-protocol target.
func kafkaAdmin(bootstrap string, extra ...kgo.Opt) (*kadm.Client, *kgo.Client, error) {
	cl, err := newKgo(append([]kgo.Opt{kgo.SeedBrokers(bootstrap), kgo.RequestRetries(3)}, extra...)...)
	if err != nil {
		return nil, nil, err
	}
	return kadm.NewClient(cl), cl, nil
}

func kafkaCreateTopic(ctx context.Context, bootstrap, topic string, partitions int) error {
	return kafkaCreateTopicWith(ctx, bootstrap, topic, partitions)
}

// kafkaCreateTopicWith is kafkaCreateTopic with client options (SASL).
func kafkaCreateTopicWith(ctx context.Context, bootstrap, topic string, partitions int, extra ...kgo.Opt) error {
	adm, cl, err := kafkaAdmin(bootstrap, extra...)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	resp, err := adm.CreateTopic(ctx, int32(partitions), 1, nil, topic)
	if err != nil {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	if resp.Err != nil {
		return fmt.Errorf("create topic %s: %w", topic, resp.Err)
	}
	// Wait until metadata shows every partition with a leader.
	for {
		md, err := adm.Metadata(ctx, topic)
		if err == nil {
			if td, ok := md.Topics[topic]; ok && td.Err == nil && len(td.Partitions) == partitions {
				ready := true
				for _, p := range td.Partitions {
					if p.Leader < 0 || p.Err != nil {
						ready = false
					}
				}
				if ready {
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("topic %s not ready: %w", topic, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func kafkaDeleteTopic(bootstrap, topic string) error {
	adm, cl, err := kafkaAdmin(bootstrap)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := adm.DeleteTopic(ctx, topic)
	if err == nil {
		err = resp.Err
	}
	return err
}

// produceSpec is one produce run on a Kafka-protocol target.
type produceSpec struct {
	bootstrap string
	topic     string
	acks      kgo.Acks
	codec     kgo.CompressionCodec
	linger    time.Duration
	records   int // upper bound of records sent (0: none)
	win       windowSpec
	// rate, when positive, paces the run: the clients together offer rate
	// records per second instead of producing as fast as they can.
	rate float64
	// clients is the number of producer clients (connections), at least 1;
	// maxBuffered caps each one's buffered records (0: franz-go's default).
	clients     int
	maxBuffered int
	// clientOpts, when set, adds options to client i (its SASL login).
	clientOpts func(i int) []kgo.Opt
}

// kafkaProduce runs a steady-state produce run: spec.clients producers
// (each connected and its first record acknowledged before the clock
// starts, so the topic holds clients extra records) produce the payload
// pool through a warm-up and the measured window (see window); only
// acknowledgements inside the window count, and the acknowledgement
// latency under load is theirs. After the window every buffered record is
// flushed (bounded) so the next run starts on a quiet server.
func kafkaProduce(ctx context.Context, s produceSpec, pool [][]byte, m *meter) (r Result, err error) {
	opts := []kgo.Opt{
		kgo.SeedBrokers(s.bootstrap),
		kgo.DefaultProduceTopic(s.topic),
		kgo.ProducerLinger(s.linger),
		kgo.RequiredAcks(s.acks),
		kgo.ProducerBatchCompression(s.codec),
		kgo.RecordDeliveryTimeout(s.win.warm + max(s.win.maxMeasure, s.win.measure) + flushGrace),
		kgo.ProduceRequestTimeout(flushGrace),
	}
	if s.acks != kgo.AllISRAcks() {
		opts = append(opts, kgo.DisableIdempotentWrite())
	}
	if s.maxBuffered > 0 {
		opts = append(opts, kgo.MaxBufferedRecords(s.maxBuffered))
	}
	n := max(1, s.clients)
	clients := make([]*kgo.Client, n)
	defer closeAll(clients, func(cl *kgo.Client) { cl.Close() })
	if stopped, err := openSlots(ctx, clients, func(ctx context.Context, i int) (*kgo.Client, error) {
		copts := opts
		if s.clientOpts != nil {
			copts = append(append([]kgo.Opt(nil), opts...), s.clientOpts(i)...)
		}
		cl, err := newKgo(copts...)
		if err == nil {
			wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
			err = cl.ProduceSync(wctx, &kgo.Record{Value: pool[i%poolSize]}).FirstErr()
			wcancel()
		}
		if err != nil {
			if cl != nil {
				cl.Close()
			}
			return nil, fmt.Errorf("warm-up produce: %w", err)
		}
		return cl, nil
	}); err != nil || stopped {
		return r, cmp.Or(err, ctx.Err())
	}
	var firstErr atomic.Value

	var (
		acked, bytes, failed atomic.Int64
		mu                   sync.Mutex
		h                    = newHist()
	)
	w, runCtx, cancel := openWindow(ctx, m, s.win)
	defer cancel()
	promise := func(rec *kgo.Record, err error) {
		now := time.Now()
		if err != nil {
			if runCtx.Err() != nil && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)) {
				return // never sent: the window's end stopped it
			}
			failed.Add(1)
			firstErr.CompareAndSwap(nil, err)
			return
		}
		switch {
		case w.before(now):
			w.warmCount.Add(1)
		case w.in(now):
			acked.Add(1)
			bytes.Add(int64(len(rec.Value)))
			us := now.Sub(rec.Timestamp).Microseconds()
			mu.Lock()
			_ = h.RecordValue(max(us, 1))
			mu.Unlock()
		}
	}
	limit := s.records
	if limit <= 0 {
		limit = 1 << 40
	}
	perClient := max(1, limit/n)
	var wg sync.WaitGroup
	for i, cl := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rate := s.rate / float64(n)
			for j := 0; j < perClient && runCtx.Err() == nil; j++ {
				if rate > 0 {
					due := w.start.Add(time.Duration(float64(j) / rate * float64(time.Second)))
					if !sleepUntil(runCtx, due) {
						break
					}
				}
				cl.Produce(runCtx, &kgo.Record{Value: pool[(i*7919+j)%poolSize]}, promise)
			}
		}()
	}
	wg.Wait()
	mm := w.wait()
	// Flush what is still buffered or in flight (not counted).
	var ferr atomic.Value
	for _, cl := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fctx, fcancel := context.WithTimeout(ctx, flushGrace)
			if err := cl.Flush(fctx); err != nil {
				ferr.CompareAndSwap(nil, err)
			}
			fcancel()
		}()
	}
	wg.Wait()
	r.Records, r.Bytes, r.Errors = acked.Load(), bytes.Load(), failed.Load()
	r.Latency, _ = summarize(h)
	r.finish(w.seconds(), &mm)
	r.CalRecPerS = w.calRate()
	if s.rate > 0 {
		r.OfferedRecPerS = s.rate
		r.OfferedMBPerS = s.rate * 1024 / 1e6
	}
	if !mm.Began {
		return r, errors.New("the run ended before its window opened")
	}
	if e, ok := ferr.Load().(error); ok {
		return r, fmt.Errorf("flush: %w", e)
	}
	if e, ok := firstErr.Load().(error); ok {
		return r, fmt.Errorf("%d records failed, first: %w", r.Errors, e)
	}
	return r, nil
}

// kafkaConsume is a steady-state read: a franz-go consumer reads topic
// (records records in all, filled beforehand) from the earliest offset and,
// each time it has read every partition to its high watermark, starts over
// from offset 0, through the warm-up and the measured window; only records
// that arrive inside the window count.
func kafkaConsume(ctx context.Context, bootstrap, topic string, records int64, win windowSpec, m *meter) (r Result, err error) {
	cl, err := newKgo(
		kgo.SeedBrokers(bootstrap),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(250*time.Millisecond),
	)
	if err != nil {
		return r, err
	}
	defer cl.Close()
	w, runCtx, cancel := openWindow(ctx, m, win)
	defer cancel()
	var firstErr error
	done := map[int32]bool{}  // partitions read to their high watermark in this pass
	parts := map[int32]bool{} // partitions seen
	for runCtx.Err() == nil {
		fs := cl.PollFetches(runCtx)
		now := time.Now()
		fs.EachError(func(_ string, _ int32, e error) {
			if firstErr == nil && !errors.Is(e, context.DeadlineExceeded) && !errors.Is(e, context.Canceled) {
				firstErr = e
			}
		})
		fs.EachPartition(func(p kgo.FetchTopicPartition) {
			parts[p.Partition] = true
			if n := len(p.Records); n > 0 {
				last := p.Records[n-1]
				if last.Offset+1 >= p.HighWatermark {
					done[p.Partition] = true
				}
				var b int64
				for _, rec := range p.Records {
					b += int64(len(rec.Value))
				}
				switch {
				case w.before(now):
					w.warmCount.Add(int64(n))
				case w.in(now):
					r.Records += int64(n)
					r.Bytes += b
				}
			} else if p.HighWatermark == 0 {
				done[p.Partition] = true
			}
		})
		if firstErr != nil {
			break
		}
		if len(parts) > 0 && len(done) == len(parts) && records > 0 {
			// Every partition read to its end: start over.
			reset := map[int32]kgo.EpochOffset{}
			for p := range parts {
				reset[p] = kgo.EpochOffset{Epoch: -1, Offset: 0}
			}
			cl.SetOffsets(map[string]map[int32]kgo.EpochOffset{topic: reset})
			done = map[int32]bool{}
		}
	}
	mm := w.wait()
	r.finish(w.seconds(), &mm)
	r.CalRecPerS = w.calRate()
	if firstErr != nil {
		return r, firstErr
	}
	if !mm.Began {
		return r, errors.New("the run ended before its window opened")
	}
	return r, nil
}

// kafkaLatency produces one record at a time and waits for each ack
// (acks=all, no linger), after warm-up sends that are not recorded.
func kafkaLatency(ctx context.Context, bootstrap, topic string, pool [][]byte, records, warmup int, dur time.Duration, m *meter) (r Result, h *hdr.Histogram, err error) {
	cl, err := newKgo(
		kgo.SeedBrokers(bootstrap),
		kgo.DefaultProduceTopic(topic),
		kgo.ProducerLinger(0),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordDeliveryTimeout(flushGrace),
	)
	if err != nil {
		return r, nil, err
	}
	defer cl.Close()
	h = newHist()
	for i := 0; i < warmup; i++ {
		wctx, c := context.WithTimeout(ctx, flushGrace)
		err := cl.ProduceSync(wctx, &kgo.Record{Value: pool[i%poolSize]}).FirstErr()
		c()
		if err != nil {
			return r, nil, fmt.Errorf("warm-up: %w", err)
		}
	}
	m.begin()
	start := time.Now()
	deadline := start.Add(dur)
	for i := 0; i < records && time.Now().Before(deadline); i++ {
		v := pool[i%poolSize]
		t0 := time.Now()
		pctx, c := context.WithTimeout(ctx, flushGrace)
		err := cl.ProduceSync(pctx, &kgo.Record{Value: v}).FirstErr()
		c()
		if err != nil {
			mm := m.end()
			r.finish(time.Since(start), &mm)
			return r, h, err
		}
		_ = h.RecordValue(max(time.Since(t0).Microseconds(), 1))
		r.Records++
		r.Bytes += int64(len(v))
	}
	elapsed := time.Since(start)
	mm := m.end()
	r.finish(elapsed, &mm)
	r.Latency, r.CDF = summarize(h)
	return r, h, nil
}

// kafkaConns opens n producer clients, each with its connections up (one
// record produced and acknowledged, not counted), then lets all of them
// produce per records at once (acks=1, linger 5 ms) and measures that part.
func kafkaConns(ctx context.Context, bootstrap, topic string, pool [][]byte, n, per int, dur time.Duration, m *meter) (r Result, err error) {
	clients := make([]*kgo.Client, n)
	defer closeAll(clients, func(cl *kgo.Client) { cl.Close() })
	took, err := openAll(ctx, dur+flushGrace, clients, func(cctx context.Context, i int) (*kgo.Client, error) {
		cl, err := newKgo(
			kgo.SeedBrokers(bootstrap),
			kgo.DefaultProduceTopic(topic),
			kgo.ProducerLinger(5*time.Millisecond),
			kgo.RequiredAcks(kgo.LeaderAck()),
			kgo.DisableIdempotentWrite(),
			kgo.RecordDeliveryTimeout(dur+flushGrace),
		)
		if err == nil {
			err = cl.ProduceSync(cctx, &kgo.Record{Value: pool[i%poolSize]}).FirstErr()
		}
		if err != nil && cl != nil {
			cl.Close()
			cl = nil
		}
		return cl, err
	})
	r.ConnectSeconds = took.Seconds()
	if err != nil {
		return r, fmt.Errorf("connecting %d producers: %w", n, err)
	}
	var firstErr atomic.Value
	var wg sync.WaitGroup

	var acked, bytes atomic.Int64
	m.begin()
	start := time.Now()
	runCtx, cancel := context.WithDeadline(ctx, start.Add(dur))
	defer cancel()
	for i, cl := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < per && runCtx.Err() == nil; j++ {
				cl.Produce(runCtx, &kgo.Record{Value: pool[(i*per+j)%poolSize]}, func(rec *kgo.Record, err error) {
					if err != nil {
						if !errors.Is(err, context.DeadlineExceeded) {
							firstErr.CompareAndSwap(nil, err)
						}
						return
					}
					acked.Add(1)
					bytes.Add(int64(len(rec.Value)))
				})
			}
			fctx, c := context.WithTimeout(ctx, flushGrace)
			_ = cl.Flush(fctx)
			c()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	mm := m.end()
	r.Records, r.Bytes = acked.Load(), bytes.Load()
	r.finish(elapsed, &mm)
	if e, ok := firstErr.Load().(error); ok {
		return r, e
	}
	return r, nil
}

// idleConns opens n plain TCP connections to a Kafka-protocol server, each
// answered one ApiVersions v0 round trip (so the server has set it up
// fully), and holds them while the server's RSS is read. Connections close
// with RST (SO_LINGER 0) so no TIME_WAIT sockets pile up on this machine.
func idleConns(ctx context.Context, addr string, serverPID, port, n int, dur time.Duration) (r Result, err error) {
	before, _ := rss(serverPID)
	conns := make([]net.Conn, n)
	defer func() {
		for _, c := range conns {
			if c != nil {
				if tc, ok := c.(*net.TCPConn); ok {
					_ = tc.SetLinger(0)
				}
				c.Close()
			}
		}
	}()
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("bench-idle"))
	start := time.Now()
	runCtx, cancel := context.WithDeadline(ctx, start.Add(dur))
	defer cancel()
	var firstErr atomic.Value
	var opened atomic.Int64
	sem := make(chan struct{}, 64)
	var wg sync.WaitGroup
	for i := 0; i < n && runCtx.Err() == nil; i++ {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if runCtx.Err() != nil {
				return
			}
			c, err := apiVersionsConn(runCtx, addr, f, int32(i))
			if err != nil {
				firstErr.CompareAndSwap(nil, err)
				return
			}
			conns[i] = c
			opened.Add(1)
		}()
	}
	wg.Wait()
	r.ConnectSeconds = time.Since(start).Seconds()
	// Let the server finish whatever per-connection set-up is lazy.
	select {
	case <-ctx.Done():
	case <-time.After(time.Second):
	}
	with, _ := rss(serverPID)
	r.IdleConns = serverConns(port)
	r.Records = opened.Load()
	r.RSSBefore, r.RSSWith = before, with
	if r.Records > 0 {
		r.RSSPerConn = float64(with-before) / float64(r.Records)
	}
	r.ServerRSSMax = with
	r.AllocsPerRec, r.IggyConns, r.KafkaConns = -1, -1, r.IdleConns
	r.Seconds = time.Since(start).Seconds()
	if e, ok := firstErr.Load().(error); ok {
		return r, fmt.Errorf("%d of %d connections opened; first failure: %w", r.Records, n, e)
	}
	return r, nil
}

func apiVersionsConn(ctx context.Context, addr string, f *kmsg.RequestFormatter, corr int32) (net.Conn, error) {
	d := net.Dialer{Timeout: 10 * time.Second}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	dl, _ := ctx.Deadline()
	_ = c.SetDeadline(dl)
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(0)
	if _, err := c.Write(f.AppendRequest(nil, req, corr)); err != nil {
		c.Close()
		return nil, err
	}
	var size [4]byte
	if _, err := io.ReadFull(c, size[:]); err != nil {
		c.Close()
		return nil, fmt.Errorf("ApiVersions reply: %w", err)
	}
	n := binary.BigEndian.Uint32(size[:])
	if n > 1<<20 {
		c.Close()
		return nil, fmt.Errorf("ApiVersions reply of %d bytes", n)
	}
	if _, err := io.CopyN(io.Discard, c, int64(n)); err != nil {
		c.Close()
		return nil, fmt.Errorf("ApiVersions reply: %w", err)
	}
	_ = c.SetDeadline(time.Time{})
	return c, nil
}

// kafkaFill produces n records of the payload pool to topic (one franz-go
// producer, acks=1, linger 5 ms) and waits for every acknowledgement.
func kafkaFill(ctx context.Context, bootstrap, topic string, pool [][]byte, n int) error {
	cl, err := newKgo(
		kgo.SeedBrokers(bootstrap),
		kgo.DefaultProduceTopic(topic),
		kgo.ProducerLinger(5*time.Millisecond),
		kgo.RequiredAcks(kgo.LeaderAck()),
		kgo.DisableIdempotentWrite(),
	)
	if err != nil {
		return err
	}
	defer cl.Close()
	var firstErr atomic.Value
	for i := 0; i < n && ctx.Err() == nil; i++ {
		cl.Produce(ctx, &kgo.Record{Value: pool[i%poolSize]}, func(_ *kgo.Record, err error) {
			if err != nil {
				firstErr.CompareAndSwap(nil, err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		return err
	}
	if e, ok := firstErr.Load().(error); ok {
		return e
	}
	return ctx.Err()
}
