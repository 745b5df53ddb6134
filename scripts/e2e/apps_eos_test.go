package e2e

// Kafka Streams with processing.guarantee=exactly_once_v2 (issue 25's first
// acceptance item): the word count of scripts/e2e/apps runs as two
// instances, each behind its own sidecar of one coordination domain (peer
// link on, one `kafka-iggy embedded-iggy`), the group coordinated by the
// sidecar that is killed. Mid-stream one instance and its sidecar are
// SIGKILLed and started again (same listener address, same state dir, so the
// same transactional ids: the restarted producer fences its zombie). A
// read_committed consumer then sees every word's exact count, and no
// committed count of the output or of the changelog ever exceeds the truth
// or goes backwards (no double counting visible to read_committed). Against
// Apache Kafka 4.4.0 (KAFKA_IGGY_E2E_KAFKA=1) the same runs on one broker
// with only the instance killed.

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafka-iggy/kafka-iggy/bridge/cluster"
)

// eosSide is where the two instances connect: a broker, or two sidecars.
type eosSide struct {
	name string
	boot [2]string
	// kill SIGKILLs the sidecar of instance i (nil: no sidecar to kill).
	kill func(i int)
	// restart starts the sidecar of instance i again on its address.
	restart func(i int)
	// appID returns a fresh application id (for the sidecar: one whose
	// group is coordinated by sidecar 1, the one killed).
	appID func() string
}

func TestKafkaStreamsExactlyOnce(t *testing.T) {
	dir := appsReady(t, kafka4Version())
	for _, tg := range appTargets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			var side eosSide
			if tg.Sidecar {
				side = eosSidecars(t)
			} else {
				side = eosSide{name: tg.Name, boot: [2]string{tg.Bootstrap, tg.Bootstrap},
					appID: func() string { return uniqueTopic("eos") }}
			}
			eosWordCount(t, dir, side)
		})
	}
}

// eosSidecars starts one embedded Iggy server and two sidecars of one
// domain on it, each listening on a fixed loopback port.
func eosSidecars(t *testing.T) eosSide {
	t.Helper()
	bin := buildSidecarBinary(t)
	iggyAddr := acrossProc(t, bin, nil, "embedded Iggy server listening", "listen", "embedded-iggy", "--listen", "127.0.0.1:0")
	var side eosSide
	side.name = "sidecar"
	envs := [2][]string{}
	logs := [2]*acrossLog{}
	start := func(i int) {
		_, logs[i] = acrossProcLog(t, bin, envs[i], "ready for Kafka clients", "kafka_address", "serve")
	}
	for i := range 2 {
		side.boot[i] = fmt.Sprintf("127.0.0.1:%d", freePort(t))
		envs[i] = []string{
			"KAFKA_IGGY_EMBEDDED__MODE=off",
			"KAFKA_IGGY_IGGY__ADDRESS=" + iggyAddr,
			"KAFKA_IGGY_LISTENER__ADDRESS=" + side.boot[i],
			"KAFKA_IGGY_ADMIN__ADDRESS=127.0.0.1:0",
			"KAFKA_IGGY_PEERS__ADDRESS=127.0.0.1:0",
			"KAFKA_IGGY_PEERS__SECRET=" + acrossSecret,
			"KAFKA_IGGY_LOG__FORMAT=json",
		}
		start(i)
	}
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for i, l := range logs {
			l.mu.Lock()
			for _, line := range l.lines {
				if lv := line["level"]; lv == "warn" || lv == "error" || strings.Contains(fmt.Sprint(line["message"]), "transaction") {
					b, _ := json.Marshal(line)
					t.Logf("sidecar %d: %s", i, b)
				}
			}
			l.mu.Unlock()
		}
	})
	side.kill = func(i int) {
		_ = logs[i].cmd.Process.Signal(syscall.SIGKILL)
		_ = logs[i].cmd.Wait()
	}
	side.restart = start
	side.appID = func() string {
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
			for range 500 {
				if id := uniqueTopic("eos"); logs[1].owns(cluster.Shard(id, cluster.DefaultShards)) && !logs[0].owns(cluster.Shard(id, cluster.DefaultShards)) {
					return id
				}
			}
			time.Sleep(200 * time.Millisecond) // the shards are being assigned
		}
		t.Fatal("sidecar 1 owns no shard")
		return ""
	}
	return side
}

