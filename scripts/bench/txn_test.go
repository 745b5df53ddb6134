package main

import (
	"fmt"
	"strings"
	"testing"
)

// The transaction section renders from results alone: EndTxn percentiles
// with the sidecar ÷ Kafka ratio, throughput ÷ idempotent, and a failed run
// shown with its reason, not as a figure.
func TestTxnSection(t *testing.T) {
	b := &bench{plan: fullPlan()}
	lat := func(v, tg string, pass int, p50, p99 float64) *Result {
		return &Result{Workload: wTxn, Variant: v, Target: tg, Pass: pass, Records: 100, Bytes: 102400, Seconds: 1,
			Latency: &Percentiles{P50: p50, P99: p99}, TxnLatency: &Percentiles{P50: 2 * p50, P99: 2 * p99}, TxnPerS: 500}
	}
	thr := func(v, tg string, pass int, recs float64) *Result {
		return &Result{Workload: wTxn, Variant: v, Target: tg, Pass: pass, Records: int64(recs), Bytes: int64(recs) * 1024, Seconds: 1,
			RecPerS: recs, MBPerS: recs * 1024 / 1e6, ServerCPUs: 1, IggyCPUs: 1, TxnPerS: 10, Latency: &Percentiles{P50: 800, P99: 5000}}
	}
	b.results = []*Result{
		lat(txnEnd1, tSidecar, 1, 400, 4000), lat(txnEnd1, tSidecar, 2, 600, 6000),
		lat(txnEnd1, tKafka, 1, 1000, 9000), lat(txnEnd1, tKafka, 2, 1000, 11000),
		lat(txnEnd4, tSidecar, 1, 700, 3000),
		{Workload: wTxn, Variant: txnEnd4, Target: tKafka, Pass: 1, Error: "commit: boom"},
		thr(txnIdem, tSidecar, 1, 200_000), thr(txnEvery100, tSidecar, 1, 100_000), thr(txnEvery1k, tSidecar, 1, 50_000),
		thr(txnIdem, tKafka, 1, 100_000), thr(txnEvery100, tKafka, 1, 100_000), thr(txnEvery1k, tKafka, 1, 25_000),
		lat(txnEnd1+txnV2, tKafka, 1, 300, 3000), thr(txnEvery1k+txnV2, tKafka, 1, 80_000),
	}
	var w strings.Builder
	b.writeTxn(func(f string, a ...any) { w.WriteString(fmt.Sprintf(f, a...)) })
	md := w.String()
	for _, want := range []string{
		"## The cost of a transaction",
		"| 10 records, 1 partition | sidecar → embedded Iggy | 500 µs ±20% | 5.00 ms ±20% | 1.00 ms ±20% | 10.00 ms ±20% | 500 ±0% | 0.50× |",
		"| 10 records, 4 partitions | Apache Kafka (KRaft) | FAILED: commit: boom |",
		"| txn every 100 ms | sidecar → embedded Iggy | 100000 | 102.4 | 0.50× | 1.00× |",
		"| txn every 1000 records | sidecar → embedded Iggy | 50000 | 51.2 | 0.25× | 2.00× |",
		"| 10 records, 1 partition | Apache Kafka (KRaft), protocol v2 | 300 µs | 3.00 ms |",
		"| txn every 1000 records | Apache Kafka (KRaft), protocol v2 | 80000 | 81.9 | 0.80× | – |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("section lacks %q:\n%s", want, md)
		}
	}
	// No protocol v2 row where Kafka has no such run: the idempotent
	// producer, the 4-partition EndTxn and every-100-ms here.
	for _, no := range []string{"| idempotent | Apache Kafka (KRaft), protocol v2", "4 partitions | Apache Kafka (KRaft), protocol v2", "every 100 ms | Apache Kafka (KRaft), protocol v2"} {
		if strings.Contains(md, no) {
			t.Errorf("section has %q", no)
		}
	}
}
