package main

// The clients of a run, each bound to one sidecar as an app is to its pod's
// sidecar: idempotent producers (franz-go in this process, the Java client
// in a JVM) writing numbered records, key and value "ID-SEQUENCE", and a
// consumer group of franz-go members that commits after every poll and logs
// every assignment with its generation and every accepted commit.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func recordKey(producer string, seq int64) string {
	return fmt.Sprintf("%s-%09d", producer, seq)
}

// parseKey splits "ID-SEQUENCE"; ok is false for a record not of the run.
func parseKey(key string) (producer string, seq int64, ok bool) {
	i := strings.LastIndexByte(key, '-')
	if i <= 0 {
		return "", 0, false
	}
	seq, err := strconv.ParseInt(key[i+1:], 10, 64)
	if err != nil {
		return "", 0, false
	}
	return key[:i], seq, true
}

// goProducer is an idempotent franz-go producer (its defaults: acks=all,
// idempotent, retries without limit) writing rate records a second.
type goProducer struct {
	id   string
	cl   *kgo.Client
	stop context.CancelFunc
	done chan struct{}
}

func startGoProducer(ctx context.Context, j *journal, id, seed, topic string, rate int) (*goProducer, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seed), kgo.DefaultProduceTopic(topic), kgo.ClientID("fault-"+id),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProduceRequestTimeout(15*time.Second))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	p := &goProducer{id: id, cl: cl, stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		tick := time.NewTicker(time.Second / time.Duration(max(rate, 1)))
		defer tick.Stop()
		for seq := int64(0); ; seq++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			key := recordKey(id, seq)
			cl.Produce(context.Background(), &kgo.Record{Key: []byte(key), Value: []byte(key)}, func(r *kgo.Record, err error) {
				if err != nil {
					j.produceErr(id, key, err)
					return
				}
				j.ack(ack{Producer: id, Key: key, Partition: r.Partition, Offset: r.Offset, At: time.Now()})
			})
		}
	}()
	return p, nil
}

// finish stops producing and waits up to d for what is buffered.
func (p *goProducer) finish(d time.Duration) error {
	p.stop()
	<-p.done
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	err := p.cl.Flush(ctx)
	p.cl.Close()
	return err
}

// javaProducer is scripts/fault/java/FaultProducer.java in its own JVM.
type javaProducer struct {
	id    string
	cmd   *exec.Cmd
	stdin io.WriteCloser
	done  chan struct{}
}

// javaFaultDir is where install-test-deps.sh compiles the Java producer.
func javaFaultDir() string {
	if d := os.Getenv("KAFKA_IGGY_FAULT_JAVA_DIR"); d != "" {
		return d
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "kafka-iggy", "java-fault")
}

// javaLibDir holds kafka-clients and its dependencies (the e2e suite's).
func javaLibDir() string {
	if d := os.Getenv("KAFKA_IGGY_JAVA_DIR"); d != "" {
		return filepath.Join(d, "lib")
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "kafka-iggy", "java", "lib")
}

func startJavaProducer(j *journal, runDir, id, seed, topic string, rate int) (*javaProducer, error) {
	cp := filepath.Join(javaFaultDir(), "classes") + string(os.PathListSeparator) + filepath.Join(javaLibDir(), "*")
	cmd := exec.Command("java", "-Xmx256m", "-XX:+UseSerialGC", "-cp", cp, "FaultProducer", seed, topic, id, strconv.Itoa(rate))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	logf, err := os.Create(filepath.Join(runDir, id+".log"))
	if err != nil {
		return nil, err
	}
	cmd.Stderr = logf
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &javaProducer{id: id, cmd: cmd, stdin: stdin, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			f := strings.SplitN(sc.Text(), " ", 4)
			switch {
			case len(f) == 4 && f[0] == "ACK":
				part, err1 := strconv.ParseInt(f[1], 10, 32)
				off, err2 := strconv.ParseInt(f[2], 10, 64)
				if err1 == nil && err2 == nil {
					j.ack(ack{Producer: id, Key: f[3], Partition: int32(part), Offset: off, At: time.Now()})
				}
			case len(f) >= 2 && f[0] == "ERR":
				j.produceErr(id, f[1], errors.New(strings.Join(f[2:], " ")))
			}
		}
		_ = cmd.Wait()
		logf.Close()
	}()
	return p, nil
}

