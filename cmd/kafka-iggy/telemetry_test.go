package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafka-iggy/kafka-iggy/embedded/embedtest"
)

// javaLib is the kafka-clients classpath scripts/install-test-deps.sh
// installs; the test skips without it (fails in CI).
func javaLib(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("KAFKA_IGGY_JAVA_DIR")
	if dir == "" {
		home, _ := os.UserHomeDir()
		dir = filepath.Join(home, ".cache", "kafka-iggy", "java")
	}
	lib := filepath.Join(dir, "lib")
	_, jerr := exec.LookPath("java")
	if m, _ := filepath.Glob(filepath.Join(lib, "kafka-clients-*.jar")); len(m) == 0 || jerr != nil {
		msg := "java or kafka-clients in " + lib + " missing; run scripts/install-test-deps.sh"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return lib
}

// advertises reports whether the sidecar at addr lists key in ApiVersions.
func advertises(t *testing.T, addr string, key int16) bool {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range resp.ApiKeys {
		if k.ApiKey == key {
			return true
		}
	}
	return false
}

// TestJavaProducerTelemetry: a Java producer (kafka-clients 4.x, metrics
// push on by default) produces through a sidecar with telemetry enabled;
// the sidecar's /metrics shows the producer's own metrics labelled with its
// client_id and client instance id. With telemetry off (the default) the
// two APIs are not advertised and no client series is exported.
func TestJavaProducerTelemetry(t *testing.T) {
	if testing.Short() {
		t.Skip("starts sidecar processes and a JVM")
	}
	lib := javaLib(t)

	off := startSidecarProc(t, t.TempDir(), time.Second)
	defer func() { _ = off.cmd.Process.Signal(syscall.SIGTERM); <-off.done }()
	if advertises(t, off.kafka, 71) || advertises(t, off.kafka, 72) {
		t.Error("telemetry off: GetTelemetrySubscriptions or PushTelemetry advertised")
	}
	if fams := embedtest.Scrape(t, "http://"+off.admin+"/metrics"); fams.Value("kafka_iggy_telemetry_clients") != 0 {
		t.Error("telemetry off: telemetry series exported")
	}

	p := startServeProc(t,
		"KAFKA_IGGY_EMBEDDED__LISTEN=127.0.0.1:0",
		"KAFKA_IGGY_EMBEDDED__DATA_DIR="+t.TempDir(),
		"KAFKA_IGGY_TELEMETRY__ENABLED=true",
		"KAFKA_IGGY_TELEMETRY__PUSH_INTERVAL=1s",
	)
	defer func() { _ = p.cmd.Process.Signal(syscall.SIGTERM); <-p.done }()
	if !advertises(t, p.kafka, 71) || !advertises(t, p.kafka, 72) {
		t.Fatal("telemetry on: the APIs are not advertised")
	}

	const clientID = "telemetry-app"
	java := exec.Command("java", "-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-cp", filepath.Join(lib, "*"), filepath.Join("testdata", "TelemetryProducer.java"), p.kafka, "telemetered", clientID)
	stdin, err := java.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := java.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	java.Stderr = &stderr
	java.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := java.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	lines := make(chan string, 4)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		exited <- java.Wait()
	}()
	defer func() { _ = syscall.Kill(-java.Process.Pid, syscall.SIGKILL) }()
	select {
	case l := <-lines:
		if l != "produced" {
			t.Fatalf("java printed %q\n%s", l, stderr.String())
		}
	case <-time.After(120 * time.Second):
		t.Fatalf("the Java producer did not produce within 120 s\n%s", stderr.String())
	}

	metrics := "http://" + p.admin + "/metrics"
	const series = "org_apache_kafka_producer_record_send_total"
	var fams embedtest.Families
	embedtest.WaitFor(t, 60*time.Second, "the producer's pushed metrics on /metrics, pushed twice", func() bool {
		fams = embedtest.Scrape(t, metrics)
		return fams.Value(series, "client_id", clientID) >= 20 &&
			fams.Value("kafka_iggy_requests_total", "api", "PushTelemetry") >= 2
	})
	if n := fams.Value("kafka_iggy_telemetry_clients"); n != 1 {
		t.Errorf("kafka_iggy_telemetry_clients = %v, want 1", n)
	}
	body := scrapeText(t, metrics)
	if !strings.Contains(body, `client_instance_id="`) {
		t.Errorf("no client_instance_id label on the client series")
	}
	var client []string
	for _, l := range strings.Split(body, "\n") {
		if strings.Contains(l, `client_id="`+clientID+`"`) {
			client = append(client, l)
		}
	}
	t.Logf("%d series of the client exported; %s", len(client), strings.Join(client[:min(3, len(client))], "; "))
	if strings.Contains(body, "org_apache_kafka_consumer_") {
		t.Errorf("consumer series from a producer-only client")
	}
	for _, api := range []string{"GetTelemetrySubscriptions", "PushTelemetry"} {
		if errs := fams.Value("kafka_iggy_errors_total", "api", api); errs != 0 {
			t.Errorf("%v error codes answered to %s", errs, api)
		}
	}

	// The producer closes cleanly.
	_ = stdin.Close()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("java: %v\n%s", err, stderr.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("the Java producer did not close within 60 s\n%s", stderr.String())
	}
}