// kill SIGKILLs an app's process group and waits for it to end.
func (a *javaApp) kill() {
	_ = syscall.Kill(-a.cmd.Process.Pid, syscall.SIGKILL)
	<-a.done
}

// running reports whether the app printed "running" (RUNNING at least once).
func (a *javaApp) running() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return strings.Contains(a.out.String(), "-> RUNNING")
}

// failed reports whether the app went to ERROR.
func (a *javaApp) failed() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return strings.Contains(a.out.String(), "-> ERROR") || strings.Contains(a.out.String(), "-> PENDING_ERROR")
}

func eosWordCount(t *testing.T, dir string, side eosSide) {
	tg := Target{Name: side.name, Bootstrap: side.boot[0]}
	app := side.appID()
	in, out := app+"-in", app+"-out"
	createTopic(t, tg, in, 4)
	createTopic(t, tg, out, 4)
	ctx := testCtx(t, 12*time.Minute)
	states := [2]string{t.TempDir(), t.TempDir()}
	want := map[string]int64{}
	p := newKgo(t, tg)
	produce := func(lines []string) error {
		var rs []*kgo.Record
		for i, l := range lines {
			rs = append(rs, &kgo.Record{Topic: in, Key: []byte(fmt.Sprint(i)), Value: []byte(l)})
		}
		return p.ProduceSync(ctx, rs...).FirstErr()
	}
	startInst := func(i int) *javaApp {
		return startJavaApp(t, streamsArgs(dir, side.boot[i], app, states[i], in, out, "exactly_once_v2")...)
	}

	if err := produce(wordLines(1, 600, want)); err != nil {
		t.Fatal(err)
	}
	apps := [2]*javaApp{startInst(0), startInst(1)}
	output := func() string { return "instance 0:\n" + apps[0].output() + "\ninstance 1:\n" + apps[1].output() }

	// Mid-stream: both instances RUNNING and a first committed count out.
	rc := newKgo(t, tg, kgo.ConsumeTopics(out), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	first := time.Now()
	for seen := false; !seen || !apps[0].running() || !apps[1].running(); {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		seen = seen || rc.PollRecords(pctx, 1).NumRecords() > 0
		cancel()
		for i, a := range apps {
			select {
			case <-a.done: // e.g. "usage": the compiled app predates the GUARANTEE argument
				t.Fatalf("%s: instance %d exited (scripts/kafka/install.sh compiles the app)\n%s", side.name, i, output())
			default:
			}
		}
		if ctx.Err() != nil || time.Since(first) > 4*time.Minute {
			t.Fatalf("%s: no committed count within 4 min\n%s", side.name, output())
		}
	}
	t.Logf("%s: both instances running, first committed count after %v", side.name, time.Since(first).Round(time.Second))

	// Both instances hold partitions (the group as its coordinator sees it).
	adm := kadm.NewClient(newKgo(t, tg))
	for {
		gs, err := adm.DescribeGroups(ctx, app)
		members, holding := 0, 0
		if err == nil {
			for _, m := range gs[app].Members {
				members++
				if ca, ok := m.Assigned.AsConsumer(); ok && len(ca.Topics) > 0 {
					holding++
				}
			}
		}
		if members == 2 && holding == 2 {
			break
		}
		if ctx.Err() != nil || time.Since(first) > 4*time.Minute {
			t.Fatalf("%s: the group %s has %d members, %d holding partitions (%v)\n%s", side.name, app, members, holding, err, output())
		}
		time.Sleep(200 * time.Millisecond) // the group settles on its own
	}

	// More input; mid-stream (new committed counts coming out while the
	// input still flows) instance 1 and its sidecar die and come back.
	var wg sync.WaitGroup
	more := wordLines(2, 2000, want)
	fed := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; len(more) > 0; i++ {
			n := min(50, len(more))
			if err := produce(more[:n]); err != nil {
				t.Errorf("producing the input: %v", err)
				return
			}
			more = more[n:]
			if i == 4 {
				close(fed)
			}
			time.Sleep(100 * time.Millisecond) // pacing the input over the outage
		}
	}()
	<-fed
	for fresh := 0; fresh < 4; {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fresh += rc.PollFetches(pctx).NumRecords()
		cancel()
		if ctx.Err() != nil {
			t.Fatalf("%s: no new committed counts after more input\n%s", side.name, output())
		}
	}
	apps[1].kill()
	what := "instance 1"
	if side.kill != nil {
		side.kill(1)
		side.restart(1)
		what += " and its sidecar"
	}
	apps[1] = startInst(1)
	t.Logf("%s: %s SIGKILLed mid-stream and started again", side.name, what)
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	if err := produce(wordLines(3, 300, want)); err != nil {
		t.Fatal(err)
	}

	took := awaitCommittedCounts(t, tg, out, want, 6*time.Minute, output)
	t.Logf("%s: exact committed counts %v after the restart", side.name, took.Round(time.Second))
	// The changelog as read_committed sees it (the count store's values).
	awaitCommittedCounts(t, tg, app+"-counts-changelog", want, time.Minute, output)
	if txs, err := adm.ListTransactions(ctx, nil, nil); err == nil {
		for _, tx := range txs.Sorted() {
			if strings.HasPrefix(tx.TxnID, app) {
				t.Logf("%s: transactional id %s: producer %d, state %s", side.name, tx.TxnID, tx.ProducerID, tx.State)
			}
		}
	} else {
		t.Logf("%s: ListTransactions: %v", side.name, err)
	}
	// Both instances lived through it (a Streams thread dying on an
	// unexpected answer leaves the other instance the whole work).
	for i, a := range apps {
		select {
		case <-a.done:
			t.Fatalf("%s: instance %d exited\n%s", side.name, i, output())
		default:
		}
		if a.failed() {
			t.Fatalf("%s: instance %d went to ERROR\n%s", side.name, i, output())
		}
	}
	apps[0].stop(t)
	apps[1].stop(t)
}

