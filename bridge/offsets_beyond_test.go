package bridge_test

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
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
