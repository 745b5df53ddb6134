package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The consumer group protocol (KIP-848) with kafka-clients 4.x
// (group.protocol=consumer; javacg/ConsumerProtocol.java, run as a
// single-file program on the jars of scripts/install-test-deps.sh), on every
// target that serves ConsumerGroupHeartbeat v1 (the sidecar, Apache Kafka
// 4.4 when it runs): three members split six partitions with no overlap; a
// fourth joins and partitions move incrementally (the three only give
// partitions up); the fourth is SIGKILLed and its partitions move after the
// session timeout; every record is consumed.

const (
	cpPartitions = 6
	cpPerPart    = 20
)

// cpMember is one Java consumer and what its events say it owns.
type cpMember struct {
	name  string
	cmd   *exec.Cmd
	stdin io.WriteCloser
	mu    sync.Mutex
	owned map[int32]bool
	errs  []string
}

func (m *cpMember) ownedList() []int32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []int32
	for p := range m.owned {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// cpRecords counts consumed records per (partition, offset).
type cpRecords struct {
	mu   sync.Mutex
	seen map[[2]int64]int
}

func (r *cpRecords) covered(upto int64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for p := range int64(cpPartitions) {
		for o := range upto {
			if r.seen[[2]int64{p, o}] == 0 {
				return false
			}
		}
	}
	return true
}

// cpClient starts one member program: the Java one (javacg) or the
// confluent-kafka one (python/consumer_protocol.py).
type cpClient func(ctx context.Context, t *testing.T, tg Target, topic, group string) *exec.Cmd

func cpJava(ctx context.Context, t *testing.T, tg Target, topic, group string) *exec.Cmd {
	src, err := filepath.Abs(filepath.Join("javacg", "ConsumerProtocol.java"))
	if err != nil {
		t.Fatal(err)
	}
	return exec.CommandContext(ctx, "java", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-cp", filepath.Join(javaDir(), "lib", "*"), src, tg.Bootstrap, topic, group)
}

func cpConfluent(ctx context.Context, t *testing.T, tg Target, topic, group string) *exec.Cmd {
	src, err := filepath.Abs(filepath.Join("python", "consumer_protocol.py"))
	if err != nil {
		t.Fatal(err)
	}
	return exec.CommandContext(ctx, filepath.Join(pythonVenv(), "bin", "python"), src, tg.Bootstrap, topic, group)
}

func startCPMember(t *testing.T, ctx context.Context, client cpClient, tg Target, topic, group, name string, recs *cpRecords) *cpMember {
	t.Helper()
	var err error
	cmd := client(ctx, t, tg, topic, group)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.Stderr = os.Stderr
	m := &cpMember{name: name, cmd: cmd, owned: map[int32]bool{}}
	if m.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var ev struct {
				Event string  `json:"event"`
				P     []int64 `json:"p"`
				Error string  `json:"error"`
			}
			if json.Unmarshal(sc.Bytes(), &ev) != nil {
				continue // kafka-clients' own logging
			}
			m.mu.Lock()
			switch ev.Event {
			case "assigned":
				for _, p := range ev.P {
					m.owned[int32(p)] = true
				}
			case "revoked":
				for _, p := range ev.P {
					delete(m.owned, int32(p))
				}
			case "record":
				recs.mu.Lock()
				recs.seen[[2]int64{ev.P[0], ev.P[1]}]++
				recs.mu.Unlock()
			case "error":
				m.errs = append(m.errs, ev.Error)
			}
			m.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = m.stdin.Close() // the member leaves the group and exits
		<-done
		_ = cmd.Wait()
	})
	return m
}

// cpSplit reports whether the members own every partition once, each its
// share (the counts differ by at most one). A split that covers every
// partition but is not balanced is a reconciliation under way (a member
// has not yet revoked what the target moves to another), not the end.
func cpSplit(ms []*cpMember) (bool, string) {
	seen := map[int32]string{}
	state := ""
	least, most := cpPartitions, 0
	owned := make([][]int32, len(ms))
	for i, m := range ms {
		owned[i] = m.ownedList()
		state += fmt.Sprintf("%s=%v ", m.name, owned[i])
		least, most = min(least, len(owned[i])), max(most, len(owned[i]))
	}
	if least == 0 || most-least > 1 {
		return false, state
	}
	for i, m := range ms {
		for _, p := range owned[i] {
			if o, ok := seen[p]; ok {
				return false, state + fmt.Sprintf("(partition %d owned by %s and %s)", p, o, m.name)
			}
			seen[p] = m.name
		}
	}
	return len(seen) == cpPartitions, state
}

func cpWait(t *testing.T, ctx context.Context, what string, cond func() (bool, string)) {
	t.Helper()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	last := ""
	for {
		ok, state := cond()
		if ok {
			return
		}
		last = state
		select {
		case <-ctx.Done():
			t.Fatalf("%s: not reached; last: %s", what, last)
		case <-tick.C:
		}
	}
}

