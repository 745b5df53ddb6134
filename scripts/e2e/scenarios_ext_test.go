package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// Scenarios of the clients that run as programs of their own: Java
// (javacompat/KafkaScenarios.java, compiled against kafka-clients 4.x and
// 3.9.x by scripts/kafka/install.sh), Python (python/kafka_compat.py in the
// venv of the same script) and kcat.

// extOutput is one line a scenario program prints.
type extOutput struct {
	Event  string          `json:"event"`
	A      []int32         `json:"a"`
	B      []int32         `json:"b"`
	Result json.RawMessage `json:"result"`
	Error  string          `json:"error"`
}

// runExtScenario runs a scenario program: params as one JSON line on stdin,
// JSON lines back. On a "rebalanced" event it calls onEvent, then writes a
// line to the program's stdin so that it goes on. It decodes the result into
// out and fails the test, with the program's stderr, on any error.
func runExtScenario(t *testing.T, who string, d time.Duration, params any, onEvent func(a, b []int32), out any, name string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: start %s: %v", who, name, err)
	}
	p, _ := json.Marshal(params)
	_, _ = stdin.Write(append(p, '\n'))
	var res *extOutput
	var lines []string
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		var o extOutput
		if json.Unmarshal(sc.Bytes(), &o) != nil {
			continue
		}
		switch {
		case o.Event == "rebalanced":
			if onEvent != nil {
				onEvent(o.A, o.B)
			}
			_, _ = stdin.Write([]byte("go on\n"))
		case o.Result != nil || o.Error != "":
			res = &o
		}
	}
	_ = stdin.Close()
	werr := cmd.Wait()
	logTail := tail(stderr.String(), 60)
	switch {
	case ctx.Err() != nil:
		t.Fatalf("%s: %s still running after %v\nstdout:\n%s\nstderr (last lines):\n%s", who, name, d, strings.Join(lines, "\n"), logTail)
	case res == nil:
		t.Fatalf("%s: %s printed no result (%v)\nstdout:\n%s\nstderr (last lines):\n%s", who, name, werr, strings.Join(lines, "\n"), logTail)
	case res.Error != "":
		t.Fatalf("%s: %s\nstderr (last lines):\n%s", who, res.Error, logTail)
	}
	if err := json.Unmarshal(res.Result, out); err != nil {
		t.Fatalf("%s: result %s: %v", who, res.Result, err)
	}
	if testing.Verbose() {
		t.Logf("%s: result %s", who, res.Result)
	}
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{fmt.Sprintf("... (%d lines before)", len(lines)-n)}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}

// ---------------------------------------------------------------------------
// Java

// javaClientArgs returns the JVM arguments that run main from the programs
// compiled against Kafka version's kafka-clients.
func javaClientArgs(version, main string, args ...string) []string {
	dir := KafkaCacheDir(version)
	root, _ := repoRoot()
	cp := strings.Join([]string{filepath.Join(dir, "classes"), filepath.Join(dir, "libs", "*"), filepath.Join(dir, "extra", "*")}, string(os.PathListSeparator))
	out := []string{"-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-Dkafka.iggy.loglevel=WARN",
		"-Dlog4j2.configurationFile=" + filepath.Join(root, "scripts", "kafka", "log4j2.properties"),
		"-Dlog4j.configuration=file:" + filepath.Join(root, "scripts", "kafka", "log4j.properties"),
		"-cp", cp, main}
	return append(out, args...)
}

func javaClientReady(version string) func(t *testing.T) {
	return func(t *testing.T) {
		t.Helper()
		lookTool(t, "java")
		loadVersions()
		if versionsErr != nil {
			t.Fatalf("Kafka versions: %v", versionsErr)
		}
		if _, err := os.Stat(filepath.Join(KafkaCacheDir(version), "classes", "KafkaScenarios.class")); err != nil {
			missingDependency(t, "the Java programs are not compiled against kafka-clients %s in %s (scripts/kafka/install.sh)", version, KafkaCacheDir(version))
		}
	}
}

