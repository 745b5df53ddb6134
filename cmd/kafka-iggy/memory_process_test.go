package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The memory-budget process test: sizes of the scenario.
const (
	memBudget        = 192 << 20 // limits.memory_bytes of the sidecar
	memPartitions    = 20        // one per consumer
	memConsumers     = 20
	memProducers     = 50
	memBatches       = 10    // per producer
	memBatchRecords  = 16    // records per 1 MiB batch
	memRecordBytes   = 64000 // 16 x 64000 = 1,024,000 bytes a batch
	memClientMaxByte = 1000 << 20
	// memOverhead is what the process may hold beside the budget: the
	// runtime and its garbage, gnet's buffers, idle pools, and request
	// bytes gnet read for connections waiting for the budget. Peak RSS must
	// stay under budget + overhead (measured: 38-59 MiB on two loaded
	// cores; the bound leaves room for a slower collector).
	memOverhead = 80 << 20
)

// TestMemoryBudgetHolds: a sidecar process under a 192 MiB budget, 20
// consumers asking 1000 MiB per fetch and per partition read a topic while
// 50 producers write 1 MiB batches (512 MB in all, far past the budget; 20 x
// 55 MiB of fetch demand): every record arrives, no client sees an error,
// the budget binds (waits counted), the sidecar's peak RSS (VmHWM) stays
// under budget + overhead, and after the burst its RSS falls back.
func TestMemoryBudgetHolds(t *testing.T) {
	if testing.Short() {
		t.Skip("starts sidecar and Iggy server processes")
	}
	p := startBudgetSidecar(t)
	pid := p.cmd.Process.Pid

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const topic = "membudget"
	adm, err := kgo.NewClient(kgo.SeedBrokers(p.kafka))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	if _, err := kadm.NewClient(adm).CreateTopic(ctx, memPartitions, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	idle := procStatusKiB(t, pid, "VmRSS")

	start := time.Now()
	var wg sync.WaitGroup
	var clientErrs atomic.Int64
	errs := make(chan string, 64)
	report := func(format string, args ...any) {
		clientErrs.Add(1)
		select {
		case errs <- fmt.Sprintf(format, args...):
		default:
		}
	}
	value := make([]byte, memRecordBytes)
	_, _ = rand.Read(value)
	for i := 0; i < memProducers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl, err := kgo.NewClient(kgo.SeedBrokers(p.kafka), kgo.DefaultProduceTopic(topic),
				kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchMaxBytes(1<<20),
				kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerLinger(0))
			if err != nil {
				report("producer client: %v", err)
				return
			}
			defer cl.Close()
			for b := 0; b < memBatches; b++ {
				part := int32((i*memBatches + b) % memPartitions)
				recs := make([]*kgo.Record, memBatchRecords)
				for r := range recs {
					recs[r] = &kgo.Record{Partition: part, Value: value}
				}
				if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
					report("producer %d batch %d: %v", i, b, err)
					return
				}
			}
		}()
	}
	perPart := memProducers * memBatches * memBatchRecords / memPartitions
	var delivered atomic.Int64
	for c := 0; c < memConsumers; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl, err := kgo.NewClient(kgo.SeedBrokers(p.kafka),
				kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {int32(c): kgo.NewOffset().At(0)}}),
				kgo.FetchMaxBytes(memClientMaxByte), kgo.FetchMaxPartitionBytes(memClientMaxByte),
				kgo.BrokerMaxReadBytes(memClientMaxByte+(1<<20)))
			if err != nil {
				report("consumer client: %v", err)
				return
			}
			defer cl.Close()
			got := 0
			for got < perPart {
				fs := cl.PollFetches(ctx)
				if ctx.Err() != nil {
					report("consumer %d: %d of %d records when the test timed out", c, got, perPart)
					return
				}
				fs.EachError(func(_ string, _ int32, err error) { report("consumer %d: %v", c, err) })
				fs.EachRecord(func(r *kgo.Record) {
					if len(r.Value) == memRecordBytes {
						got++
					}
				})
			}
			delivered.Add(int64(got))
		}()
	}
	wg.Wait()
	took := time.Since(start)
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if n := clientErrs.Load(); n > 0 {
		t.Fatalf("%d client errors\n%s", n, tail(p.logText(), 4000))
	}
	if want := int64(memPartitions * perPart); delivered.Load() != want {
		t.Fatalf("%d of %d records delivered", delivered.Load(), want)
	}

	peak := procStatusKiB(t, pid, "VmHWM") << 10
	waits := scrapeMetric(t, p.admin, "kafka_iggy_memory_budget_waits_total")
	budgetPeak := scrapeMetric(t, p.admin, "kafka_iggy_memory_budget_peak_bytes")
	data := memProducers * memBatches * memBatchRecords * memRecordBytes
	t.Logf("%d MB written and read in %v; idle RSS %d MiB; peak RSS (VmHWM) %d MiB = budget %d MiB + %d MiB; budget peak %.0f MiB, %.0f waits",
		data/1e6, took.Round(time.Millisecond), idle>>10, peak>>20, memBudget>>20, (peak-memBudget)>>20, budgetPeak/(1<<20), waits)
	if waits == 0 {
		t.Errorf("the budget never bound (no waits): the test does not exercise it")
	}
	if peak > memBudget+memOverhead {
		t.Errorf("peak RSS %d MiB above budget %d MiB + overhead %d MiB", peak>>20, memBudget>>20, memOverhead>>20)
	}
	// After the burst the sidecar gives its heap back (returnAfterBursts).
	deadline := time.Now().Add(20 * time.Second)
	rss := procStatusKiB(t, pid, "VmRSS") << 10
	for rss > peak/2 && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
		rss = procStatusKiB(t, pid, "VmRSS") << 10
	}
	t.Logf("RSS after the burst: %d MiB (peak %d MiB)", rss>>20, peak>>20)
	if rss > peak/2 {
		t.Errorf("RSS still %d MiB 20 s after the burst (peak %d MiB): memory not returned to the OS", rss>>20, peak>>20)
	}
}

// startBudgetSidecar starts an in-memory `kafka-iggy embedded-iggy` and a
// `kafka-iggy serve` on it with a memBudget memory budget.
func startBudgetSidecar(t *testing.T) *sidecarProc {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	startMemIggyProc(t, addr)
	return startServeProc(t, "KAFKA_IGGY_IGGY__ADDRESS="+addr, "KAFKA_IGGY_EMBEDDED__MODE=off",
		"KAFKA_IGGY_LIMITS__MEMORY_BYTES="+strconv.Itoa(memBudget))
}

// startMemIggyProc starts `kafka-iggy embedded-iggy` in memory on addr.
func startMemIggyProc(t *testing.T, addr string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(childEnv(), "KIGGY_TEST_RUN_MAIN=1", "KIGGY_TEST_MAIN_ARGS=embedded-iggy --listen "+addr)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-done })
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			_ = c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("embedded-iggy not listening on %s within 30s", addr)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// procStatusKiB reads one kB field of /proc/<pid>/status (VmRSS, VmHWM).
func procStatusKiB(t *testing.T, pid int, field string) int64 {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// scrapeMetric reads one unlabelled series from the admin /metrics.
func scrapeMetric(t *testing.T, admin, name string) float64 {
	t.Helper()
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
	}
	t.Fatalf("no %s in /metrics", name)
	return 0
}

// tail is the last n bytes of s.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}
