package e2e

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The cluster tools of Kafka's distribution an operator runs against a
// cluster, as TestJavaTools/java-<version>/<target>/cluster-tools (the
// "cluster tools" column of the matrix): each runs as a real tool process,
// must exit 0 without a stack trace, and print what it prints on Kafka:
//
//   - kafka-log-dirs --describe: the topic's partitions with their sizes
//     (the one holding records non-empty).
//   - kafka-configs --entity-type clients and --entity-type users: a
//     client quota and a user quota altered (--add-config,
//     --delete-config) and described (users also reads the SCRAM
//     credentials, DescribeUserScramCredentials).
//   - kafka-reassign-partitions --list: no reassignment in progress.
//   - kafka-leader-election --election-type preferred (a partition and
//     --all-topic-partitions): the leader is already the preferred one.
//   - kafka-client-metrics (3.7+): a subscription altered, listed,
//     described and deleted.

// stackTrace matches a Java exception's stack frame or an uncaught
// exception line.
var stackTrace = regexp.MustCompile(`(?m)^\s+at [\w$.]+\(|Exception in thread|^[\w.]+(Exception|Error): `)

// runClusterTool runs one tool and returns its stdout and stderr; it fails
// the test when the tool fails or prints a stack trace.
func runClusterTool(t *testing.T, version string, tool string, args ...string) string {
	t.Helper()
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	stdout, stderr, err := runToolEnv(t, 90*time.Second, []string{"KAFKA_VERSION=" + version}, "bash", append([]string{filepath.Join(root, "scripts", "kafka", "run.sh"), tool}, args...)...)
	out := string(stdout) + string(stderr)
	if err != nil {
		t.Fatalf("kafka-%s %s (Kafka %s): %v\n%s", tool, strings.Join(args, " "), version, err, tail(out, 40))
	}
	if stackTrace.MatchString(out) {
		t.Errorf("kafka-%s %s (Kafka %s) printed a stack trace:\n%s", tool, strings.Join(args, " "), version, tail(out, 40))
	}
	if testing.Verbose() {
		t.Logf("kafka-%s %s:\n%s", tool, strings.Join(args, " "), tail(out, 20))
	}
	return string(stdout)
}

