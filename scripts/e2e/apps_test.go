package e2e

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
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
	a := &javaApp{done: make(chan struct{})}
	a.cmd = exec.Command("java", args...)
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
