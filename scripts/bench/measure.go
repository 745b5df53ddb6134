package main

import (
	"bufio"
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// watched is a server process whose CPU and memory a run measures.
type watched struct {
	pid        int
	metricsURL string // Prometheus text endpoint of a Go process, or ""
}

// meter measures one run: CPU seconds (from /proc/<pid>/stat) of the
// server the client talks to and of the Iggy server behind it, their peak
// RSS (sampled), allocations of a Go server (go_memstats_mallocs_total
// from its /metrics), the load generator's own CPU (rusage), and the peak
// number of connections to the Iggy port and to the Kafka port.
type meter struct {
	server    watched // the Kafka-protocol server (sidecar, Kafka, kfake); pid 0 for direct runs
	iggy      watched // the Iggy server behind it (embedded); pid 0 when there is none
	iggyPort  int     // count established connections to this port (0: don't)
	kafkaPort int     // count established connections accepted on this port (0: don't)
	// iggyOwner, when set, is the process whose connections to iggyPort
	// count (the sidecar, the load generator, the Rust program): other
	// clients of the same Iggy server (an idle sidecar) are left out.
	iggyOwner atomic.Int64
	every     time.Duration

	cpu0Server, cpu0Iggy time.Duration
	self0                time.Duration
	mallocs0, scrapeCost float64
	haveMallocs          bool
	batchSum0, batchN0   float64
	haveBatches          bool

	stop chan struct{}
	wg   sync.WaitGroup
	mu   sync.Mutex
	m    measured
}

// measured is what a meter reports for one run.
type measured struct {
	ServerCPU    time.Duration
	IggyCPU      time.Duration
	ClientCPU    time.Duration
	ServerRSSMax int64
	IggyRSSMax   int64
	ServerRSSEnd int64
	Mallocs      float64 // -1: not known
	HasServer    bool    // a Kafka-protocol server process was measured
	BatchMsgs    float64 // the sidecar's mean messages per Iggy SEND_MESSAGES; -1: none
	IggyConnsMax int     // -1: not counted
	KafkaConnMax int     // -1: not counted
}

func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// begin takes the starting readings and starts the sampler.
func (m *meter) begin() {
	if m.every <= 0 {
		m.every = 200 * time.Millisecond
	}
	m.m = measured{Mallocs: -1, IggyConnsMax: -1, KafkaConnMax: -1}
	if m.server.metricsURL != "" {
		a, ok1 := scrape(m.server.metricsURL, "go_memstats_mallocs_total")
		b, ok2 := scrape(m.server.metricsURL, "go_memstats_mallocs_total")
		if ok1 && ok2 {
			m.haveMallocs = true
			m.mallocs0, m.scrapeCost = b, b-a
		}
	}
	if m.server.metricsURL != "" {
		a, ok1 := scrape(m.server.metricsURL, "kafka_iggy_upstream_batch_messages_sum")
		n, ok2 := scrape(m.server.metricsURL, "kafka_iggy_upstream_batch_messages_count")
		if ok1 && ok2 {
			m.haveBatches, m.batchSum0, m.batchN0 = true, a, n
		}
	}
	if m.server.pid > 0 {
		m.cpu0Server, _ = cpuTime(m.server.pid)
	}
	if m.iggy.pid > 0 {
		m.cpu0Iggy, _ = cpuTime(m.iggy.pid)
	}
	m.self0 = selfCPU()
	m.stop = make(chan struct{})
	m.sample()
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		t := time.NewTicker(m.every)
		defer t.Stop()
		for {
			select {
			case <-m.stop:
				return
			case <-t.C:
				m.sample()
			}
		}
	}()
}

func (m *meter) sample() {
	var srss, irss int64
	if m.server.pid > 0 {
		srss, _ = rss(m.server.pid)
	}
	if m.iggy.pid > 0 {
		irss, _ = rss(m.iggy.pid)
	}
	ic, kc := -1, -1
	if m.iggyPort > 0 || m.kafkaPort > 0 {
		if socks, err := readTCP(); err == nil {
			owner := int(m.iggyOwner.Load())
			var owned map[uint64]bool
			if owner > 0 && m.iggyPort > 0 {
				owned = socketInodes(owner)
			} else if owner < 0 {
				owned = map[uint64]bool{} // owner not known yet: count none
			}
			ic, kc = 0, 0
			for _, s := range socks {
				if s.state != 0x01 {
					continue
				}
				switch {
				case m.iggyPort == 0:
				case owned != nil && s.remotePort == m.iggyPort && owned[s.inode]:
					ic++
				case owned == nil && s.localPort == m.iggyPort:
					ic++
				}
				if m.kafkaPort > 0 && s.localPort == m.kafkaPort {
					kc++
				}
			}
			if m.iggyPort == 0 {
				ic = -1
			}
			if m.kafkaPort == 0 {
				kc = -1
			}
		}
	}
	m.mu.Lock()
	m.m.ServerRSSMax = max(m.m.ServerRSSMax, srss)
	m.m.IggyRSSMax = max(m.m.IggyRSSMax, irss)
	m.m.IggyConnsMax = max(m.m.IggyConnsMax, ic)
	m.m.KafkaConnMax = max(m.m.KafkaConnMax, kc)
	m.mu.Unlock()
}

// end stops the sampler and returns the run's figures.
func (m *meter) end() measured {
	close(m.stop)
	m.wg.Wait()
	m.sample()
	if m.server.pid > 0 {
		m.m.HasServer = true
		c, _ := cpuTime(m.server.pid)
		m.m.ServerCPU = c - m.cpu0Server
		m.m.ServerRSSEnd, _ = rss(m.server.pid)
	}
	if m.iggy.pid > 0 {
		c, _ := cpuTime(m.iggy.pid)
		m.m.IggyCPU = c - m.cpu0Iggy
	}
	m.m.ClientCPU = selfCPU() - m.self0
	if m.haveMallocs {
		if v, ok := scrape(m.server.metricsURL, "go_memstats_mallocs_total"); ok {
			m.m.Mallocs = max(0, v-m.mallocs0-m.scrapeCost)
		}
	}
	m.m.BatchMsgs = -1
	if m.haveBatches {
		a, ok1 := scrape(m.server.metricsURL, "kafka_iggy_upstream_batch_messages_sum")
		n, ok2 := scrape(m.server.metricsURL, "kafka_iggy_upstream_batch_messages_count")
		if ok1 && ok2 && n > m.batchN0 {
			m.m.BatchMsgs = (a - m.batchSum0) / (n - m.batchN0)
		}
	}
	return m.m
}

// scrape reads one un-labelled (or the first labelled) sample of a metric
// from a Prometheus text endpoint.
func scrape(url, name string) (float64, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, false
	}
	return findMetric(bufio.NewScanner(resp.Body), name)
}

// findMetric returns the value of the first sample of name in Prometheus
// text exposition format.
func findMetric(sc *bufio.Scanner, name string) (float64, bool) {
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name) {
			continue
		}
		rest := line[len(name):]
		if rest == "" || (rest[0] != ' ' && rest[0] != '{') {
			continue // a longer name with this prefix
		}
		if rest[0] == '{' {
			i := strings.LastIndexByte(rest, '}')
			if i < 0 {
				continue
			}
			rest = rest[i+1:]
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			continue
		}
		return v, true
	}
	return 0, false
}
