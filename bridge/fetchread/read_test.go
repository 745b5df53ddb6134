package fetchread

import (
	"bytes"
	"context"
	"testing"

	"github.com/rs/zerolog"

	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
	"github.com/kafka-iggy/kafka-iggy/codec/wire"
)

func TestFetchPollCount(t *testing.T) {
	const room = MaxPollBytes
	cases := []struct {
		remaining, kavg, avg, room int
		atLeastOne                 bool
		want                       uint32
	}{
		{0, 0, 100, room, false, 0},                  // no room: offsets only
		{0, 0, 100, room, true, 1},                   // no room, but one record goes in anyway
		{-5, 0, 0, room, true, 1},                    // likewise with nothing known
		{1 << 20, 0, 0, room, false, 16},             // unknown sizes: a small probe
		{100, 0, 0, room, false, 1},                  // ... never more than the room suggests
		{10_000, 0, 100, room, false, 101},           // Kafka size unknown: the Iggy size stands in
		{10_000, 50, 100, room, false, 201},          // what the response holds at the Kafka size, plus one
		{10_000, 50, 100, 5_000, false, 50},          // ... no more than the poll room holds at the Iggy size
		{10_000, 50, 100, 10, false, 1},              // a poll room under one message: one
		{1 << 30, 10, 10, room, false, 10000},        // capped by count
		{1 << 30, 1 << 20, 1 << 20, room, false, 16}, // capped by expected bytes
		{1 << 30, 1 << 30, 1 << 30, room, false, 1},  // a huge message: one
	}
	for _, c := range cases {
		if got := PollCount(c.remaining, c.kavg, c.avg, c.room, c.atLeastOne); got != c.want {
			t.Errorf("PollCount(%d, %d, %d, %d, %v) = %d, want %d", c.remaining, c.kavg, c.avg, c.room, c.atLeastOne, got, c.want)
		}
	}
}

// TestReadPollsSizedFromKafkaBytes reads a partition of small native Iggy
// messages (an Iggy frame is about 1.6x the Kafka record it becomes) into
// 1 MiB responses: once a read has seen what a message becomes, a full
// response takes one poll, where polls sized from the Iggy bytes alone
// bring about two thirds of it each.
func TestReadPollsSizedFromKafkaBytes(t *testing.T) {
	const total, payload = 40000, 100
	var polls []uint32
	poll := func(_ context.Context, _ iggy.TopicRef, _ int32, kind icodec.PollingKind, value uint64, count uint32) (*iggy.Polled, error) {
		polls = append(polls, count)
		if kind != icodec.PollingKindOffset {
			return &iggy.Polled{CurrentOffset: total - 1}, nil
		}
		n := min(uint64(count), total-min(value, total))
		if n == 0 {
			return &iggy.Polled{CurrentOffset: total - 1}, nil
		}
		var b icodec.BatchBuilder
		b.Begin(nil)
		for i := range n {
			if err := b.Add(wire.U128{Lo: value + i + 1}, 1, bytes.Repeat([]byte{'v'}, payload), nil); err != nil {
				t.Fatal(err)
			}
		}
		out, err := b.Finish()
		if err != nil {
			t.Fatal(err)
		}
		icodec.StampBatch(out, 0, value, 1)
		return &iggy.Polled{CurrentOffset: total - 1, Count: uint32(n), Batches: out}, nil
	}
	first := func(context.Context, iggy.TopicRef, int32, int64) (int64, error) { return 0, nil }
	r := New(poll, first, nil, nil, zerolog.Nop())
	info := &iggy.TopicInfo{Ref: iggy.TopicRef{Stream: "s", Topic: "t"}, PartitionsCount: 1}
	offset := int64(0)
	read := func() int {
		polls = polls[:0]
		p := Part{Topic: "t", Info: info, Offset: offset, Version: 12}
		dst, res := r.Read(context.Background(), &p, nil, 1<<20, true)
		if res.Code != 0 || res.Err != nil || !res.Records || len(dst) < 1<<19 {
			t.Fatalf("read at %d: %+v, %d bytes", offset, res, len(dst))
		}
		offset = res.Upto
		return len(polls)
	}
	read() // learns the sizes
	for i := range 3 {
		if n := read(); n != 1 {
			t.Errorf("read %d at known sizes took %d polls (counts %v), want 1", i, n, polls)
		}
	}
}
