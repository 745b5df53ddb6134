package iggy

import (
	"context"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/kafka-iggy/kafka-iggy/embedded/embedtest"
)

// BenchmarkProduce measures produce throughput through the client against
// the embedded server (in memory): many concurrent callers, each op one
// Send of one 100-byte message to one of 10 partitions.
//
//   - pool4_coalesce: the default shape (4 sessions, coalescing on);
//   - pool4_no_coalesce: 4 sessions, every Send its own batch;
//   - lockstep1: one session, every Send its own request in lockstep (what
//     a single official-client connection does).
//
// Run interleaved and compare medians (a shared machine is noisy):
//
//	go test -run '^$' -bench 'BenchmarkProduce(Remote)?/' -benchtime 2000x -count 5 ./bridge/iggy/
func BenchmarkProduce(b *testing.B) { benchProduce(b, 0) }

// BenchmarkProduceRemote is BenchmarkProduce with the server behind a relay
// that delays every chunk by 250µs in each direction, as a remote Iggy
// would: round trips, not CPU, bound the throughput.
func BenchmarkProduceRemote(b *testing.B) { benchProduce(b, 250*time.Microsecond) }

func benchProduce(b *testing.B, delay time.Duration) {
	cases := []struct {
		name     string
		pool     int
		coalesce bool
	}{
		{"pool4_coalesce", 4, true},
		{"pool4_no_coalesce", 4, false},
		{"lockstep1", 1, false},
		{"pool1_coalesce", 1, true},
	}
	for _, bc := range cases {
		b.Run(bc.name, func(b *testing.B) {
			srv := embedtest.Start(b, "127.0.0.1:0", nil)
			defer srv.Close()
			addr := srv.Addr().String()
			if delay > 0 {
				addr = startDelayRelay(b, addr, delay)
			}
			cfg := testConfig(addr)
			cfg.PoolSize = bc.pool
			cfg.Coalesce = bc.coalesce
			cfg.RequestTimeout = 30 * time.Second
			rm := &countMetrics{}
			c, err := New(cfg, zerolog.New(io.Discard), WithMetrics(rm))
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			if err := c.Start(context.Background()); err != nil {
				b.Fatal(err)
			}
			tr := TopicRef{"bench", "produce"}
			createTopic(b, c, tr, 10)
			payload := make([]byte, 100)
			var next atomic.Uint32
			b.SetParallelism(32) // 32 × GOMAXPROCS concurrent callers
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				ctx := context.Background()
				p := next.Add(1) % 10
				for pb.Next() {
					m := c.NewMessages()
					if err := m.Add(randID(), uint64(time.Now().UnixMicro()), payload, nil); err != nil {
						b.Error(err)
						return
					}
					if _, err := c.Send(ctx, tr, p, m); err != nil {
						b.Error(err)
						return
					}
					p = (p + 1) % 10
				}
			})
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "sends/s")
			if n := rm.batches.Load(); n > 0 {
				b.ReportMetric(float64(b.N)/float64(n), "sends/batch")
			}
		})
	}
}

// startDelayRelay forwards TCP connections to upstream, holding every chunk
// for delay before passing it on (a benchmark tool: simulated distance).
func startDelayRelay(b *testing.B, upstream string, delay time.Duration) string {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	pipe := func(dst, src net.Conn) {
		defer wg.Done()
		buf := make([]byte, 256<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				time.Sleep(delay)
				if _, werr := dst.Write(buf[:n]); werr != nil {
					break
				}
			}
			if err != nil {
				break
			}
		}
		_ = dst.Close()
		_ = src.Close()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", upstream)
			if err != nil {
				_ = c.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, c, u)
			mu.Unlock()
			wg.Add(2)
			go pipe(u, c)
			go pipe(c, u)
		}
	}()
	b.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}
