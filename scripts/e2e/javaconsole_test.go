package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Apache Kafka's console tools and a reset to the earliest offset, run from
// the wrappers in scripts/kafka/bin, for the 4.x and 3.9.x lines, as
// TestJavaConsoleTools/java-<version>/<target>:
//
//  1. kafka-console-producer (stock producer config: idempotence on) writes
//     consoleRecords keyed records to a 3-partition topic from standard
//     input.
//  2. kafka-console-consumer --group G --from-beginning --max-messages N
//     reads exactly those records (key and value) and commits on close.
//  3. With the group inactive, kafka-consumer-groups --reset-offsets
//     --to-earliest --execute answers NEW-OFFSET 0 for every partition, and
//     --describe shows CURRENT-OFFSET 0 (and the full lag).
//  4. kafka-console-consumer --group G --max-messages N, without
//     --from-beginning (auto.offset.reset=latest would read nothing), reads
//     every record again: the committed 0 is honoured. On the sidecar in
//     the consumer offsets mode this is the zero marker (bridge/offsets.go).
//
// Against kfake steps 3 and 4 are skipped: kafka-consumer-groups meets the
// kfake deviation of the admin scenario (kfakeDeviations).
//
// Every tool run is bounded (a context timeout kills it; the consumers also
// get --timeout-ms), and a failing run prints the tool's stdout and stderr.

const consoleRecords = 20

func TestJavaConsoleTools(t *testing.T) {
	for _, version := range []string{kafka4Version(), kafka3Version()} {
		t.Run("java-"+version, func(t *testing.T) {
			kafkaToolsReady(version)(t)
			for _, tg := range targets(t) {
				t.Run(tg.Name, func(t *testing.T) {
					start := time.Now()
					consoleTools(t, version, tg)
					t.Logf("console tools (Kafka %s) against %s in %v", version, tg.Name, time.Since(start).Round(time.Millisecond))
				})
			}
		})
	}
}

// kafkaWrapper runs scripts/kafka/bin/kafka-<tool> of Kafka version with
// stdin, killed after d.
func kafkaWrapper(t *testing.T, version string, d time.Duration, stdin []byte, tool string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", append([]string{filepath.Join(root, "scripts", "kafka", "bin", "kafka-"+tool)}, args...)...)
	cmd.Env = append(os.Environ(), "KAFKA_VERSION="+version)
	cmd.Stdin = bytes.NewReader(stdin)
	cmd.WaitDelay = 5 * time.Second // the wrappers exec java; never wait on a leftover pipe
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	if ctx.Err() != nil {
		err = fmt.Errorf("%w (still running after %v, killed)", err, d)
	}
	return o.String(), e.String(), err
}

// toolFailure formats a tool run for a failure message.
func toolFailure(tool string, args []string, stdout, stderr string) string {
	return fmt.Sprintf("kafka-%s %s\nstdout (last lines):\n%s\nstderr (last lines):\n%s", tool, strings.Join(args, " "), tail(stdout, 40), tail(stderr, 40))
}

// consoleProps is the flag that passes reader (producer) or formatter
// (consumer) properties: --property on 3.x, deprecated on 4.x in favour of
// --reader-property and --formatter-property.
func consoleProps(version, kind string) string {
	if strings.HasPrefix(version, "3.") {
		return "--property"
	}
	return "--" + kind + "-property"
}

