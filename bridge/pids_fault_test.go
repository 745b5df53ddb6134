package bridge_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafka-iggy/kafka-iggy/bridge"
)

// dropProxy is a fault-injecting TCP proxy between a Kafka client and the
// sidecar: it forwards every frame, except that every dropEvery-th Produce
// response is swallowed and its connection closed, so the client never
// learns that the write succeeded and must retry it.
type dropProxy struct {
	ln        net.Listener
	target    string
	dropEvery int64
	produces  atomic.Int64
	dropped   atomic.Int64
	wg        sync.WaitGroup
}

func startDropProxy(t *testing.T, target string, dropEvery int64) *dropProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &dropProxy{ln: ln, target: target, dropEvery: dropEvery}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(func() { _ = ln.Close(); p.wg.Wait() })
	return p
}

func (p *dropProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		p.wg.Add(2)
		keys := &sync.Map{} // correlation id -> api key of requests on this connection
		go p.pump(c, s, keys, true)
		go p.pump(s, c, keys, false)
	}
}

// pump copies frames from src to dst; requests record their key, responses
// to Produce are counted and every dropEvery-th one is swallowed.
func (p *dropProxy) pump(src, dst net.Conn, keys *sync.Map, requests bool) {
	defer p.wg.Done()
	defer src.Close()
	defer dst.Close()
	var size [4]byte
	for {
		if _, err := io.ReadFull(src, size[:]); err != nil {
			return
		}
		n := binary.BigEndian.Uint32(size[:])
		if n > 64<<20 {
			return
		}
		frame := make([]byte, 4+n)
		copy(frame, size[:])
		if _, err := io.ReadFull(src, frame[4:]); err != nil {
			return
		}
		if requests && n >= 8 {
			keys.Store(binary.BigEndian.Uint32(frame[8:12]), int16(binary.BigEndian.Uint16(frame[4:6])))
		}
		if !requests && n >= 4 {
			corr := binary.BigEndian.Uint32(frame[4:8])
			if k, ok := keys.LoadAndDelete(corr); ok && k.(int16) == 0 {
				if p.produces.Add(1)%p.dropEvery == 0 {
					p.dropped.Add(1)
					return // the response is lost with the connection
				}
			}
		}
		if _, err := dst.Write(frame); err != nil {
			return
		}
	}
}

// TestIdempotentProducerSurvivesLostResponses: a stock idempotent producer
// whose produce responses are lost (fault-injecting proxy) retries, and the
// topic holds every record exactly once, in order.
func TestIdempotentProducerSurvivesLostResponses(t *testing.T) {
	s := startStack(t)
	px := startDropProxy(t, s.Addr, 3)
	const topic, n = "lossy", 600
	// The client reaches the sidecar only through the proxy: the broker it
	// is told about must be the proxy too.
	host, port, _ := net.SplitHostPort(px.ln.Addr().String())
	pn, _ := strconv.Atoi(port)
	setBroker(s, host, int32(pn))

	pr, err := kgo.NewClient(kgo.SeedBrokers(px.ln.Addr().String()), kgo.DefaultProduceTopic(topic),
		kgo.AllowAutoTopicCreation(), kgo.ProducerLinger(2*time.Millisecond),
		kgo.RetryBackoffFn(func(int) time.Duration { return 10 * time.Millisecond }))
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	var firstErr atomic.Value
	for i := 0; i < n; i++ {
		wg.Add(1)
		pr.Produce(ctx, &kgo.Record{Value: []byte(fmt.Sprintf("%05d", i))}, func(_ *kgo.Record, err error) {
			defer wg.Done()
			if err != nil {
				firstErr.CompareAndSwap(nil, err)
			}
		})
		if i%50 == 49 {
			if err := pr.Flush(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	wg.Wait()
	if err, _ := firstErr.Load().(error); err != nil {
		t.Fatalf("produce failed: %v", err)
	}
	if px.dropped.Load() == 0 {
		t.Fatalf("the proxy dropped no produce response (%d produces): the test proves nothing", px.produces.Load())
	}

	co := s.kgoClient(t, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var got []string
	for len(got) < n && ctx.Err() == nil {
		fs := co.PollFetches(ctx)
		if errs := fs.Errors(); len(errs) > 0 && !errors.Is(errs[0].Err, context.DeadlineExceeded) {
			t.Fatal(errs[0].Err)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	// Anything beyond n would be a duplicate: give it a moment to show up.
	extra, ecancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	fs := co.PollFetches(extra)
	ecancel()
	fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	if len(got) != n {
		t.Fatalf("topic holds %d records, want %d (dropped responses: %d)", len(got), n, px.dropped.Load())
	}
	for i, v := range got {
		if want := fmt.Sprintf("%05d", i); v != want {
			t.Fatalf("record %d is %q, want %q (duplicate or out of order)", i, v, want)
		}
	}
	t.Logf("%d records exactly once and in order; %d of %d produce responses were dropped", n, px.dropped.Load(), px.produces.Load())
}

// setBroker makes the stack advertise host:port (a proxy in front of it).
func setBroker(s *stack, host string, port int32) {
	s.Bridge.SetBroker(bridge.Broker{NodeID: 0, Host: host, Port: port})
}