// finish closes the program's input (it then flushes and exits) and waits up
// to d, then kills it.
func (p *javaProducer) finish(d time.Duration) error {
	_ = p.stdin.Close()
	select {
	case <-p.done:
		if !p.cmd.ProcessState.Success() {
			return fmt.Errorf("java producer %s: %v", p.id, p.cmd.ProcessState)
		}
		return nil
	case <-time.After(d):
		p.kill()
		return fmt.Errorf("java producer %s did not finish within %s", p.id, d)
	}
}

func (p *javaProducer) kill() {
	if p.cmd.Process != nil {
		_ = p.cmd.Process.Kill()
	}
	<-p.done
}

// member is one franz-go member of the group, on one sidecar.
type member struct {
	name string
	cl   *kgo.Client
	stop context.CancelFunc
	done chan struct{}
}

func startMember(ctx context.Context, j *journal, name string, sidecar int, seed, group, topic string) (*member, error) {
	onAssigned := func(_ context.Context, cl *kgo.Client, m map[string][]int32) {
		_, gen := cl.GroupMetadata()
		ps := append([]int32(nil), m[topic]...)
		sort.Slice(ps, func(a, b int) bool { return ps[a] < ps[b] })
		j.assigned(assignment{Member: name, Sidecar: sidecar, Generation: gen, Partitions: ps, At: time.Now()})
	}
	onLost := func(_ context.Context, cl *kgo.Client, m map[string][]int32) {
		_, gen := cl.GroupMetadata()
		j.note("partitions_lost", map[string]any{"member": name, "generation": gen, "partitions": m[topic]})
	}
	onRevoked := func(_ context.Context, cl *kgo.Client, m map[string][]int32) {
		_, gen := cl.GroupMetadata()
		j.note("partitions_revoked", map[string]any{"member": name, "generation": gen, "partitions": m[topic]})
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seed), kgo.ClientID("fault-"+name),
		kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(),
		kgo.SessionTimeout(10*time.Second), kgo.HeartbeatInterval(time.Second),
		kgo.Balancers(kgo.RangeBalancer()), // eager: each assignment is the member's whole share of its generation
		kgo.OnPartitionsAssigned(onAssigned), kgo.OnPartitionsRevoked(onRevoked), kgo.OnPartitionsLost(onLost))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	m := &member{name: name, cl: cl, stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		for ctx.Err() == nil {
			pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
			fs := cl.PollFetches(pctx)
			pcancel()
			if n := fs.NumRecords(); n > 0 {
				j.addConsumed(n)
				m.commit(ctx, j)
			}
		}
	}()
	return m, nil
}

// commit commits what was polled and journals every partition the
// coordinator accepted, with the generation the request carried.
func (m *member) commit(ctx context.Context, j *journal) {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	m.cl.CommitOffsetsSync(cctx, m.cl.UncommittedOffsets(), func(_ *kgo.Client, req *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		if err != nil {
			if ctx.Err() == nil {
				j.commitFailed(m.name, err)
			}
			return
		}
		offsets := map[int32]int64{}
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				offsets[p.Partition] = p.Offset
			}
		}
		now := time.Now()
		var cs []commit
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if e := kerr.ErrorForCode(p.ErrorCode); e != nil {
					j.commitFailed(m.name, fmt.Errorf("partition %d: %w", p.Partition, e))
					continue
				}
				cs = append(cs, commit{Member: m.name, Generation: req.Generation, Partition: p.Partition, Offset: offsets[p.Partition], At: now})
			}
		}
		j.committed(cs)
	})
}

func (m *member) finish() {
	m.stop()
	<-m.done
	m.cl.Close()
}

// stopAll stops every client, producers first (bounded), collecting errors.
func stopAll(gos []*goProducer, javas []*javaProducer, members []*member, d time.Duration) []error {
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for _, p := range gos {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := p.finish(d); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("producer %s: flush: %w", p.id, err))
				mu.Unlock()
			}
		}()
	}
	for _, p := range javas {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := p.finish(d); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for _, m := range members {
		m.finish()
	}
	return errs
}
