package admin

// BenchmarkGnetTuning measures the front door under different gnet
// settings, with a trivial dispatcher (no Iggy), so what changes is the
// event-loop side only. docs/OPERATIONS.md ("Tuning the event loops")
// reports its numbers. Run:
//
//	go test ./proxy/admin -run '^$' -bench GnetTuning -benchtime 20000x -count 3

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafka-iggy/kafka-iggy/bridge"
	"github.com/kafka-iggy/kafka-iggy/proxy"
)

// tuningConfigs are the settings compared; each changes one thing from the
// defaults.
var tuningConfigs = []struct {
	name string
	mod  func(*proxy.GnetConfig)
}{
	{"default", func(*proxy.GnetConfig) {}},
	{"one_loop", func(g *proxy.GnetConfig) { g.Multicore = false }},
	{"lock_os_thread", func(g *proxy.GnetConfig) { g.LockOSThread = true }},
	{"edge_triggered", func(g *proxy.GnetConfig) { g.EdgeTriggeredIO = true }},
	{"read_buffer_16k", func(g *proxy.GnetConfig) { g.ReadBufferCap = 16 << 10 }},
	{"read_buffer_1m", func(g *proxy.GnetConfig) { g.ReadBufferCap = 1 << 20 }},
	{"no_tcp_nodelay", func(g *proxy.GnetConfig) { g.TCPNoDelay = false }},
}

// frame appends a framed Kafka request (size, header v1/v2, body).
func frame(dst []byte, corr int32, req kmsg.Request) []byte {
	at := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = binary.BigEndian.AppendUint16(dst, uint16(req.Key()))
	dst = binary.BigEndian.AppendUint16(dst, uint16(req.GetVersion()))
	dst = binary.BigEndian.AppendUint32(dst, uint32(corr))
	dst = binary.BigEndian.AppendUint16(dst, 5)
	dst = append(dst, "bench"...)
	if req.IsFlexible() {
		dst = append(dst, 0) // no tagged fields
	}
	dst = req.AppendTo(dst)
	binary.BigEndian.PutUint32(dst[at:], uint32(len(dst)-at-4))
	return dst
}

// readFrame reads one response frame into buf.
func readFrame(c net.Conn, buf []byte) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(c, size[:]); err != nil {
		return buf, err
	}
	n := int(binary.BigEndian.Uint32(size[:]))
	if cap(buf) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	_, err := io.ReadFull(c, buf)
	return buf, err
}

// startBenchProxy serves ApiVersions and a Produce that acknowledges
// everything at offset 0.
func startBenchProxy(b *testing.B, mod func(*proxy.GnetConfig), inFlight int) string {
	b.Helper()
	var tab *bridge.Table
	tab, err := bridge.NewTable(
		bridge.ApiVersionsAPI(func() *bridge.Table { return tab }),
		bridge.API{Key: 0, MinVersion: 3, MaxVersion: 9, Handle: func(_ context.Context, rq *bridge.Request) (kmsg.Response, error) {
			req := rq.Msg.(*kmsg.ProduceRequest)
			resp := req.ResponseKind().(*kmsg.ProduceResponse)
			for _, t := range req.Topics {
				rt := kmsg.NewProduceResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewProduceResponseTopicPartition()
					rp.Partition = p.Partition
					rt.Partitions = append(rt.Partitions, rp)
				}
				resp.Topics = append(resp.Topics, rt)
			}
			return resp, nil
		}},
	)
	if err != nil {
		b.Fatal(err)
	}
	cfg := proxy.DefaultConfig()
	cfg.Listener.Address = "127.0.0.1:0"
	cfg.Limits.MaxInFlight = inFlight
	mod(&cfg.Gnet)
	srv, err := proxy.New(cfg, tab, zerolog.New(io.Discard), proxy.WithMetrics(NewMetrics("bench").Proxy()))
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if err := srv.Start(ctx); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	return srv.Addr().String()
}

func BenchmarkGnetTuning(b *testing.B) {
	for _, tc := range tuningConfigs {
		// Latency: one connection, one small request at a time.
		b.Run(tc.name+"/rtt", func(b *testing.B) {
			addr := startBenchProxy(b, tc.mod, 5)
			c, err := net.Dial("tcp", addr)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			req := kmsg.NewPtrApiVersionsRequest()
			req.Version = 3
			req.ClientSoftwareName, req.ClientSoftwareVersion = "bench", "1"
			out := frame(nil, 1, req)
			var buf []byte
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				start := time.Now()
				if _, err := c.Write(out); err != nil {
					b.Fatal(err)
				}
				if buf, err = readFrame(c, buf); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
		})
		// Throughput: 8 connections, each pipelining 16 produce requests of
		// 16 KiB; ns/op and MB/s are per request.
		b.Run(tc.name+"/produce_16k_x8x16", func(b *testing.B) {
			const conns, depth, size = 8, 16, 16 << 10
			addr := startBenchProxy(b, tc.mod, depth)
			req := kmsg.NewPtrProduceRequest()
			req.Version = 9
			req.Acks = 1
			req.TimeoutMillis = 1000
			t := kmsg.NewProduceRequestTopic()
			t.Topic = "bench"
			p := kmsg.NewProduceRequestTopicPartition()
			p.Records = make([]byte, size)
			t.Partitions = append(t.Partitions, p)
			req.Topics = append(req.Topics, t)
			var batch []byte
			for i := range depth {
				batch = frame(batch, int32(i), req)
			}
			cs := make([]net.Conn, conns)
			for i := range cs {
				c, err := net.Dial("tcp", addr)
				if err != nil {
					b.Fatal(err)
				}
				defer c.Close()
				cs[i] = c
			}
			b.SetBytes(size)
			b.ResetTimer()
			rounds := (b.N + conns*depth - 1) / (conns * depth)
			var wg sync.WaitGroup
			for _, c := range cs {
				wg.Add(1)
				go func(c net.Conn) {
					defer wg.Done()
					var buf []byte
					var err error
					for range rounds {
						if _, err := c.Write(batch); err != nil {
							b.Error(err)
							return
						}
						for range depth {
							if buf, err = readFrame(c, buf); err != nil {
								b.Error(err)
								return
							}
						}
					}
				}(c)
			}
			wg.Wait()
		})
	}
}
