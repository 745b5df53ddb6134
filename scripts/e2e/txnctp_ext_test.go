package e2e

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"
)

// TestTxnProducerPython: the consume-transform-produce scenario
// (txnctp_test.go) with confluent-kafka-python (python/txn_ctp.py: a
// subscribed read_committed consumer, a transactional producer,
// send_offsets_to_transaction, one transaction committed and one aborted)
// on every target. Its own read_committed consumer reads the committed
// records once and none of the aborted ones, read_uncommitted all 20;
// franz-go checks the same and the group's committed offset (10).
func TestTxnProducerPython(t *testing.T) {
	pythonReady(t)
	for _, tg := range targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			c := ctpSetup(t, tg, "ctp-py")
			ctx := testCtx(t, 150*time.Second)
			ctpProgram(t, tg, c, "confluent-kafka-python", exec.CommandContext(ctx, filepath.Join(pythonVenv(), "bin", "python"),
				filepath.Join("python", "txn_ctp.py"), tg.Bootstrap, c.in, c.out, c.group, c.txid, strconv.Itoa(ctpPerTxn)))
		})
	}
}

// TestTxnProducerJava: the scenario with the Java clients of Kafka 4.x
// (javatxn/TxnCTP.java: a subscribed read_committed KafkaConsumer, a
// transactional KafkaProducer, sendOffsetsToTransaction with the
// consumer's group metadata, one transaction committed and one aborted) on
// every target, checked as TestTxnProducerPython.
func TestTxnProducerJava(t *testing.T) {
	javaReady(t)
	for _, tg := range targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			c := ctpSetup(t, tg, "ctp-java")
			ctx := testCtx(t, 180*time.Second)
			ctpProgram(t, tg, c, "kafka-clients", exec.CommandContext(ctx, "java", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
				"-cp", filepath.Join(javaDir(), "lib", "*"), filepath.Join("javatxn", "TxnCTP.java"),
				tg.Bootstrap, c.in, c.out, c.group, c.txid, strconv.Itoa(ctpPerTxn)))
		})
	}
}

// ctpProgram runs a program that runs the scenario's two transactions and
// prints what its own consumers read ({"read_committed":[..],
// "read_uncommitted":[..]}), checks that, then checks with franz-go
// (ctpCheck).
func ctpProgram(t *testing.T, tg Target, c ctpTopics, client string, cmd *exec.Cmd) {
	t.Helper()
	out, err := cmd.Output()
	if err != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("%s: %s program: %v\n%s%s", tg.Name, client, err, out, tail(stderr, 20))
	}
	var got struct {
		Committed   []string `json:"read_committed"`
		Uncommitted []string `json:"read_uncommitted"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%s: %s printed %q: %v", tg.Name, client, out, err)
	}
	slices.Sort(got.Committed)
	if want := ctpWantCommitted(); !slices.Equal(got.Committed, want) {
		t.Errorf("%s: %s read_committed read %v, want %v once each", tg.Name, client, got.Committed, want)
	}
	if len(got.Uncommitted) != ctpInputs {
		t.Errorf("%s: %s read_uncommitted read %d records (%v), want %d", tg.Name, client, len(got.Uncommitted), got.Uncommitted, ctpInputs)
	}
	ctpCheck(t, tg, c)
}