func javaScenarioClient(name, version string) scenarioClient {
	run := func(t *testing.T, tg Target, scenario string, p scenarioParams, onEvent func(a, b []int32), out any) {
		t.Helper()
		runExtScenario(t, fmt.Sprintf("%s %s on %s", name, scenario, tg.Name), 120*time.Second, p, onEvent, out,
			"java", javaClientArgs(version, "KafkaScenarios", scenario, tg.Bootstrap)...)
	}
	return scenarioClient{
		name:  name,
		ready: javaClientReady(version),
		group: func(t *testing.T, tg Target, p scenarioParams, rebalanced func(a, b []int32)) (o groupObs) {
			run(t, tg, "group", p, rebalanced, &o)
			return o
		},
		commit: func(t *testing.T, tg Target, p scenarioParams) (o commitObs) {
			run(t, tg, "commit", p, nil, &o)
			return o
		},
		seek: func(t *testing.T, tg Target, p scenarioParams) (o seekObs) {
			run(t, tg, "seek", p, nil, &o)
			return o
		},
		idempotent: func(t *testing.T, tg Target, p scenarioParams) (o idemObs) {
			run(t, tg, "idempotent", p, nil, &o)
			return o
		},
		admin: func(t *testing.T, tg Target, p scenarioParams) (o adminObs) {
			run(t, tg, "admin", p, nil, &o)
			return o
		},
	}
}

// TestJava39RoundTrip: the round trip of java_test.go (every codec, every
// canonical case, unadapted) with kafka-clients 3.9.x.
func TestJava39RoundTrip(t *testing.T) {
	version := kafka3Version()
	runRoundTrips(t, roundTripClient{
		name:    "java-" + version,
		ready:   javaClientReady(version),
		records: canonicalRecords,
		runAll: func(t *testing.T, tg Target, topics map[string]string, recs []Rec) map[string]codecRun {
			return jsonRunAll(t, tg, topics, recs, "java", javaClientArgs(version, "KafkaRoundTrip", tg.Bootstrap, strconv.Itoa(canonicalPartitions))...)
		},
	})
}

// jsonRunAll runs a round-trip program that speaks KafkaRoundTrip's JSON
// ({"jobs":[...]} in, {"results":[...]} out; see java/KafkaRoundTrip.java).
func jsonRunAll(t *testing.T, tg Target, topics map[string]string, recs []Rec, name string, args ...string) map[string]codecRun {
	t.Helper()
	var in struct {
		Partitions int       `json:"partitions"`
		Jobs       []javaJob `json:"jobs"`
	}
	in.Partitions = canonicalPartitions
	for _, codec := range codecs {
		job := javaJob{Topic: topics[codec], Codec: codec}
		for _, r := range recs {
			j := javaRecord{Partition: r.Partition, Timestamp: r.Timestamp, Key: b64(r.Key), Value: b64(r.Value), Headers: []javaHeader{}}
			for _, h := range r.Headers {
				j.Headers = append(j.Headers, javaHeader{h.Key, b64(h.Value)})
			}
			job.Records = append(job.Records, j)
		}
		in.Jobs = append(in.Jobs, job)
	}
	stdin, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	stdout, stderr, err := runTool(t, 180*time.Second, append(stdin, '\n'), name, args...)
	if err != nil {
		t.Fatalf("%s: %s: %v\nstderr (last lines):\n%s", tg.Name, name, err, tail(string(stderr), 60))
	}
	var out struct {
		Results []javaResult `json:"results"`
	}
	if err := json.Unmarshal(stdout, &out); err != nil {
		t.Fatalf("%s: %s output: %v\nstdout:\n%s\nstderr (last lines):\n%s", tg.Name, name, err, stdout, tail(string(stderr), 60))
	}
	runs := map[string]codecRun{}
	for _, res := range out.Results {
		var run codecRun
		switch {
		case res.Error != "":
			run.err = fmt.Errorf("%s: %s\nstderr (last lines):\n%s", name, res.Error, tail(string(stderr), 40))
		case len(res.Produced) != len(recs):
			run.err = fmt.Errorf("%s reported %d produced records, sent %d", name, len(res.Produced), len(recs))
		default:
			run.produced = cloneRecs(recs)
			var errs []string
			for i, p := range res.Produced {
				run.produced[i].Partition = p.Partition
				run.produced[i].Offset = p.Offset
				if p.Timestamp != recs[i].Timestamp {
					errs = append(errs, fmt.Sprintf("producer reported timestamp %s for record %d [%s], want the CreateTime %s",
						fmtTime(p.Timestamp), i, recs[i].Label, fmtTime(recs[i].Timestamp)))
				}
			}
			for _, j := range res.Consumed {
				if j.TimestampType != "CreateTime" {
					errs = append(errs, fmt.Sprintf("read p%d@%d with timestamp type %q, want CreateTime", j.Partition, j.Offset, j.TimestampType))
				}
				r, err := j.rec()
				if err != nil {
					errs = append(errs, err.Error())
				}
				run.consumed = append(run.consumed, r)
			}
			if len(errs) > 0 {
				run.err = fmt.Errorf("%s", strings.Join(errs, "\n"))
			}
		}
		runs[res.Codec] = run
	}
	return runs
}

