package embedded

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kafka-iggy/kafka-iggy/codec/iggy"
	"github.com/kafka-iggy/kafka-iggy/codec/wire"
)

// startAt starts a server on dir (and listen address) for a restart test.
func startAt(t *testing.T, dir, listen string) *Server {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Listen, cfg.DataDir = listen, dir
	s, err := New(cfg, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestRestartInProcess: metadata, messages and offsets survive Close and a
// new server on the same data directory; ids keep their rules.
func TestRestartInProcess(t *testing.T) {
	dir := t.TempDir()
	s := startAt(t, dir, "127.0.0.1:0")
	c := root(t, s)
	c.createStream("a")
	c.createStream("b")
	c.ok(c.meta(iggy.OperationDeleteStream, &iggy.DeleteStreamRequest{StreamID: numID(0)}))
	c.createTopic(numID(1), "t", 2, iggy.Options{opt("message_expiry", iggy.HeaderKindString, []byte("7 days"))})
	c.send(numID(1), numID(0), 1, "x", "y")
	c.send(numID(1), numID(0), 1, "z")
	c.ok(c.meta(iggy.OperationStoreConsumerOffset, &iggy.StoreConsumerOffsetRequest{Consumer: single(5), StreamID: numID(1), TopicID: numID(0),
		PartitionID: iggy.OptionalPartition{Present: true, PartitionID: 1}, Offset: 1, Ack: iggy.AckLevelQuorum}))
	c.ok(c.meta(iggy.OperationCreateConsumerGroup, &iggy.CreateConsumerGroupRequest{StreamID: numID(1), TopicID: numID(0), Name: "g0"}))
	c.ok(c.meta(iggy.OperationDeleteConsumerGroup, &iggy.DeleteConsumerGroupRequest{StreamID: numID(1), TopicID: numID(0), GroupID: numID(0)}))
	c.ok(c.meta(iggy.OperationCreateConsumerGroup, &iggy.CreateConsumerGroupRequest{StreamID: numID(1), TopicID: numID(0), Name: "g1"}))
	c.ok(c.meta(iggy.OperationCreateUser, &iggy.CreateUserRequest{Username: "alice", Password: "secret", Status: iggy.UserStatusActive}))
	c.ok(c.meta(iggy.OperationChangePassword, &iggy.ChangePasswordRequest{UserID: numID(0), CurrentPassword: "iggy", NewPassword: "changed"}))
	var tok iggy.CreatePersonalAccessTokenResponse
	if _, err := tok.DecodeFrom(c.ok(c.meta(iggy.OperationCreatePersonalAccessToken, &iggy.CreatePersonalAccessTokenRequest{Name: "p"}))); err != nil {
		t.Fatal(err)
	}
	before, _ := c.getTopic(numID(1), numID(0))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = startAt(t, dir, "127.0.0.1:0")
	defer s.Close()
	c = dial(t, s)
	c.login("iggy", "changed")
	after, ok := c.getTopic(numID(1), numID(0))
	if !ok || after.Name != before.Name || after.MessageExpiry != before.MessageExpiry || after.CreatedAt != before.CreatedAt ||
		!slices.EqualFunc(after.ExplicitOptions, before.ExplicitOptions, func(a, b iggy.Option) bool { return a.Key == b.Key && string(a.Value) == string(b.Value) }) ||
		after.MessagesCount != 3 || after.Partitions[1].CurrentOffset != 2 {
		t.Fatalf("topic after restart %+v\nbefore %+v", after, before)
	}
	if p := c.poll(pollReq(single(5), numID(1), numID(0), ptr(uint32(1)), iggy.PollingKindNext, 0, 10, false)); !slices.Equal(p.payloads, []string{"z"}) {
		t.Fatalf("next after restart %v", p.payloads)
	}
	if conf := c.send(numID(1), numID(0), 1, "w"); conf.BaseOffset != 3 {
		t.Fatalf("offsets continue at %d", conf.BaseOffset)
	}
	if id := c.createStream("c"); id != 0 {
		t.Fatalf("lowest free stream id %d", id)
	}
	var d iggy.ConsumerGroupDetails
	if _, err := d.DecodeFrom(c.ok(c.meta(iggy.OperationCreateConsumerGroup, &iggy.CreateConsumerGroupRequest{StreamID: numID(1), TopicID: numID(0), Name: "g2"}))); err != nil || d.ID != 2 {
		t.Fatalf("group id after restart %+v %v", d, err)
	}
	alice := dial(t, s)
	alice.login("alice", "secret")
	pat := dial(t, s)
	body := encode(&iggy.LoginRegisterWithPATRequest{VersionInfo: iggy.ClientVersionInfo{ProtocolVersion: uint32(iggy.Protocol011), SdkName: "t", SdkVersion: "1"}, Token: tok.Token})
	pat.bind(pat.roundTrip(iggy.RequestHeader{Client: pat.client, Operation: iggy.OperationRegister}, body))
}

// TestDeleteWatermarkSurvivesRestart: a DELETE_SEGMENTS held back by a
// consumer offset still deletes after a restart once the offset moves, as
// the real server's committed watermark (metadata) does.
func TestDeleteWatermarkSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	s := startAt(t, dir, "127.0.0.1:0")
	c := root(t, s)
	c.createStream("s")
	c.createTopic(numID(0), "t", 1, iggy.Options{opt("segment_size", iggy.HeaderKindUint64, u64(1<<20))})
	big := string(make([]byte, 600<<10))
	for range 4 { // sealed [0, 1] and [2, 3], active empty
		c.send(numID(0), numID(0), 0, big)
	}
	store := func(c *tclient, off uint64) {
		c.ok(c.meta(iggy.OperationStoreConsumerOffset, &iggy.StoreConsumerOffsetRequest{Consumer: single(5), StreamID: numID(0), TopicID: numID(0),
			PartitionID: iggy.OptionalPartition{Present: true}, Offset: off, Ack: iggy.AckLevelQuorum}))
	}
	segments := func(c *tclient) uint32 {
		td, _ := c.getTopic(numID(0), numID(0))
		return td.Partitions[0].SegmentsCount
	}
	store(c, 0)
	r := c.meta(iggy.OperationDeleteSegments, &iggy.DeleteSegmentsRequest{StreamID: numID(0), TopicID: numID(0), SegmentsCount: 2})
	if r.hdr.Operation != iggy.OperationTruncatePartition {
		t.Fatalf("reply operation %d", r.hdr.Operation)
	}
	c.ok(r)
	if n := segments(c); n != 3 {
		t.Fatalf("%d segments, want 3 (held back by the offset at 0)", n)
	}
	restart := func() {
		t.Helper()
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		s = startAt(t, dir, "127.0.0.1:0")
		c = root(t, s)
	}
	defer func() { s.Close() }()

	restart()
	if n := segments(c); n != 3 {
		t.Fatalf("%d segments after restart, want 3", n)
	}
	store(c, 3)
	if n := segments(c); n != 1 {
		t.Fatalf("%d segments once the offset moved, want 1", n)
	}

	// A purge clears the watermark (offsets restart at 0), durably too.
	c.ok(c.meta(iggy.OperationPurgeTopic, &iggy.PurgeTopicRequest{StreamID: numID(0), TopicID: numID(0)}))
	for range 4 {
		c.send(numID(0), numID(0), 0, big)
	}
	restart()
	if n := segments(c); n != 3 {
		t.Fatalf("%d segments after purge and restart, want 3 (a stale watermark deleted data)", n)
	}
}

// TestEmbeddedHelperProcess is not a test: it is the standalone server the
// SIGKILL test starts by re-executing the test binary.
func TestEmbeddedHelperProcess(t *testing.T) {
	dir := os.Getenv("EMBEDDED_HELPER_DATA_DIR")
	if dir == "" {
		t.Skip("helper process for TestRestartAfterSIGKILL")
	}
	code := runMain(context.Background(), []string{"--listen", "127.0.0.1:0", "--data-dir", dir}, testLogger(t), os.Stderr, func(s *Server) {
		fmt.Fprintf(os.Stdout, "ADDR %s\n", s.Addr())
	})
	os.Exit(code)
}

// helper starts the server in a child process and returns it with its
// address.
func helper(t *testing.T, dir string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestEmbeddedHelperProcess$")
	cmd.Env = append(os.Environ(), "EMBEDDED_HELPER_DATA_DIR="+dir)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), "ADDR "); ok {
				addr <- a
			}
		}
		close(addr)
	}()
	select {
	case a, ok := <-addr:
		if !ok {
			t.Fatal("helper exited before listening")
		}
		return cmd, a
	case <-time.After(30 * time.Second):
		t.Fatal("helper did not start")
	}
	return nil, ""
}