// scrapeText returns the /metrics body.
func scrapeText(t *testing.T, url string) string {
	t.Helper()
	r, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	b, err := io.ReadAll(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestJavaProducerTelemetrySubscription: a client metrics subscription made
// as kafka-client-metrics.sh makes it (IncrementalAlterConfigs on a
// CLIENT_METRICS resource) decides what a Java producer is asked to push:
// its metrics matching the subscription's prefix are exported, none of its
// other metrics are.
func TestJavaProducerTelemetrySubscription(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a sidecar process and a JVM")
	}
	lib := javaLib(t)
	p := startServeProc(t,
		"KAFKA_IGGY_EMBEDDED__LISTEN=127.0.0.1:0",
		"KAFKA_IGGY_EMBEDDED__DATA_DIR="+t.TempDir(),
		"KAFKA_IGGY_TELEMETRY__ENABLED=true",
	)
	defer func() { _ = p.cmd.Process.Signal(syscall.SIGTERM); <-p.done }()
	const clientID = "subscribed-app"
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.kafka))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeClientMetrics, "record-sends"
	for _, kv := range [][2]string{{"metrics", "org.apache.kafka.producer.record.send"}, {"interval.ms", "1000"}, {"match", "client_id=" + clientID}} {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value = kv[0], kmsg.StringPtr(kv[1])
		rr.Configs = append(rr.Configs, c)
	}
	req.Resources = append(req.Resources, rr)
	if resp, err := req.RequestWith(ctx, cl); err != nil || resp.Resources[0].ErrorCode != 0 {
		t.Fatalf("creating the subscription: %v %+v", err, resp)
	}

	java := exec.Command("java", "-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-cp", filepath.Join(lib, "*"), filepath.Join("testdata", "TelemetryProducer.java"), p.kafka, "telemetered", clientID)
	stdin, err := java.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	var stderr strings.Builder
	java.Stderr = &stderr
	java.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := java.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = syscall.Kill(-java.Process.Pid, syscall.SIGKILL); _ = java.Wait() }()

	metrics := "http://" + p.admin + "/metrics"
	embedtest.WaitFor(t, 90*time.Second, "the subscribed metric on /metrics, pushed twice", func() bool {
		fams := embedtest.Scrape(t, metrics)
		return fams.Value("org_apache_kafka_producer_record_send_total", "client_id", clientID) >= 20 &&
			fams.Value("kafka_iggy_requests_total", "api", "PushTelemetry") >= 2
	})
	var other []string
	for _, l := range strings.Split(scrapeText(t, metrics), "\n") {
		if strings.Contains(l, `client_id="`+clientID+`"`) && !strings.HasPrefix(l, "org_apache_kafka_producer_record_send") {
			other = append(other, l)
		}
	}
	if len(other) > 0 {
		t.Errorf("%d series outside the subscription exported, e.g. %s\n%s", len(other), other[0], stderr.String())
	}
}
