package e2e

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Kafka apps (scripts/e2e/apps) run unchanged against each real target:
// Kafka Streams first. Their jars come from Maven Central through
// scripts/kafka/install.sh (KafkaCacheDir(v)/apps, apps-classes).

// appsReady checks the compiled apps of Kafka version v.
func appsReady(t *testing.T, v string) string {
	t.Helper()
	lookTool(t, "java")
	dir := KafkaCacheDir(v)
	if _, err := os.Stat(filepath.Join(dir, "apps-classes", "StreamsWordCount.class")); err != nil {
		missingDependency(t, "the Kafka apps are not installed in %s (scripts/kafka/install.sh)", dir)
	}
	return dir
}

// appTargets are the targets the apps run against: the real brokers (a
// Kafka broker, the sidecar); kfake is left out (a JVM app per target costs
// a minute or more, and kfake is no reference for apps).
func appTargets(t *testing.T) []Target {
	var out []Target
	for _, tg := range targets(t) {
		if !tg.Reference {
			out = append(out, tg)
		}
	}
	return out
}

// javaApp is one JVM app process, its output kept for failure messages.
type javaApp struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	out  bytes.Buffer
	done chan struct{}
}

func (a *javaApp) Write(p []byte) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.out.Write(p)
}

func (a *javaApp) output() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return tail(a.out.String(), 40)
}

// startJavaApp starts java with args in a process group of its own; the
// test's cleanup kills what is still running.
func startJavaApp(t *testing.T, args ...string) *javaApp {
	t.Helper()
	return startApp(t, "java", args...)
}

// startApp starts the program name with args like startJavaApp.
func startApp(t *testing.T, name string, args ...string) *javaApp {
	t.Helper()
	a := &javaApp{done: make(chan struct{})}
	a.cmd = exec.Command(name, args...)
	a.cmd.Stdout, a.cmd.Stderr = a, a
	a.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := a.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = a.cmd.Wait(); close(a.done) }()
	t.Cleanup(func() {
		select {
		case <-a.done:
		default:
			_ = syscall.Kill(-a.cmd.Process.Pid, syscall.SIGKILL)
			<-a.done
		}
	})
	return a
}

// stop sends SIGTERM and waits up to 60 s for a clean exit.
func (a *javaApp) stop(t *testing.T) {
	t.Helper()
	_ = syscall.Kill(-a.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-a.done:
	case <-time.After(60 * time.Second):
		t.Fatalf("the app did not stop within 60 s after SIGTERM:\n%s", a.output())
	}
}

// streamsArgs are the JVM arguments of the Streams word count.
func streamsArgs(dir string, args ...string) []string {
	root, _ := repoRoot()
	cp := strings.Join([]string{filepath.Join(dir, "apps-classes"), filepath.Join(dir, "apps", "*")}, string(os.PathListSeparator))
	out := []string{"-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-Dlog4j2.configurationFile=" + filepath.Join(root, "scripts", "kafka", "log4j2.properties"),
		"-cp", cp, "StreamsWordCount"}
	return append(out, args...)
}

// wordLines are n input lines; counts adds their word counts to want.
func wordLines(phase, n int, want map[string]int64) []string {
	words := []string{"iggy", "kafka", "stream", "sidecar", "log", "offset", "topic", "record"}
	var out []string
	for i := 0; i < n; i++ {
		var l []string
		for j := 0; j <= i%5; j++ {
			w := words[(i*3+j*5+phase)%len(words)]
			if j == 0 {
				w = strings.ToUpper(w[:1]) + w[1:] // lower-cased by the app
			}
			l = append(l, w)
			want[strings.ToLower(w)]++
		}
		out = append(out, strings.Join(l, ", "))
	}
	return out
}

// awaitCounts reads topic (word -> 8-byte count) from the start until the
// latest count of every word equals want, or fails after d.
func awaitCounts(t *testing.T, tg Target, topic string, want map[string]int64, d time.Duration, app *javaApp) time.Duration {
	t.Helper()
	start := time.Now()
	cl := newKgo(t, tg, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	got := map[string]int64{}
	equal := func() bool {
		if len(got) != len(want) {
			return false
		}
		for k, v := range want {
			if got[k] != v {
				return false
			}
		}
		return true
	}
	for !equal() {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%s: counts in %s after %v: %v, want %v\napp output:\n%s", tg.Name, topic, d, got, want, app.output())
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Logf("%s: fetch %s: %v", tg.Name, topic, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if len(r.Value) == 8 {
				got[string(r.Key)] = int64(binary.BigEndian.Uint64(r.Value))
			}
		})
	}
	return time.Since(start)
}