func cpProduce(t *testing.T, tg Target, topic string) {
	t.Helper()
	cl := newKgo(t, tg, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.DefaultProduceTopic(topic))
	var rs []*kgo.Record
	for p := range int32(cpPartitions) {
		for i := range cpPerPart {
			rs = append(rs, &kgo.Record{Partition: p, Value: fmt.Appendf(nil, "%d-%d", p, i)})
		}
	}
	if err := cl.ProduceSync(testCtx(t, 30*time.Second), rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// servesConsumerProtocol reports whether tg advertises ConsumerGroupHeartbeat v1.
func servesConsumerProtocol(t *testing.T, tg Target) bool {
	t.Helper()
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(testCtx(t, 10*time.Second), newKgo(t, tg))
	if err != nil {
		t.Fatalf("%s: ApiVersions: %v", tg.Name, err)
	}
	for _, k := range resp.ApiKeys {
		if k.ApiKey == kmsg.ConsumerGroupHeartbeat.Int16() && k.MaxVersion >= 1 {
			return true
		}
	}
	return false
}

func TestConsumerProtocolJava(t *testing.T) {
	javaReady(t)
	cpScenario(t, cpJava)
}

// TestConsumerProtocolConfluent is the same scenario with confluent-kafka
// (Python, librdkafka's group.protocol=consumer).
func TestConsumerProtocolConfluent(t *testing.T) {
	pythonReady(t)
	cpScenario(t, cpConfluent)
}

func cpScenario(t *testing.T, client cpClient) {
	for _, tg := range targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			if !servesConsumerProtocol(t, tg) {
				if tg.Sidecar || tg.Kafka {
					t.Fatalf("%s does not serve ConsumerGroupHeartbeat v1", tg.Name)
				}
				t.Skipf("%s does not serve the consumer group protocol", tg.Name)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			topic := uniqueTopic("cgp")
			group := topic + "-g"
			createTopic(t, tg, topic, cpPartitions)
			cpProduce(t, tg, topic)
			recs := &cpRecords{seen: map[[2]int64]int{}}
			var ms []*cpMember
			for i := range 3 {
				ms = append(ms, startCPMember(t, ctx, client, tg, topic, group, fmt.Sprint("m", i), recs))
			}
			cpWait(t, ctx, "three members split the partitions", func() (bool, string) { return cpSplit(ms) })
			before := map[string][]int32{}
			for _, m := range ms {
				before[m.name] = m.ownedList()
				if len(before[m.name]) != 2 {
					t.Fatalf("%s owns %v, want 2 of 6", m.name, before[m.name])
				}
			}
			ms = append(ms, startCPMember(t, ctx, client, tg, topic, group, "m3", recs))
			cpWait(t, ctx, "four members split the partitions", func() (bool, string) { return cpSplit(ms) })
			for _, m := range ms[:3] {
				for _, p := range m.ownedList() {
					if !slices.Contains(before[m.name], p) {
						t.Fatalf("%s gained partition %d (had %v): only the new member gains", m.name, p, before[m.name])
					}
				}
			}
			cpProduce(t, tg, topic)
			cpWait(t, ctx, "every record consumed", func() (bool, string) {
				return recs.covered(2 * cpPerPart), fmt.Sprint(len(recs.seen), " records")
			})

			// SIGKILL one member: after the session timeout (45 s, Kafka's
			// default on both targets) its partitions move to the others.
			_ = syscall.Kill(-ms[3].cmd.Process.Pid, syscall.SIGKILL)
			killed := time.Now()
			ms = ms[:3]
			cpWait(t, ctx, "the three survivors own every partition", func() (bool, string) { return cpSplit(ms) })
			t.Logf("%s: the killed member's partitions moved %v after the SIGKILL", tg.Name, time.Since(killed).Round(time.Second))
			cpDescribeTool(t, tg, group)
			cpProduce(t, tg, topic)
			cpWait(t, ctx, "every record consumed after the kill", func() (bool, string) {
				return recs.covered(3 * cpPerPart), fmt.Sprint(len(recs.seen), " records")
			})
			for _, m := range ms {
				if len(m.errs) > 0 {
					t.Errorf("%s: %v", m.name, m.errs)
				}
			}
		})
	}
}

// cpDescribeTool checks, when Kafka 4's tools are installed, that
// kafka-consumer-groups --describe --members shows the three members of the
// consumer-protocol group and their six partitions.
func cpDescribeTool(t *testing.T, tg Target, group string) {
	t.Helper()
	version := kafka4Version()
	if _, err := os.Stat(filepath.Join(KafkaCacheDir(version), "mainclasses")); err != nil {
		t.Logf("kafka-consumer-groups not checked: the Kafka %s tools are not installed", version)
		return
	}
	out := runKafkaTool(t, version, 90*time.Second, "consumer-groups", "--bootstrap-server", tg.Bootstrap, "--describe", "--group", group, "--members")
	members, parts := 0, 0
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) >= 5 && f[0] == group {
			members++
			n, _ := strconv.Atoi(f[len(f)-1])
			parts += n
		}
	}
	t.Logf("%s: kafka-consumer-groups --describe --members shows %d members owning %d partitions", tg.Name, members, parts)
	if members != 3 || parts != cpPartitions {
		t.Errorf("kafka-consumer-groups --describe --members: %d members, %d partitions, want 3 and %d:\n%s", members, parts, cpPartitions, out)
	}
}
