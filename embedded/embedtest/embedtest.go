// Package embedtest is the shared kit of the repository's tests: it starts
// the embedded Iggy server (the Iggy of every test), waits for a condition
// a test observes, and scrapes a Prometheus /metrics page.
//
// It lives beside embedded, as net/http/httptest lives beside net/http:
// bridge/, proxy/ and cmd/ tests all import it, so it cannot be an internal
// package of one of them, and the repository's top level is fixed. Only
// test files import it; the sidecar binary does not.
package embedtest

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/rs/zerolog"

	"github.com/kafka-iggy/kafka-iggy/embedded"
)

// Start starts the embedded Iggy server on listen ("127.0.0.1:0" for a
// free port) with the default configuration changed by mutate (nil: none),
// logging nowhere, and closes it when the test ends (Close is idempotent,
// so a test may close it earlier, for instance to restart it on the same
// address).
func Start(tb testing.TB, listen string, mutate func(*embedded.Config)) *embedded.Server {
	tb.Helper()
	cfg := embedded.DefaultConfig()
	cfg.Listen = listen
	if mutate != nil {
		mutate(&cfg)
	}
	return StartWith(tb, cfg, zerolog.New(io.Discard))
}

// StartWith starts the embedded server with cfg and log, closed when the
// test ends.
func StartWith(tb testing.TB, cfg embedded.Config, log zerolog.Logger) *embedded.Server {
	tb.Helper()
	srv, err := embedded.New(cfg, log)
	if err != nil {
		tb.Fatal(err)
	}
	// Start's context is the server's lifetime: it serves until Close.
	if err := srv.Start(context.Background()); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = srv.Close() })
	return srv
}

// WaitFor polls cond until it holds, failing the test after timeout. It
// observes a condition the code under test changes asynchronously; it is
// not a sleep standing in for synchronisation.
func WaitFor(tb testing.TB, timeout time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(time.Millisecond)
	}
}

// Families is a parsed /metrics page, by metric name.
type Families map[string]*dto.MetricFamily

// Scrape fetches url (an admin listener's /metrics) and parses the text
// exposition; a failed request or a page that does not parse fails the
// test.
func Scrape(tb testing.TB, url string) Families {
	tb.Helper()
	resp, err := http.Get(url)
	if err != nil {
		tb.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatalf("GET %s: %v", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		tb.Fatalf("GET %s: %d %s", url, resp.StatusCode, body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		tb.Fatalf("%s does not parse: %v\n%s", url, err, body)
	}
	return fams
}

// Value sums the samples of name whose labels include every pair of labels
// (name1, value1, name2, value2, ...): counters, gauges and untyped samples
// by value, histograms by sample count. A missing series is 0.
func (f Families) Value(name string, labels ...string) float64 {
	fam, ok := f[name]
	if !ok {
		return 0
	}
	var sum float64
	for _, m := range fam.GetMetric() {
		if !hasLabels(m, labels) {
			continue
		}
		switch {
		case m.Counter != nil:
			sum += m.Counter.GetValue()
		case m.Gauge != nil:
			sum += m.Gauge.GetValue()
		case m.Histogram != nil:
			sum += float64(m.Histogram.GetSampleCount())
		case m.Untyped != nil:
			sum += m.Untyped.GetValue()
		}
	}
	return sum
}

// hasLabels reports whether m carries every name/value pair of labels.
func hasLabels(m *dto.Metric, labels []string) bool {
	for i := 0; i+1 < len(labels); i += 2 {
		found := false
		for _, lp := range m.GetLabel() {
			if lp.GetName() == labels[i] && lp.GetValue() == labels[i+1] {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}
