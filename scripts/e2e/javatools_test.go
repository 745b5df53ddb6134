package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// Apache Kafka's own command-line tools, run from the jars of
// scripts/kafka/install.sh (scripts/kafka/run.sh), for the 4.x and 3.9.x
// lines, as TestJavaTools/java-<version>/<target>/<scenario>:
//
//   - perf: kafka-producer-perf-test sends 20,000 records of 100 bytes
//     (acks=all, stock producer otherwise) and reports all of them sent;
//     kafka-consumer-perf-test (a group consumer) then reads 20,000 records.
//     Both runs are bounded (record count and --timeout); their throughput is
//     logged, not judged.
//   - admin-tools: kafka-topics --create/--describe/--alter (partitions)/
//     --delete, kafka-configs --alter/--describe and kafka-consumer-groups
//     --list/--describe; the test reads their output as a user would
//     (partition count, config values, per-partition committed offset and
//     lag).
//   - cluster-tools: kafka-log-dirs, kafka-configs --entity-type clients,
//     kafka-reassign-partitions, kafka-leader-election, kafka-client-metrics
//     (javatools_cluster_test.go).

const perfRecords = 20000

func kafkaToolsReady(version string) func(t *testing.T) {
	return func(t *testing.T) {
		t.Helper()
		lookTool(t, "java")
		if _, err := os.Stat(filepath.Join(KafkaCacheDir(version), "mainclasses")); err != nil {
			missingDependency(t, "the Kafka %s tools are not installed in %s (scripts/kafka/install.sh)", version, KafkaCacheDir(version))
		}
	}
}

// runKafkaTool runs one tool of Kafka version and returns its stdout; it
// fails the test with the tool's output when the tool fails.
func runKafkaTool(t *testing.T, version string, d time.Duration, tool string, args ...string) string {
	t.Helper()
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	stdout, stderr, err := runToolEnv(t, d, []string{"KAFKA_VERSION=" + version}, "bash", append([]string{filepath.Join(root, "scripts", "kafka", "run.sh"), tool}, args...)...)
	if err != nil {
		t.Fatalf("kafka-%s %s (Kafka %s): %v\nstdout:\n%s\nstderr (last lines):\n%s", tool, strings.Join(args, " "), version, err, tail(string(stdout), 30), tail(string(stderr), 40))
	}
	return string(stdout)
}

func TestJavaTools(t *testing.T) {
	for _, version := range []string{kafka4Version(), kafka3Version()} {
		t.Run("java-"+version, func(t *testing.T) {
			kafkaToolsReady(version)(t)
			for _, tg := range targets(t) {
				t.Run(tg.Name, func(t *testing.T) {
					t.Run("perf", func(t *testing.T) { perfTools(t, version, tg) })
					t.Run("admin-tools", func(t *testing.T) {
						skipKfakeDeviation(t, tg, "java-"+version, "admin-tools")
						adminTools(t, version, tg)
					})
					t.Run("cluster-tools", func(t *testing.T) {
						skipKfakeDeviation(t, tg, "java-"+version, "cluster-tools")
						clusterTools(t, version, tg)
					})
				})
			}
		})
	}
}

var perfSent = regexp.MustCompile(`(?m)^(\d+) records sent, ([\d.]+) records/sec`)

func perfTools(t *testing.T, version string, tg Target) {
	topic := uniqueTopic("perf")
	createTopic(t, tg, topic, 1)
	out := runKafkaTool(t, version, 120*time.Second, "producer-perf-test",
		"--topic", topic, "--num-records", strconv.Itoa(perfRecords), "--record-size", "100", "--throughput", "-1",
		"--producer-props", "bootstrap.servers="+tg.Bootstrap, "acks=all", "linger.ms=5")
	m := perfSent.FindAllStringSubmatch(out, -1)
	if len(m) == 0 {
		t.Fatalf("kafka-producer-perf-test printed no summary:\n%s", tail(out, 20))
	}
	last := m[len(m)-1]
	if last[1] != strconv.Itoa(perfRecords) {
		t.Errorf("kafka-producer-perf-test: %s records sent, want %d\n%s", last[1], perfRecords, tail(out, 10))
	}
	t.Logf("kafka-producer-perf-test (Kafka %s) against %s: %s records/sec", version, tg.Name, last[2])
	if ends := listEnds(t, tg, topic); ends[0] != perfRecords {
		t.Errorf("after kafka-producer-perf-test the high watermark is %d, want %d", ends[0], perfRecords)
	}
	out = runKafkaTool(t, version, 120*time.Second, "consumer-perf-test",
		"--bootstrap-server", tg.Bootstrap, "--topic", topic, "--messages", strconv.Itoa(perfRecords), "--timeout", "30000")
	// The header line names the columns; the last line holds the numbers.
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var header, data []string
	for i, l := range lines {
		if strings.HasPrefix(l, "start.time") && i+1 < len(lines) {
			header = strings.Split(l, ", ")
			data = strings.Split(lines[i+1], ", ")
		}
	}
	n := -1
	for i, h := range header {
		if h == "data.consumed.in.nMsg" && i < len(data) {
			n, _ = strconv.Atoi(strings.TrimSpace(data[i]))
		}
	}
	if n < perfRecords {
		t.Errorf("kafka-consumer-perf-test consumed %d records, want %d\n%s", n, perfRecords, tail(out, 10))
	}
	t.Logf("kafka-consumer-perf-test (Kafka %s) against %s: %s", version, tg.Name, strings.Join(data, ", "))
}

