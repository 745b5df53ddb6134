package e2e

// One Kafka group across three sidecars with five different clients:
// three `kafka-iggy serve` processes (peer link on, one coordination domain)
// on one `kafka-iggy embedded-iggy` process, over loopback TCP. Each member
// talks only to its own sidecar:
//
//	sidecar 0: franz-go (kgo), sarama
//	sidecar 1: Java kafka-console-consumer --group, confluent-kafka (Python)
//	sidecar 2: kcat -G (librdkafka)
//
// Every partition is assigned to exactly one member and DescribeGroups
// through each sidecar agrees; every record is consumed; kafka-consumer-groups
// --list and --describe through every sidecar show the group, its members
// and its lag. Then the sidecar coordinating the group is killed (SIGKILL):
// the other four clients re-form it and consume what is produced after.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/kafka-iggy/kafka-iggy/bridge/cluster"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

const acrossSecret = "e2e-peer-secret-0123456789abcdefghij"

// acrossLog is a process's JSON log lines.
type acrossLog struct {
	mu    sync.Mutex
	lines []map[string]any
	cmd   *exec.Cmd
}

// owns reports whether the log's last word on shard k is "active here".
func (l *acrossLog) owns(k int) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	active := false
	for _, line := range l.lines {
		if sh, ok := line["shard"].(float64); ok && int(sh) == k {
			switch line["message"] {
			case "coordination: shard active here":
				active = true
			case "coordination: shard released":
				active = false
			}
		}
	}
	return active
}

// acrossProc starts bin with args and env, and returns the value of the
// JSON log field key from the first line whose message contains msg.
func acrossProc(t *testing.T, bin string, env []string, msg, key string, args ...string) string {
	v, _ := acrossProcLog(t, bin, env, msg, key, args...)
	return v
}

func acrossProcLog(t *testing.T, bin string, env []string, msg, key string, args ...string) (string, *acrossLog) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var base []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KAFKA_IGGY_") {
			base = append(base, kv)
		}
	}
	cmd.Env = append(base, env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	log := &acrossLog{cmd: cmd}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			var line map[string]any
			if json.Unmarshal(sc.Bytes(), &line) != nil {
				continue
			}
			log.mu.Lock()
			log.lines = append(log.lines, line)
			log.mu.Unlock()
			if strings.Contains(fmt.Sprint(line["message"]), msg) {
				if v, ok := line[key].(string); ok {
					select {
					case found <- v:
					default:
					}
				}
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
	}()
	select {
	case v := <-found:
		return v, log
	case <-time.After(60 * time.Second):
		t.Fatalf("%s %v: no %q line within 60s", bin, args, msg)
	}
	return "", nil
}

// acrossLines collects the lines a member process prints.
type acrossLines struct {
	mu   sync.Mutex
	seen map[string]bool
}

func (l *acrossLines) add(v string) {
	l.mu.Lock()
	l.seen[v] = true
	l.mu.Unlock()
}

func (l *acrossLines) has(v string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seen[v]
}

