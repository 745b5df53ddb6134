package main

import (
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// iggyProc is a `kafka-iggy embedded-iggy` child process.
type iggyProc struct {
	cmd  *exec.Cmd
	done chan error
}

// startIggyProc starts `kafka-iggy embedded-iggy` on addr with data in dir
// and waits until it accepts connections.
func startIggyProc(t *testing.T, addr, dir string) *iggyProc {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(childEnv(), "KIGGY_TEST_RUN_MAIN=1", "KIGGY_TEST_MAIN_ARGS=embedded-iggy --listen "+addr+" --data-dir "+dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &iggyProc{cmd: cmd, done: make(chan error, 1)}
	go func() { p.done <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-p.done })
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			_ = c.Close()
			return p
		}
		select {
		case err := <-p.done:
			p.done <- err
			t.Fatalf("embedded-iggy exited: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("embedded-iggy not listening on %s within 30s", addr)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// kill ends the server with SIGKILL (no goodbye on its connections beyond
// the kernel's FIN/RST) and waits for it.
func (p *iggyProc) kill(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-p.done
	p.done <- nil
}

// readyz returns the /readyz status code (0 when the request fails).
func readyz(admin string) int {
	c := http.Client{Timeout: 500 * time.Millisecond}
	r, err := c.Get("http://" + admin + "/readyz")
	if err != nil {
		return 0
	}
	_ = r.Body.Close()
	return r.StatusCode
}

// TestIggyKilledWhileIdle: the Iggy server process is killed while the
// sidecar is idle. /readyz turns 503 within 1 s (the sessions notice the
// closed connections, not the next request or keep-alive), turns 200 again
// once the server is back, and the Kafka client that used the sidecar
// before produces and reads without an error after that.
func TestIggyKilledWhileIdle(t *testing.T) {
	if testing.Short() {
		t.Skip("starts sidecar and Iggy server processes")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	dir := t.TempDir()
	srv := startIggyProc(t, addr, dir)
	p := startServeProc(t, "KAFKA_IGGY_IGGY__ADDRESS="+addr, "KAFKA_IGGY_IGGY__BACKOFF_MAX=500ms")

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const topic = "iggy-down"
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.kafka), kgo.DefaultProduceTopic(topic), kgo.ConsumeTopics(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("before")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if code := readyz(p.admin); code != http.StatusOK {
		t.Fatalf("/readyz %d before the kill", code)
	}

	time.Sleep(500 * time.Millisecond) // the scenario: the sidecar sits idle
	killedAt := time.Now()
	srv.kill(t)
	for readyz(p.admin) != http.StatusServiceUnavailable {
		if time.Since(killedAt) > time.Second {
			t.Fatalf("/readyz still %d %v after the Iggy server was killed\n%s", readyz(p.admin), time.Since(killedAt), p.logText())
		}
		time.Sleep(10 * time.Millisecond)
	}
	unready := time.Since(killedAt)

	backAt := time.Now()
	startIggyProc(t, addr, dir)
	for readyz(p.admin) != http.StatusOK {
		if time.Since(backAt) > 30*time.Second {
			t.Fatalf("/readyz not 200 within 30s of the server's return\n%s", p.logText())
		}
		time.Sleep(10 * time.Millisecond)
	}
	ready := time.Since(backAt)
	t.Logf("/readyz 503 %v after the kill, 200 %v after the restart", unready.Round(time.Millisecond), ready.Round(time.Millisecond))

	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("after")}).FirstErr(); err != nil {
		t.Fatalf("produce after the server came back: %v", err)
	}
	var got []string
	for len(got) < 2 {
		fs := cl.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatalf("fetch after the server came back: %v", err)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if got[0] != "before" || got[1] != "after" {
		t.Fatalf("read %q, want [before after]", got)
	}
}
