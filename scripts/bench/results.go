package main

import (
	"math"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// Workload names (Result.Workload).
const (
	wProduce = "produce" // throughput, 1 KiB records
	wConsume = "consume" // read a filled topic from the earliest offset
	wLatency = "latency" // closed-loop single-record produce
	wConns   = "conns"   // many producer connections at once
	wIdle    = "idle"    // many idle connections: memory per connection
	wGnet    = "gnet"    // the sidecar under one gnet setting
	wMatched = "matched" // produce at a matched offered load (half the direct saturation)
	wMany    = "many"    // produce from many concurrent producer connections
	// wRebalance: a consumer group whole again after a member joins or
	// leaves or its coordinator is killed (rebalance.go).
	wRebalance = "rebalance"
)

// Target names.
const (
	tSidecar = "sidecar"
	// tSidecarB is a second sidecar from another binary (-bin-b) on the
	// same Iggy server: with both targets a run is an interleaved A/B of
	// two builds.
	tSidecarB = "sidecar-b"
	tKafka    = "kafka"
	tKfake    = "kfake"
	tGo       = "direct-go"
	tRust     = "direct-rust"
)

// allTargets is the column order of every table.
var allTargets = []string{tSidecar, tSidecarB, tKafka, tKfake, tGo, tRust}

// targetLabel is how tables name a target.
var targetLabel = map[string]string{
	tSidecar:  "sidecar → embedded Iggy",
	tSidecarB: "sidecar B (-bin-b) → embedded Iggy",
	tKafka:    "Apache Kafka (KRaft)",
	tKfake:    "kfake",
	tGo:       "direct: Go client → embedded Iggy",
	tRust:     "direct: Rust SDK → embedded Iggy",
}

// Percentiles of a latency distribution, in microseconds.
type Percentiles struct {
	P50  float64 `json:"p50_us"`
	P90  float64 `json:"p90_us"`
	P99  float64 `json:"p99_us"`
	P999 float64 `json:"p99_9_us"`
	Max  float64 `json:"max_us"`
	N    int64   `json:"count"`
}

// CDFPoint is one point of a latency CDF: Q of the samples took at most US.
type CDFPoint struct {
	Q  float64 `json:"q"`
	US float64 `json:"us"`
}

// Result is one run: one workload (and variant) on one target.
type Result struct {
	Workload string `json:"workload"`
	Variant  string `json:"variant,omitempty"` // e.g. "acks=1 lz4", a gnet setting
	Pass     int    `json:"pass,omitempty"`    // 1, 2, ...: the runs of one figure, interleaved
	Target   string `json:"target"`

	Records  int64   `json:"records"`
	Bytes    int64   `json:"bytes"` // payload bytes
	Seconds  float64 `json:"seconds"`
	RecPerS  float64 `json:"records_per_s"`
	MBPerS   float64 `json:"mb_per_s"` // 10^6 payload bytes per second
	Errors   int64   `json:"errors,omitempty"`
	Expected int64   `json:"expected_records,omitempty"`

	Latency *Percentiles `json:"latency,omitempty"`
	CDF     []CDFPoint   `json:"cdf,omitempty"`

	ServerCPUs     float64 `json:"server_cpu_s"`                  // the Kafka-protocol server's CPU seconds
	IggyCPUs       float64 `json:"iggy_cpu_s"`                    // the embedded Iggy server's CPU seconds
	ClientCPUs     float64 `json:"client_cpu_s"`                  // the load generator's
	ServerRSSMax   int64   `json:"server_rss_max_bytes"`          //
	IggyRSSMax     int64   `json:"iggy_rss_max_bytes"`            //
	BudgetBytes    int64   `json:"memory_budget_bytes,omitempty"` // the sidecar's limits.memory_bytes
	AllocsPerRec   float64 `json:"allocs_per_record"`             // -1: not measured
	IggyConns      int     `json:"iggy_connections"`              // -1: not counted
	IggyBatchMsgs  float64 `json:"iggy_batch_messages"`           // the sidecar's mean messages per SEND_MESSAGES; -1: n/a
	KafkaConns     int     `json:"kafka_connections"`             // -1: not counted
	IdleConns      int     `json:"idle_connections,omitempty"`
	RSSBefore      int64   `json:"rss_before_bytes,omitempty"`
	RSSWith        int64   `json:"rss_with_bytes,omitempty"`
	RSSPerConn     float64 `json:"rss_per_connection_bytes,omitempty"`
	ConnectSeconds float64 `json:"connect_seconds,omitempty"`
	// RebalanceS: the rebalance workload's figure, from the event to the
	// group whole again (rebalance.go).
	RebalanceS float64 `json:"rebalance_s,omitempty"`
	// FetchRequests and CPUPerFetchUs: the fetch-session workload's
	// Fetches counted and the server's CPU microseconds per Fetch
	// (fetchsession.go).
	FetchRequests int64   `json:"fetch_requests,omitempty"`
	CPUPerFetchUs float64 `json:"cpu_per_fetch_us,omitempty"`
	// TxnLatency and TxnPerS: the transaction workload's whole
	// transactions (Begin to the commit's answer) and transactions
	// committed per second (txn.go); its Latency is EndTxn's.
	TxnLatency *Percentiles `json:"txn_latency,omitempty"`
	TxnPerS    float64      `json:"transactions_per_s,omitempty"`

	// Steady state: the warm-up's rate (the calibration) and, for paced
	// runs, the offered load.
	CalRecPerS     float64 `json:"calibration_records_per_s,omitempty"`
	OfferedRecPerS float64 `json:"offered_records_per_s,omitempty"`
	OfferedMBPerS  float64 `json:"offered_mb_per_s,omitempty"`

	// The machine during the run (see measured).
	Load1Before  float64 `json:"load1_before"`
	Load1After   float64 `json:"load1_after"`
	ForeignCores float64 `json:"foreign_cores"` // -1: not known
	Flagged      string  `json:"flagged,omitempty"`

	Note    string `json:"note,omitempty"`
	Error   string `json:"error,omitempty"`
	Skipped string `json:"skipped,omitempty"`
}

// ok reports whether the run produced figures.
func (r *Result) ok() bool {
	return r != nil && r.Error == "" && r.Skipped == "" && (r.Records > 0 || r.RebalanceS > 0)
}

// finish fills the derived figures from counts, time and the meter.
func (r *Result) finish(elapsed time.Duration, m *measured) {
	r.Seconds = elapsed.Seconds()
	if r.Seconds > 0 {
		r.RecPerS = float64(r.Records) / r.Seconds
		r.MBPerS = float64(r.Bytes) / 1e6 / r.Seconds
	}
	r.AllocsPerRec, r.IggyBatchMsgs = -1, -1
	r.IggyConns, r.KafkaConns = -1, -1
	if m == nil {
		return
	}
	r.ServerCPUs = m.ServerCPU.Seconds()
	if !m.HasServer {
		r.ServerCPUs = -1 // direct runs: no Kafka-protocol server
	}
	r.IggyCPUs = m.IggyCPU.Seconds()
	r.ClientCPUs = m.ClientCPU.Seconds()
	r.ServerRSSMax = m.ServerRSSMax
	r.IggyRSSMax = m.IggyRSSMax
	r.BudgetBytes = m.BudgetBytes
	r.IggyConns = m.IggyConnsMax
	r.KafkaConns = m.KafkaConnMax
	r.IggyBatchMsgs = m.BatchMsgs
	r.Load1Before, r.Load1After, r.ForeignCores = m.Load1Before, m.Load1After, m.ForeignCores
	if m.Mallocs >= 0 && r.Records > 0 {
		r.AllocsPerRec = m.Mallocs / float64(r.Records)
	}
}

// perGB is CPU seconds per GB (10^9 payload bytes), or -1.
func perGB(cpuSeconds float64, bytes int64) float64 {
	if bytes <= 0 || cpuSeconds < 0 {
		return -1
	}
	return cpuSeconds / (float64(bytes) / 1e9)
}

// newHist is a latency histogram: 1 µs to 60 s, 3 significant digits.
func newHist() *hdr.Histogram { return hdr.New(1, 60_000_000, 3) }

// summarize turns a histogram (µs) into percentiles and a CDF.
func summarize(h *hdr.Histogram) (*Percentiles, []CDFPoint) {
	if h.TotalCount() == 0 {
		return nil, nil
	}
	p := &Percentiles{
		P50:  float64(h.ValueAtQuantile(50)),
		P90:  float64(h.ValueAtQuantile(90)),
		P99:  float64(h.ValueAtQuantile(99)),
		P999: float64(h.ValueAtQuantile(99.9)),
		Max:  float64(h.Max()),
		N:    h.TotalCount(),
	}
	var cdf []CDFPoint
	// Dense near the tail: q = 1 - 10^(-k/20) for k = 0..80 (up to 99.99 %).
	for k := 0; k <= 80; k++ {
		q := 1 - math.Pow(10, -float64(k)/20)
		if k == 0 {
			q = 0.0001
		}
		cdf = append(cdf, CDFPoint{Q: q, US: float64(h.ValueAtQuantile(q * 100))})
	}
	cdf = append(cdf, CDFPoint{Q: 1, US: float64(h.Max())})
	return p, cdf
}
