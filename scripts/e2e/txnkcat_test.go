package e2e

import (
	"bytes"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestTxnKcat: kcat's transactional producer (-X transactional.id: its
// whole input in one transaction, committed at the end of the input,
// aborted when kcat is stopped by a signal) and its read_committed
// consumer, on every target. Three runs with one transactional id write
// c0-c2 (committed), a0-a1 (padded to 1 KiB lines; kcat stopped with
// SIGTERM once franz-go reads them at read_uncommitted: aborted) and c3
// (committed); kcat -C at
// read_committed then reads c0 c1 c2 c3, at read_uncommitted all six.
func TestTxnKcat(t *testing.T) {
	kcatReady(t)
	for _, tg := range targets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			topic := uniqueTopic("txn-kcat")
			createTopic(t, tg, topic, 1)
			args := []string{"-P", "-b", tg.Bootstrap, "-t", topic, "-p", "0", "-m", "30",
				"-X", "transactional.id=" + uniqueTopic("txid-kcat"), "-X", "linger.ms=5"}
			commit := func(values string) {
				if _, stderr, err := runTool(t, 60*time.Second, []byte(values), "kcat", args...); err != nil {
					t.Fatalf("%s: kcat -P -X transactional.id (commit): %v\n%s", tg.Name, err, stderr)
				}
			}
			commit("c0\nc1\nc2\n")

			ctx := testCtx(t, 60*time.Second)
			cmd := exec.CommandContext(ctx, "kcat", args...)
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// kcat 1.7 reads its input 1,024 bytes at a time (fixed in 1.8):
			// each aborted record is a line of exactly 1,024 bytes.
			pad := strings.Repeat("x", 1021)
			if _, err := stdin.Write([]byte("a0" + pad + "\na1" + pad + "\n")); err != nil {
				t.Fatal(err)
			}
			// The open transaction's records are on the broker once a
			// read_uncommitted reader sees them.
			if got := kgoReadValues(t, tg, topic, kgo.ReadUncommitted(), 5); len(got) != 5 {
				t.Fatalf("%s: read_uncommitted read %v while kcat's transaction was open, want c0-c2 a0 a1\nkcat:\n%s", tg.Name, got, stderr.String())
			}
			// kcat 1.7 did not exit on SIGTERM while it waited for input
			// (a minute, here): it is SIGKILLed, as a crashed producer, and the next kcat with the same transactional.id
			// aborts the open transaction (its InitProducerId fences it).
			if err := cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			_ = cmd.Wait() // killed: non-zero by design
			stdin.Close()
			commit("c3\n")

			for _, c := range []struct {
				level string
				want  []string
			}{
				{"read_committed", []string{"c0", "c1", "c2", "c3"}},
				{"read_uncommitted", []string{"c0", "c1", "c2", "a0", "a1", "c3"}},
			} {
				out, stderr, err := runTool(t, 60*time.Second, nil, "kcat", "-C", "-b", tg.Bootstrap, "-t", topic, "-p", "0",
					"-o", "beginning", "-e", "-m", "30", "-X", "isolation.level="+c.level, "-f", "%s\n")
				if err != nil {
					t.Fatalf("%s: kcat -C %s: %v\n%s", tg.Name, c.level, err, stderr)
				}
				var got []string
				for _, v := range strings.Fields(string(out)) {
					got = append(got, strings.TrimRight(v, "x")) // a0 and a1 without their padding
				}
				if !slices.Equal(got, c.want) {
					t.Errorf("%s: kcat -C %s read %v, want %v", tg.Name, c.level, got, c.want)
				}
			}
		})
	}
}
