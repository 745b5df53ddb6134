package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

// windowProxy is a TCP proxy between a sidecar and its Iggy server that
// reads the sidecar's request frames (256-byte header, SEND_MESSAGES body:
// stream, topic, batch) and, once armed for a transactional id, lets through
// that id's Prepare record to the decision log and the first k end markers
// of the data topic, then SIGKILLs the sidecar the moment the marker k+1
// arrives (that frame is never forwarded) and drops every connection. The
// sidecar writes its markers one at a time, each after the previous one's
// reply, so exactly k markers are in Iggy when it dies.
type windowProxy struct {
	t        *testing.T
	ln       net.Listener
	upstream string
	logRef   iggy.TopicRef // the decision log
	data     iggy.TopicRef // the transactions' topic

	mu       sync.Mutex
	conns    []net.Conn // every connection of the current sidecar, both ends
	proc     *sidecarProc
	armed    bool
	id       string // the transactional id to kill inside
	k        int    // markers to let through after its Prepare
	prepared bool
	markers  int
	fired    chan struct{}
}

func startWindowProxy(t *testing.T, upstream string, logRef, data iggy.TopicRef) *windowProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	w := &windowProxy{t: t, ln: ln, upstream: upstream, logRef: logRef, data: data}
	go w.accept()
	t.Cleanup(func() { _ = ln.Close(); w.dropAll() })
	return w
}

func (w *windowProxy) addr() string { return w.ln.Addr().String() }

// arm makes the next Prepare of id, then marker k+1, kill p.
func (w *windowProxy) arm(p *sidecarProc, id string, k int) chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.proc, w.armed, w.id, w.k, w.prepared, w.markers = p, true, id, k, false, 0
	w.fired = make(chan struct{})
	return w.fired
}

// firedCh is closed when the armed kill has landed.
func (w *windowProxy) firedCh() chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.fired
}

func (w *windowProxy) dropAll() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range w.conns {
		_ = c.Close()
	}
	w.conns = nil
}

func (w *windowProxy) accept() {
	for {
		c, err := w.ln.Accept()
		if err != nil {
			return
		}
		u, err := net.Dial("tcp", w.upstream)
		if err != nil {
			_ = c.Close()
			continue
		}
		w.mu.Lock()
		w.conns = append(w.conns, c, u)
		w.mu.Unlock()
		go func() { _, _ = io.Copy(c, u); _ = c.Close() }()
		go w.forward(c, u)
	}
}

// forward copies c's request frames to u, frame by frame, looking at each.
func (w *windowProxy) forward(c, u net.Conn) {
	defer func() { _ = c.Close(); _ = u.Close() }()
	hdr := make([]byte, icodec.HeaderSize)
	for {
		if _, err := io.ReadFull(c, hdr); err != nil {
			return
		}
		size, _, err := icodec.PeekFrame(hdr, 0)
		if err != nil {
			w.t.Errorf("window proxy: a request frame the sidecar sent does not parse: %v", err)
			return
		}
		frame := make([]byte, size)
		copy(frame, hdr)
		if _, err := io.ReadFull(c, frame[icodec.HeaderSize:]); err != nil {
			return
		}
		if !w.pass(frame) {
			return
		}
		if _, err := u.Write(frame); err != nil {
			return
		}
	}
}

// pass reports whether frame goes on to Iggy; on the armed marker it kills
// the sidecar first.
func (w *windowProxy) pass(frame []byte) bool {
	var h icodec.RequestHeader
	if _, err := h.DecodeFrom(frame); err != nil || h.Operation != icodec.OperationSendMessages {
		return true
	}
	var req icodec.SendMessagesRequest
	if _, err := req.DecodeFrom(frame[icodec.HeaderSize:]); err != nil {
		w.t.Errorf("window proxy: a SEND_MESSAGES body does not parse: %v", err)
		return true
	}
	stream, topic := string(req.StreamID.Value), string(req.TopicID.Value)
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.armed {
		return true
	}
	it := icodec.NewMessageIter(req.Batch)
	for it.Next() {
		m := it.Message()
		switch {
		case stream == w.logRef.Stream && topic == w.logRef.Topic && len(m.Payload) > 1:
			var rec struct {
				ID    string `json:"id"`
				State int    `json:"s"`
			}
			if json.Unmarshal(m.Payload[1:], &rec) == nil && rec.ID == w.id && (rec.State == 2 || rec.State == 3) {
				w.prepared = true // forwarded below: the decision is in Iggy before any marker
			}
		case stream == w.data.Stream && topic == w.data.Topic && w.prepared && hasHeader(m.Headers, "kafka.ctl"):
			if w.markers < w.k {
				w.markers++
				continue
			}
			if err := w.proc.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				w.t.Errorf("window proxy: SIGKILL: %v", err)
			}
			for _, c := range w.conns {
				_ = c.Close()
			}
			w.conns, w.armed = nil, false
			close(w.fired)
			return false
		}
	}
	return true
}

