package main

// The load generator for Kafka-protocol targets (the sidecar, Apache Kafka,
// kfake): franz-go's kgo client, every loop bounded by a record count and a
// deadline, latencies in HDR histograms.

import (
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
func kafkaAdmin(bootstrap string) (*kadm.Client, *kgo.Client, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.RequestRetries(3))
	if err != nil {
		return nil, nil, err
	}
	return kadm.NewClient(cl), cl, nil
}

func kafkaCreateTopic(ctx context.Context, bootstrap, topic string, partitions int) error {
	adm, cl, err := kafkaAdmin(bootstrap)
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
	records   int
	dur       time.Duration
}

// kafkaProduce produces up to spec.records records of the payload pool
// (stopping at spec.dur), then waits for every acknowledgement. It returns
// the acknowledged count and bytes, the wall time from the first produce to
// the last acknowledgement, and the acknowledgement latency under load.
// One record is produced and acknowledged before the clock starts
// (connections, metadata, producer id), so the topic holds acked+1 records.
func kafkaProduce(ctx context.Context, s produceSpec, pool [][]byte, m *meter) (r Result, err error) {
	opts := []kgo.Opt{
		kgo.SeedBrokers(s.bootstrap),
		kgo.DefaultProduceTopic(s.topic),
		kgo.ProducerLinger(s.linger),
		kgo.RequiredAcks(s.acks),
		kgo.ProducerBatchCompression(s.codec),
		kgo.RecordDeliveryTimeout(s.dur + flushGrace),
		kgo.ProduceRequestTimeout(flushGrace),
	}
	if s.acks != kgo.AllISRAcks() {
		opts = append(opts, kgo.DisableIdempotentWrite())
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return r, err
	}
	defer cl.Close()
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	err = cl.ProduceSync(wctx, &kgo.Record{Value: pool[0]}).FirstErr()
	wcancel()
	if err != nil {
		return r, fmt.Errorf("warm-up produce: %w", err)
	}

	var (
		acked, bytes, failed atomic.Int64
		mu                   sync.Mutex
		h                    = newHist()
		firstErr             atomic.Value
	)
	m.begin()
	start := time.Now()
	runCtx, cancel := context.WithDeadline(ctx, start.Add(s.dur))
	defer cancel()
	promise := func(rec *kgo.Record, err error) {
		if err != nil {
			if runCtx.Err() != nil && errors.Is(err, context.DeadlineExceeded) {
				return // never sent: the deadline stopped it
			}
			failed.Add(1)
			firstErr.CompareAndSwap(nil, err)
			return
		}
		acked.Add(1)
		bytes.Add(int64(len(rec.Value)))
		us := time.Since(rec.Timestamp).Microseconds()
		mu.Lock()
		_ = h.RecordValue(max(us, 1))
		mu.Unlock()
	}
	for i := 1; i <= s.records && runCtx.Err() == nil; i++ {
		cl.Produce(runCtx, &kgo.Record{Value: pool[i%poolSize]}, promise)
	}
	fctx, fcancel := context.WithTimeout(ctx, flushGrace)
	ferr := cl.Flush(fctx)
	fcancel()
	elapsed := time.Since(start)
	mm := m.end()
	r.Records, r.Bytes, r.Errors = acked.Load(), bytes.Load(), failed.Load()
	r.Latency, _ = summarize(h)
	r.finish(elapsed, &mm)
	if ferr != nil {
		return r, fmt.Errorf("flush: %w", ferr)
	}
	if e, ok := firstErr.Load().(error); ok {
		return r, fmt.Errorf("%d records failed, first: %w", r.Errors, e)
	}
	return r, nil
}

// kafkaConsume reads topic from the earliest offset until want records
// arrived or dur passed. The clock starts before the client connects.
func kafkaConsume(ctx context.Context, bootstrap, topic string, want int64, dur time.Duration, m *meter) (r Result, err error) {
	m.begin()
	start := time.Now()
	runCtx, cancel := context.WithDeadline(ctx, start.Add(dur))
	defer cancel()
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(bootstrap),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(250*time.Millisecond),
	)
	if err != nil {
		m.end()
		return r, err
	}
	defer cl.Close()
	var firstErr error
	for r.Records < want && runCtx.Err() == nil {
		fs := cl.PollFetches(runCtx)
		fs.EachError(func(_ string, _ int32, e error) {
			if firstErr == nil && !errors.Is(e, context.DeadlineExceeded) && !errors.Is(e, context.Canceled) {
				firstErr = e
			}
		})
		fs.EachRecord(func(rec *kgo.Record) {
			r.Records++
			r.Bytes += int64(len(rec.Value))
		})
	}
	elapsed := time.Since(start)
	mm := m.end()
	r.Expected = want
	r.finish(elapsed, &mm)
	if firstErr != nil {
		return r, firstErr
	}
	if r.Records < want {
		r.Note = fmt.Sprintf("deadline: read %d of %d records", r.Records, want)
	}
	return r, nil
}

// kafkaLatency produces one record at a time and waits for each ack
// (acks=all, no linger), after warm-up sends that are not recorded.
func kafkaLatency(ctx context.Context, bootstrap, topic string, pool [][]byte, records, warmup int, dur time.Duration, m *meter) (r Result, h *hdr.Histogram, err error) {
	cl, err := kgo.NewClient(
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
	defer func() {
		var wg sync.WaitGroup
		for _, cl := range clients {
			if cl != nil {
				wg.Add(1)
				go func() { defer wg.Done(); cl.Close() }()
			}
		}
		wg.Wait()
	}()
	connStart := time.Now()
	cctx, ccancel := context.WithTimeout(ctx, dur+flushGrace)
	defer ccancel()
	var firstErr atomic.Value
	sem := make(chan struct{}, 32)
	var wg sync.WaitGroup
	for i := range clients {
		if cctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			cl, err := kgo.NewClient(
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
			if err != nil {
				firstErr.CompareAndSwap(nil, err)
				if cl != nil {
					cl.Close()
				}
				return
			}
			clients[i] = cl
		}()
	}
	wg.Wait()
	r.ConnectSeconds = time.Since(connStart).Seconds()
	if e, ok := firstErr.Load().(error); ok {
		return r, fmt.Errorf("connecting %d producers: %w", n, e)
	}

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
