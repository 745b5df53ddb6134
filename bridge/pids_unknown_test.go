package bridge_test

// An Iggy write whose outcome is unknown (the server's reply dropped by a
// fault proxy between the sidecar and Iggy) is retried by the producer
// without a duplicate: the sidecar reads the partition's tail first
// (pids_tail.go).

import (
	"bufio"
	"context"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafka-iggy/kafka-iggy/bridge"
	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

// replyDropProxy sits between the Iggy client and the server, frame by
// frame: while armed (drops > 0), the server's reply to a SEND_MESSAGES is
// swallowed and the connection closed, after the server has applied the
// write. The client cannot know whether the write happened.
type replyDropProxy struct {
	ln      net.Listener
	target  string
	drops   atomic.Int64 // replies still to drop
	dropped atomic.Int64
	wg      sync.WaitGroup
}

func startReplyDropProxy(t *testing.T, target string) *replyDropProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &replyDropProxy{ln: ln, target: target}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(func() { _ = ln.Close(); p.wg.Wait() })
	return p
}

func (p *replyDropProxy) accept() {
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
		dropNext := make(chan struct{}, 1) // one reply of this connection to drop
		p.wg.Add(2)
		go p.pump(c, s, func(frame []byte) bool { // requests
			var h icodec.RequestHeader
			if _, err := h.DecodeFrom(frame); err == nil && h.Operation == icodec.OperationSendMessages {
				if n := p.drops.Load(); n > 0 && p.drops.CompareAndSwap(n, n-1) {
					dropNext <- struct{}{}
				}
			}
			return true
		})
		go p.pump(s, c, func([]byte) bool { // replies
			select {
			case <-dropNext:
				p.dropped.Add(1)
				return false
			default:
				return true
			}
		})
	}
}

// pump copies frames from src to dst while forward says so; when it says
// no, both connections are closed.
func (p *replyDropProxy) pump(src, dst net.Conn, forward func([]byte) bool) {
	defer p.wg.Done()
	defer func() { _ = src.Close(); _ = dst.Close() }()
	br := bufio.NewReader(src)
	var buf []byte
	for {
		frame, err := icodec.ReadFrame(br, buf, icodec.MaxFrameSize)
		if err != nil || !forward(frame) {
			return
		}
		if _, err := dst.Write(frame); err != nil {
			return
		}
		buf = frame[:0]
	}
}

// unknownOutcomeStack is a stack whose Iggy client goes through a
// replyDropProxy; tail = producer.recovery_tail_messages.
func unknownOutcomeStack(t *testing.T, tail int) (*stack, *replyDropProxy) {
	var px *replyDropProxy
	s := startStack(t, func(o *stackOpts) {
		o.iggyVia = func(server string) string {
			px = startReplyDropProxy(t, server)
			return px.ln.Addr().String()
		}
		o.client.BackoffMin = time.Millisecond
		o.bridge.Producer.RecoveryTailMessages = tail
	})
	return s, px
}

// TestUnknownOutcomeWriteNotDuplicated: a batch whose SEND_MESSAGES reply
// is lost answers a retriable error; its retry is answered as a duplicate
// at the offset the lost write got, and Iggy holds it once.
func TestUnknownOutcomeWriteNotDuplicated(t *testing.T) {
	s, px := unknownOutcomeStack(t, bridge.DefaultConfig().Producer.RecoveryTailMessages)
	r := dialRaw(t, s.Addr)
	ip := r.do(kmsg.NewPtrInitProducerIDRequest(), 4).(*kmsg.InitProducerIDResponse)
	if ip.ErrorCode != 0 {
		t.Fatal(ip.ErrorCode)
	}
	pid := ip.ProducerID
	if p := r.produceRaw(9, -1, "unknown-outcome", 0, idempotentBatch(pid, 0, 0, 3)); p.ErrorCode != 0 || p.BaseOffset != 0 {
		t.Fatalf("first batch: %+v", p)
	}
	px.drops.Store(1)
	batch := idempotentBatch(pid, 0, 3, 2)
	if p := r.produceRaw(9, -1, "unknown-outcome", 0, batch); p.ErrorCode == 0 {
		t.Fatalf("batch with its Iggy reply dropped: %+v, want a retriable error", p)
	}
	if d := px.dropped.Load(); d != 1 {
		t.Fatalf("%d replies dropped, want 1", d)
	}
	p := r.produceRaw(9, -1, "unknown-outcome", 0, batch)
	if p.ErrorCode != 0 || p.BaseOffset != 3 {
		t.Fatalf("retry: %+v, want a duplicate at offset 3", p)
	}
	if p := r.produceRaw(9, -1, "unknown-outcome", 0, idempotentBatch(pid, 0, 5, 1)); p.ErrorCode != 0 || p.BaseOffset != 5 {
		t.Fatalf("next batch: %+v", p)
	}
	if msgs := iggyMessages(t, s.Client, iggy.TopicRef{Stream: "kafka", Topic: "unknown-outcome"}, 0); len(msgs) != 6 {
		t.Fatalf("Iggy holds %d messages, want 6", len(msgs))
	}
}

// TestUnknownOutcomeIdempotentProducer: a franz-go idempotent producer
// writes through a sidecar whose Iggy replies are dropped every 100 records
// or so: every record is stored once, in order.
func TestUnknownOutcomeIdempotentProducer(t *testing.T) {
	s, px := unknownOutcomeStack(t, bridge.DefaultConfig().Producer.RecoveryTailMessages)
	cl := s.kgoClient(t, kgo.ProducerLinger(0), kgo.ProducerBatchMaxBytes(512),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.AllowAutoTopicCreation(),
		kgo.MetadataMinAge(10*time.Millisecond)) // retries wait for a metadata refresh
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const n, every = 1000, 100
	var failed atomic.Int64
	// The first record first: the producer id is leased before replies
	// are dropped (a lost lease reply only delays InitProducerId).
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "unknown-kgo", Value: []byte("0")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	for i := 1; i < n; i++ {
		if i%every == every/2 {
			px.drops.Add(1)
		}
		rec := &kgo.Record{Topic: "unknown-kgo", Value: []byte(strconv.Itoa(i))}
		cl.Produce(ctx, rec, func(_ *kgo.Record, err error) {
			if err != nil {
				failed.Add(1)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if f := failed.Load(); f != 0 {
		t.Fatalf("%d records failed", f)
	}
	msgs := iggyMessages(t, s.Client, iggy.TopicRef{Stream: "kafka", Topic: "unknown-kgo"}, 0)
	t.Logf("%d Iggy replies dropped; Iggy holds %d messages for %d records", px.dropped.Load(), len(msgs), n)
	if px.dropped.Load() == 0 {
		t.Fatal("no reply was dropped")
	}
	if len(msgs) != n {
		t.Fatalf("Iggy holds %d messages, want %d", len(msgs), n)
	}
	for i, m := range msgs {
		if string(m.Payload) != strconv.Itoa(i) {
			t.Fatalf("message %d is %q", i, m.Payload)
		}
	}
}