// TestKafkaStreams: a stateful Kafka Streams 4.x word count (repartition,
// state store, changelog; stock settings, at_least_once) starts on each
// target with the internal topics Streams creates itself, produces correct
// counts, restores its state from the changelog after its state dir is
// deleted, and its repartition topic's start offsets advance (Streams'
// purge through DeleteRecords).
func TestKafkaStreams(t *testing.T) {
	dir := appsReady(t, kafka4Version())
	for _, tg := range appTargets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			app := uniqueTopic("wordcount")
			in, out := app+"-in", app+"-out"
			createTopic(t, tg, in, 3)
			createTopic(t, tg, out, 3)
			state := t.TempDir()
			p := newKgo(t, tg)
			ctx := testCtx(t, 6*time.Minute)
			want := map[string]int64{}
			produce := func(lines []string) {
				var rs []*kgo.Record
				for i, l := range lines {
					rs = append(rs, &kgo.Record{Topic: in, Key: []byte(fmt.Sprint(i)), Value: []byte(l)})
				}
				if err := p.ProduceSync(ctx, rs...).FirstErr(); err != nil {
					t.Fatal(err)
				}
			}

			produce(wordLines(1, 300, want))
			s := startJavaApp(t, streamsArgs(dir, tg.Bootstrap, app, state, in, out)...)
			took := awaitCounts(t, tg, out, want, 3*time.Minute, s)
			t.Logf("%s: first counts after %v", tg.Name, took.Round(time.Second))

			// The internal topics as Streams created them.
			adm := kadm.NewClient(newKgo(t, tg))
			changelog, repartition := app+"-counts-changelog", app+"-counts-repartition"
			rcs, err := adm.DescribeTopicConfigs(ctx, changelog)
			if err != nil || len(rcs) != 1 || rcs[0].Err != nil {
				t.Fatalf("describe %s: %v %+v", changelog, err, rcs)
			}
			for _, c := range rcs[0].Configs {
				if c.Key == "cleanup.policy" && c.MaybeValue() != "compact" {
					t.Errorf("%s: %s cleanup.policy %q, want compact", tg.Name, changelog, c.MaybeValue())
				}
			}

			// Streams purges consumed repartition records (DeleteRecords
			// every repartition.purge.interval.ms, 30 s, on commit).
			var starts []int64
			deadline := time.Now().Add(2 * time.Minute)
			for {
				so, err := adm.ListStartOffsets(ctx, repartition)
				if err != nil {
					t.Fatal(err)
				}
				starts = starts[:0]
				var sum int64
				so.Each(func(o kadm.ListedOffset) { starts = append(starts, o.Offset); sum += o.Offset })
				if sum > 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s: %s start offsets still %v after 2 min\napp output:\n%s", tg.Name, repartition, starts, s.output())
				}
				select {
				case <-ctx.Done():
					t.Fatal(ctx.Err())
				case <-time.After(2 * time.Second): // polling a broker-side effect on its own schedule
				}
			}
			t.Logf("%s: %s start offsets %v", tg.Name, repartition, starts)

			// Restore: stop, delete the state dir, add input, start again.
			s.stop(t)
			if err := os.RemoveAll(state); err != nil {
				t.Fatal(err)
			}
			produce(wordLines(2, 200, want))
			s = startJavaApp(t, streamsArgs(dir, tg.Bootstrap, app, state, in, out)...)
			took = awaitCounts(t, tg, out, want, 3*time.Minute, s)
			t.Logf("%s: counts after the restore from the changelog in %v", tg.Name, took.Round(time.Second))
			s.stop(t)
		})
	}
}

// freePort is a loopback TCP port free at the time of the call.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// connectArgs are the JVM arguments of a Connect distributed worker
// (dir/libs: connect-runtime, connect-file) with worker properties props.
func connectArgs(dir, props string) []string {
	root, _ := repoRoot()
	return []string{"-Xmx384m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-Dlog4j2.configurationFile=" + filepath.Join(root, "scripts", "kafka", "log4j2.properties"),
		"-cp", filepath.Join(dir, "libs", "*"), "org.apache.kafka.connect.cli.ConnectDistributed", props}
}

// connectREST sends one REST call to a worker and returns the status and body.
func connectREST(ctx context.Context, method, url, body string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), nil
}

// waitFileLines waits until path holds want (line by line), or fails after d.
func waitFileLines(t *testing.T, who, path string, want []string, d time.Duration, app *javaApp) {
	t.Helper()
	deadline := time.Now().Add(d)
	var got []string
	for {
		b, _ := os.ReadFile(path)
		got = strings.Split(strings.TrimRight(string(b), "\n"), "\n")
		if len(b) == 0 {
			got = nil
		}
		if len(got) >= len(want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s has %d lines after %v, want %d\nworker output:\n%s", who, path, len(got), d, len(want), app.output())
		}
		time.Sleep(500 * time.Millisecond) // the sink writes the file on its own schedule
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("%s: %s holds %d lines, want exactly %d in order (first %q, last %q)", who, path, len(got), len(want), got[0], got[len(got)-1])
	}
}