func consoleTools(t *testing.T, version string, tg Target) {
	topic := uniqueTopic("console")
	group := uniqueTopic("console-g")
	createTopic(t, tg, topic, 3)

	// 1. Produce keyed records from standard input.
	var in bytes.Buffer
	var want []string
	for i := 0; i < consoleRecords; i++ {
		line := fmt.Sprintf("key-%d:value-%d", i, i)
		want = append(want, line)
		in.WriteString(line + "\n")
	}
	sort.Strings(want)
	rp := consoleProps(version, "reader")
	pargs := []string{"--bootstrap-server", tg.Bootstrap, "--topic", topic,
		rp, "parse.key=true", rp, "key.separator=:"}
	stdout, stderr, err := kafkaWrapper(t, version, 90*time.Second, in.Bytes(), "console-producer", pargs...)
	if err != nil {
		t.Fatalf("%v\n%s", err, toolFailure("console-producer", pargs, stdout, stderr))
	}
	ends := listEnds(t, tg, topic)
	total := int64(0)
	for p := int32(0); p < 3; p++ {
		if ends[p] == 0 {
			// The keys are fixed, so their partitions are too: this
			// would fail every run, not now and then.
			t.Fatalf("partition %d got no record (high watermarks %v); the check of NEW-OFFSET 0 needs records on every partition", p, ends)
		}
		total += ends[p]
	}
	if total != consoleRecords {
		t.Fatalf("after kafka-console-producer the partitions hold %d records (%v), want %d\n%s",
			total, ends, consoleRecords, toolFailure("console-producer", pargs, stdout, stderr))
	}

	// 2. and 4. A group consumer reading N records, printing key:value.
	consume := func(step string, extra ...string) {
		t.Helper()
		fp := consoleProps(version, "formatter")
		args := append([]string{"--bootstrap-server", tg.Bootstrap, "--topic", topic, "--group", group,
			"--max-messages", strconv.Itoa(consoleRecords), "--timeout-ms", "30000",
			fp, "print.key=true", fp, "key.separator=:"}, extra...)
		stdout, stderr, err := kafkaWrapper(t, version, 90*time.Second, nil, "console-consumer", args...)
		var got []string
		for _, l := range strings.Split(stdout, "\n") {
			if l = strings.TrimSpace(l); l != "" {
				got = append(got, l)
			}
		}
		sort.Strings(got)
		if err != nil || strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("%s: kafka-console-consumer read %d records, want exactly the %d produced (%v)\n%s",
				step, len(got), consoleRecords, err, toolFailure("console-consumer", args, stdout, stderr))
		}
	}
	consume("first read (--from-beginning)", "--from-beginning")
	// kfake answers DescribeTopicPartitions with a null
	// eligible-leader-replicas list, which the AdminClient behind
	// kafka-consumer-groups --reset-offsets dereferences: the same
	// deviation as the admin scenario's (kfakeDeviations).
	if tg.Reference {
		t.Logf("kafka-console-producer and the first kafka-console-consumer run passed against %s", tg.Name)
	}
	skipKfakeDeviation(t, tg, "java-"+version, "admin")

	// 3. Reset the inactive group to the earliest offsets. The consumer
	// left the group when it closed; a broker that has not settled that
	// yet answers that the group is not inactive, so that answer is
	// retried until a deadline.
	cg := func(args ...string) (string, string, []string, error) {
		args = append([]string{"--bootstrap-server", tg.Bootstrap, "--group", group}, args...)
		stdout, stderr, err := kafkaWrapper(t, version, 90*time.Second, nil, "consumer-groups", args...)
		return stdout, stderr, args, err
	}
	var rows map[string]string
	deadline := time.Now().Add(30 * time.Second)
	for {
		stdout, stderr, args, err := cg("--reset-offsets", "--to-earliest", "--topic", topic, "--execute")
		rows = groupRows(stdout, group, topic, 1)
		if err == nil && len(rows) == 3 {
			break
		}
		if !strings.Contains(stdout+stderr, "inactive") || time.Now().After(deadline) {
			t.Fatalf("kafka-consumer-groups --reset-offsets: %v, rows %v\n%s", err, rows, toolFailure("consumer-groups", args, stdout, stderr))
		}
		t.Logf("the group is not inactive yet; retrying the reset")
	}
	for p := 0; p < 3; p++ {
		if rows[strconv.Itoa(p)] != "0" {
			t.Errorf("kafka-consumer-groups --reset-offsets --to-earliest, partition %d: NEW-OFFSET %q, want 0 (rows %v)", p, rows[strconv.Itoa(p)], rows)
		}
	}
	stdout, stderr, args, err := cg("--describe")
	rows = groupRows(stdout, group, topic, 3)
	if err != nil || len(rows) != 3 {
		t.Fatalf("kafka-consumer-groups --describe after the reset: %v; rows of %s %v, want one per partition with CURRENT-OFFSET 0\n%s",
			err, topic, rows, toolFailure("consumer-groups", args, stdout, stderr))
	}
	for p := int32(0); p < 3; p++ {
		w := fmt.Sprintf("0 %d %d", ends[p], ends[p]) // current offset, log end offset, lag
		if got := rows[strconv.Itoa(int(p))]; got != w {
			t.Errorf("kafka-consumer-groups --describe after the reset, partition %d: CURRENT-OFFSET LOG-END-OFFSET LAG = %q, want %q\n%s",
				p, got, w, toolFailure("consumer-groups", args, stdout, stderr))
		}
	}
	if t.Failed() {
		return
	}

	// 4. Without --from-beginning the consumer's reset policy is latest:
	// only the committed 0 makes it read everything again.
	consume("second read (committed 0, auto.offset.reset=latest)")
}

// groupRows parses the table kafka-consumer-groups prints (--reset-offsets
// or --describe): for each row of group and topic, the partition and the
// n columns after it, space-separated. It reads the output as one stream
// of fields: the 3.x --reset-offsets prints its rows without line breaks.
func groupRows(out, group, topic string, n int) map[string]string {
	rows := map[string]string{}
	f := strings.Fields(out)
	for i := 0; i+3+n <= len(f); i++ {
		if f[i] == group && f[i+1] == topic {
			rows[f[i+2]] = strings.Join(f[i+3:i+3+n], " ")
		}
	}
	return rows
}