// hasHeader reports whether an Iggy user-headers block has key.
func hasHeader(block []byte, key string) bool {
	it := icodec.NewHeaderIter(block)
	for it.Next() {
		if _, k := it.Key(); string(k) == key {
			return true
		}
	}
	return false
}

// headerValue returns key's value in an Iggy user-headers block.
func headerValue(block []byte, key string) []byte {
	it := icodec.NewHeaderIter(block)
	for it.Next() {
		if _, k := it.Key(); string(k) == key {
			_, v := it.Value()
			return v
		}
	}
	return nil
}

// TestTransactionsSurviveKillInCommitWindow is the acceptance item of issue
// 25: the transaction coordinator's sidecar is SIGKILLed between EndTxn's
// decision and its last marker, 20 times. A proxy in front of the Iggy
// server (windowProxy) makes each kill land inside the window: after the
// Prepare record and k of the transaction's N markers (N = 8..16
// partitions, k = 0..N-1, commit or abort). After each kill the sidecar
// restarts on the same Iggy and its first sweep finishes the transaction;
// then a read_committed consumer reading everything from the start sees
// every transaction so far whole (a committed one all N records, an
// aborted one none), and at the end a read of the raw Iggy partitions
// shows each killed transaction's N partitions marked with its decision
// and the decision log Prepare then Complete of the same outcome.
func TestTransactionsSurviveKillInCommitWindow(t *testing.T) {
	if testing.Short() {
		t.Skip("starts sidecar processes")
	}
	const topic, parts, rounds = "txn-window", 16, 20
	lib := javaLib(t)
	iggyAddr := freeAddr(t)
	startIggyProc(t, iggyAddr, t.TempDir())
	data := iggy.TopicRef{Stream: "kafka", Topic: topic}
	proxy := startWindowProxy(t, iggyAddr, iggy.TopicRef{Stream: "__kafka_iggy", Topic: "transactions"}, data)
	listen := freeAddr(t)
	start := func() *sidecarProc {
		return startServeProc(t, "KAFKA_IGGY_EMBEDDED__MODE=off", "KAFKA_IGGY_IGGY__ADDRESS="+proxy.addr(),
			"KAFKA_IGGY_LISTENER__ADDRESS="+listen, "KAFKA_IGGY_TRANSACTIONS__CHECK_INTERVAL=500ms",
			"KAFKA_IGGY_TRANSACTIONS__SNAPSHOT_EVERY=10") // restarts start from a snapshot of the decision log
	}
	ctx, cancel := context.WithTimeout(context.Background(), 170*time.Second)
	defer cancel()
	p := start()
	defer func() {
		if t.Failed() {
			for _, l := range strings.Split(p.logText(), "\n") {
				if strings.Contains(l, "transaction") || strings.Contains(l, `"warn"`) {
					t.Logf("sidecar: %s", l)
				}
			}
		}
	}()
	admin, err := kgo.NewClient(kgo.SeedBrokers(p.kafka))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kadm.NewClient(admin).CreateTopic(ctx, parts, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	admin.Close()

	type plan struct {
		id     string
		n, k   int
		commit bool
		java   bool
	}
	var plans []plan
	// A read_committed consumer that runs through every kill and restart:
	// no record of an aborted transaction may reach it at any time.
	var (
		liveMu sync.Mutex
		live   = map[string]int{}
	)
	live1, err := kgo.NewClient(kgo.SeedBrokers(listen), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.RetryTimeout(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	lctx, stopLive := context.WithCancel(ctx)
	liveDone := make(chan struct{})
	go func() {
		defer close(liveDone)
		for lctx.Err() == nil {
			live1.PollRecords(lctx, 1000).EachRecord(func(r *kgo.Record) {
				liveMu.Lock()
				live[string(r.Value)]++
				liveMu.Unlock()
			})
		}
	}()
	defer func() { stopLive(); <-liveDone; live1.Close() }()
	landed := map[int]int{} // k -> kills that landed after k markers
	fromSnapshot := 0       // restarts that loaded a decision-log snapshot
	for round := range rounds {
		n := 8 + rand.IntN(parts-8+1)
		k := rand.IntN(n)
		switch round { // the window's two ends, whatever the dice say
		case 0:
			k = 0
		case 1:
			k = n - 1
		}
		// Rounds 2, 3, 12 and 13 use the Java producer (kafka-clients 4.x).
		java := round%10 == 2 || round%10 == 3
		pl := plan{id: fmt.Sprintf("txw-%d", round), n: n, k: k, commit: round%2 == 0, java: java}
		plans = append(plans, pl)

		var ended <-chan error // EndTxn's outcome
		var stop func()        // ends the producer
		if pl.java {
			ended, stop = javaWindowTxn(ctx, t, lib, listen, topic, pl.id, n, pl.commit, func() { proxy.arm(p, pl.id, pl.k) })
		} else {
			ended, stop = kgoWindowTxn(ctx, t, listen, topic, pl.id, n, pl.commit, func() { proxy.arm(p, pl.id, pl.k) })
		}
		select {
		case <-proxy.firedCh():
			landed[pl.k]++
		case err := <-ended:
			t.Fatalf("%s: EndTxn answered (%v) without the kill landing after %d of %d markers", pl.id, err, pl.k, n)
		case <-ctx.Done():
			t.Fatalf("%s: the kill never landed", pl.id)
		}
		<-p.done
		stop()

		p = start()
		waitFor(t, 20*time.Second, pl.id+" finished by the restarted sidecar", func() error {
			for _, l := range strings.Split(p.logText(), "\n") {
				if strings.Contains(l, "finished a decided transaction") && strings.Contains(l, `"`+pl.id+`"`) {
					return nil
				}
			}
			return errors.New("not yet")
		})
		if strings.Contains(p.logText(), "loaded the decision log's snapshot") { // before that first sweep's read
			fromSnapshot++
		}
		// A sentinel transaction on every partition: a read_committed read
		// that reaches it has passed every earlier transaction.
		sentinel := fmt.Sprintf("sentinel-%d", round)
		commitOne(ctx, t, listen, topic, "txw-sentinel", sentinel, parts)
		seen := readCommittedUntil(ctx, t, listen, topic, sentinel, parts)
		for _, q := range plans {
			got := 0
			for j := range q.n {
				got += seen[fmt.Sprintf("%s/%d", q.id, j)]
			}
			want := 0
			if q.commit {
				want = q.n
			}
			if got != want {
				t.Fatalf("after round %d: transaction %s (%d partitions, commit %v, killed after %d markers): %d records visible to read_committed, want %d",
					round, q.id, q.n, q.commit, q.k, got, want)
			}
		}
	}

	// The live consumer catches up (the last sentinel), then holds every
	// committed transaction whole and no aborted record.
	waitFor(t, 30*time.Second, "the live consumer reading the last sentinel everywhere", func() error {
		liveMu.Lock()
		defer liveMu.Unlock()
		if n := live[fmt.Sprintf("sentinel-%d", rounds-1)]; n < parts {
			return fmt.Errorf("%d of %d", n, parts)
		}
		return nil
	})
	liveMu.Lock()
	for _, q := range plans {
		for j := range q.n {
			v := fmt.Sprintf("%s/%d", q.id, j)
			if q.commit && live[v] == 0 || !q.commit && live[v] != 0 {
				t.Errorf("live read_committed consumer: %s (commit %v) seen %d times", v, q.commit, live[v])
			}
		}
	}
	liveMu.Unlock()

	// The raw log: every killed transaction's partitions carry its
	// decision's marker (a marker written before the kill and again by the
	// sweep is harmless), none the other's; the decision log holds its
	// Prepare then its Complete.
	cfg := iggy.DefaultConfig()
	cfg.Address, cfg.PoolSize = iggyAddr, 1
	raw, err := iggy.New(cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if err := raw.Start(ctx); err != nil {
		t.Fatal(err)
	}
	reader := icodec.Consumer{Kind: icodec.ConsumerKindConsumer, ID: icodec.Identifier{Kind: icodec.IdentifierKindString, Value: []byte("txw-raw")}}
	type pmark struct {
		part int
		mark string
	}
	dataMark := map[string]pmark{}    // record value -> its kafka.t
	dataOffset := map[string]uint64{} // record value -> its offset
	markers := map[pmark][]byte{}     // (partition, kafka.t) -> the ctl of every marker
	lastMarker := map[pmark]uint64{}  // (partition, kafka.t) -> the last marker's offset
	for j := range parts {
		var next uint64
		for {
			pl, err := raw.Poll(ctx, &icodec.PollMessagesRequest{Consumer: reader, StreamID: data.StreamID(), TopicID: data.TopicID(),
				PartitionID: icodec.OptionalPartition{Present: true, PartitionID: uint32(j)},
				Strategy:    icodec.PollingStrategy{Kind: icodec.PollingKindOffset, Value: next}, Count: 1000})
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			it := pl.Messages()
			for it.Next() {
				m := it.Message()
				if m.Offset < next {
					continue
				}
				next, n = m.Offset+1, n+1
				key := pmark{j, string(headerValue(m.Headers, "kafka.t"))}
				if ctl := headerValue(m.Headers, "kafka.ctl"); len(ctl) == 1 {
					markers[key] = append(markers[key], ctl[0])
					lastMarker[key] = m.Offset
					continue
				}
				dataMark[string(m.Payload)], dataOffset[string(m.Payload)] = key, m.Offset
			}
			pl.Release()
			if n == 0 {
				break
			}
		}
	}
	duplicates := 0
	for _, q := range plans {
		want := byte('A')
		if q.commit {
			want = 'C'
		}
		for j := range q.n {
			v := fmt.Sprintf("%s/%d", q.id, j)
			key, ok := dataMark[v]
			if !ok || key.part != j {
				t.Errorf("raw log: record %s not found in partition %d", v, j)
				continue
			}
			ctls := markers[key]
			if len(ctls) == 0 || lastMarker[key] < dataOffset[v] {
				t.Errorf("raw log: %s partition %d: no marker after its record", q.id, j)
			}
			for _, c := range ctls {
				if c != want {
					t.Errorf("raw log: %s partition %d: marker %q, want %q", q.id, j, c, want)
				}
			}
			duplicates += len(ctls) - 1
		}
	}
	states := map[string][]int{}
	if _, err := raw.ReadLog(ctx, reader, proxy.logRef, 0, 1000, func(_ uint64, p []byte) {
		var rec struct {
			ID    string `json:"id"`
			State int    `json:"s"`
		}
		if len(p) > 1 && json.Unmarshal(p[1:], &rec) == nil {
			states[rec.ID] = append(states[rec.ID], rec.State)
		}
	}); err != nil {
		t.Fatal(err)
	}
	for _, q := range plans {
		prep, done := 3, 5 // PrepareAbort, CompleteAbort
		if q.commit {
			prep, done = 2, 4
		}
		s := states[q.id]
		i := slices.Index(s, prep)
		if i < 0 || !slices.Contains(s[i:], done) || slices.Contains(s, prep^1) || slices.Contains(s, done^1) {
			t.Errorf("decision log of %s: states %v, want Prepare %d then Complete %d and no other decision", q.id, s, prep, done)
		}
	}
	var ks []string
	for k := range 16 {
		if landed[k] > 0 {
			ks = append(ks, fmt.Sprintf("k=%d:%d", k, landed[k]))
		}
	}
	commits := 0
	for _, q := range plans {
		if q.commit {
			commits++
		}
	}
	javas := 0
	for _, q := range plans {
		if q.java {
			javas++
		}
	}
	t.Logf("%d SIGKILLs inside the commit window (%d commits, %d aborts; %d from the Java producer, %d from franz-go), markers written before the kill: %s; %d markers written twice (before the kill and by the sweep); %d restarts loaded a decision-log snapshot",
		rounds, commits, rounds-commits, javas, rounds-javas, strings.Join(ks, " "), duplicates, fromSnapshot)
	if fromSnapshot == 0 {
		t.Error("no restart loaded a decision-log snapshot (transactions.snapshot_every 10)")
	}
}

// commitOne commits a transaction of one record, value, in each of parts
// partitions of topic.
func commitOne(ctx context.Context, t *testing.T, seed, topic, id, value string, parts int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seed), kgo.TransactionalID(id), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for j := range parts {
		cl.Produce(ctx, &kgo.Record{Partition: int32(j), Value: []byte(value)}, nil)
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("%s: commit: %v", id, err)
	}
}

// readCommittedUntil reads topic read_committed from the start until it has
// seen until in all parts partitions; it returns how often each value was
// seen.
func readCommittedUntil(ctx context.Context, t *testing.T, seed, topic, until string, parts int) map[string]int {
	t.Helper()
	cons, err := kgo.NewClient(kgo.SeedBrokers(seed), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	seen := map[string]int{}
	waitFor(t, 30*time.Second, "the sentinel "+until+" read in every partition", func() error {
		pctx, pcancel := context.WithTimeout(ctx, time.Second)
		defer pcancel()
		cons.PollRecords(pctx, 1000).EachRecord(func(r *kgo.Record) { seen[string(r.Value)]++ })
		if seen[until] < parts {
			return fmt.Errorf("%d of %d", seen[until], parts)
		}
		return nil
	})
	return seen
}

// kgoWindowTxn runs one transaction with franz-go: a record "<id>/<j>" in
// each partition j < n, then arm(), then EndTxn in the background. ended
// gets EndTxn's outcome; stop closes the client.
func kgoWindowTxn(ctx context.Context, t *testing.T, seed, topic, id string, n int, commit bool, arm func()) (<-chan error, func()) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seed), kgo.TransactionalID(id), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.TransactionTimeout(60*time.Second),
		kgo.RetryTimeout(3*time.Second), kgo.RecordDeliveryTimeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	rs := make([]*kgo.Record, 0, n)
	for j := range n {
		rs = append(rs, &kgo.Record{Partition: int32(j), Value: []byte(fmt.Sprintf("%s/%d", id, j))})
	}
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatalf("%s: produce: %v", id, err)
	}
	arm()
	end := kgo.TryAbort
	if commit {
		end = kgo.TryCommit
	}
	ended := make(chan error, 1)
	ectx, ecancel := context.WithTimeout(ctx, 20*time.Second)
	go func() { ended <- cl.EndTransaction(ectx, end) }()
	return ended, func() { ecancel(); <-ended; cl.Close() }
}

// javaWindowTxn runs the same transaction with the Java producer
// (testdata/TxnWindowProducer.java): it sends, then arm(), then the
// producer commits or aborts. stop kills the JVM.
func javaWindowTxn(ctx context.Context, t *testing.T, lib, seed, topic, id string, n int, commit bool, arm func()) (<-chan error, func()) {
	t.Helper()
	verb := "abort"
	if commit {
		verb = "commit"
	}
	java := exec.Command("java", "-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", filepath.Join(lib, "*"),
		filepath.Join("testdata", "TxnWindowProducer.java"), seed, topic, id, strconv.Itoa(n), verb)
	stdin, err := java.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := java.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	java.Stderr = &stderr
	java.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := java.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	sent := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if sc.Text() == "sent" {
				close(sent)
			}
		}
		exited <- java.Wait()
	}()
	kill := func() { _ = syscall.Kill(-java.Process.Pid, syscall.SIGKILL) }
	select {
	case <-sent:
	case err := <-exited:
		t.Fatalf("%s: the Java producer exited before its records were sent: %v\n%s", id, err, stderr.String())
	case <-ctx.Done():
		kill()
		t.Fatalf("%s: the Java producer sent nothing", id)
	}
	arm()
	if _, err := io.WriteString(stdin, "go\n"); err != nil {
		t.Fatal(err)
	}
	ended := make(chan error, 1)
	go func() { ended <- <-exited }()
	return ended, func() { kill(); <-ended }
}
