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
			cmd := exec.CommandContext(ctx, filepath.Join(pythonVenv(), "bin", "python"), filepath.Join("python", "txn_ctp.py"),
				tg.Bootstrap, c.in, c.out, c.group, c.txid, strconv.Itoa(ctpPerTxn))
			out, err := cmd.Output()
			if err != nil {
				stderr := ""
				if ee, ok := err.(*exec.ExitError); ok {
					stderr = string(ee.Stderr)
				}
				t.Fatalf("%s: txn_ctp.py: %v\n%s%s", tg.Name, err, out, tail(stderr, 20))
			}
			var got struct {
				Committed   []string `json:"read_committed"`
				Uncommitted []string `json:"read_uncommitted"`
			}
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("%s: txn_ctp.py printed %q: %v", tg.Name, out, err)
			}
			slices.Sort(got.Committed)
			if want := ctpWantCommitted(); !slices.Equal(got.Committed, want) {
				t.Errorf("%s: confluent-kafka-python read_committed read %v, want %v once each", tg.Name, got.Committed, want)
			}
			if len(got.Uncommitted) != ctpInputs {
				t.Errorf("%s: confluent-kafka-python read_uncommitted read %d records (%v), want %d", tg.Name, len(got.Uncommitted), got.Uncommitted, ctpInputs)
			}
			ctpCheck(t, tg, c)
		})
	}
}