// ---------------------------------------------------------------------------
// Python

func pythonVenv() string {
	base := os.Getenv("KAFKA_IGGY_CACHE")
	if base == "" {
		home, _ := os.UserHomeDir()
		base = filepath.Join(home, ".cache", "kafka-iggy")
	}
	return filepath.Join(base, "venv")
}

func pythonReady(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(pythonVenv(), "stamp")); err != nil {
		missingDependency(t, "the Python venv with confluent-kafka and kafka-python is missing in %s (scripts/kafka/install.sh)", pythonVenv())
	}
}

func pythonArgs(client, scenario, bootstrap string) []string {
	return []string{filepath.Join("python", "kafka_compat.py"), client, scenario, bootstrap}
}

func pythonScenarioClient(name, client string) scenarioClient {
	py := filepath.Join(pythonVenv(), "bin", "python")
	run := func(t *testing.T, tg Target, scenario string, p scenarioParams, onEvent func(a, b []int32), out any) {
		t.Helper()
		runExtScenario(t, fmt.Sprintf("%s %s on %s", name, scenario, tg.Name), 120*time.Second, p, onEvent, out,
			py, pythonArgs(client, scenario, tg.Bootstrap)...)
	}
	return scenarioClient{
		name:  name,
		ready: pythonReady,
		group: func(t *testing.T, tg Target, p scenarioParams, rebalanced func(a, b []int32)) (o groupObs) {
			run(t, tg, "group", p, rebalanced, &o)
			return o
		},
		commit: func(t *testing.T, tg Target, p scenarioParams) (o commitObs) {
			run(t, tg, "commit", p, nil, &o)
			return o
		},
		seek: func(t *testing.T, tg Target, p scenarioParams) (o seekObs) {
			run(t, tg, "seek", p, nil, &o)
			return o
		},
		idempotent: func(t *testing.T, tg Target, p scenarioParams) (o idemObs) {
			run(t, tg, "idempotent", p, nil, &o)
			return o
		},
		admin: func(t *testing.T, tg Target, p scenarioParams) (o adminObs) {
			run(t, tg, "admin", p, nil, &o)
			return o
		},
	}
}

// TestPythonRoundTrip: confluent-kafka (librdkafka in the wheel) and
// kafka-python produce the canonical records with each codec and read them
// back (assign from the beginning, no group).
//
// Adaptations: librdkafka treats a CreateTime of 0 as "not set" and stamps the
// current time, so confluent-kafka sends the "CreateTime 0 ms" record at 1 ms
// (as confluent-kafka-go does). kafka-python refuses a record whose key and
// value are both null ("Need at least one: key or value"), so it sends the
// "p1 null key+value" record with an empty key.
func TestPythonRoundTrip(t *testing.T) {
	for _, c := range []struct{ name, client string }{{"confluent-kafka-python", "confluent"}, {"kafka-python", "kafka-python"}} {
		t.Run(c.name, func(t *testing.T) {
			records := canonicalRecords
			switch c.client {
			case "confluent":
				records = func() []Rec { return withTimestamp(canonicalRecords(), 0, 1) }
			case "kafka-python":
				records = func() []Rec {
					rs := canonicalRecords()
					for i := range rs {
						if rs[i].Key == nil && rs[i].Value == nil {
							rs[i].Key = []byte{}
						}
					}
					return rs
				}
			}
			runRoundTrips(t, roundTripClient{
				name:    c.name,
				ready:   pythonReady,
				records: records,
				runAll: func(t *testing.T, tg Target, topics map[string]string, recs []Rec) map[string]codecRun {
					return jsonRunAll(t, tg, topics, recs, filepath.Join(pythonVenv(), "bin", "python"), pythonArgs(c.client, "roundtrip", tg.Bootstrap)...)
				},
			})
		})
	}
}