// awaitCommittedCounts reads topic read_committed from the start until the
// latest count of every word equals want, or fails after d. A count is an
// 8-byte big-endian value. Every committed count seen must
// be at most the word's true total and never below the word's previous one.
func awaitCommittedCounts(t *testing.T, tg Target, topic string, want map[string]int64, d time.Duration, output func() string) time.Duration {
	t.Helper()
	start := time.Now()
	cl := newKgo(t, tg, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	got := map[string]int64{}
	records := 0
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
			t.Fatalf("%s: read_committed counts in %s after %v (%d records): %v, want %v\n%s", tg.Name, topic, d, records, got, want, output())
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Logf("%s: fetch %s: %v", tg.Name, topic, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if len(r.Value) != 8 {
				t.Fatalf("%s: %s: a value of %d bytes, want 8", tg.Name, topic, len(r.Value))
			}
			records++
			w, n := string(r.Key), int64(binary.BigEndian.Uint64(r.Value))
			if n > want[w] {
				t.Fatalf("%s: %s: committed count %d of %q at %d/%d exceeds its truth %d (double counting)\n%s", tg.Name, topic, n, w, r.Partition, r.Offset, want[w], output())
			}
			if n < got[w] {
				t.Fatalf("%s: %s: committed count of %q went back from %d to %d at %d/%d\n%s", tg.Name, topic, w, got[w], n, r.Partition, r.Offset, output())
			}
			got[w] = n
		})
	}
	t.Logf("%s: %s: %d committed counts read, all within the truth", tg.Name, topic, records)
	return time.Since(start)
}
