package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestZombieAcrossSidecars (issue 25: "a zombie keeps sending: none of its
// records is visible to read_committed consumers"). Producer P1 with
// transactional id X talks to sidecar A, begins a transaction and writes;
// P2 with the same id, through sidecar B, calls InitProducerId: P1 is
// fenced and its transaction aborted (the abort marker lands in the
// partition). P1 keeps writing through A.
//
//   - Readers: A runs with transactions.producer_check 0, so its gate
//     never learns of the fence and admits the zombie's writes: they land
//     after the abort marker (a read_uncommitted consumer sees them, as it
//     would any record) and a read_committed consumer never does, while
//     P2's committed transaction is read once.
//   - Writers: sidecar C runs with the default check: a zombie writing
//     through it is refused (INVALID_PRODUCER_EPOCH) within the check.
func TestZombieAcrossSidecars(t *testing.T) {
	if testing.Short() {
		t.Skip("starts sidecar processes")
	}
	iggyAddr := freeAddr(t)
	startIggyProc(t, iggyAddr, t.TempDir())
	a := startClusterSidecar(t, iggyAddr, "KAFKA_IGGY_TRANSACTIONS__PRODUCER_CHECK=0s")
	b := startClusterSidecar(t, iggyAddr)
	c := startClusterSidecar(t, iggyAddr)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	client := func(p *sidecarProc, opts ...kgo.Opt) *kgo.Client {
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(p.kafka)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	producer := func(p *sidecarProc, id, topic string) *kgo.Client {
		return client(p, kgo.TransactionalID(id), kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation(),
			kgo.TransactionTimeout(60*time.Second), kgo.RequestRetries(0))
	}
	produce := func(cl *kgo.Client, v string) error {
		return cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr()
	}
	// fence begins P1's transaction through zombieVia, writes three
	// records, and initialises P2 with the same id through b.
	fence := func(id, topic string, zombieVia *sidecarProc) (p1, p2 *kgo.Client) {
		t.Helper()
		p1 = producer(zombieVia, id, topic)
		if err := p1.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			if err := produce(p1, fmt.Sprintf("z-%d", i)); err != nil {
				t.Fatalf("P1 before the fence: %v", err)
			}
		}
		p2 = producer(b, id, topic)
		if _, _, err := p2.ProducerID(ctx); err != nil { // InitProducerId: fences P1
			t.Fatalf("P2 InitProducerId: %v", err)
		}
		return p1, p2
	}
	commitP2 := func(p2 *kgo.Client) {
		t.Helper()
		if err := p2.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i := range 5 {
			if err := produce(p2, fmt.Sprintf("p2-%d", i)); err != nil {
				t.Fatalf("P2: %v", err)
			}
		}
		if err := p2.EndTransaction(ctx, kgo.TryCommit); err != nil {
			t.Fatalf("P2 commit: %v", err)
		}
	}
	// read reads topic from its start through sidecar via until every
	// record of P2 was seen, returning how often each value was read.
	read := func(via *sidecarProc, topic string, iso kgo.IsolationLevel, want func(map[string]int) error) map[string]int {
		t.Helper()
		cons := client(via, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(iso))
		seen := map[string]int{}
		waitFor(t, 30*time.Second, "the records read back", func() error {
			fs := cons.PollRecords(ctx, 100)
			fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)]++ })
			return want(seen)
		})
		return seen
	}
	allP2 := func(seen map[string]int) error {
		for i := range 5 {
			if seen[fmt.Sprintf("p2-%d", i)] == 0 {
				return fmt.Errorf("P2's records not all read: %v", seen)
			}
		}
		return nil
	}
	checkCommitted := func(seen map[string]int) {
		t.Helper()
		for v, n := range seen {
			if strings.HasPrefix(v, "z-") || n != 1 {
				t.Errorf("read_committed read %s %d times (all: %v)", v, n, seen)
			}
		}
	}

	t.Run("readers", func(t *testing.T) {
		const topic = "zombie-readers"
		p1, p2 := fence("tx-zombie-readers", topic, a)
		// A has no reason to doubt P1: its writes are admitted, after the
		// abort marker the fence wrote.
		for i := 3; i < 10; i++ {
			if err := produce(p1, fmt.Sprintf("z-%d", i)); err != nil {
				t.Fatalf("zombie write z-%d through A (no producer check) refused: %v", i, err)
			}
		}
		commitP2(p2)
		uncommitted := read(a, topic, kgo.ReadUncommitted(), func(seen map[string]int) error {
			if seen["z-9"] == 0 {
				return fmt.Errorf("z-9 not read: %v", seen)
			}
			return allP2(seen)
		})
		t.Logf("read_uncommitted (Kafka would have refused the zombie's writes): %v", uncommitted)
		for _, via := range []*sidecarProc{a, b} {
			checkCommitted(read(via, topic, kgo.ReadCommitted(), allP2))
		}
		// The Java consumer (Kafka 4.x's console consumer) reads the
		// partition until 4 s pass without a record.
		if got := javaConsume(t, a.kafka, topic, "read_committed"); !slices.Equal(got, []string{"p2-0", "p2-1", "p2-2", "p2-3", "p2-4"}) {
			t.Errorf("the Java consumer at read_committed read %v", got)
		}
	})

	t.Run("writers", func(t *testing.T) {
		const topic = "zombie-writers"
		p1, p2 := fence("tx-zombie-writers", topic, c)
		start := time.Now()
		admitted := 0
		var err error
		for time.Since(start) < 10*time.Second {
			if err = produce(p1, fmt.Sprintf("z-late-%d", admitted)); err != nil {
				break
			}
			admitted++
		}
		if !errors.Is(err, kerr.InvalidProducerEpoch) && !errors.Is(err, kerr.ProducerFenced) {
			t.Fatalf("the zombie's writes through C: %d admitted in %v, then %v (want INVALID_PRODUCER_EPOCH)", admitted, time.Since(start), err)
		}
		t.Logf("zombie refused through C after %v (%d writes admitted first): %v", time.Since(start), admitted, err)
		commitP2(p2)
		checkCommitted(read(c, topic, kgo.ReadCommitted(), allP2))
	})
}

// javaConsume reads partition 0 of topic from its start with Kafka 4.x's
// console consumer (scripts/kafka/run.sh, installed by
// scripts/install-test-deps.sh) at isolation level iso, until 4 s pass
// without a record, and returns the values read. Skips without the tools
// (fails in CI).
func javaConsume(t *testing.T, bootstrap, topic, iso string) []string {
	t.Helper()
	cache := os.Getenv("KAFKA_IGGY_CACHE")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache", "kafka-iggy")
	}
	_, jerr := exec.LookPath("java")
	if m, _ := filepath.Glob(filepath.Join(cache, "kafka-4.*", "mainclasses")); len(m) == 0 || jerr != nil {
		msg := "java or the Kafka 4.x tools missing; run scripts/install-test-deps.sh"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join("..", "..", "scripts", "kafka", "run.sh"), "console-consumer",
		"--bootstrap-server", bootstrap, "--topic", topic, "--partition", "0", "--offset", "earliest",
		"--isolation-level", iso, "--timeout-ms", "4000")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("console-consumer: %v\n%s", err, stderr.String())
	}
	return strings.Fields(string(out))
}
