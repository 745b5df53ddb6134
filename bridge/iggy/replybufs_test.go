package iggy

import (
	"bytes"
	"context"
	"runtime"
	"testing"
	"time"

	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
	"github.com/kafka-iggy/kafka-iggy/codec/wire"
	"github.com/kafka-iggy/kafka-iggy/embedded/embedtest"
)

// TestLargePollRepliesSurviveCollections: a large poll reply's buffer is
// kept across garbage collections (a sync.Pool would be emptied by them),
// so a consumer polling the same partitions while the collector runs
// allocates no reply buffer per poll.
func TestLargePollRepliesSurviveCollections(t *testing.T) {
	srv := embedtest.Start(t, "127.0.0.1:0", nil)
	defer srv.Close()
	c := startClient(t, testConfig(srv.Addr().String()))
	tr := TopicRef{"kafka", "keep"}
	createTopic(t, c, tr, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	payload := bytes.Repeat([]byte{'k'}, 1000)
	for range 2 {
		m := c.NewMessages()
		for range 500 {
			if err := m.Add(randID(), uint64(time.Now().UnixMicro()), payload, nil); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := c.Send(ctx, tr, 0, m); err != nil {
			t.Fatal(err)
		}
	}
	poll := func() int {
		p, err := c.Poll(ctx, &icodec.PollMessagesRequest{
			Consumer:    icodec.Consumer{Kind: icodec.ConsumerKindConsumer, ID: icodec.Identifier{Kind: icodec.IdentifierKindNumeric, Value: []byte{1, 0, 0, 0}}},
			StreamID:    tr.StreamID(),
			TopicID:     tr.TopicID(),
			PartitionID: icodec.OptionalPartition{Present: true, PartitionID: 0},
			Strategy:    icodec.PollingStrategy{Kind: icodec.PollingKindOffset, Value: 0},
			Count:       1000,
		})
		if err != nil {
			t.Fatal(err)
		}
		n := len(p.Batches)
		p.Release()
		return n
	}
	if n := poll(); n < wire.KeepMin {
		t.Fatalf("a poll of 1000 messages of 1 KB brought %d bytes: below what a Keep takes (%d)", n, wire.KeepMin)
	}
	taken := replyKeep.Taken()
	const polls = 20
	for range polls {
		runtime.GC() // two collections empty a sync.Pool
		runtime.GC()
		poll()
	}
	if got := replyKeep.Taken() - taken; got != polls {
		t.Fatalf("%d of %d polls read their reply into a kept buffer across collections (held %d bytes)", got, polls, replyKeep.Held())
	}
}