func clusterTools(t *testing.T, version string, tg Target) {
	boot := []string{"--bootstrap-server", tg.Bootstrap}
	tool := func(t *testing.T, name string, args ...string) string {
		t.Helper()
		return runClusterTool(t, version, name, append(slicesClone(boot), args...)...)
	}
	topic := uniqueTopic("ctools")
	createTopic(t, tg, topic, 2)
	cl := newKgo(t, tg, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := cl.ProduceSync(testCtx(t, 20*time.Second), &kgo.Record{Topic: topic, Partition: 0, Value: []byte("hello")}).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}

	t.Run("log-dirs", func(t *testing.T) {
		out := tool(t, "log-dirs", "--describe", "--topic-list", topic)
		var doc struct {
			Brokers []struct {
				Broker  int `json:"broker"`
				LogDirs []struct {
					Partitions []struct {
						Partition string `json:"partition"`
						Size      int64  `json:"size"`
					} `json:"partitions"`
				} `json:"logDirs"`
			} `json:"brokers"`
		}
		i := strings.Index(out, "{")
		if i < 0 || json.Unmarshal([]byte(strings.TrimSpace(out[i:])), &doc) != nil {
			t.Fatalf("kafka-log-dirs printed no JSON document:\n%s", out)
		}
		sizes := map[string]int64{}
		for _, b := range doc.Brokers {
			for _, d := range b.LogDirs {
				for _, p := range d.Partitions {
					sizes[p.Partition] = p.Size
				}
			}
		}
		if s, ok := sizes[topic+"-0"]; !ok || s <= 0 {
			t.Errorf("kafka-log-dirs: %s-0 size %d (listed %v), want > 0", topic, s, ok)
		}
		if s, ok := sizes[topic+"-1"]; !ok || s != 0 {
			t.Errorf("kafka-log-dirs: %s-1 size %d (listed %v), want 0", topic, s, ok)
		}
	})

	t.Run("configs-clients", func(t *testing.T) {
		client := uniqueTopic("ctools-client")
		ent := []string{"--entity-type", "clients", "--entity-name", client}
		if out := tool(t, "configs", append(ent, "--alter", "--add-config", "producer_byte_rate=1048576,consumer_byte_rate=2097152")...); !strings.Contains(out, "Completed updating config for client "+client) {
			t.Errorf("kafka-configs --alter printed %q", out)
		}
		got := pollValue(func() string { return strings.TrimSpace(tool(t, "configs", append(ent, "--describe")...)) }, "")
		if !strings.Contains(got, "producer_byte_rate=1048576") || !strings.Contains(got, "consumer_byte_rate=2097152") {
			t.Errorf("kafka-configs --describe after the alter:\n%s", got)
		}
		tool(t, "configs", append(ent, "--alter", "--delete-config", "producer_byte_rate")...)
		got = pollValue(func() string { return strings.TrimSpace(tool(t, "configs", append(ent, "--describe")...)) }, "")
		if strings.Contains(got, "producer_byte_rate") || !strings.Contains(got, "consumer_byte_rate=2097152") {
			t.Errorf("kafka-configs --describe after --delete-config producer_byte_rate:\n%s", got)
		}
		tool(t, "configs", append(ent, "--alter", "--delete-config", "consumer_byte_rate")...)
		if out := tool(t, "configs", "--entity-type", "clients", "--describe"); strings.Contains(out, client) {
			t.Errorf("kafka-configs --describe of every client still shows %s:\n%s", client, out)
		}
	})

	t.Run("configs-users", func(t *testing.T) {
		user := uniqueTopic("ctools-user")
		ent := []string{"--entity-type", "users", "--entity-name", user}
		if out := tool(t, "configs", append(ent, "--alter", "--add-config", "producer_byte_rate=1048576,consumer_byte_rate=2097152")...); !strings.Contains(out, "Completed updating config for user "+user) {
			t.Errorf("kafka-configs --alter printed %q", out)
		}
		got := pollValue(func() string { return strings.TrimSpace(tool(t, "configs", append(ent, "--describe")...)) }, "")
		if !strings.Contains(got, "producer_byte_rate=1048576") || !strings.Contains(got, "consumer_byte_rate=2097152") {
			t.Errorf("kafka-configs --describe after the alter:\n%s", got)
		}
		tool(t, "configs", append(ent, "--alter", "--delete-config", "producer_byte_rate,consumer_byte_rate")...)
		got = pollValue(func() string { return strings.TrimSpace(tool(t, "configs", append(ent, "--describe")...)) }, "")
		if strings.Contains(got, "producer_byte_rate") || strings.Contains(got, "consumer_byte_rate") {
			t.Errorf("kafka-configs --describe after --delete-config:\n%s", got)
		}
	})

	t.Run("reassign-partitions", func(t *testing.T) {
		if out := tool(t, "reassign-partitions", "--list"); !strings.Contains(out, "No partition reassignments found") {
			t.Errorf("kafka-reassign-partitions --list printed %q", out)
		}
	})

	t.Run("leader-election", func(t *testing.T) {
		out := tool(t, "leader-election", "--election-type", "preferred", "--topic", topic, "--partition", "0")
		if !strings.Contains(out, "Valid replica already elected for partitions "+topic+"-0") {
			t.Errorf("kafka-leader-election of %s-0 printed %q", topic, out)
		}
		out = tool(t, "leader-election", "--election-type", "preferred", "--all-topic-partitions")
		if strings.Contains(out, "Error") || strings.Contains(out, "Successfully") {
			t.Errorf("kafka-leader-election --all-topic-partitions printed %q", out)
		}
	})

	t.Run("client-metrics", func(t *testing.T) {
		name := uniqueTopic("ctools-sub")
		out := tool(t, "client-metrics", "--alter", "--name", name, "--metrics", "org.apache.kafka.producer.,org.apache.kafka.consumer.fetch",
			"--interval", "60000", "--match", "client_id=app-.*")
		if !strings.Contains(out, "Altered client metrics config for "+name) {
			t.Errorf("kafka-client-metrics --alter printed %q", out)
		}
		if out := tool(t, "client-metrics", "--list"); !strings.Contains(out, name) {
			t.Errorf("kafka-client-metrics --list does not show %s:\n%s", name, out)
		}
		out = tool(t, "client-metrics", "--describe", "--name", name)
		for _, w := range []string{"Client metrics configs for " + name, "interval.ms=60000", "match=client_id=app-.*", "metrics=org.apache.kafka.producer.,org.apache.kafka.consumer.fetch"} {
			if !strings.Contains(out, w) {
				t.Errorf("kafka-client-metrics --describe: no %q in\n%s", w, out)
			}
		}
		if out := tool(t, "client-metrics", "--delete", "--name", name); !strings.Contains(out, "Deleted client metrics config for "+name) {
			t.Errorf("kafka-client-metrics --delete printed %q", out)
		}
		if out := tool(t, "client-metrics", "--list"); strings.Contains(out, name) {
			t.Errorf("kafka-client-metrics --list still shows %s after --delete:\n%s", name, out)
		}
	})
}
