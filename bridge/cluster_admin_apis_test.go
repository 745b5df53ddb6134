package bridge_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestDescribeLogDirsAndLeaderEpochs: DescribeLogDirs reports each
// partition's size from Iggy's statistics (growing with what is produced,
// 0 for an empty partition; unknown topics and partitions left out), and
// OffsetForLeaderEpoch answers epoch 0 with the partition's end offset as
// it moves.
func TestDescribeLogDirsAndLeaderEpochs(t *testing.T) {
	s := startStack(t, func(o *stackOpts) { o.bridge.Topics.DefaultPartitions = 2 })
	rk := dialRaw(t, s.Addr)
	const topic = "logdirs"
	createTopic(t, rk, topic)

	sizes := func() map[int32]int64 {
		t.Helper()
		req := kmsg.NewPtrDescribeLogDirsRequest()
		for _, n := range []string{topic, "nosuchtopic"} {
			rt := kmsg.NewDescribeLogDirsRequestTopic()
			rt.Topic, rt.Partitions = n, []int32{0, 1, 5}
			req.Topics = append(req.Topics, rt)
		}
		resp := rk.do(req, 4).(*kmsg.DescribeLogDirsResponse)
		if resp.ErrorCode != 0 || len(resp.Dirs) != 1 || resp.Dirs[0].ErrorCode != 0 || resp.Dirs[0].Dir == "" || len(resp.Dirs[0].Topics) != 1 {
			t.Fatalf("log dirs: %+v", resp)
		}
		out := map[int32]int64{}
		for _, p := range resp.Dirs[0].Topics[0].Partitions {
			if p.OffsetLag != 0 || p.IsFuture {
				t.Fatalf("partition %+v", p)
			}
			out[p.Partition] = p.Size
		}
		return out
	}
	endOffsets := func() [2]int64 {
		t.Helper()
		req := kmsg.NewPtrOffsetForLeaderEpochRequest()
		req.ReplicaID = -1
		rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
		rt.Topic = topic
		for p := int32(0); p < 2; p++ {
			rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
			rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = p, 0, 0
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		resp := rk.do(req, 4).(*kmsg.OffsetForLeaderEpochResponse)
		var out [2]int64
		for i, p := range resp.Topics[0].Partitions {
			if p.ErrorCode != 0 || p.LeaderEpoch != 0 {
				t.Fatalf("p%d: %+v", i, p)
			}
			out[i] = p.EndOffset
		}
		return out
	}
	if got := sizes(); len(got) != 2 || got[0] != 0 || got[1] != 0 {
		t.Fatalf("empty topic sizes %v", got)
	}
	if got := endOffsets(); got != [2]int64{0, 0} {
		t.Fatalf("empty topic end offsets %v", got)
	}
	rk.produceValues(topic, 0, []byte("one"), []byte("two"), []byte("three"))
	first := sizes()
	if first[0] <= 0 || first[1] != 0 {
		t.Fatalf("sizes after a produce to p0: %v", first)
	}
	rk.produceValues(topic, 0, make([]byte, 4000))
	if got := sizes(); got[0] < first[0]+4000 {
		t.Fatalf("p0 grew from %d to %d after a 4000-byte record", first[0], got[0])
	}
	if got := endOffsets(); got != [2]int64{4, 0} {
		t.Fatalf("end offsets %v, want [4 0]", got)
	}
}

// TestDescribeTopicPartitionsPages: partitions come in name order, at most
// ResponsePartitionLimit at a time, the cursor naming the next one; an
// unknown topic answers UNKNOWN_TOPIC_OR_PARTITION.
func TestDescribeTopicPartitionsPages(t *testing.T) {
	s := startStack(t, func(o *stackOpts) { o.bridge.Topics.DefaultPartitions = 3 })
	rk := dialRaw(t, s.Addr)
	createTopic(t, rk, "pages-b")
	createTopic(t, rk, "pages-a")
	req := kmsg.NewPtrDescribeTopicPartitionsRequest()
	req.ResponsePartitionLimit = 2
	for _, n := range []string{"pages-c", "pages-b", "pages-a"} {
		rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
		rt.Topic = n
		req.Topics = append(req.Topics, rt)
	}
	var got []string
	for page := 0; page < 10; page++ {
		resp := rk.do(req, 0).(*kmsg.DescribeTopicPartitionsResponse)
		for _, rt := range resp.Topics {
			if rt.ErrorCode != 0 {
				got = append(got, *rt.Topic+" error "+kerr.ErrorForCode(rt.ErrorCode).Error())
				continue
			}
			for _, p := range rt.Partitions {
				if len(p.Replicas) != 1 || p.Replicas[0] != p.LeaderID || len(p.ISR) != 1 || p.LeaderEpoch != 0 {
					t.Fatalf("partition %+v", p)
				}
				got = append(got, *rt.Topic+":"+string(rune('0'+p.Partition)))
			}
		}
		if resp.NextCursor == nil {
			break
		}
		req.Cursor = &kmsg.DescribeTopicPartitionsRequestCursor{Topic: resp.NextCursor.Topic, Partition: resp.NextCursor.Partition}
	}
	want := []string{"pages-a:0", "pages-a:1", "pages-a:2", "pages-b:0", "pages-b:1", "pages-b:2",
		"pages-c error " + kerr.UnknownTopicOrPartition.Error()}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
}
