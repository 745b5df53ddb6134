package iggy

import (
	"context"

	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

// PollLog reads one page of at most count messages of partition 0 of ref,
// a one-partition log the sidecars keep in Iggy (the topic-config store,
// the committed-offsets beyond log), from offset next on, as consumer.
// Each message at or after next goes to apply in offset order, with a
// payload valid only during the call. It returns how many messages were
// applied: fewer than count means the page reached the log's end. The
// poll's error comes back as is (IsNotFound: nobody created the log yet).
func (c *Client) PollLog(ctx context.Context, consumer icodec.Consumer, ref TopicRef, next uint64, count uint32,
	apply func(offset uint64, payload []byte)) (int, error) {
	p, err := c.Poll(ctx, &icodec.PollMessagesRequest{
		Consumer: consumer, StreamID: ref.StreamID(), TopicID: ref.TopicID(),
		PartitionID: icodec.OptionalPartition{Present: true, PartitionID: 0},
		Strategy:    icodec.PollingStrategy{Kind: icodec.PollingKindOffset, Value: next},
		Count:       count,
	})
	if err != nil {
		return 0, err
	}
	defer p.Release()
	n := 0
	it := p.Messages()
	for it.Next() {
		m := it.Message()
		if m.Offset < next {
			continue
		}
		apply(m.Offset, m.Payload)
		next = m.Offset + 1
		n++
	}
	return n, it.Err()
}
