package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
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
	// clientPID, when set, is a load generator of its own (the Rust
	// program) whose CPU is read from /proc like the servers'.
	clientPID atomic.Int64
	// ours are every process the bench runs (all its servers): with the
	// bench itself and clientPID, their CPU is subtracted from the
	// machine's busy time to give the CPU others used during the run.
	ours  []int
	every time.Duration

	cpu0Server, cpu0Iggy time.Duration
	self0, client0       time.Duration
	busy0, ours0         time.Duration
	at0                  time.Time
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
	// The machine while the run lasted: the 1-minute load average at its
	// start and end, and the CPU that processes other than the bench's
	// used (cores, averaged over the run; -1: not known).
	Load1Before, Load1After float64
	ForeignCores            float64
	Began                   bool // begin ran (the window opened)
	// BudgetBytes is the sidecar's memory budget (limits.memory_bytes, its
	// kafka_iggy_memory_budget_bytes gauge), read once at the end; 0: none.
	BudgetBytes int64
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
	m.m = measured{Mallocs: -1, IggyConnsMax: -1, KafkaConnMax: -1, ForeignCores: -1, Began: true}
	m.m.Load1Before = load1()
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
	if pid := int(m.clientPID.Load()); pid > 0 {
		m.client0, _ = cpuTime(pid)
	}
	m.busy0, _ = machineBusy()
	m.ours0 = m.oursCPU()
	m.at0 = time.Now()
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
	if pid := int(m.clientPID.Load()); pid > 0 {
		c, _ := cpuTime(pid)
		m.m.ClientCPU = c - m.client0
	}
	if busy, err := machineBusy(); err == nil && m.busy0 > 0 {
		if el := time.Since(m.at0).Seconds(); el > 0 {
			m.m.ForeignCores = max(0, (busy-m.busy0-(m.oursCPU()-m.ours0)).Seconds()/el)
		}
	}
	m.m.Load1After = load1()
	if m.haveMallocs {
		if v, ok := scrape(m.server.metricsURL, "go_memstats_mallocs_total"); ok {
			m.m.Mallocs = max(0, v-m.mallocs0-m.scrapeCost)
		}
	}
	if m.haveBatches { // a sidecar: read its memory budget beside its RSS
		if v, ok := scrape(m.server.metricsURL, "kafka_iggy_memory_budget_bytes"); ok {
			m.m.BudgetBytes = int64(v)
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

// oursCPU is the CPU time of the bench, its Rust client and every server
// it runs.
func (m *meter) oursCPU() time.Duration {
	total := selfCPU()
	seen := map[int]bool{}
	pids := append([]int{m.server.pid, m.iggy.pid, int(m.clientPID.Load())}, m.ours...)
	for _, pid := range pids {
		if pid <= 0 || seen[pid] {
			continue
		}
		seen[pid] = true
		c, _ := cpuTime(pid)
		total += c
	}
	return total
}

// machineBusy is the CPU time all processes of the machine used (the
// first line of /proc/stat: user, nice, system, irq, softirq, steal).
func machineBusy() (time.Duration, error) {
	line, _, _ := strings.Cut(readString("/proc/stat"), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0, errors.New("no cpu line in /proc/stat")
	}
	var ticks int64
	for _, i := range []int{1, 2, 3, 6, 7, 8} {
		v, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			return 0, err
		}
		ticks += v
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

// load1 is the 1-minute load average (-1: not known).
func load1() float64 {
	f := strings.Fields(readString("/proc/loadavg"))
	if len(f) == 0 {
		return -1
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return -1
	}
	return v
}

// window is the steady-state part of a throughput run. The run starts,
// warms up for warm (its rate then is the calibration), and the measured
// window opens at t0 = start + warm: the meter begins there. The window
// closes at t1, sized at t0 from the calibration: long enough for
// minRecords at the warm-up's rate, at least measure and at most
// maxMeasure. At t1 the meter ends and the run's context is cancelled. Only
// what completes inside [t0, t1) counts.
type window struct {
	start, t0 time.Time
	t1        atomic.Int64 // unix nanoseconds; 0 until sized
	warmCount atomic.Int64 // what completed before t0 (records)
	done      chan struct{}
	mm        measured
}

// windowSpec sizes a window.
type windowSpec struct {
	warm, measure, maxMeasure time.Duration
	minRecords                int64 // 0: the window is measure long
}

// openWindow starts the window's clock and returns it with the run's
// context, which ends at t1 (or with ctx).
func openWindow(ctx context.Context, m *meter, s windowSpec) (*window, context.Context, context.CancelFunc) {
	runCtx, cancel := context.WithCancel(ctx)
	w := &window{start: time.Now(), done: make(chan struct{})}
	w.t0 = w.start.Add(s.warm)
	w.t1.Store(w.t0.Add(s.measure).UnixNano())
	go func() {
		defer close(w.done)
		defer cancel()
		if !sleepUntil(runCtx, w.t0) {
			return
		}
		span := s.measure
		if s.minRecords > 0 && s.warm > 0 {
			if n := w.warmCount.Load(); n > 0 {
				rate := float64(n) / s.warm.Seconds()
				need := time.Duration(float64(s.minRecords) / rate * float64(time.Second))
				span = min(max(span, need), max(s.maxMeasure, s.measure))
			}
		}
		t1 := w.t0.Add(span)
		w.t1.Store(t1.UnixNano())
		m.begin()
		sleepUntil(runCtx, t1)
		w.mm = m.end()
	}()
	return w, runCtx, cancel
}

// in reports whether t falls inside the window; before reports whether t
// is in the warm-up.
func (w *window) in(t time.Time) bool {
	return !t.Before(w.t0) && t.UnixNano() < w.t1.Load()
}

func (w *window) before(t time.Time) bool { return t.Before(w.t0) }

// seconds is the window's length.
func (w *window) seconds() time.Duration { return time.Unix(0, w.t1.Load()).Sub(w.t0) }

// wait waits for the window to close and returns its measurements.
func (w *window) wait() measured {
	<-w.done
	return w.mm
}

// calRate is the calibration: records per second during the warm-up.
func (w *window) calRate() float64 {
	if d := w.t0.Sub(w.start).Seconds(); d > 0 {
		return float64(w.warmCount.Load()) / d
	}
	return 0
}

// sleepUntil sleeps until t; false when ctx ended first.
func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-tm.C:
		return true
	}
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

// openAll opens len(clients) clients with open (at most 32 at a time),
// within timeout, storing each in its slot; it returns how long that took
// and the first error. Slots of clients that failed stay zero.
func openAll[T comparable](ctx context.Context, timeout time.Duration, clients []T, open func(ctx context.Context, i int) (T, error)) (time.Duration, error) {
	start := time.Now()
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	_, err := openSlots(cctx, clients, open)
	took := time.Since(start)
	if err != nil {
		return took, err
	}
	var zero T
	for _, c := range clients {
		if c == zero { // the loop stopped at the deadline
			return took, fmt.Errorf("not every client opened within %v: %w", timeout, cctx.Err())
		}
	}
	return took, nil
}

// openSlots fills the slots of clients with open, at most 32 at a time,
// and returns the first error. Once ctx is done it starts no more: the
// slots not reached stay zero and stopped is true.
func openSlots[T comparable](ctx context.Context, clients []T, open func(ctx context.Context, i int) (T, error)) (stopped bool, err error) {
	var firstErr atomic.Value
	sem := make(chan struct{}, 32)
	var wg sync.WaitGroup
	for i := range clients {
		if ctx.Err() != nil {
			stopped = true
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			c, err := open(ctx, i)
			if err != nil {
				firstErr.CompareAndSwap(nil, err)
				return
			}
			clients[i] = c
		}()
	}
	wg.Wait()
	if e, ok := firstErr.Load().(error); ok {
		return stopped, e
	}
	return stopped, nil
}

// closeAll closes every opened client (the non-zero slots) in parallel.
func closeAll[T comparable](clients []T, closeFn func(T)) {
	var zero T
	var wg sync.WaitGroup
	for _, c := range clients {
		if c != zero {
			wg.Add(1)
			go func() { defer wg.Done(); closeFn(c) }()
		}
	}
	wg.Wait()
}