// acrossMember runs a consumer process until the test ends (or stop),
// feeding its stdout lines to got.
func acrossMember(t *testing.T, got *acrossLines, name string, args ...string) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Env = os.Environ()
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			got.add(strings.TrimSpace(sc.Text()))
		}
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			<-done
			_ = cmd.Wait()
			if t.Failed() {
				t.Logf("%s stderr:\n%s", name, stderr.String())
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// acrossPython is a confluent-kafka consumer printing each value.
const acrossPython = `
import sys
from confluent_kafka import Consumer
c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": sys.argv[2], "client.id": "across-confluent-python",
              "auto.offset.reset": "earliest", "partition.assignment.strategy": "range"})
c.subscribe([sys.argv[3]])
while True:
    m = c.poll(0.5)
    if m is not None and m.error() is None:
        print(m.value().decode(), flush=True)
`

func TestGroupAcrossSidecars(t *testing.T) {
	version := kafka4Version()
	kafkaToolsReady(version)(t)
	kcat := lookTool(t, "kcat")
	pythonReady(t)
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := buildSidecarBinary(t)
	iggyAddr := acrossProc(t, bin, nil, "embedded Iggy server listening", "listen", "embedded-iggy", "--listen", "127.0.0.1:0")
	sidecars := make([]string, 3)
	logs := make([]*acrossLog, 3)
	for i := range sidecars {
		sidecars[i], logs[i] = acrossProcLog(t, bin, []string{
			"KAFKA_IGGY_EMBEDDED__MODE=off",
			"KAFKA_IGGY_IGGY__ADDRESS=" + iggyAddr,
			"KAFKA_IGGY_LISTENER__ADDRESS=127.0.0.1:0",
			"KAFKA_IGGY_ADMIN__ADDRESS=127.0.0.1:0",
			"KAFKA_IGGY_PEERS__ADDRESS=127.0.0.1:0",
			"KAFKA_IGGY_PEERS__SECRET=" + acrossSecret,
			"KAFKA_IGGY_LOG__FORMAT=json",
		}, "ready for Kafka clients", "kafka_address", "serve")
	}
	admins := make([]*kadm.Client, 3)
	for i, s := range sidecars {
		cl, err := kgo.NewClient(kgo.SeedBrokers(s))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		admins[i] = kadm.NewClient(cl)
	}
	const topic, partitions, records = "across", 8, 400
	// A group coordinated by sidecar 2 (killed at the end).
	group := ""
	for deadline := time.Now().Add(30 * time.Second); group == "" && time.Now().Before(deadline); {
		for i := range 500 {
			if g := fmt.Sprintf("g-across-%d", i); logs[2].owns(cluster.Shard(g, cluster.DefaultShards)) {
				group = g
				break
			}
		}
		if group == "" {
			time.Sleep(200 * time.Millisecond)
		}
	}
	if group == "" {
		t.Fatal("sidecar 2 owns no shard")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	if _, err := admins[0].CreateTopic(ctx, partitions, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	prod, err := kgo.NewClient(kgo.SeedBrokers(sidecars[1]), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	var rs []*kgo.Record
	for i := range records {
		rs = append(rs, &kgo.Record{Value: []byte(fmt.Sprintf("x%05d", i))})
	}
	if err := prod.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	got := &acrossLines{seen: map[string]bool{}}
	// franz-go on sidecar 0 (range: the protocol every member here has).
	fg, err := kgo.NewClient(kgo.SeedBrokers(sidecars[0]), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.Balancers(kgo.RangeBalancer()), kgo.ClientID("across-franz-go"))
	if err != nil {
		t.Fatal(err)
	}
	fctx, stopFG := context.WithCancel(ctx)
	fgDone := make(chan struct{})
	go func() {
		defer close(fgDone)
		for fctx.Err() == nil {
			fs := fg.PollFetches(fctx)
			fs.EachRecord(func(r *kgo.Record) { got.add(string(r.Value)) })
		}
	}()
	defer func() { stopFG(); <-fgDone; fg.Close() }()
	// The Java console consumer on sidecar 1.
	acrossMember(t, got, "kafka-console-consumer", "bash", filepath.Join(root, "scripts", "kafka", "bin", "kafka-console-consumer"),
		"--bootstrap-server", sidecars[1], "--topic", topic, "--group", group, "--from-beginning",
		"--consumer-property", "partition.assignment.strategy=org.apache.kafka.clients.consumer.RangeAssignor",
		"--consumer-property", "client.id=across-java")
	// kcat's balanced consumer (librdkafka) on sidecar 2.
	stopKcat := acrossMember(t, got, "kcat -G", kcat, "-b", sidecars[2], "-G", group, "-o", "beginning", "-u", "-q", "-f", "%s\n",
		"-X", "partition.assignment.strategy=range", "-X", "client.id=across-librdkafka", topic)
	// confluent-kafka (Python, librdkafka inside the wheel) on sidecar 1.
	acrossMember(t, got, "confluent-kafka-python", filepath.Join(pythonVenv(), "bin", "python"), "-u", "-c", acrossPython,
		sidecars[1], group, topic)
	// sarama on sidecar 0.
	scfg := sarama.NewConfig()
	scfg.Version = saramaVersion
	scfg.ClientID = "across-sarama"
	scfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	sg, err := sarama.NewConsumerGroup([]string{sidecars[0]}, group, scfg)
	if err != nil {
		t.Fatal(err)
	}
	sctx, stopSarama := context.WithCancel(ctx)
	sgDone := make(chan struct{})
	go func() {
		defer close(sgDone)
		h := &saramaGroupHandler{topic: topic, read: func(m *sarama.ConsumerMessage, s sarama.ConsumerGroupSession) {
			got.add(string(m.Value))
			s.MarkMessage(m, "")
		}}
		for sctx.Err() == nil {
			if err := sg.Consume(sctx, []string{topic}, h); err != nil && sctx.Err() == nil {
				time.Sleep(200 * time.Millisecond)
			}
		}
	}()
	defer func() { stopSarama(); <-sgDone; _ = sg.Close() }()

	// One group of 4, every partition once, described alike by every sidecar.
	var last error
	formStart := time.Now()
	deadline := time.Now().Add(90 * time.Second)
	var clients map[string]bool
	for time.Now().Before(deadline) {
		if clients, last = acrossDescribe(ctx, admins, group, topic, partitions, 5); last == nil {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	if last != nil {
		t.Fatalf("group across 3 sidecars not formed: %v", last)
	}
	t.Logf("group of franz-go, Java, kcat (librdkafka), confluent-kafka-python and sarama members across 3 sidecars Stable in %v: %v", time.Since(formStart).Round(time.Millisecond), clients)
	for _, c := range []string{"across-franz-go", "across-java", "across-librdkafka", "across-sarama", "across-confluent-python"} {
		if !clients[c] {
			t.Errorf("client %s is not a member: %v", c, clients)
		}
	}
	// Every record consumed.
	for deadline := time.Now().Add(90 * time.Second); ; {
		missing := 0
		for _, r := range rs {
			if !got.has(string(r.Value)) {
				missing++
			}
		}
		if missing == 0 {
			t.Logf("all %d records consumed by the group", records)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d records not consumed by the group", missing, records)
		}
		time.Sleep(250 * time.Millisecond)
	}
	// kafka-consumer-groups through every sidecar.
	for i, s := range sidecars {
		out, errOut, err := kafkaWrapper(t, version, 90*time.Second, nil, "consumer-groups", "--bootstrap-server", s, "--list")
		if err != nil || !strings.Contains(out, group) {
			t.Fatalf("kafka-consumer-groups --list via sidecar %d: %v\n%s\n%s", i, err, out, errOut)
		}
		out, errOut, err = kafkaWrapper(t, version, 90*time.Second, nil, "consumer-groups", "--bootstrap-server", s, "--describe", "--group", group)
		if err != nil || !strings.Contains(out, "LAG") || strings.Count(out, topic) < partitions {
			t.Fatalf("kafka-consumer-groups --describe via sidecar %d: %v\n%s\n%s", i, err, out, errOut)
		}
		if i == 2 {
			t.Logf("kafka-consumer-groups --describe via sidecar %d:\n%s", i, out)
		}
		for _, c := range []string{"across-java", "across-librdkafka", "across-sarama", "across-franz-go", "across-confluent-python"} {
			if !strings.Contains(out, c) {
				t.Errorf("--describe via sidecar %d does not show %s:\n%s", i, c, out)
			}
		}
	}

	// SIGKILL of the sidecar that coordinates the group (kcat's, which goes
	// with it): the four other clients re-form the group and go on.
	killed := time.Now()
	if err := logs[2].cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	stopKcat()
	for deadline := time.Now().Add(90 * time.Second); ; {
		if _, last = acrossDescribe(ctx, admins[:2], group, topic, partitions, 4); last == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("group not re-formed after the owner's SIGKILL: %v", last)
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Logf("owner SIGKILL -> group Stable with the 4 other clients in %v", time.Since(killed).Round(time.Millisecond))
	var more []*kgo.Record
	for i := range 200 {
		more = append(more, &kgo.Record{Value: []byte(fmt.Sprintf("y%05d", i))})
	}
	if err := prod.ProduceSync(ctx, more...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(90 * time.Second); ; {
		missing := 0
		for _, r := range more {
			if !got.has(string(r.Value)) {
				missing++
			}
		}
		if missing == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d records produced after the kill not consumed", missing, len(more))
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Logf("records produced after the owner's SIGKILL consumed %v after the kill", time.Since(killed).Round(time.Millisecond))

}

// acrossDescribe checks that every sidecar describes the group Stable with
// want members, every partition of topic assigned once, and the same
// assignment; it returns the members' client ids.
func acrossDescribe(ctx context.Context, admins []*kadm.Client, group, topic string, partitions, want int) (map[string]bool, error) {
	var first map[int32]string
	clients := map[string]bool{}
	for i, adm := range admins {
		dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		ds, err := adm.DescribeGroups(dctx, group)
		cancel()
		if err != nil {
			return nil, err
		}
		d := ds[group]
		if d.Err != nil || d.State != "Stable" || len(d.Members) != want {
			return nil, fmt.Errorf("sidecar %d: %v state %s, %d members", i, d.Err, d.State, len(d.Members))
		}
		got := map[int32]string{}
		for _, m := range d.Members {
			clients[m.ClientID] = true
			ca, ok := m.Assigned.AsConsumer()
			if !ok {
				return nil, fmt.Errorf("sidecar %d: member %s without a consumer assignment", i, m.ClientID)
			}
			for _, tp := range ca.Topics {
				for _, p := range tp.Partitions {
					if tp.Topic != topic {
						continue
					}
					if prev, dup := got[p]; dup {
						return nil, fmt.Errorf("sidecar %d: partition %d assigned to %s and %s", i, p, prev, m.MemberID)
					}
					got[p] = m.MemberID
				}
			}
		}
		if len(got) != partitions {
			return nil, fmt.Errorf("sidecar %d: %d of %d partitions assigned", i, len(got), partitions)
		}
		if first == nil {
			first = got
		}
		for p, m := range got {
			if first[p] != m {
				return nil, fmt.Errorf("sidecar %d disagrees on partition %d", i, p)
			}
		}
	}
	return clients, nil
}

// buildSidecarBinary builds kafka-iggy from this module into the test's
// temporary directory, for tests that start sidecar processes themselves.
func buildSidecarBinary(t *testing.T) string {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "kafka-iggy")
	build := exec.Command("go", "build", "-o", bin, "./cmd/kafka-iggy")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building kafka-iggy: %v\n%s", err, out)
	}
	return bin
}