// ---------------------------------------------------------------------------
// kcat

var kcatRebalance = regexp.MustCompile(`rebalanced \(memberid [^)]*\): (assigned|revoked): (.*)`)
var kcatPartition = regexp.MustCompile(`\[(\d+)\]`)

// kcatMember runs `kcat -G` in the background and tracks the partitions its
// rebalance lines (stderr) say it holds.
type kcatMember struct {
	cmd    *exec.Cmd
	mu     sync.Mutex
	stderr bytes.Buffer
	done   chan struct{}
}

func startKcatMember(t *testing.T, m *members, i int, tg Target, group, topic string) *kcatMember {
	t.Helper()
	k := &kcatMember{done: make(chan struct{})}
	k.cmd = exec.Command("kcat", "-b", tg.Bootstrap, "-G", group, "-X", "auto.offset.reset=earliest", "-f", `%o\n`, topic)
	k.cmd.Stdout = io.Discard
	pr, pw := io.Pipe()
	k.cmd.Stderr = pw
	if err := k.cmd.Start(); err != nil {
		t.Fatalf("start kcat -G: %v", err)
	}
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			line := sc.Text()
			k.mu.Lock()
			k.stderr.WriteString(line + "\n")
			k.mu.Unlock()
			mm := kcatRebalance.FindStringSubmatch(line)
			if mm == nil {
				continue
			}
			var ps []int32
			for _, p := range kcatPartition.FindAllStringSubmatch(mm[2], -1) {
				n, _ := strconv.Atoi(p[1])
				ps = append(ps, int32(n))
			}
			if mm[1] == "assigned" {
				m.set(i, ps)
			} else {
				m.remove(i, ps...)
			}
		}
	}()
	go func() { _ = k.cmd.Wait(); _ = pw.Close(); close(k.done) }()
	t.Cleanup(k.stop)
	return k
}

func (k *kcatMember) exited() error {
	select {
	case <-k.done:
		k.mu.Lock()
		defer k.mu.Unlock()
		return fmt.Errorf("kcat -G exited: %v\nstderr:\n%s", k.cmd.ProcessState, tail(k.stderr.String(), 30))
	default:
		return nil
	}
}

// stop ends kcat as a user would (SIGTERM: it leaves the group and commits).
func (k *kcatMember) stop() {
	select {
	case <-k.done:
		return
	default:
	}
	_ = k.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-k.done:
	case <-time.After(15 * time.Second):
		_ = k.cmd.Process.Kill()
		<-k.done
	}
}