func dialAddr(t *testing.T, addr string) *tclient {
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nc.Close() })
	c := &tclient{t: t, nc: nc, br: bufio.NewReader(nc), client: wire.U128{Lo: 0xAB00 + clientSeq.Add(1), Hi: 7}, next: 1}
	c.login("iggy", "iggy")
	return c
}

// TestRestartAfterSIGKILL: with a data directory and enforce_fsync, every
// confirmed message and stored offset survives a SIGKILL of the server.
func TestRestartAfterSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	dir := t.TempDir()
	cmd, addr := helper(t, dir)
	c := dialAddr(t, addr)
	c.createStream("s")
	c.createTopic(numID(0), "t", 2, iggy.Options{opt("enforce_fsync", iggy.HeaderKindBool, []byte{1})})
	var want []string
	for i := range 20 {
		p := fmt.Sprintf("m%02d", i)
		conf := c.send(numID(0), numID(0), uint32(i%2), p)
		if conf.BaseOffset != uint64(i/2) {
			t.Fatalf("confirmation %+v", conf)
		}
		want = append(want, p)
	}
	for p := range uint32(2) {
		c.ok(c.meta(iggy.OperationStoreConsumerOffset, &iggy.StoreConsumerOffsetRequest{Consumer: single(3), StreamID: numID(0), TopicID: numID(0),
			PartitionID: iggy.OptionalPartition{Present: true, PartitionID: p}, Offset: uint64(4 + p), Ack: iggy.AckLevelQuorum}))
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()

	_, addr = helper(t, dir)
	c = dialAddr(t, addr)
	var got []string
	for p := range uint32(2) {
		pl := c.poll(pollReq(single(1), numID(0), numID(0), &p, iggy.PollingKindFirst, 0, 100, false))
		for i, o := range pl.offsets {
			if o != uint64(i) {
				t.Fatalf("partition %d offsets %v", p, pl.offsets)
			}
		}
		got = append(got, pl.payloads...)
		var off iggy.GetConsumerOffsetResponse
		body := c.ok(c.call(iggy.CodeGetConsumerOffset, &iggy.GetConsumerOffsetRequest{Consumer: single(3), StreamID: numID(0), TopicID: numID(0),
			PartitionID: iggy.OptionalPartition{Present: true, PartitionID: p}}))
		if _, err := off.DecodeFrom(body); err != nil || off.StoredOffset != uint64(4+p) || off.CurrentOffset != 9 {
			t.Fatalf("offset of partition %d after SIGKILL: %+v %v", p, off, err)
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("messages after SIGKILL %v\nwant %v", got, want)
	}
}