// TestKafkaConnect: a Kafka Connect distributed worker (connect-runtime and
// the FileStream connectors from Maven Central, apps/connect-pom.xml) starts on each
// target with its config, offsets and status topics created by itself
// (compact), a FileStream source and sink move a file through a topic, and
// after a worker restart the connectors resume from their stored offsets:
// the lines added meanwhile arrive once, nothing is read twice.
func TestKafkaConnect(t *testing.T) {
	lookTool(t, "java")
	base := filepath.Dir(KafkaCacheDir("x"))
	jars, _ := filepath.Glob(filepath.Join(base, "connect-*", "libs", "connect-file-*.jar"))
	if len(jars) != 1 {
		missingDependency(t, "Kafka Connect is not installed in %s/connect-VERSION (scripts/kafka/install.sh)", base)
	}
	dir := filepath.Dir(filepath.Dir(jars[0]))
	t.Logf("Kafka Connect from %s", dir)
	for _, tg := range appTargets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			group := uniqueTopic("connect")
			topic := group + "-lines"
			work := t.TempDir()
			in, out := filepath.Join(work, "in.txt"), filepath.Join(work, "out.txt")
			var lines []string
			for i := 1; i <= 100; i++ {
				lines = append(lines, fmt.Sprintf("line %03d through %s", i, tg.Name))
			}
			if err := os.WriteFile(in, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			port := freePort(t)
			props := filepath.Join(work, "worker.properties")
			// The settings of Kafka's config/connect-distributed.properties
			// for a one-broker cluster (replication factor 1).
			cfg := strings.Join([]string{
				"bootstrap.servers=" + tg.Bootstrap,
				"group.id=" + group,
				"key.converter=org.apache.kafka.connect.json.JsonConverter",
				"value.converter=org.apache.kafka.connect.json.JsonConverter",
				"offset.storage.topic=" + group + "-offsets",
				"config.storage.topic=" + group + "-configs",
				"status.storage.topic=" + group + "-status",
				"offset.storage.replication.factor=1",
				"config.storage.replication.factor=1",
				"status.storage.replication.factor=1",
				fmt.Sprintf("listeners=http://127.0.0.1:%d", port),
			}, "\n") + "\n"
			if err := os.WriteFile(props, []byte(cfg), 0o644); err != nil {
				t.Fatal(err)
			}
			base := fmt.Sprintf("http://127.0.0.1:%d", port)
			ctx := testCtx(t, 8*time.Minute)

			w := startJavaApp(t, connectArgs(dir, props)...)
			start := time.Now()
			for _, c := range []string{
				`{"name":"file-source","config":{"connector.class":"org.apache.kafka.connect.file.FileStreamSourceConnector","tasks.max":"1","file":"` + in + `","topic":"` + topic + `"}}`,
				`{"name":"file-sink","config":{"connector.class":"org.apache.kafka.connect.file.FileStreamSinkConnector","tasks.max":"1","file":"` + out + `","topics":"` + topic + `"}}`,
			} {
				for {
					code, body, err := connectREST(ctx, "POST", base+"/connectors", c)
					if err == nil && code == http.StatusCreated {
						break
					}
					if ctx.Err() != nil || time.Since(start) > 3*time.Minute {
						t.Fatalf("%s: creating a connector: %d %s %v\nworker output:\n%s", tg.Name, code, tail(body, 5), err, w.output())
					}
					time.Sleep(time.Second) // the worker's REST server and group join come up on their own
				}
			}
			waitFileLines(t, tg.Name, out, lines, 3*time.Minute, w)
			t.Logf("%s: the file went through %s in %v (worker start included)", tg.Name, topic, time.Since(start).Round(time.Second))

			// The worker topics as Connect created them.
			adm := kadm.NewClient(newKgo(t, tg))
			rcs, err := adm.DescribeTopicConfigs(ctx, group+"-offsets", group+"-configs", group+"-status")
			if err != nil {
				t.Fatal(err)
			}
			for _, rc := range rcs {
				for _, c := range rc.Configs {
					if c.Key == "cleanup.policy" && c.MaybeValue() != "compact" {
						t.Errorf("%s: %s cleanup.policy %q", tg.Name, rc.Name, c.MaybeValue())
					}
				}
			}

			// Restart: the lines added while the worker is down arrive once.
			w.stop(t)
			f, err := os.OpenFile(in, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			for i := 101; i <= 150; i++ {
				l := fmt.Sprintf("line %03d through %s", i, tg.Name)
				lines = append(lines, l)
				fmt.Fprintln(f, l)
			}
			_ = f.Close()
			start = time.Now()
			w = startJavaApp(t, connectArgs(dir, props)...)
			waitFileLines(t, tg.Name+" after the restart", out, lines, 3*time.Minute, w)
			t.Logf("%s: resumed after the restart in %v", tg.Name, time.Since(start).Round(time.Second))
			w.stop(t)
		})
	}
}