func kcatScenarioClient() scenarioClient {
	return scenarioClient{
		name:  "kcat",
		ready: kcatReady,
		group: func(t *testing.T, tg Target, p scenarioParams, rebalanced func(a, b []int32)) groupObs {
			m := newMembers()
			who := fmt.Sprintf("kcat -G %s on %s", p.Group, tg.Name)
			a := startKcatMember(t, m, 0, tg, p.Group, p.Topic)
			if !m.wait(t, who, p.Partitions, false, a.exited) {
				return groupObs{}
			}
			obs := groupObs{Before: m.get(0)}
			b := startKcatMember(t, m, 1, tg, p.Group, p.Topic)
			if !m.wait(t, who, p.Partitions, true, func() error {
				if err := a.exited(); err != nil {
					return err
				}
				return b.exited()
			}) {
				return obs
			}
			obs.A, obs.B = m.get(0), m.get(1)
			rebalanced(obs.A, obs.B)
			return obs
		},
		commit: func(t *testing.T, tg Target, p scenarioParams) commitObs {
			// kcat cannot read committed offsets back: Committed is what the
			// broker's OffsetFetch says between the two runs. kcat commits
			// what it consumed when it exits (librdkafka stores each offset
			// it hands over), the resuming run included.
			read := func(n int, extra ...string) []int64 {
				args := append([]string{"-b", tg.Bootstrap, "-G", p.Group, "-X", "auto.offset.reset=earliest", "-c", strconv.Itoa(n), "-f", `%o\n`}, extra...)
				args = append(args, p.Topic)
				stdout, stderr, err := runTool(t, 60*time.Second, nil, "kcat", args...)
				if err != nil {
					t.Fatalf("kcat %q: %v\nstderr:\n%s", args, err, tail(string(stderr), 40))
				}
				var offs []int64
				for _, f := range strings.Fields(string(stdout)) {
					o, _ := strconv.ParseInt(f, 10, 64)
					offs = append(offs, o)
				}
				return offs
			}
			first := read(4)
			obs := commitObs{Committed: -1, ResumeCommits: true}
			if len(first) != 4 || first[3] != 3 {
				t.Errorf("kcat -G -c 4 read offsets %v, want 0..3", first)
			}
			fo, err := kadm.NewClient(newKgo(t, tg)).FetchOffsets(testCtx(t, 20*time.Second), p.Group)
			if err == nil {
				err = fo.Error()
			}
			if err != nil {
				t.Fatalf("OffsetFetch after kcat -G -c 4: %v", err)
			}
			if o, ok := fo.Lookup(p.Topic, 0); ok {
				obs.Committed = o.At
			}
			second := read(p.Records - 4)
			obs.ResumedCount = len(second)
			obs.Resumed = -1
			if len(second) > 0 {
				obs.Resumed = second[0]
			}
			return obs
		},
		seek: func(t *testing.T, tg Target, p scenarioParams) seekObs {
			query := func(ts int64) int64 {
				args := []string{"-b", tg.Bootstrap, "-Q", "-t", fmt.Sprintf("%s:0:%d", p.Topic, ts)}
				stdout, stderr, err := runTool(t, 30*time.Second, nil, "kcat", args...)
				if err != nil {
					t.Fatalf("kcat %q: %v\nstderr:\n%s", args, err, stderr)
				}
				m := regexp.MustCompile(`offset (-?\d+)`).FindSubmatch(stdout)
				if m == nil {
					t.Fatalf("kcat -Q printed no offset:\n%s", stdout)
				}
				o, _ := strconv.ParseInt(string(m[1]), 10, 64)
				return o
			}
			obs := seekObs{Offset: query(p.Timestamp), AfterOffset: query(p.After)}
			args := []string{"-b", tg.Bootstrap, "-C", "-t", p.Topic, "-p", "0", "-o", fmt.Sprintf("s@%d", p.Timestamp), "-c", "1", "-f", `%o %T\n`}
			stdout, stderr, err := runTool(t, 30*time.Second, nil, "kcat", args...)
			if err != nil {
				t.Fatalf("kcat %q: %v\nstderr:\n%s", args, err, stderr)
			}
			if _, err := fmt.Sscanf(string(stdout), "%d %d", &obs.ReadOffset, &obs.ReadTimestamp); err != nil {
				t.Fatalf("kcat -o s@%d printed %q: %v", p.Timestamp, stdout, err)
			}
			return obs
		},
		idempotent: func(t *testing.T, tg Target, p scenarioParams) idemObs {
			var in bytes.Buffer
			for i := range p.Records {
				fmt.Fprintf(&in, "k%d\x1fv%d\n", i, i)
			}
			args := []string{"-P", "-b", tg.Bootstrap, "-t", p.Topic, "-p", "0", "-K", `\x1f`, "-v", "-v"}
			_, stderr, err := runTool(t, 30*time.Second, in.Bytes(), "kcat", args...)
			if err != nil {
				t.Fatalf("kcat %q: %v\nstderr:\n%s", args, err, stderr)
			}
			var obs idemObs
			for _, m := range kcatDelivered.FindAllStringSubmatch(string(stderr), -1) {
				o, _ := strconv.ParseInt(m[2], 10, 64)
				obs.Offsets = append(obs.Offsets, o)
			}
			if len(obs.Offsets) != p.Records {
				t.Fatalf("kcat reported %d deliveries for %d records\nstderr:\n%s", len(obs.Offsets), p.Records, tail(string(stderr), 40))
			}
			return obs // librdkafka: enable.idempotence=false by default
		},
		na: map[string]string{"admin": "kcat has no topic admin commands (only metadata, -L)"},
	}
}
