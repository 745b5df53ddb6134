package bridge_test

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

// Committed offsets Iggy refuses to store (bridge/offsets/beyond.go): Kafka
// stores any offset a member commits, 0 on an empty partition, 10 on empty
// partitions, beyond the end of a partition with records, and a normal
// commit moves it on. Run on the stack's default protocol (0.11 or, with
// KAFKA_IGGY_TEST_IGGY_PROTOCOL=0.12, 0.12 and kind 3), on a 0.11 server
// in consumer mode and with kind 3 pinned, and read back through a second
// sidecar of the same server.

func TestOffsetsCommitAnyOffset(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts func(*stackOpts)
	}{
		{"default protocol", func(*stackOpts) {}},
		{"0.11 consumer", func(o *stackOpts) { o.embedded.Protocol = "0.11"; o.bridge.Offsets.Mode = "consumer" }},
		{"0.11 external-group", func(o *stackOpts) {
			o.embedded.Protocol = "0.11"
			o.embedded.ExternalGroups = true
			o.bridge.Offsets.Mode = "external-group"
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startStack(t, tc.opts)
			// Partition 0 holds 5 records, 1 and 2 none.
			offTopic(t, s, "any", 3, map[int32]int{0: 5})
			r := dialRaw(t, s.Addr)
			commit := func(offsets map[int32]int64) {
				t.Helper()
				for p, c := range rawCommit(r, 8, "ag", "any", [16]byte{}, offsets) {
					if c != 0 {
						t.Fatalf("commit %v: partition %d answered %d", offsets, p, c)
					}
				}
			}
			want := func(addr string, offsets map[int32]int64) {
				t.Helper()
				rr := r
				if addr != s.Addr {
					rr = dialRaw(t, addr)
				}
				got, code := rawFetch(rr, 8, "ag", strPtr("any"), [16]byte{}, 0, 1, 2)
				if code != 0 {
					t.Fatalf("fetch: code %d", code)
				}
				for p, o := range offsets {
					if got["any"][p] != (fetched{o, 0}) {
						t.Fatalf("fetch through %s: partition %d at %+v, want %d (all: %v)", addr, p, got["any"][p], o, got)
					}
				}
			}
			produce := func(p int32, n int) {
				t.Helper()
				cl := s.kgoClient(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
				for i := 0; i < n; i++ {
					if err := cl.ProduceSync(offCtx(t), &kgo.Record{Topic: "any", Partition: p, Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
						t.Fatal(err)
					}
				}
			}

			commit(map[int32]int64{1: 0})
			want(s.Addr, map[int32]int64{0: -1, 1: 0, 2: -1})
			commit(map[int32]int64{1: 10, 2: 10})
			want(s.Addr, map[int32]int64{1: 10, 2: 10})
			commit(map[int32]int64{0: 3})
			commit(map[int32]int64{0: 100})
			want(s.Addr, map[int32]int64{0: 100, 1: 10, 2: 10})

			// Another sidecar of the same server reads the same.
			s2 := startStack(t, tc.opts, func(o *stackOpts) { o.shared = s.Iggy })
			want(s2.Addr, map[int32]int64{0: 100, 1: 10, 2: 10})

			// Normal commits move them on.
			commit(map[int32]int64{0: 4, 1: 0})
			want(s.Addr, map[int32]int64{0: 4, 1: 0, 2: 10})
			produce(1, 3)
			commit(map[int32]int64{1: 2})
			want(s.Addr, map[int32]int64{0: 4, 1: 2, 2: 10})
			want(s2.Addr, map[int32]int64{0: 4, 1: 2, 2: 10})
			// A commit beyond the end, then back within it through the
			// other sidecar.
			commit(map[int32]int64{1: 50})
			want(s2.Addr, map[int32]int64{1: 50})
			for p, c := range rawCommit(dialRaw(t, s2.Addr), 8, "ag", "any", [16]byte{}, map[int32]int64{1: 1}) {
				if c != 0 {
					t.Fatalf("commit through the second sidecar: partition %d answered %d", p, c)
				}
			}
			want(s.Addr, map[int32]int64{1: 1})

			// -1 removes what is stored, wherever it is.
			commit(map[int32]int64{0: -1, 1: -1, 2: -1})
			want(s.Addr, map[int32]int64{0: -1, 1: -1, 2: -1})
			want(s2.Addr, map[int32]int64{0: -1, 1: -1, 2: -1})
			commit(map[int32]int64{2: 7})
			want(s.Addr, map[int32]int64{0: -1, 1: -1, 2: 7})
		})
	}
}

// TestOffsetsBeyondRepeatedCommit: a consumer committing an unchanged
// position on an empty partition again and again (Java's auto-commit every
// interval) adds one record to the beyond log, not one per commit; a
// different offset and the clearing add one each.
func TestOffsetsBeyondRepeatedCommit(t *testing.T) {
	s := offsetsStack(t, false, "consumer")
	offTopic(t, s, "idle", 1, nil)
	r := dialRaw(t, s.Addr)
	records := func() uint64 {
		t.Helper()
		info, err := s.Client.RefreshTopic(offCtx(t), iggy.TopicRef{Stream: "__kafka_iggy", Topic: "committed_offsets"})
		if err != nil {
			t.Fatalf("the beyond log: %v", err)
		}
		return info.Details.MessagesCount
	}
	commit := func(o int64) {
		t.Helper()
		if codes := rawCommit(r, 8, "idle-g", "idle", [16]byte{}, map[int32]int64{0: o}); codes[0] != 0 {
			t.Fatalf("commit %d: %v", o, codes)
		}
	}
	for range 5 {
		commit(0)
	}
	if n := records(); n != 1 {
		t.Fatalf("five commits of 0 wrote %d records, want 1", n)
	}
	commit(3)
	commit(3)
	commit(-1)
	if n := records(); n != 3 {
		t.Fatalf("then 3, 3 and -1: %d records, want 3", n)
	}
	if got, code := rawFetch(r, 8, "idle-g", strPtr("idle"), [16]byte{}, 0); code != 0 || got["idle"][0] != (fetched{-1, 0}) {
		t.Fatalf("fetch after -1: %v %d", got, code)
	}
}

// TestOffsetsBeyondUnreadable: a sidecar whose Iggy user may not read the
// beyond log (rights on the Kafka stream only) still stores and reads the
// commits Iggy takes; the log counts as empty for it.
func TestOffsetsBeyondUnreadable(t *testing.T) {
	s := offsetsStack(t, false, "consumer")
	offTopic(t, s, "plain", 2, map[int32]int{0: 5})
	// A refused commit through the root sidecar creates the log.
	if codes := rawCommit(dialRaw(t, s.Addr), 8, "ug", "plain", [16]byte{}, map[int32]int64{1: 0}); codes[1] != 0 {
		t.Fatalf("commit 0 on an empty partition: %v", codes)
	}
	info, err := s.Client.GetTopic(offCtx(t), iggy.TopicRef{Stream: "kafka", Topic: "plain"})
	if err != nil {
		t.Fatal(err)
	}
	perms := &icodec.SizedPermissions{Permissions: icodec.Permissions{Streams: []icodec.StreamPermissions{{
		StreamID: info.StreamID, ReadStream: true, ReadTopics: true, ManageTopics: true, PollMessages: true, SendMessages: true,
	}}}}
	if err := s.Client.Do(offCtx(t), &icodec.CreateUserRequest{Username: "kafkaonly", Password: "secret", Status: icodec.UserStatusActive, Permissions: perms}, nil); err != nil {
		t.Fatalf("create user: %v", err)
	}
	s2 := offsetsStack(t, false, "consumer", func(o *stackOpts) {
		o.shared = s.Iggy
		o.client.Username, o.client.Password = "kafkaonly", "secret"
	})
	r := dialRaw(t, s2.Addr)
	if codes := rawCommit(r, 8, "ug", "plain", [16]byte{}, map[int32]int64{0: 3}); codes[0] != 0 {
		t.Fatalf("commit through the sidecar that may not read the log: %v", codes)
	}
	if got, code := rawFetch(r, 8, "ug", strPtr("plain"), [16]byte{}, 0); code != 0 || got["plain"][0] != (fetched{3, 0}) {
		t.Fatalf("fetch through the sidecar that may not read the log: %v %d", got, code)
	}
}