func adminTools(t *testing.T, version string, tg Target) {
	topic := uniqueTopic("tools")
	boot := []string{"--bootstrap-server", tg.Bootstrap}
	tool := func(name string, args ...string) string {
		return runKafkaTool(t, version, 90*time.Second, name, append(slicesClone(boot), args...)...)
	}
	if out := tool("topics", "--create", "--topic", topic, "--partitions", "3", "--replication-factor", "1", "--config", "retention.ms=3600000"); !strings.Contains(out, "Created topic "+topic) {
		t.Errorf("kafka-topics --create printed %q, want \"Created topic %s.\"", out, topic)
	}
	describe := func() string { return tool("topics", "--describe", "--topic", topic) }
	out := describe()
	if !strings.Contains(out, "PartitionCount: 3") || !strings.Contains(out, "retention.ms=3600000") {
		t.Errorf("kafka-topics --describe, want PartitionCount: 3 and retention.ms=3600000:\n%s", out)
	}
	if out := tool("configs", "--entity-type", "topics", "--entity-name", topic, "--alter", "--add-config", "retention.ms=7200000"); !strings.Contains(out, "Completed updating config") {
		t.Errorf("kafka-configs --alter printed %q, want \"Completed updating config ...\"", out)
	}
	got := pollValue(func() string {
		out := tool("configs", "--entity-type", "topics", "--entity-name", topic, "--describe")
		if strings.Contains(out, "retention.ms=7200000") {
			return "retention.ms=7200000"
		}
		return out
	}, "")
	if got != "retention.ms=7200000" {
		t.Errorf("kafka-configs --describe after the alter, want retention.ms=7200000:\n%s", got)
	}
	tool("topics", "--alter", "--topic", topic, "--partitions", "4")
	if out := pollValue(func() string {
		out := describe()
		if strings.Contains(out, "PartitionCount: 4") {
			return "PartitionCount: 4"
		}
		return out
	}, ""); out != "PartitionCount: 4" {
		t.Errorf("kafka-topics --describe after --alter --partitions 4:\n%s", out)
	}

	// A group with committed offsets: 3 records on partition 0 and 1 on
	// partition 1, offsets 2 and 1 committed.
	group := uniqueTopic("tools-g")
	produceSeq(t, tg, topic, 1, 3, nowTS)
	kgoProduce(t, tg, topic, "none", []Rec{{Partition: 1, Key: []byte("k"), Value: []byte("v"), Timestamp: tsBase}})
	adm := kadm.NewClient(newKgo(t, tg))
	ctx := testCtx(t, 20*time.Second)
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: topic, Partition: 0, At: 2, LeaderEpoch: -1})
	offs.Add(kadm.Offset{Topic: topic, Partition: 1, At: 1, LeaderEpoch: -1})
	if r, err := adm.CommitOffsets(ctx, group, offs); err != nil || r.Error() != nil {
		t.Fatalf("commit offsets for group %s: %v %v", group, err, r.Error())
	}
	if out := tool("consumer-groups", "--list"); !strings.Contains(out, group) {
		t.Errorf("kafka-consumer-groups --list does not show %s:\n%s", group, tail(out, 20))
	}
	out = tool("consumer-groups", "--describe", "--group", group)
	want := map[string]string{"0": "2 3 1", "1": "1 1 0"} // current offset, log end offset, lag
	rows := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) >= 6 && f[0] == group && f[1] == topic {
			rows[f[2]] = strings.Join(f[3:6], " ")
		}
	}
	for p, w := range want {
		if rows[p] != w {
			t.Errorf("kafka-consumer-groups --describe, partition %s: CURRENT-OFFSET LOG-END-OFFSET LAG = %q, want %q\n%s", p, rows[p], w, out)
		}
	}
	tool("topics", "--delete", "--topic", topic)
	if out := pollValue(func() string {
		if strings.Contains(tool("topics", "--list"), topic) {
			return "listed"
		}
		return "gone"
	}, "listed"); out != "gone" {
		t.Errorf("kafka-topics --list still shows %s after --delete", topic)
	}
}

func slicesClone(s []string) []string { return append([]string(nil), s...) }

// runToolEnv is runTool with extra environment variables.
func runToolEnv(t *testing.T, d time.Duration, env []string, name string, args ...string) (stdout, stderr []byte, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), env...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	if ctx.Err() != nil {
		err = fmt.Errorf("%w (still running after %v)", err, d)
	}
	return o.Bytes(), e.Bytes(), err
}
