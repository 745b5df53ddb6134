package embedded

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

// Batches sent on one connection are kept by a memory-only log in the
// frame's own buffer; none may be overwritten by a later frame, whatever
// its size (smaller, equal, larger than any before, above keepReadBuf).
func TestSendFramesKeptIntact(t *testing.T) {
	for _, dir := range []string{"", "disk"} {
		t.Run("data_dir="+dir, func(t *testing.T) {
			s := startServer(t, func(c *Config) {
				if dir != "" {
					c.DataDir = t.TempDir()
				}
			})
			c := root(t, s)
			c.createStream("s")
			c.createTopic(numID(0), "t", 1, iggy.Options{})
			var want []string
			for i, n := range []int{3, 3, 1, 700, 700, 1200, 5, 1100, 1300, 2} {
				payloads := make([]string, n)
				for j := range payloads {
					payloads[j] = fmt.Sprintf("%d-%d-%s", i, j, strings.Repeat(string(rune('a'+i)), 1000))
				}
				conf := c.send(numID(0), numID(0), 0, payloads...)
				if conf.BaseOffset != uint64(len(want)) {
					t.Fatalf("batch %d: base offset %d, want %d", i, conf.BaseOffset, len(want))
				}
				want = append(want, payloads...)
			}
			var got []string
			for uint32(len(got)) < uint32(len(want)) {
				p := c.poll(pollReq(single(1), numID(0), numID(0), ptr(uint32(0)), iggy.PollingKindOffset, uint64(len(got)), 1000, false))
				if p.count == 0 {
					break
				}
				got = append(got, p.payloads...)
			}
			if len(got) != len(want) {
				t.Fatalf("polled %d messages, want %d", len(got), len(want))
			}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("message %d: %.20q, want %.20q", i, got[i], want[i])
				}
			}
		})
	}
}

func TestMemoryReleasedAfterTopicDeletion(t *testing.T) {
	s := startServer(t, nil)
	s.mem.threshold = 1 << 20
	c := root(t, s)
	c.createStream("s")
	c.createTopic(numID(0), "t", 1, iggy.Options{})
	payloads := make([]string, 600)
	for i := range payloads {
		payloads[i] = strings.Repeat("x", 1000)
	}
	c.send(numID(0), numID(0), 0, payloads...)
	c.send(numID(0), numID(0), 0, payloads...)
	c.ok(c.meta(iggy.OperationDeleteTopic, &iggy.DeleteTopicRequest{StreamID: numID(0), TopicID: numID(0)}))
	deadline := time.Now().Add(5 * time.Second)
	for s.mem.runs.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no memory release after deleting a 1.2 MB topic")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestPprofAddr(t *testing.T) {
	s := startServer(t, func(c *Config) { c.PprofAddr = "127.0.0.1:0" })
	addr := s.PprofAddr()
	if addr == nil {
		t.Fatal("no pprof listener")
	}
	resp, err := http.Get("http://" + addr.String() + "/debug/pprof/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || len(body) == 0 {
		t.Fatalf("GET cmdline: %s %q", resp.Status, body)
	}
	if off := startServer(t, nil); off.PprofAddr() != nil {
		t.Fatal("pprof served without pprof_addr")
	}
	for _, bad := range []string{"0.0.0.0:6060", "10.1.2.3:6060", ":6060", "localhost", "127.0.0.1:x"} {
		cfg := DefaultConfig()
		cfg.PprofAddr = bad
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "embedded.pprof_addr:") {
			t.Errorf("%q: %v", bad, err)
		}
	}
	for _, good := range []string{"127.0.0.1:6060", "[::1]:0", "localhost:6060"} {
		cfg := DefaultConfig()
		cfg.PprofAddr = good
		if err := cfg.Validate(); err != nil {
			t.Errorf("%q: %v", good, err)
		}
	}
}
