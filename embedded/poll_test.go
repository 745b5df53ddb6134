package embedded

import (
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

// fakeClock is a settable clock for the server (set before Start).
type fakeClock struct{ us atomic.Int64 }

func (f *fakeClock) now() time.Time          { return time.UnixMicro(f.us.Load()) }
func (f *fakeClock) advance(d time.Duration) { f.us.Add(d.Microseconds()) }

func startWithClock(t *testing.T, mutate func(*Config)) (*Server, *fakeClock) {
	t.Helper()
	clk := &fakeClock{}
	clk.us.Store(1_700_000_000_000_000)
	cfg := DefaultConfig()
	cfg.Listen = "127.0.0.1:0"
	if mutate != nil {
		mutate(&cfg)
	}
	s, err := New(cfg, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	s.now = clk.now
	if err := s.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, clk
}

func seq(from, to uint64) []uint64 {
	var out []uint64
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

// TestPollStrategies checks §7.3 on a partition holding 3 batches
// (offsets 0-3, 4-5, 6-9) appended at t0, t0+10s, t0+20s.
func TestPollStrategies(t *testing.T) {
	s, clk := startWithClock(t, nil)
	c := root(t, s)
	c.createStream("s")
	c.createTopic(numID(0), "t", 2, nil)
	t0 := clk.now()
	c.send(numID(0), numID(0), 0, "0", "1", "2", "3")
	clk.advance(10 * time.Second)
	c.send(numID(0), numID(0), 0, "4", "5")
	clk.advance(10 * time.Second)
	c.send(numID(0), numID(0), 0, "6", "7", "8", "9")
	ts := func(d time.Duration) uint64 { return uint64(t0.Add(d).UnixMicro()) }

	cases := []struct {
		name  string
		kind  iggy.PollingKind
		value uint64
		count uint32
		want  []uint64
	}{
		{"offset 0", iggy.PollingKindOffset, 0, 100, seq(0, 10)},
		{"offset inside a batch (slice)", iggy.PollingKindOffset, 2, 3, seq(2, 5)},
		{"offset at the last message", iggy.PollingKindOffset, 9, 5, []uint64{9}},
		{"past the end", iggy.PollingKindOffset, 10, 5, nil},
		{"count 0", iggy.PollingKindOffset, 0, 0, nil},
		{"first", iggy.PollingKindFirst, 0, 3, seq(0, 3)},
		{"last 3", iggy.PollingKindLast, 0, 3, seq(7, 10)},
		{"last more than stored", iggy.PollingKindLast, 0, 50, seq(0, 10)},
		{"timestamp of batch 2", iggy.PollingKindTimestamp, ts(10 * time.Second), 100, seq(4, 10)},
		{"timestamp between batches", iggy.PollingKindTimestamp, ts(5 * time.Second), 3, seq(4, 7)},
		{"timestamp after the last batch", iggy.PollingKindTimestamp, ts(30 * time.Second), 10, nil},
		{"timestamp before everything", iggy.PollingKindTimestamp, 0, 100, seq(0, 10)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c.t = t
			p := c.poll(pollReq(single(1), numID(0), numID(0), ptr(uint32(0)), tc.kind, tc.value, tc.count, false))
			if !slices.Equal(p.offsets, tc.want) {
				t.Fatalf("offsets %v, want %v", p.offsets, tc.want)
			}
			if p.partition != 0 || p.current != 9 {
				t.Fatalf("partition %d current %d", p.partition, p.current)
			}
			for i, o := range p.offsets {
				if p.payloads[i] != string(rune('0'+o)) {
					t.Fatalf("offset %d payload %q", o, p.payloads[i])
				}
			}
		})
	}
	c.t = t

	// Next: from 0 without a stored offset, then from stored+1; auto_commit
	// stores the last returned offset, and nothing when nothing returned.
	next := func(n uint32) []uint64 {
		return c.poll(pollReq(single(7), numID(0), numID(0), ptr(uint32(0)), iggy.PollingKindNext, 0, n, true)).offsets
	}
	if got := next(3); !slices.Equal(got, seq(0, 3)) {
		t.Fatalf("next #1 %v", got)
	}
	if got := next(5); !slices.Equal(got, seq(3, 8)) {
		t.Fatalf("next #2 %v", got)
	}
	if got := next(5); !slices.Equal(got, seq(8, 10)) {
		t.Fatalf("next #3 %v", got)
	}
	if got := next(5); got != nil {
		t.Fatalf("next past the end %v", got)
	}
	gco := c.ok(c.call(iggy.CodeGetConsumerOffset, &iggy.GetConsumerOffsetRequest{Consumer: single(7), StreamID: numID(0), TopicID: numID(0)}))
	var off iggy.GetConsumerOffsetResponse
	if _, err := off.DecodeFrom(gco); err != nil || off.StoredOffset != 9 || off.CurrentOffset != 9 {
		t.Fatalf("stored %+v %v", off, err)
	}
	// Without auto_commit nothing is stored; a string consumer id shares
	// offsets with its XXH32 numeric id.
	c.poll(pollReq(single(8), numID(0), numID(0), ptr(uint32(0)), iggy.PollingKindNext, 0, 2, false))
	if body := c.ok(c.call(iggy.CodeGetConsumerOffset, &iggy.GetConsumerOffsetRequest{Consumer: single(8), StreamID: numID(0), TopicID: numID(0)})); len(body) != 0 {
		t.Fatalf("offset stored without auto_commit: %x", body)
	}
	named := iggy.Consumer{Kind: iggy.ConsumerKindConsumer, ID: nameID("my-consumer")}
	c.poll(pollReq(named, numID(0), numID(0), nil, iggy.PollingKindNext, 0, 4, true))
	hashed := single(iggy.XXH32([]byte("my-consumer"), 0))
	if got := c.poll(pollReq(hashed, numID(0), numID(0), nil, iggy.PollingKindNext, 0, 1, false)).offsets; !slices.Equal(got, []uint64{4}) {
		t.Fatalf("hashed consumer continues at %v", got)
	}

	// An empty partition: empty poll with current_offset 0.
	if p := c.poll(pollReq(single(1), numID(0), numID(0), ptr(uint32(1)), iggy.PollingKindLast, 0, 5, true)); p.count != 0 || p.partition != 1 || p.current != 0 {
		t.Fatalf("empty partition poll %+v", p)
	}
	// Undecodable body: status 0, empty poll for partition 0.
	raw := c.ok(c.roundTrip(iggy.RequestHeader{Client: c.client, Session: c.session, Operation: iggy.OperationNonReplicated, Code: iggy.CodePollMessages, Request: c.next}, []byte{1, 2}))
	if p := decodePoll(t, raw); p.count != 0 || p.partition != 0 || p.current != 0 {
		t.Fatalf("undecodable poll %+v", p)
	}
}

// TestPollLimit checks that a poll reply stays within the frame limit:
// records that do not fit are left for the next poll.
func TestPollLimit(t *testing.T) {
	s := startServer(t, func(c *Config) { c.MaxFrameBytes = 64 << 10 })
	c := root(t, s)
	c.createStream("s")
	c.createTopic(numID(0), "t", 1, nil)
	big := string(make([]byte, 30<<10)) // two records fit in 64 KiB, three do not
	for range 5 {
		c.send(numID(0), numID(0), 0, big)
	}
	p := c.poll(pollReq(single(1), numID(0), numID(0), nil, iggy.PollingKindOffset, 0, 100, false))
	if len(p.offsets) != 2 || p.offsets[0] != 0 {
		t.Fatalf("limited poll %v", p.offsets)
	}
	p = c.poll(pollReq(single(1), numID(0), numID(0), nil, iggy.PollingKindOffset, 2, 100, false))
	if !slices.Equal(p.offsets, []uint64{2, 3}) {
		t.Fatalf("second limited poll %v", p.offsets)
	}
}
